# The booted-systemd checks, shared by booted.sh (a container under systemd-nspawn) and vm.sh
# (a VM under qemu). Sourcing this file runs them, in order, against a booted system where
# cuzk is installed as README.md's plain-systemd steps do and cuzk.socket and
# cuzk-metrics.socket are enabled.
#
# The sourcing script provides lib.sh's helpers (check, expect_output, expect_failure,
# wait_for) and:
#   in_ct CMD...          runs CMD on the booted system as root (nsenter, or ssh in the VM)
#   as_user USER CMD...   the same as USER
#   WORK                  a scratch directory on this side
#   SOCK ADDR BUS OBJ WATCHDOG_SECS MAX_EXPOSURE  as booted.sh sets them
# and optionally:
#   PROOF_ARGS            cuzk-bench single's proof arguments for the kill -9 check
#                         (default: the 2 KiB PoRep envelope installed as /root/c1.json)
#   PROOF_TIMEOUT         seconds each proof client may take (default 300)
if [ -z "${PROOF_ARGS+set}" ]; then PROOF_ARGS=(--c1 /root/c1.json); fi
PROOF_TIMEOUT="${PROOF_TIMEOUT:-300}"

# --- before the first connection -----------------------------------------------------------
booted_clean() {
  in_ct systemctl --failed --no-legend --plain
  [ -z "$(in_ct systemctl --failed --no-legend --plain)" ]
}
check "the system booted with no failed unit" booted_clean

user_made() {
  in_ct getent passwd cuzk && in_ct getent group cuzk && in_ct id curio
  in_ct id -nG curio | grep -qw cuzk
}
check "sysusers.d made user and group cuzk" user_made

units_verify() {
  local out
  out="$(in_ct systemd-analyze verify /etc/systemd/system/cuzk.socket /etc/systemd/system/cuzk.service \
    /etc/systemd/system/cuzk-metrics.socket 2>&1)"
  echo "$out"
  [ -z "$out" ]
}
check "systemd-analyze verify: cuzk.socket, cuzk.service and cuzk-metrics.socket clean" units_verify

exposure() {
  local out level
  out="$(in_ct systemd-analyze security cuzk.service 2>&1)" || { echo "$out"; return 1; }
  level="$(sed -n 's/.*Overall exposure level for cuzk.service: \([0-9.]*\).*/\1/p' <<<"$out")"
  echo "exposure $level (threshold $MAX_EXPOSURE)"
  [ -n "$level" ] && awk -v l="$level" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(l <= m) }'
}
check "systemd-analyze security cuzk.service: exposure <= $MAX_EXPOSURE" exposure

socket_waiting() {
  in_ct systemctl is-active cuzk.socket || return 1
  local svc
  svc="$(in_ct systemctl is-active cuzk.service)"
  echo "cuzk.service: $svc"
  [ "$svc" = inactive ] || return 1
  in_ct stat -c '%U:%G %a %F' "$SOCK"
  [ "$(in_ct stat -c '%U:%G %a %F' "$SOCK")" = "root:cuzk 660 socket" ]
}
check "cuzk.socket listens (root:cuzk 0660) and cuzk.service is inactive" socket_waiting

tmpfiles_parse() { in_ct systemd-tmpfiles --clean /etc/tmpfiles.d/cuzk.conf; }
check "tmpfiles.d/cuzk.conf is accepted by systemd-tmpfiles" tmpfiles_parse

# --- the first connection starts the daemon ------------------------------------------------
first_call() {
  expect_output '^uptime [0-9]+ s; completed 0' in_ct timeout 120 cuzk-bench status -a "$ADDR" || return 1
  in_ct systemctl is-active cuzk.service
}
check "first client call (cuzk-bench status) activates cuzk.service and is answered" first_call

service_state() {
  in_ct systemctl show -p MainPID,User,StatusText,NRestarts cuzk.service
  in_ct systemctl show -p StatusText --value cuzk.service | grep -Eq '^[0-9]+ queued, [0-9]+ running' || return 1
  [ "$(in_ct stat -c '%U:%G %a' /var/lib/cuzk)" = "cuzk:cuzk 750" ] || { in_ct stat /var/lib/cuzk; return 1; }
  # the daemon runs as cuzk with no capabilities
  local pid; pid="$(in_ct systemctl show -p MainPID --value cuzk.service)"
  in_ct grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs)' "/proc/$pid/status"
  in_ct grep -Eq '^CapEff:[[:space:]]+0+$' "/proc/$pid/status"
}
check "READY, STATUS= text, StateDirectory, user cuzk without capabilities" service_state

# The metrics socket is systemd's (the daemon runs with PrivateNetwork=yes): it is passed to
# the running daemon under the name "metrics", and GET /metrics answers from it. bash's
# /dev/tcp: the test systems have no curl.
metrics_socket() {
  in_ct systemctl is-active cuzk-metrics.socket || return 1
  local out
  out="$(in_ct timeout 20 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9821 && printf "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3 && cat <&3')"
  grep -E '^HTTP/1.1|^cuzk_build_info|^cuzk_jobs_running' <<<"$out"
  grep -q '^HTTP/1.1 200' <<<"$out" && grep -q '^cuzk_build_info{version=' <<<"$out"
}
check "cuzk-metrics.socket (127.0.0.1:9821) serves GET /metrics from the running daemon" metrics_socket

socket_refused() { expect_failure 'denied|permission' as_user visitor cuzk-bench status -a "$ADDR"; }
check "the socket refuses a user outside group cuzk" socket_refused
socket_group() { expect_output '^uptime' as_user curio cuzk-bench status -a "$ADDR"; }
check "the socket admits a member of group cuzk" socket_group

# --- D-Bus ---------------------------------------------------------------------------------
bus_introspect() {
  expect_output '\.Pause +method' as_user visitor "${BUS[@]}" introspect "${OBJ[@]}" || return 1
  expect_output '\.State +property +s' as_user visitor "${BUS[@]}" introspect "${OBJ[@]}"
}
check "busctl introspects org.cuzk.Prover1 at /org/cuzk/Prover1 (as an unprivileged user)" bus_introspect

bus_properties() {
  expect_output '^s "ready"$' as_user visitor "${BUS[@]}" get-property "${OBJ[@]}" State || return 1
  expect_output '^s "' in_ct "${BUS[@]}" get-property "${OBJ[@]}" Version || return 1
  expect_output '^u [0-9]+$' in_ct "${BUS[@]}" get-property "${OBJ[@]}" QueueDepth || return 1
  expect_output '^a\(sttt\)' in_ct "${BUS[@]}" get-property "${OBJ[@]}" Gpus || return 1
  expect_output '^a\(sss\)' as_user visitor "${BUS[@]}" call "${OBJ[@]}" ListJobs
}
check "busctl reads State, Version, QueueDepth, Gpus and calls ListJobs" bus_properties

bus_refused() {
  expect_failure 'access denied|not allowed|denied' as_user visitor "${BUS[@]}" call "${OBJ[@]}" Pause || return 1
  expect_output '^s "ready"$' in_ct "${BUS[@]}" get-property "${OBJ[@]}" State
}
check "Pause from a user outside group cuzk is refused by the bus" bus_refused

bus_group() {
  as_user curio "${BUS[@]}" call "${OBJ[@]}" Pause || return 1
  expect_output '^s "paused"$' in_ct "${BUS[@]}" get-property "${OBJ[@]}" State || return 1
  as_user curio "${BUS[@]}" call "${OBJ[@]}" Resume || return 1
  expect_output '^s "ready"$' in_ct "${BUS[@]}" get-property "${OBJ[@]}" State
}
check "Pause and Resume from a member of group cuzk" bus_group

# --- a proof, kill -9 in the middle, restart, the job completes ----------------------------
main_pid() { in_ct systemctl show -p MainPID --value cuzk.service; }
nrestarts() { in_ct systemctl show -p NRestarts --value cuzk.service; }
job_running() { in_ct cuzk-bench status -a "$ADDR" 2>/dev/null | grep -Eq 'booted-kill|in progress +[1-9]'; }
restarted_after() {  # PID: the service is active again with another main PID
  local pid; pid="$(main_pid)"
  [ "$(in_ct systemctl is-active cuzk.service)" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$1" ]
}

kill_and_finish() {
  in_ct timeout "$PROOF_TIMEOUT" cuzk-bench single -a "$ADDR" "${PROOF_ARGS[@]}" --request-id booted-kill \
    >"$WORK/single-1.log" 2>&1 &
  local client=$! before pid
  wait_for 60 job_running || { cat "$WORK/single-1.log"; return 1; }
  pid="$(main_pid)"; before="$(nrestarts)"
  echo "job booted-kill is running in cuzkd pid $pid; kill -9"
  in_ct sh -c 'kill -9 "$1"' sh "$pid"
  wait "$client"; echo "first client, whose connection died: exit $?"
  wait_for 60 restarted_after "$pid" || return 1
  echo "restarted: pid $(main_pid), NRestarts $before -> $(nrestarts)"
  [ "$(nrestarts)" -gt "$before" ] || return 1
  # The job was spooled before it was acknowledged: after the restart it runs again, and the
  # same request id attaches to it.
  expect_output '^booted-kill COMPLETED' in_ct timeout "$PROOF_TIMEOUT" \
    cuzk-bench single -a "$ADDR" "${PROOF_ARGS[@]}" --request-id booted-kill
}
check "kill -9 mid-proof: systemd restarts cuzkd and the spooled job completes" kill_and_finish

# --- live reload ----------------------------------------------------------------------------
reload_live() {
  local pid; pid="$(main_pid)"
  printf '[gpus]\nbackend = "cpu"\ngpu_workers_per_device = 2\n[engine]\nhost_memory_budget_bytes = 3221225472\n[daemon]\nmax_message_bytes = 8388608\n' \
    | in_ct sh -c 'cat > /etc/cuzk/cuzk.toml'
  in_ct systemctl reload cuzk.service || return 1
  wait_for 20 reload_logged || { in_ct journalctl -u cuzk.service --no-pager -o cat | tail -5; return 1; }
  in_ct journalctl -u cuzk.service --no-pager -o cat | grep 'SIGHUP: reloaded' | tail -1
  local line; line="$(in_ct journalctl -u cuzk.service --no-pager -o cat | grep 'SIGHUP: reloaded' | tail -1)"
  grep -q 'workers on cpu: 1 -> 2' <<<"$line" || return 1
  grep -q 'host_memory_budget_bytes: [0-9]* -> 3221225472' <<<"$line" || return 1
  grep -q 'needs a restart to change: daemon.max_message_bytes' <<<"$line" || return 1
  # the same process, still active and answering, with the new budget in force
  [ "$(main_pid)" = "$pid" ] && [ "$(in_ct systemctl is-active cuzk.service)" = active ] || return 1
  expect_output '^cuzk_host_memory_budget_bytes 3221225472' in_ct cuzk-bench metrics -a "$ADDR"
}
reload_logged() { in_ct journalctl -u cuzk.service --no-pager -o cat | grep -q 'SIGHUP: reloaded'; }
check "systemctl reload: live keys applied in the same process, restart-only keys named" reload_live

# cuzkd's own records (_SYSTEMD_UNIT=): systemd's records about the unit carry a JOB_ID of
# their own (systemd's job number), which must not satisfy this check.
journal_fields() {
  local out
  out="$(in_ct journalctl _SYSTEMD_UNIT=cuzk.service -o verbose --no-pager)"
  local f missing=0
  for f in JOB_ID PROOF_KIND STAGE; do
    if grep -Eq "^ +$f=" <<<"$out"; then
      grep -E "^ +$f=" <<<"$out" | sort | uniq -c | head -5
    else
      echo "no $f= field in journalctl -u cuzk -o verbose"; missing=1
    fi
  done
  [ $missing = 0 ] || return 1
  # and a job's records can be selected by its field
  in_ct journalctl _SYSTEMD_UNIT=cuzk.service JOB_ID=booted-kill -o cat --no-pager | tail -5
  [ -n "$(in_ct journalctl _SYSTEMD_UNIT=cuzk.service JOB_ID=booted-kill -o cat --no-pager)" ] || return 1
  # the form README.md shows operators
  out="$(in_ct journalctl -u cuzk JOB_ID=booted-kill -o verbose --no-pager)"
  grep -q 'PROOF_KIND=' <<<"$out"
}
check "journalctl -u cuzk -o verbose shows JOB_ID, PROOF_KIND, STAGE" journal_fields

# --- the watchdog --------------------------------------------------------------------------
watchdog() {
  local pid before
  pid="$(main_pid)"; before="$(nrestarts)"
  echo "SIGSTOP to cuzkd pid $pid (WatchdogSec=${WATCHDOG_SECS}s)"
  in_ct sh -c 'kill -STOP "$1"' sh "$pid"
  wait_for $((WATCHDOG_SECS + 60)) restarted_after "$pid" || return 1
  echo "restarted: pid $(main_pid), NRestarts $before -> $(nrestarts)"
  in_ct journalctl -u cuzk.service --no-pager -o cat | grep -i watchdog | tail -3
  in_ct journalctl -u cuzk.service --no-pager -o cat | grep -qi 'watchdog timeout' || return 1
  expect_output '^uptime' in_ct timeout 60 cuzk-bench status -a "$ADDR"
}
check "SIGSTOP: the watchdog restarts cuzkd, which answers again" watchdog

# --- a clean stop leaves the socket listening -----------------------------------------------
clean_stop() {
  in_ct systemctl stop cuzk.service || return 1
  in_ct systemctl show -p Result,ExecMainStatus cuzk.service
  [ "$(in_ct systemctl show -p Result --value cuzk.service)" = success ] || return 1
  [ "$(in_ct systemctl is-active cuzk.socket)" = active ] || return 1
  expect_output '^uptime' in_ct timeout 120 cuzk-bench status -a "$ADDR"
}
check "systemctl stop drains and exits cleanly; the socket still activates it" clean_stop
