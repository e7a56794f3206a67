#!/bin/bash
# `cuzk-bench engine-bench` on the lent GPU machine: N proofs of the 32 GiB shape-only C1
# (written there; cannot verify) through the engine on the H200, random parameters of the
# exact shape. From the release binary built here and carried gzipped in device-carry/:
#
#   device run: bash crates/cuzk-gpu/device-engine.sh        carry: ["device-carry"]
#
# CUZK_PROOFS (3), CUZK_SYNTH_WORKERS (1, or a list such as 1,2), CUZK_GPU_WORKERS (1) and
# CUZK_BUDGET_GIB (the host memory budget; default the engine's) set the run. CUZK_URGENT (0)
# CRITICAL 2 KiB shape-only jobs are submitted one at a time while the proofs run, half with
# the urgent synthesis lane and half without (CUZK_URGENT_LANES, 1,0), CUZK_URGENT_EVERY
# seconds apart (20). CUZK_HOST_RELEASE_DIR spills the random parameters there and releases
# their host copy once the GPU holds them (`--host-release-dir`; needs 45 GiB of disk for
# the 32 GiB shape). CUZK_DEVICES (1) is the device count, or a list such as 1,2: on the
# two-GPU kind (nvidia-h200-x2), GPUs 0..N-1 each prove partitions, and the run ends with the
# throughput of 2 devices against 1 from the same process. CUZK_VRAM_BUDGET (full) is each
# GPU's memory budget, e.g. 14GiB (a 16 GB card's). CUZK_FAIL_DEVICE (none) makes that
# device fail mid-run, after CUZK_FAIL_AFTER (20) backend calls (`--fail-device`): its
# partitions are proved again on the others. Logs go to $OUT.
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin /tmp/s32
gunzip -c device-carry/cuzk-bench.gz > /tmp/bin/cuzk-bench && chmod +x /tmp/bin/cuzk-bench
export RUST_BACKTRACE=1 RUST_LOG=${RUST_LOG:-warn} CUZK_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
echo "date: $(date -u); $(nproc) cores; $(free -g | awk '/Mem:/{print $2}') GiB" | tee "$OUT/machine.txt"
/tmp/bin/cuzk-bench gen-fixture --sector-size 32GiB --shape-only --out /tmp/s32 > "$OUT/gen.txt" 2>&1 || exit 1
urgent=()
if [ "${CUZK_URGENT:-0}" -gt 0 ]; then
  mkdir -p /tmp/s2k
  /tmp/bin/cuzk-bench gen-fixture --sector-size 2KiB --shape-only --out /tmp/s2k >> "$OUT/gen.txt" 2>&1 || exit 1
  urgent=(--urgent-c1 /tmp/s2k/c1.shape-only.json --urgent "$CUZK_URGENT" --urgent-lanes "${CUZK_URGENT_LANES:-1,0}"
    --urgent-every "${CUZK_URGENT_EVERY:-20}")
fi
/usr/bin/time -v /tmp/bin/cuzk-bench engine-bench --c1 /tmp/s32/c1.shape-only.json --proofs "${CUZK_PROOFS:-3}" \
  --synthesis-workers "${CUZK_SYNTH_WORKERS:-1}" --devices "${CUZK_DEVICES:-1}" --gpu-workers "${CUZK_GPU_WORKERS:-1}" --vram-budget "${CUZK_VRAM_BUDGET:-full}" ${CUZK_BUDGET_GIB:+--memory-budget-gib $CUZK_BUDGET_GIB} \
  ${CUZK_HOST_RELEASE_DIR:+--host-release-dir $CUZK_HOST_RELEASE_DIR} ${CUZK_FAIL_DEVICE:+--fail-device $CUZK_FAIL_DEVICE --fail-after ${CUZK_FAIL_AFTER:-20}} ${urgent[@]+"${urgent[@]}"} > "$OUT/engine-32gib.txt" 2>&1
status=$?
grep -v "^\s*$" "$OUT/engine-32gib.txt" | grep -v "^\s*S job\|^\s*G job" | tail -60
exit $status
