#!/bin/bash
# One call on the lent GPU machine: the GPU tests, then `cuzk-bench gpu-bench`, from release
# binaries built here (see crates/cuzk-gpu/README.md, "Running on the H200"), carried gzipped
# in device-carry/. Logs go to $OUT; the bench table is printed last.
#
#   device run: bash crates/cuzk-gpu/device-run.sh        carry: ["device-carry"]
#
# CUZK_DEVICE_SKIP_TESTS=1 runs the bench alone; CUZK_DEVICE_SKIP_BENCH=1 the tests alone.
# With cuzkd.gz carried too, device-daemon.sh afterwards proves through cuzkd on the GPU.
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin
for f in device-carry/*.gz; do gunzip -c "$f" > /tmp/bin/$(basename "$f" .gz); done
chmod +x /tmp/bin/*
# On a GPU machine a backend that does not open is a failure, not a skip.
export CUZK_FIXTURE_DIR=/tmp/fx RUST_BACKTRACE=1 CUZK_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)
# The 2 KiB fixture (about 2 minutes on 16 cores) while the first GPU tests run.
( /tmp/bin/cuzk-bench gen-fixture --sector-size 2KiB --out /tmp/fx/2KiB > "$OUT/fixture.log" 2>&1; echo "fixture rc $?" >> "$OUT/fixture.log" ) &
fx=$!
status=0
if [ -z "${CUZK_DEVICE_SKIP_TESTS:-}" ]; then
  /tmp/bin/gpu_equivalence --test-threads=1 2>&1 | tee "$OUT/tests.log" || status=1
  /tmp/bin/gpu_memory 2>&1 | tee -a "$OUT/tests.log" || status=1
  wait $fx
  /tmp/bin/gpu_whole_proof --test-threads=1 2>&1 | tee -a "$OUT/tests.log" || status=1
  echo "tests: status $status after $(( $(date +%s) - start )) s" | tee -a "$OUT/tests.log"
fi
wait $fx
if [ -z "${CUZK_DEVICE_SKIP_BENCH:-}" ]; then
  left=$(( 580 - ($(date +%s) - start) ))
  timeout $left /tmp/bin/cuzk-bench gpu-bench --fixture-dir /tmp/fx/2KiB ${CUZK_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
fi
grep -E "test result|SKIPPED|memory test|panicked|tests: status" "$OUT/tests.log" 2>/dev/null
exit $status
