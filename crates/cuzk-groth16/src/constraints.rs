//! A circuit's constraints as a deferred witness carries them to the prover and the backends
//! ([`crate::PartitionWitness::deferred`]): counts, the matrices' arrays as a device copies
//! them, and their evaluation on the host. [`crate::compiled::CompiledCircuit`] implements
//! it; a module of its own, so that the witness and the backends name the constraints
//! without depending on the compiled module (which depends on the witness's).

use blstrs::Scalar;

/// One matrix's arrays ([`Constraints::parts`]): row i's terms are
/// `cols[start[i]..start[i + 1]]`, their coefficients `dictionary[coeffs[..]]`, where ids 0
/// and 1 are ONE and -ONE. Columns index z = inputs ++ aux.
#[derive(Clone, Copy, Debug)]
pub struct MatrixParts<'a> {
    pub start: &'a [u64],
    pub cols: &'a [u32],
    pub coeffs: &'a [u32],
}

/// The R1CS of a deferred witness.
pub trait Constraints: Send + Sync {
    /// Rows of A, B and C (the input constraints included).
    fn num_constraints(&self) -> usize;
    /// Inputs (ONE included) and aux variables.
    fn num_inputs(&self) -> usize;
    fn num_aux(&self) -> usize;
    /// A, B and C, and the coefficient dictionary.
    fn parts(&self) -> ([MatrixParts<'_>; 3], &[Scalar]);
    /// a, b and c at z = `inputs` ++ `aux` (with room for the H step's pad to the domain),
    /// and the first row with a * b != c: the reference every backend's evaluation equals.
    fn evaluate_checked(&self, inputs: &[Scalar], aux: &[Scalar]) -> ([Vec<Scalar>; 3], Option<usize>);
}
