# shellcheck shell=bash
# Build environment for cuzk-peers (source it, from any directory): nvcc 13.0 from the pip
# wheels (tools/install-nvcc, or $NVCC when it is set already), cuzk-gpu's kernels for sm_90
# only, supraseal-c2's kernels also for sm_90, libstdc++ linked statically.
NVCC=${NVCC:-$("$(dirname "${BASH_SOURCE[0]}")/../tools/install-nvcc" | tail -1)}
V=$(dirname "$(dirname "$NVCC")")
export NVCC
export PATH=$V/bin:$PATH
export CUZK_GPU_ARCHS=90
# sppark::build::ccmd (supraseal-c2's build) compiles for sm_75, sm_80, compute_100 and sm_120;
# this adds sm_90 SASS so the H200 does not JIT it from PTX at start.
export NVCC_APPEND_FLAGS="-gencode arch=compute_90,code=sm_90"
export CXXSTDLIB_STATIC=1
# nvcc.profile of the wheels looks for lib64/; their libraries are in lib/ (sppark's build
# links a probe against libcudart_static.a and fails without LIBRARY_PATH).
for d in "$V/lib" "$V/lib64"; do
  [ -f "$d/libcudart_static.a" ] && export LIBRARY_PATH=$d CUDA_LIB_DIR=$d && break
done
unset d
