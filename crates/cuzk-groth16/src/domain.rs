//! The evaluation domain of the QAP: its size, its roots of unity and the coset the H step
//! divides on. Plain field arithmetic that the backends, the prover, the parameter setup and
//! the allocator's padding share.

use blstrs::Scalar;
use ff::{Field, PrimeField};

/// The evaluation domain of `constraints` constraints (a, b and c padded with zeros to it):
/// the next power of two, at least 1.
pub fn domain_size(constraints: usize) -> usize {
    constraints.next_power_of_two()
}

/// The primitive n-th root of unity bellperson's `EvaluationDomain` uses for size 2^log_n.
pub fn root_of_unity(log_n: u32) -> Scalar {
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    omega
}

/// The coset shift g (Fr's multiplicative generator, 7).
pub fn coset_generator() -> Scalar {
    Scalar::MULTIPLICATIVE_GENERATOR
}

/// 1 / Z(g) = 1 / (g^n - 1): the constant the coset quotient multiplies by.
pub fn vanishing_inverse_on_coset(n: usize) -> Scalar {
    let z = coset_generator().pow_vartime([n as u64]) - Scalar::ONE;
    Option::from(z.invert()).expect("g^n - 1 is non-zero for the multiplicative generator")
}
