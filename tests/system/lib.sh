# Helpers for the booted-systemd system tests: a cached Debian root filesystem, a container
# booted from it with systemd as PID 1, commands run inside it, and check reporting.
# Sourced by booted.sh; needs root.

CACHE_DIR="${CUZK_CACHE_DIR:-$HOME/.cache/cuzk}"

# What the root filesystem holds besides Debian's minbase: systemd as init, the system bus.
ROOTFS_PACKAGES="systemd,systemd-sysv,dbus"

PASSED=0
FAILED=0
FAILED_NAMES=()

# ensure_host_tools: installs the host packages the test drives, when missing.
ensure_host_tools() {
  local missing=()
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v systemctl >/dev/null || missing+=(systemd)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# rootfs_tar: prints the path of the cached root filesystem tarball, building it first if
# needed. The suite is the host's, so the host-built binaries find the same glibc.
rootfs_tar() {
  local suite key tar
  suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
  key="$(printf '%s\n' "$suite" minbase "$ROOTFS_PACKAGES" | sha256sum | cut -c1-16)"
  tar="$CACHE_DIR/rootfs-$key.tar"
  if [ ! -s "$tar" ]; then
    mkdir -p "$CACHE_DIR"
    echo "building the root filesystem ($suite, minbase + $ROOTFS_PACKAGES) into $tar" >&2
    # mmdebstrap picks its output format by the name's extension: keep ".tar" last.
    mmdebstrap --quiet --variant=minbase --include="$ROOTFS_PACKAGES" "$suite" "$tar.part.tar" >&2 \
      || { rm -rf "$tar.part.tar"; return 1; }
    mv "$tar.part.tar" "$tar"
  fi
  echo "$tar"
}

# boot DIR [nspawn options...]: boots DIR with systemd as PID 1 in the background and waits
# until the system is up. Sets NSPAWN_PID and LEADER (the container's PID 1, as the host sees
# it). --register=no and --keep-unit: no machined or host systemd needed.
boot() {
  local dir="$1"; shift
  systemd-nspawn -D "$dir" -b --register=no --keep-unit --private-network --console=pipe \
    "$@" </dev/null >"$WORK/console.log" 2>&1 &
  NSPAWN_PID=$!
  LEADER=""
  # The container's PID 1 is the child of nspawn that runs systemd (nspawn forks a short-lived
  # helper first, so take the one named systemd), then wait until systemd has finished
  # booting: "running", or "degraded" with a failed unit, which the checks then show.
  local state="" deadline=$(( $(date +%s) + 120 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    kill -0 "$NSPAWN_PID" 2>/dev/null || break
    LEADER="$(pgrep -P "$NSPAWN_PID" -x systemd | head -1)"
    if [ -n "$LEADER" ]; then
      state="$(in_ct systemctl is-system-running 2>/dev/null)"
      case "$state" in running|degraded) return 0 ;; esac
    fi
    sleep 0.5
  done
  cat "$WORK/console.log"
  echo "the container did not finish booting (state: $state)"
  return 1
}

# shutdown_container: ends the container. It is thrown away, so no orderly poweroff:
# SIGKILL to its PID 1 ends every process in its PID namespace, and nspawn cleans up.
shutdown_container() {
  [ -n "${NSPAWN_PID:-}" ] || return 0
  [ -n "${LEADER:-}" ] && kill -KILL "$LEADER" 2>/dev/null
  wait "$NSPAWN_PID" 2>/dev/null || true
  NSPAWN_PID=""
}

# in_ct CMD...: runs CMD inside the container (all its namespaces) as root, with a clean
# environment.
in_ct() {
  nsenter -t "$LEADER" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@"
}

# as_user USER CMD...: runs CMD inside the container as USER (its groups from /etc/group).
as_user() {
  local user="$1" uid gid; shift
  uid="$(in_ct id -u "$user")" && gid="$(in_ct id -g "$user")" || return 1
  in_ct setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"
}

# check NAME CMD...: runs CMD (a shell function or command), records pass or failure, prints
# one line with its time; on failure, the tail of what it printed.
check() {
  local name="$1"; shift
  local out="$WORK/check.out" start end rc
  start=$(date +%s%N)
  "$@" >"$out" 2>&1
  rc=$?
  end=$(date +%s%N)
  local ms=$(( (end - start) / 1000000 ))
  local took="$((ms / 1000)).$(( (ms % 1000) / 100 ))"
  if [ $rc -eq 0 ]; then
    PASSED=$((PASSED + 1))
    echo "ok   - $name (${took}s)"
  else
    FAILED=$((FAILED + 1))
    FAILED_NAMES+=("$name")
    echo "FAIL - $name (${took}s, exit $rc)"
    tail -n 30 "$out" | sed 's/^/       | /'
  fi
}

# expect_output PATTERN CMD...: CMD succeeds and its output matches the extended regex.
expect_output() {
  local pattern="$1"; shift
  local out
  out="$("$@" 2>&1)" || { echo "$out"; echo "command failed: $*"; return 1; }
  echo "$out"
  grep -Eq -- "$pattern" <<<"$out" || { echo "expected /$pattern/ in the output of: $*"; return 1; }
}

# expect_failure PATTERN CMD...: CMD fails and its output matches the extended regex.
expect_failure() {
  local pattern="$1"; shift
  local out
  if out="$("$@" 2>&1)"; then
    echo "$out"; echo "expected a refusal, but it succeeded: $*"; return 1
  fi
  echo "$out"
  grep -Eiq -- "$pattern" <<<"$out" || { echo "expected /$pattern/ in the refusal of: $*"; return 1; }
}

# wait_for SECONDS CMD...: polls CMD every half second until it succeeds.
wait_for() {
  local secs="$1"; shift
  local deadline=$(( $(date +%s) + secs ))
  while ! "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "not true after ${secs}s: $*"; return 1; }
    sleep 0.5
  done
}

# What the checks (checks.sh) address, in the container and in the VM alike: the shipped
# socket, the system bus object, the watchdog's interval as shipped (the SIGSTOP check waits
# for it) and the highest exposure score accepted. Needs REPO.
SOCK=/run/cuzk/cuzk.sock
ADDR="unix://$SOCK"
BUS=(busctl --system)
OBJ=(org.cuzk.Prover1 /org/cuzk/Prover1 org.cuzk.Prover1)
WATCHDOG_SECS="$(sed -n 's/^WatchdogSec=\([0-9]*\)s\?$/\1/p' "$REPO/systemd/cuzk.service")"
MAX_EXPOSURE=2.0
