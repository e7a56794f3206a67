#!/bin/bash
# Run after run.sh in the same call or on the same warm machine (it unpacks /tmp/bin,
# including cuzkd, and makes /tmp/fx): cuzkd on the GPU (backend = "gpu"), one proof through
# it, GetStatus, and a GPU test with the GPU hidden under CUZK_REQUIRE_GPU=1 (must fail, not
# skip). Log in $OUT/daemon.txt.
#
#   device run: bash bench/device/run.sh; bash bench/device/daemon.sh    carry: ["device-carry"]
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
daemon_start
"$BIN/cuzk-bench" single -a "$SOCK" --c1 /tmp/fx/2KiB/c1.envelope.json --out /tmp/p.bin 2>&1 | tee "$OUT/daemon.txt"
"$BIN/cuzk-bench" status -a "$SOCK" 2>&1 | tee -a "$OUT/daemon.txt"
daemon_stop "$OUT/daemon.txt"
echo "--- CUZK_REQUIRE_GPU=1 with no visible GPU (must fail):" | tee -a "$OUT/daemon.txt"
CUDA_VISIBLE_DEVICES='' CUZK_REQUIRE_GPU=1 "$BIN/gpu_equivalence" --test-threads=1 2>&1 | tail -5 | tee -a "$OUT/daemon.txt"
echo "rc ${PIPESTATUS[0]}" | tee -a "$OUT/daemon.txt"
