#!/bin/bash
# `cuzk-bench synth-bench` on the lent GPU machine (its 16 cores; no GPU is used), from the
# release binary built here and carried gzipped in device-carry/, with the 2 KiB fixture's
# c1.json when there is one (without it the 2 KiB row uses a 2 KiB shape-only C1, written
# there, which cannot verify):
#
#   device run: bash crates/cuzk-gpu/device-synth.sh        carry: ["device-carry"]
#
# The 2 KiB partition (reference and compiled, witnesses compared), then the 32 GiB
# shape-only C1 written there (cannot verify): one round of the reference against the
# compiled path (witnesses compared; CUZK_SKIP_REFERENCE=1 leaves it out), then compiled
# rounds alone, each three ways (4 KiB pages joined, huge pages joined, huge pages in
# place), at both sizes. Logs go to $OUT.
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin /tmp/s32
gunzip -c device-carry/cuzk-bench.gz > /tmp/bin/cuzk-bench && chmod +x /tmp/bin/cuzk-bench
export RUST_BACKTRACE=1 RUST_LOG=${RUST_LOG:-info}
echo "date: $(date -u); $(nproc) cores; $(free -g | awk '/Mem:/{print $2}') GiB; THP enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)" | tee "$OUT/machine.txt"
status=0
c1_2k=device-carry/c1.json
if [ ! -f "$c1_2k" ]; then
  /tmp/bin/cuzk-bench gen-fixture --sector-size 2KiB --shape-only --out /tmp/s2k > "$OUT/gen-2kib.txt" 2>&1 || status=1
  c1_2k=/tmp/s2k/c1.shape-only.json
fi
/tmp/bin/cuzk-bench synth-bench --c1 "$c1_2k" --rounds 3 2>&1 | tee "$OUT/synth-2kib.txt" || status=1
/tmp/bin/cuzk-bench synth-bench --c1 "$c1_2k" --rounds 5 --compiled-only 2>&1 | tee "$OUT/synth-2kib-variants.txt" || status=1
/tmp/bin/cuzk-bench gen-fixture --sector-size 32GiB --shape-only --out /tmp/s32 2>&1 | tee "$OUT/gen.txt" || status=1
if [ -z "${CUZK_SKIP_REFERENCE:-}" ]; then
  /usr/bin/time -v /tmp/bin/cuzk-bench synth-bench --c1 /tmp/s32/c1.shape-only.json --rounds 1 > "$OUT/synth-32gib-vs-reference.txt" 2>&1 || status=1
  cat "$OUT/synth-32gib-vs-reference.txt" | grep -v "^\s*$" | tail -40
fi
/usr/bin/time -v /tmp/bin/cuzk-bench synth-bench --c1 /tmp/s32/c1.shape-only.json --rounds "${CUZK_ROUNDS:-3}" --compiled-only > "$OUT/synth-32gib.txt" 2>&1 || status=1
grep -v "^\s*$" "$OUT/synth-32gib.txt" | tail -40
exit $status
