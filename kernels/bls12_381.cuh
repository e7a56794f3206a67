// BLS12-381 constants: the two moduli in 32-bit little-endian limbs, R mod p (Montgomery
// one) and -p^-1 mod 2^32. Everything curve-specific the kernels need lives here.
#pragma once
#include "field.cuh"

namespace cuzk {

// Scalar field r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001 (255 bits)
__device__ __constant__ const uint32_t FR_P[8] = {
    0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402, 0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
__device__ __constant__ const uint32_t FR_ONE[8] = {
    0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa, 0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};

// Base field p = 0x1a0111ea...ffffaaab (381 bits)
__device__ __constant__ const uint32_t FQ_P[12] = {
    0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
    0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__device__ __constant__ const uint32_t FQ_ONE[12] = {
    0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b, 0x53c758ba, 0x5f489857,
    0x70525745, 0x77ce5853, 0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};

struct fr_params {
    static constexpr int N = 8;
    static constexpr int SPARE_BITS = 1;
    static constexpr uint32_t M0 = 0xffffffffu;
    __device__ __forceinline__ static uint32_t p(int i) { return FR_P[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return FR_ONE[i]; }
};

struct fq_params {
    static constexpr int N = 12;
    static constexpr int SPARE_BITS = 3;
    static constexpr uint32_t M0 = 0xfffcfffdu;
    __device__ __forceinline__ static uint32_t p(int i) { return FQ_P[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return FQ_ONE[i]; }
};

typedef mont_t<fr_params> fr_t;
typedef mont_t<fq_params> fq_t;

} // namespace cuzk

#include "fq2.cuh"
#include "curve.cuh"

namespace cuzk {
typedef fp2_t<fq_t> fq2_t;         // Fq2 = Fq[u] / (u^2 + 1)
typedef affine_t<fq_t> g1_affine_t; // blst_p1_affine layout
typedef xyzz_t<fq_t> g1_xyzz_t;
typedef jacobian_t<fq_t> g1_jacobian_t; // blst_p1 layout
typedef affine_t<fq2_t> g2_affine_t; // blst_p2_affine layout
typedef xyzz_t<fq2_t> g2_xyzz_t;
} // namespace cuzk
