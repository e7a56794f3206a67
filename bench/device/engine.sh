#!/bin/bash
# `cuzk-lab engine-bench` on the lent GPU machine: N proofs of the 32 GiB shape-only C1
# (written there; cannot verify) through the engine on the H200, random parameters of the
# exact shape. From the release binary built here and carried gzipped in device-carry/:
#
#   device run: bash bench/device/engine.sh        carry: ["device-carry"]
#
# DEVICE_PROOFS (3), DEVICE_SYNTH_WORKERS (1, or a list such as 1,2), DEVICE_GPU_WORKERS (1)
# and DEVICE_BUDGET_GIB (the host memory budget; default the engine's) set the run.
# DEVICE_URGENT (0) CRITICAL 2 KiB shape-only jobs are submitted one at a time while the
# proofs run, half with the urgent synthesis lane and half without (DEVICE_URGENT_LANES, 1,0),
# DEVICE_URGENT_EVERY seconds apart (20). DEVICE_HOST_RELEASE_DIR spills the random parameters
# there and releases their host copy once the GPU holds them (`--host-release-dir`; needs
# 45 GiB of disk for the 32 GiB shape). DEVICE_GPUS (1) is the device count, or a list such as
# 1,2: on the two-GPU kind (nvidia-h200-x2), GPUs 0..N-1 each prove partitions, and the run
# ends with the throughput of 2 devices against 1 from the same process. DEVICE_VRAM_BUDGET
# (full) is each GPU's memory budget, e.g. 14GiB (a 16 GB card's). DEVICE_FAIL_GPU (none)
# makes that device fail mid-run, after DEVICE_FAIL_AFTER (20) backend calls
# (`--fail-device`): its partitions are proved again on the others. DEVICE_DEFERRED (0) is 1
# for deferred evaluation (`--deferred`: synthesis keeps the assignment only, the GPU
# evaluates a, b and c from the resident compiled circuit, issue #41), or a list such as 0,1:
# one run each, in that order, in this call (engine-32gib.txt, engine-32gib-deferred.txt).
# Logs go to $OUT.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab || exit 2
# cuzk_gpu::eval's info lines say when the compiled circuit goes up and stays resident.
export RUST_LOG=${RUST_LOG:-warn,cuzk_gpu::eval=info} CUZK_REQUIRE_GPU=1
gpu_info
machine_info
mkdir -p /tmp/s32
"$BIN/cuzk-lab" gen-fixture --sector-size 32GiB --shape-only --out /tmp/s32 > "$OUT/gen.txt" 2>&1 || exit 1
args=(--c1 /tmp/s32/c1.shape-only.json --proofs "${DEVICE_PROOFS:-3}" --synthesis-workers "${DEVICE_SYNTH_WORKERS:-1}"
  --devices "${DEVICE_GPUS:-1}" --gpu-workers "${DEVICE_GPU_WORKERS:-1}" --vram-budget "${DEVICE_VRAM_BUDGET:-full}")
[ -n "${DEVICE_BUDGET_GIB:-}" ] && args+=(--memory-budget-gib "$DEVICE_BUDGET_GIB")
if [ -n "${DEVICE_HOST_RELEASE_DIR:-}" ]; then
  mkdir -p "$DEVICE_HOST_RELEASE_DIR" || exit 1
  args+=(--host-release-dir "$DEVICE_HOST_RELEASE_DIR")
fi
[ -n "${DEVICE_FAIL_GPU:-}" ] && args+=(--fail-device "$DEVICE_FAIL_GPU" --fail-after "${DEVICE_FAIL_AFTER:-20}")
if [ "${DEVICE_URGENT:-0}" -gt 0 ]; then
  mkdir -p /tmp/s2k
  "$BIN/cuzk-lab" gen-fixture --sector-size 2KiB --shape-only --out /tmp/s2k >> "$OUT/gen.txt" 2>&1 || exit 1
  args+=(--urgent-c1 /tmp/s2k/c1.shape-only.json --urgent "$DEVICE_URGENT" --urgent-lanes "${DEVICE_URGENT_LANES:-1,0}"
    --urgent-every "${DEVICE_URGENT_EVERY:-20}")
fi
status=0
IFS=, read -r -a deferred <<< "${DEVICE_DEFERRED:-0}"
for d in "${deferred[@]}"; do
  out="$OUT/engine-32gib.txt" extra=()
  [ "$d" = 1 ] && out="$OUT/engine-32gib-deferred.txt" extra=(--deferred)
  /usr/bin/time -v "$BIN/cuzk-lab" engine-bench "${args[@]}" "${extra[@]}" > "$out" 2>&1 || status=1
  grep -v "^\s*$" "$out" | grep -v "^\s*S job\|^\s*G job" | tail -45
done
exit $status
