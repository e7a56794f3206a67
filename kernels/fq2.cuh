// Quadratic extension F[u] / (u^2 + 1) over any mont_t field (BLS12-381's Fq2).
// Layout {c0, c1}, as blst_fp2.
#pragma once

namespace cuzk {

template <class F>
struct fp2_t {
    F c0, c1;

    __device__ __forceinline__ static fp2_t zero() { return {F::zero(), F::zero()}; }
    __device__ __forceinline__ static fp2_t one() { return {F::one(), F::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const fp2_t& b) const { return c0 == b.c0 && c1 == b.c1; }
    __device__ __forceinline__ bool operator!=(const fp2_t& b) const { return !(*this == b); }
    __device__ __forceinline__ friend fp2_t operator+(const fp2_t& a, const fp2_t& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
    __device__ __forceinline__ friend fp2_t operator-(const fp2_t& a, const fp2_t& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
    __device__ __forceinline__ fp2_t operator-() const { return {-c0, -c1}; }
    __device__ __forceinline__ fp2_t dbl() const { return {c0.dbl(), c1.dbl()}; }
    // Karatsuba: three base-field products. Not inlined: inlining the Fq2 product into the
    // G2 point formulas made the G2 kernels about 10x slower to compile (11 minutes per
    // architecture) and spill more; a call per product costs little next to its three
    // Fq products.
    __device__ __noinline__ friend fp2_t operator*(const fp2_t& a, const fp2_t& b) {
        F t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
        F t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }
    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u
    __device__ __noinline__ fp2_t sqr() const {
        F t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }
};

} // namespace cuzk
