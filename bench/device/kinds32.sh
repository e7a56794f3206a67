#!/bin/bash
# Issue #37's kinds at 32 GiB on the lent GPU machine's 16 cores (synthesis only; no GPU is
# used yet), from the release binary built here and carried gzipped in device-carry/:
#
#   device run: bash bench/device/kinds32.sh        carry: ["device-carry"]
#
# 1. `gen-fixture --shape-only --sector-size 32GiB` writes, beside the PoRep C1, the
#    shape-only WinningPoSt, full WindowPoSt partition (2349 sectors) and SnapDeals update
#    (16 partitions) in /tmp/k32/kinds (random contents, the exact structure; cannot verify).
# 2. `synth-bench --input` for each kind in DEVICE_KINDS ("winning window snap"): partition
#    0's compiled synthesis on 16 threads against one thread running the same code,
#    DEVICE_ROUNDS (3) rounds alternating, witnesses compared; the reference path once
#    (DEVICE_SKIP_REFERENCE=1 leaves it out); peak RSS of each process (/usr/bin/time).
#    DEVICE_DEFERRED=1 times the assignment-only path (what cuzkd runs on the GPU backend).
# The 32 GiB WindowPoSt recording peaks above 24 GB (killed at 24.3 GB on the 23 GB build
# machine): this is where its 2-core row cannot be taken. The engine's rows for the kinds
# (request to proof, residency, a WinningPoSt beside a PoRep load) come with engine-bench's
# kind inputs (issue #37, step 3). Logs go to $OUT: gen.txt, synth-32gib-KIND.txt.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-bench || exit 2
machine_info
status=0
mkdir -p /tmp/k32
"$BIN/cuzk-bench" gen-fixture --sector-size 32GiB --shape-only --out /tmp/k32 > "$OUT/gen.txt" 2>&1 || status=1
grep -A1 -E "^  (winning|window|snap) " "$OUT/gen.txt"
args=(--rounds "${DEVICE_ROUNDS:-3}")
[ -z "${DEVICE_SKIP_REFERENCE:-}" ] && args+=(--reference)
[ -n "${DEVICE_DEFERRED:-}" ] && args+=(--deferred)
for kind in ${DEVICE_KINDS:-winning window snap}; do
  f=/tmp/k32/kinds/$kind.shape-only.json
  /usr/bin/time -v "$BIN/cuzk-bench" synth-bench --input "$f" "${args[@]}" > "$OUT/synth-32gib-$kind.txt" 2>&1 || status=1
  grep -E "^synth-bench|recording|witness:|reference|median|peak RSS|Maximum resident|Elapsed|error" "$OUT/synth-32gib-$kind.txt"
  echo "[$(elapsed) s] $kind done"
done
exit $status
