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

/// Whether a witness run whose parts match the recording's layout writes them in place
/// (default) or joins them first (`CUZK_SYNTHESIS_IN_PLACE=0`; for benches).
pub static IN_PLACE: crate::switch::Switch = crate::switch::Switch::new("CUZK_SYNTHESIS_IN_PLACE");

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
        use std::sync::atomic::AtomicUsize;
        assert_eq!((inputs.len(), aux.len()), (self.num_inputs, self.num_aux));
        let n = self.num_constraints();
        let first_bad = AtomicUsize::new(usize::MAX);
        let [a, b, c] = par_build_n(&[n], crate::hugepages::domain_capacity(n), |_, rows| {
            let whole = Whole { inputs: &inputs, aux: &aux };
            assert!(self.eval_rows(0, &whole, rows, &first_bad), "the whole circuit holds every column");
        });
        self.witness_of(inputs, aux, [a, b, c], first_bad.into_inner())
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
        };
        (w, (bad != usize::MAX).then_some(bad))
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

/// Rows of one matrix as recorded, columns tagged (input or aux, local to the CS).
#[derive(Default)]
struct Rows {
    start: Vec<u64>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
}

impl Rows {
    fn new() -> Rows {
        Rows { start: vec![0], ..Default::default() }
    }

    fn push(&mut self, lc: &LinearCombination<Scalar>, dict: &mut Dictionary) {
        for (&i, coeff) in lc.iter_inputs() {
            if !bool::from(coeff.is_zero()) {
                self.cols.push(tag_input(i));
                self.coeffs.push(dict.id(coeff));
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if !bool::from(coeff.is_zero()) {
                self.cols.push(tag_aux(i));
                self.coeffs.push(dict.id(coeff));
            }
        }
        self.start.push(self.cols.len() as u64);
    }

    /// Appends `other`'s rows, its columns moved past ours: its input 0 (its own ONE) is
    /// our ONE, its other inputs follow our `inputs`, its aux follow our `aux`; its
    /// coefficient ids are mapped through `ids`.
    fn extend(&mut self, other: &Rows, inputs: usize, aux: usize, ids: &[u32]) {
        let base = self.cols.len() as u64;
        self.start.extend(other.start[1..].iter().map(|s| s + base));
        self.cols.extend(other.cols.iter().map(|&c| {
            if c & INPUT_TAG != 0 {
                let i = (c & !INPUT_TAG) as usize;
                tag_input(if i == 0 { 0 } else { i - 1 + inputs })
            } else {
                tag_aux(c as usize + aux)
            }
        }));
        self.coeffs.extend(other.coeffs.iter().map(|&id| ids[id as usize]));
    }

    /// The matrix, tagged columns turned into z = inputs ++ aux indices.
    fn finish(self, num_inputs: usize) -> Matrix {
        let cols = self
            .cols
            .into_par_iter()
            .map(|c| {
                if c & INPUT_TAG != 0 {
                    c & !INPUT_TAG
                } else {
                    c + num_inputs as u32
                }
            })
            .collect();
        Matrix { start: self.start, cols, coeffs: self.coeffs }
    }
}

fn tag_input(i: usize) -> u32 {
    assert!(i < INPUT_TAG as usize, "too many inputs for a compiled circuit");
    i as u32 | INPUT_TAG
}

fn tag_aux(i: usize) -> u32 {
    assert!(i < INPUT_TAG as usize, "too many aux variables for a compiled circuit");
    i as u32
}

struct Dictionary {
    values: Vec<Scalar>,
    ids: HashMap<[u8; 32], u32>,
}

impl Default for Dictionary {
    fn default() -> Self {
        let mut d = Dictionary { values: Vec::new(), ids: HashMap::new() };
        assert_eq!(d.id(&Scalar::ONE), COEFF_ONE);
        assert_eq!(d.id(&-Scalar::ONE), COEFF_MINUS_ONE);
        d
    }
}

impl Dictionary {
    fn id(&mut self, v: &Scalar) -> u32 {
        let key = v.to_repr();
        let next = self.values.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            self.values.push(*v);
            next
        })
    }

    /// Our ids of `other`'s coefficients (added when new).
    fn merge(&mut self, other: &Dictionary) -> Vec<u32> {
        other.values.iter().map(|v| self.id(v)).collect()
    }
}

/// What a recording constraint system keeps besides assignments.
#[derive(Default)]
struct Recorder {
    rows: [Rows; 3],
    dict: Dictionary,
}

impl Recorder {
    /// One constraint's rows, its linear combinations built here.
    fn record(
        &mut self,
        a: impl FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        b: impl FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        c: impl FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    ) {
        let Recorder { rows, dict } = self;
        rows[0].push(&a(LinearCombination::zero()), dict);
        rows[1].push(&b(LinearCombination::zero()), dict);
        rows[2].push(&c(LinearCombination::zero()), dict);
    }
}

/// Counts when a marked top-level namespace began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mark {
    inputs: usize,
    aux: usize,
    constraints: usize,
    /// Terms of A, B and C so far (recording only).
    terms: [usize; 3],
}

/// The constraint system of the compiled path: it records assignments, and with
/// `RECORD` also every constraint's A, B and C rows (that is [`RecordingCs`]; without it,
/// [`WitnessOnlyCs`], whose `enforce` never calls the closures that build linear
/// combinations, where most of the synthesis time goes, and which is a witness generator). With a marker, it notes the counts
/// at the start of each top-level namespace whose name starts with the marker (see
/// [`synthesize_compiled_pieces`]). Extensible: a sub-system made with `new()` records
/// like its parent and joins it with `extend`.
pub struct AssignmentCs<const RECORD: bool> {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    constraints: usize,
    depth: usize,
    marker: Option<&'static str>,
    marks: Vec<Mark>,
    recorder: Option<Box<Recorder>>,
}

/// Assignments only.
pub type WitnessOnlyCs = AssignmentCs<false>;
/// Assignments and the constraints' rows: what [`compile`] records with.
pub type RecordingCs = AssignmentCs<true>;

impl<const RECORD: bool> AssignmentCs<RECORD> {
    fn with_marker(marker: Option<&'static str>) -> Self {
        AssignmentCs {
            inputs: Vec::new(),
            aux: Vec::new(),
            constraints: 0,
            depth: 0,
            marker,
            marks: Vec::new(),
            recorder: RECORD.then(|| Box::new(Recorder { rows: [Rows::new(), Rows::new(), Rows::new()], dict: Dictionary::default() })),
        }
    }

    fn mark(&self) -> Mark {
        let terms = self.recorder.as_ref().map_or([0; 3], |r| std::array::from_fn(|m| r.rows[m].cols.len()));
        Mark { inputs: self.inputs.len(), aux: self.aux.len(), constraints: self.constraints, terms }
    }
}

impl<const RECORD: bool> ConstraintSystem<Scalar> for AssignmentCs<RECORD> {
    type Root = Self;

    fn new() -> Self {
        Self::with_marker(None)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
        if let Some(r) = self.recorder.as_deref_mut() {
            r.record(a, b, c);
        }
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 {
            if let Some(m) = self.marker {
                if name().into().starts_with(m) {
                    self.marks.push(self.mark());
                }
            }
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// A witness-only system says so, and takes values in bulk: gadgets that have a native
    /// witness path (cuzk-filecoin's SHA-256) write their assignments in one block. A
    /// recording one does not: its gadgets must run for their constraints.
    fn is_witness_generator(&self) -> bool {
        !RECORD
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        assert!(!RECORD, "a recording constraint system allocates through alloc_input");
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        assert!(!RECORD, "a recording constraint system allocates through alloc");
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        assert!(!RECORD, "a recording constraint system allocates through alloc");
        let (aux_at, inputs_at) = (self.aux.len(), self.inputs.len());
        self.aux.resize(aux_at + aux_n, Scalar::ZERO);
        self.inputs.resize(inputs_at + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux_at..], &mut self.inputs[inputs_at..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }

    fn extend(&mut self, other: &Self) {
        if let (Some(mine), Some(theirs)) = (self.recorder.as_deref_mut(), other.recorder.as_deref()) {
            let ids = mine.dict.merge(&theirs.dict);
            for (m, t) in mine.rows.iter_mut().zip(&theirs.rows) {
                m.extend(t, self.inputs.len(), self.aux.len(), &ids);
            }
        }
        // The first input of `other` is its temporary ONE.
        self.inputs.extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
        self.constraints += other.constraints;
    }
}

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

/// The parts synthesized in parallel, each in its own constraint system, with room for
/// `aux_room` aux values each up front (on huge pages: [`crate::hugepages`]; a part that
/// needs more grows as a vector does).
fn run_parts<C: Circuit<Scalar> + Send, const RECORD: bool>(
    parts: Vec<C>,
    marker: Option<&'static str>,
    aux_room: usize,
) -> Result<Vec<AssignmentCs<RECORD>>, SynthesisError> {
    parts
        .into_par_iter()
        .map(|circuit| {
            let mut cs = AssignmentCs::<RECORD>::with_marker(marker);
            cs.aux = crate::hugepages::vec_with_capacity(aux_room);
            cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            circuit.synthesize(&mut cs)?;
            Ok(cs)
        })
        .collect()
}

/// Assignments (and rows) of a whole circuit joined from its parts.
struct Joined {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    /// The circuit's own constraints (without the input constraints).
    constraints: usize,
    recorder: Option<Box<Recorder>>,
    /// How the parts split it (None: one part).
    layout: Option<PartLayout>,
}

/// Joins parts that each hold the common prefix and a run of the pieces: the first part
/// whole, then every later one from its first mark on. A prefix variable that a piece
/// refers to is the first part's (the prefixes are equal: checked by their counts). A part
/// without a mark, or with another prefix, is refused.
fn join<const RECORD: bool>(mut runs: Vec<AssignmentCs<RECORD>>) -> Result<Joined, SynthesisError> {
    if runs.len() == 1 {
        let r = runs.pop().expect("one part");
        return Ok(Joined { inputs: r.inputs, aux: r.aux, constraints: r.constraints, recorder: r.recorder, layout: None });
    }
    let prefix = runs.first().and_then(|r| r.marks.first().copied()).ok_or(SynthesisError::Unsatisfiable)?;
    // Where each part's contribution starts in its own counts (the first: at 0).
    let mut from = Vec::with_capacity(runs.len());
    for (j, r) in runs.iter().enumerate() {
        let m = *r.marks.first().ok_or(SynthesisError::Unsatisfiable)?;
        if (m.inputs, m.aux, m.constraints, m.terms) != (prefix.inputs, prefix.aux, prefix.constraints, prefix.terms) {
            return Err(SynthesisError::Unsatisfiable);
        }
        from.push(if j == 0 { Mark::default() } else { m });
    }
    // Where each part's contribution goes in the whole.
    let mut to = Vec::with_capacity(runs.len());
    let mut at = Mark::default();
    for (r, f) in runs.iter().zip(&from) {
        to.push(at);
        at.inputs += r.inputs.len() - f.inputs;
        at.aux += r.aux.len() - f.aux;
        at.constraints += r.constraints - f.constraints;
        if let Some(rec) = r.recorder.as_deref() {
            for m in 0..3 {
                at.terms[m] += rec.rows[m].cols.len() - f.terms[m];
            }
        }
    }
    let lens = |count: &dyn Fn(&AssignmentCs<RECORD>, &Mark) -> usize| -> Vec<usize> {
        runs.iter().zip(&from).map(|(r, f)| count(r, f)).collect()
    };
    let inputs = par_build(&lens(&|r, f| r.inputs.len() - f.inputs), |j, d| {
        write_all(d, runs[j].inputs[from[j].inputs..].iter().copied())
    });
    let aux = par_build(&lens(&|r, f| r.aux.len() - f.aux), |j, d| write_all(d, runs[j].aux[from[j].aux..].iter().copied()));
    let recorder = if RECORD {
        let mut dict = Dictionary::default();
        let ids: Vec<Vec<u32>> = runs
            .iter()
            .map(|r| r.recorder.as_deref().map_or_else(Vec::new, |rec| dict.merge(&rec.dict)))
            .collect();
        let rows: [Rows; 3] = std::array::from_fn(|m| {
            let rec = |j: usize| &runs[j].recorder.as_deref().expect("recording parts").rows[m];
            // A column of part j in the whole: its prefix as the first part's, its own after.
            let col = |j: usize, c: u32| -> u32 {
                let (f, t) = (&from[j], &to[j]);
                if c & INPUT_TAG != 0 {
                    let i = (c & !INPUT_TAG) as usize;
                    if i < f.inputs.max(1) { c } else { tag_input(i - f.inputs + t.inputs) }
                } else if (c as usize) < f.aux {
                    c
                } else {
                    tag_aux(c as usize - f.aux + t.aux)
                }
            };
            let row_lens = lens(&|r, f| r.constraints - f.constraints);
            let term_lens = lens(&|r, f| r.recorder.as_deref().map_or(0, |x| x.rows[m].cols.len()) - f.terms[m]);
            let mut start = par_build(&row_lens, |j, d| {
                let s = &rec(j).start[from[j].constraints + 1..];
                let base = (to[j].terms[m] as u64).wrapping_sub(from[j].terms[m] as u64);
                write_all(d, s.iter().map(|x| x.wrapping_add(base)));
            });
            start.insert(0, 0);
            let cols = par_build(&term_lens, |j, d| {
                write_all(d, rec(j).cols[from[j].terms[m]..].iter().map(|&c| col(j, c)))
            });
            let coeffs = par_build(&term_lens, |j, d| {
                write_all(d, rec(j).coeffs[from[j].terms[m]..].iter().map(|&id| ids[j][id as usize]))
            });
            Rows { start, cols, coeffs }
        });
        Some(Box::new(Recorder { rows, dict }))
    } else {
        None
    };
    let layout = PartLayout {
        prefix: Counts { inputs: prefix.inputs, aux: prefix.aux, constraints: prefix.constraints },
        parts: runs
            .iter()
            .zip(&from)
            .map(|(r, f)| Counts {
                inputs: r.inputs.len() - f.inputs,
                aux: r.aux.len() - f.aux,
                constraints: r.constraints - f.constraints,
            })
            .collect(),
    };
    Ok(Joined { inputs, aux, constraints: at.constraints, recorder, layout: Some(layout) })
}

/// A matrix's columns in `range` as a density (bit i: column range.start + i occurs).
fn density_of(m: &Matrix, range: std::ops::Range<usize>) -> Density {
    let words = range.len().div_ceil(64);
    let bits = m
        .cols
        .par_chunks(1 << 20)
        .fold(
            || vec![0u64; words],
            |mut w, chunk| {
                for &c in chunk {
                    let c = c as usize;
                    if range.contains(&c) {
                        let i = c - range.start;
                        w[i / 64] |= 1 << (i % 64);
                    }
                }
                w
            },
        )
        .reduce(
            || vec![0u64; words],
            |mut x, y| {
                x.iter_mut().zip(&y).for_each(|(a, b)| *a |= b);
                x
            },
        );
    Density::from_words(bits, range.len()).expect("bits within the range")
}

/// The compiled circuit of joined recorded parts: the input constraints (`x * 0 = 0` for
/// each input, as the reference appends them) added, densities read off the matrices.
fn compiled_of(joined: &mut Joined) -> CompiledCircuit {
    let recorder = *joined.recorder.take().expect("a recording");
    let layout = joined.layout.take();
    compiled_of_rows(recorder, joined.inputs.len(), joined.aux.len(), joined.constraints, layout)
}

/// The compiled circuit of recorded rows over `ni` inputs and `na` aux variables
/// (`constraints`: the circuit's own, without the input constraints this adds).
fn compiled_of_rows(recorder: Recorder, ni: usize, na: usize, constraints: usize, layout: Option<PartLayout>) -> CompiledCircuit {
    let Recorder { mut rows, dict } = recorder;
    for i in 0..ni {
        rows[0].cols.push(tag_input(i));
        rows[0].coeffs.push(COEFF_ONE);
        for r in rows.iter_mut() {
            r.start.push(r.cols.len() as u64);
        }
    }
    let [a, b, c] = rows;
    let (a, b, c) = (a.finish(ni), b.finish(ni), c.finish(ni));
    let a_aux_density = density_of(&a, ni..ni + na);
    let b_input_density = density_of(&b, 0..ni);
    let b_aux_density = density_of(&b, ni..ni + na);
    CompiledCircuit {
        num_inputs: ni,
        num_aux: na,
        a,
        b,
        c,
        dictionary: dict.values,
        a_aux_density,
        b_input_density,
        b_aux_density,
        layout: layout.filter(|l| l.fits(ni, na, constraints)),
    }
}

/// The constraint system of a parameter setup ([`record_structure`]): it records every
/// constraint's A, B and C rows and never asks for a value, as bellperson's own generator
/// does (the blank circuits a setup is given have none). It is not extensible, so a circuit
/// that synthesizes differently in an extensible system (storage-proofs' PoSt circuit) takes
/// the path the reference generator sees.
pub struct StructureCs {
    inputs: usize,
    aux: usize,
    constraints: usize,
    recorder: Recorder,
}

impl ConstraintSystem<Scalar> for StructureCs {
    type Root = Self;

    fn new() -> Self {
        StructureCs {
            inputs: 0,
            aux: 0,
            constraints: 0,
            recorder: Recorder { rows: [Rows::new(), Rows::new(), Rows::new()], dict: Dictionary::default() },
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
        self.recorder.record(a, b, c);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A circuit's constraints without its values: the compiled circuit a parameter setup
/// evaluates ([`crate::setup`]), with ONE allocated first and the input constraints
/// appended as the reference generator does. The circuit may be blank (no assignments).
pub fn record_structure<C: Circuit<Scalar>>(circuit: C) -> Result<CompiledCircuit, SynthesisError> {
    let mut cs = StructureCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    let StructureCs { inputs, aux, constraints, recorder } = cs;
    Ok(compiled_of_rows(recorder, inputs, aux, constraints, None))
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

/// Synthesizes `circuit` once, recording its constraints: the witness (equal to
/// [`PartitionWitness::synthesize`]'s) and the compiled circuit for later proofs.
pub fn compile<C: Circuit<Scalar> + Send>(circuit: C) -> Result<(PartitionWitness, CompiledCircuit), SynthesisError> {
    let (w, compiled) = compile_pieces(vec![circuit], None)?;
    Ok((w.witness, compiled))
}

/// As [`compile`] for a circuit given as parts (see [`synthesize_compiled_pieces`]): the
/// parts recorded in parallel and joined. With `marker` None, `parts` is one whole circuit.
pub fn compile_pieces<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
) -> Result<(CompiledWitness, CompiledCircuit), SynthesisError> {
    let t0 = std::time::Instant::now();
    let count = parts.len();
    let runs = run_parts::<C, true>(parts, marker, 0)?;
    let assign = t0.elapsed();
    let mut joined = join(runs)?;
    let compiled = compiled_of(&mut joined);
    let join_time = t0.elapsed() - assign;
    let (witness, first_unsatisfied) = compiled.witness_checked(joined.inputs, joined.aux);
    let timings =
        CompiledTimings { assign, join: join_time, products: t0.elapsed() - assign - join_time, parts: count, in_place: false };
    Ok((CompiledWitness { witness, first_unsatisfied, timings }, compiled))
}

/// As [`synthesize_compiled`] for a circuit made of a common prefix and then pieces, each
/// piece in a top-level namespace whose name starts with `marker` (storage-proofs' stacked
/// circuit: its public values, then `challenge_0`, `challenge_1`, ...), given as circuits
/// that each hold the prefix and a consecutive run of the pieces (in order, together all of
/// them). They are synthesized in parallel, each in its own witness-only constraint system;
/// the whole circuit's assignments are the first one's prefix and every one's pieces, as
/// the pieces do not depend on one another. Equality with the whole circuit's synthesis is
/// what the tests check; counts that differ from `compiled` are refused as usual.
pub fn synthesize_compiled_pieces<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: &'static str,
    compiled: &CompiledCircuit,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(parts, Some(marker), compiled)
}

/// Synthesizes `circuit` for its assignments only and evaluates a, b, c from `compiled`:
/// equal to [`PartitionWitness::synthesize`] for a circuit of the compiled structure, with
/// its first unsatisfied constraint (checked in the same pass). Counts that differ from
/// the recording are refused.
pub fn synthesize_compiled<C: Circuit<Scalar> + Send>(
    circuit: C,
    compiled: &CompiledCircuit,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(vec![circuit], None, compiled)
}

fn witness_of_parts<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
    compiled: &CompiledCircuit,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    let t0 = std::time::Instant::now();
    let count = parts.len();
    if let Some(layout) = compiled.layout.as_ref().filter(|l| count > 1 && l.parts.len() == count && IN_PLACE.on()) {
        match witness_in_place(parts, marker, compiled, layout, t0)? {
            InPlace::Done(w) => return Ok(Ok(w)),
            InPlace::Apart(runs) => return witness_of_runs(runs, compiled, t0, t0.elapsed(), count),
        }
    }
    // Each part: the common prefix and its share of the pieces. Room for half as much again
    // as an even share costs address space only (untouched pages are never backed).
    let aux_room = if count <= 1 { compiled.num_aux } else { compiled.num_aux.div_ceil(count) * 3 / 2 };
    let runs = run_parts::<C, false>(parts, marker, aux_room)?;
    let assign = t0.elapsed();
    witness_of_runs(runs, compiled, t0, assign, count)
}

/// The phased path's join, count check and products, for parts already synthesized.
fn witness_of_runs(
    runs: Vec<AssignmentCs<false>>,
    compiled: &CompiledCircuit,
    t0: std::time::Instant,
    assign: std::time::Duration,
    count: usize,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    let joined = join(runs)?;
    let join_time = t0.elapsed() - assign;
    // One `x * 0 = 0` constraint per input, as the reference appends.
    let constraints = joined.constraints + joined.inputs.len();
    if (joined.inputs.len(), joined.aux.len(), constraints)
        != (compiled.num_inputs, compiled.num_aux, compiled.num_constraints())
    {
        return Ok(Err(CompiledMismatch {
            want_inputs: compiled.num_inputs,
            want_aux: compiled.num_aux,
            want_constraints: compiled.num_constraints(),
            inputs: joined.inputs.len(),
            aux: joined.aux.len(),
            constraints,
        }));
    }
    let (witness, first_unsatisfied) = compiled.witness_checked(joined.inputs, joined.aux);
    let timings =
        CompiledTimings { assign, join: join_time, products: t0.elapsed() - assign - join_time, parts: count, in_place: false };
    log::debug!("compiled synthesis: {timings:?}");
    Ok(Ok(CompiledWitness { witness, first_unsatisfied, timings }))
}

/// What [`witness_in_place`] gives: the witness, or (when some part's counts differ from the
/// recording's layout, as another split of the same circuit's pieces has) every part's
/// assignments for the phased path: those written in place read back out of the whole.
enum InPlace {
    Done(CompiledWitness),
    Apart(Vec<AssignmentCs<false>>),
}

/// What one part's task left: nothing (written in place; `inside`: every row it wrote read
/// only its own columns), or its constraint system (its counts differ from the layout).
enum PartDone {
    Written { inside: bool },
    Kept(AssignmentCs<false>),
}

/// The parts synthesized in parallel as [`witness_of_parts`] does, but each part, as soon as
/// it is done, copies its share of inputs and aux into the whole's vectors and evaluates its
/// own rows of a, b and c there, reading its own assignments (the pieces do not depend on
/// one another: a row of part j reads the prefix and part j's columns). So there is no join
/// and no products stage waiting for the slowest part, and each part's memory is freed
/// when it is done. The layout's places come from the recording; a part whose counts differ
/// is kept whole, and then every part goes the phased way. A row that reads a column that is
/// not its part's (a circuit of another structure with the same counts) is evaluated again
/// from the whole, so the result is always the phased path's.
fn witness_in_place<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
    compiled: &CompiledCircuit,
    layout: &PartLayout,
    t0: std::time::Instant,
) -> Result<InPlace, SynthesisError> {
    use crate::hugepages::vec_with_capacity;
    use std::mem::MaybeUninit;
    use std::sync::atomic::AtomicUsize;
    let (ni, na, n) = (compiled.num_inputs, compiled.num_aux, compiled.num_constraints());
    let prefix = layout.prefix;
    let to = layout.offsets();
    let mut inputs: Vec<Scalar> = Vec::with_capacity(ni);
    let mut aux: Vec<Scalar> = vec_with_capacity(na);
    // Room for the H step's pad to the domain (hugepages::domain_capacity).
    let mut abc: [Vec<Scalar>; 3] = std::array::from_fn(|_| vec_with_capacity(crate::hugepages::domain_capacity(n)));
    let first_bad = AtomicUsize::new(usize::MAX);
    // Each part's slices of the whole, in order; the input constraints' rows are left.
    type Slices<'a> = (&'a mut [MaybeUninit<Scalar>], &'a mut [MaybeUninit<Scalar>], [&'a mut [MaybeUninit<Scalar>]; 3]);
    let outcomes: Vec<PartDone>;
    {
        let (mut ins, mut auxs) = (&mut inputs.spare_capacity_mut()[..ni], &mut aux.spare_capacity_mut()[..na]);
        let mut rows: [&mut [MaybeUninit<Scalar>]; 3] = {
            let mut it = abc.iter_mut().map(|v| &mut v.spare_capacity_mut()[..n]);
            std::array::from_fn(|_| it.next().expect("three"))
        };
        let mut slices: Vec<Slices<'_>> = Vec::with_capacity(layout.parts.len());
        for p in &layout.parts {
            let (i, ri) = std::mem::take(&mut ins).split_at_mut(p.inputs);
            let (x, rx) = std::mem::take(&mut auxs).split_at_mut(p.aux);
            ins = ri;
            auxs = rx;
            let mut own: [&mut [MaybeUninit<Scalar>]; 3] = std::array::from_fn(|_| Default::default());
            for (o, r) in own.iter_mut().zip(rows.iter_mut()) {
                let (h, t) = std::mem::take(r).split_at_mut(p.constraints);
                *o = h;
                *r = t;
            }
            slices.push((i, x, own));
        }
        outcomes = parts
            .into_par_iter()
            .zip(slices)
            .enumerate()
            .map(|(j, (circuit, (dst_in, dst_aux, dst_rows)))| -> Result<PartDone, SynthesisError> {
                let share = layout.parts[j];
                let from = if j == 0 { Counts::default() } else { prefix };
                let mut cs = AssignmentCs::<false>::with_marker(marker);
                cs.aux = vec_with_capacity(from.aux + share.aux);
                cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
                circuit.synthesize(&mut cs)?;
                let own = Counts {
                    inputs: cs.inputs.len().wrapping_sub(from.inputs),
                    aux: cs.aux.len().wrapping_sub(from.aux),
                    constraints: cs.constraints.wrapping_sub(from.constraints),
                };
                let its_prefix = cs.marks.first().map(|m| Counts { inputs: m.inputs, aux: m.aux, constraints: m.constraints });
                if own != share || its_prefix != Some(prefix) {
                    return Ok(PartDone::Kept(cs));
                }
                write_all(dst_in, cs.inputs[from.inputs..].iter().copied());
                const COPY: usize = 1 << 15;
                dst_aux
                    .par_chunks_mut(COPY)
                    .zip(cs.aux[from.aux..].par_chunks(COPY))
                    .for_each(|(d, s)| write_all(d, s.iter().copied()));
                let view = PartView { inputs: &cs.inputs, aux: &cs.aux, num_inputs: ni, prefix, from, to: to[j], own };
                let inside = compiled.eval_rows(to[j].constraints, &view, dst_rows, &first_bad);
                drop(cs);
                Ok(PartDone::Written { inside })
            })
            .collect::<Result<_, _>>()?;
        if !outcomes.iter().any(|o| matches!(o, PartDone::Kept(_))) {
            // SAFETY: every part wrote its whole share (write_all checks each length) and the
            // shares add up to the counts (PartLayout::fits, checked when the layout was made
            // or loaded).
            unsafe {
                inputs.set_len(ni);
                aux.set_len(na);
            }
            let whole = Whole { inputs: &inputs, aux: &aux };
            assert!(compiled.eval_rows(n - ni, &whole, rows, &first_bad), "the whole holds every column");
        }
    }
    if outcomes.iter().any(|o| matches!(o, PartDone::Kept(_))) {
        // Back to the phased path: each part's assignments as its own constraint system
        // would hold them (prefix, then share); those written in place are read back.
        fn read(whole: &[MaybeUninit<Scalar>], at: usize, len: usize) -> Vec<Scalar> {
            // SAFETY: only called for a part written in place, which wrote its share
            // [at, at + len) of the whole.
            unsafe { std::slice::from_raw_parts(whole[at..at + len].as_ptr().cast::<Scalar>(), len) }.to_vec()
        }
        let mut runs = Vec::with_capacity(outcomes.len());
        for (j, o) in outcomes.into_iter().enumerate() {
            runs.push(match o {
                PartDone::Kept(cs) => cs,
                PartDone::Written { .. } => {
                    // A part after the first also holds the prefix, which the join never
                    // reads from it (it takes the first part's): zeros of its length.
                    let share = layout.parts[j];
                    let from = if j == 0 { Counts::default() } else { prefix };
                    let mut cs = AssignmentCs::<false>::with_marker(marker);
                    cs.inputs = vec![Scalar::ZERO; from.inputs];
                    cs.inputs.extend(read(inputs.spare_capacity_mut(), to[j].inputs, share.inputs));
                    cs.aux = vec![Scalar::ZERO; from.aux];
                    cs.aux.extend(read(aux.spare_capacity_mut(), to[j].aux, share.aux));
                    cs.constraints = from.constraints + share.constraints;
                    cs.marks = vec![Mark { inputs: prefix.inputs, aux: prefix.aux, constraints: prefix.constraints, terms: [0; 3] }];
                    cs
                }
            });
        }
        return Ok(InPlace::Apart(runs));
    }
    let assign = t0.elapsed();
    // SAFETY: every part wrote its rows (eval_rows writes each row it is given) and the tail
    // holds the input constraints' rows; the parts' rows and the tail add up to n.
    for v in abc.iter_mut() {
        unsafe { v.set_len(n) };
    }
    // Rows that read outside their part: evaluated again from the whole.
    let redo: Vec<std::ops::Range<usize>> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, PartDone::Written { inside: false }))
        .map(|(j, _)| to[j].constraints..to[j].constraints + layout.parts[j].constraints)
        .collect();
    if !redo.is_empty() {
        log::warn!("compiled synthesis: {} part(s) read columns outside their own; evaluated again from the whole", redo.len());
        let whole = Whole { inputs: &inputs, aux: &aux };
        let [a, b, c] = &mut abc;
        fn as_uninit(v: &mut [Scalar]) -> &mut [MaybeUninit<Scalar>] {
            // SAFETY: Scalar and MaybeUninit<Scalar> have one layout, and eval_rows writes
            // every element it is given (a valid Scalar) before anything reads it.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<MaybeUninit<Scalar>>(), v.len()) }
        }
        for r in redo {
            let rows = [as_uninit(&mut a[r.clone()]), as_uninit(&mut b[r.clone()]), as_uninit(&mut c[r.clone()])];
            assert!(compiled.eval_rows(r.start, &whole, rows, &first_bad), "the whole holds every column");
        }
    }
    let (witness, bad) = compiled.witness_of(inputs, aux, abc, first_bad.into_inner());
    let timings = CompiledTimings {
        assign,
        join: std::time::Duration::ZERO,
        products: t0.elapsed() - assign,
        parts: layout.parts.len(),
        in_place: true,
    };
    log::debug!("compiled synthesis in place: {timings:?}");
    Ok(InPlace::Done(CompiledWitness { witness, first_unsatisfied: bad, timings }))
}

/// The file format of a saved compiled circuit: bump when the layout or the recording
/// changes, so that files of another version are rebuilt, never used.
const FILE_MAGIC: &[u8; 8] = b"CUZKPCE\0";
const FILE_VERSION: u32 = 2;

/// Why a saved compiled circuit was not used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a compiled circuit, or of another format version ({reason})")]
    Format { path: String, reason: String },
    #[error("{path}: holds circuit {found:?}, not {want:?}")]
    OtherCircuit { path: String, want: String, found: String },
    #[error("{path}: truncated or corrupt (content hash mismatch or {reason})")]
    Corrupt { path: String, reason: String },
}

/// A writer that hashes what it writes.
struct Hashing<W: std::io::Write> {
    inner: W,
    hash: sha2::Sha256,
}

impl<W: std::io::Write> std::io::Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Fixed-width little-endian words of the file format.
trait Word: Copy {
    const BYTES: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

impl Word for u32 {
    const BYTES: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn get(bytes: &[u8]) -> Self {
        let mut b = [0u8; 4];
        b.copy_from_slice(bytes);
        u32::from_le_bytes(b)
    }
}

impl Word for u64 {
    const BYTES: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn get(bytes: &[u8]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        u64::from_le_bytes(b)
    }
}

/// A length (u64) then the words.
fn put_words<T: Word>(w: &mut impl std::io::Write, v: &[T]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u64).to_le_bytes())?;
    for chunk in v.chunks(1 << 16) {
        let mut bytes = Vec::with_capacity(chunk.len() * T::BYTES);
        chunk.iter().for_each(|x| x.put(&mut bytes));
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// A cursor over a file's bytes; every overrun is an error naming the part.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("{what} runs past the end"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::get(self.take(8, what)?))
    }
    fn len(&mut self, elem: usize, what: &str) -> Result<usize, String> {
        let n = self.u64(what)?;
        let n = usize::try_from(n).map_err(|_| format!("{what}: length {n}"))?;
        if n.checked_mul(elem).is_none_or(|b| b > self.bytes.len() - self.at) {
            return Err(format!("{what}: length {n} runs past the end"));
        }
        Ok(n)
    }
    /// A length then that many words (as [`put_words`] writes them).
    fn words<T: Word>(&mut self, what: &str) -> Result<Vec<T>, String> {
        let n = self.len(T::BYTES, what)?;
        Ok(self.take(n * T::BYTES, what)?.chunks_exact(T::BYTES).map(T::get).collect())
    }
}

impl CompiledCircuit {
    /// Writes this compiled circuit for circuit `key` to `path` (through a temporary file
    /// renamed into place, so a crash leaves the old file or none): magic, format version,
    /// key, counts, dictionary, matrices, densities, the parts' layout, then the SHA-256 of all of it.
    pub fn save(&self, key: &str, path: &std::path::Path) -> std::io::Result<()> {
        use sha2::Digest;
        use std::io::Write;
        let tmp = path.with_extension("tmp");
        let file = std::fs::File::create(&tmp)?;
        let mut w = Hashing { inner: std::io::BufWriter::with_capacity(1 << 20, file), hash: sha2::Sha256::new() };
        w.write_all(FILE_MAGIC)?;
        w.write_all(&FILE_VERSION.to_le_bytes())?;
        w.write_all(&(key.len() as u64).to_le_bytes())?;
        w.write_all(key.as_bytes())?;
        w.write_all(&(self.num_inputs as u64).to_le_bytes())?;
        w.write_all(&(self.num_aux as u64).to_le_bytes())?;
        w.write_all(&(self.dictionary.len() as u64).to_le_bytes())?;
        for v in &self.dictionary {
            w.write_all(v.to_repr().as_ref())?;
        }
        for m in [&self.a, &self.b, &self.c] {
            put_words(&mut w, &m.start)?;
            put_words(&mut w, &m.cols)?;
            put_words(&mut w, &m.coeffs)?;
        }
        for d in [&self.a_aux_density, &self.b_input_density, &self.b_aux_density] {
            w.write_all(&(d.len() as u64).to_le_bytes())?;
            put_words(&mut w, d.words())?;
        }
        // The parts' layout: prefix, then each part's share (inputs, aux, constraints); no
        // words at all when it was recorded whole.
        let counts = |c: &Counts| [c.inputs as u64, c.aux as u64, c.constraints as u64];
        let layout: Vec<u64> = match &self.layout {
            Some(l) => std::iter::once(&l.prefix).chain(&l.parts).flat_map(counts).collect(),
            None => Vec::new(),
        };
        put_words(&mut w, &layout)?;
        let digest = w.hash.finalize();
        let mut inner = w.inner;
        inner.write_all(&digest)?;
        inner.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    }

    /// Reads a compiled circuit saved by [`CompiledCircuit::save`] for `key`, checking its
    /// format version, its key, its content hash and every index in it. Any failure says
    /// why; the caller records the circuit again.
    pub fn load(key: &str, path: &std::path::Path) -> Result<CompiledCircuit, LoadError> {
        use sha2::Digest;
        let p = path.display().to_string();
        let io = |source| LoadError::Io { path: p.clone(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: read-only mapping of a file only cuzk writes (through a rename).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let format = |reason: String| LoadError::Format { path: p.clone(), reason };
        let corrupt = |reason: String| LoadError::Corrupt { path: p.clone(), reason };
        if map.len() < FILE_MAGIC.len() + 4 + 32 || &map[..8] != FILE_MAGIC {
            return Err(format("no compiled-circuit header".into()));
        }
        let version = u32::get(&map[8..12]);
        if version != FILE_VERSION {
            return Err(format(format!("format version {version}, this build reads {FILE_VERSION}")));
        }
        let (body, digest) = map.split_at(map.len() - 32);
        let mut r = Reader { bytes: body, at: 12 };
        let key_len = r.len(1, "key").map_err(&corrupt)?;
        let found = String::from_utf8_lossy(r.take(key_len, "key").map_err(&corrupt)?).into_owned();
        if found != key {
            return Err(LoadError::OtherCircuit { path: p.clone(), want: key.into(), found });
        }
        if sha2::Sha256::digest(body).as_slice() != digest {
            return Err(corrupt("the hash differs".into()));
        }
        let parse = |r: &mut Reader<'_>| -> Result<CompiledCircuit, String> {
            let num_inputs = r.u64("inputs")? as usize;
            let num_aux = r.u64("aux")? as usize;
            let n = r.len(32, "dictionary")?;
            let mut dictionary = Vec::with_capacity(n);
            for _ in 0..n {
                let mut repr = <Scalar as PrimeField>::Repr::default();
                repr.as_mut().copy_from_slice(r.take(32, "dictionary")?);
                dictionary.push(Option::from(Scalar::from_repr(repr)).ok_or("a coefficient is not a field element")?);
            }
            if dictionary.first() != Some(&Scalar::ONE) || dictionary.get(1) != Some(&-Scalar::ONE) {
                return Err("the dictionary does not start with 1 and -1".into());
            }
            let vars = num_inputs + num_aux;
            let mut matrix = |name: &str| -> Result<Matrix, String> {
                let m = Matrix { start: r.words(name)?, cols: r.words(name)?, coeffs: r.words(name)? };
                let ok = m.cols.len() == m.coeffs.len()
                    && m.start.first() == Some(&0)
                    && m.start.last() == Some(&(m.cols.len() as u64))
                    && m.start.windows(2).all(|w| w[0] <= w[1])
                    && m.cols.iter().all(|&c| (c as usize) < vars)
                    && m.coeffs.iter().all(|&c| (c as usize) < dictionary.len());
                ok.then_some(m).ok_or_else(|| format!("matrix {name} has an index out of range"))
            };
            let (a, b, c) = (matrix("A")?, matrix("B")?, matrix("C")?);
            if b.start.len() != a.start.len() || c.start.len() != a.start.len() {
                return Err("the matrices have different row counts".into());
            }
            let mut density = |name: &str, want: usize| -> Result<Density, String> {
                let len = r.u64(name)? as usize;
                let words = r.words(name)?;
                (len == want).then_some(()).ok_or_else(|| format!("density {name} has {len} bits, not {want}"))?;
                Density::from_words(words, len).ok_or_else(|| format!("density {name} is malformed"))
            };
            let a_aux_density = density("A aux", num_aux)?;
            let b_input_density = density("B inputs", num_inputs)?;
            let b_aux_density = density("B aux", num_aux)?;
            let words: Vec<u64> = r.words("layout")?;
            let layout = if words.is_empty() {
                None
            } else {
                if words.len() % 3 != 0 || words.len() < 6 {
                    return Err(format!("the layout has {} words", words.len()));
                }
                let mut counts = words.chunks_exact(3).map(|w| Counts { inputs: w[0] as usize, aux: w[1] as usize, constraints: w[2] as usize });
                let prefix = counts.next().expect("a prefix");
                let l = PartLayout { prefix, parts: counts.collect() };
                let own_constraints = (a.start.len() - 1).checked_sub(num_inputs).ok_or("fewer rows than inputs")?;
                l.fits(num_inputs, num_aux, own_constraints).then_some(l).map(Some).ok_or("the layout does not add up to the counts")?
            };
            if r.at != r.bytes.len() {
                return Err(format!("{} bytes after the last part", r.bytes.len() - r.at));
            }
            Ok(CompiledCircuit { num_inputs, num_aux, a, b, c, dictionary, a_aux_density, b_input_density, b_aux_density, layout })
        };
        parse(&mut r).map_err(corrupt)
    }
}

#[cfg(test)]
mod tests {
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
        witness_of_runs(runs, compiled, std::time::Instant::now(), Default::default(), count).unwrap().unwrap()
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
            witness_of_parts(cuts(c, 8), Some("piece_"), compiled).unwrap().unwrap()
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
        let got = witness_of_parts(cuts(&split, 8), Some("piece_"), &compiled).unwrap().unwrap();
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
