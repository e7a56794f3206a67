//! Pre-compiled constraints: a circuit's R1CS recorded once, so that each later proof runs
//! the circuit only for its variable assignments and gets a, b and c as sparse
//! matrix-vector products.
//!
//! - [`RecordingCs`] synthesizes a circuit the way [`WitnessCs`] does (same witness) and
//!   records the A, B and C rows of every constraint: [`compile`].
//! - [`WitnessOnlyCs`] records assignments only. Its `enforce` never calls the closures that
//!   build linear combinations, which is where most of the synthesis time goes.
//! - [`CompiledCircuit::witness`] turns assignments into a [`PartitionWitness`] equal to
//!   `WitnessCs`'s: a, b, c evaluated row by row in parallel, densities taken from the
//!   recorded structure.
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

use crate::witness::{Density, PartitionWitness, WitnessCs};

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

    /// Distinct coefficients.
    pub fn dictionary_len(&self) -> usize {
        self.dictionary.len()
    }

    /// Row `row` of `m` at z = inputs ++ aux (read in place, never concatenated).
    #[inline]
    fn eval_row(&self, m: &Matrix, row: usize, inputs: &[Scalar], aux: &[Scalar]) -> Scalar {
        let (lo, hi) = (m.start[row] as usize, m.start[row + 1] as usize);
        let ni = inputs.len();
        let mut acc = Scalar::ZERO;
        for t in lo..hi {
            let c = m.cols[t] as usize;
            let v = if c < ni { &inputs[c] } else { &aux[c - ni] };
            match m.coeffs[t] {
                COEFF_ONE => acc += v,
                COEFF_MINUS_ONE => acc -= v,
                id => acc += *v * self.dictionary[id as usize],
            }
        }
        acc
    }

    /// The witness of these assignments: equal to what [`WitnessCs`] records for the same
    /// circuit and values.
    pub fn witness(&self, inputs: Vec<Scalar>, aux: Vec<Scalar>) -> PartitionWitness {
        self.witness_checked(inputs, aux).0
    }

    /// As [`CompiledCircuit::witness`], and the first constraint with a * b != c (as
    /// `PartitionWitness::first_unsatisfied` gives it), checked in the same pass over the
    /// rows.
    pub fn witness_checked(&self, inputs: Vec<Scalar>, aux: Vec<Scalar>) -> (PartitionWitness, Option<usize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        assert_eq!((inputs.len(), aux.len()), (self.num_inputs, self.num_aux));
        const ROWS: usize = 1 << 12;
        let n = self.num_constraints();
        let (mut a, mut b, mut c) = (vec![Scalar::ZERO; n], vec![Scalar::ZERO; n], vec![Scalar::ZERO; n]);
        let first_bad = AtomicUsize::new(usize::MAX);
        a.par_chunks_mut(ROWS)
            .zip(b.par_chunks_mut(ROWS))
            .zip(c.par_chunks_mut(ROWS))
            .enumerate()
            .for_each(|(k, ((pa, pb), pc))| {
                for j in 0..pa.len() {
                    let row = k * ROWS + j;
                    pa[j] = self.eval_row(&self.a, row, &inputs, &aux);
                    pb[j] = self.eval_row(&self.b, row, &inputs, &aux);
                    pc[j] = self.eval_row(&self.c, row, &inputs, &aux);
                    if pa[j] * pb[j] != pc[j] {
                        first_bad.fetch_min(row, Ordering::Relaxed);
                    }
                }
            });
        let bad = first_bad.into_inner();
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

/// Distinct coefficients, ONE and -ONE first.
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
}

/// A constraint system that records the witness (as [`WitnessCs`]) and every constraint's
/// rows. Extensible like `WitnessCs`.
pub struct RecordingCs {
    w: WitnessCs,
    rows: [Rows; 3],
    dict: Dictionary,
}

impl RecordingCs {
    pub(crate) fn input_count(&self) -> usize {
        self.w.counts().0
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        RecordingCs {
            w: WitnessCs::new(),
            rows: [Rows::new(), Rows::new(), Rows::new()],
            dict: Dictionary::default(),
        }
    }

    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.alloc(name, f)
    }

    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.alloc_input(name, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero()));
        for (rows, lc) in self.rows.iter_mut().zip([&a, &b, &c]) {
            rows.push(lc, &mut self.dict);
        }
        self.w.push_constraint(&a, &b, &c);
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

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        let (inputs, aux) = self.w.counts();
        let ids: Vec<u32> = other.dict.values.iter().map(|v| self.dict.id(v)).collect();
        for (mine, theirs) in self.rows.iter_mut().zip(&other.rows) {
            mine.extend(theirs, inputs, aux, &ids);
        }
        self.w.extend(&other.w);
    }
}

/// Synthesizes `circuit` once, recording its constraints: the witness (equal to
/// [`PartitionWitness::synthesize`]'s) and the compiled circuit for later proofs.
pub fn compile<C: Circuit<Scalar>>(
    circuit: C,
) -> Result<(PartitionWitness, CompiledCircuit), SynthesisError> {
    let mut cs = RecordingCs::new();
    crate::witness::synthesize_into(&mut cs, circuit)?;
    let RecordingCs { w, rows, dict } = cs;
    let w = w.into_witness();
    let num_inputs = w.input_assignment.len();
    let [a, b, c] = rows;
    let compiled = CompiledCircuit {
        num_inputs,
        num_aux: w.aux_assignment.len(),
        a: a.finish(num_inputs),
        b: b.finish(num_inputs),
        c: c.finish(num_inputs),
        dictionary: dict.values,
        a_aux_density: w.a_aux_density.clone(),
        b_input_density: w.b_input_density.clone(),
        b_aux_density: w.b_aux_density.clone(),
    };
    Ok((w, compiled))
}

/// A constraint system that records assignments only: `enforce` counts the constraint and
/// builds nothing. With a marker, it also notes the counts at the start of each top-level
/// namespace whose name starts with the marker (see [`synthesize_compiled_pieces`]).
#[derive(Default)]
pub struct WitnessOnlyCs {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    constraints: usize,
    depth: usize,
    marker: Option<&'static str>,
    /// (inputs, aux, constraints) when each marked namespace began.
    marks: Vec<(usize, usize, usize)>,
}

impl ConstraintSystem<Scalar> for WitnessOnlyCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
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

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 {
            if let Some(m) = self.marker {
                if name().into().starts_with(m) {
                    self.marks.push((self.inputs.len(), self.aux.len(), self.constraints));
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

    fn extend(&mut self, other: &Self) {
        // The first input of `other` is its temporary ONE.
        self.inputs.extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
        self.constraints += other.constraints;
    }
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
) -> Result<Result<(PartitionWitness, Option<usize>), CompiledMismatch>, SynthesisError> {
    let t0 = std::time::Instant::now();
    let count = parts.len();
    let runs: Vec<WitnessOnlyCs> = parts
        .into_par_iter()
        .map(|circuit| {
            let mut cs = WitnessOnlyCs { marker: Some(marker), ..Default::default() };
            cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            circuit.synthesize(&mut cs)?;
            Ok(cs)
        })
        .collect::<Result<_, SynthesisError>>()?;
    let witness_time = t0.elapsed();
    let mut whole = WitnessOnlyCs::default();
    // One copy into vectors of the final size (the counts are checked below).
    whole.inputs.reserve_exact(runs.iter().map(|r| r.inputs.len()).sum());
    whole.aux.reserve_exact(runs.iter().map(|r| r.aux.len()).sum());
    for (j, run) in runs.into_iter().enumerate() {
        let Some(&(i0, a0, c0)) = run.marks.first() else {
            return Err(SynthesisError::Unsatisfiable);
        };
        let (i0, a0, c0) = if j == 0 { (0, 0, 0) } else { (i0, a0, c0) };
        whole.inputs.extend_from_slice(&run.inputs[i0..]);
        whole.aux.extend_from_slice(&run.aux[a0..]);
        whole.constraints += run.constraints - c0;
    }
    let join_time = t0.elapsed() - witness_time;
    let r = finish_compiled(whole, compiled);
    log::debug!(
        "compiled synthesis: {count} parts witness-only in {:.3} s, joined in {:.3} s, a/b/c and check in {:.3} s",
        witness_time.as_secs_f64(),
        join_time.as_secs_f64(),
        (t0.elapsed() - witness_time - join_time).as_secs_f64()
    );
    r
}

/// Synthesizes `circuit` for its assignments only and evaluates a, b, c from `compiled`:
/// equal to [`PartitionWitness::synthesize`] for a circuit of the compiled structure, with
/// its first unsatisfied constraint (checked in the same pass). Counts that differ from
/// the recording are refused.
pub fn synthesize_compiled<C: Circuit<Scalar>>(
    circuit: C,
    compiled: &CompiledCircuit,
) -> Result<Result<(PartitionWitness, Option<usize>), CompiledMismatch>, SynthesisError> {
    let mut cs = WitnessOnlyCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    finish_compiled(cs, compiled)
}

fn finish_compiled(
    cs: WitnessOnlyCs,
    compiled: &CompiledCircuit,
) -> Result<Result<(PartitionWitness, Option<usize>), CompiledMismatch>, SynthesisError> {
    // One `x * 0 = 0` constraint per input, as the reference appends.
    let constraints = cs.constraints + cs.inputs.len();
    if (cs.inputs.len(), cs.aux.len(), constraints)
        != (compiled.num_inputs, compiled.num_aux, compiled.num_constraints())
    {
        return Ok(Err(CompiledMismatch {
            want_inputs: compiled.num_inputs,
            want_aux: compiled.num_aux,
            want_constraints: compiled.num_constraints(),
            inputs: cs.inputs.len(),
            aux: cs.aux.len(),
            constraints,
        }));
    }
    Ok(Ok(compiled.witness_checked(cs.inputs, cs.aux)))
}

/// The file format of a saved compiled circuit: bump when the layout or the recording
/// changes, so that files of another version are rebuilt, never used.
const FILE_MAGIC: &[u8; 8] = b"CUZKPCE\0";
const FILE_VERSION: u32 = 1;

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
    /// key, counts, dictionary, matrices, densities, then the SHA-256 of all of it.
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
            if r.at != r.bytes.len() {
                return Err(format!("{} bytes after the last part", r.bytes.len() - r.at));
            }
            Ok(CompiledCircuit { num_inputs, num_aux, a, b, c, dictionary, a_aux_density, b_input_density, b_aux_density })
        };
        parse(&mut r).map_err(corrupt)
    }
}
