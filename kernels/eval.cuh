// A compiled circuit's constraints evaluated on the device: a = A z, b = B z, c = C z over Fr
// (sparse matrix-vector products, one thread per row), and the first row where a * b != c.
//
// The matrices come as cuzk_groth16::compiled::CompiledCircuit::parts gives them: per matrix
// the row starts (rows + 1 of them, u32 here: the host checks that the terms fit), the
// columns of z = inputs ++ aux and the coefficient ids of the terms. Id 0 is +1 and id 1 is
// -1, which are added and subtracted without a product; any other id names
// dictionary[id]. The CPU reference is CompiledCircuit::evaluate_checked. Every field
// operation returns a fully reduced value, so a, b and c are the CPU's bytes exactly
// (Montgomery form, blstrs Scalar layout), and first_bad is the same row.
#pragma once
#include "bls12_381.cuh"

namespace cuzk {

// Coefficient ids with a path of their own (the recording's COEFF_ONE and COEFF_MINUS_ONE).
constexpr uint32_t EVAL_COEFF_ONE = 0;
constexpr uint32_t EVAL_COEFF_MINUS_ONE = 1;

// Row `row` of one matrix at z. A general coefficient is multiplied only into a value that is
// neither 0 nor 1, as on the CPU: most of a witness is bits, and a comparison of limbs costs a
// fraction of a Montgomery product. The sum is the same either way.
__device__ __forceinline__ fr_t fr_eval_row(const uint32_t* start, const uint32_t* cols, const uint32_t* coeffs,
                                            const fr_t* dictionary, const fr_t* z, uint32_t row) {
    const uint32_t lo = start[row], hi = start[row + 1];
    fr_t acc = fr_t::zero();
    for (uint32_t t = lo; t < hi; t++) {
        const fr_t v = z[cols[t]];
        const uint32_t id = coeffs[t];
        if (id == EVAL_COEFF_ONE) {
            acc = acc + v;
        } else if (id == EVAL_COEFF_MINUS_ONE) {
            acc = acc - v;
        } else if (v.is_zero()) {
            // 0 * k adds nothing.
        } else if (v == fr_t::one()) {
            acc = acc + dictionary[id];
        } else {
            acc = acc + v * dictionary[id];
        }
    }
    return acc;
}

// One thread per row: a[row], b[row] and c[row], and row into *first_bad (set to 0xFFFFFFFF by
// the host before the launch) when a * b != c there. atomicMin makes the result the first such
// row whatever order the threads run in.
__device__ __forceinline__ void fr_eval_constraints(const uint32_t* a_start, const uint32_t* a_cols,
                                                    const uint32_t* a_coeffs, const uint32_t* b_start,
                                                    const uint32_t* b_cols, const uint32_t* b_coeffs,
                                                    const uint32_t* c_start, const uint32_t* c_cols,
                                                    const uint32_t* c_coeffs, const fr_t* dictionary, const fr_t* z,
                                                    uint32_t rows, fr_t* a, fr_t* b, fr_t* c, uint32_t* first_bad) {
    // In 64 bits, so that the last block of a launch near 2^32 rows cannot wrap around.
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const uint32_t row = (uint32_t)i;
    const fr_t va = fr_eval_row(a_start, a_cols, a_coeffs, dictionary, z, row);
    const fr_t vb = fr_eval_row(b_start, b_cols, b_coeffs, dictionary, z, row);
    const fr_t vc = fr_eval_row(c_start, c_cols, c_coeffs, dictionary, z, row);
    a[row] = va;
    b[row] = vb;
    c[row] = vc;
    if (va * vb != vc) atomicMin(first_bad, row);
}

} // namespace cuzk
