//! Shape-only inputs for benchmarks: a witness with a partition's counts, densities and
//! scalar mix, and random parameters with exactly the section sizes that witness needs.
//!
//! Neither can verify: the witness satisfies no circuit and the parameters come from no
//! setup. They exist so that the prover's code path (what [`crate::prove`] runs) can be
//! measured at the 32 GiB partition's size without a 32 GiB sector or its 47 GB parameter
//! file. Every user must say so in its output; the daemon never sees them.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::path::PathBuf;

pub use crate::affine::BatchAffine;
use crate::srs::{Srs, SrsShape, VerifyingKey};
use crate::witness::{Density, PartitionWitness};

/// Fractions of zeros and ones among some values (the rest are other field elements).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalarMix {
    pub zero: f64,
    pub one: f64,
}

impl ScalarMix {
    /// The mix of `values`.
    pub fn of(values: &[Scalar]) -> ScalarMix {
        let (zeros, ones) = values
            .par_iter()
            .fold(
                || (0usize, 0usize),
                |(z, o), v| {
                    if bool::from(v.is_zero()) {
                        (z + 1, o)
                    } else if *v == Scalar::ONE {
                        (z, o + 1)
                    } else {
                        (z, o)
                    }
                },
            )
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let n = values.len().max(1) as f64;
        ScalarMix {
            zero: zeros as f64 / n,
            one: ones as f64 / n,
        }
    }

    /// A value drawn with this mix.
    fn draw(&self, r: &mut ChaCha20Rng) -> Scalar {
        let u: f64 = r.gen();
        if u < self.zero {
            Scalar::ZERO
        } else if u < self.zero + self.one {
            Scalar::ONE
        } else {
            Scalar::random(r)
        }
    }
}

impl std::fmt::Display for ScalarMix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1}% zero, {:.1}% one, {:.1}% other",
            100.0 * self.zero,
            100.0 * self.one,
            100.0 * (1.0 - self.zero - self.one)
        )
    }
}

/// The scalar mix of each part of a witness.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WitnessMix {
    pub a: ScalarMix,
    pub b: ScalarMix,
    pub c: ScalarMix,
    pub aux: ScalarMix,
}

impl WitnessMix {
    /// Measured on a synthesized witness.
    pub fn of(w: &PartitionWitness) -> WitnessMix {
        WitnessMix {
            a: ScalarMix::of(&w.a),
            b: ScalarMix::of(&w.b),
            c: ScalarMix::of(&w.c),
            aux: ScalarMix::of(&w.aux_assignment),
        }
    }
}

/// The counts of one partition circuit, which a shape-only witness reproduces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartitionShape {
    /// Constraints, the input constraints included (the domain is the next power of two).
    pub constraints: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    pub aux: usize,
    /// Fractions of aux variables in the A and B queries.
    pub a_aux_density: f64,
    pub b_aux_density: f64,
}

/// The 32 GiB PoRep partition (StackedDrg32GiBV1_1) as synthesized by storage-proofs-porep
/// 19: 130,278,869 constraints, 328 inputs, 130,169,893 aux, A aux density 99.7%, B aux
/// density 25.4% (figures measured on the circuit, given in issue #9).
pub const POREP_32GIB: PartitionShape = PartitionShape {
    constraints: 130_278_869,
    inputs: 328,
    aux: 130_169_893,
    a_aux_density: 0.997,
    b_aux_density: 0.254,
};

impl PartitionShape {
    /// The 32 GiB partition's proportions at a domain of 2^log_n: constraints fill the
    /// domain as they do at 2^27 (97.1%, never exactly a power of two), aux in proportion.
    pub fn porep_scaled(log_n: u32) -> PartitionShape {
        let full = POREP_32GIB;
        let domain = 1usize << log_n;
        let fill = full.constraints as f64 / (1u64 << 27) as f64;
        let constraints = ((domain as f64 * fill) as usize).max(full.inputs + 2);
        let aux = (constraints as f64 * full.aux as f64 / full.constraints as f64) as usize;
        PartitionShape {
            constraints,
            inputs: full.inputs.min(constraints / 4).max(1),
            aux: aux.max(1),
            ..full
        }
    }

    /// A shape by name: `32GiB` (a 32 GiB PoRep partition) or `2^N` (its proportions at a
    /// domain of 2^N, N from 10 to 28); the error says what is accepted.
    pub fn parse(s: &str) -> Result<PartitionShape, String> {
        if s == "32GiB" {
            return Ok(POREP_32GIB);
        }
        if let Some(k) = s.strip_prefix("2^") {
            return match k.parse::<u32>() {
                Ok(k) if (10..=28).contains(&k) => Ok(PartitionShape::porep_scaled(k)),
                _ => Err(format!("shape {s:?}: 2^N with N from 10 to 28")),
            };
        }
        Err(format!(
            "shape {s:?}: 32GiB or 2^N (64GiB needs its circuit's counts, which no 64 GiB \
             synthesis has measured here, and its ~94 GB of parameters do not fit beside a \
             witness in a 128 GiB host)"
        ))
    }

    /// The domain size of this shape's NTTs.
    pub fn domain(&self) -> usize {
        self.constraints.next_power_of_two()
    }
}

fn rng(seed: u64, stream: u64) -> ChaCha20Rng {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// A deterministic bit with probability `p` for index i (a hash, so parallel and cheap).
fn coin(seed: u64, i: usize, p: f64) -> bool {
    let mut x = (i as u64 ^ seed.rotate_left(17)).wrapping_mul(0x9e3779b97f4a7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 29;
    ((x >> 11) as f64 / (1u64 << 53) as f64) < p
}

const CHUNK: usize = 1 << 14;

fn draw_values(n: usize, mix: ScalarMix, seed: u64, stream: u64) -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(k, out)| {
        let mut r = rng(seed, stream << 40 | k as u64);
        for x in out {
            *x = mix.draw(&mut r);
        }
    });
    v
}

/// A witness with `shape`'s counts and densities, its values drawn with `mix` (shape-only:
/// it satisfies no circuit). Inputs are ONE then random values; B takes every input.
///
/// a and b are drawn with their mixes and c is their product, row by row, as in any witness
/// that satisfies its constraints (`mix.c` is not used): then A·B − C is divisible by
/// x^n − 1 and h is the exact quotient, the same polynomial whatever coset a prover
/// evaluates it on. With c drawn on its own, h depended on the coset, and two correct provers
/// on different cosets (bellperson's and supraseal-c2's) gave different C points.
pub fn shape_witness(shape: &PartitionShape, mix: &WitnessMix, seed: u64) -> PartitionWitness {
    let mut input_assignment = draw_values(shape.inputs, ScalarMix { zero: 0.0, one: 0.0 }, seed, 1);
    input_assignment[0] = Scalar::ONE;
    let a = draw_values(shape.constraints, mix.a, seed, 2);
    let b = draw_values(shape.constraints, mix.b, seed, 3);
    let mut c = vec![Scalar::ZERO; shape.constraints];
    c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK))).for_each(|(c, (a, b))| {
        for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
            *c = a * b;
        }
    });
    PartitionWitness {
        a,
        b,
        c,
        input_assignment,
        aux_assignment: draw_values(shape.aux, mix.aux, seed, 5),
        a_aux_density: Density::from_fn(shape.aux, |i| coin(seed ^ 0xa, i, shape.a_aux_density)),
        b_input_density: Density::from_fn(shape.inputs, |_| true),
        b_aux_density: Density::from_fn(shape.aux, |i| coin(seed ^ 0xb, i, shape.b_aux_density)),
        deferred: None,
    }
}


/// Points per run of [`random_points`]: each run starts at its own random point and steps
/// by its own random point.
pub const RUN_LOG: u32 = 12;

/// The start and step of each run of [`random_points`]`(n, seed, stream)`, in affine form:
/// point j of run k is `start_k + (j + 1) step_k`. A device that makes the points
/// (cuzk-gpu's [`RandomPoints`]) takes these from here, so that both make the same points.
pub fn run_seeds<P>(n: usize, seed: u64, stream: u64) -> Vec<(P::Affine, P::Affine)>
where
    P: BatchAffine + Curve<AffineRepr = <P as BatchAffine>::Affine>,
{
    (0..n.div_ceil(1 << RUN_LOG))
        .into_par_iter()
        .map(|k| {
            let mut r = rng(seed, stream << 40 | k as u64);
            let step = P::random(&mut r).to_affine();
            let start = P::random(&mut r).to_affine();
            (start, step)
        })
        .collect()
}

/// `n` distinct random points, fast and deterministic in `(seed, stream)`: per run of
/// 2^[`RUN_LOG`] a random start and a random affine step ([`run_seeds`]), one mixed addition
/// per point, then one batch conversion of the run straight into the output. Benches and
/// tests only.
pub fn random_points<P>(n: usize, seed: u64, stream: u64) -> Vec<P::Affine>
where
    P: BatchAffine + Curve<AffineRepr = <P as BatchAffine>::Affine>,
{
    let seeds = run_seeds::<P>(n, seed, stream);
    let mut out = vec![P::identity_affine(); n];
    runs_to_points::<P>(&seeds, &mut out);
    out
}

/// The points of consecutive runs from their seeds into `out` (whose length may end inside
/// the last run).
fn runs_to_points<P>(seeds: &[(P::Affine, P::Affine)], out: &mut [P::Affine])
where
    P: BatchAffine + Curve<AffineRepr = <P as BatchAffine>::Affine>,
{
    out.par_chunks_mut(1 << RUN_LOG).zip(seeds).for_each(|(o, &(start, step))| {
        let mut p = P::add_affine(&P::identity(), &start);
        let proj: Vec<P> = (0..o.len())
            .map(|_| {
                p = P::add_affine(&p, &step);
                p
            })
            .collect();
        P::to_affine_batch(&proj, o);
    });
}

/// Points per slice of [`RandomPoints::g1_each`] and `g2_each`: whole runs, 400 MB of G1.
pub const SLICE: usize = 1 << 22;
const _: () = assert!(SLICE % (1 << RUN_LOG) == 0);

/// A point sink of [`RandomPoints`]: `(index of the slice's first point, the slice)`.
pub type Sink<'a, A> = &'a mut dyn FnMut(usize, &[A]) -> std::io::Result<()>;

/// [`random_points`] slice by slice ([`SLICE`] points, the last one shorter) into `sink`,
/// never all at once in host memory.
fn host_points_each<P>(n: usize, seed: u64, stream: u64, sink: Sink<'_, P::Affine>) -> std::io::Result<()>
where
    P: BatchAffine + Curve<AffineRepr = <P as BatchAffine>::Affine>,
{
    let seeds = run_seeds::<P>(n, seed, stream);
    let mut buf = vec![P::identity_affine(); SLICE.min(n)];
    for first in (0..n).step_by(SLICE) {
        let out = &mut buf[..SLICE.min(n - first)];
        runs_to_points::<P>(&seeds[first >> RUN_LOG..], out);
        sink(first, out)?;
    }
    Ok(())
}

/// Where the random parameter points of [`random_srs_with`] are made: on the host
/// ([`HostPoints`], [`random_points`]) or on a device, which must make exactly the points
/// [`random_points`] makes (from [`run_seeds`]).
pub trait RandomPoints: Sync {
    /// Where, for messages ("the host", "gpu0 NVIDIA H200").
    fn place(&self) -> String;
    fn g1(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G1Affine>, crate::BackendError>;
    fn g2(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G2Affine>, crate::BackendError>;
    /// The points of [`RandomPoints::g1`] in consecutive slices of [`SLICE`] points, each
    /// handed to `sink` (for a spill file: [`random_srs_spilled`]).
    fn g1_each(&self, n: usize, seed: u64, stream: u64, sink: Sink<'_, G1Affine>) -> std::io::Result<()>;
    fn g2_each(&self, n: usize, seed: u64, stream: u64, sink: Sink<'_, G2Affine>) -> std::io::Result<()>;
}

/// [`random_points`] on the host's cores.
pub struct HostPoints;

impl RandomPoints for HostPoints {
    fn place(&self) -> String {
        "the host".into()
    }
    fn g1(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G1Affine>, crate::BackendError> {
        Ok(random_points::<G1Projective>(n, seed, stream))
    }
    fn g2(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G2Affine>, crate::BackendError> {
        Ok(random_points::<G2Projective>(n, seed, stream))
    }
    fn g1_each(&self, n: usize, seed: u64, stream: u64, sink: Sink<'_, G1Affine>) -> std::io::Result<()> {
        host_points_each::<G1Projective>(n, seed, stream, sink)
    }
    fn g2_each(&self, n: usize, seed: u64, stream: u64, sink: Sink<'_, G2Affine>) -> std::io::Result<()> {
        host_points_each::<G2Projective>(n, seed, stream, sink)
    }
}

/// Random parameters with exactly `shape`'s section sizes (shape-only: no setup made them,
/// no proof made with them verifies). Host memory: `shape.point_bytes()`. The G1 sections
/// h, l, a and b_g1 are prefixes of one pool of distinct random points (generating 47 GB
/// point by point costs minutes; copying takes seconds): points are distinct within each
/// section, which is what an MSM's cost depends on.
pub fn random_srs(shape: &SrsShape, seed: u64) -> Srs {
    random_srs_with(shape, seed, &HostPoints).expect("the host's generator does not fail")
}

/// [`random_srs`] with its point sections made by `points` (the same parameters wherever
/// they are made).
pub fn random_srs_with(shape: &SrsShape, seed: u64, points: &dyn RandomPoints) -> Result<Srs, crate::BackendError> {
    let vk = random_vk(shape, seed, points)?;
    // h, l, a and b_g1 are prefixes of one pool: copies in parallel, and the pool itself
    // for the longest.
    let sizes = [shape.h, shape.l, shape.a, shape.b_g1];
    let longest = (0..4).max_by_key(|&i| (sizes[i], std::cmp::Reverse(i))).unwrap_or(0);
    let pool = points.g1(sizes[longest], seed, 2)?;
    let mut sections: [Vec<G1Affine>; 4] = Default::default();
    for (i, n) in sizes.into_iter().enumerate() {
        if i != longest {
            sections[i] = pool[..n].par_iter().copied().collect();
        }
    }
    sections[longest] = pool;
    let [h, l, a, b_g1] = sections;
    Ok(Srs {
        path: PathBuf::from(format!("<random shape-only parameters, seed {seed}>")),
        vk,
        h: h.into(),
        l: l.into(),
        a: a.into(),
        b_g1: b_g1.into(),
        b_g2: points.g2(shape.b_g2, seed, 6)?.into(),
    })
}

fn random_vk(shape: &SrsShape, seed: u64, points: &dyn RandomPoints) -> Result<VerifyingKey, crate::BackendError> {
    let mut r = rng(seed, 0);
    let g1 = |r: &mut ChaCha20Rng| G1Projective::random(r).to_affine();
    let g2 = |r: &mut ChaCha20Rng| G2Projective::random(r).to_affine();
    Ok(VerifyingKey {
        alpha_g1: g1(&mut r),
        beta_g1: g1(&mut r),
        beta_g2: g2(&mut r),
        gamma_g2: g2(&mut r),
        delta_g1: g1(&mut r),
        delta_g2: g2(&mut r),
        ic: points.g1(shape.ic, seed, 1)?,
    })
}

/// [`random_srs_with`]'s parameters written straight into a spill file in `dir`
/// ([`crate::points::SpilledSet::build`]), slice by slice as `points` makes them: the
/// parameter set is never whole in host memory, and [`Srs::release_host`] gives back what
/// reading it maps. h, l, a and b_g1 are views of one pool in the file (the G1 pool and
/// b_g2 take 19.2 GB of disk at the 32 GiB shape instead of 47.4). Before a release,
/// [`Srs::host_bytes`] counts each view whole, so it overstates the pool by its sharing.
pub fn random_srs_spilled(shape: &SrsShape, seed: u64, points: &dyn RandomPoints, dir: &std::path::Path) -> std::io::Result<Srs> {
    use crate::points::SpilledSet;
    let vk = random_vk(shape, seed, points).map_err(std::io::Error::other)?;
    let pool = shape.h.max(shape.l).max(shape.a).max(shape.b_g1);
    let (g1, g2) = (std::mem::size_of::<G1Affine>(), std::mem::size_of::<G2Affine>());
    let (set, offsets) = SpilledSet::build(dir, &[pool * g1, shape.b_g2 * g2], |write| {
        points.g1_each(pool, seed, 2, &mut |first, pts| write(0, first * g1, crate::points::point_bytes(pts)))?;
        points.g2_each(shape.b_g2, seed, 6, &mut |first, pts| write(1, first * g2, crate::points::point_bytes(pts)))
    })?;
    Ok(Srs {
        path: PathBuf::from(format!("<random shape-only parameters, seed {seed}, in a spill file in {}>", dir.display())),
        vk,
        h: set.view(offsets[0], shape.h),
        l: set.view(offsets[0], shape.l),
        a: set.view(offsets[0], shape.a),
        b_g1: set.view(offsets[0], shape.b_g1),
        b_g2: set.view(offsets[1], shape.b_g2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_by_name() {
        assert_eq!(PartitionShape::parse("32GiB").unwrap(), POREP_32GIB);
        assert_eq!(PartitionShape::parse("2^20").unwrap(), PartitionShape::porep_scaled(20));
        for bad in ["2^9", "2^29", "2^x", "64GiB", ""] {
            let e = PartitionShape::parse(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
    use crate::prover::required_shape;

    /// A scalar mix for the tests (its c is not used: c = a b).
    fn test_mix() -> WitnessMix {
        WitnessMix {
            a: ScalarMix { zero: 0.5, one: 0.3 },
            b: ScalarMix { zero: 0.1, one: 0.8 },
            c: ScalarMix { zero: 0.6, one: 0.1 },
            aux: ScalarMix { zero: 0.4, one: 0.45 },
        }
    }

    /// The contract a device generator follows: point j of run k is start_k + (j + 1) step_k,
    /// for a partial last run too, and the points are distinct.
    #[test]
    fn random_points_are_runs_from_their_seeds() {
        let n = (1 << RUN_LOG) + 1000;
        let pts = random_points::<G1Projective>(n, 9, 3);
        let seeds = run_seeds::<G1Projective>(n, 9, 3);
        assert_eq!(seeds.len(), 2);
        for i in [0, 1, 4095, 4096, 4097, n - 1] {
            let (start, step) = seeds[i >> RUN_LOG];
            let j = (i & ((1 << RUN_LOG) - 1)) as u64 + 1;
            assert_eq!(pts[i], (G1Projective::from(start) + G1Projective::from(step) * Scalar::from(j)).to_affine(), "point {i}");
        }
        let g2 = random_points::<G2Projective>(10, 9, 4);
        let (start, step) = run_seeds::<G2Projective>(10, 9, 4)[0];
        assert_eq!(g2[9], (G2Projective::from(start) + G2Projective::from(step) * Scalar::from(10u64)).to_affine());
        let mut distinct: Vec<_> = pts.iter().map(|p| p.to_compressed()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), n);
    }

    /// Parameters written into a spill file slice by slice equal the in-memory ones (across
    /// a slice boundary, with sections sharing the pool), and give their pages back.
    #[test]
    fn random_parameters_spilled_slice_by_slice_equal_the_in_memory_ones() {
        let dir = tempfile::tempdir().unwrap();
        let shape = SrsShape { ic: 9, h: SLICE + 4095, l: 7000, a: SLICE + 10, b_g1: 3000, b_g2: 5000 };
        let (want, got) = (random_srs(&shape, 4), random_srs_spilled(&shape, 4, &HostPoints, dir.path()).unwrap());
        assert!(got.h.is_spilled() && got.b_g2.is_spilled());
        assert!(*got.h == *want.h && *got.l == *want.l && *got.a == *want.a && *got.b_g1 == *want.b_g1);
        assert!(*got.b_g2 == *want.b_g2 && got.vk.ic == want.vk.ic && got.vk.delta_g2 == want.vk.delta_g2);
        let pool = (SLICE + 4095) * 96;
        assert_eq!(got.release_host(), pool.next_multiple_of(2 << 20) + (5000 * 192usize).next_multiple_of(2 << 20), "one file");
        assert!(got.host_released() && *got.a == *want.a, "read back after the release");
        let e = random_srs_spilled(&shape, 4, &HostPoints, std::path::Path::new("/nonexistent/cuzk")).unwrap_err();
        assert!(e.to_string().contains("spill file /nonexistent/cuzk/"), "{e}");
    }

    /// A shape witness has the shape's counts, draws about its mix, and random parameters
    /// of its required shape are accepted by the prover's shape check.
    #[test]
    fn shape_witness_and_random_srs_fit_each_other() {
        let shape = PartitionShape::porep_scaled(12);
        assert!(shape.constraints < 1 << 12 && shape.constraints > 1 << 11);
        let mix = test_mix();
        let w = shape_witness(&shape, &mix, 7);
        assert_eq!(w.num_constraints(), shape.constraints);
        assert_eq!(w.aux_assignment.len(), shape.aux);
        assert_eq!(w.input_assignment[0], Scalar::ONE);
        let got = WitnessMix::of(&w);
        for (g, m) in [(got.a, mix.a), (got.b, mix.b), (got.aux, mix.aux)] {
            assert!((g.zero - m.zero).abs() < 0.05 && (g.one - m.one).abs() < 0.05, "{g} vs {m}");
        }
        assert!(w.a.iter().zip(&w.b).zip(&w.c).all(|((a, b), c)| a * b == *c), "c = a b row by row");
        let b = w.b_aux_density.total() as f64 / shape.aux as f64;
        assert!((b - shape.b_aux_density).abs() < 0.05, "B density {b}");
        let need = required_shape(&w);
        let srs = random_srs(&need, 3);
        assert_eq!(srs.shape_of(), need);
        let (r, s) = (Scalar::from(5u64), Scalar::from(9u64));
        crate::prove(&crate::CpuBackend, &srs, w, r, s).expect("the prover takes them");
    }

    /// With c = a b the quotient is exact: h(x) (x^n − 1) = A(x) B(x) − C(x) at a point, for
    /// the n − 1 coefficients the prover keeps (with c drawn on its own, as before, this
    /// failed: the quotient then depends on the coset it is computed on).
    #[test]
    fn shape_witness_quotient_is_exact() {
        use crate::{Backend, CpuBackend, NttDirection};
        let shape = PartitionShape::porep_scaled(12);
        let mix = test_mix();
        let w = shape_witness(&shape, &mix, 11);
        let n = w.a.len().next_power_of_two();
        let coeffs = |v: &[Scalar]| {
            let mut p = v.to_vec();
            p.resize(n, Scalar::ZERO);
            CpuBackend.ntt(&mut p, NttDirection::Inverse).unwrap();
            p
        };
        let eval = |p: &[Scalar], x: Scalar| p.iter().rev().fold(Scalar::ZERO, |acc, k| acc * x + k);
        let (pa, pb, pc) = (coeffs(&w.a), coeffs(&w.b), coeffs(&w.c));
        let h = crate::hstep::compute_h(&CpuBackend, w.a, w.b, w.c).unwrap();
        assert_eq!(h.len(), n - 1);
        let x = Scalar::from(0x1234_5678_9abc_def1u64);
        let z = x.pow_vartime([n as u64]) - Scalar::ONE;
        assert_eq!(eval(&h, x) * z, eval(&pa, x) * eval(&pb, x) - eval(&pc, x));
    }

    /// A backend that says it holds the parameters (as a GPU with them resident does) and
    /// computes on the CPU.
    struct Holding;
    impl Holding {
        fn via<R>(&self, f: impl FnOnce(&dyn crate::Backend) -> Result<R, crate::BackendError>) -> Result<R, crate::BackendError> {
            f(&crate::CpuBackend)
        }
    }
    impl crate::Backend for Holding {
        crate::h_msm_on_host!();
        crate::forward_kernels!(via);
        fn name(&self) -> &'static str {
            "holding"
        }
        fn holds_params(&self, _: &Srs) -> bool {
            true
        }
    }

    /// Spilled parameters prove exactly as owned ones, also after their host copy is given
    /// back (the points come back from the file); the copy goes only when the backend
    /// holds the parameters, once, and never for parameters that are not spilled.
    #[test]
    fn spilled_and_released_parameters_prove_the_same() {
        use crate::Backend;
        let shape = PartitionShape::porep_scaled(14);
        let mix = test_mix();
        let w = shape_witness(&shape, &mix, 7);
        let need = required_shape(&w);
        let owned = random_srs(&need, 3);
        let mut spilled = random_srs(&need, 3);
        let dir = tempfile::tempdir().unwrap();
        let bytes = spilled.spill_to(dir.path()).unwrap();
        assert!(bytes >= need.point_bytes() - need.ic * 96, "{bytes} spilled of {}", need.point_bytes());
        let (r, s) = (Scalar::from(5u64), Scalar::from(9u64));
        let want = crate::prove(&crate::CpuBackend, &owned, w.clone(), r, s).unwrap().0;
        assert_eq!(crate::prove(&crate::CpuBackend, &spilled, w.clone(), r, s).unwrap().0, want);
        assert_eq!(spilled.release_if_held(&crate::CpuBackend), None, "the CPU backend holds nothing of its own");
        assert!(!spilled.host_released() && spilled.host_bytes() == owned.host_bytes());
        assert!(Holding.holds_params(&spilled));
        assert!(spilled.release_if_held(&Holding).is_some());
        assert!(spilled.host_released());
        assert_eq!(spilled.host_bytes(), need.ic * std::mem::size_of::<G1Affine>(), "only the verifying key's ic");
        assert_eq!(spilled.release_if_held(&Holding), None, "released once");
        assert_eq!(owned.release_if_held(&Holding), None, "owned parameters have no file to fall back on");
        assert_eq!(crate::prove(&Holding, &spilled, w.clone(), r, s).unwrap().0, want, "after the release");

        // The same on a thread of its own (what the engine's workers do): once, and only
        // when held.
        let mut again = random_srs(&need, 3);
        again.spill_to(dir.path()).unwrap();
        let again = std::sync::Arc::new(again);
        let (tx, rx) = std::sync::mpsc::channel();
        assert!(!again.release_in_background_if_held(&crate::CpuBackend, |_| {}), "not held by the CPU");
        assert!(again.release_in_background_if_held(&Holding, move |bytes| tx.send(bytes).unwrap()));
        let released = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the release thread reports");
        assert_eq!(released, bytes, "the whole spill file");
        assert!(again.host_released() && !again.release_in_background_if_held(&Holding, |_| {}), "released once");
        assert_eq!(crate::prove(&Holding, &again, w, r, s).unwrap().0, want, "after the background release");
    }
}
