#!/bin/bash
# One call on the lent GPU machine: cuzk-peers (cuzk against sppark and supraseal-c2 in one
# process, see peers/README.md), from the release binary built here and carried gzipped in
# device-carry/. Log to $OUT/peers.log; the table is printed last.
#
#   device run: bash peers/device-peers.sh        carry: ["device-carry"]
#
# The 2 KiB fixture is read from /tmp/fx/2KiB (CUZK_PEERS_FIXTURE): when it is not there and
# device-carry/cuzk-bench.gz is, it is generated first (about 2 minutes on 16 cores), before
# the bench so that it does not load the cores the bench's host side uses. Extra flags go in
# CUZK_PEERS_ARGS (e.g. "--quick" or "--no-porep"), its time limit in CUZK_PEERS_TIMEOUT.
set -u -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/bin
for b in cuzk-peers cuzk-bench; do
  [ -f "device-carry/$b.gz" ] && gunzip -c "device-carry/$b.gz" > "/tmp/bin/$b" && chmod +x "/tmp/bin/$b"
done
[ -x /tmp/bin/cuzk-peers ] || { echo "device-carry/cuzk-peers.gz missing"; exit 2; }
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
FX=${CUZK_PEERS_FIXTURE:-/tmp/fx/2KiB}
start=$(date +%s)
# CUZK_PEERS_NO_FIXTURE=1 skips it (a --shape run with --mix-c1 needs none).
if [ -z "${CUZK_PEERS_NO_FIXTURE:-}" ] && [ ! -f "$FX/fixture.json" ] && [ -x /tmp/bin/cuzk-bench ]; then
  /tmp/bin/cuzk-bench gen-fixture --sector-size 2KiB --out "$FX" > "$OUT/fixture.log" 2>&1
  echo "fixture rc $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/fixture.log"
fi
# The bench itself takes about 1.5 minutes (estimated, not yet measured); 300 s at most.
timeout ${CUZK_PEERS_TIMEOUT:-300} /tmp/bin/cuzk-peers --fixture-dir "$FX" ${CUZK_PEERS_ARGS:-} 2>&1 | tee "$OUT/peers.log"
status=$?
echo "cuzk-peers: status $status after $(( $(date +%s) - start )) s" | tee -a "$OUT/peers.log"
exit $status
