#!/usr/bin/env bash
# Issue #4's benchmark: `cuzk-bench batch -c N -j J` through cuzkd against N sequential
# `cuzk-bench prove` runs (each loads the parameters itself), on the 2 KiB fixture.
#
#   bench/daemon-vs-sequential.sh BIN_DIR BACKEND [N] [J] [WORKERS] [SYNTH]
#
# BIN_DIR holds cuzkd and cuzk-bench (built with NVCC for the GPU backend); BACKEND is cpu or
# gpu; WORKERS is [gpus] gpu_workers_per_device, SYNTH [engine] synthesis_workers. The fixture comes from $CUZK_FIXTURE_DIR
# (generated when missing). Prints both reports and the ratio.
set -euo pipefail
BIN=$(cd "$1" && pwd); BACKEND=$2; N=${3:-6}; J=${4:-3}; WORKERS=${5:-1}; SYNTH=${6:-1}
FIXTURES=${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}
export CUZK_FIXTURE_DIR=$FIXTURES
"$BIN/cuzk-lab" gen-fixture --sector-size 2KiB >/dev/null
F=$FIXTURES/2KiB
W=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$W"' EXIT

cat >"$W/cuzk.toml" <<EOF
[daemon]
listen = "unix://$W/cuzk.sock"
state_dir = "$W/state"
[srs]
param_cache = "$F/params"
parent_cache = "$F/parents"
[gpus]
backend = "$BACKEND"
gpu_workers_per_device = $WORKERS
[engine]
synthesis_workers = $SYNTH
[dbus]
bus = "none"
[log]
target = "stderr"
EOF

echo "\$ date -u: $(date -u); $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo no GPU)"
"$BIN/cuzkd" --config "$W/cuzk.toml" 2>"$W/cuzkd.log" &
PID=$!
for _ in $(seq 100); do [ -S "$W/cuzk.sock" ] && break; sleep 0.1; done
echo "\$ cuzk-bench batch -t porep --c1 \$F/c1.envelope.json -c $N -j $J   (cuzkd: backend $BACKEND, $WORKERS worker(s) per device, $SYNTH synthesis worker(s))"
start=$(date +%s.%N)
"$BIN/cuzk-bench" batch -a "unix://$W/cuzk.sock" -t porep --c1 "$F/c1.envelope.json" -c "$N" -j "$J"
batch=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
kill -TERM "$PID"; wait "$PID" || true

echo "\$ for i in 1..$N: cuzk-bench prove --c1 \$F/c1.envelope.json --param-cache \$F/params --backend $BACKEND"
start=$(date +%s.%N)
for i in $(seq "$N"); do
  "$BIN/cuzk-bench" prove --c1 "$F/c1.envelope.json" --param-cache "$F/params" --backend "$BACKEND" \
    --out "$W/proof-$i" 2>&1 | grep -E '^\s*total'
done
seq_total=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "batch wall: $batch s; $N sequential prove runs: $seq_total s; ratio $(awk -v s="$seq_total" -v b="$batch" 'BEGIN { printf "%.2f", s / b }')x"
