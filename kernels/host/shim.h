// The CUDA keywords and built-ins the MSM headers use, for a host build of the kernels
// (CUZK_HOST_BUILD, see host/README.md): kernels run as plain loops over their threads, one
// thread after another. Good for kernels whose threads do not wait for each other (no
// __syncthreads between threads that share data), such as those of msm_affine.cuh.
#pragma once
#include <algorithm>
#include <cstdint>

#define __device__
#define __forceinline__ inline
#define __constant__
#define __global__
#define __noinline__
#define __shared__

struct cuzk_host_dim3 {
    uint32_t x = 0, y = 0, z = 0;
};
inline thread_local cuzk_host_dim3 blockIdx, threadIdx, blockDim;
using std::min;
inline uint32_t atomicAdd(uint32_t* p, uint32_t v) {
    const uint32_t old = *p;
    *p += v;
    return old;
}
inline uint32_t atomicMin(uint32_t* p, uint32_t v) {
    const uint32_t old = *p;
    if (v < old) *p = v;
    return old;
}
inline int __clz(uint32_t x) { return x ? __builtin_clz(x) : 32; }
inline void __syncthreads() {}

// Runs f once per thread of a launch of `threads` threads in blocks of `block`.
template <class F>
void cuzk_host_launch(uint64_t threads, uint32_t block, F f) {
    blockDim.x = block;
    for (uint64_t t = 0; t < threads; t++) {
        blockIdx.x = (uint32_t)(t / block);
        threadIdx.x = (uint32_t)(t % block);
        f();
    }
}
