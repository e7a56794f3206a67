#!/usr/bin/env bash
# Booted-systemd system test: cuzk installed as an visitor would (the release binaries and
# systemd/ exactly as shipped) into a minimal Debian root filesystem, booted with systemd as
# PID 1 under systemd-nspawn, then checked from outside: socket activation, permissions on
# the socket and on D-Bus, journald fields, restart after SIGKILL with the job finishing,
# the watchdog, and the unit's hardening score.
#
# Run as root from anywhere:  bash tests/system/booted.sh
# Needs: target/release/{cuzkd,cuzk-bench} (built if missing), the 2 KiB fixture
# (cuzk-lab gen-fixture --sector-size 2KiB; CUZK_FIXTURE_DIR as for the other tests), and
# Debian's package mirror for the first run (the root filesystem is cached in
# ~/.cache/cuzk/rootfs-<hash>.tar, CUZK_CACHE_DIR to move it). Not run by cargo test.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
. "$HERE/lib.sh"


[ "$(id -u)" = 0 ] || { echo "booted.sh: run as root (it boots a container)" >&2; exit 2; }
T0=$(date +%s)

ensure_host_tools
# --prepare: only the tools and the cached root filesystem (CI builds them while it compiles
# and tests), then exit.
if [ "${1:-}" = --prepare ]; then
  rootfs_tar >/dev/null || { echo "booted.sh: could not build the root filesystem" >&2; exit 2; }
  echo "booted.sh --prepare: tools and root filesystem ready after $(( $(date +%s) - T0 ))s"
  exit 0
fi
FIXTURE="${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}/2KiB"
for f in c1.envelope.json params parents; do
  [ -e "$FIXTURE/$f" ] || {
    echo "booted.sh: no 2 KiB fixture at $FIXTURE ($f missing):" \
      "run cargo run --release -p cuzk-bench -- gen-fixture --sector-size 2KiB" >&2
    exit 2
  }
done

if [ ! -x "$REPO/target/release/cuzkd" ] || [ ! -x "$REPO/target/release/cuzk-bench" ]; then
  (cd "$REPO" && cargo build --release -p cuzkd -p cuzk-cli) || exit 2
fi

TAR="$(rootfs_tar)" || { echo "booted.sh: could not build the root filesystem" >&2; exit 2; }
echo "root filesystem ready after $(( $(date +%s) - T0 ))s: $TAR"
WORK="$(mktemp -d /var/tmp/cuzk-booted.XXXXXX)"
ROOT="$WORK/root"
# Quiet: the last line printed is the "N passed, N failed" summary.
cleanup() {
  shutdown_container
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- install, as the plain-systemd steps in README.md ("Run it as a service") do -------------------------------
set -e
mkdir -p "$ROOT"
tar -C "$ROOT" -xf "$TAR"
install -m 0755 "$REPO/target/release/cuzkd" "$REPO/target/release/cuzk-bench" "$ROOT/usr/local/bin/"
install -m 0644 "$REPO/systemd/cuzk.socket" "$REPO/systemd/cuzk.service" "$REPO/systemd/cuzk-metrics.socket" \
  "$ROOT/etc/systemd/system/"
install -D -m 0644 "$REPO/systemd/sysusers.d/cuzk.conf" "$ROOT/etc/sysusers.d/cuzk.conf"
install -D -m 0644 "$REPO/systemd/tmpfiles.d/cuzk.conf" "$ROOT/etc/tmpfiles.d/cuzk.conf"
install -D -m 0644 "$REPO/systemd/dbus-1/system.d/org.cuzk.Prover1.conf" \
  "$ROOT/etc/dbus-1/system.d/org.cuzk.Prover1.conf"
for unit in cuzk.socket cuzk-metrics.socket; do
  systemctl --root="$ROOT" enable "$unit" >/dev/null 2>&1 \
    || { mkdir -p "$ROOT/etc/systemd/system/sockets.target.wants" &&
         ln -sf "/etc/systemd/system/$unit" "$ROOT/etc/systemd/system/sockets.target.wants/$unit"; }
done
# This host's configuration: the CPU backend (there is no GPU here). Parameters and parent
# cache stay at their defaults under /var/tmp, where the fixture is bind-mounted read-only,
# so the unit's BindReadOnlyPaths= through PrivateTmp= is exercised too.
mkdir -p "$ROOT/etc/cuzk"
cat >"$ROOT/etc/cuzk/cuzk.toml" <<'TOML'
[gpus]
backend = "cpu"
TOML
# The lotus-bench envelope: it carries the sector number the proof is bound to.
install -m 0644 "$FIXTURE/c1.envelope.json" "$ROOT/root/c1.json"
# Two local users, made at boot by sysusers with cuzk's own: "visitor" is in no group of
# cuzk's, "curio" (as Curio's user would be) is a member of group cuzk.
cat >"$ROOT/etc/sysusers.d/booted-test.conf" <<'SYSUSERS'
u visitor - "booted.sh user outside group cuzk"
u curio - "booted.sh user in group cuzk"
m curio cuzk
SYSUSERS
set +e

echo "booting $ROOT (root filesystem $TAR)"
boot "$ROOT" \
  --bind-ro="$FIXTURE/params:/var/tmp/filecoin-proof-parameters" \
  --bind-ro="$FIXTURE/parents:/var/tmp/filecoin-parents" \
  || { cat "$WORK/console.log"; exit 1; }
echo "booted; $(( $(date +%s) - T0 ))s since start"
if [ -n "${CUZK_BOOTED_KEEP:-}" ]; then
  # For debugging: keep the container up instead of checking; enter it with nsenter.
  echo "container up: nsenter -t $LEADER -a bash   (Ctrl-C or kill $$ to power it off)"
  while kill -0 "$NSPAWN_PID" 2>/dev/null; do sleep 1; done
  exit 0
fi

# --- the checks (shared with vm.sh) ---------------------------------------------------------
. "$HERE/checks.sh"

echo "--- cuzk.service journal (last 15 lines) ---"
in_ct journalctl -u cuzk.service -u cuzk.socket --no-pager -o short-monotonic | tail -n 15
echo "booted-systemd test: $(( $(date +%s) - T0 ))s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
