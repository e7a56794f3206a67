#!/bin/bash
# Issue #55's device rows: a 32 GiB PoRep proof that filecoin-proofs verifies, made by cuzkd.
# Parts (DEVICE_SAT_PARTS, in this order by default; each later part uses what the earlier
# ones left in DEVICE_SAT_DIR on the same warm machine, so they may be split across calls):
#
#   fixture  gen-fixture --satisfying: the satisfying C1 (seconds), partition 0 synthesized
#            and checked (its circuit recorded), then the test parameters from cuzk's own setup
#            (47.4 GB at 32 GiB) under their real names; peak RSS over the whole process.
#            A parameter set an earlier call left there is kept (its .vk matches it). It runs
#            in a session of its own: a call that ends first (DEVICE_SAT_WAIT, 540 s into the
#            call) leaves it running, and the next call's fixture part waits for it again.
#   daemon   page cache dropped, cuzkd started on the GPU: one proof through gRPC (Curio's
#            proto; cold start = daemon start to the first verified proof), verify_seal on it
#            in a process of its own, then DEVICE_PROOFS (6) proofs with `cuzk-bench batch`,
#            all in flight, each verified by the daemon and again by `cuzk-bench verify`;
#            cuzkd's peak RSS over its whole run (VmHWM)
#   engine   engine-bench on the 32 GiB shape-only C1 with the same parameter file, the same
#            number of proofs, synthesis workers and deferred evaluation as cuzkd: the
#            reference for the daemon's steady state (shape-only input, bench only)
#   referee  `cuzk-lab referee`: partition 0 on the GPU and on the CPU backend with the same
#            r and s, bytes compared
#
#   device run: DEVICE_SAT_PARTS=fixture bash bench/device/satisfying32.sh    carry: ["device-carry"]
#   device run: DEVICE_SAT_PARTS="daemon" bash bench/device/satisfying32.sh   (same warm machine)
#
# Settings: DEVICE_SAT_PARTS (fixture daemon engine referee), DEVICE_SAT_SIZE (32GiB; 2KiB
# for a dry run), DEVICE_SAT_DIR (/tmp/sat), DEVICE_PROOFS (6; 0: the single proof only), DEVICE_SYNTH_WORKERS (2:
# cuzkd's default on one GPU), DEVICE_BACKEND (gpu; cpu for a dry run without a GPU: no
# engine or referee). Needs cuzk-lab, cuzk-bench and cuzkd in device-carry/. Logs go to $OUT.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab cuzk-bench cuzkd || exit 2
SIZE=${DEVICE_SAT_SIZE:-32GiB}
DIR=${DEVICE_SAT_DIR:-/tmp/sat}
PROOFS=${DEVICE_PROOFS:-6}
SYNTH=${DEVICE_SYNTH_WORKERS:-2}
BACKEND=${DEVICE_BACKEND:-gpu}
[ "$BACKEND" = gpu ] && export CUZK_REQUIRE_GPU=1
export RUST_LOG=${RUST_LOG:-info}
[ "$BACKEND" = gpu ] && gpu_info
machine_info
df -h / /tmp | tee "$OUT/df.txt"
status=0
part_failed() { echo "satisfying32: part $1 failed after $(elapsed) s" | tee -a "$OUT/summary.txt"; status=1; }
params_file() { ls "$DIR"/params/*.params 2>/dev/null | head -1; }

# The fixture runs in a session of its own (setsid), so that a call that ends before it does
# leaves it running on the warm machine: the next call's fixture part waits for it again.
# Its logs live in /tmp/sat-logs ($OUT is emptied between calls) and are copied to $OUT.
LOGS=/tmp/sat-logs
fixture() {
  mkdir -p "$LOGS"
  if [ ! -f "$LOGS/fixture.rc" ] && ! pgrep -f "gen-fixture --sector-size $SIZE --satisfying" > /dev/null; then
    setsid bash -c "/usr/bin/time -v '$BIN/cuzk-lab' gen-fixture --sector-size '$SIZE' --satisfying --out '$DIR' \
      > '$LOGS/fixture.txt' 2> '$LOGS/fixture-progress.txt'; echo \$? > '$LOGS/fixture.rc'" < /dev/null > /dev/null 2>&1 &
    echo "fixture started at $(elapsed) s"
  else
    echo "fixture already started by an earlier call"
  fi
  local waited=0 limit=${DEVICE_SAT_WAIT:-540}
  while [ ! -f "$LOGS/fixture.rc" ] && [ "$(elapsed)" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
  cp "$LOGS"/fixture* "$OUT/" 2>/dev/null
  grep -E "done in|failed" "$LOGS/fixture-progress.txt" | tail -24
  if [ ! -f "$LOGS/fixture.rc" ]; then
    echo "fixture still running after $(elapsed) s: call the fixture part again on this machine"
    tail -2 "$LOGS/fixture-progress.txt"
    return 1
  fi
  cat "$LOGS/fixture.txt"
  grep -E "Maximum resident|Elapsed \(wall" "$LOGS/fixture-progress.txt"
  ls -la "$DIR" "$DIR/params"
  df -h /
  [ "$(cat "$LOGS/fixture.rc")" = 0 ]
}

daemon() {
  local sock=/tmp/cuzkd-sat/cuzk.sock pid t0 t1 i rc=0
  rm -rf /tmp/cuzkd-sat /tmp/sat-proofs && mkdir -p /tmp/cuzkd-sat /tmp/sat-proofs
  cat > /tmp/cuzkd-sat.toml <<T
[daemon]
listen = "unix://$sock"
state_dir = "/tmp/cuzkd-sat/state"
[srs]
param_cache = "$DIR/params"
parent_cache = "$DIR/parents"
[gpus]
backend = "$BACKEND"
[engine]
synthesis_workers = $SYNTH
[dbus]
bus = "none"
[log]
target = "stderr"
T
  # Cold start: nothing of the parameter file in the page cache.
  sync && echo 3 > /proc/sys/vm/drop_caches || echo "page cache not dropped (not root?)"
  t0=$(date +%s.%N)
  "$BIN/cuzkd" --config /tmp/cuzkd-sat.toml > "$OUT/cuzkd.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.1; done
  "$BIN/cuzk-bench" single -a "unix://$sock" --c1 "$DIR/c1.envelope.json" --out /tmp/sat-proofs/single.bin \
    2>&1 | tee "$OUT/daemon-single.txt" || rc=1
  t1=$(date +%s.%N)
  echo "cold start (daemon start, page cache dropped, to the first verified proof): $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUT/daemon-single.txt"
  RUST_LOG=warn "$BIN/cuzk-bench" verify --c1 "$DIR/c1.envelope.json" --proof /tmp/sat-proofs/single.bin --param-cache "$DIR/params" \
    2>&1 | tee -a "$OUT/daemon-single.txt" || rc=1
  if [ "$rc" = 0 ] && [ "$PROOFS" -gt 0 ]; then
    "$BIN/cuzk-bench" batch -a "unix://$sock" --c1 "$DIR/c1.envelope.json" -c "$PROOFS" -j "$PROOFS" --out-dir /tmp/sat-proofs \
      2>&1 | tee "$OUT/daemon-batch.txt" || rc=1
    # All were submitted at once: each wall time is a completion time. Steady state: the
    # time between the first and the last completion over the proofs between them.
    grep -oE "COMPLETED — [0-9.]+s" "$OUT/daemon-batch.txt" | grep -oE "[0-9.]+" | sort -n \
      | awk '{t[NR]=$1} END {if (NR > 1) printf "steady state: %.2f s per proof ((last %.1f - first %.1f) / %d)\n", (t[NR]-t[1])/(NR-1), t[NR], t[1], NR-1}' \
      | tee -a "$OUT/daemon-batch.txt"
    for i in $(seq 0 $((PROOFS - 1))); do
      f=/tmp/sat-proofs/proof-$i.bin
      [ -f "$f" ] || { echo "proof $i: no file" | tee -a "$OUT/daemon-batch.txt"; rc=1; continue; }
      RUST_LOG=warn "$BIN/cuzk-bench" verify --c1 "$DIR/c1.envelope.json" --proof "$f" --param-cache "$DIR/params" 2>&1 \
        | sed "s|^|$(basename "$f"): |" | tee -a "$OUT/daemon-batch.txt" || rc=1
    done
  fi
  "$BIN/cuzk-bench" status -a "unix://$sock" > "$OUT/daemon-status.txt" 2>&1
  echo "cuzkd peak RSS over its run: $(grep VmHWM /proc/$pid/status)" | tee -a "$OUT/daemon-batch.txt"
  kill -TERM "$pid"; wait "$pid"; echo "cuzkd exit $?" | tee -a "$OUT/daemon-batch.txt"
  return $rc
}

engine() {
  local p
  p=$(params_file) || true
  [ -n "$p" ] || { echo "no parameter file in $DIR/params: run the fixture part first"; return 1; }
  mkdir -p /tmp/sat-shape
  "$BIN/cuzk-lab" gen-fixture --sector-size "$SIZE" --shape-only --out /tmp/sat-shape > "$OUT/engine-gen.txt" 2>&1 || return 1
  /usr/bin/time -v "$BIN/cuzk-lab" engine-bench --c1 /tmp/sat-shape/c1.shape-only.json --params-file "$p" \
    --proofs "$PROOFS" --synthesis-workers "$SYNTH" --deferred > "$OUT/engine.txt" 2>&1 || return 1
  grep -v "^\s*$" "$OUT/engine.txt" | grep -v "^\s*S job\|^\s*G job" | tail -40
}

referee() {
  /usr/bin/time -v "$BIN/cuzk-lab" referee --c1 "$DIR/c1.json" --param-cache "$DIR/params" --partition 0 \
    > "$OUT/referee.txt" 2>&1 || { tail -20 "$OUT/referee.txt"; return 1; }
  grep -v "^\s" "$OUT/referee.txt" | head; grep -E "^\s+(gpu|cpu):|Maximum resident|Elapsed \(wall" "$OUT/referee.txt"
}

for part in ${DEVICE_SAT_PARTS:-fixture daemon engine referee}; do
  echo "=== $part (at $(elapsed) s)" | tee -a "$OUT/summary.txt"
  case $part in
    fixture | daemon | engine | referee) "$part" || part_failed "$part" ;;
    *) echo "unknown part $part (fixture daemon engine referee)"; exit 2 ;;
  esac
done
echo "satisfying32: done after $(elapsed) s, status $status" | tee -a "$OUT/summary.txt"
exit $status
