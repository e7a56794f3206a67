//! A Groth16 parameter setup of our own: the proving parameters and verifying key of a
//! circuit for given toxic waste, equal byte for byte to what bellperson's
//! `generate_parameters` makes for the same circuit and waste, in a fraction of its time.
//!
//! Test parameters only: whoever knows the toxic waste can forge proofs. Production
//! parameters come from Filecoin's trusted setup and are downloaded, never made here.
//!
//! The work, for a circuit of n constraints (its input constraints included) over a domain
//! of m = 2^k >= n points with root of unity w:
//! - The Lagrange basis at tau in closed form, `L_i(tau) = (tau^m - 1) w^i / (m (tau - w^i))`,
//!   with one batch inversion per chunk: the values bellperson gets from an inverse FFT of
//!   the powers of tau, without the FFT.
//! - The QAP of every variable at tau, `u_j = sum_i A[i][j] L_i(tau)` (and v from B, w from
//!   C), as the compiled circuit's matrices transposed times that basis
//!   ([`CompiledCircuit::transposed_times`]).
//! - Every point a fixed-base multiple of one of two generators: window tables of signed
//!   digits built once per generator, one mixed addition per window and scalar, all cores,
//!   each chunk's results made affine with one inversion ([`FixedBase`]). bellperson runs a
//!   wNAF with about 255 doublings per point instead.
//!
//! The sections, as bellperson writes them: h (m - 1 points `tau^i (tau^m - 1) / delta`),
//! l (one per aux variable, `(beta u + alpha v + w) / delta`), a, b_g1 and b_g2 (one per
//! variable whose u, or v, is not zero, in variable order), and the verifying key with ic
//! (one per input, `(beta u + alpha v + w) / gamma`).

use std::path::{Path, PathBuf};

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::compiled::{record_structure, CompiledCircuit};
use crate::progress::Progress;
use crate::affine::BatchAffine;
use crate::srs::{Srs, VerifyingKey};

/// The secrets of a Groth16 setup: two generators and five field elements. Whoever holds
/// them can forge proofs for the parameters made from them.
#[derive(Clone, Debug, PartialEq)]
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub tau: Scalar,
}

impl ToxicWaste {
    /// Drawn from `rng` in the order bellperson's `generate_random_parameters` draws them:
    /// the same seeded rng gives both generators the same waste.
    pub fn random(rng: &mut impl RngCore) -> ToxicWaste {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("recording the circuit's constraints failed: {0}")]
    Record(#[from] SynthesisError),
    #[error("the toxic waste's generator {0} is the identity: draw the waste again")]
    IdentityGenerator(&'static str),
    #[error(
        "the circuit has {constraints} constraints (its input constraints included): more than the 2^31 \
         points of the largest domain BLS12-381's scalar field offers"
    )]
    DomainTooLarge { constraints: usize },
    #[error("the toxic waste's tau is a point of the domain (tau^{domain} = 1): draw the waste again")]
    TauInDomain { domain: usize },
    #[error("the toxic waste's {0} is zero: it must be invertible, draw the waste again")]
    ZeroTrapdoor(&'static str),
    #[error(
        "aux variable {index} of {aux} occurs in no constraint: its L point would be the identity, so \
         the circuit cannot have Groth16 parameters (bellperson refuses it as UnconstrainedVariable)"
    )]
    Unconstrained { index: usize, aux: usize },
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// log2 of the domain for `n` constraints, as bellperson's `EvaluationDomain` picks it.
fn domain_log(n: usize) -> Result<u32, SetupError> {
    let log = n.max(1).next_power_of_two().trailing_zeros();
    if log >= Scalar::S {
        return Err(SetupError::DomainTooLarge { constraints: n });
    }
    Ok(log)
}

/// Values per chunk of the parallel loops (one batch inversion, one progress step each).
const CHUNK: usize = 1 << 13;

/// `start * ratio^i` for i in 0..n, in parallel chunks (the CPU backend's power scaling
/// applied to ones).
fn geometric(n: usize, start: Scalar, ratio: Scalar) -> Vec<Scalar> {
    let mut out = vec![Scalar::ONE; n];
    crate::cpu::distribute_powers(&mut out, ratio, start);
    out
}

/// The first `n` Lagrange basis polynomials of the domain of size `m` (root of unity
/// `omega`) at `tau`: `(tau^m - 1) omega^i / (m (tau - omega^i))`. `zt` is `tau^m - 1`,
/// not zero (tau outside the domain).
fn lagrange_at(n: usize, m: usize, omega: Scalar, tau: Scalar, zt: Scalar) -> Vec<Scalar> {
    let m_inv = Scalar::from(m as u64).invert().expect("the domain size is not a multiple of r");
    let scale = zt * m_inv;
    let mut out = geometric(n, Scalar::ONE, omega);
    out.par_chunks_mut(CHUNK).for_each(|chunk| {
        // Montgomery's trick: one inversion for the chunk's tau - omega^i.
        let mut prefix = Vec::with_capacity(chunk.len());
        let mut acc = Scalar::ONE;
        for w in chunk.iter() {
            prefix.push(acc);
            acc *= tau - w;
        }
        let mut inv = acc.invert().expect("tau is outside the domain");
        for (w, before) in chunk.iter_mut().zip(prefix).rev() {
            let d = tau - *w;
            let inv_d = inv * before;
            inv *= d;
            *w = scale * *w * inv_d;
        }
    });
    out
}

/// Window tables of one base for many fixed-base multiplications: with windows of `c` bits
/// and signed digits in (-2^(c-1), 2^(c-1)], `table[w 2^(c-1) + k - 1] = k 2^(c w) base`.
/// A scalar then costs one mixed addition per window and no doubling.
pub struct FixedBase<P: BatchAffine> {
    c: u32,
    windows: usize,
    table: Vec<P::Affine>,
}

/// Windows of `c` bits that cover a 255-bit scalar with signed digits: the top window
/// holds at most c - 1 bits plus a carry, so its digit never carries out.
fn windows_of(c: u32) -> usize {
    (255 / c + 1) as usize
}

impl<P> FixedBase<P>
where
    P: BatchAffine + Curve<AffineRepr = <P as BatchAffine>::Affine>,
    <P as BatchAffine>::Affine: std::ops::Neg<Output = <P as BatchAffine>::Affine>,
{
    /// The window width that costs least for `n` scalars: n additions per window against
    /// building (and normalizing) 2^(c-1) table entries per window.
    pub fn window_for(n: usize) -> u32 {
        (2..=20).min_by_key(|&c| (n + (2 << (c - 1))) * windows_of(c)).expect("a non-empty range")
    }

    pub fn new(base: P, c: u32) -> FixedBase<P> {
        assert!((2..=24).contains(&c), "window of {c} bits");
        let windows = windows_of(c);
        let half = 1usize << (c - 1);
        let mut bases = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            bases.push(b.to_affine());
            for _ in 0..c {
                b = b.double();
            }
        }
        let mut table = vec![P::identity_affine(); windows * half];
        table.par_chunks_mut(half).zip(&bases).for_each(|(t, bw)| {
            let mut proj = Vec::with_capacity(half);
            let mut acc = P::identity();
            for _ in 0..half {
                acc = P::add_affine(&acc, bw);
                proj.push(acc);
            }
            P::to_affine_batch(&proj, t);
        });
        FixedBase { c, windows, table }
    }

    /// The signed digits of `s`, window by window, into `out` (one per window).
    fn digits(&self, s: &Scalar, out: &mut [i32]) {
        let repr = s.to_repr();
        let bytes = repr.as_ref();
        let (c, half) = (self.c as usize, 1i64 << (self.c - 1));
        let mut carry = 0i64;
        for (w, o) in out.iter_mut().enumerate() {
            let at = w * c;
            let mut v = 0u64;
            for (i, byte) in (at / 8..(at + c).div_ceil(8)).enumerate() {
                v |= u64::from(*bytes.get(byte).unwrap_or(&0)) << (8 * i);
            }
            let mut d = ((v >> (at % 8)) & ((1 << c) - 1)) as i64 + carry;
            carry = 0;
            if d > half {
                d -= 2 * half;
                carry = 1;
            }
            *o = d as i32;
        }
        debug_assert_eq!(carry, 0, "a scalar below 2^255 never carries out of the top window");
    }

    /// `s base` for every `s`, affine, in parallel chunks; `progress` advances by the
    /// scalars done. Within a chunk the running sums stay affine and each window's
    /// additions share one inversion (Montgomery's trick): about 6 field products per
    /// addition against 11 for a mixed one, and no conversion at the end.
    pub fn mul_all(&self, scalars: &[Scalar], progress: &dyn Progress) -> Vec<P::Affine>
    where
        <P as BatchAffine>::Affine: AffineXY,
    {
        let mut out = vec![P::identity_affine(); scalars.len()];
        out.par_chunks_mut(CHUNK).zip(scalars.par_chunks(CHUNK)).for_each(|(o, s)| {
            self.mul_chunk(s, o);
            progress.advance(s.len() as u64);
        });
        out
    }

    fn mul_chunk(&self, scalars: &[Scalar], out: &mut [P::Affine])
    where
        <P as BatchAffine>::Affine: AffineXY,
    {
        type F<A> = <A as AffineXY>::F;
        let (k, windows, half) = (scalars.len(), self.windows, 1usize << (self.c - 1));
        let mut digits = vec![0i32; k * windows];
        for (s, d) in scalars.iter().zip(digits.chunks_mut(windows)) {
            self.digits(s, d);
        }
        // Running sums: None is the identity.
        let mut acc: Vec<Option<(F<P::Affine>, F<P::Affine>)>> = vec![None; k];
        // Per window: the sums that take an affine addition, their addend and x2 - x1.
        let mut pending: Vec<(usize, F<P::Affine>, F<P::Affine>)> = Vec::with_capacity(k);
        let mut dens: Vec<F<P::Affine>> = Vec::with_capacity(k);
        let mut prefix: Vec<F<P::Affine>> = Vec::with_capacity(k);
        for w in 0..windows {
            pending.clear();
            dens.clear();
            for i in 0..k {
                let d = digits[i * windows + w];
                if d == 0 {
                    continue;
                }
                let entry = self.table[w * half + d.unsigned_abs() as usize - 1];
                let (qx, qy) = entry.xy().expect("table entries are multiples 1..2^(c-1) of a point of prime order");
                let qy = if d < 0 { -qy } else { qy };
                match acc[i] {
                    None => acc[i] = Some((qx, qy)),
                    // Equal x: a doubling or the identity, rare enough for the general path.
                    Some((ax, ay)) if ax == qx => {
                        let sum = P::add_affine(&P::add_affine(&P::identity(), &P::Affine::from_xy(ax, ay)), &P::Affine::from_xy(qx, qy));
                        acc[i] = sum.to_affine().xy();
                    }
                    Some((ax, _)) => {
                        pending.push((i, qx, qy));
                        dens.push(qx - ax);
                    }
                }
            }
            // One inversion for every x2 - x1 of this window.
            prefix.clear();
            let mut run = F::<P::Affine>::ONE;
            for d in &dens {
                prefix.push(run);
                run *= d;
            }
            let mut inv = run.invert().expect("x2 != x1 for every pending addition");
            for j in (0..dens.len()).rev() {
                let inv_d = inv * prefix[j];
                inv *= dens[j];
                let (i, qx, qy) = pending[j];
                let (ax, ay) = acc[i].expect("a pending sum is not the identity");
                let lambda = (qy - ay) * inv_d;
                let x3 = lambda.square() - ax - qx;
                let y3 = lambda * (ax - x3) - ay;
                acc[i] = Some((x3, y3));
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = a.map_or_else(P::identity_affine, |(x, y)| P::Affine::from_xy(x, y));
        }
    }
}

/// Affine points as their coordinates, for additions that share one inversion.
pub trait AffineXY: Copy {
    type F: Field;
    /// The coordinates; None for the identity.
    fn xy(&self) -> Option<(Self::F, Self::F)>;
    /// The point of coordinates on the curve (not checked).
    fn from_xy(x: Self::F, y: Self::F) -> Self;
}

macro_rules! affine_xy {
    ($aff:ty, $f:ty) => {
        impl AffineXY for $aff {
            type F = $f;
            fn xy(&self) -> Option<($f, $f)> {
                (!bool::from(group::prime::PrimeCurveAffine::is_identity(self))).then(|| (self.x(), self.y()))
            }
            fn from_xy(x: $f, y: $f) -> $aff {
                <$aff>::from_raw_unchecked(x, y, false)
            }
        }
    };
}
affine_xy!(blstrs::G1Affine, blstrs::Fp);
affine_xy!(blstrs::G2Affine, blstrs::Fp2);

/// One part of the parameters as [`generate_sections`] makes it, in the `.params` file's
/// order: the verifying key, then h, l, a and b_g1 (G1), then b_g2 (G2).
pub enum Section {
    Vk(VerifyingKey),
    G1(&'static str, Vec<G1Affine>),
    G2(&'static str, Vec<G2Affine>),
}

/// The parameters of `circuit` for `waste`, section by section into `sink`, each section
/// made only when the one before it has been taken: at most one section's points and scalars
/// are held beside the circuit's QAP (at the 32 GiB PoRep's 130 M constraints, about 13 GB
/// of points and 4 GB of scalars, against 47 GB for the whole set).
pub fn generate_sections(
    circuit: &CompiledCircuit,
    waste: &ToxicWaste,
    progress: &dyn Progress,
    sink: &mut dyn FnMut(Section) -> Result<(), SetupError>,
) -> Result<(), SetupError> {
    let (ni, na) = (circuit.num_inputs, circuit.num_aux);
    let n = circuit.num_constraints();
    let log = domain_log(n)?;
    let m = 1usize << log;
    let gamma_inv = Option::<Scalar>::from(waste.gamma.invert()).ok_or(SetupError::ZeroTrapdoor("gamma"))?;
    let delta_inv = Option::<Scalar>::from(waste.delta.invert()).ok_or(SetupError::ZeroTrapdoor("delta"))?;
    if bool::from(waste.g1.is_identity()) {
        return Err(SetupError::IdentityGenerator("g1"));
    }
    if bool::from(waste.g2.is_identity()) {
        return Err(SetupError::IdentityGenerator("g2"));
    }
    let tau = waste.tau;
    let zt = tau.pow_vartime([m as u64]) - Scalar::ONE;
    if zt.is_zero_vartime() {
        return Err(SetupError::TauInDomain { domain: m });
    }
    let omega = crate::domain::root_of_unity(log);

    progress.stage("QAP at tau", 2);
    let lagrange = lagrange_at(n, m, omega, tau, zt);
    progress.advance(1);
    let [u, v, w] = circuit.transposed_times(&lagrange);
    drop(lagrange);
    progress.advance(1);
    progress.finish();

    // (beta u + alpha v + w) / gamma for the inputs (ic), / delta for the aux (l).
    let ext: Vec<Scalar> = (0..ni + na)
        .into_par_iter()
        .map(|j| (waste.beta * u[j] + waste.alpha * v[j] + w[j]) * if j < ni { gamma_inv } else { delta_inv })
        .collect();
    drop(w);
    if let Some(j) = (ni..ni + na).find(|&j| ext[j].is_zero_vartime()) {
        return Err(SetupError::Unconstrained { index: j - ni, aux: na });
    }
    let nonzero = |x: &[Scalar]| -> Vec<Scalar> { x.par_iter().copied().filter(|s| !s.is_zero_vartime()).collect() };
    let count_nonzero = |x: &[Scalar]| x.par_iter().filter(|s| !s.is_zero_vartime()).count();
    let h_len = m - 1;
    let g1_count = h_len + ni + na + count_nonzero(&u) + count_nonzero(&v);
    let g1_table = FixedBase::<G1Projective>::new(waste.g1, FixedBase::<G1Projective>::window_for(g1_count));
    let g1_section = |name: &'static str, scalars: &[Scalar]| -> Vec<G1Affine> {
        progress.stage(&format!("G1 points: {name}"), scalars.len() as u64);
        let points = g1_table.mul_all(scalars, progress);
        progress.finish();
        points
    };

    let (g1, g2) = (waste.g1.to_affine(), waste.g2.to_affine());
    let ic_scalars = ext[..ni].to_vec();
    sink(Section::Vk(VerifyingKey {
        alpha_g1: (g1 * waste.alpha).to_affine(),
        beta_g1: (g1 * waste.beta).to_affine(),
        beta_g2: (g2 * waste.beta).to_affine(),
        gamma_g2: (g2 * waste.gamma).to_affine(),
        delta_g1: (g1 * waste.delta).to_affine(),
        delta_g2: (g2 * waste.delta).to_affine(),
        ic: g1_section("ic", &ic_scalars),
    }))?;
    let h = g1_section("h", &geometric(h_len, zt * delta_inv, tau));
    sink(Section::G1("h", h))?;
    let l = g1_section("l", &ext[ni..]);
    drop(ext);
    sink(Section::G1("l", l))?;
    let a = g1_section("a", &nonzero(&u));
    drop(u);
    sink(Section::G1("a", a))?;
    let b = nonzero(&v);
    drop(v);
    let b_g1 = g1_section("b_g1", &b);
    drop(g1_table);
    sink(Section::G1("b_g1", b_g1))?;

    progress.stage("G2 points: b_g2", b.len() as u64);
    let table = FixedBase::<G2Projective>::new(waste.g2, FixedBase::<G2Projective>::window_for(b.len()));
    let b_g2 = table.mul_all(&b, progress);
    progress.finish();
    sink(Section::G2("b_g2", b_g2))
}

/// The parameters of `circuit` for `waste` in memory (its `path` empty until written): equal
/// to bellperson's `generate_parameters` for the same circuit and waste.
pub fn generate(circuit: &CompiledCircuit, waste: &ToxicWaste, progress: &dyn Progress) -> Result<Srs, SetupError> {
    let mut vk = None;
    let mut g1: Vec<Vec<G1Affine>> = Vec::with_capacity(4);
    let mut b_g2 = Vec::new();
    generate_sections(circuit, waste, progress, &mut |section| {
        match section {
            Section::Vk(k) => vk = Some(k),
            Section::G1(_, points) => g1.push(points),
            Section::G2(_, points) => b_g2 = points,
        }
        Ok(())
    })?;
    let [h, l, a, b_g1]: [Vec<G1Affine>; 4] = g1.try_into().expect("generate_sections makes four G1 sections");
    Ok(Srs {
        path: PathBuf::new(),
        vk: vk.expect("generate_sections makes the verifying key first"),
        h: h.into(),
        l: l.into(),
        a: a.into(),
        b_g1: b_g1.into(),
        b_g2: b_g2.into(),
    })
}

/// Where a file is written before it is renamed to its final name.
fn partial(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    path.with_file_name(name)
}

/// Writes the parameters of `circuit` for `waste` as bellperson's `.params` file at
/// `params` and the verifying key as its `.vk` file at `vk`. Each section is handed to a
/// writer thread as soon as it is made ([`generate_sections`]), so the disk works while the
/// next section is computed (at most two sections in memory). Both files are written whole to
/// partial files and synced first, then renamed into place, so a reader never sees part of
/// either under its final name. On failure the partial files are removed.
pub fn write_generated(
    circuit: &CompiledCircuit,
    waste: &ToxicWaste,
    params: &Path,
    vk: &Path,
    progress: &dyn Progress,
) -> Result<(), SetupError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SetupError::Io { path, source }
    };
    let (params_tmp, vk_tmp) = (partial(params), partial(vk));
    let written = (|| {
        let file = std::fs::File::create(&params_tmp).map_err(io(&params_tmp))?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Section>(0);
        let writer = |file: std::fs::File| -> std::io::Result<std::fs::File> {
            use std::io::Write;
            let mut w = std::io::BufWriter::with_capacity(1 << 24, file);
            for section in rx {
                match &section {
                    Section::Vk(key) => {
                        let mut bytes = Vec::new();
                        key.write(&mut bytes)?;
                        std::fs::write(&vk_tmp, &bytes)?;
                        w.write_all(&bytes)?;
                    }
                    Section::G1(name, points) => drop(crate::srs::write_section(&mut w, name, points)?),
                    Section::G2(name, points) => drop(crate::srs::write_section(&mut w, name, points)?),
                }
            }
            w.into_inner().map_err(|e| e.into_error())
        };
        let (made, file) = std::thread::scope(|scope| {
            let handle = scope.spawn(move || writer(file));
            // A send fails only when the writer has stopped on an error, which its join gives.
            let made = generate_sections(circuit, waste, progress, &mut |section| {
                tx.send(section).map_err(|_| io(&params_tmp)(std::io::Error::other("the parameter writer stopped")))
            });
            drop(tx);
            progress.stage("writing the rest and syncing", 0);
            let file = handle.join().unwrap_or_else(|_| Err(std::io::Error::other("the parameter writer panicked")));
            progress.finish();
            (made, file)
        });
        // The writer's own error first: a failed send only says that it stopped.
        let file = file.map_err(io(&params_tmp))?;
        made?;
        crate::progress::step(progress, "syncing to disk", || file.sync_all()).map_err(io(&params_tmp))?;
        std::fs::File::open(&vk_tmp).and_then(|f| f.sync_all()).map_err(io(&vk_tmp))?;
        std::fs::rename(&params_tmp, params).map_err(io(params))?;
        std::fs::rename(&vk_tmp, vk).map_err(io(vk))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&params_tmp);
        let _ = std::fs::remove_file(&vk_tmp);
    }
    written
}

/// Whether the `.vk` file at `vk` is the verifying key the `.params` file at `params` begins
/// with (both from one setup): what decides that a parameter set on disk is kept.
pub fn vk_matches(params: &Path, vk: &Path) -> bool {
    use std::io::Read;
    let Ok(key) = std::fs::read(vk) else { return false };
    let mut head = vec![0u8; key.len()];
    !key.is_empty() && std::fs::File::open(params).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == key
}

/// Records `circuit` (blank or not), makes its parameters for `waste` and writes them to
/// `params` and `vk`: the whole setup of one circuit.
pub fn setup_circuit<C: Circuit<Scalar>>(
    circuit: C,
    waste: &ToxicWaste,
    params: &Path,
    vk: &Path,
    progress: &dyn Progress,
) -> Result<SetupSummary, SetupError> {
    let t0 = std::time::Instant::now();
    let compiled = crate::progress::step(progress, "recording the circuit", || record_structure(circuit))?;
    let record = t0.elapsed();
    let made = setup_compiled(&compiled, waste, params, vk, progress)?;
    Ok(SetupSummary { record, total: t0.elapsed(), ..made })
}

/// Makes the parameters of an already recorded circuit for `waste` and writes them to
/// `params` and `vk` (as [`setup_circuit`], without the recording).
pub fn setup_compiled(
    compiled: &CompiledCircuit,
    waste: &ToxicWaste,
    params: &Path,
    vk: &Path,
    progress: &dyn Progress,
) -> Result<SetupSummary, SetupError> {
    let t0 = std::time::Instant::now();
    write_generated(compiled, waste, params, vk, progress)?;
    Ok(SetupSummary {
        constraints: compiled.num_constraints(),
        inputs: compiled.num_inputs,
        aux: compiled.num_aux,
        record: std::time::Duration::ZERO,
        points: t0.elapsed(),
        total: t0.elapsed(),
    })
}

/// What one setup made, and where its time went.
#[derive(Clone, Copy, Debug)]
pub struct SetupSummary {
    /// Constraints, input constraints included.
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    /// Recording the circuit's constraints.
    pub record: std::time::Duration,
    /// The QAP at tau, every point, and writing them.
    pub points: std::time::Duration,
    pub total: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fixed_base_multiples_equal_plain_multiplication() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let base = G1Projective::random(&mut rng);
        let mut scalars: Vec<Scalar> = (0..100).map(|_| Scalar::random(&mut rng)).collect();
        // Edges: zero, one, -1 (the largest scalar), and 2^c - 1 across windows.
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(u64::MAX), Scalar::from(1 << 15)]);
        for c in [2, 5, 15, 16, 17] {
            let t = FixedBase::<G1Projective>::new(base, c);
            let got = t.mul_all(&scalars, &crate::progress::Silent);
            for (s, p) in scalars.iter().zip(&got) {
                assert_eq!(*p, (base * s).to_affine(), "c = {c}, scalar {s:?}");
            }
        }
        let base2 = G2Projective::random(&mut rng);
        let t = FixedBase::<G2Projective>::new(base2, 9);
        for (s, p) in scalars.iter().zip(t.mul_all(&scalars, &crate::progress::Silent)) {
            assert_eq!(p, (base2 * s).to_affine());
        }
    }

    #[test]
    fn lagrange_basis_sums_to_one_and_interpolates() {
        // sum_i L_i(x) = 1 and sum_i w^i L_i(x) = x for any x outside the domain.
        let log = 5;
        let m = 1usize << log;
        let omega = crate::domain::root_of_unity(log);
        let tau = Scalar::from(12345u64);
        let l = lagrange_at(m, m, omega, tau, tau.pow_vartime([m as u64]) - Scalar::ONE);
        assert_eq!(l.iter().sum::<Scalar>(), Scalar::ONE);
        let x: Scalar = l.iter().enumerate().map(|(i, li)| omega.pow_vartime([i as u64]) * li).sum();
        assert_eq!(x, tau);
    }

    #[test]
    fn window_choice_grows_with_the_count() {
        let c = |n| FixedBase::<G1Projective>::window_for(n);
        assert!(c(10) < c(1 << 16) && c(1 << 16) < c(1 << 24), "{} {} {}", c(10), c(1 << 16), c(1 << 24));
    }

    #[test]
    fn a_domain_past_the_field_is_refused() {
        assert!(matches!(domain_log((1 << 31) + 1), Err(SetupError::DomainTooLarge { .. })));
        assert_eq!(domain_log(1).unwrap(), 0);
        assert_eq!(domain_log(5).unwrap(), 3);
    }
}
