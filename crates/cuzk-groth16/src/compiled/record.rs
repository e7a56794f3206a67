//! Recording: the constraint systems that run a circuit for its assignments (and, when
//! recording, its rows), the parts joined, and the compiled circuit built from the rows.

use super::*;

/// Rows of one matrix as recorded, columns tagged (input or aux, local to the CS).
#[derive(Default)]
pub(super) struct Rows {
    pub(super) start: Vec<u64>,
    pub(super) cols: Vec<u32>,
    pub(super) coeffs: Vec<u32>,
}

impl Rows {
    pub(super) fn new() -> Rows {
        Rows { start: vec![0], ..Default::default() }
    }

    pub(super) fn push(&mut self, lc: &LinearCombination<Scalar>, dict: &mut Dictionary) {
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
    pub(super) fn extend(&mut self, other: &Rows, inputs: usize, aux: usize, ids: &[u32]) {
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
    pub(super) fn finish(self, num_inputs: usize) -> Matrix {
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

pub(super) fn tag_input(i: usize) -> u32 {
    assert!(i < INPUT_TAG as usize, "too many inputs for a compiled circuit");
    i as u32 | INPUT_TAG
}

pub(super) fn tag_aux(i: usize) -> u32 {
    assert!(i < INPUT_TAG as usize, "too many aux variables for a compiled circuit");
    i as u32
}

pub(super) struct Dictionary {
    pub(super) values: Vec<Scalar>,
    pub(super) ids: HashMap<[u8; 32], u32>,
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
    pub(super) fn id(&mut self, v: &Scalar) -> u32 {
        let key = v.to_repr();
        let next = self.values.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            self.values.push(*v);
            next
        })
    }

    /// Our ids of `other`'s coefficients (added when new).
    pub(super) fn merge(&mut self, other: &Dictionary) -> Vec<u32> {
        other.values.iter().map(|v| self.id(v)).collect()
    }
}

/// What a recording constraint system keeps besides assignments.
#[derive(Default)]
pub(super) struct Recorder {
    pub(super) rows: [Rows; 3],
    pub(super) dict: Dictionary,
}

impl Recorder {
    /// One constraint's rows, its linear combinations built here.
    pub(super) fn record(
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
pub(super) struct Mark {
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) constraints: usize,
    /// Terms of A, B and C so far (recording only).
    pub(super) terms: [usize; 3],
}

/// The constraint system of the compiled path: it records assignments, and with
/// `RECORD` also every constraint's A, B and C rows (that is [`RecordingCs`]; without it,
/// [`WitnessOnlyCs`], whose `enforce` never calls the closures that build linear
/// combinations, where most of the synthesis time goes, and which is a witness generator). With a marker, it notes the counts
/// at the start of each top-level namespace whose name starts with the marker (see
/// [`synthesize_compiled_pieces`]). Extensible: a sub-system made with `new()` records
/// like its parent and joins it with `extend`.
pub struct AssignmentCs<const RECORD: bool> {
    pub(super) inputs: Vec<Scalar>,
    pub(super) aux: Vec<Scalar>,
    pub(super) constraints: usize,
    pub(super) depth: usize,
    pub(super) marker: Option<&'static str>,
    pub(super) marks: Vec<Mark>,
    pub(super) recorder: Option<Box<Recorder>>,
}

/// Assignments only.
pub type WitnessOnlyCs = AssignmentCs<false>;
/// Assignments and the constraints' rows: what [`compile`] records with.
pub type RecordingCs = AssignmentCs<true>;

impl<const RECORD: bool> AssignmentCs<RECORD> {
    pub(super) fn with_marker(marker: Option<&'static str>) -> Self {
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

    pub(super) fn mark(&self) -> Mark {
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

/// The parts synthesized in parallel, each in its own constraint system, with room for
/// `aux_room` aux values each up front (on huge pages: [`crate::hugepages`]; a part that
/// needs more grows as a vector does).
pub(super) fn run_parts<C: Circuit<Scalar> + Send, const RECORD: bool>(
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
pub(super) struct Joined {
    pub(super) inputs: Vec<Scalar>,
    pub(super) aux: Vec<Scalar>,
    /// The circuit's own constraints (without the input constraints).
    pub(super) constraints: usize,
    pub(super) recorder: Option<Box<Recorder>>,
    /// How the parts split it (None: one part).
    pub(super) layout: Option<PartLayout>,
}

/// Joins parts that each hold the common prefix and a run of the pieces: the first part
/// whole, then every later one from its first mark on. A prefix variable that a piece
/// refers to is the first part's (the prefixes are equal: checked by their counts). A part
/// without a mark, or with another prefix, is refused.
pub(super) fn join<const RECORD: bool>(mut runs: Vec<AssignmentCs<RECORD>>) -> Result<Joined, SynthesisError> {
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
pub(super) fn density_of(m: &Matrix, range: std::ops::Range<usize>) -> Density {
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
pub(super) fn compiled_of(joined: &mut Joined) -> CompiledCircuit {
    let recorder = *joined.recorder.take().expect("a recording");
    let layout = joined.layout.take();
    compiled_of_rows(recorder, joined.inputs.len(), joined.aux.len(), joined.constraints, layout)
}

/// The compiled circuit of recorded rows over `ni` inputs and `na` aux variables
/// (`constraints`: the circuit's own, without the input constraints this adds).
pub(super) fn compiled_of_rows(recorder: Recorder, ni: usize, na: usize, constraints: usize, layout: Option<PartLayout>) -> CompiledCircuit {
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
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) constraints: usize,
    pub(super) recorder: Recorder,
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

