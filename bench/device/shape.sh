#!/bin/bash
# `cuzk-lab shape-bench` on the lent GPU machine, from the release binary built here and
# carried gzipped in device-carry/ with the 2 KiB fixture's c1.json (for the scalar mix):
#
#   device run: bash bench/device/shape.sh        carry: ["device-carry"]
#
# Small shapes first (DEVICE_SHAPES, default "2^16 2^20 2^22"; GPU proof checked equal to the
# CPU backend's), then the 32 GiB partition shape under each budget of DEVICE_BUDGETS
# (full,14GiB; DEVICE_SKIP_32G=1 leaves it out). DEVICE_SHAPE_ARGS: more arguments for the
# 32 GiB run, such as --variant msm_max_chunk_log=22 (GpuTuning keys). Logs go to $OUT.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab || exit 2
export CUZK_REQUIRE_GPU=1
gpu_info
machine_info
status=0
for s in ${DEVICE_SHAPES:-2^16 2^20 2^22}; do
  "$BIN/cuzk-lab" shape-bench --shape "$s" --budgets full,1GiB --rounds 2 --mix-c1 "$CARRY/c1.json" 2>&1 | tee -a "$OUT/shape-small.log" || status=1
done
if [ -z "${DEVICE_SKIP_32G:-}" ]; then
  # SM clock, power and temperature every 200 ms beside the 32 GiB run (throttling shows here).
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > "$OUT/smi-samples.csv" 2>&1 &
  smi=$!
  # shellcheck disable=SC2086  # DEVICE_SHAPE_ARGS is split into arguments
  "$BIN/cuzk-lab" shape-bench --shape 32GiB --budgets "${DEVICE_BUDGETS:-full,14GiB}" --rounds 2 --mix-c1 "$CARRY/c1.json" ${DEVICE_SHAPE_ARGS:-} 2>&1 | tee "$OUT/shape-32GiB.log" || status=1
  kill $smi 2>/dev/null
fi
exit $status
