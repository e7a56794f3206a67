#!/usr/bin/env bash
# A Python grpcio client (from PyPI) against cuzkd on its unix socket: with default options
# it is refused (grpc core sends the socket path as :authority, which the HTTP/2 library
# under tonic resets with PROTOCOL_ERROR), with grpc.default_authority = "localhost" it gets
# GetStatus answered and, when the 2 KiB fixture is cached, a WinningPoSt proved through
# Prove. README.md ("Clients in other languages") documents the option.
#
# Run from anywhere:  bash tests/system/python-client.sh
# Needs: target/release/cuzkd (built if missing), python3 with venv, and PyPI for the first
# run: grpcio and grpcio-tools are installed into a venv at $CUZK_PYCLIENT_VENV (default
# ~/.cache/cuzk-pyclient), reused when present. The stubs are generated from proving.proto
# into a temporary directory at each run. The fixture: $CUZK_FIXTURE_DIR/2KiB (default
# ~/.cache/cuzk/fixtures/2KiB); without it only the GetStatus checks run. Not run by cargo test.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${CUZK_PYCLIENT_VENV:-$HOME/.cache/cuzk-pyclient}"
# The GPU host's python has grpcio 1.84; stubs from a newer grpcio-tools refuse an older grpcio.
GRPC_PIN="1.84.*"
FIXTURE="${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}/2KiB"
CUZKD="$REPO/target/release/cuzkd"
# cpu (CI has no GPU); gpu or auto to prove on a GPU host.
BACKEND="${CUZK_PYCLIENT_BACKEND:-cpu}"

die() { echo "python-client.sh: $*" >&2; exit 2; }

# --- the client: a venv with grpcio and grpcio-tools -------------------------------------------
have_grpc() { "$1" -c 'import grpc, grpc_tools.protoc' 2>/dev/null; }
install_venv() {
  echo "installing grpcio==$GRPC_PIN grpcio-tools==$GRPC_PIN into $VENV"
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 has venv in a separate package.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$VENV" || return 1
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check "grpcio==$GRPC_PIN" "grpcio-tools==$GRPC_PIN"
}
PY="$VENV/bin/python"
# How the stubs are made: grpc_tools' protoc (messages and service stubs), or on a host
# without PyPI whose python3 has grpcio and protobuf, a plain protoc (messages only).
PROTOC=("$PY" -m grpc_tools.protoc)
if ! have_grpc "$PY" && ! { install_venv && have_grpc "$PY"; }; then
  PY=python3
  if have_grpc "$PY"; then
    PROTOC=("$PY" -m grpc_tools.protoc)
  elif "$PY" -c 'import grpc, google.protobuf' 2>/dev/null && command -v protoc >/dev/null; then
    PROTOC=(protoc)
  else
    die "no grpcio/grpcio-tools: pip could not install them into $VENV"
  fi
  echo "offline: using $(command -v python3)'s grpcio and ${PROTOC[*]}"
fi

# --- the daemon ------------------------------------------------------------------------------------
if [ ! -x "$CUZKD" ]; then
  (cd "$REPO" && cargo build --release -p cuzkd) || die "could not build cuzkd"
fi

WORK="$(mktemp -d /tmp/cuzk-pyclient.XXXXXX)"
SOCK="$WORK/cuzk.sock"
LOG="$WORK/cuzkd.log"
DAEMON=""
cleanup() {
  if [ -n "$DAEMON" ]; then
    kill "$DAEMON" 2>/dev/null
    wait "$DAEMON" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

WINNING=()
if [ -f "$FIXTURE/kinds/winning.json" ] && [ -d "$FIXTURE/params" ] && [ -d "$FIXTURE/parents" ]; then
  PARAMS="$FIXTURE/params"
  PARENTS="parent_cache = \"$FIXTURE/parents\""
  WINNING=(--winning "$FIXTURE/kinds/winning.json")
else
  echo "no 2 KiB fixture at $FIXTURE (kinds/winning.json, params/, parents/): GetStatus only," \
    "no proof (cargo run --release -p cuzk-bench -- gen-fixture --sector-size 2KiB makes it)"
  PARAMS="$WORK/params"
  PARENTS=""
  mkdir -p "$PARAMS"
fi
cat >"$WORK/cuzk.toml" <<TOML
[daemon]
state_dir = "$WORK/state"
listen = "unix://$SOCK"
[srs]
param_cache = "$PARAMS"
$PARENTS
[gpus]
backend = "$BACKEND"
[dbus]
bus = "none"
[log]
target = "stderr"
# h2 names the authority it refuses at debug.
level = "info,h2=debug"
TOML

"$CUZKD" --config "$WORK/cuzk.toml" </dev/null >/dev/null 2>"$LOG" &
DAEMON=$!
for _ in $(seq 300); do
  [ -S "$SOCK" ] && break
  kill -0 "$DAEMON" 2>/dev/null || break
  sleep 0.1
done
[ -S "$SOCK" ] || { cat "$LOG" >&2; die "cuzkd did not listen on $SOCK"; }

# --- stubs, generated here, never committed --------------------------------------------------------
mkdir -p "$WORK/stubs"
GRPC_OUT=(--grpc_python_out="$WORK/stubs")
[ "${PROTOC[0]}" = protoc ] && GRPC_OUT=()
"${PROTOC[@]}" -I "$REPO/crates/cuzk-proto/proto" --python_out="$WORK/stubs" "${GRPC_OUT[@]}" \
  cuzk/v1/proving.proto || die "${PROTOC[*]} failed on proving.proto"

"$PY" "$HERE/python_client.py" --socket "$SOCK" --stubs "$WORK/stubs" --daemon-log "$LOG" "${WINNING[@]}"
rc=$?
if [ "$rc" != 0 ]; then
  echo "--- cuzkd's log ($LOG) ---"
  grep -v " DEBUG .*h2::" "$LOG" | tail -n 40
fi
kill -0 "$DAEMON" 2>/dev/null || { echo "FAIL  cuzkd exited during the test"; rc=1; }
exit "$rc"
