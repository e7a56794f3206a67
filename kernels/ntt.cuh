// NTT over Fr: Stockham autosort with radix-2^k passes (k stages each, k <= 4). A radix-R
// pass reads x[j + r n/R] and writes its DFT outputs to (j / Ns) * R Ns + j % Ns + r Ns, so
// natural order goes in and natural order comes out with no bit-reversal pass; two buffers
// alternate between passes.
// The coset shift (x_i *= g^i) is fused into the first pass and the final scaling
// (1/n, or g^-i / n for the coset inverse) into the last.
//
// Powers used for scaling come from two small tables: start * base^i is
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

// omega^e for e < n, from the table of omega^k for k < n/2 (omega^(n/2) = -1).
__device__ __forceinline__ fr_t twiddle_at(const fr_t* twiddles, uint32_t e, uint32_t half) {
    return e < half ? twiddles[e] : -twiddles[e - half];
}

// One radix-R Stockham pass, R = 2^LOG_R: stages s .. s + LOG_R - 1 at once (Ns = 2^s), so
// a transform of 2^log_n takes about log_n / LOG_R passes over memory. Thread j reads
// x[j + r m] (m = n / R, r < R), scales by the pass twiddles omega_{R Ns}^(r k) (k = j mod
// Ns), runs an R-point DFT in
// registers (decimation in frequency; its bit-reversed output order is resolved at compile
// time) and writes X_r to (j / Ns) R Ns + k + r Ns.
// twiddles[e] = omega^e for e < n/2. `pre` scales the inputs (first pass only), `post` the
// outputs (last pass only); a null `hi` means no scaling.
template <int LOG_R>
__device__ __forceinline__ void fr_ntt_pass(const fr_t* __restrict__ in, fr_t* __restrict__ out,
                                            const fr_t* __restrict__ twiddles, uint32_t log_n, uint32_t s,
                                            power_table pre, power_table post) {
    constexpr int R = 1 << LOG_R;
    const uint32_t m = 1u << (log_n - LOG_R), half = 1u << (log_n - 1);
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    fr_t v[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        v[r] = in[j + r * m];
        if (pre.hi != nullptr) v[r] = v[r] * pre.at(j + r * m);
    }
    const uint32_t ns = 1u << s;
    const uint32_t k = j & (ns - 1);
    if (k != 0) {
        // Loaded rather than built by multiplication: the passes are bound by multiplications.
        const uint32_t e = k << (log_n - LOG_R - s);
#pragma unroll
        for (int r = 1; r < R; r++) v[r] = v[r] * twiddle_at(twiddles, r * e, half);
    }
    // R-point DFT with root omega^(n/R): DIF butterflies, twiddle omega^(jj n / 2h).
#pragma unroll
    for (int h = R / 2; h >= 1; h /= 2) {
#pragma unroll
        for (int b = 0; b < R; b += 2 * h) {
#pragma unroll
            for (int jj = 0; jj < h; jj++) {
                fr_t u = v[b + jj], t = v[b + jj + h];
                v[b + jj] = u + t;
                v[b + jj + h] = jj == 0 ? u - t : (u - t) * twiddles[(uint32_t)jj << (log_n - 1) >> (31 - __clz(h))];
            }
        }
    }
    const uint32_t idx = ((j >> s) << (s + LOG_R)) + k;
#pragma unroll
    for (int r = 0; r < R; r++) {
        // output r sits in register bitrev(r)
        int br = 0;
#pragma unroll
        for (int bit = 0; bit < LOG_R; bit++) br |= ((r >> bit) & 1) << (LOG_R - 1 - bit);
        fr_t x = v[br];
        if (post.hi != nullptr) x = x * post.at(idx + r * ns);
        out[idx + r * ns] = x;
    }
}

// The H step on the coset: a = (a * b - c) * z_inv pointwise.
__device__ __forceinline__ void fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c,
                                                  const fr_t* z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv[0];
}

} // namespace cuzk
