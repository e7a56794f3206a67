#!/bin/bash
# One call on the lent GPU machine: the GPU tests, then `cuzk-lab gpu-bench`, from release
# binaries built here (see crates/cuzk-gpu/README.md, "Running on the H200"), carried gzipped
# in device-carry/. Logs go to $OUT; the bench table is printed last.
#
#   device run: bash bench/device/run.sh        carry: ["device-carry"]
#
# DEVICE_SKIP_TESTS=1 runs the bench alone; DEVICE_SKIP_BENCH=1 the tests alone;
# DEVICE_BENCH_ARGS: more arguments for gpu-bench. With cuzkd.gz carried too, daemon.sh
# afterwards proves through cuzkd on the GPU.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack || exit 2
# On a GPU machine a backend that does not open is a failure, not a skip.
export CUZK_FIXTURE_DIR=/tmp/fx CUZK_REQUIRE_GPU=1
gpu_info
# The 2 KiB fixture (about 2 minutes on 16 cores) while the first GPU tests run.
fixture_start
status=0
if [ -z "${DEVICE_SKIP_TESTS:-}" ]; then
  gpu_tests || status=1
  fixture_wait
  "$BIN/gpu_whole_proof" --test-threads=1 2>&1 | tee -a "$OUT/tests.log" || status=1
  echo "tests: status $status after $(elapsed) s" | tee -a "$OUT/tests.log"
fi
fixture_wait
if [ -z "${DEVICE_SKIP_BENCH:-}" ]; then
  # shellcheck disable=SC2086  # DEVICE_BENCH_ARGS is split into arguments
  timeout $(( 580 - $(elapsed) )) "$BIN/cuzk-lab" gpu-bench --fixture-dir /tmp/fx/2KiB ${DEVICE_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
fi
grep -E "test result|SKIPPED|memory test|panicked|tests: status" "$OUT/tests.log" 2>/dev/null
exit $status
