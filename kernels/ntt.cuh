// NTT over Fr: Stockham autosort with radix-2^k passes: in registers (k <= 4, fr_ntt_pass)
// or, the default, up to 9 stages per pass through shared memory (fr_ntt_fused). A radix-R
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

// Several stages per pass through shared memory. A group of t consecutive stages s0 ..
// s0 + t - 1 is the radix-2^t Stockham pass above (R = 2^t): for each j < m = n / R, the
// R inputs x[j + u m] are scaled by omega_{R Ns0}^(u k) (k = j mod Ns0), an R-point DFT
// with root omega^(n/R) runs over u, and output v goes to (j / Ns0) R Ns0 + k + v Ns0.
// Here the R-point DFT runs in shared memory as its own Stockham chain (a radix-2 stage
// first when t is odd, then radix-4 stages), so a transform of 2^27 takes three passes
// over global memory instead of fourteen. A block holds J = 4 blockDim / R consecutive j
// (columns, each padded by one element against bank conflicts); every thread owns four
// elements of the tile. Requires 2 <= t <= 10 and blockDim * 4 = J R <= 1024.
constexpr uint32_t NTT_FUSED_TILE = 1024;

// 4-point DFT with root w4 (natural order in and out).
__device__ __forceinline__ void fr_dft4(fr_t (&v)[4], const fr_t& w4) {
    const fr_t a0 = v[0] + v[2], a2 = v[0] - v[2];
    const fr_t a1 = v[1] + v[3], a3 = (v[1] - v[3]) * w4;
    v[0] = a0 + a1;
    v[2] = a0 - a1;
    v[1] = a2 + a3;
    v[3] = a2 - a3;
}

__device__ __forceinline__ void fr_ntt_fused(const fr_t* __restrict__ in, fr_t* __restrict__ out,
                                             const fr_t* __restrict__ twiddles, uint32_t log_n, uint32_t s0,
                                             uint32_t t, power_table pre, power_table post) {
    __shared__ fr_t tile[NTT_FUSED_TILE + NTT_FUSED_TILE / 4];
    const uint32_t nt = blockDim.x, tid = threadIdx.x;
    const uint32_t log_j = (31 - __clz(nt * 4)) - t;
    const uint32_t jmask = (1u << log_j) - 1;
    const uint32_t R = 1u << t, stride = R + 1;  // column c starts at c * stride
    const uint32_t half = 1u << (log_n - 1);
    const uint32_t kmask = (1u << s0) - 1;
    const uint32_t j0 = blockIdx.x << log_j;
    const uint32_t tw_shift = log_n - t - s0;

    // Load: element (c, u) = x[j0 + c + u m], c fastest across threads.
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t e = tid + i * nt, c = e & jmask, u = e >> log_j;
        const uint32_t j = j0 + c, gi = j + (u << (log_n - t));
        fr_t x = in[gi];
        if (pre.hi != nullptr) x = x * pre.at(gi);
        const uint32_t k = j & kmask;
        if (k != 0 && u != 0) x = x * twiddle_at(twiddles, (u * k) << tw_shift, half);
        tile[c * stride + u] = x;
    }
    __syncthreads();

    const fr_t w4 = twiddles[1u << (log_n - 2)];
    uint32_t sl = 0;
    if (t & 1) {
        // Local stage 0, radix 2 (no twiddles): two butterflies per thread.
        fr_t a[2], b[2];
        uint32_t base[2], jl[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint32_t idx = tid + i * nt;
            jl[i] = idx & (R / 2 - 1);
            base[i] = (idx >> (t - 1)) * stride;
            a[i] = tile[base[i] + jl[i]];
            b[i] = tile[base[i] + jl[i] + R / 2];
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < 2; i++) {
            tile[base[i] + 2 * jl[i]] = a[i] + b[i];
            tile[base[i] + 2 * jl[i] + 1] = a[i] - b[i];
        }
        __syncthreads();
        sl = 1;
    }
    {
        const uint32_t jl = tid & (R / 4 - 1), base = (tid >> (t - 2)) * stride;
        for (; sl < t; sl += 2) {
            // Local stage sl, radix 4: inputs jl + r R/4, twiddles omega_{4 ns}^(r kl).
            fr_t v[4];
#pragma unroll
            for (int r = 0; r < 4; r++) v[r] = tile[base + jl + r * (R / 4)];
            const uint32_t ns = 1u << sl, kl = jl & (ns - 1);
            if (kl != 0) {
                const uint32_t e = kl << (log_n - 2 - sl);
#pragma unroll
                for (int r = 1; r < 4; r++) v[r] = v[r] * twiddle_at(twiddles, r * e, half);
            }
            fr_dft4(v, w4);
            __syncthreads();
            const uint32_t o = ((jl >> sl) << (sl + 2)) + kl;
#pragma unroll
            for (int r = 0; r < 4; r++) tile[base + o + r * ns] = v[r];
            __syncthreads();
        }
    }

    // Store: output v of column c to (j / Ns0) R Ns0 + k + v Ns0.
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t e = tid + i * nt, c = e & jmask, v = e >> log_j;
        const uint32_t j = j0 + c, k = j & kmask;
        const uint32_t gi = ((j >> s0) << (s0 + t)) + k + (v << s0);
        fr_t x = tile[c * stride + v];
        if (post.hi != nullptr) x = x * post.at(gi);
        out[gi] = x;
    }
}

// The H step on the coset: a = (a * b - c) * z_inv pointwise.
__device__ __forceinline__ void fr_coset_quotient(fr_t* a, const fr_t* b, const fr_t* c,
                                                  const fr_t* z_inv, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv[0];
}

} // namespace cuzk
