// The kernels' entry points: thin extern "C" wrappers, one per launch the Rust side makes
// (crates/cuzk-gpu/src/kernels.rs names them). Algorithms live in the headers.
#include "ntt.cuh"
#include "msm.cuh"

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

extern "C" __global__ void cuzk_fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z_inv,
                                                  uint32_t n) {
    fr_coset_quotient(a, b, c, z_inv, n);
}

extern "C" __global__ void cuzk_msm_classify(fr_t* scalars, uint8_t* cls, uint32_t* counts, uint32_t n,
                                             uint32_t c, uint32_t windows) {
    msm_classify(scalars, cls, counts, n, c, windows);
}

extern "C" __global__ void cuzk_msm_bucket_offsets(uint32_t* counts, uint32_t c) {
    msm_bucket_offsets(counts, c);
}

extern "C" __global__ void cuzk_msm_scatter(const fr_t* scalars, const uint8_t* cls, uint32_t* cursor,
                                            uint32_t* entries, uint32_t* keys, uint32_t n, uint32_t c,
                                            uint32_t windows) {
    msm_scatter(scalars, cls, cursor, entries, keys, n, c, windows);
}

extern "C" __global__ void cuzk_g1_bucket_runs_affine(const g1_affine_t* points, const uint32_t* entries,
                                                      const uint32_t* keys, size_t len, uint32_t cap,
                                                      g1_xyzz_t* buckets, g1_xyzz_t* carry_vals,
                                                      uint32_t* carry_keys) {
    msm_bucket_runs_affine(points, entries, keys, len, cap, buckets, carry_vals, carry_keys);
}

extern "C" __global__ void cuzk_g1_bucket_runs_xyzz(const g1_xyzz_t* vals, const uint32_t* keys, size_t len,
                                                    uint32_t cap, g1_xyzz_t* buckets, g1_xyzz_t* carry_vals,
                                                    uint32_t* carry_keys) {
    msm_bucket_runs_xyzz(vals, keys, len, cap, buckets, carry_vals, carry_keys);
}

extern "C" __global__ void cuzk_g1_window_segments(const g1_xyzz_t* buckets, g1_xyzz_t* out, uint32_t c,
                                                   uint32_t windows, uint32_t segments) {
    msm_window_segments(buckets, out, c, windows, segments);
}

extern "C" __global__ void cuzk_g1_sum_partials(const g1_affine_t* points, const uint8_t* cls, g1_xyzz_t* out,
                                                uint32_t n, uint32_t chunk, uint32_t threads) {
    g1_sum_partials(points, cls, out, n, chunk, threads);
}

extern "C" __global__ void cuzk_g1_xyzz_sum_partials(const g1_xyzz_t* in, g1_xyzz_t* out, uint32_t n,
                                                     uint32_t chunk, uint32_t threads) {
    g1_xyzz_sum_partials(in, out, n, chunk, threads);
}

extern "C" __global__ void cuzk_g1_xyzz_to_jacobian(const g1_xyzz_t* in, g1_jacobian_t* out, uint32_t n) {
    g1_xyzz_to_jacobian(in, out, n);
}
