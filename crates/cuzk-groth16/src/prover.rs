//! The Groth16 proving algorithm over a [`Backend`].
//!
//! For one partition witness and its parameters:
//!
//! 1. h: iNTT of a, b, c; coset NTT; (a*b - c)/Z on the coset; coset iNTT; the first n-1
//!    coefficients are the scalars of the H MSM.
//! 2. MSMs: H (dense), L (aux), A (inputs, then aux with A-density), B in G1 and G2 (inputs
//!    and aux with B-density). Scalars 0 are dropped and scalars 1 become a batch addition
//!    before any MSM: PoRep witnesses are mostly bits.
//! 3. Assembly with blinding r, s:
//!    A = alpha + a(tau) + r delta, B = beta + b(tau) + s delta,
//!    C = h + l + s (alpha + a(tau)) + r (beta_1 + b_1(tau)) + r s delta_1.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};

use crate::backend::{Backend, BackendError, HOutcome, Selection};
use crate::pools::{cores, SidePool};
use crate::release::{drop_in_background, Garbage};
use crate::proof::Proof;
use crate::srs::{Srs, SrsShape};
use crate::witness::{Density, PartitionWitness};

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error(
        "parameters {path} do not fit this circuit: {section} has {found} points, the circuit \
         needs {expected} (wrong parameter file for this proof type?)"
    )]
    ParamsMismatch {
        path: String,
        section: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("the circuit has no constraints")]
    EmptyCircuit,
    #[error("malformed witness: {0}")]
    MalformedWitness(String),
    #[error("parameters {0} have delta at infinity (subverted or corrupt parameters)")]
    IdentityDelta(String),
    #[error("constraint {constraint} is not satisfied (a * b != c): the inputs do not belong together")]
    Unsatisfied { constraint: usize },
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Wall time of each proving stage of one partition.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveTimings {
    /// NTTs and the coset quotient: a, b, c to the coefficients of h.
    pub ntt_h: Duration,
    pub msm_h: Duration,
    /// Pairing the aux and input values with the L, A and B bases (zeros dropped, ones
    /// listed for a batch sum, the rest kept for an MSM): the time it added after the H
    /// step and its MSM, beside which it runs on the CPU.
    pub split: Duration,
    /// The split's own duration, from the start of the H step (not part of `total`).
    pub split_beside_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub assembly: Duration,
}

impl ProveTimings {
    pub fn total(&self) -> Duration {
        self.ntt_h + self.msm_h + self.split + self.msm_l + self.msm_a + self.msm_b_g1 + self.msm_b_g2 + self.assembly
    }

    pub fn accumulate(&mut self, o: &ProveTimings) {
        self.ntt_h += o.ntt_h;
        self.msm_h += o.msm_h;
        self.split += o.split;
        self.split_beside_h += o.split_beside_h;
        self.msm_l += o.msm_l;
        self.msm_a += o.msm_a;
        self.msm_b_g1 += o.msm_b_g1;
        self.msm_b_g2 += o.msm_b_g2;
        self.assembly += o.assembly;
    }
}

/// The scalars of one MSM query, split by value: zeros dropped, ones summed, the rest
/// multiplied. Positions index the query's (compacted) base array.
#[derive(Debug, Default)]
struct SplitScalars {
    ones: Vec<u32>,
    others: Vec<u32>,
    other_scalars: Vec<Scalar>,
}

/// Values per task of the parallel split (a multiple of 64: tasks start on whole words).
const SPLIT_CHUNK: usize = 1 << 16;
const SPLIT_CHUNK_WORDS: usize = SPLIT_CHUNK / 64;
const _: () = assert!(SPLIT_CHUNK % 64 == 0, "classify zips value chunks with word chunks");

/// What each value of one part (inputs or aux) is to the split, as bit masks, 64 values a
/// word (value i is bit i % 64 of word i / 64, as in a [`Density`]): the ones (summed) and
/// the values neither zero nor one (multiplied); zeros are in neither. Bits past the end are
/// clear. Built once per part in parallel; the three splits then read words, not 32-byte
/// field elements, and touch the values only for the few that are neither.
struct Classes {
    ones: Vec<u64>,
    others: Vec<u64>,
}

impl Garbage for Classes {
    fn release_pages(&mut self) {
        self.ones.release_pages();
        self.others.release_pages();
    }
}

fn classify(values: &[Scalar]) -> Classes {
    use rayon::prelude::*;
    let words = values.len().div_ceil(64);
    let (mut ones, mut others) = (vec![0u64; words], vec![0u64; words]);
    ones.par_chunks_mut(SPLIT_CHUNK_WORDS)
        .zip(others.par_chunks_mut(SPLIT_CHUNK_WORDS))
        .zip(values.par_chunks(SPLIT_CHUNK))
        .for_each(|((ones, others), values)| {
            for ((one, other), values) in ones.iter_mut().zip(others.iter_mut()).zip(values.chunks(64)) {
                let (mut o, mut x) = (0u64, 0u64);
                for (bit, v) in values.iter().enumerate() {
                    let is_one = *v == Scalar::ONE;
                    let is_other = !is_one & (*v != Scalar::ZERO);
                    o |= (is_one as u64) << bit;
                    x |= (is_other as u64) << bit;
                }
                (*one, *other) = (o, x);
            }
        });
    Classes { ones, others }
}

/// One part's values with their classes and the density that selects them (None: all).
#[derive(Clone, Copy)]
struct Classified<'a> {
    values: &'a [Scalar],
    class: &'a Classes,
    density: Option<&'a Density>,
}

impl Classified<'_> {
    /// The selection mask of word `w`: the density's word, or every value there is.
    fn selected(&self, w: usize) -> u64 {
        match self.density {
            Some(d) => d.words()[w],
            None => {
                let left = self.values.len() - w * 64;
                if left >= 64 { !0 } else { (1u64 << left) - 1 }
            }
        }
    }
}

impl Garbage for SplitScalars {
    fn release_pages(&mut self) {
        self.ones.release_pages();
        self.others.release_pages();
        self.other_scalars.release_pages();
    }
}

impl SplitScalars {
    /// Pairs the selected `inputs` then the selected `aux` with consecutive base positions,
    /// as the parameter file stores them. In parallel: a counting pass per chunk of words
    /// (population counts), prefix sums, then each chunk writes its own part of the outputs
    /// (the order is the sequential walk's). A value's position is its chunk's first
    /// position plus the selected values before it.
    fn new(inputs: Classified<'_>, aux: Classified<'_>) -> SplitScalars {
        use rayon::prelude::*;
        // (part, first word) of every chunk, inputs first.
        let chunks: Vec<(Classified<'_>, usize)> = [inputs, aux]
            .into_iter()
            .flat_map(|part| {
                (0..part.values.len().div_ceil(64)).step_by(SPLIT_CHUNK_WORDS).map(move |first| (part, first))
            })
            .collect();
        let words = |first: usize, part: &Classified<'_>| first..(first + SPLIT_CHUNK_WORDS).min(part.class.ones.len());
        // Per chunk: (selected, ones, others).
        let counts: Vec<(usize, usize, usize)> = chunks
            .par_iter()
            .map(|(part, first)| {
                let (mut n, mut o, mut x) = (0, 0, 0);
                for w in words(*first, part) {
                    let sel = part.selected(w);
                    n += sel.count_ones() as usize;
                    o += (part.class.ones[w] & sel).count_ones() as usize;
                    x += (part.class.others[w] & sel).count_ones() as usize;
                }
                (n, o, x)
            })
            .collect();
        let ones_total = counts.iter().map(|c| c.1).sum();
        let others_total = counts.iter().map(|c| c.2).sum();
        let mut s = SplitScalars {
            ones: vec![0; ones_total],
            others: vec![0; others_total],
            other_scalars: vec![Scalar::ZERO; others_total],
        };
        // Each chunk's output slices and its first base position.
        let mut parts = Vec::with_capacity(chunks.len());
        let (mut ones, mut others, mut scalars) =
            (&mut s.ones[..], &mut s.others[..], &mut s.other_scalars[..]);
        let mut pos = 0u32;
        for (&chunk, &(n, o, x)) in chunks.iter().zip(&counts) {
            let (o_here, o_rest) = std::mem::take(&mut ones).split_at_mut(o);
            let (x_here, x_rest) = std::mem::take(&mut others).split_at_mut(x);
            let (v_here, v_rest) = std::mem::take(&mut scalars).split_at_mut(x);
            (ones, others, scalars) = (o_rest, x_rest, v_rest);
            parts.push((chunk, pos, o_here, x_here, v_here));
            pos += n as u32;
        }
        parts.into_par_iter().for_each(|((part, first), mut pos, ones, others, scalars)| {
            let (mut o, mut x) = (0, 0);
            for w in words(first, &part) {
                let sel = part.selected(w);
                // The position of bit b: pos plus the selected bits below b.
                let at = |b: u32| pos + (sel & ((1u64 << b) - 1)).count_ones();
                let mut m = part.class.ones[w] & sel;
                while m != 0 {
                    ones[o] = at(m.trailing_zeros());
                    o += 1;
                    m &= m - 1;
                }
                let mut m = part.class.others[w] & sel;
                while m != 0 {
                    let b = m.trailing_zeros();
                    others[x] = at(b);
                    scalars[x] = part.values[w * 64 + b as usize];
                    x += 1;
                    m &= m - 1;
                }
                pos += sel.count_ones();
            }
        });
        s
    }

    /// The L, A and B splits of a witness.
    fn of_witness(
        input_assignment: &[Scalar],
        aux_assignment: &[Scalar],
        a_aux_density: &Density,
        b_input_density: &Density,
        b_aux_density: &Density,
    ) -> (SplitScalars, SplitScalars, SplitScalars) {
        let (input_class, aux_class) =
            rayon::join(|| classify(input_assignment), || classify(aux_assignment));
        let part = |values, class, density| Classified { values, class, density };
        let inputs = part(input_assignment, &input_class, None);
        let aux = part(aux_assignment, &aux_class, None);
        let none = Classes { ones: Vec::new(), others: Vec::new() };
        let (l, (a, b)) = rayon::join(
            || SplitScalars::new(part(&[], &none, None), aux),
            || {
                rayon::join(
                    || SplitScalars::new(inputs, Classified { density: Some(a_aux_density), ..aux }),
                    || {
                        SplitScalars::new(
                            Classified { density: Some(b_input_density), ..inputs },
                            Classified { density: Some(b_aux_density), ..aux },
                        )
                    },
                )
            },
        );
        drop_in_background((input_class, aux_class));
        (l, a, b)
    }

    fn msm_g1(&self, be: &dyn Backend, bases: &[G1Affine]) -> Result<G1Projective, BackendError> {
        Ok(be.sum_g1(bases, Selection::Indices(&self.ones))?
            + be.msm_g1(bases, Selection::Indices(&self.others), &self.other_scalars)?)
    }

    fn msm_g2(&self, be: &dyn Backend, bases: &[G2Affine]) -> Result<G2Projective, BackendError> {
        Ok(be.sum_g2(bases, Selection::Indices(&self.ones))?
            + be.msm_g2(bases, Selection::Indices(&self.others), &self.other_scalars)?)
    }
}

/// The shape a witness needs its parameters to have.
pub fn required_shape(w: &PartitionWitness) -> SrsShape {
    let n = crate::domain::domain_size(w.num_constraints());
    SrsShape {
        ic: w.input_assignment.len(),
        h: n - 1,
        l: w.aux_assignment.len(),
        a: w.input_assignment.len() + w.a_aux_density.total(),
        b_g1: w.b_input_density.total() + w.b_aux_density.total(),
        b_g2: w.b_input_density.total() + w.b_aux_density.total(),
    }
}

/// The witness's own lengths agree: a, b and c one value per constraint, each density one
/// bit per value it selects from; a deferred witness holds no a, b and c, and its
/// assignment has its circuit's counts.
fn check_witness(w: &PartitionWitness) -> Result<(), ProveError> {
    let (n, inputs, aux) = (w.a.len(), w.input_assignment.len(), w.aux_assignment.len());
    let (want_inputs, want_aux) = match &w.deferred {
        Some(d) => (d.circuit.num_inputs(), d.circuit.num_aux()),
        None => (inputs, aux),
    };
    let lengths = [
        ("b", w.b.len(), n),
        ("c", w.c.len(), n),
        ("input_assignment", inputs, want_inputs),
        ("aux_assignment", aux, want_aux),
        ("b_input_density", w.b_input_density.len(), inputs),
        ("a_aux_density", w.a_aux_density.len(), aux),
        ("b_aux_density", w.b_aux_density.len(), aux),
    ];
    for (what, found, expected) in lengths {
        if found != expected {
            return Err(ProveError::MalformedWitness(format!("{what} has {found} entries, expected {expected}")));
        }
    }
    if w.deferred.is_some() && n != 0 {
        return Err(ProveError::MalformedWitness(format!("a deferred witness holds {n} values of a, b and c, expected none")));
    }
    Ok(())
}

fn check_shape(srs: &Srs, w: &PartitionWitness) -> Result<(), ProveError> {
    let need = required_shape(w);
    let have = srs.shape_of();
    let sections = [
        ("vk.ic", need.ic, have.ic),
        ("h", need.h, have.h),
        ("l", need.l, have.l),
        ("a", need.a, have.a),
        ("b_g1", need.b_g1, have.b_g1),
        ("b_g2", need.b_g2, have.b_g2),
    ];
    for (section, expected, found) in sections {
        if expected != found {
            return Err(ProveError::ParamsMismatch {
                path: srs.path.display().to_string(),
                section,
                expected,
                found,
            });
        }
    }
    Ok(())
}

fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *slot += t.elapsed();
    r
}

/// How the prover uses the host: what an operator may set (cuzkd's `[prover]` section) and
/// benches compare. `Default` is what was measured best.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProverTuning {
    /// Threads of the pool that splits the scalars beside the H step ([`crate::pools`]):
    /// `None` is a quarter of the cores, at least 2 (the H200, 2026-12-03: a 2^27 H step's
    /// upload took 0.27 s beside a split on its own pool, 0.78 s beside one on the global
    /// pool; bench/history/2026-12-03.md); `Some(0)` splits on rayon's global pool. The split has the
    /// whole H step and H MSM to finish in.
    pub split_threads: Option<usize>,
}

impl ProverTuning {
    /// The split pool's thread count on this machine (0: rayon's global pool).
    pub fn split_pool_threads(&self) -> usize {
        self.split_threads.unwrap_or_else(|| (cores() / 4).max(2))
    }
}

static SPLIT_POOL: SidePool = SidePool::new("cuzk-split");

/// The scalar split alone, as [`prove_with`] runs it beside the H step (on the split pool of
/// `tuning`): its time, and per query (L, A, B) the count of ones and of other values. For
/// benches.
pub fn split_alone(w: &PartitionWitness, tuning: &ProverTuning) -> Result<(Duration, [(usize, usize); 3]), ProveError> {
    check_witness(w)?;
    let (splits, took) = split_on_pool(
        tuning,
        &w.input_assignment,
        &w.aux_assignment,
        &w.a_aux_density,
        &w.b_input_density,
        &w.b_aux_density,
    );
    let counts = |s: &SplitScalars| (s.ones.len(), s.others.len());
    let r = [counts(&splits.0), counts(&splits.1), counts(&splits.2)];
    drop_in_background(splits);
    Ok((took, r))
}

/// The L, A and B splits on the split pool, and the time they took.
fn split_on_pool(
    tuning: &ProverTuning,
    input_assignment: &[Scalar],
    aux_assignment: &[Scalar],
    a_aux_density: &Density,
    b_input_density: &Density,
    b_aux_density: &Density,
) -> ((SplitScalars, SplitScalars, SplitScalars), Duration) {
    let t0 = Instant::now();
    let splits = SPLIT_POOL.install(tuning.split_pool_threads(), || {
        SplitScalars::of_witness(input_assignment, aux_assignment, a_aux_density, b_input_density, b_aux_density)
    });
    (splits, t0.elapsed())
}

/// [`prove_with`] under the default [`ProverTuning`].
pub fn prove(
    be: &dyn Backend,
    srs: &Srs,
    w: PartitionWitness,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, ProveTimings), ProveError> {
    prove_with(be, srs, w, r, s, &ProverTuning::default())
}

/// Proves one partition with blinding `r`, `s`. The witness is consumed (its a, b, c become
/// h in place).
pub fn prove_with(
    be: &dyn Backend,
    srs: &Srs,
    w: PartitionWitness,
    r: Scalar,
    s: Scalar,
    tuning: &ProverTuning,
) -> Result<(Proof, ProveTimings), ProveError> {
    if w.num_constraints() == 0 {
        return Err(ProveError::EmptyCircuit);
    }
    check_witness(&w)?;
    check_shape(srs, &w)?;
    let vk = &srs.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::IdentityDelta(srs.path.display().to_string()));
    }
    let mut t = ProveTimings::default();
    let PartitionWitness {
        a,
        b,
        c,
        input_assignment,
        aux_assignment,
        a_aux_density,
        b_input_density,
        b_aux_density,
        deferred,
    } = w;

    // The H step and its MSM on the backend while the CPU splits the other MSMs' scalars.
    // A deferred witness's a, b and c are evaluated by the backend first.
    let started = Instant::now();
    let split = || {
        split_on_pool(tuning, &input_assignment, &aux_assignment, &a_aux_density, &b_input_density, &b_aux_density)
    };
    let (h_result, split_result) = std::thread::scope(|sc| {
        let splitter = sc.spawn(split);
        let h = match &deferred {
            None => be.h_msm(a, b, c, &srs.h).map(|(acc, step)| HOutcome::Done(acc, step)),
            Some(d) => be.h_msm_compiled(d.circuit.as_ref(), &input_assignment, &aux_assignment, &srs.h, !d.unchecked),
        };
        let h_done = Instant::now();
        (h.map(|r| (r, h_done)), splitter.join())
    });
    let ((h_acc, h_step), h_done) = match h_result? {
        (HOutcome::Done(acc, step), done) => ((acc, step), done),
        (HOutcome::Unsatisfied(constraint), _) => {
            if let Ok(((l, a, b), _)) = split_result {
                drop_in_background((l, a, b));
            }
            drop_in_background((aux_assignment, input_assignment));
            return Err(ProveError::Unsatisfied { constraint });
        }
    };
    let ((l_split, a_split, b_split), split_time) =
        split_result.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    t.ntt_h = h_step;
    t.msm_h = (h_done - started).saturating_sub(h_step);
    t.split = h_done.elapsed();
    t.split_beside_h = split_time;
    let l_acc = timed(&mut t.msm_l, || l_split.msm_g1(be, &srs.l))?;
    let a_acc = timed(&mut t.msm_a, || a_split.msm_g1(be, &srs.a))?;
    let b1_acc = timed(&mut t.msm_b_g1, || b_split.msm_g1(be, &srs.b_g1))?;
    let b2_acc = timed(&mut t.msm_b_g2, || b_split.msm_g2(be, &srs.b_g2))?;
    drop_in_background((aux_assignment, input_assignment, a_aux_density, b_aux_density, l_split, a_split, b_split));

    let proof = timed(&mut t.assembly, || {
        let delta_g1 = G1Projective::from(vk.delta_g1);
        let g_a = delta_g1 * r + vk.alpha_g1 + a_acc;
        let g_b = G2Projective::from(vk.delta_g2) * s + vk.beta_g2 + b2_acc;
        let g_c = h_acc
            + l_acc
            + (a_acc + vk.alpha_g1) * s
            + (b1_acc + vk.beta_g1) * r
            + delta_g1 * (r * s);
        let mut affine = [G1Affine::identity(); 2];
        G1Projective::batch_normalize(&[g_a, g_c], &mut affine);
        Proof {
            a: affine[0],
            b: g_b.to_affine(),
            c: affine[1],
        }
    });
    Ok((proof, t))
}

/// Random blinding values for a proof.
pub fn random_blinding<R: rand_core::RngCore>(rng: &mut R) -> (Scalar, Scalar) {
    (Scalar::random(&mut *rng), Scalar::random(&mut *rng))
}

/// Proves several partitions, synthesized witnesses in, proofs out, in order.
pub fn prove_all(
    be: &dyn Backend,
    srs: &Srs,
    witnesses: Vec<PartitionWitness>,
    blinding: &[(Scalar, Scalar)],
) -> Result<(Vec<Proof>, ProveTimings), ProveError> {
    assert_eq!(witnesses.len(), blinding.len(), "one (r, s) per witness");
    let mut total = ProveTimings::default();
    let mut proofs = Vec::with_capacity(witnesses.len());
    for (w, &(r, s)) in witnesses.into_iter().zip(blinding) {
        let (p, t) = prove(be, srs, w, r, s)?;
        total.accumulate(&t);
        proofs.push(p);
    }
    Ok((proofs, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The split as a sequential walk: every selected value in order, inputs then aux, its
    /// base position counting selected values only.
    fn walk(parts: &[(&[Scalar], Option<&Density>)]) -> (Vec<u32>, Vec<u32>, Vec<Scalar>) {
        let (mut ones, mut others, mut scalars, mut pos) = (vec![], vec![], vec![], 0u32);
        for (values, density) in parts {
            for (i, v) in values.iter().enumerate() {
                if density.is_some_and(|d| !d.get(i)) {
                    continue;
                }
                if *v == Scalar::ONE {
                    ones.push(pos);
                } else if *v != Scalar::ZERO {
                    others.push(pos);
                    scalars.push(*v);
                }
                pos += 1;
            }
        }
        (ones, others, scalars)
    }

    fn draw(rng: &mut rand_chacha::ChaCha8Rng, n: usize) -> (Vec<Scalar>, Density, Density) {
        // Runs of one class as well as mixed words, so that whole words are all one kind.
        let mut values = Vec::with_capacity(n);
        while values.len() < n {
            let run = rng.gen_range(1..200).min(n - values.len());
            let kind = rng.gen_range(0..4);
            for _ in 0..run {
                let k = if kind == 3 { rng.gen_range(0..3) } else { kind };
                values.push(match k {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    _ => Scalar::from(rng.gen_range(2u64..u64::MAX)),
                });
            }
        }
        let dense: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.7)).collect();
        // Whole words unselected (values 1000..1300) as well as scattered bits.
        let sparse: Vec<bool> = (0..n).map(|i| !(1000..1300).contains(&i) && (i % 97 == 0 || rng.gen_bool(0.2))).collect();
        (values, Density::from_fn(n, |i| dense[i]), Density::from_fn(n, |i| sparse[i]))
    }

    #[test]
    fn split_equals_the_sequential_walk() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let sizes = [
            (0, 0),
            (1, 1),
            (0, 130),
            (3, 63),
            (5, 64),
            (64, 65),
            (40, 1000),
            (129, 2 * SPLIT_CHUNK + 17),
            (2, 3 * SPLIT_CHUNK),
            (SPLIT_CHUNK + 70, 5000),
        ];
        for (n_in, n_aux) in sizes {
            let (inputs, _, b_in) = draw(&mut rng, n_in);
            let (aux, a_aux, b_aux) = draw(&mut rng, n_aux);
            let (l, a, b) = SplitScalars::of_witness(&inputs, &aux, &a_aux, &b_in, &b_aux);
            let got = |s: &SplitScalars| (s.ones.clone(), s.others.clone(), s.other_scalars.clone());
            assert_eq!(got(&l), walk(&[(&aux, None)]), "L, {n_in} inputs, {n_aux} aux");
            assert_eq!(got(&a), walk(&[(&inputs, None), (&aux, Some(&a_aux))]), "A, {n_in} inputs, {n_aux} aux");
            assert_eq!(got(&b), walk(&[(&inputs, Some(&b_in)), (&aux, Some(&b_aux))]), "B, {n_in} inputs, {n_aux} aux");
        }
    }

    #[test]
    fn mismatched_densities_are_refused_by_name() {
        let mut w = PartitionWitness {
            a: vec![Scalar::ONE; 4],
            b: vec![Scalar::ONE; 4],
            c: vec![Scalar::ONE; 4],
            input_assignment: vec![Scalar::ONE],
            aux_assignment: vec![Scalar::ONE; 70],
            a_aux_density: Density::from_fn(70, |_| true),
            b_input_density: Density::from_fn(1, |_| true),
            b_aux_density: Density::from_fn(70, |_| true),
            deferred: None,
        };
        assert!(split_alone(&w, &ProverTuning::default()).is_ok());
        w.b_aux_density = Density::from_fn(64, |_| true);
        let e = split_alone(&w, &ProverTuning::default()).unwrap_err().to_string();
        assert_eq!(e, "malformed witness: b_aux_density has 64 entries, expected 70");
        w.b_aux_density = Density::from_fn(70, |_| true);
        w.c.pop();
        let e = split_alone(&w, &ProverTuning::default()).unwrap_err().to_string();
        assert_eq!(e, "malformed witness: c has 3 entries, expected 4");
    }
}
