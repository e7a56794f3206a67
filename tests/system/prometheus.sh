#!/usr/bin/env bash
# cuzkd's Prometheus endpoint as an operator runs it, against a real Prometheus (Debian's
# `prometheus` package):
#  - cuzkd starts under systemd-socket-activate with two sockets, the gRPC unix socket and a
#    TCP socket named "metrics" (--fdname, as cuzk-metrics.socket's FileDescriptorName=):
#    the socket systemd hands over is the one served;
#  - Prometheus scrapes it every second while the 2 KiB fixture's WinningPoSt is proved
#    through the gRPC socket; its HTTP API must show the target up, the completed-proof
#    counter of the kind at 1 and the job's total time in its histogram;
#  - `promtool check metrics` passes on the endpoint's text;
#  - every metric the Grafana dashboard (share/grafana/cuzk.json) queries exists in the text,
#    and every dashboard query is valid PromQL that Prometheus evaluates;
#  - a [metrics] listen address that is taken fails the start, naming the address.
#
# Run from anywhere:  bash tests/system/prometheus.sh
# Needs: target/release/cuzkd and cuzk-bench (built if missing), systemd-socket-activate,
# prometheus, promtool and curl (installed with apt-get when missing and root), python3, and the
# 2 KiB fixture ($CUZK_FIXTURE_DIR/2KiB, `cuzk-lab gen-fixture`). Not run by cargo test.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
FIXTURE="${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}/2KiB"
CUZKD="$REPO/target/release/cuzkd"
BENCH="$REPO/target/release/cuzk-bench"
DASHBOARD="$REPO/share/grafana/cuzk.json"

die() { echo "FAIL - prometheus.sh: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null || ! command -v curl >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus curl >/dev/null
  fi
  command -v prometheus >/dev/null && command -v promtool >/dev/null || die "prometheus and promtool are missing (apt-get install prometheus)"
  command -v curl >/dev/null || die "curl is missing (apt-get install curl)"
fi
command -v systemd-socket-activate >/dev/null || die "systemd-socket-activate is missing (apt-get install systemd)"
[ -f "$FIXTURE/kinds/winning.json" ] && [ -d "$FIXTURE/params" ] || die "no 2 KiB fixture at $FIXTURE: run cargo run --release -p cuzk-bench -- gen-fixture --sector-size 2KiB"
if [ ! -x "$CUZKD" ] || [ ! -x "$BENCH" ]; then
  (cd "$REPO" && cargo build --release -p cuzkd -p cuzk-cli) || die "could not build cuzkd and cuzk-bench"
fi

WORK="$(mktemp -d /tmp/cuzk-prometheus.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
show_logs() {
  for f in "$WORK"/*.log; do echo "--- $f"; tail -30 "$f"; done
}

# Free TCP ports on localhost (bound and released at once; nothing else runs here).
read -r MPORT PPORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
SOCK="$WORK/cuzk.sock"

config() { # STATE_DIR [EXTRA...]
  cat <<EOF
[daemon]
listen = "unix://$WORK/direct.sock"
state_dir = "$1"
[srs]
param_cache = "$FIXTURE/params"
parent_cache = "$FIXTURE/parents"
[gpus]
backend = "cpu"
[dbus]
bus = "none"
[log]
target = "stderr"
EOF
  shift
  printf '%s\n' "$@"
}
config "$WORK/state" > "$WORK/cuzk.toml"

# --- cuzkd, socket-activated: the metrics socket is systemd's -------------------------------
systemd-socket-activate -l "$SOCK" -l "127.0.0.1:$MPORT" --fdname=cuzk.socket:metrics \
  "$CUZKD" --config "$WORK/cuzk.toml" > "$WORK/cuzkd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { show_logs; die "systemd-socket-activate did not create $SOCK"; }

# --- Prometheus, scraping every second -------------------------------------------------------
cat > "$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cuzk
    static_configs:
      - targets: ["127.0.0.1:$MPORT"]
EOF
promtool check config "$WORK/prometheus.yml" > "$WORK/promtool-config.log" 2>&1 || { show_logs; die "promtool check config"; }
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PPORT" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
API="http://127.0.0.1:$PPORT"
for _ in $(seq 150); do curl -fs "$API/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fs "$API/-/ready" >/dev/null || { show_logs; die "Prometheus did not become ready on $API"; }
ok "Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') ready, scraping 127.0.0.1:$MPORT every second"

# query EXPR: the first sample's value, or empty.
query() {
  curl -fsG "$API/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
# wait_for EXPR VALUE SECONDS
wait_for() {
  local v=""
  for _ in $(seq $(( $3 * 2 ))); do
    v="$(query "$1")"
    [ "$v" = "$2" ] && return 0
    sleep 0.5
  done
  echo "  $1 = '${v}', expected $2" >&2
  return 1
}

# The first scrape starts cuzkd (socket activation); the target is up once it answers.
wait_for 'up{job="cuzk"}' 1 60 || { show_logs; die "the cuzk target is not up"; }
wait_for 'cuzk_proofs_completed_total{job="cuzk",proof_kind="winning-post"}' 0 10 || { show_logs; die "no completed-proof counter before the proof"; }
ok "target up through the socket systemd-socket-activate handed over (fd named metrics); counter at 0"

# --- a proof through the gRPC socket ------------------------------------------------------------
"$BENCH" -a "unix://$SOCK" single -t winning --input "$FIXTURE/kinds/winning.json" > "$WORK/single.log" 2>&1 \
  || { show_logs; die "the WinningPoSt did not complete"; }
wait_for 'cuzk_proofs_completed_total{job="cuzk",proof_kind="winning-post"}' 1 30 || { show_logs; die "Prometheus did not see the completed proof"; }
wait_for 'cuzk_job_stage_seconds_count{job="cuzk",proof_kind="winning-post",stage="total"}' 1 10 || { show_logs; die "the job's total time is not in its histogram"; }
wait_for 'sum(cuzk_proofs_failed_total{job="cuzk"})' 0 5 || { show_logs; die "a proof failed"; }
p50="$(query 'histogram_quantile(0.5, sum by (le) (cuzk_job_stage_seconds_bucket{job="cuzk",proof_kind="winning-post",stage="total"}))')"
ok "WinningPoSt proved; Prometheus has cuzk_proofs_completed_total{proof_kind=\"winning-post\"} = 1 and the job in its histogram (median bucket ${p50} s)"

# --- promtool on the endpoint's text -----------------------------------------------------------
curl -fs -D "$WORK/headers.txt" "http://127.0.0.1:$MPORT/metrics" > "$WORK/metrics.txt" || die "GET /metrics"
grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/headers.txt" || die "content type: $(grep -i content-type "$WORK/headers.txt")"
promtool check metrics < "$WORK/metrics.txt" > "$WORK/promtool-metrics.log" 2>&1 \
  || { cat "$WORK/promtool-metrics.log"; die "promtool check metrics"; }
ok "promtool check metrics passes ($(grep -c '^# TYPE' "$WORK/metrics.txt") metric families)"
code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nothing")"
[ "$code" = 404 ] || die "GET /nothing answered $code, not 404"

# --- the dashboard's queries -------------------------------------------------------------------
python3 - "$DASHBOARD" "$WORK/metrics.txt" "$API" <<'PY' || die "dashboard"
import json, re, sys, urllib.parse, urllib.request
dashboard, text, api = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
exprs += [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
missing = []
for e in exprs:
    for name in set(re.findall(r"\b(cuzk_[a-z0-9_]+)", e)):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in families and base not in families:
            missing.append((name, e))
if missing:
    for name, e in missing:
        print(f"FAIL - dashboard queries {name}, which the endpoint does not export: {e}")
    sys.exit(1)
bad = []
for e in exprs:
    if e.startswith("label_values("):
        continue
    q = e.replace('"$instance"', '".*"').replace('"$kind"', '".*"')
    url = f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        r = json.load(urllib.request.urlopen(url, timeout=10))
        if r.get("status") != "success":
            bad.append((e, r))
    except Exception as ex:  # HTTP 400: a query Prometheus cannot parse
        bad.append((e, ex))
for e, why in bad:
    print(f"FAIL - Prometheus refuses the dashboard query {e}: {why}")
sys.exit(1 if bad else 0)
PY
ok "every metric the dashboard queries is exported, and Prometheus evaluates all its $(python3 -c "import json,sys; print(sum(len(p.get('targets', [])) for p in json.load(open(sys.argv[1]))['panels']))" "$DASHBOARD") queries"

# --- an address that cannot be bound fails the start, named -------------------------------------
config "$WORK/state2" '[metrics]' "listen = \"127.0.0.1:$MPORT\"" | sed "s#direct.sock#direct2.sock#" > "$WORK/taken.toml"
timeout 60 "$CUZKD" --config "$WORK/taken.toml" > "$WORK/taken.log" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || { show_logs; die "cuzkd started although 127.0.0.1:$MPORT is taken (rc $rc)"; }
grep -q "\[metrics\] listen: binding 127.0.0.1:$MPORT" "$WORK/taken.log" || { cat "$WORK/taken.log"; die "the failure does not name the address"; }
ok "a taken [metrics] listen address stops the start: $(grep -o "\[metrics\] listen: binding [^ ]*" "$WORK/taken.log" | head -1)"

echo "$passed passed, 0 failed"
