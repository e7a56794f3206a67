#!/bin/bash
# Run after device-run.sh (it unpacks /tmp/bin, including cuzkd, and makes /tmp/fx): cuzkd on the GPU (backend = "gpu"), one proof through it, GetStatus,
# and a GPU test with the GPU hidden under CUZK_REQUIRE_GPU=1 (must fail, not skip).
set -u
OUT=${OUT:-/tmp/out}
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
/tmp/bin/cuzkd --config /tmp/cuzk.toml > $OUT/cuzkd.log 2>&1 &
d=$!
for i in $(seq 50); do [ -S /tmp/cuzkd/cuzk.sock ] && break; sleep 0.2; done
/tmp/bin/cuzk-bench single -a unix:///tmp/cuzkd/cuzk.sock --c1 /tmp/fx/2KiB/c1.envelope.json --out /tmp/p.bin 2>&1 | tee $OUT/daemon.txt
/tmp/bin/cuzk-bench status -a unix:///tmp/cuzkd/cuzk.sock 2>&1 | tee -a $OUT/daemon.txt
kill -TERM $d; wait $d; echo "cuzkd exit $?" | tee -a $OUT/daemon.txt
echo "--- CUZK_REQUIRE_GPU=1 with no visible GPU (must fail):" | tee -a $OUT/daemon.txt
CUDA_VISIBLE_DEVICES= CUZK_REQUIRE_GPU=1 /tmp/bin/gpu_equivalence --test-threads=1 2>&1 | tail -5 | tee -a $OUT/daemon.txt
echo "rc ${PIPESTATUS[0]}" | tee -a $OUT/daemon.txt
