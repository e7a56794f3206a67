// NTT over Fr: Stockham autosort, radix-4 passes (two stages each) and one radix-2 pass
// when log n is odd. A radix-R pass reads x[j + r n/R] and writes its butterfly to
// (j / Ns) * R Ns + j % Ns + r Ns, so natural order goes in and natural order comes out with
// no bit-reversal pass; two buffers alternate between passes.
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

// omega^e for e < n, from the table of omega^k for k < n/2 (omega^(n/2) = -1).
__device__ __forceinline__ fr_t twiddle_at(const fr_t* twiddles, uint32_t e, uint32_t half) {
    return e < half ? twiddles[e] : -twiddles[e - half];
}

// One radix-4 Stockham pass: stages s and s + 1 at once (Ns = 2^s), half the memory traffic
// of two radix-2 passes for the same multiplications. Reads x[j + r n/4], r < 4, applies
// the twiddles omega_{4Ns}^(r k), a 4-point DFT, and writes (j / Ns) * 4Ns + k + r Ns.
__device__ __forceinline__ void fr_ntt_radix4_pass(const fr_t* __restrict__ in, fr_t* __restrict__ out,
                                                   const fr_t* __restrict__ twiddles, uint32_t log_n,
                                                   uint32_t s, power_table pre, power_table post) {
    const uint32_t quarter = 1u << (log_n - 2), half = quarter << 1;
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= quarter) return;
    fr_t v[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        v[r] = in[j + r * quarter];
        if (pre.hi != nullptr) v[r] = v[r] * pre.at(j + r * quarter);
    }
    const uint32_t ns = 1u << s;
    const uint32_t k = j & (ns - 1);
    if (k != 0) {
        const uint32_t e = k << (log_n - 2 - s);
        v[1] = v[1] * twiddle_at(twiddles, e, half);
        v[2] = v[2] * twiddle_at(twiddles, 2 * e, half);
        v[3] = v[3] * twiddle_at(twiddles, 3 * e, half);
    }
    const fr_t w4 = twiddles[quarter];  // a primitive 4th root of unity in this direction
    fr_t t0 = v[0] + v[2], t1 = v[0] - v[2], t2 = v[1] + v[3], t3 = (v[1] - v[3]) * w4;
    v[0] = t0 + t2;
    v[1] = t1 + t3;
    v[2] = t0 - t2;
    v[3] = t1 - t3;
    const uint32_t idx = ((j >> s) << (s + 2)) + k;
#pragma unroll
    for (int r = 0; r < 4; r++) {
        if (post.hi != nullptr) v[r] = v[r] * post.at(idx + r * ns);
        out[idx + r * ns] = v[r];
    }
}

// The H step on the coset: a = (a * b - c) * z_inv pointwise.
__device__ __forceinline__ void fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c,
                                                  const fr_t* z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv[0];
}

} // namespace cuzk
