# Build environment for cuzk-peers (source it): nvcc from the pip CUDA 13.0 wheels, cuzk-gpu's
# kernels for sm_90 only, supraseal-c2's kernels also for sm_90, libstdc++ linked statically.
V=/root/.cache/cuzk-nvcc-13.0/lib/python3.11/site-packages/nvidia/cu13
export NVCC=$V/bin/nvcc
export PATH=$V/bin:$PATH
export CUZK_GPU_ARCHS=90
# sppark::build::ccmd (supraseal-c2's build) compiles for sm_75, sm_80, compute_100 and sm_120;
# this adds sm_90 SASS so the H200 does not JIT it from PTX at start.
export NVCC_APPEND_FLAGS="-gencode arch=compute_90,code=sm_90"
export CXXSTDLIB_STATIC=1
# nvcc.profile of the wheels looks for lib64/; their libraries are in lib/.
export LIBRARY_PATH=$V/lib CUDA_LIB_DIR=$V/lib
