#!/bin/bash
# `cuzk-bench shape-bench` on the lent GPU machine, from the release binary built here and
# carried gzipped in device-carry/ with the 2 KiB fixture's c1.json (for the scalar mix):
#
#   device run: bash crates/cuzk-gpu/device-shape.sh        carry: ["device-carry"]
#
# Small shapes first (GPU proof checked equal to the CPU backend's), then the 32 GiB
# partition shape under each budget of CUZK_BUDGETS (CUZK_SHAPE_ARGS: more arguments, such as
# --variant CUZK_MSM_MAX_CHUNK_LOG=22). Logs go to $OUT.
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin
gunzip -c device-carry/cuzk-bench.gz > /tmp/bin/cuzk-bench && chmod +x /tmp/bin/cuzk-bench
export RUST_BACKTRACE=1 CUZK_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
echo "date: $(date -u); $(nproc) cores; $(free -g | awk '/Mem:/{print $2}') GiB"
status=0
for s in ${CUZK_SHAPES:-2^16 2^20 2^22}; do
  /tmp/bin/cuzk-bench shape-bench --shape "$s" --budgets full,1GiB --rounds 2 --mix-c1 device-carry/c1.json 2>&1 | tee -a "$OUT/shape-small.log" || status=1
done
if [ -z "${CUZK_SKIP_32G:-}" ]; then
  # SM clock, power and temperature every 200 ms beside the 32 GiB run (throttling shows here).
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > "$OUT/smi-samples.csv" 2>&1 &
  smi=$!
  /tmp/bin/cuzk-bench shape-bench --shape 32GiB --budgets "${CUZK_BUDGETS:-full,14GiB}" --rounds 2 --mix-c1 device-carry/c1.json ${CUZK_SHAPE_ARGS:-} 2>&1 | tee "$OUT/shape-32GiB.log" || status=1
  kill $smi 2>/dev/null
fi
exit $status
