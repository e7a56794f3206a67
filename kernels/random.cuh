// Random parameter points for benches: the points cuzk_groth16::shape::random_points makes on
// the host, made on the device. Point i belongs to run k = i >> log_run, which starts at
// starts[k] and steps by steps[k]; it is starts[k] + (j + 1) steps[k] with j = i mod 2^log_run.
// A thread makes RANDOM_PER_THREAD consecutive points: a left-to-right double-and-add of at
// most log_run + 1 bits in XYZZ for the first, a mixed addition for each next one, then one
// inversion for all of them.
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

// Points per thread: consecutive points of one run (4096 is a multiple), so that one
// double-and-add and one inversion serve RANDOM_PER_THREAD points (Montgomery's trick over
// their ZZZ), and each further point costs a mixed addition and a few products.
constexpr int RANDOM_PER_THREAD = 16;

template <class F>
__device__ __forceinline__ void random_run_points(const affine_t<F>* starts, const affine_t<F>* steps,
                                                  affine_t<F>* out, uint64_t n, uint32_t log_run) {
    constexpr int K = RANDOM_PER_THREAD;
    const uint64_t i0 = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) * K;
    if (i0 >= n) return;
    const int cnt = n - i0 < (uint64_t)K ? (int)(n - i0) : K;
    const uint64_t k = i0 >> log_run;
    const uint32_t m = (uint32_t)(i0 & ((1ull << log_run) - 1)) + 1;
    const affine_t<F> step = steps[k];
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (int b = 31 - __clz(m); b >= 0; b--) {
        acc = acc.dbl();
        if ((m >> b) & 1) acc.add_affine(step);
    }
    acc.add_affine(starts[k]);
    // pts[j] = start + (m + j) step; before[j] = the product of the ZZZ before j (infinity
    // skipped).
    xyzz_t<F> pts[K];
    F before[K];
    F prod = F::one();
    for (int j = 0; j < cnt; j++) {
        if (j > 0) acc.add_affine(step);
        pts[j] = acc;
        before[j] = prod;
        if (!acc.is_inf()) prod = prod * acc.ZZZ;
    }
    // inv = 1 / (the product of the ZZZ up to j), walking back.
    F inv = field_inverse(prod);
    for (int j = cnt - 1; j >= 0; j--) {
        const xyzz_t<F>& p = pts[j];
        if (p.is_inf()) {
            out[i0 + j] = {F::zero(), F::zero()};
            continue;
        }
        // ZZ = Z^2 and ZZZ = Z^3: 1/Z = ZZ / ZZZ, x = X / ZZ, y = Y / ZZZ.
        const F zzz_inv = inv * before[j];
        inv = inv * p.ZZZ;
        const F zinv = p.ZZ * zzz_inv;
        out[i0 + j] = {p.X * zinv.sqr(), p.Y * zzz_inv};
    }
}

} // namespace cuzk
