#!/bin/bash
# `cuzk-lab synth-bench` on the lent GPU machine (its 16 cores; no GPU is used), from the
# release binary built here and carried gzipped in device-carry/, with the 2 KiB fixture's
# c1.json when there is one (without it the 2 KiB row uses a 2 KiB shape-only C1, written
# there, which cannot verify):
#
#   device run: bash bench/device/synth.sh        carry: ["device-carry"]
#
# The 2 KiB partition (reference and compiled, witnesses compared), then the 32 GiB
# shape-only C1 written there (cannot verify): one round of the reference against the
# compiled path (witnesses compared; DEVICE_SKIP_REFERENCE=1 leaves it out), then
# DEVICE_ROUNDS (3) compiled rounds alone, each three ways (4 KiB pages joined, huge pages
# joined, huge pages in place), at both sizes. Logs go to $OUT.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab || exit 2
export RUST_LOG=${RUST_LOG:-info}
machine_info
mkdir -p /tmp/s32
status=0
c1_2k=$CARRY/c1.json
if [ ! -f "$c1_2k" ]; then
  "$BIN/cuzk-lab" gen-fixture --sector-size 2KiB --shape-only --out /tmp/s2k > "$OUT/gen-2kib.txt" 2>&1 || status=1
  c1_2k=/tmp/s2k/c1.shape-only.json
fi
"$BIN/cuzk-lab" synth-bench --c1 "$c1_2k" --rounds 3 2>&1 | tee "$OUT/synth-2kib.txt" || status=1
"$BIN/cuzk-lab" synth-bench --c1 "$c1_2k" --rounds 5 --compiled-only 2>&1 | tee "$OUT/synth-2kib-variants.txt" || status=1
"$BIN/cuzk-lab" gen-fixture --sector-size 32GiB --shape-only --out /tmp/s32 2>&1 | tee "$OUT/gen.txt" || status=1
if [ -z "${DEVICE_SKIP_REFERENCE:-}" ]; then
  /usr/bin/time -v "$BIN/cuzk-lab" synth-bench --c1 /tmp/s32/c1.shape-only.json --rounds 1 > "$OUT/synth-32gib-vs-reference.txt" 2>&1 || status=1
  grep -v "^\s*$" "$OUT/synth-32gib-vs-reference.txt" | tail -40
fi
/usr/bin/time -v "$BIN/cuzk-lab" synth-bench --c1 /tmp/s32/c1.shape-only.json --rounds "${DEVICE_ROUNDS:-3}" --compiled-only > "$OUT/synth-32gib.txt" 2>&1 || status=1
grep -v "^\s*$" "$OUT/synth-32gib.txt" | tail -40
exit $status
