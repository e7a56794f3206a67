#!/bin/bash
# One call on the lent GPU machine for the proof kinds (issue #12), from release binaries built
# here and carried gzipped in device-carry/ (cuzk-bench, cuzkd, gpu_equivalence, gpu_memory,
# gpu_whole_proof):
#   1. the 2 KiB fixtures (PoRep, then WinningPoSt, WindowPoSt, SnapDeals) are generated while
#      the kernel tests run (gpu_equivalence, gpu_memory);
#   2. gpu_whole_proof: every kind byte-identical to the CPU backend, verified;
#   3. kinds-bench on the GPU: each kind against filecoin-proofs (CPU) in the same run;
#   4. cuzkd on the GPU, WinningPoSt parameters preloaded: 20 WinningPoSt requests one after
#      the other, request to verified proof (the batch report's wall time).
#
#   device run: bash crates/cuzk-gpu/device-kinds.sh        carry: ["device-carry"]
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin
for f in device-carry/*.gz; do gunzip -c "$f" > /tmp/bin/$(basename "$f" .gz); done
chmod +x /tmp/bin/*
export CUZK_FIXTURE_DIR=/tmp/fx RUST_BACKTRACE=1 CUZK_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)
( /tmp/bin/cuzk-bench gen-fixture --sector-size 2KiB --out /tmp/fx/2KiB > "$OUT/fixture.log" 2>&1; echo "fixture rc $? after $(( $(date +%s) - start )) s" >> "$OUT/fixture.log" ) &
fx=$!
status=0
if [ -z "${CUZK_DEVICE_SKIP_KERNEL_TESTS:-}" ]; then
  /tmp/bin/gpu_equivalence --test-threads=1 > "$OUT/tests.log" 2>&1 || status=1
  /tmp/bin/gpu_memory >> "$OUT/tests.log" 2>&1 || status=1
fi
wait $fx
cat "$OUT/fixture.log" | tail -4
/tmp/bin/gpu_whole_proof --test-threads=1 --nocapture >> "$OUT/tests.log" 2>&1 || status=1
echo "tests: status $status after $(( $(date +%s) - start )) s" | tee -a "$OUT/tests.log"
grep -E "test result|SKIPPED|byte-identical|panicked|FAILED|tests: status" "$OUT/tests.log"
/tmp/bin/cuzk-bench kinds-bench --backend gpu --rounds 3 2>&1 | tee "$OUT/kinds-bench.txt"

cat > /tmp/cuzk.toml <<T
[daemon]
listen = "unix:///tmp/cuzkd/cuzk.sock"
state_dir = "/tmp/cuzkd/state"
[srs]
param_cache = "/tmp/fx/2KiB/params"
parent_cache = "/tmp/fx/2KiB/parents"
[gpus]
backend = "gpu"
[dbus]
bus = "none"
[log]
target = "stderr"
T
/tmp/bin/cuzkd --config /tmp/cuzk.toml > "$OUT/cuzkd.log" 2>&1 &
d=$!
for i in $(seq 100); do [ -S /tmp/cuzkd/cuzk.sock ] && break; sleep 0.2; done
A=unix:///tmp/cuzkd/cuzk.sock
/tmp/bin/cuzk-bench preload -a $A winning-2k 2>&1 | tee "$OUT/winning-latency.txt"
# The first proof records the compiled circuit; then 20 in a row.
/tmp/bin/cuzk-bench batch -a $A -t winning --input /tmp/fx/2KiB/kinds/winning.json -c 1 -j 1 2>/dev/null | tail -3 | tee -a "$OUT/winning-latency.txt"
/tmp/bin/cuzk-bench batch -a $A -t winning --input /tmp/fx/2KiB/kinds/winning.json -c 20 -j 1 2>/dev/null | tee -a "$OUT/winning-latency.txt"
for t in wpost snap; do
  /tmp/bin/cuzk-bench batch -a $A -t $t -c 3 -j 1 2>/dev/null | tee -a "$OUT/daemon-kinds.txt"
done
kill -TERM $d; wait $d; echo "cuzkd exit $?" | tee -a "$OUT/winning-latency.txt"
exit $status
