#!/bin/bash
# Issue #36's comparison, run by its GPU-run issue: cuzk, upstream cuzk and supraseal-c2 on
# one GPU, each in its own process, one after the other, on the same 32 GiB-shaped input (a
# shape-only C1 output of the real structure) and the same parameter file, written once
# under its real name (`v28-stacked-proof-of-replication-...params`, .vk, .meta), which each
# prover reads from disk itself. SHAPE-ONLY: random contents and random parameters, so no
# 32 GiB proof here can verify; cuzk's and supraseal-c2's must be equal (same witnesses, r
# and s), and upstream's self-check fails them (it then returns no proof: its own timing
# lines are the record). At small sizes every prover's proof is checked against the CPU
# backend's or verified before its time counts (cuzk-peers).
#
#   device run: bash bench/device/compare.sh        carry: ["device-carry"]
#
# Needs in device-carry/: cuzk-lab, cuzk-peers and supraseal-c2-bench (peers/README.md),
# upstream-cuzk-daemon and upstream-cuzk-bench (bench/upstream/build.sh), and the 2 KiB
# fixture's c1.json (the small shapes' scalar mix).
#
# DEVICE_COMPARE_PARTS picks and orders the parts (default: "inputs small cuzk supraseal
# upstream"; more than one call's 10 minutes in all, so three calls on the still-warm
# machine, where "inputs" keeps what is there: "inputs small cuzk", "inputs supraseal",
# "inputs upstream"):
#   inputs     /tmp/cmp/s32: the 32 GiB shape-only C1 and its lotus-bench envelope;
#              /tmp/cmp/params: random parameters of its exact circuit (`cuzk-lab
#              shape-params`, 47.4 GB of the 64 GiB disk), kept while the machine is.
#   small      cuzk-peers: NTT and MSM against sppark, then the 2 KiB PoRep (its fixture made
#              here, about 2 minutes) and PoRep shapes 2^16-2^22, the CPU backend as referee,
#              supraseal-c2 in its own process (DEVICE_PEERS_ARGS adds flags).
#   cuzk       engine-bench --params-file, deferred evaluation (as cuzkd runs), DEVICE_PROOFS
#              (3) proofs: the cold start (page cache dropped, process start to the first
#              proof: its "cold start" line), prove() per partition, steady state per proof, peak host RSS of the
#              whole run (/usr/bin/time). cuzkd refuses shape-only inputs; engine-bench runs
#              the daemon's engine in its process.
#              The parameters' host copy counts against the host budget.
#   supraseal  cuzk-peers --shape-c1: the C1's first DEVICE_SUPRA_PARTITIONS (2) partitions,
#              cuzk on the GPU (the reference at this size) and supraseal-c2-bench proving
#              them in one call, 5 timed calls each, same witnesses, r, s and file; the host
#              holds the parameters (47.4 GB) and 16.7 GB per partition, so 2 fit in 125 GiB.
#   upstream   upstream-cuzk-daemon from the same file (its defaults, with the 128 GiB host
#              settings of its docs: 1 GPU worker, a 100 GiB memory budget), then
#              upstream-cuzk-bench batch: DEVICE_UPSTREAM_PROOFS (3) proofs one at a time
#              (its first took 386 s on an H100: synthesis on its standard path while it
#              extracts its pre-compiled circuit; give this part a call of its own),
#              or two at a time when DEVICE_UPSTREAM_CONCURRENT=1. The batch is cut after
#              DEVICE_UPSTREAM_TIMEOUT (480) s, unless DEVICE_UPSTREAM_DETACH=1: then the
#              daemon and batch run on in process sessions of their own (the device tool
#              keeps them while the machine is held) and the next call's part
#              `upstream-wait` waits up to DEVICE_UPSTREAM_TIMEOUT s more and collects
#              them (3 proofs: about 20 minutes on an H100, an estimate from its 457 s
#              first proof and its 80 s partitions, two at a time, 2026-12-06).
#              DEVICE_UPSTREAM_BUDGET (100GiB) is its [memory] total_budget;
#              DEVICE_UPSTREAM_TOML is appended to its configuration. Its stderr
#              (TIMELINE, CUZK_TIMING) in upstream-daemon.log; VmHWM of the daemon at the end.
#              Its 25 GiB pre-compiled circuit file, which it writes beside the parameters
#              and never reads back, is kept off the disk by a directory of that name (the
#              write fails with a warning, upstream's own handling).
# Free VRAM (nvidia-smi) is logged before each part, the time each part took after it.
# Logs in $OUT: one per part (inputs.log, peers-small.log, cuzk-engine.txt,
# peers-supraseal.log, upstream-*.log), compare.log (the parts' timeline).
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
parts=${DEVICE_COMPARE_PARTS:-"inputs small cuzk supraseal upstream"}
need=(cuzk-lab)
for p in $parts; do
  case $p in
    inputs | cuzk) ;;
    small | supraseal) need+=(cuzk-peers supraseal-c2-bench) ;;
    upstream | upstream-wait) need+=(upstream-cuzk-daemon upstream-cuzk-bench) ;;
    *) echo "compare.sh: unknown part $p (inputs small cuzk supraseal upstream upstream-wait)" >&2; exit 2 ;;
  esac
done
# shellcheck disable=SC2046  # the names are plain words
unpack $(printf '%s\n' "${need[@]}" | sort -u) || exit 2
[ -f "$CARRY/c1.json" ] || { echo "$CARRY/c1.json missing (the 2 KiB fixture's)" >&2; exit 2; }
export CUZK_REQUIRE_GPU=1
gpu_info
machine_info
S32=/tmp/cmp/s32 PARAMS_DIR=/tmp/cmp/params
LOG=$OUT/compare.log
note() { echo "[$(elapsed) s] $*" | tee -a "$LOG"; }
vram() { note "free VRAM before $1: $(nvidia-smi --query-gpu=memory.free,memory.used --format=csv,noheader)"; }
drop_cache() {
  sync
  if { echo 3 > /proc/sys/vm/drop_caches; } 2> /dev/null; then note "page cache dropped"; else note "page cache NOT dropped (not permitted here): a warm read"; fi
}
params_file() { ls "$PARAMS_DIR"/v28-stacked-proof-of-replication-*.params 2> /dev/null | head -1; }
# P: the parameter file, or a note and a failure when the inputs part has not made it.
need_params() {
  P=$(params_file)
  [ -n "$P" ] || { note "no parameter file: run the inputs part first"; return 1; }
}
status=0

part_inputs() {
  mkdir -p "$S32" "$PARAMS_DIR"
  if [ ! -f "$S32/c1.shape-only.envelope.json" ]; then
    "$BIN/cuzk-lab" gen-fixture --sector-size 32GiB --shape-only --out "$S32" >> "$OUT/inputs.log" 2>&1 || return 1
  fi
  if [ -z "$(params_file)" ]; then
    df -h /tmp >> "$OUT/inputs.log"
    "$BIN/cuzk-lab" shape-params --c1 "$S32/c1.shape-only.json" --out "$PARAMS_DIR" >> "$OUT/inputs.log" 2>&1 || return 1
  fi
  ls -la "$PARAMS_DIR" "$S32" >> "$OUT/inputs.log"
  df -h /tmp >> "$OUT/inputs.log"
  tail -3 "$OUT/inputs.log"
}

part_small() {
  # shellcheck disable=SC2086  # DEVICE_PEERS_ARGS is split into arguments
  timeout 420 "$BIN/cuzk-peers" --fixture-dir /tmp/fx/2KiB --mix-c1 "$CARRY/c1.json" --shape-dir /tmp/cmp/small \
    --supraseal-bin "$BIN/supraseal-c2-bench" ${DEVICE_PEERS_ARGS:-} > "$OUT/peers-small.log" 2>&1
  local rc=$?
  grep -E "^\|" "$OUT/peers-small.log" | tail -30
  return $rc
}

part_cuzk() {
  need_params || return 1
  drop_cache
  local t0
  t0=$(date +%s.%N)
  RUST_LOG=warn,cuzk_gpu::eval=info /usr/bin/time -v "$BIN/cuzk-lab" engine-bench --c1 "$S32/c1.shape-only.json" \
    --params-file "$P" --deferred --proofs "${DEVICE_PROOFS:-3}" > "$OUT/cuzk-engine.txt" 2>&1
  local rc=$?
  echo "process started at $t0 (date +%s.%N); ended $(date +%s.%N)" >> "$OUT/cuzk-engine.txt"
  grep -E "parameters read|host memory budget|proof 0 |cold start|steady state|peak host RSS|Maximum resident|GPU busy|prove\(\) stages" "$OUT/cuzk-engine.txt"
  return $rc
}

part_supraseal() {
  need_params || return 1
  timeout 480 "$BIN/cuzk-peers" --no-sppark --no-porep --proof-shapes "" --shape-c1 "$S32/c1.shape-only.json" \
    --shape-params "$P" --shape-partitions "${DEVICE_SUPRA_PARTITIONS:-2}" --shape-dir /tmp/cmp/work \
    --supraseal-bin "$BIN/supraseal-c2-bench" > "$OUT/peers-supraseal.log" 2>&1
  local rc=$?
  grep -E "^\||supraseal-c2:|peak host RSS|every call|MISMATCH" "$OUT/peers-supraseal.log"
  return $rc
}

# Upstream's logs live in /tmp/cmp/up (a call's $OUT is emptied before the next call), and
# are copied to $OUT by every call that runs an upstream part.
UP=/tmp/cmp/up
up_collect() {
  for f in upstream-daemon.log upstream-bench.log upstream.toml; do
    [ -f "$UP/$f" ] && sed 's/\x1b\[[0-9;]*m//g' "$UP/$f" > "$OUT/$f"
  done
  return 0
}
# Waits up to $1 s for the batch (its pid in $UP/bench.pid) to end; true when it did.
up_wait() {
  local bpid
  bpid=$(cat "$UP/bench.pid" 2> /dev/null) || return 0
  for _ in $(seq "$1"); do
    kill -0 "$bpid" 2> /dev/null || return 0
    sleep 1
  done
  ! kill -0 "$bpid" 2> /dev/null
}
# The daemon's peak RSS, the daemon stopped, the logs to $OUT and their summary.
up_finish() {
  local pid
  pid=$(cat "$UP/daemon.pid" 2> /dev/null)
  if [ -n "$pid" ]; then
    grep -E "VmHWM|VmRSS" "/proc/$pid/status" >> "$UP/upstream-bench.log" 2> /dev/null
    kill "$pid" 2> /dev/null
    for _ in $(seq 30); do kill -0 "$pid" 2> /dev/null || break; sleep 1; done
  fi
  rm -f "$UP/daemon.pid" "$UP/bench.pid"
  echo "UPSTREAM'S PROOFS OF SHAPE-ONLY INPUTS FAIL ITS SELF-CHECK (expected): its timing lines are the record" >> "$UP/upstream-bench.log"
  up_collect
  tail -25 "$OUT/upstream-bench.log"
  grep -c "^TIMELINE" "$OUT/upstream-daemon.log" | sed 's/^/TIMELINE lines: /'
  grep "GPU prove complete" "$OUT/upstream-daemon.log" | grep -o "gpu_ms=[0-9]*" | tr '\n' ' '
  echo
}
up_progress() {
  up_collect
  grep -c "GPU prove complete" "$OUT/upstream-daemon.log" | sed 's/^/partitions proved so far: /'
}

part_upstream() {
  need_params || return 1
  # Its pre-compiled circuit cache (25 GiB, never read back) cannot be written here: it
  # writes pce-porep-32g.tmp, then renames it to .bin; directories of both names make the
  # first step fail (a warning of upstream's). Without them the 47.4 GB parameter file
  # leaves too little disk and the write fills it (2026-12-06 dry run).
  mkdir -p "$PARAMS_DIR/pce-porep-32g.bin" "$PARAMS_DIR/pce-porep-32g.tmp" "$UP"
  if [ -f "$UP/daemon.pid" ] && kill -0 "$(cat "$UP/daemon.pid")" 2> /dev/null; then
    note "an upstream daemon still runs (pid $(cat "$UP/daemon.pid")): run upstream-wait, not upstream"
    return 1
  fi
  rm -f "$UP/upstream-daemon.log" "$UP/upstream-bench.log"
  printf '[daemon]\nlisten = "127.0.0.1:9820"\n[srs]\nparam_cache = "%s"\n[memory]\ntotal_budget = "%s"\n[gpus]\ndevices = [0]\ngpu_workers_per_device = 1\n%s\n' \
    "$PARAMS_DIR" "${DEVICE_UPSTREAM_BUDGET:-100GiB}" "${DEVICE_UPSTREAM_TOML:-}" > "$UP/upstream.toml"
  drop_cache
  local t0
  t0=$(date +%s.%N)
  # Process sessions of their own: with DEVICE_UPSTREAM_DETACH=1 the daemon and its batch
  # outlive this call (the device tool keeps such processes while the machine is held).
  FIL_PROOFS_PARAMETER_CACHE=$PARAMS_DIR RUST_LOG=info setsid "$BIN/upstream-cuzk-daemon" -c "$UP/upstream.toml" \
    > "$UP/upstream-daemon.log" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$UP/daemon.pid"
  echo "daemon started at $t0 (date +%s.%N), pid $pid" >> "$UP/upstream-bench.log"
  local up=0
  for _ in $(seq 60); do
    kill -0 "$pid" 2> /dev/null || { note "upstream daemon exited at start"; up_finish; return 1; }
    if (exec 3<> /dev/tcp/127.0.0.1/9820) 2> /dev/null; then up=1; break; fi
    sleep 1
  done
  [ $up = 1 ] || { note "upstream daemon did not listen in 60 s"; up_finish; return 1; }
  local n=${DEVICE_UPSTREAM_PROOFS:-3} j=1
  [ "${DEVICE_UPSTREAM_CONCURRENT:-0}" = 1 ] && j=2
  # shellcheck disable=SC2016  # $(date) runs in the batch's shell, when it ends
  setsid sh -c '"$0" --addr http://127.0.0.1:9820 batch -t porep --c1 "$1" -c "$2" -j "$3" --sector-num 1 --miner-id 1000;
    echo "batch -j $3 ended at $(date +%s.%N)"' "$BIN/upstream-cuzk-bench" "$S32/c1.shape-only.envelope.json" "$n" "$j" \
    >> "$UP/upstream-bench.log" 2>&1 < /dev/null &
  echo $! > "$UP/bench.pid"
  local limit=${DEVICE_UPSTREAM_TIMEOUT:-480}
  if up_wait "$limit"; then
    up_finish
    return 0
  fi
  if [ "${DEVICE_UPSTREAM_DETACH:-0}" = 1 ]; then
    note "upstream's batch still runs after $limit s (detached): the next call's part upstream-wait collects it"
    up_progress
    return 0
  fi
  note "upstream's batch cut after $limit s"
  kill -- "-$(cat "$UP/bench.pid")" 2> /dev/null # its process group: the shell and the bench
  up_finish
  return 1
}

# The detached batch of an earlier call: waits up to DEVICE_UPSTREAM_TIMEOUT (480) s more;
# when it has ended, finishes (peak RSS, daemon stopped, logs), else leaves it running.
part_upstream-wait() {
  [ -f "$UP/daemon.pid" ] || { note "no detached upstream daemon (run the upstream part with DEVICE_UPSTREAM_DETACH=1)"; return 1; }
  if up_wait "${DEVICE_UPSTREAM_TIMEOUT:-480}"; then
    up_finish
    return 0
  fi
  note "upstream's batch still runs after ${DEVICE_UPSTREAM_TIMEOUT:-480} s more"
  up_progress
  return 0
}

for p in $parts; do
  vram "$p"
  start=$(elapsed)
  "part_$p" || { status=1; note "part $p FAILED"; }
  note "part $p took $(( $(elapsed) - start )) s"
done
note "compare.sh: status $status"
exit $status
