//! Pre-compiled constraints: a circuit's R1CS recorded once, so that each later proof runs
//! the circuit only for its variable assignments and gets a, b and c as sparse
//! matrix-vector products.
//!
//! - [`RecordingCs`] records assignments and the A, B and C rows of every constraint:
//!   [`compile`], or [`compile_pieces`] for a circuit given as parts recorded in parallel.
//! - [`WitnessOnlyCs`] records assignments only. Its `enforce` never calls the closures that
//!   build linear combinations, which is where most of the synthesis time goes. It reports
//!   itself a witness generator (`is_witness_generator`) and takes aux values in blocks
//!   (`allocate_empty`, `extend_aux`), so that gadgets with a native witness path (the
//!   PoRep labels' SHA-256 in cuzk-filecoin) take that path; a [`RecordingCs`] does not, so
//!   it records the gadgets' own constraints.
//! - [`CompiledCircuit::witness`] turns assignments into a [`PartitionWitness`] equal to
//!   `WitnessCs`'s: a, b, c evaluated row by row in parallel, densities taken from the
//!   recorded structure. A recording makes its own witness the same way, so the recorded
//!   circuit and the witness it gives are one computation.
//! - A circuit given as parts ([`synthesize_compiled_pieces`]) whose recording was made of
//!   as many parts is written in place: each part, when done, copies its share of the
//!   assignments into the whole and evaluates its own rows there (`witness_in_place`), so
//!   no stage waits for the slowest part. Its large vectors are on huge pages
//!   ([`crate::hugepages`]).
//!
//! Architecture invariant: a compiled circuit is used only for a circuit of the same
//! structure. Filecoin's circuits do not change shape with their values, so one recording
//! serves every partition and sector of a proof type. [`synthesize_compiled`] refuses
//! assignments whose counts differ from the recording ([`CompiledMismatch`]), and the
//! prover's satisfaction check and the final verification stay behind it.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::collections::HashMap;

pub use crate::constraints::MatrixParts;
use crate::constraints::Constraints;
use crate::witness::{Density, PartitionWitness};
#[cfg(doc)]
use crate::witness::WitnessCs;

/// Coefficient ids with their own fast path.
const COEFF_ONE: u32 = 0;
const COEFF_MINUS_ONE: u32 = 1;
/// A column's tag while recording: set for inputs, clear for aux.
const INPUT_TAG: u32 = 1 << 31;

/// One matrix (A, B or C) in compressed rows: row i's terms are
/// `cols[start[i]..start[i + 1]]` with coefficients `coeffs[..]` (ids into the circuit's
/// dictionary). Columns index z = inputs ++ aux.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matrix {
    start: Vec<u64>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
}

impl Matrix {
    pub fn terms(&self) -> usize {
        self.cols.len()
    }

    fn bytes(&self) -> usize {
        self.start.len() * 8 + self.cols.len() * 4 + self.coeffs.len() * 4
    }
}

/// A circuit's constraints, recorded by [`compile`].
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledCircuit {
    /// Inputs (ONE included) and aux variables the circuit allocates.
    pub num_inputs: usize,
    pub num_aux: usize,
    pub a: Matrix,
    pub b: Matrix,
    pub c: Matrix,
    /// Distinct coefficients; ids 0 and 1 are ONE and -ONE.
    dictionary: Vec<Scalar>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// How the parts of the recording split the circuit (None: recorded whole).
    layout: Option<PartLayout>,
}

/// Inputs, aux variables and constraints: a part's own share, or a prefix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

/// How a recording's parts split the circuit: the common prefix that every part holds (its
/// inputs include ONE), and each part's own share in order (the first part's includes the
/// prefix). A later witness run with as many parts writes each part's aux and its rows of
/// a, b and c in place as soon as that part is done ([`witness_in_place`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct PartLayout {
    prefix: Counts,
    parts: Vec<Counts>,
}

impl PartLayout {
    /// Whether the shares add up to the circuit's counts (`constraints`: the circuit's own,
    /// without the input constraints) and the first part holds the prefix.
    fn fits(&self, inputs: usize, aux: usize, constraints: usize) -> bool {
        let sum = |f: fn(&Counts) -> usize| self.parts.iter().map(f).sum::<usize>();
        self.parts.first().is_some_and(|p| {
            p.inputs >= self.prefix.inputs && p.aux >= self.prefix.aux && p.constraints >= self.prefix.constraints
        }) && sum(|c| c.inputs) == inputs
            && sum(|c| c.aux) == aux
            && sum(|c| c.constraints) == constraints
    }

    /// Where each part's share starts in the whole.
    fn offsets(&self) -> Vec<Counts> {
        let mut at = Counts::default();
        self.parts
            .iter()
            .map(|p| {
                let here = at;
                at = Counts { inputs: at.inputs + p.inputs, aux: at.aux + p.aux, constraints: at.constraints + p.constraints };
                here
            })
            .collect()
    }
}

/// Whether a witness run whose parts match the recording's layout writes them in place (the
/// default, which won its measurement: bench/history/2026-12-02.md) or joins them first, as
/// a part whose counts differ from the layout does anyway. Only synth-bench turns it off
/// ([`set_in_place`]), to compare the two in one run.
static IN_PLACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Bench variant: parts joined before the products instead of written in place (see
/// [`IN_PLACE`]); a process-wide setting for synth-bench, never read from the environment.
pub fn set_in_place(on: bool) {
    IN_PLACE.store(on, std::sync::atomic::Ordering::Relaxed)
}

/// The values of z = inputs ++ aux that a row may read.
trait Values {
    fn value(&self, col: usize) -> Option<&Scalar>;
}

/// The whole circuit's assignments.
struct Whole<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
}

impl Values for Whole<'_> {
    #[inline]
    fn value(&self, c: usize) -> Option<&Scalar> {
        let ni = self.inputs.len();
        Some(if c < ni { &self.inputs[c] } else { &self.aux[c - ni] })
    }
}

/// One part's own assignments, read at the whole circuit's columns: the prefix, and the
/// part's share (at `to` in the whole, at `from` in the part). Any other column is not
/// the part's (None).
struct PartView<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
    num_inputs: usize,
    prefix: Counts,
    from: Counts,
    to: Counts,
    own: Counts,
}

impl Values for PartView<'_> {
    #[inline]
    fn value(&self, c: usize) -> Option<&Scalar> {
        #[inline]
        fn local(i: usize, prefix: usize, to: usize, own: usize, from: usize) -> Option<usize> {
            if i < prefix {
                Some(i)
            } else if i >= to && i - to < own {
                Some(i - to + from)
            } else {
                None
            }
        }
        if c < self.num_inputs {
            self.inputs.get(local(c, self.prefix.inputs, self.to.inputs, self.own.inputs, self.from.inputs)?)
        } else {
            let a = c - self.num_inputs;
            self.aux.get(local(a, self.prefix.aux, self.to.aux, self.own.aux, self.from.aux)?)
        }
    }
}

/// One line for logs and benches: constraints, terms, coefficients, memory.
impl std::fmt::Display for CompiledCircuit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} constraints, {} + {} + {} terms, {} distinct coefficients, {:.1} MiB",
            self.num_constraints(),
            self.a.terms(),
            self.b.terms(),
            self.c.terms(),
            self.dictionary_len(),
            self.bytes() as f64 / (1u64 << 20) as f64
        )
    }
}

/// A witness run whose counts differ from its compiled circuit's: another circuit, or
/// another version of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the compiled circuit does not match this circuit: it has {want_inputs} inputs, \
     {want_aux} aux and {want_constraints} constraints, the circuit gave {inputs}, {aux} \
     and {constraints}"
)]
pub struct CompiledMismatch {
    pub want_inputs: usize,
    pub want_aux: usize,
    pub want_constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub constraints: usize,
}

impl CompiledCircuit {
    pub fn num_constraints(&self) -> usize {
        self.a.start.len().saturating_sub(1)
    }

    /// Bytes the matrices and dictionary take in memory.
    pub fn bytes(&self) -> usize {
        self.a.bytes() + self.b.bytes() + self.c.bytes() + self.dictionary.len() * 32
    }

    /// A copy with the same counts whose B rows are its A rows: what a corrupt recording
    /// looks like to its user (tests; a * a = c fails almost everywhere).
    pub fn perturbed(&self) -> CompiledCircuit {
        CompiledCircuit { b: self.a.clone(), ..self.clone() }
    }

    /// Whether `other` has the same constraints, counts and densities (however each was
    /// split into parts when it was recorded).
    pub fn same_constraints(&self, other: &CompiledCircuit) -> bool {
        CompiledCircuit { layout: None, ..self.clone() } == CompiledCircuit { layout: None, ..other.clone() }
    }

    /// Parts the recording was made of, when it was recorded in parts (a witness run with
    /// as many parts writes them in place).
    pub fn recorded_parts(&self) -> Option<usize> {
        self.layout.as_ref().map(|l| l.parts.len())
    }

    /// Distinct coefficients.
    pub fn dictionary_len(&self) -> usize {
        self.dictionary.len()
    }

    /// Row `row` of `m` at z = inputs ++ aux (read in place, never concatenated). A
    /// coefficient other than +-1 is multiplied only into a value that is neither 0 nor 1:
    /// most of a PoRep witness is bits (about 51% zeros and 47% ones in its aux), and a
    /// comparison of limbs costs a fraction of a Montgomery product.
    /// None when the row reads a column that `z` does not hold.
    #[inline]
    fn eval_row(&self, m: &Matrix, row: usize, z: &impl Values) -> Option<Scalar> {
        let (lo, hi) = (m.start[row] as usize, m.start[row + 1] as usize);
        let mut acc = Scalar::ZERO;
        for t in lo..hi {
            let v = z.value(m.cols[t] as usize)?;
            match m.coeffs[t] {
                COEFF_ONE => acc += v,
                COEFF_MINUS_ONE => acc -= v,
                _ if *v == Scalar::ZERO => {}
                id if *v == Scalar::ONE => acc += self.dictionary[id as usize],
                id => acc += *v * self.dictionary[id as usize],
            }
        }
        Some(acc)
    }

    /// Rows `first..first + a.len()` of A, B and C at `z` into `a`, `b` and `c`, in
    /// parallel; the first unsatisfied row lowers `first_bad`. False when some row reads a
    /// column outside `z` (that row is then left as zeros).
    fn eval_rows(
        &self,
        first: usize,
        z: &(impl Values + Sync),
        [a, b, c]: [&mut [std::mem::MaybeUninit<Scalar>]; 3],
        first_bad: &std::sync::atomic::AtomicUsize,
    ) -> bool {
        use std::sync::atomic::{AtomicBool, Ordering};
        const ROWS: usize = 1 << 12;
        let outside = AtomicBool::new(false);
        a.par_chunks_mut(ROWS).zip(b.par_chunks_mut(ROWS)).zip(c.par_chunks_mut(ROWS)).enumerate().for_each(
            |(k, ((pa, pb), pc))| {
                for j in 0..pa.len() {
                    let row = first + k * ROWS + j;
                    let (va, vb, vc) = match (
                        self.eval_row(&self.a, row, z),
                        self.eval_row(&self.b, row, z),
                        self.eval_row(&self.c, row, z),
                    ) {
                        (Some(va), Some(vb), Some(vc)) => (va, vb, vc),
                        _ => {
                            outside.store(true, Ordering::Relaxed);
                            (Scalar::ZERO, Scalar::ZERO, Scalar::ZERO)
                        }
                    };
                    if !Self::satisfied(&va, &vb, &vc) {
                        first_bad.fetch_min(row, Ordering::Relaxed);
                    }
                    pa[j].write(va);
                    pb[j].write(vb);
                    pc[j].write(vc);
                }
            },
        );
        !outside.into_inner()
    }

    /// Whether a * b == c, without a product where a or b is 0 or 1.
    #[inline]
    fn satisfied(a: &Scalar, b: &Scalar, c: &Scalar) -> bool {
        if *a == Scalar::ZERO || *b == Scalar::ZERO {
            *c == Scalar::ZERO
        } else if *a == Scalar::ONE {
            b == c
        } else if *b == Scalar::ONE {
            a == c
        } else {
            *a * b == *c
        }
    }

    /// The witness of these assignments: equal to what [`WitnessCs`] records for the same
    /// circuit and values.
    pub fn witness(&self, inputs: Vec<Scalar>, aux: Vec<Scalar>) -> PartitionWitness {
        self.witness_checked(inputs, aux).0
    }

    /// As [`CompiledCircuit::witness`], and the first constraint with a * b != c (as
    /// `PartitionWitness::first_unsatisfied` gives it), checked in the same pass over the
    /// rows. a, b and c are written once, in parallel, into vectors that were never
    /// zero-filled.
    pub fn witness_checked(&self, inputs: Vec<Scalar>, aux: Vec<Scalar>) -> (PartitionWitness, Option<usize>) {
        let (abc, bad) = self.evaluate_checked(&inputs, &aux);
        self.witness_of(inputs, aux, abc, bad.unwrap_or(usize::MAX))
    }

    /// a, b and c at z = `inputs` ++ `aux` (one value per row, with room for the H step's
    /// pad to the domain), and the first row with a * b != c (None: satisfied). What a
    /// backend computes for [`crate::Backend::h_msm_compiled`]; the GPU's kernel must equal
    /// it. Panics when the counts are not the circuit's (callers check them first).
    pub fn evaluate_checked(&self, inputs: &[Scalar], aux: &[Scalar]) -> ([Vec<Scalar>; 3], Option<usize>) {
        use std::sync::atomic::AtomicUsize;
        assert_eq!((inputs.len(), aux.len()), (self.num_inputs, self.num_aux));
        let n = self.num_constraints();
        let first_bad = AtomicUsize::new(usize::MAX);
        let abc = par_build_n(&[n], crate::hugepages::domain_capacity(n), |_, rows| {
            let whole = Whole { inputs, aux };
            assert!(self.eval_rows(0, &whole, rows, &first_bad), "the whole circuit holds every column");
        });
        let bad = first_bad.into_inner();
        (abc, (bad != usize::MAX).then_some(bad))
    }

    /// The witness of these assignments with a, b and c left to the backend
    /// ([`PartitionWitness::deferred`]): the assignment and the densities, about a quarter
    /// of a full witness's bytes. Proofs from it equal proofs from [`CompiledCircuit::witness`].
    pub fn deferred_witness(self: &std::sync::Arc<Self>, inputs: Vec<Scalar>, aux: Vec<Scalar>) -> PartitionWitness {
        assert_eq!((inputs.len(), aux.len()), (self.num_inputs, self.num_aux));
        PartitionWitness {
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            deferred: Some(crate::witness::Deferred { circuit: self.clone(), unchecked: false }),
            ..Default::default()
        }
    }

    /// The matrices A, B and C as a device copies them: for each, the row starts (one more
    /// than the rows), the columns of z and the coefficient ids of the terms; and the
    /// coefficient dictionary (ids 0 and 1 are ONE and -ONE).
    pub fn parts(&self) -> ([MatrixParts<'_>; 3], &[Scalar]) {
        fn parts(m: &Matrix) -> MatrixParts<'_> {
            MatrixParts { start: &m.start, cols: &m.cols, coeffs: &m.coeffs }
        }
        ([parts(&self.a), parts(&self.b), parts(&self.c)], &self.dictionary)
    }

    /// The witness of these vectors, `bad` the first unsatisfied row (usize::MAX: none).
    fn witness_of(&self, inputs: Vec<Scalar>, aux: Vec<Scalar>, [a, b, c]: [Vec<Scalar>; 3], bad: usize) -> (PartitionWitness, Option<usize>) {
        let w = PartitionWitness {
            a,
            b,
            c,
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            deferred: None,
        };
        (w, (bad != usize::MAX).then_some(bad))
    }
}

impl Constraints for CompiledCircuit {
    fn num_constraints(&self) -> usize {
        CompiledCircuit::num_constraints(self)
    }
    fn num_inputs(&self) -> usize {
        self.num_inputs
    }
    fn num_aux(&self) -> usize {
        self.num_aux
    }
    fn parts(&self) -> ([MatrixParts<'_>; 3], &[Scalar]) {
        CompiledCircuit::parts(self)
    }
    fn evaluate_checked(&self, inputs: &[Scalar], aux: &[Scalar]) -> ([Vec<Scalar>; 3], Option<usize>) {
        CompiledCircuit::evaluate_checked(self, inputs, aux)
    }
}

/// Vectors of total length `lens.iter().sum()` (and at least `capacity` of room) whose
/// parts, of lengths `lens` in order, are written by `fill(part, slices)` in parallel,
/// without filling them first. `fill` must write every element of its slices (checked: the
/// vectors are not handed out otherwise).
fn par_build_n<T: Copy + Send + Sync, const N: usize>(
    lens: &[usize],
    capacity: usize,
    fill: impl Fn(usize, [&mut [std::mem::MaybeUninit<T>]; N]) + Sync,
) -> [Vec<T>; N] {
    let total: usize = lens.iter().sum();
    let mut out: [Vec<T>; N] = std::array::from_fn(|_| crate::hugepages::vec_with_capacity(total.max(capacity)));
    {
        let mut parts: Vec<[&mut [std::mem::MaybeUninit<T>]; N]> = Vec::with_capacity(lens.len());
        let mut rest: [&mut [std::mem::MaybeUninit<T>]; N] = {
            let mut it = out.iter_mut().map(|v| &mut v.spare_capacity_mut()[..total]);
            std::array::from_fn(|_| it.next().expect("N vectors"))
        };
        for &len in lens {
            let mut heads: [&mut [std::mem::MaybeUninit<T>]; N] = std::array::from_fn(|_| Default::default());
            for (h, r) in heads.iter_mut().zip(rest.iter_mut()) {
                let (x, y) = std::mem::take(r).split_at_mut(len);
                *h = x;
                *r = y;
            }
            parts.push(heads);
        }
        parts.into_par_iter().enumerate().for_each(|(k, s)| fill(k, s));
    }
    for v in out.iter_mut() {
        // SAFETY: `fill` wrote each of the `total` elements (its contract; T is Copy, so a
        // fill that panicked leaves nothing to drop: the vectors are then never read).
        unsafe { v.set_len(total) };
    }
    out
}

fn par_build<T: Copy + Send + Sync>(lens: &[usize], fill: impl Fn(usize, &mut [std::mem::MaybeUninit<T>]) + Sync) -> Vec<T> {
    let [v] = par_build_n(lens, 0, |k, [s]| fill(k, s));
    v
}

/// Copies `src` into `dst` (same length).
fn write_all<T: Copy>(dst: &mut [std::mem::MaybeUninit<T>], src: impl IntoIterator<Item = T>) {
    let mut n = 0;
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(s);
        n += 1;
    }
    assert_eq!(n, dst.len(), "a part's length changed while it was copied");
}

mod file;
mod record;
mod synthesize;

pub use file::LoadError;
pub use record::{record_structure, AssignmentCs, RecordingCs, StructureCs, WitnessOnlyCs};
pub use synthesize::{
    compile, compile_pieces, synthesize_compiled, synthesize_compiled_deferred, synthesize_compiled_pieces,
    synthesize_compiled_pieces_deferred,
};
use record::*;


/// Where the time of a compiled synthesis went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompiledTimings {
    /// Running the circuit's gadgets for assignments (and rows, when recording), the parts
    /// in parallel.
    pub assign: std::time::Duration,
    /// Joining the parts (and, when recording, building the matrices and densities).
    pub join: std::time::Duration,
    /// a, b and c as sparse products, with the satisfaction check.
    pub products: std::time::Duration,
    /// Parts synthesized apart.
    pub parts: usize,
    /// The parts were written in place ([`IN_PLACE`]): `assign` then covers each part's
    /// gadgets, copy and rows of a, b and c together (and the input constraints' rows),
    /// `join` is zero and `products` only what was left (rows evaluated again, if any).
    pub in_place: bool,
}

/// A compiled witness, its first constraint with a * b != c (None: satisfied), and its
/// timings.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledWitness {
    pub witness: PartitionWitness,
    pub first_unsatisfied: Option<usize>,
    pub timings: CompiledTimings,
}

impl CompiledCircuit {
    /// Each matrix transposed times `v` (one value per row, a row past `v`'s end counting
    /// as zero): column j of the result is the sum over the rows i of `M[i][j] v[i]`. With
    /// `v` the Lagrange basis at tau this is the QAP of every variable evaluated at tau. The
    /// three matrices run in parallel.
    pub fn transposed_times(&self, v: &[Scalar]) -> [Vec<Scalar>; 3] {
        let z = self.num_inputs + self.num_aux;
        let one = |m: &Matrix| -> Vec<Scalar> {
            let mut out = vec![Scalar::ZERO; z];
            for (row, &x) in v.iter().enumerate().take(m.start.len().saturating_sub(1)) {
                for t in m.start[row] as usize..m.start[row + 1] as usize {
                    let col = &mut out[m.cols[t] as usize];
                    match m.coeffs[t] {
                        COEFF_ONE => *col += x,
                        COEFF_MINUS_ONE => *col -= x,
                        id => *col += x * self.dictionary[id as usize],
                    }
                }
            }
            out
        };
        let (a, (b, c)) = rayon::join(|| one(&self.a), || rayon::join(|| one(&self.b), || one(&self.c)));
        [a, b, c]
    }
}

#[cfg(test)]
mod tests {
    use super::synthesize::*;
    use super::*;

    /// The check's shortcuts for 0 and 1 agree with the product on every mix of 0, 1, -1
    /// and other values, true and false cases both.
    #[test]
    fn the_satisfaction_shortcuts_agree_with_the_product() {
        let values = [Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64), Scalar::from(12345u64)];
        let mut falses = 0;
        for a in &values {
            for b in &values {
                for c in values.iter().chain([*a * b].iter()) {
                    let want = *a * b == *c;
                    assert_eq!(CompiledCircuit::satisfied(a, b, c), want, "{a:?} * {b:?} = {c:?}");
                    falses += usize::from(!want);
                }
            }
        }
        assert!(falses > 50, "the false cases are exercised too");
    }

    /// A prefix (an input and a square), then pieces `range`, each in a top-level
    /// namespace `piece_<k>` with an input, a square and a product with ONE and the input.
    struct Ranged {
        range: std::ops::Range<usize>,
        seed: u64,
    }

    impl Circuit<Scalar> for Ranged {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let top = cs.alloc_input(|| "top", || Ok(Scalar::from(self.seed)))?;
            let sq = cs.alloc(|| "sq", || Ok(Scalar::from(self.seed).square()))?;
            cs.enforce(|| "top", |lc| lc + top, |lc| lc + top, |lc| lc + sq);
            for k in self.range {
                let cs = &mut cs.namespace(|| format!("piece_{k}"));
                let x_val = Scalar::from(self.seed + k as u64 + 2);
                let input = cs.alloc_input(|| "in", || Ok(Scalar::from(k as u64 + 5)))?;
                let x = cs.alloc(|| "x", || Ok(x_val))?;
                let y = cs.alloc(|| "y", || Ok(x_val.square()))?;
                cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
                let z = cs.alloc(|| "z", || Ok((x_val + Scalar::from(5u64)) * Scalar::from(k as u64 + 5)))?;
                cs.enforce(|| "(x+5)*in=z", |lc| lc + x + (Scalar::from(5u64), CS::one()), |lc| lc + input, |lc| lc + z);
                // A row that reads the prefix too.
                cs.enforce(|| "sq*1=sq", |lc| lc + sq, |lc| lc + CS::one(), |lc| lc + sq);
            }
            Ok(())
        }
    }

    fn cuts(cuts: &[std::ops::Range<usize>], seed: u64) -> Vec<Ranged> {
        cuts.iter().map(|r| Ranged { range: r.clone(), seed }).collect()
    }

    /// The phased path (join, then products), whatever the switch says.
    fn phased(parts: Vec<Ranged>, compiled: &CompiledCircuit) -> CompiledWitness {
        let count = parts.len();
        let runs = run_parts::<_, false>(parts, Some("piece_"), 0).unwrap();
        witness_of_runs(runs, compiled, std::time::Instant::now(), Default::default(), count, None).unwrap().unwrap()
    }

    /// In place: a witness run with the recording's split writes its parts in place and
    /// equals the phased path and the whole circuit's reference witness; another split with
    /// as many parts (shares that differ from the layout) falls back to the phased path with
    /// the same result; so does a run with another number of parts. Unsatisfied witnesses
    /// give the same first bad row both ways.
    #[test]
    fn parts_written_in_place_equal_the_phased_path() {
        let split = [0..1, 1..4, 4..5, 5..7];
        let (_, compiled) = compile_pieces(cuts(&split, 3), Some("piece_")).unwrap();
        assert_eq!(compiled.recorded_parts(), Some(4));
        let reference = PartitionWitness::synthesize(Ranged { range: 0..7, seed: 8 }).unwrap();
        let run = |c: &[std::ops::Range<usize>], compiled: &CompiledCircuit| {
            witness_of_parts(cuts(c, 8), Some("piece_"), compiled, None).unwrap().unwrap()
        };
        // a, b and c leave room for the H step's pad to the domain, both ways.
        let room = |w: &PartitionWitness, how: &str| {
            for (name, v) in [("a", &w.a), ("b", &w.b), ("c", &w.c)] {
                let want = crate::hugepages::domain_capacity(v.len());
                assert!(v.capacity() >= want, "{how}: {name} has room for {} of {want}", v.capacity());
            }
        };
        let got = run(&split, &compiled);
        assert!(got.timings.in_place, "the recording's split is written in place");
        assert_eq!((&got.witness, got.first_unsatisfied), (&reference, None));
        room(&got.witness, "in place");
        room(&phased(cuts(&split, 8), &compiled).witness, "phased");
        assert_eq!(got, CompiledWitness { timings: got.timings, ..phased(cuts(&split, 8), &compiled) });
        for other in [vec![0..2, 2..4, 4..6, 6..7], vec![0..3, 3..7]] {
            let got = run(&other, &compiled);
            assert!(!got.timings.in_place, "{other:?}: not the recording's split");
            assert_eq!((&got.witness, got.first_unsatisfied), (&reference, None), "{other:?}");
        }
        // B replaced by A: unsatisfied, first bad row equal both ways.
        let bad = compiled.perturbed();
        let got = run(&split, &bad);
        assert!(got.timings.in_place && got.first_unsatisfied.is_some());
        let want = phased(cuts(&split, 8), &bad);
        assert_eq!((&got.witness, got.first_unsatisfied), (&want.witness, want.first_unsatisfied));
        assert_eq!(got.first_unsatisfied, got.witness.first_unsatisfied());
    }

    /// A compiled circuit whose rows of one part read another part's column (a crafted or
    /// corrupt one: recordings never do) still gives the phased path's witness: those rows
    /// are evaluated again from the whole.
    #[test]
    fn a_row_that_reads_another_parts_column_is_evaluated_from_the_whole() {
        let split = [0..2, 2..4, 4..7];
        let (_, mut compiled) = compile_pieces(cuts(&split, 3), Some("piece_")).unwrap();
        let layout = compiled.layout.clone().expect("recorded in parts");
        let to = layout.offsets();
        // Part 1's first row of A reads part 2's first aux variable instead.
        let row = to[1].constraints;
        let t = compiled.a.start[row] as usize;
        compiled.a.cols[t] = (compiled.num_inputs + to[2].aux) as u32;
        let got = witness_of_parts(cuts(&split, 8), Some("piece_"), &compiled, None).unwrap().unwrap();
        assert!(got.timings.in_place);
        let want = phased(cuts(&split, 8), &compiled);
        assert_eq!((&got.witness, got.first_unsatisfied), (&want.witness, want.first_unsatisfied));
        assert!(got.first_unsatisfied.is_some(), "the moved column breaks that row");
    }

    /// The layout survives a save and load; a file whose layout does not add up is refused.
    #[test]
    fn the_layout_is_saved_and_checked_on_load() {
        let (_, compiled) = compile_pieces(cuts(&[0..3, 3..7], 3), Some("piece_")).unwrap();
        let dir = std::env::temp_dir().join(format!("cuzk-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pce");
        compiled.save("ranged", &path).unwrap();
        let loaded = CompiledCircuit::load("ranged", &path).unwrap();
        assert_eq!(loaded, compiled);
        assert_eq!(loaded.recorded_parts(), Some(2));
        let mut skewed = compiled.clone();
        skewed.layout.as_mut().unwrap().parts[1].aux += 1;
        skewed.save("ranged", &path).unwrap();
        let err = CompiledCircuit::load("ranged", &path).unwrap_err().to_string();
        assert!(err.contains("layout does not add up"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
