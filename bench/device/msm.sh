#!/bin/bash
# Issue #35's GPU run: the H MSM's levers on one call of the lent GPU machine, from release
# binaries built here and carried gzipped in device-carry/ with the 2 KiB fixture's c1.json
# (for the scalar mix):
#
#   device run: bash bench/device/msm.sh        carry: ["device-carry"]
#
# 1. The GPU equality and memory tests (gpu_equivalence, gpu_memory) under
#    CUZK_REQUIRE_GPU=1: multiples_and_bucket_sets_match_cpu among them (every width and
#    copies the plan may take, all and indexed, the H MSM, memory back at its start).
# 2. `cuzk-lab shape-bench` at the 32 GiB partition shape (random parameters: its proofs
#    cannot verify) under each budget of DEVICE_BUDGETS (full,14GiB): DEVICE_ROUNDS (3)
#    rounds of today's default, then DEVICE_VARIANT_ROUNDS (6) proofs of each variant, the
#    first of each labelled cold (it builds the multiples), medians of the rest. The first
#    variant is today's code again (msm_multiples=1), measured the same way in the same
#    process. DEVICE_VARIANTS replaces the list (space-separated --variant values).
# Logs go to $OUT: tests.log, shape-32GiB.log (with each MSM's phase profile: RUST_LOG),
# smi-samples.csv.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab gpu_equivalence gpu_memory || exit 2
[ -f "$CARRY/c1.json" ] || { echo "$CARRY/c1.json missing (the 2 KiB fixture's)" >&2; exit 2; }
export CUZK_REQUIRE_GPU=1
# Each MSM's phases (classify, scatter, bucket runs, carries, windows: events on its stream)
# and each build of multiples, in the shape log.
export RUST_LOG=${RUST_LOG:-warn,cuzk_gpu::msm=trace}
gpu_info
machine_info
status=0
if [ -z "${DEVICE_SKIP_TESTS:-}" ]; then
  gpu_tests || status=1
  echo "tests: status $status after $(elapsed) s" | tee -a "$OUT/tests.log"
fi
variants=${DEVICE_VARIANTS:-"msm_multiples=1 msm_scatter_per_set=true,msm_wide_window=20 msm_scatter_per_set=true,msm_wide_window=18 msm_multiples=16 msm_multiples=16,msm_scatter_per_set=true"}
args=()
for v in $variants; do args+=(--variant "$v"); done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > "$OUT/smi-samples.csv" 2>&1 &
smi=$!
timeout $(( 590 - $(elapsed) )) "$BIN/cuzk-lab" shape-bench --shape 32GiB --budgets "${DEVICE_BUDGETS:-full,14GiB}" \
  --rounds "${DEVICE_ROUNDS:-3}" --variant-rounds "${DEVICE_VARIANT_ROUNDS:-6}" --mix-c1 "$CARRY/c1.json" "${args[@]}" 2>&1 \
  | tee "$OUT/shape-32GiB.log" || status=1
kill $smi 2>/dev/null
grep -E "test result|SKIPPED|panicked|tests: status" "$OUT/tests.log" 2>/dev/null
grep -E "warm rounds|best warm|budget|built" "$OUT/shape-32GiB.log"
echo "msm.sh: status $status after $(elapsed) s"
exit $status
