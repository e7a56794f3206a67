#!/usr/bin/env bash
# Run it: from a checkout to a proof made by cuzkd and verified, in one command, without
# writing a file or touching the system: nothing outside target/, the fixture cache
# (~/.cache/cuzk/fixtures, or $CUZK_FIXTURE_DIR) and a temporary directory.
#
#   bash tools/first-proof.sh            # the GPU when one is usable, else the CPU
#   bash tools/first-proof.sh --cpu      # the CPU backend (--gpu: the GPU or an error)
#   bash tools/first-proof.sh --no-build # the binaries in target/release as they are (CI)
#
# 1. Builds what ships (cuzkd and the client cuzk-bench: `cargo build --release -p cuzkd
#    -p cuzk-cli`), then the lab (cuzk-lab) in a cargo invocation of its own: the lab turns
#    on test support that must not reach the shipped cuzkd. With $NVCC set (tools/install-nvcc)
#    the CUDA kernels are compiled; without it cuzkd proves on the CPU.
# 2. Makes the 2 KiB test fixture when missing (test parameters from cuzk's own setup and a
#    really sealed 2 KiB sector: about 90 s on 2 cores the first time, cached afterwards).
# 3. Starts cuzkd on a configuration written into the temporary directory: a unix socket
#    there, its state there, the fixture's parameters, no D-Bus.
# 4. Proves the fixture's PoRep C1 output through the daemon's gRPC (`cuzk-bench single`,
#    progress on stderr); cuzkd verifies every proof before it answers.
# 5. Verifies the proof again in a process of its own (`cuzk-bench verify`: filecoin-proofs'
#    verify_seal), stops cuzkd (SIGTERM: it drains), and says how to keep it serving.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

backend=auto
build=1
for arg in "$@"; do
  case "$arg" in
    --cpu) backend=cpu ;;
    --gpu) backend=gpu ;;
    --no-build) build=0 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "first-proof: unknown argument '$arg' (--cpu, --gpu, --no-build)" >&2; exit 2 ;;
  esac
done

say() { printf '\n== %s\n' "$*"; }
die() { echo "first-proof: $*" >&2; exit 1; }
command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) first"

BIN=$REPO/target/release
if [ "$build" = 1 ]; then
  say "1/5 building cuzkd and the client (cuzk-bench), then the lab (cuzk-lab)"
  if [ -z "${NVCC:-}" ]; then
    echo "NVCC is not set: the kernels are not compiled and cuzkd proves on the CPU"
    echo "(for the GPU: export NVCC=\$(tools/install-nvcc | tail -1), then run this again)"
  fi
  cargo build --release -p cuzkd -p cuzk-cli
  cargo build --release -p cuzk-bench
else
  say "1/5 the binaries in $BIN as they are (--no-build)"
  for b in cuzkd cuzk-bench cuzk-lab; do
    [ -x "$BIN/$b" ] || die "no $BIN/$b: build first (or leave out --no-build)"
  done
fi

say "2/5 the 2 KiB test fixture"
"$BIN/cuzk-lab" gen-fixture --sector-size 2KiB
FIX="${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}/2KiB"
[ -f "$FIX/c1.envelope.json" ] || die "no fixture at $FIX after gen-fixture"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuzk-first-proof.XXXXXX")
SOCK="$WORK/cuzk.sock"
PID=
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

say "3/5 starting cuzkd (configuration, socket, state and log in $WORK)"
cat > "$WORK/cuzk.toml" <<EOF
# Written by tools/first-proof.sh; every key: docs/configuration.md.
[daemon]
listen = "unix://$SOCK"
state_dir = "$WORK/state"

[srs]
param_cache = "$FIX/params"
parent_cache = "$FIX/parents"

[gpus]
backend = "$backend"

[dbus]
bus = "none"

[log]
target = "stderr"
EOF
"$BIN/cuzkd" --config "$WORK/cuzk.toml" 2> "$WORK/cuzkd.log" &
PID=$!
for _ in $(seq 1 100); do
  [ -S "$SOCK" ] && break
  kill -0 "$PID" 2>/dev/null || { cat "$WORK/cuzkd.log" >&2; die "cuzkd exited at start (its log is above)"; }
  sleep 0.1
done
[ -S "$SOCK" ] || die "cuzkd did not open $SOCK in 10 s (log: $WORK/cuzkd.log)"

say "4/5 proving the fixture's PoRep C1 output through cuzkd"
"$BIN/cuzk-bench" -a "unix://$SOCK" single --c1 "$FIX/c1.envelope.json" --out "$WORK/proof.bin"

say "5/5 verifying the proof in a process of its own"
"$BIN/cuzk-bench" verify --c1 "$FIX/c1.envelope.json" --proof "$WORK/proof.bin" --param-cache "$FIX/params"
"$BIN/cuzk-bench" -a "unix://$SOCK" status | head -3
kill -TERM "$PID"
wait "$PID" || die "cuzkd did not stop cleanly (log: $WORK/cuzkd.log)"
PID=

cat <<EOF

cuzkd proved a 2 KiB PoRep sector and filecoin-proofs verified it.
  proof:   $WORK/proof.bin
  log:     $WORK/cuzkd.log
  config:  $WORK/cuzk.toml

To keep it serving:
  - NixOS: the flake's module, services.cuzk (docs/operator.md, "On NixOS");
  - any systemd host: install target/release/cuzkd and cuzk-bench and the units in systemd/
    (docs/operator.md, "On any systemd host"); cuzk.socket listens on /run/cuzk/cuzk.sock
    and the first client call starts the daemon;
  - by hand: $BIN/cuzkd --config /etc/cuzk/cuzk.toml (docs/configuration.md has every key;
    point [srs] param_cache at your filecoin-proof-parameters directory).
Curio reaches it through [Cuzk] Address in its config: the unix socket, or a TCP listener with
a token, TLS or [daemon.tcp] insecure = true (README.md, "Use it with Curio").
EOF
