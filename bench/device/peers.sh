#!/bin/bash
# One call on the lent GPU machine: cuzk-peers (cuzk against sppark in one process, and
# against supraseal-c2-bench in its own, see peers/README.md), from the release binary built here and carried gzipped in
# device-carry/. Log to $OUT/peers.log; the table is printed last.
#
#   device run: bash bench/device/peers.sh        carry: ["device-carry"]
#
# The 2 KiB fixture is read from /tmp/fx/2KiB (DEVICE_PEERS_FIXTURE): when it is not there and
# device-carry/cuzk-lab.gz is, it is generated first (about 2 minutes on 16 cores), before
# the bench so that it does not load the cores the bench's host side uses;
# DEVICE_PEERS_NO_FIXTURE=1 skips it (a --shape run with --mix-c1 needs none). Extra flags go
# in DEVICE_PEERS_ARGS (e.g. "--quick" or "--no-porep"), its time limit in
# DEVICE_PEERS_TIMEOUT (300 s).
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-peers || exit 2
# The proof rows run supraseal-c2 in its own process, from beside cuzk-peers.
if has supraseal-c2-bench; then unpack supraseal-c2-bench || exit 2; fi
if has cuzk-lab; then unpack cuzk-lab || exit 2; fi
gpu_info
FX=${DEVICE_PEERS_FIXTURE:-/tmp/fx/2KiB}
if [ -z "${DEVICE_PEERS_NO_FIXTURE:-}" ] && [ ! -f "$FX/fixture.json" ] && [ -x "$BIN/cuzk-lab" ]; then
  fixture_start "$FX"
  fixture_wait
  tail -1 "$OUT/fixture.log"
fi
# The bench itself takes about 1.5 minutes (estimated, not yet measured); 300 s at most.
# shellcheck disable=SC2086  # DEVICE_PEERS_ARGS is split into arguments
timeout "${DEVICE_PEERS_TIMEOUT:-300}" "$BIN/cuzk-peers" --fixture-dir "$FX" ${DEVICE_PEERS_ARGS:-} 2>&1 | tee "$OUT/peers.log"
status=$?
echo "cuzk-peers: status $status after $(elapsed) s" | tee -a "$OUT/peers.log"
exit $status
