// Montgomery arithmetic over a prime modulus, written once for every field.
//
// `mont_t<P>` holds an element in Montgomery form (a * 2^(32N) mod p) as N little-endian
// 32-bit limbs, exactly the memory layout of blst's 64-bit limbs on a little-endian machine,
// so blstrs `Scalar` / `Fp` arrays are used on the device as they are.
//
// `P` is a parameter struct (see bls12_381.cuh) with:
//   static constexpr int N;          number of 32-bit limbs
//   static constexpr uint32_t M0;    -p^-1 mod 2^32
//   __device__ static uint32_t p(int i), one(int i);   limbs of p and of R mod p
// Requirement (checked at compile time through P::SPARE_BITS): 2p < 2^(32N), so sums and the
// Montgomery product stay within N limbs plus one carry word.
//
// Every operation returns a fully reduced value in [0, p): equal elements have equal limbs,
// which is what makes results byte-identical with the CPU backend.
//
// With CUZK_HOST_BUILD defined the headers compile as plain C++ for the host (host/README.md).
#pragma once
#ifdef CUZK_HOST_BUILD
#include "host/shim.h"
#include "host/ptx.h"
#else
#include "ptx.cuh"
#endif

namespace cuzk {

template <class P>
struct alignas(16) mont_t {
    static constexpr int N = P::N;
    static_assert(P::SPARE_BITS >= 1, "the modulus needs a spare top bit");
    uint32_t v[N];

    __device__ __forceinline__ static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ __forceinline__ static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const mont_t& b) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator!=(const mont_t& b) const { return !(*this == b); }

    // t - p if t >= p, else t (t < 2p).
    __device__ __forceinline__ static mont_t reduce_once(const mont_t& t) {
        mont_t s;
        s.v[0] = ptx::sub_cc(t.v[0], P::p(0));
#pragma unroll
        for (int i = 1; i < N; i++) s.v[i] = ptx::subc_cc(t.v[i], P::p(i));
        uint32_t borrow = ptx::subc(0, 0);  // 0xffffffff when t < p
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = (t.v[i] & borrow) | (s.v[i] & ~borrow);
        return r;
    }

    __device__ __forceinline__ friend mont_t operator+(const mont_t a, const mont_t b) {
        mont_t t;
        t.v[0] = ptx::add_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = ptx::addc_cc(a.v[i], b.v[i]);
        return reduce_once(t);  // no carry out: a + b < 2p < 2^(32N)
    }

    __device__ __forceinline__ friend mont_t operator-(const mont_t a, const mont_t b) {
        mont_t t;
        t.v[0] = ptx::sub_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = ptx::subc_cc(a.v[i], b.v[i]);
        uint32_t borrow = ptx::subc(0, 0);
        mont_t r;
        r.v[0] = ptx::add_cc(t.v[0], P::p(0) & borrow);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::addc_cc(t.v[i], P::p(i) & borrow);
        return r;
    }

    __device__ __forceinline__ mont_t operator-() const { return zero() - *this; }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }

    // Montgomery product a * b / 2^(32N) mod p, operand scanning with the partial products
    // split by the parity of a's limb index. Products a[j] * b[i] with j even land on the
    // word pairs (0,1), (2,3), ... of one accumulator `e`; those with j odd on the pairs of a
    // second accumulator `o` that sits one word higher, so within either accumulator no two
    // products of a row overlap and each product is a lo/hi pair of adjacent words in ONE
    // carry chain (mad.lo.cc then madc.hi.cc), which ptxas issues as a single 64-bit
    // multiply-add with carry (IMAD.WIDE.U32.X) instead of two 32-bit ones.
    //
    // Value held: T = e + 2^32 * o (e: N + 1 words, o: N words). Per limb b[i]:
    //   T += a * b[i];  m = e[0] * M0 (T's lowest word is e[0]);  T += m * p;  T /= 2^32.
    // After the reduction e[0] = 0 and T / 2^32 = e[1..N] + o[0..N-1], both now at word 0.
    // Instead of adding them, the next row re-splits: the new e is o with e[1] added to its
    // lowest word, and the new o (one word up) is e[2..N]; the carry of that one-word add sits
    // at word 1, which is exactly where the new o starts, so it enters o's product chain as
    // its carry-in. Only after the last row are the two accumulators added.
    //
    // Bounds (a, b < p, 2p < 2^(32N)): as in CIOS, T < 2p at the start of a row and below
    // 2p * 2^32 < 2^(32(N+1)) before the shift, at every step of it, since every term is
    // non-negative. So e < 2^(32(N+1)) fits N + 1 words and 2^32 * o <= T gives o < 2^(32N):
    // the chains into o never carry out of its top word, and the final sum is below 2p.
    __device__ __forceinline__ friend mont_t operator*(const mont_t a, const mont_t b) {
        static_assert(N % 2 == 0, "the even/odd product needs an even limb count");
        uint32_t e[N + 1], o[N];
        // Row 0: the accumulators are empty, so the products only need placing (no overlap).
        {
            const uint32_t b0 = b.v[0];
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                const uint64_t w = (uint64_t)a.v[j] * b0;
                e[j] = (uint32_t)w;
                e[j + 1] = (uint32_t)(w >> 32);
                const uint64_t x = (uint64_t)a.v[j + 1] * b0;
                o[j] = (uint32_t)x;
                o[j + 1] = (uint32_t)(x >> 32);
            }
            e[N] = 0;
            reduce_row(e, o);
        }
#pragma unroll
        for (int i = 1; i < N; i++) {
            const uint32_t bi = b.v[i];
            uint32_t ne[N + 1], no[N];
            // new e = o + e[1] (word 0); its carry goes to word 1 = new o's first word.
            ne[0] = ptx::add_cc(o[0], e[1]);
            // new o = e[2..N] + odd products (one word up), carry-in from the add above.
#pragma unroll
            for (int j = 1; j < N - 1; j += 2) {
                no[j - 1] = ptx::madc_lo_cc(a.v[j], bi, e[j + 1]);
                no[j] = ptx::madc_hi_cc(a.v[j], bi, e[j + 2]);
            }
            no[N - 2] = ptx::madc_lo_cc(a.v[N - 1], bi, e[N]);
            no[N - 1] = ptx::madc_hi(a.v[N - 1], bi, 0);  // o < 2^(32N): no carry out
            // new e += even products.
            ne[0] = ptx::mad_lo_cc(a.v[0], bi, ne[0]);
            ne[1] = ptx::madc_hi_cc(a.v[0], bi, o[1]);
#pragma unroll
            for (int j = 2; j < N; j += 2) {
                ne[j] = ptx::madc_lo_cc(a.v[j], bi, o[j]);
                ne[j + 1] = ptx::madc_hi_cc(a.v[j], bi, o[j + 1]);
            }
            ne[N] = ptx::addc(0, 0);
#pragma unroll
            for (int j = 0; j < N; j++) { e[j] = ne[j]; o[j] = no[j]; }
            e[N] = ne[N];
            reduce_row(e, o);
        }
        // T / 2^32 = e[1..N] + o[0..N-1] < 2p.
        mont_t r;
        r.v[0] = ptx::add_cc(e[1], o[0]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) r.v[j] = ptx::addc_cc(e[j + 1], o[j]);
        r.v[N - 1] = ptx::addc(e[N], o[N - 1]);
        return reduce_once(r);
    }

    // T += m * p with m = e[0] * M0, which clears e[0] (T's lowest word).
    __device__ __forceinline__ static void reduce_row(uint32_t (&e)[N + 1], uint32_t (&o)[N]) {
        const uint32_t m = e[0] * P::M0;
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            e[j] = j == 0 ? ptx::mad_lo_cc(m, P::p(0), e[0]) : ptx::madc_lo_cc(m, P::p(j), e[j]);
            e[j + 1] = ptx::madc_hi_cc(m, P::p(j), e[j + 1]);
        }
        e[N] = ptx::addc(e[N], 0);
        o[0] = ptx::mad_lo_cc(m, P::p(1), o[0]);
        o[1] = ptx::madc_hi_cc(m, P::p(1), o[1]);
#pragma unroll
        for (int j = 3; j < N - 1; j += 2) {
            o[j - 1] = ptx::madc_lo_cc(m, P::p(j), o[j - 1]);
            o[j] = ptx::madc_hi_cc(m, P::p(j), o[j]);
        }
        o[N - 2] = ptx::madc_lo_cc(m, P::p(N - 1), o[N - 2]);
        o[N - 1] = ptx::madc_hi(m, P::p(N - 1), o[N - 1]);  // o < 2^(32N): no carry out
    }

    __device__ __forceinline__ mont_t sqr() const { return *this * *this; }

    // Out of Montgomery form: a / 2^(32N), the canonical little-endian integer.
    __device__ __forceinline__ mont_t from_mont() const {
        mont_t one_int = zero();
        one_int.v[0] = 1;
        return *this * one_int;
    }
};

} // namespace cuzk
