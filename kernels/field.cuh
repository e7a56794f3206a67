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
#pragma once
#include "ptx.cuh"

namespace cuzk {

template <class P>
struct mont_t {
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

    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t t;
        t.v[0] = ptx::add_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = ptx::addc_cc(a.v[i], b.v[i]);
        return reduce_once(t);  // no carry out: a + b < 2p < 2^(32N)
    }

    __device__ __forceinline__ friend mont_t operator-(const mont_t& a, const mont_t& b) {
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

    // CIOS Montgomery product: a * b / 2^(32N) mod p. Per limb of b: accumulate a * b[i]
    // (low halves in one carry chain, high halves in a second), then add m * p with
    // m = t[0] * M0 so that the lowest word vanishes, and shift by one word. With a, b < p
    // the running value stays below 2p, so N + 1 words hold it.
    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 1];
#pragma unroll
        for (int i = 0; i <= N; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            // t += a * bi
            t[0] = ptx::mad_lo_cc(a.v[0], bi, t[0]);
#pragma unroll
            for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(a.v[j], bi, t[j]);
            t[N] = ptx::addc(t[N], 0);
            t[1] = ptx::mad_hi_cc(a.v[0], bi, t[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(a.v[j], bi, t[j + 1]);
            t[N] = ptx::madc_hi(a.v[N - 1], bi, t[N]);
            // t += m * p, then t >>= 32
            const uint32_t m = t[0] * P::M0;
            t[0] = ptx::mad_lo_cc(m, P::p(0), t[0]);
#pragma unroll
            for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(m, P::p(j), t[j]);
            t[N] = ptx::addc(t[N], 0);
            t[1] = ptx::mad_hi_cc(m, P::p(0), t[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(m, P::p(j), t[j + 1]);
            t[N] = ptx::madc_hi(m, P::p(N - 1), t[N]);
#pragma unroll
            for (int j = 0; j < N; j++) t[j] = t[j + 1];
            t[N] = 0;
        }
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = t[i];
        return reduce_once(r);
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
