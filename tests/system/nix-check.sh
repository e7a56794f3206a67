#!/usr/bin/env bash
# Nix checks that run without a Nix store or binary cache:
#  - every .nix file of the repository parses (nix-instantiate --parse; Debian's nix-bin);
#  - with NIXPKGS_LIB=/path/to/nixpkgs/lib (a nixpkgs or nix-community/nixpkgs.lib checkout's
#    lib/), services.cuzk is also evaluated against stubbed NixOS options
#    (nix-module-eval.nix): the generated cuzk.toml, the socket drop-in, the pinned CUDA set,
#    and each contradictory setting refused by its assertion.
# Building the package and the flake's VM test need a real Nix with nixpkgs: nix flake check.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"

if ! command -v nix-instantiate >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nix-bin >/dev/null
fi

passed=0 failed=0
while IFS= read -r f; do
  if out="$(nix-instantiate --parse "$f" 2>&1 >/dev/null)"; then
    passed=$((passed + 1)); echo "ok   - parses: $f"
  else
    failed=$((failed + 1)); echo "FAIL - parses: $f"; echo "$out" | sed 's/^/       | /'
  fi
done < <(git ls-files --cached --others --exclude-standard -- '*.nix')

if [ -n "${NIXPKGS_LIB:-}" ]; then
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
check(d["plainOrdinals"]["config"]["gpus"]["devices"] == [0, 1], "GPUs without budgets stay plain ordinals")
failed = d["contradictions"]["failed"]
for needle in ["settings.srs.param_cache", "settings.gpus.devices", "more than once", '"cpu"',
               "exceeds services.cuzk.hostMemoryBudget", "state_dir cannot be moved", "hidden from the service",
               "tcp.enable is false", "nosuchgroup", "settings.daemon.tcp is set", "insecure = true contradicts",
               "clientCaFile needs", "clientCaFile must be an absolute path", "in the Nix store"]:
    check(any(needle in f for f in failed), f"an assertion names {needle!r}: {failed}")
check(len(failed) == 14, f"exactly the 14 contradictions fail: {failed}")
print("ok   - module: generated config, socket drop-in, CUDA override, TCP credentials, 14 contradictions refused")
PY
  else
    failed=$((failed + 1)); echo "FAIL - module evaluation"; echo "$json" | tail -20 | sed 's/^/       | /'
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
