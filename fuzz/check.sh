#!/usr/bin/env bash
# Builds the fuzz targets and runs each for a bounded time over its committed corpus; fails
# when any target finds a crash (its input is then under fuzz/artifacts/<target>/). What CI
# runs (.ci/run); see fuzz/README.md.
#
#   fuzz/check.sh [seconds per target, default 30] [target...]
#   fuzz/check.sh --build-only     # cargo-fuzz and the instrumented build, nothing run
#
# New inputs a run finds go to a temporary directory, not into corpus/: the committed corpus
# changes only by hand (minimized, README.md "Corpus"). The build is instrumented, so it has
# its own target directory: $CUZK_FUZZ_TARGET_DIR, default fuzz/target.
set -euo pipefail
cd "$(dirname "$0")"
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
secs="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(c1 grpc params spool config)

command -v xz >/dev/null || { echo "fuzz: xz is needed to unpack corpus/*.tar.xz (apt-get install xz-utils)" >&2; exit 1; }
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
# Stable Rust: cargo-fuzz's -Z flags need RUSTC_BOOTSTRAP. No sanitizer (-s none): ASan
# needs nightly's -Zsanitizer and halves the speed; a panic, an abort, a hang (-timeout) or
# a memory blow-up (-rss_limit_mb) is what these targets look for. Debug assertions on
# (-a), so that an overflow panics instead of wrapping. The GPU kernels are not needed: nvcc
# is hidden from cuzk-gpu's build script (it then embeds no kernels).
export RUSTC_BOOTSTRAP=1 NVCC=/bin/false
flags=(-O -a -s none --target-dir "${CUZK_FUZZ_TARGET_DIR:-target}")
start=$(date +%s)
cargo fuzz build "${flags[@]}"
echo "fuzz: build took $(( $(date +%s) - start )) s"
[ "$build_only" = 0 ] || exit 0

# run_target T: T for $secs seconds over its corpus; its summary (and the log's tail when it
# fails) goes to $results/T.out, its exit status to $results/T.rc.
results="$(mktemp -d)"
run_target() {
  local t="$1" found rc=0
  found="$(mktemp -d)"
  local corpora=("corpus/$t")
  # Large inputs (mutated 2 KiB C1 fixtures, near-duplicates) are kept compressed.
  if [ -f "corpus/$t-large.tar.xz" ]; then
    mkdir -p "$found.large"
    tar -xJf "corpus/$t-large.tar.xz" -C "$found.large"
    corpora+=("$found.large")
  fi
  cargo fuzz run "${flags[@]}" "$t" "$found" "${corpora[@]}" -- \
    -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
    >"$found.log" 2>&1 || rc=$?
  {
    echo "fuzz: $t for ${secs} s"
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' "$found.log" || true
    [ "$rc" -eq 0 ] || tail -40 "$found.log"
  } > "$results/$t.out"
  echo "$rc" > "$results/$t.rc"
  rm -rf "$found" "$found.log" "$found.large"
}

# The targets run side by side, one per core (each is one libFuzzer process): each still gets
# its own $secs seconds of a whole core, in less wall time.
cores="$(nproc 2>/dev/null || echo 1)"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n || true; done
  run_target "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$results/$t.out"
  [ "$(cat "$results/$t.rc" 2>/dev/null || echo 1)" -eq 0 ] || failed+=("$t")
done
rm -rf "$results"
# The targets' scratch directories (fuzz/src/lib.rs) of processes that have ended.
for d in /dev/shm/cuzk-fuzz-*; do
  [ -d "$d" ] && [ ! -d "/proc/${d##*-}" ] && rm -rf "$d"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: no crash"
