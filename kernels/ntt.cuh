// NTT over Fr: radix-2 Stockham autosort. Each pass reads x[j] and x[j + n/2] and writes
// the butterfly to positions (j / Ns) * 2Ns + j % Ns and + Ns, so natural order goes in and
// natural order comes out with no bit-reversal pass; buffers alternate between passes.
// The coset shift (x_i *= g^i) is fused into the first pass and the final scaling
// (1/n, or g^-i / n for the coset inverse) into the last.
//
// Powers used for scaling come from two small tables: base^i = start * base^i is
// hi[i >> lo_bits] * lo[i & lo_mask] (lo already carries the constant factor), so an
// arbitrary size needs only about 2 * sqrt(n) precomputed elements.
#pragma once
#include "bls12_381.cuh"

namespace cuzk {

struct power_table {
    const fr_t* hi;
    const fr_t* lo;
    uint32_t lo_bits;
    uint32_t lo_mask;
    __device__ __forceinline__ fr_t at(uint32_t i) const { return hi[i >> lo_bits] * lo[i & lo_mask]; }
};

// out[i] = hi[i >> lo_bits] * lo[i & lo_mask], i < n: the full twiddle table.
__device__ __forceinline__ void fr_power_table_expand(fr_t* out, power_table t, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = t.at(i);
}

// One radix-2 Stockham pass (stage s, Ns = 2^s) over n = 2^log_n elements.
// twiddles[k] = omega^k for k < n/2. `pre` scales the inputs (first pass only), `post` the
// outputs (last pass only); a null `hi` means no scaling.
__device__ __forceinline__ void fr_ntt_radix2_pass(const fr_t* __restrict__ in, fr_t* __restrict__ out,
                                                   const fr_t* __restrict__ twiddles, uint32_t log_n,
                                                   uint32_t s, power_table pre, power_table post) {
    const uint32_t half = 1u << (log_n - 1);
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= half) return;
    fr_t a = in[j], b = in[j + half];
    if (pre.hi != nullptr) {
        a = a * pre.at(j);
        b = b * pre.at(j + half);
    }
    const uint32_t ns = 1u << s;
    const uint32_t k = j & (ns - 1);
    if (k != 0) b = b * twiddles[k << (log_n - 1 - s)];
    const uint32_t idx = ((j >> s) << (s + 1)) + k;
    fr_t x = a + b, y = a - b;
    if (post.hi != nullptr) {
        x = x * post.at(idx);
        y = y * post.at(idx + ns);
    }
    out[idx] = x;
    out[idx + ns] = y;
}

// The H step on the coset: a = (a * b - c) * z_inv pointwise.
__device__ __forceinline__ void fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c,
                                                  const fr_t* z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv[0];
}

} // namespace cuzk
