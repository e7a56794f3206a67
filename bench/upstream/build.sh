#!/bin/bash
# Upstream cuzk, the prover Curio ships (filecoin-project/curio, extern/cuzk), built
# unmodified into its own cuzk-daemon and cuzk-bench binaries for the device, where
# bench/device/compare.sh runs it beside cuzk and supraseal-c2 (issue #36). Nothing of
# upstream's is committed: the sources are exported from a git copy of curio into a
# directory outside the repository, built there, and only the stripped, gzipped binaries
# land in device-carry/ (ignored by git), with UPSTREAM.txt saying what was built and how.
#
#   bash bench/upstream/build.sh [CURIO_GIT]
#
# CURIO_GIT: a git directory or URL holding the commit (default: the fetch tool's mirror,
# /work/.mirror/filecoin-project+curio/repo, else https://github.com/filecoin-project/curio).
# Settings (environment): UPSTREAM_COMMIT (e0294b0f, the commit whose cuzk-project.md
# publishes the figures #36 compares with), UPSTREAM_WORK (~/.cache/cuzk-upstream: sources
# and target directory), UPSTREAM_TOOLCHAIN (empty: upstream's rust-toolchain.toml, 1.86.0;
# set it only when that toolchain cannot be installed, and say so with the results),
# UPSTREAM_JOBS (cargo -j; 2). The build log goes to $UPSTREAM_WORK/build.log and stdout.
#
# What the build needs (bench/upstream/README.md): nvcc (tools/install-nvcc; 13.0, as ours),
# protoc (cuzk-proto's build script; Debian's protobuf-compiler), crates.io. Upstream's own
# flags are kept; the one addition is sm_90 code for supraseal-c2's and sppark's kernels
# (NVCC_APPEND_FLAGS, as peers/env.sh does for ours), so that the H200 does not compile them
# from PTX at start. The feature set is upstream's default (cuda-supraseal).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
COMMIT=${UPSTREAM_COMMIT:-e0294b0f}
WORK=${UPSTREAM_WORK:-$HOME/.cache/cuzk-upstream}
JOBS=${UPSTREAM_JOBS:-2}
SRC=${1:-}
if [ -z "$SRC" ]; then
  SRC=/work/.mirror/filecoin-project+curio/repo
  [ -d "$SRC" ] || SRC=https://github.com/filecoin-project/curio
fi
mkdir -p "$WORK"
LOG=$WORK/build.log
exec > >(tee "$LOG") 2>&1
echo "upstream cuzk build: $(date -u +%FT%TZ) on $(nproc) cores; source $SRC, commit $COMMIT"

# The git directory: a local one as it is, a URL cloned (bare, blobs on demand) once.
if [ -d "$SRC" ]; then
  GITDIR=$(git -C "$SRC" rev-parse --absolute-git-dir 2>/dev/null || echo "$SRC")
else
  GITDIR=$WORK/curio.git
  [ -d "$GITDIR" ] || git clone --bare --filter=blob:none "$SRC" "$GITDIR"
fi
FULL=$(git --git-dir "$GITDIR" rev-parse --verify "$COMMIT^{commit}") || {
  echo "build.sh: $SRC does not hold commit $COMMIT (fetch curio again, or set UPSTREAM_COMMIT)" >&2
  exit 1
}
echo "commit: $FULL ($(git --git-dir "$GITDIR" log -1 --format='%cs %s' "$FULL"))"

# The sources as upstream has them: cuzk and the three crates its workspace patches in.
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
git --git-dir "$GITDIR" archive "$FULL" extern/cuzk extern/supraseal-c2 extern/bellperson extern/bellpepper-core \
  | tar -x -C "$WORK/src"
# Every file of the four directories, whatever git says of blobs outside them (a partial
# mirror may lack some, as the fetch tool's lacks one of extern/supraseal's demos).
for d in extern/cuzk extern/supraseal-c2 extern/bellperson extern/bellpepper-core; do
  want=$(git --git-dir "$GITDIR" ls-tree -r --name-only "$FULL" "$d" | wc -l)
  got=$(find "$WORK/src/$d" -type f | wc -l)
  [ "$want" = "$got" ] || { echo "build.sh: $d: $got of $want files exported" >&2; exit 1; }
done
echo "exported: $(find "$WORK/src" -type f | wc -l) files, all of the four directories; Cargo.lock sha256 $(sha256sum "$WORK/src/extern/cuzk/Cargo.lock" | cut -c1-16)"

# Tools.
command -v protoc > /dev/null || { echo "build.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
NVCC=${NVCC:-$("$ROOT/tools/install-nvcc" | tail -1)}
V=$(dirname "$(dirname "$NVCC")")
export NVCC PATH=$V/bin:$PATH PROTOC=$(command -v protoc)
export NVCC_APPEND_FLAGS="-gencode arch=compute_90,code=sm_90"
for d in "$V/lib" "$V/lib64"; do
  [ -f "$d/libcudart_static.a" ] && export LIBRARY_PATH=$d CUDA_LIB_DIR=$d && break
done
TOOLCHAIN=${UPSTREAM_TOOLCHAIN:-$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$WORK/src/extern/cuzk/rust-toolchain.toml")}
export RUSTUP_TOOLCHAIN=$TOOLCHAIN
rustup toolchain list | grep -q "^$TOOLCHAIN" || rustup toolchain install --profile minimal "$TOOLCHAIN" || {
  echo "build.sh: Rust $TOOLCHAIN (upstream's rust-toolchain.toml) cannot be installed here; UPSTREAM_TOOLCHAIN=stable builds with this machine's, to be named with the results" >&2
  exit 1
}
echo "tools: $(rustc --version); $("$NVCC" --version | tail -1); $(protoc --version); NVCC_APPEND_FLAGS=$NVCC_APPEND_FLAGS"

cd "$WORK/src/extern/cuzk"
cargo fetch --locked
# libcuda: bellperson's cuda feature links the driver library (cuda-driver-sys), which a
# machine without a GPU driver lacks. A stub with its soname and symbols serves the link, as
# the CUDA toolkit's lib/stubs/libcuda.so does; on the device the driver's is loaded.
CDS=$(find "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ -maxdepth 1 -type d -name 'cuda-driver-sys-*' | sort | tail -1)
[ -n "$CDS" ] || { echo "build.sh: cuda-driver-sys not in the cargo registry after cargo fetch" >&2; exit 1; }
mkdir -p "$WORK/stubs"
# Every stub answers CUDA_ERROR_NO_DEVICE (100): bellperson's build script, which runs here
# linked to it, finds no GPU, as on any machine without one.
grep -oh "pub fn cu[A-Za-z0-9_]*" "$CDS"/src/*.rs | sed 's/pub fn //' | sort -u | sed 's/.*/int &(void) { return 100; }/' > "$WORK/stubs/cuda.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/stubs/libcuda.so" "$WORK/stubs/cuda.c"
ln -sf libcuda.so "$WORK/stubs/libcuda.so.1"
export CUDA_LIBRARY_PATH=$WORK/stubs LIBRARY_PATH=$WORK/stubs:${LIBRARY_PATH:-} LD_LIBRARY_PATH=$WORK/stubs:${LD_LIBRARY_PATH:-}
echo "link-time libcuda stub: $(wc -l < "$WORK/stubs/cuda.c") symbols of $(basename "$CDS")"
start=$(date +%s)
CARGO_TARGET_DIR=$WORK/target nice -n 19 cargo build --release --locked -j "$JOBS" -p cuzk-daemon -p cuzk-bench
echo "built in $(( $(date +%s) - start )) s"

# The binaries for the device: what they link must be on a bare driver machine.
mkdir -p "$ROOT/device-carry"
for b in cuzk-daemon cuzk-bench; do
  f=$WORK/target/release/$b
  echo "$b: $(du -h "$f" | cut -f1); links: $(ldd "$f" | awk '{print $1}' | tr '\n' ' ')"
  strip -o "$ROOT/device-carry/upstream-$b" "$f"
  gzip -f "$ROOT/device-carry/upstream-$b"
done
{
  echo "upstream cuzk: filecoin-project/curio $FULL, extern/cuzk, unmodified"
  echo "built $(date -u +%FT%TZ) by bench/upstream/build.sh at cuzk $(git -C "$ROOT" rev-parse --short HEAD)"
  echo "$(rustc --version); $("$NVCC" --version | tail -1); NVCC_APPEND_FLAGS=$NVCC_APPEND_FLAGS"
  echo "cargo build --release --locked -p cuzk-daemon -p cuzk-bench (default features: cuda-supraseal)"
} > "$ROOT/device-carry/UPSTREAM.txt"
cat "$ROOT/device-carry/UPSTREAM.txt"
