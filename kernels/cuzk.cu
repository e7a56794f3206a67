// The kernels' entry points: thin extern "C" wrappers, one per launch the Rust side makes
// (crates/cuzk-gpu/src/kernels.rs names them). Algorithms live in the headers.
#include "ntt.cuh"
#include "msm.cuh"
#include "msm_affine.cuh"
#include "random.cuh"
#include "multiples.cuh"
#include "eval.cuh"

using namespace cuzk;

extern "C" __global__ void cuzk_fr_power_table(fr_t* out, power_table t, uint32_t n) {
    fr_power_table_expand(out, t, n);
}

extern "C" __global__ void cuzk_fr_ntt_radix2(const fr_t* in, fr_t* out, const fr_t* twiddles, uint32_t log_n,
                                              uint32_t s, power_table pre, power_table post) {
    fr_ntt_pass<1>(in, out, twiddles, log_n, s, pre, post);
}

extern "C" __global__ void cuzk_fr_ntt_radix4(const fr_t* in, fr_t* out, const fr_t* twiddles, uint32_t log_n,
                                              uint32_t s, power_table pre, power_table post) {
    fr_ntt_pass<2>(in, out, twiddles, log_n, s, pre, post);
}

extern "C" __global__ void cuzk_fr_ntt_radix8(const fr_t* in, fr_t* out, const fr_t* twiddles, uint32_t log_n,
                                              uint32_t s, power_table pre, power_table post) {
    fr_ntt_pass<3>(in, out, twiddles, log_n, s, pre, post);
}

extern "C" __global__ void cuzk_fr_ntt_radix16(const fr_t* in, fr_t* out, const fr_t* twiddles, uint32_t log_n,
                                              uint32_t s, power_table pre, power_table post) {
    fr_ntt_pass<4>(in, out, twiddles, log_n, s, pre, post);
}

extern "C" __global__ void __launch_bounds__(256) cuzk_fr_ntt_fused(const fr_t* in, fr_t* out,
                                                                     const fr_t* twiddles, uint32_t log_n,
                                                                     uint32_t s0, uint32_t t, power_table pre,
                                                                     power_table post) {
    fr_ntt_fused(in, out, twiddles, log_n, s0, t, pre, post);
}

// The same with registers capped for three blocks per SM (80 registers and 20 bytes of
// spills on sm_90, against 96 and two blocks): the one the host uses by default (ntt.rs).
extern "C" __global__ void __launch_bounds__(256, 3) cuzk_fr_ntt_fused3(const fr_t* in, fr_t* out,
                                                                        const fr_t* twiddles, uint32_t log_n,
                                                                        uint32_t s0, uint32_t t,
                                                                        power_table pre, power_table post) {
    fr_ntt_fused(in, out, twiddles, log_n, s0, t, pre, post);
}

extern "C" __global__ void cuzk_fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z_inv,
                                                  uint32_t n) {
    fr_coset_quotient(a, b, c, z_inv, n);
}

// A compiled circuit's a, b and c at z, and the first row with a * b != c (eval.cuh).
extern "C" __global__ void cuzk_fr_eval_constraints(
    const uint32_t* a_start, const uint32_t* a_cols, const uint32_t* a_coeffs,
    const uint32_t* b_start, const uint32_t* b_cols, const uint32_t* b_coeffs,
    const uint32_t* c_start, const uint32_t* c_cols, const uint32_t* c_coeffs,
    const fr_t* dictionary, const fr_t* z, uint32_t rows,
    fr_t* a, fr_t* b, fr_t* c, uint32_t* first_bad) {
    fr_eval_constraints(a_start, a_cols, a_coeffs, b_start, b_cols, b_coeffs, c_start, c_cols, c_coeffs, dictionary,
                        z, rows, a, b, c, first_bad);
}

extern "C" __global__ void cuzk_msm_classify(fr_t* scalars, uint8_t* cls, uint32_t* counts, uint32_t n,
                                             uint32_t c, uint32_t windows, uint32_t per) {
    msm_classify(scalars, cls, counts, n, c, windows, per);
}

extern "C" __global__ void cuzk_msm_bucket_offsets(uint32_t* counts, uint32_t c) {
    msm_bucket_offsets(counts, c);
}

extern "C" __global__ void cuzk_msm_scatter(const fr_t* scalars, const uint8_t* cls, uint32_t* cursor,
                                            uint32_t* entries, uint32_t* keys, uint32_t n, uint32_t c,
                                            uint32_t w0, uint32_t nw, uint32_t per, uint32_t shift,
                                            uint32_t g0) {
    msm_scatter(scalars, cls, cursor, entries, keys, n, c, w0, nw, per, shift, g0);
}

// The curve kernels, once per group: G (g1, g2) over field F (fq_t, fq2_t).
#define CUZK_CURVE_KERNELS(G, F)                                                                              \
    extern "C" __global__ void cuzk_##G##_bucket_runs_affine(                                                 \
        const affine_t<F>* points, const uint32_t* idx, const affine_t<F>* mults, size_t mult_stride,         \
        uint32_t shift, const uint32_t* entries, const uint32_t* keys, size_t len, uint32_t cap,              \
        xyzz_t<F>* buckets, xyzz_t<F>* carry_vals, uint32_t* carry_keys, const uint32_t* ends, size_t region,  \
        uint32_t half) {                                                                                      \
        msm_bucket_runs_affine<F>(entry_points<F>{points, idx, mults, mult_stride, shift}, entries, keys, len, \
                                  cap, buckets, carry_vals, carry_keys, ends, region, half);                  \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_next_multiple(const affine_t<F>* in, affine_t<F>* out, uint64_t n,   \
                                                        uint32_t c) {                                         \
        next_multiple<F>(in, out, n, c);                                                                      \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_bucket_runs_xyzz(const xyzz_t<F>* vals, const uint32_t* keys,       \
                                                           size_t len, uint32_t cap, xyzz_t<F>* buckets,      \
                                                           xyzz_t<F>* carry_vals, uint32_t* carry_keys) {     \
        msm_bucket_runs_xyzz<F>(vals, keys, len, cap, buckets, carry_vals, carry_keys);                       \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_window_segments(const xyzz_t<F>* buckets, xyzz_t<F>* out,           \
                                                          uint32_t c, uint32_t windows, uint32_t segments) {  \
        msm_window_segments<F>(buckets, out, c, windows, segments);                                           \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_sum_partials(const affine_t<F>* points, const uint32_t* idx,        \
                                                       const uint8_t* cls, xyzz_t<F>* out, uint32_t n,        \
                                                       uint32_t chunk, uint32_t threads) {                    \
        sum_partials<F>(points, idx, cls, out, n, chunk, threads);                                            \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_xyzz_sum_partials(const xyzz_t<F>* in, xyzz_t<F>* out, uint32_t n, \
                                                            uint32_t chunk, uint32_t threads) {               \
        xyzz_sum_partials<F>(in, out, n, chunk, threads);                                                     \
    }                                                                                                         \
    extern "C" __global__ void cuzk_##G##_xyzz_to_jacobian(const xyzz_t<F>* in, jacobian_t<F>* out,           \
                                                           uint32_t n) {                                      \
        xyzz_to_jacobian<F>(in, out, n);                                                                      \
    }

CUZK_CURVE_KERNELS(g1, fq_t)

// Batch-affine bucket accumulation (G1 only; msm_affine.cuh).
extern "C" __global__ void cuzk_ba_lens0(const uint32_t* cursor, uint32_t* lens, uint32_t* offs, uint32_t count,
                                         uint32_t half) {
    ba_lens0(cursor, lens, offs, count, half);
}
extern "C" __global__ void cuzk_ba_halve(const uint32_t* lens_in, uint32_t* lens_out, uint32_t* offs_out,
                                         uint32_t count) {
    ba_halve(lens_in, lens_out, offs_out, count);
}
extern "C" __global__ void cuzk_ba_keys(ba_level L, uint64_t in_total) { ba_keys(L, in_total); }
extern "C" __global__ void cuzk_ba_prefix(ba_level L, uint64_t out_total, uint32_t G, fq_t* prefix, fq_t* totals) {
    ba_prefix(L, out_total, G, prefix, totals);
}
extern "C" __global__ void cuzk_ba_apply(ba_level L, uint64_t out_total, uint32_t G, const fq_t* prefix,
                                         const fq_t* inv_totals) {
    ba_apply(L, out_total, G, prefix, inv_totals);
}
extern "C" __global__ void cuzk_fq_group_prefix(const fq_t* vals, uint64_t count, uint32_t G, fq_t* prefix,
                                                fq_t* totals) {
    fq_group_prefix(vals, count, G, prefix, totals);
}
extern "C" __global__ void cuzk_fq_group_backprop(fq_t* vals, uint64_t count, uint32_t G, const fq_t* prefix,
                                                  const fq_t* inv_totals) {
    fq_group_backprop(vals, count, G, prefix, inv_totals);
}
extern "C" __global__ void cuzk_fq_invert_each(fq_t* vals, uint64_t count) { fq_invert_each(vals, count); }
CUZK_CURVE_KERNELS(g2, fq2_t)

// Random parameter points for benches (random.cuh), once per group.
extern "C" __global__ void cuzk_g1_random_run(const g1_affine_t* starts, const g1_affine_t* steps, g1_affine_t* out,
                                              uint64_t n, uint32_t log_run) {
    random_run_points<fq_t>(starts, steps, out, n, log_run);
}
extern "C" __global__ void cuzk_g2_random_run(const g2_affine_t* starts, const g2_affine_t* steps, g2_affine_t* out,
                                              uint64_t n, uint32_t log_run) {
    random_run_points<fq2_t>(starts, steps, out, n, log_run);
}
