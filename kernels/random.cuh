// Random parameter points for benches: the points cuzk_groth16::shape::random_points makes on
// the host, made on the device. Point i belongs to run k = i >> log_run, which starts at
// starts[k] and steps by steps[k]; it is starts[k] + (j + 1) steps[k] with j = i mod 2^log_run
// (a left-to-right double-and-add of at most log_run + 1 bits in XYZZ, then one inversion).
// Outputs are in blst's affine layout, fully reduced, (0, 0) for infinity, so they equal the
// host's bit for bit.
#pragma once
#include "msm_affine.cuh"

namespace cuzk {

template <class P>
__device__ __forceinline__ mont_t<P> field_inverse(const mont_t<P>& a) {
    return mont_inverse(a);
}

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2), since u^2 = -1.
template <class F>
__device__ __forceinline__ fp2_t<F> field_inverse(const fp2_t<F>& a) {
    const F t = mont_inverse(a.c0.sqr() + a.c1.sqr());
    return {a.c0 * t, -(a.c1 * t)};
}

template <class F>
__device__ __forceinline__ void random_run_points(const affine_t<F>* starts, const affine_t<F>* steps,
                                                  affine_t<F>* out, uint64_t n, uint32_t log_run) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint64_t k = i >> log_run;
    const uint32_t m = (uint32_t)(i & ((1ull << log_run) - 1)) + 1;
    const affine_t<F> step = steps[k];
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (int b = 31 - __clz(m); b >= 0; b--) {
        acc = acc.dbl();
        if ((m >> b) & 1) acc.add_affine(step);
    }
    acc.add_affine(starts[k]);
    if (acc.is_inf()) {
        out[i] = {F::zero(), F::zero()};
        return;
    }
    // ZZ = Z^2 and ZZZ = Z^3: 1/Z = ZZ / ZZZ, x = X / ZZ, y = Y / ZZZ.
    const F inv = field_inverse(acc.ZZZ);
    const F zinv = acc.ZZ * inv;
    out[i] = {acc.X * zinv.sqr(), acc.Y * inv};
}

} // namespace cuzk
