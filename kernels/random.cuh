// Random parameter points for benches: the points cuzk_groth16::shape::random_points makes on
// the host, made on the device. Point i belongs to run k = i >> log_run, which starts at
// starts[k] and steps by steps[k]; it is starts[k] + (j + 1) steps[k] with j = i mod 2^log_run.
// A thread makes RANDOM_PER_THREAD consecutive points: a left-to-right double-and-add of at
// most log_run + 1 bits in XYZZ for the first, a mixed addition for each next one, then one
// inversion for all of them (store_affine).
// Outputs are in blst's affine layout, fully reduced, (0, 0) for infinity, so they equal the
// host's bit for bit.
#pragma once
#include "msm_affine.cuh"

namespace cuzk {

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
    // pts[j] = start + (m + j) step.
    xyzz_t<F> pts[K];
    for (int j = 0; j < cnt; j++) {
        if (j > 0) acc.add_affine(step);
        pts[j] = acc;
    }
    store_affine<F, K>(pts, cnt, out + i0);
}

} // namespace cuzk
