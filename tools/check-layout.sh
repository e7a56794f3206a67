#!/usr/bin/env bash
# The layout rules of ARCHITECTURE.md ("Invariants of the module graph", "Configuration"),
# checked on the source: CI's `layout` step. Each failure names the rule and the place.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

# 1. No environment switch in library code: tuning is typed and enters once. Allowed: the
#    GPU tests' CUZK_REQUIRE_GPU (cuzk-gpu/src/lib.rs), the fixtures' CUZK_FIXTURE_DIR (behind
#    the `testing` feature) and the client's credential variables (clap `env = ...`).
#    Any "CUZK_..." string in library code counts (a helper that reads a name it is given
#    hides the read from a search for env::var).
reads=$(grep -rn --include=*.rs -E '"CUZK_[A-Z0-9_]+"' crates/*/src \
  | grep -v -E 'crates/cuzk-gpu/src/lib.rs:.*"CUZK_REQUIRE_GPU"|crates/cuzk-filecoin/src/fixture.rs:.*"CUZK_FIXTURE_DIR"' \
  | grep -v -E 'crates/cuzk-cli/src/main.rs:.*env = "CUZK_(TOKEN_FILE|TLS_CA|TLS_CERT|TLS_KEY)"' \
  | grep -v -E '^\S+:[0-9]+:\s*//' || true)
# Unit-test modules may set and read their own variables: drop hits past a file's first #[cfg(test)].
bad_reads=""
while IFS= read -r hit; do
  [ -z "$hit" ] && continue
  file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}
  t=$(grep -n '^#\[cfg(test)\]' "$file" | head -1 | cut -d: -f1 || true)
  if [ -z "$t" ] || [ "$line" -lt "$t" ]; then bad_reads+="$hit"$'\n'; fi
done <<< "$reads"
if [ -n "$bad_reads" ]; then
  echo "layout: CUZK_* environment reads in library code (make it a typed tuning field):"
  printf '%s' "$bad_reads"
  fail=1
fi

# 2. No source file over 900 lines, its unit-test module not counted.
for f in $(find crates -path '*/src/*' -name '*.rs'); do
  n=$(wc -l < "$f")
  t=$(grep -n '^#\[cfg(test)\]' "$f" | head -1 | cut -d: -f1 || true)
  code=$(( ${t:-$((n + 1))} - 1 ))
  if [ "$code" -ge 900 ]; then
    echo "layout: $f has $code lines before its tests (at most 899: split it by concept)"
    fail=1
  fi
done

# 3. No test support in what ships: the packages nixos-module/package.nix builds, together in
#    one cargo invocation as Nix builds them (cargo unifies features across them), turn on no
#    `testing` feature of a cuzk crate on their normal edges, and no cuzk crate they ship has a
#    module that exists for tests alone (the `testing`-gated modules).
if command -v cargo >/dev/null; then
  pkgs=$(python3 - <<'PY'
import re
s = open("nixos-module/package.nix").read()
flags = re.search(r"cargoBuildFlags\s*=\s*\[(.*?)\]", s, re.S).group(1)
words = re.findall(r'"([^"]+)"', flags)
print(" ".join(words))
PY
)
  case " $pkgs " in
    *" -p cuzkd "*) ;;
    *) echo "layout: nixos-module/package.nix's cargoBuildFlags do not build cuzkd ($pkgs)"; fail=1 ;;
  esac
  tree=$(cargo tree $pkgs -e normal,features --prefix none 2>/dev/null | grep -E '^cuzk-[a-z0-9-]+ feature "testing"' | sort -u || true)
  if [ -n "$tree" ]; then
    echo "layout: the shipped build (cargo build $pkgs, as nixos-module/package.nix builds it) turns on test support:"
    echo "$tree"
    fail=1
  fi
  shipped=$(cargo tree $pkgs -e normal --prefix none 2>/dev/null | grep -oE '^cuzk-[a-z0-9-]+' | sort -u || true)
  if echo "$shipped" | grep -qx 'cuzk-bench'; then
    echo "layout: the shipped build contains the lab (crate cuzk-bench)"
    fail=1
  fi
fi

# 4. No import circles between a crate's modules; the named seams hold.
python3 tools/module-cycles.py || fail=1

if [ "$fail" = 0 ]; then
  echo "layout: no CUZK_* reads in library code, no file over 900 lines, no test support in the shipped build, no import circles"
fi
exit "$fail"
