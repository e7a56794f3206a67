# shellcheck shell=bash
# What the device scripts share (source it; bench/device/README.md lists the scripts). It
# moves to the repository root, so a script runs the same from anywhere, and defines:
#
#   OUT         where logs go: $OUT as the device tool sets it, else /tmp/out (made here)
#   CARRY       device-carry, the gzipped binaries built here (carry: ["device-carry"])
#   BIN         /tmp/bin, where unpack puts them (made here)
#   unpack [NAME...]      CARRY/NAME.gz to BIN/NAME, executable; no NAME: every .gz in CARRY
#   has NAME              true when CARRY/NAME.gz is there
#   gpu_info              the GPUs (name, driver, memory, SM clock) to stdout and $OUT/nvidia-smi.txt
#   machine_info          date, cores, memory, transparent huge pages to stdout and $OUT/machine.txt
#   elapsed               seconds since lib.sh was sourced (or since DEVICE_START, when set)
#   gpu_tests             the GPU equality and memory tests (gpu_equivalence one test at a
#                         time, then gpu_memory) into $OUT/tests.log; fails when one fails
#   fixture_start [DIR]   the 2 KiB fixture into DIR (/tmp/fx/2KiB) in the background,
#                         log in $OUT/fixture.log; fixture_wait waits for it
#   daemon_start          cuzkd on the GPU (backend "gpu") over the fixture in /tmp/fx/2KiB,
#                         log in $OUT/cuzkd.log, socket in $SOCK; daemon_stop [FILE] stops it
#                         and appends its exit status to FILE
#
# RUST_BACKTRACE=1 is exported. The scripts' own settings are DEVICE_* variables; they were
# CUZK_* before 2026-12-05, and an old name that is set stops the script with the new one.
set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
OUT=${OUT:-/tmp/out}
CARRY=device-carry
BIN=/tmp/bin
SOCK=unix:///tmp/cuzkd/cuzk.sock
# A call that chains scripts exports DEVICE_START once: their time limits then count from
# the call's start, not each script's.
DEVICE_START=${DEVICE_START:-$(date +%s)}
mkdir -p "$OUT" "$BIN"
export RUST_BACKTRACE=1

# The old names: stop rather than ignore them (bench/history/'s commands use them).
for pair in CUZK_DEVICE_SKIP_TESTS:DEVICE_SKIP_TESTS CUZK_DEVICE_SKIP_BENCH:DEVICE_SKIP_BENCH \
  CUZK_DEVICE_SKIP_KERNEL_TESTS:DEVICE_SKIP_KERNEL_TESTS CUZK_BENCH_ARGS:DEVICE_BENCH_ARGS \
  CUZK_PROOFS:DEVICE_PROOFS CUZK_SYNTH_WORKERS:DEVICE_SYNTH_WORKERS CUZK_GPU_WORKERS:DEVICE_GPU_WORKERS \
  CUZK_BUDGET_GIB:DEVICE_BUDGET_GIB CUZK_URGENT:DEVICE_URGENT CUZK_URGENT_LANES:DEVICE_URGENT_LANES \
  CUZK_URGENT_EVERY:DEVICE_URGENT_EVERY CUZK_HOST_RELEASE_DIR:DEVICE_HOST_RELEASE_DIR \
  CUZK_DEVICES:DEVICE_GPUS CUZK_VRAM_BUDGET:DEVICE_VRAM_BUDGET CUZK_FAIL_DEVICE:DEVICE_FAIL_GPU \
  CUZK_FAIL_AFTER:DEVICE_FAIL_AFTER CUZK_SHAPES:DEVICE_SHAPES CUZK_SKIP_32G:DEVICE_SKIP_32G \
  CUZK_BUDGETS:DEVICE_BUDGETS CUZK_SHAPE_ARGS:DEVICE_SHAPE_ARGS CUZK_SKIP_REFERENCE:DEVICE_SKIP_REFERENCE \
  CUZK_ROUNDS:DEVICE_ROUNDS CUZK_PEERS_FIXTURE:DEVICE_PEERS_FIXTURE \
  CUZK_PEERS_NO_FIXTURE:DEVICE_PEERS_NO_FIXTURE CUZK_PEERS_ARGS:DEVICE_PEERS_ARGS \
  CUZK_PEERS_TIMEOUT:DEVICE_PEERS_TIMEOUT; do
  old=${pair%%:*}
  if [ -n "${!old+set}" ]; then
    echo "$old is now ${pair#*:} (bench/device/README.md)" >&2
    exit 2
  fi
done
unset pair old

# shellcheck disable=SC2120  # NAME is optional
unpack() {
  local names=("$@") f n
  if [ $# -eq 0 ]; then
    for f in "$CARRY"/*.gz; do [ -f "$f" ] && names+=("$(basename "$f" .gz)"); done
  fi
  for n in ${names[@]+"${names[@]}"}; do
    [ -f "$CARRY/$n.gz" ] || { echo "$CARRY/$n.gz missing" >&2; return 2; }
    gunzip -c "$CARRY/$n.gz" > "$BIN/$n" && chmod +x "$BIN/$n" || return 2
  done
}

has() { [ -f "$CARRY/$1.gz" ]; }

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
}

machine_info() {
  local thp=/sys/kernel/mm/transparent_hugepage
  echo "date: $(date -u); $(nproc) cores; $(free -g | awk '/Mem:/{print $2}') GiB;" \
    "THP enabled $(cat $thp/enabled 2>/dev/null), defrag $(cat $thp/defrag 2>/dev/null)" | tee "$OUT/machine.txt"
}

elapsed() { echo $(( $(date +%s) - DEVICE_START )); }

gpu_tests() {
  local rc=0
  "$BIN/gpu_equivalence" --test-threads=1 2>&1 | tee "$OUT/tests.log" || rc=1
  "$BIN/gpu_memory" 2>&1 | tee -a "$OUT/tests.log" || rc=1
  return $rc
}

FIXTURE_PID=
# shellcheck disable=SC2120  # DIR is optional
fixture_start() {
  local dir=${1:-/tmp/fx/2KiB}
  ( "$BIN/cuzk-lab" gen-fixture --sector-size 2KiB --out "$dir" > "$OUT/fixture.log" 2>&1
    echo "fixture rc $? after $(elapsed) s" >> "$OUT/fixture.log" ) &
  FIXTURE_PID=$!
}

# Returns the fixture's exit status (0 when none was started or it was waited for already).
fixture_wait() {
  [ -n "$FIXTURE_PID" ] || return 0
  wait "$FIXTURE_PID"
  FIXTURE_PID=
  tail -1 "$OUT/fixture.log" | grep -q '^fixture rc 0 '
}

DAEMON_PID=
daemon_start() {
  cat > /tmp/cuzk.toml <<T
[daemon]
listen = "$SOCK"
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
  "$BIN/cuzkd" --config /tmp/cuzk.toml > "$OUT/cuzkd.log" 2>&1 &
  DAEMON_PID=$!
  local _
  for _ in $(seq 100); do [ -S /tmp/cuzkd/cuzk.sock ] && return 0; sleep 0.2; done
  echo "cuzkd: no socket after 20 s (see cuzkd.log)" >&2
  return 1
}

daemon_stop() {
  local rc
  [ -n "$DAEMON_PID" ] || return 0
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID"
  rc=$?
  DAEMON_PID=
  echo "cuzkd exit $rc" | tee -a "${1:-/dev/null}"
}
