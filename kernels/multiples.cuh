// Precomputed multiples of resident bases for the MSM (msm.cuh's bucket sets shared by `per`
// windows): multiple j of base P is 2^(c j) P, made from multiple j - 1 by c doublings.
// A thread takes MULTIPLE_PER_THREAD consecutive points: c doublings in XYZZ each, then one
// inversion for all of them (store_affine). Outputs are in blst's affine layout, fully
// reduced, (0, 0) for infinity, as the bases are.
#pragma once
#include "msm_affine.cuh"

namespace cuzk {

constexpr int MULTIPLE_PER_THREAD = 16;

// out[i] = 2^c * in[i], i < n.
template <class F>
__device__ __forceinline__ void next_multiple(const affine_t<F>* in, affine_t<F>* out, uint64_t n, uint32_t c) {
    constexpr int K = MULTIPLE_PER_THREAD;
    const uint64_t i0 = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) * K;
    if (i0 >= n) return;
    const int cnt = n - i0 < (uint64_t)K ? (int)(n - i0) : K;
    xyzz_t<F> pts[K];
    for (int j = 0; j < cnt; j++) {
        const affine_t<F> p = in[i0 + j];
        xyzz_t<F> q = p.is_inf() ? xyzz_t<F>::inf() : xyzz_t<F>::dbl_affine(p.x, p.y);
        for (uint32_t b = 1; b < c; b++) q = q.dbl();
        pts[j] = q;
    }
    store_affine<F, K>(pts, cnt, out + i0);
}

} // namespace cuzk
