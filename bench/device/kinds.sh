#!/bin/bash
# One call on the lent GPU machine for the proof kinds (issue #12), from release binaries built
# here and carried gzipped in device-carry/ (cuzk-lab, cuzk-bench, cuzkd, gpu_equivalence, gpu_memory,
# gpu_whole_proof):
#   1. the 2 KiB fixtures (PoRep, then WinningPoSt, WindowPoSt, SnapDeals) are generated while
#      the kernel tests run (gpu_equivalence, gpu_memory; DEVICE_SKIP_KERNEL_TESTS=1 skips them);
#   2. gpu_whole_proof: every kind byte-identical to the CPU backend, verified;
#   3. kinds-bench on the GPU: each kind against filecoin-proofs (CPU) in the same run;
#   4. cuzkd on the GPU, WinningPoSt parameters preloaded: 20 WinningPoSt requests one after
#      the other, request to verified proof (the batch report's wall time).
#
#   device run: bash bench/device/kinds.sh        carry: ["device-carry"]
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack || exit 2
export CUZK_FIXTURE_DIR=/tmp/fx CUZK_REQUIRE_GPU=1
gpu_info
fixture_start
status=0
if [ -z "${DEVICE_SKIP_KERNEL_TESTS:-}" ]; then
  "$BIN/gpu_equivalence" --test-threads=1 > "$OUT/tests.log" 2>&1 || status=1
  "$BIN/gpu_memory" >> "$OUT/tests.log" 2>&1 || status=1
fi
fixture_wait
tail -4 "$OUT/fixture.log"
"$BIN/gpu_whole_proof" --test-threads=1 --nocapture >> "$OUT/tests.log" 2>&1 || status=1
echo "tests: status $status after $(elapsed) s" | tee -a "$OUT/tests.log"
grep -E "test result|SKIPPED|byte-identical|panicked|FAILED|tests: status" "$OUT/tests.log"
"$BIN/cuzk-lab" kinds-bench --backend gpu --rounds 3 2>&1 | tee "$OUT/kinds-bench.txt"

daemon_start
"$BIN/cuzk-bench" preload -a "$SOCK" winning-2k 2>&1 | tee "$OUT/winning-latency.txt"
# The first proof records the compiled circuit; then 20 in a row.
"$BIN/cuzk-bench" batch -a "$SOCK" -t winning --input /tmp/fx/2KiB/kinds/winning.json -c 1 -j 1 2>/dev/null | tail -3 | tee -a "$OUT/winning-latency.txt"
"$BIN/cuzk-bench" batch -a "$SOCK" -t winning --input /tmp/fx/2KiB/kinds/winning.json -c 20 -j 1 2>/dev/null | tee -a "$OUT/winning-latency.txt"
for t in wpost:window snap:snap; do
  "$BIN/cuzk-bench" batch -a "$SOCK" -t "${t%%:*}" --input "/tmp/fx/2KiB/kinds/${t#*:}.json" -c 3 -j 1 2>/dev/null | tee -a "$OUT/daemon-kinds.txt"
done
daemon_stop "$OUT/winning-latency.txt"
exit $status
