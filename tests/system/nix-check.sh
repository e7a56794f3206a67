#!/usr/bin/env bash
# Nix checks that run without a Nix store or binary cache:
#  - every .nix file of the repository parses (nix-instantiate --parse; Debian's nix-bin);
#  - services.cuzk is evaluated against stubbed NixOS options (nix-module-eval.nix): the
#    generated cuzk.toml, the socket and service drop-ins, the pinned CUDA set, the flake's
#    module on a pkgs without cuzk, and each contradictory setting refused by its assertion.
#    It needs nixpkgs' lib: NIXPKGS_LIB=/path/to/nixpkgs/lib (a nixpkgs or
#    nix-community/nixpkgs.lib checkout's lib/), else ../shared/nixpkgs-lib/lib beside the
#    checkout (the workplace's copy), else ~/.cache/cuzk/nixpkgs.lib, else a
#    shallow clone of nix-community/nixpkgs.lib there; without any, this check is skipped
#    and counted as such.
# Building the package and the flake's VM test need a real Nix with nixpkgs: nix flake check.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"

if ! command -v nix-instantiate >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nix-bin >/dev/null
fi

passed=0 failed=0 skipped=0
while IFS= read -r f; do
  if out="$(nix-instantiate --parse "$f" 2>&1 >/dev/null)"; then
    passed=$((passed + 1)); echo "ok   - parses: $f"
  else
    failed=$((failed + 1)); echo "FAIL - parses: $f"; echo "$out" | sed 's/^/       | /'
  fi
done < <(git ls-files --cached --others --exclude-standard -- '*.nix')

# The workplace's copy beside the checkout (../shared/nixpkgs-lib: nixpkgs.lib at de42d442,
# MIT), so that CI evaluates the module without network access.
if [ -z "${NIXPKGS_LIB:-}" ] && [ -f "$REPO/../shared/nixpkgs-lib/lib/default.nix" ]; then
  NIXPKGS_LIB="$(cd "$REPO/../shared/nixpkgs-lib/lib" && pwd)"
fi
if [ -z "${NIXPKGS_LIB:-}" ]; then
  cache="${HOME:-/root}/.cache/cuzk/nixpkgs.lib"
  if [ ! -f "$cache/lib/default.nix" ] && command -v git >/dev/null; then
    # Into a temporary name first: an interrupted clone is not taken for a checkout later.
    mkdir -p "$(dirname "$cache")" && rm -rf "$cache.part" &&
      timeout 60 env GIT_TERMINAL_PROMPT=0 git clone -q --depth 1 \
        https://github.com/nix-community/nixpkgs.lib "$cache.part" >/dev/null 2>&1 &&
      rm -rf "$cache" && mv "$cache.part" "$cache"
    rm -rf "$cache.part"
  fi
  [ -f "$cache/lib/default.nix" ] && NIXPKGS_LIB="$cache/lib"
fi

if [ -z "${NIXPKGS_LIB:-}" ]; then
  skipped=$((skipped + 1))
  echo "SKIPPED - module evaluation: no nixpkgs lib (set NIXPKGS_LIB or allow git clone of nix-community/nixpkgs.lib)"
else
  if json="$(nix-instantiate --eval --strict --json "$HERE/nix-module-eval.nix" \
      --arg lib "import $NIXPKGS_LIB" 2>&1)"; then
    python3 - "$json" <<'PY' && passed=$((passed + 1)) || failed=$((failed + 1))
import json, sys
d = json.loads(sys.argv[1])
gib = 1 << 30
def check(cond, what):
    if not cond:
        print(f"FAIL - module: {what}")
        sys.exit(1)
m = d["minimal"]
check(m["failed"] == [], f"minimal host has no failed assertion: {m['failed']}")
check(m["config"] == {"daemon": {"listen": "unix:///run/cuzk/cuzk.sock", "state_dir": "/var/lib/cuzk"},
                      "gpus": {"backend": "cpu"},
                      "srs": {"param_cache": "/var/tmp/filecoin-proof-parameters"}}, f"minimal config: {m['config']}")
check(m["socket"]["socketConfig"]["ListenStream"] == ["", "/run/cuzk/cuzk.sock"], "socket drop-in resets ListenStream")
check(m["kernelModules"] == [] and m["firewall"] == [], "no GPU, no TCP: no module, no port")
check(m["package"].endswith("cuda-12.8"), f"the default CUDA set is pinned (12.8), not nixpkgs' floating default: {m['package']}")
m_sc = m["service"]["serviceConfig"]
check(m_sc["Type"] == "notify-reload" and m_sc["ExecReload"] == [""], f"reload by Type=notify-reload: {m_sc}")
check(len(m["service"]["reloadTriggers"]) == 1 and len(m["service"]["restartTriggers"]) == 1, "a config change reloads; restart-only keys restart")
rt = json.loads(m["service"]["restartTriggers"][0])
check("level" not in rt["log"] and "drain_timeout_secs" not in rt["daemon"] and rt["daemon"]["listen"] == "unix:///run/cuzk/cuzk.sock", f"restart-only settings: {rt}")
check(m_sc["TimeoutStopSec"] == "90s", f"default drain (60 s) + 30 s: {m_sc}")
check(m_sc["RestrictAddressFamilies"] == ["", "AF_UNIX"], f"no TCP listener: AF_UNIX alone: {m_sc}")
t = d["twoGpus"]
check(t["failed"] == [], f"two-GPU host has no failed assertion: {t['failed']}")
check(t["package"].endswith("cuda-12.8"), "cudaPackages overrides the package")
check(t["config"]["gpus"]["devices"] == [
    {"ordinal": 0, "vram_budget_bytes": 70 * gib, "workers": 2},
    {"ordinal": 1, "vram_budget_bytes": 20 * gib}], f"per-GPU tables: {t['config']['gpus']}")
check(t["config"]["engine"] == {"host_memory_budget_bytes": 384 * gib}
      and t["config"]["gpus"]["pinned_memory_budget_bytes"] == 64 * gib, "budgets")
check(t["socket"]["socketConfig"]["ListenStream"][-1] == "10.0.0.5:9820" and t["firewall"] == [9820], "TCP listener and firewall")
check(t["service"]["serviceConfig"]["BindReadOnlyPaths"] == ["-/data/filecoin-proof-parameters"], "paramDir bound")
check(t["service"]["serviceConfig"]["RestrictAddressFamilies"] == ["", "AF_UNIX", "AF_INET", "AF_INET6"],
      f"TCP listener: AF_INET and AF_INET6 kept: {t['service']['serviceConfig']}")
check(t["kernelModules"] == ["nvidia_uvm"], "nvidia_uvm loaded at boot")
cred = "/run/credentials/cuzk.service/"
check(t["config"]["daemon"]["tcp"] == {"token_file": cred + "tcp-token", "tls_cert": cred + "tcp-tls-cert",
                                       "tls_key": cred + "tcp-tls-key", "tls_client_ca": cred + "tcp-tls-client-ca"}
      and t["config"]["daemon"]["listen"] == "unix:///run/cuzk/cuzk.sock", f"[daemon.tcp] from credentials: {t['config']['daemon']}")
check(sorted(t["service"]["serviceConfig"]["LoadCredential"]) == [
    "tcp-tls-cert:/var/lib/acme/prover/cert.pem", "tcp-tls-client-ca:/etc/cuzk/clients-ca.pem",
    "tcp-tls-key:/var/lib/acme/prover/key.pem", "tcp-token:/run/keys/cuzk-token"], "credentials loaded")
o = d["openTcp"]["failed"]
check(len(o) == 1 and "tcp.enable without client authentication" in o[0], f"TCP without authentication refused: {o}")
i = d["insecureTcp"]
check(i["failed"] == [] and i["config"]["daemon"]["tcp"] == {"insecure": True}, f"insecure TCP: {i}")
p = d["plainOrdinals"]
check(p["failed"] == [] and p["config"]["gpus"]["devices"] == [0, 1],
      f"GPUs without budgets stay plain ordinals (datacenter driver): {p['failed']} {p['config']}")
# IPv6 listeners in brackets, IPv4 and bracketed ones as given; the port opened either way.
listeners = {l["address"]: l for l in d["listeners"]}
for address, listen in [("::", "[::]:9820"), ("fd00::5", "[fd00::5]:9820"), ("[fd00::5]", "[fd00::5]:9820"),
                        ("0.0.0.0", "0.0.0.0:9820")]:
    l = listeners[address]
    check(l["listen"] == listen and l["firewall"] == [9820] and l["failed"] == [],
          f"tcp.address {address!r} listens on {listen!r}: {l}")
# TimeoutStopSec follows the drain timeout.
ld = d["longDrain"]
check(ld["failed"] == [] and ld["config"]["daemon"]["drain_timeout_secs"] == 300
      and ld["service"]["serviceConfig"]["TimeoutStopSec"] == "330s", f"300 s drain: TimeoutStopSec=330s: {ld}")
# settings is freeform: unknown keys pass through, typed keys left null are not written.
ff = d["freeform"]
check(ff["failed"] == [] and ff["config"] == {
    "daemon": {"listen": "unix:///run/cuzk/cuzk.sock", "state_dir": "/var/lib/cuzk"},
    "engine": {"synthesis_workers": 8}, "gpus": {"gpu_workers_per_device": 2}, "log": {"level": "debug"},
    "srs": {"param_cache": "/var/tmp/filecoin-proof-parameters"}}, f"freeform settings pass through: {ff['config']}")
check(d["badBackendRefused"] is True, "settings.gpus.backend = \"tpu\" is a type error")
# The NVIDIA driver, in both nixpkgs shapes and without its options.
nodriver = "no NVIDIA driver is configured"
g = d["gpuBackendNoDriver"]["failed"]
check(len(g) == 1 and nodriver in g[0], f"backend gpu without a driver refused: {g}")
check(d["olderNixpkgsDriver"]["failed"] == [], f"older nixpkgs, videoDrivers nvidia: {d['olderNixpkgsDriver']['failed']}")
for k in ["olderNixpkgsNoDriver", "noDriverOptions"]:
    f = d[k]["failed"]
    check(len(f) == 1 and nodriver in f[0], f"{k}: GPUs without a driver refused: {f}")
# The flake's module on a pkgs without cuzk (no overlay): the flake's package with the host's
# CUDA; an explicit package wins; the bare module takes an explicit one; neither stops.
check(d["flakeModule"]["failed"] == [] and d["flakeModule"]["package"] == "/nix/store/fake-cuzk-flake-cuda-12.8",
      f"flake module: its own package: {d['flakeModule']['package']}")
check(d["flakeModuleExplicit"]["package"] == "/nix/store/fake-cuzk-explicit-cuda-12.8", "flake module: explicit package wins (rebuilt with the pinned CUDA)")
check(d["explicitPackage"]["failed"] == [] and d["explicitPackage"]["package"] == "/nix/store/fake-cuzk-explicit-cuda-12.8",
      f"pkgs without cuzk, package given: {d['explicitPackage']['package']}")
check(d["missingPackageRefused"] is True, "no package anywhere: evaluation stops")
# The metrics endpoint.
me = d["metrics"]
check(me["failed"] == [] and me["metricsSocket"]["socketConfig"] == {
    "ListenStream": ["", "127.0.0.1:9821"], "FileDescriptorName": "metrics", "Service": "cuzk.service"}
      and me["metricsSocket"]["wantedBy"] == ["sockets.target"], f"metrics socket unit: {me['metricsSocket']}")
check(me["firewall"] == [9821], f"metrics.openFirewall opens 9821: {me['firewall']}")
check(me["service"]["serviceConfig"]["RestrictAddressFamilies"] == ["", "AF_UNIX", "AF_INET", "AF_INET6"],
      f"metrics endpoint: AF_INET and AF_INET6 kept: {me['service']['serviceConfig']}")
check(m["metricsSocket"] is None, "no metrics socket unless enabled")
mv = d["metricsV6"]
check(mv["failed"] == [] and mv["metricsSocket"]["socketConfig"]["ListenStream"] == ["", "[::]:9900"] and mv["firewall"] == [],
      f"metrics on [::]:9900, port closed: {mv}")
mc = d["metricsContradictions"]["failed"]
check(len(mc) == 2 and any("both 9821" in f for f in mc) and any("settings.metrics.listen" in f for f in mc),
      f"metrics contradictions: {mc}")
mf = d["metricsFirewallAlone"]["failed"]
check(len(mf) == 1 and "metrics.openFirewall" in mf[0], f"metrics.openFirewall without enable: {mf}")
failed = d["contradictions"]["failed"]
for needle in ["settings.srs.param_cache", "settings.gpus.devices", "more than once", '"cpu"',
               "exceeds services.cuzk.hostMemoryBudget", "state_dir cannot be moved", "hidden from the service",
               "tcp.enable is false", "nosuchgroup", "settings.daemon.tcp is set", "insecure = true contradicts",
               "clientCaFile needs", "clientCaFile must be an absolute path", "in the Nix store",
               nodriver, "is CUDA 12.4, but cuzk's kernels need CUDA 12.8 or later"]:
    check(any(needle in f for f in failed), f"an assertion names {needle!r}: {failed}")
check(len(failed) == 16, f"exactly the 16 contradictions fail: {failed}")
print("ok   - module: generated config, socket and service drop-ins, IPv6 listeners, drain timeout, freeform settings, "
      "NVIDIA driver, CUDA override and minimum, flake package, TCP credentials, metrics socket unit and its 3 contradictions, 16 contradictions refused")
PY
  else
    failed=$((failed + 1)); echo "FAIL - module evaluation"; echo "$json" | tail -20 | sed 's/^/       | /'
  fi
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
