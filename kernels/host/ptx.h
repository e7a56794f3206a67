// ptx.cuh's carry-chain primitives in portable C++ for the host build (CUZK_HOST_BUILD): the
// carry flag is a thread-local variable that each primitive reads and sets as its PTX
// instruction does.
#pragma once
#include <cstdint>

namespace cuzk {
namespace ptx {

inline thread_local uint32_t carry = 0;

inline uint32_t add_cc(uint32_t a, uint32_t b) { uint64_t r = (uint64_t)a + b; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t addc_cc(uint32_t a, uint32_t b) { uint64_t r = (uint64_t)a + b + carry; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t addc(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a + b + carry); }
inline uint32_t sub_cc(uint32_t a, uint32_t b) { uint64_t r = (uint64_t)a - b; carry = (uint32_t)(r >> 32) & 1; return (uint32_t)r; }
inline uint32_t subc_cc(uint32_t a, uint32_t b) { uint64_t r = (uint64_t)a - b - carry; carry = (uint32_t)(r >> 32) & 1; return (uint32_t)r; }
inline uint32_t subc(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a - b - carry); }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t r = (uint64_t)(uint32_t)((uint64_t)a * b) + c; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t r = (uint64_t)(uint32_t)((uint64_t)a * b) + c + carry; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t r = (((uint64_t)a * b) >> 32) + c; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t r = (((uint64_t)a * b) >> 32) + c + carry; carry = (uint32_t)(r >> 32); return (uint32_t)r; }
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { return (uint32_t)((((uint64_t)a * b) >> 32) + c + carry); }

} // namespace ptx
} // namespace cuzk
