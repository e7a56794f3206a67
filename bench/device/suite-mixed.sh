#!/bin/bash
# One call for a GPU change's checks and its effect on the mixed load (issue #40): the 32 GiB
# shape-only fixtures made in the background (kinds32.sh uses them), the GPU suite
# (run.sh, DEVICE_SKIP_BENCH=1) into $OUT/tests, then kinds32.sh's `mixed` part into
# $OUT/mixed, with the GPU residency decisions logged (cuzk_gpu::resident=info):
#
#   device run: bash bench/device/suite-mixed.sh        carry: ["device-carry"]
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab || exit 2
export DEVICE_START
mkdir -p /tmp/k32 "$OUT/k32"
( "$BIN/cuzk-lab" gen-fixture --sector-size 32GiB --shape-only --out /tmp/k32 > "$OUT/k32/gen.txt" 2>&1
  echo "gen rc $? after $(elapsed) s" >> "$OUT/k32/gen.txt" ) &
gen=$!
status=0
DEVICE_SKIP_BENCH=1 OUT=$OUT/tests bash bench/device/run.sh || status=1
wait $gen
tail -1 "$OUT/k32/gen.txt"
echo "[$(elapsed) s] suite done, status $status"
DEVICE_KINDS= DEVICE_ENGINE=mixed DEVICE_PROOFS=${DEVICE_PROOFS:-3} \
  RUST_LOG=warn,cuzk_gpu::eval=info,cuzk_gpu::resident=info,cuzk_engine=info OUT=$OUT/mixed \
  bash bench/device/kinds32.sh || status=1
exit $status
