//! [`GpuBackend`]: the `cuzk_groth16::Backend` trait on one GPU.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_groth16::backend::{check_msm_args, check_quotient_args, ntt_log_size};
use cuzk_groth16::domain::domain_size;
use cuzk_groth16::{Backend, BackendError, NttDirection, Selection, SrsShape};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::arena::{reserved_size, ArenaCounters};
use crate::device::{DeviceInfo, Gpu, OpTimings, UploadRates, VramBudget, DEFAULT_PINNED_BUDGET};
use crate::error::GpuError;
pub use crate::eval::EvalPath;
use crate::msm::{MsmPlan, PointSource, ScalarKind, Scalars, G1, G2};
use crate::pinned::PinnedCounters;
use crate::tuning::GpuTuning;
use crate::{eval, msm, ntt};

/// NTT, coset quotient, MSMs and batch sums over G1 and G2 on a GPU; results equal the CPU
/// backend's bit for bit.
///
/// Every call plans its device memory before it allocates: MSMs and sums run in chunks that
/// fit what the arena can give (evicting resident parameters not in use when needed), the
/// coset quotient likewise, and an NTT that cannot fit is refused with `OverBudget`
/// (`Unavailable` to the prover) before any allocation. [`GpuBackend::plan_footprint`]
/// states a whole proof's footprint ahead of it.
pub struct GpuBackend {
    gpu: Gpu,
    /// What the last calls did, for [`GpuBackend::last_report`] (the timings apart, which
    /// the device keeps).
    last: Mutex<LastCalls>,
}

/// The observations [`GpuBackend`] keeps of its last calls.
#[derive(Clone, Copy, Debug)]
struct LastCalls {
    h_step: HStep,
    h_split: HSplit,
    msm: Option<MsmPlan>,
    eval: EvalPath,
}

/// What the last calls on a [`GpuBackend`] did: observations for benches and tests, not
/// settings ([`GpuTuning`] holds those).
#[derive(Clone, Copy, Debug)]
pub struct LastReport {
    /// Upload / kernels / download split of the last operation of any kind (an NTT, an
    /// MSM, an H step: the MSMs of a proof overwrite its H step's).
    pub timings: OpTimings,
    /// The path the last [`Backend::h_msm`] took ([`HStep::Host`] before the first).
    pub h_step: HStep,
    /// The split of the last [`Backend::h_msm`] call's H step and MSM.
    pub h_split: HSplit,
    /// The plan of the last MSM or sum call (None before the first): its window, chunks,
    /// batch-affine levels and bucket keys.
    pub msm: Option<MsmPlan>,
    /// Where the last deferred witness's a, b and c were evaluated
    /// ([`Backend::h_msm_compiled`]), and why on the host when they were.
    pub eval: EvalPath,
}

/// The split of one [`Backend::h_msm`] call: its H step (zero on the host path, whose NTTs
/// are several calls) and its MSM.
#[derive(Clone, Copy, Debug, Default)]
pub struct HSplit {
    pub step: OpTimings,
    pub msm: OpTimings,
}

/// Where [`Backend::h_msm`] computed h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HStep {
    /// a, b, c and h on the device at once (`ProofFootprint::h_step_bytes`).
    Device,
    /// In one NTT's memory: b and c transformed on the device and brought back, a and h
    /// kept there (`ProofFootprint::ntt_bytes`).
    Lean,
    /// Each NTT's values up and back, h uploaded again for its MSM (the reference path,
    /// taken only with [`GpuTuning::device_h`] off).
    Host,
}

/// A GPU error as the prover sees it: a budget refusal is the work's size against this
/// device's budget ([`BackendError::OverBudget`]); everything else is the device failing.
fn unavailable(e: GpuError) -> BackendError {
    match e {
        GpuError::OverBudget { .. } | GpuError::PinnedOverBudget { .. } => {
            BackendError::OverBudget { backend: "gpu", reason: e.to_string() }
        }
        e => BackendError::Unavailable { backend: "gpu", reason: e.to_string() },
    }
}

/// What a proof of a given shape takes on this backend's device, worked out before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofFootprint {
    /// Device bytes of the largest NTT (the domain size): not divisible.
    pub ntt_bytes: usize,
    /// Chunk (elements) and bytes of the coset quotient.
    pub quotient_chunk: usize,
    pub quotient_bytes: usize,
    /// Points per chunk of the largest MSM and the bytes of its workspace.
    pub msm_chunk: usize,
    pub msm_bytes: usize,
    /// Bytes of all the proof's base arrays (h, l, a, b_g1, b_g2) if kept resident.
    pub srs_bytes: usize,
    /// The most device memory one call of the proof holds at once (resident arrays apart).
    pub peak_bytes: usize,
    /// The arena's budget, and whether the proof can run in it (possibly chunked).
    pub budget: usize,
    pub fits: bool,
    /// Whether every MSM runs in one chunk and all base arrays stay resident.
    pub fits_unchunked: bool,
    /// Device bytes of the H step with a, b, c and h kept on the device, and whether the
    /// budget holds it (otherwise the lean path, within `ntt_bytes`).
    pub h_step_bytes: usize,
    pub h_on_device: bool,
}

impl GpuBackend {
    /// Device 0 with the default budget (90% of its free memory) and the default tuning.
    pub fn new() -> Result<Self, GpuError> {
        Self::open(0, VramBudget::default())
    }

    /// Device `ordinal` with a VRAM budget, the default pinned budget and the default
    /// tuning.
    pub fn open(ordinal: usize, budget: VramBudget) -> Result<Self, GpuError> {
        Self::open_with(ordinal, budget, DEFAULT_PINNED_BUDGET, GpuTuning::default())
    }

    /// Device `ordinal` with a VRAM budget, a pinned host memory budget in bytes (at least
    /// the four 32 MiB staging buffers) and a tuning: where the tuning enters.
    pub fn open_with(
        ordinal: usize,
        budget: VramBudget,
        pinned_budget: usize,
        tuning: GpuTuning,
    ) -> Result<Self, GpuError> {
        Ok(GpuBackend {
            gpu: Gpu::open_with(ordinal, budget, pinned_budget, tuning)?,
            last: Mutex::new(LastCalls { h_step: HStep::Host, h_split: HSplit::default(), msm: None, eval: EvalPath::None }),
        })
    }

    /// The tuning calls read now.
    pub fn tuning(&self) -> GpuTuning {
        self.gpu.tuning()
    }

    /// Replaces the tuning for the calls that start after this (turning
    /// [`GpuTuning::residency`] off drops the resident parameters). For benches and tests,
    /// which compare variants in one process over the same resident parameters; the daemon
    /// sets its tuning at open.
    pub fn retune(&self, tuning: GpuTuning) {
        self.gpu.retune(tuning)
    }

    /// What the last calls did.
    pub fn last_report(&self) -> LastReport {
        let l = *self.last.lock().unwrap();
        LastReport { timings: self.gpu.last_timings(), h_step: l.h_step, h_split: l.h_split, msm: l.msm, eval: l.eval }
    }

    /// An MSM's result, its plan noted for [`GpuBackend::last_report`] (an empty call has
    /// none and leaves the last one).
    fn noted<P>(&self, r: Result<(P, Option<MsmPlan>), GpuError>) -> Result<P, BackendError> {
        let (p, plan) = r.map_err(unavailable)?;
        if plan.is_some() {
            self.last.lock().unwrap().msm = plan;
        }
        Ok(p)
    }

    pub fn device(&self) -> &DeviceInfo {
        self.gpu.info()
    }

    pub fn arena_counters(&self) -> ArenaCounters {
        self.gpu.counters()
    }

    pub fn pinned_counters(&self) -> PinnedCounters {
        self.gpu.pinned().counters()
    }

    /// Bytes and number of base arrays resident in device memory.
    pub fn resident(&self) -> (usize, usize) {
        self.gpu.resident_bytes()
    }

    /// Drops the precomputed multiples of resident base arrays (`GpuTuning::msm_multiples`),
    /// keeping the arrays: benches start each variant without them.
    pub fn release_multiples(&self) {
        self.gpu.resident.lock().unwrap().drop_all_multiples();
    }

    /// Drops resident base arrays, the staging buffers and cached pinned blocks.
    pub fn release_caches(&self) -> Result<(), GpuError> {
        self.gpu.release_caches()
    }

    /// Host-to-device copy rates: pageable, pinned, and the staged path calls use.
    pub fn upload_rates(&self, bytes: usize) -> Result<UploadRates, GpuError> {
        self.gpu.upload_rates(bytes)
    }

    /// The driver's (free, total) memory of the device.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.gpu.mem_info()
    }

    /// The plan of one G1 MSM of `n` points with the memory available now (streamed
    /// points, as a first call over new parameters).
    pub fn plan_msm_g1(&self, n: usize) -> Result<MsmPlan, GpuError> {
        msm::plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &self.gpu.tuning(), self.gpu.available())
            .map_err(|need| self.gpu.over_budget(need))
    }

    /// The device footprint of a proof whose parameters have `shape` (see
    /// `cuzk_groth16::prover::required_shape`), against this arena's budget: whether it can
    /// run, in how large chunks, and whether its parameters can stay resident.
    pub fn plan_footprint(&self, shape: &SrsShape) -> ProofFootprint {
        let budget = self.gpu.counters().budget;
        let tuning = self.gpu.tuning();
        let plan = |n: usize, budget: usize| msm::plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &tuning, budget);
        let domain = (shape.h + 1).next_power_of_two();
        let log_n = domain.trailing_zeros();
        let ntt_bytes = ntt::ntt_bytes(log_n);
        let (quotient_chunk, quotient_bytes) = match ntt::quotient_chunk(domain, budget) {
            Some(m) => (m, 3 * reserved_size(m * 32) + reserved_size(32)),
            None => (0, usize::MAX),
        };
        let g1 = [shape.h, shape.l, shape.a, shape.b_g1];
        let srs_bytes = g1
            .iter()
            .map(|&n| msm::resident_size::<G1>(n))
            .sum::<usize>()
            + msm::resident_size::<G2>(shape.b_g2);
        let largest = g1.iter().copied().max().unwrap_or(0).max(1);
        let (msm_chunk, msm_bytes) = match plan(largest, budget) {
            Ok(p) => (p.chunk, p.work_bytes),
            Err(need) => (0, need),
        };
        let g2_bytes = msm::plan::<G2>(shape.b_g2.max(1), PointSource::Streamed, ScalarKind::Host, &tuning, budget)
            .map_or(usize::MAX, |p| p.work_bytes);
        let peak_bytes = ntt_bytes.max(quotient_bytes).max(msm_bytes).max(g2_bytes);
        let fits = peak_bytes <= budget && msm_chunk > 0 && quotient_chunk > 0;
        let h_step_bytes = ntt::h_step_bytes(log_n.max(1));
        let full = plan(largest, usize::MAX).expect("an unlimited plan");
        ProofFootprint {
            ntt_bytes,
            quotient_chunk,
            quotient_bytes,
            msm_chunk,
            msm_bytes,
            srs_bytes,
            peak_bytes,
            budget,
            fits,
            fits_unchunked: fits
                && msm_chunk == full.chunk
                && srs_bytes <= budget / 2
                && srs_bytes + full.work_bytes.max(ntt_bytes) <= budget,
            h_step_bytes,
            h_on_device: h_step_bytes <= budget,
        }
    }
}

/// The random parameter points of `cuzk_groth16::shape::random_srs_with`, made on this
/// device (crate::random): the same points as the host's generator. Benches only (feature
/// `testing`).
#[cfg(feature = "testing")]
impl cuzk_groth16::shape::RandomPoints for GpuBackend {
    fn place(&self) -> String {
        format!("gpu{} {}", self.gpu.info().ordinal, self.gpu.info().name)
    }
    fn g1(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G1Affine>, BackendError> {
        let mut out = vec![G1Affine::default(); n];
        self.random_into::<G1>(&mut out, seed, stream)?;
        Ok(out)
    }
    fn g2(&self, n: usize, seed: u64, stream: u64) -> Result<Vec<G2Affine>, BackendError> {
        let mut out = vec![G2Affine::default(); n];
        self.random_into::<G2>(&mut out, seed, stream)?;
        Ok(out)
    }
    fn g1_each(&self, n: usize, seed: u64, stream: u64, sink: cuzk_groth16::shape::Sink<'_, G1Affine>) -> std::io::Result<()> {
        let seeds = cuzk_groth16::shape::run_seeds::<G1Projective>(n, seed, stream);
        crate::random::random_points::<G1>(&self.gpu, &seeds, n, sink).map_err(std::io::Error::other)
    }
    fn g2_each(&self, n: usize, seed: u64, stream: u64, sink: cuzk_groth16::shape::Sink<'_, G2Affine>) -> std::io::Result<()> {
        let seeds = cuzk_groth16::shape::run_seeds::<G2Projective>(n, seed, stream);
        crate::random::random_points::<G2>(&self.gpu, &seeds, n, sink).map_err(std::io::Error::other)
    }
}

#[cfg(feature = "testing")]
impl GpuBackend {
    /// Random points made on the device into `out` (crate::random), each slice copied in
    /// on the host's cores.
    fn random_into<C: crate::msm::Curve>(&self, out: &mut [C::Affine], seed: u64, stream: u64) -> Result<(), BackendError>
    where
        C::Proj: cuzk_groth16::affine::BatchAffine<Affine = C::Affine> + group::Curve<AffineRepr = C::Affine>,
    {
        use rayon::prelude::*;
        let seeds = cuzk_groth16::shape::run_seeds::<C::Proj>(out.len(), seed, stream);
        let n = out.len();
        crate::random::random_points::<C>(&self.gpu, &seeds, n, &mut |first, pts| {
            out[first..first + pts.len()].par_chunks_mut(1 << 16).zip(pts.par_chunks(1 << 16)).for_each(|(d, s)| d.copy_from_slice(s));
            Ok(())
        })
        .map_err(unavailable)
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
    }
    fn device_lock(&self) -> Option<&cuzk_groth16::DeviceLock> {
        Some(&self.gpu.lock)
    }

    /// Every section resident in the arena now (an eviction later uploads it again from
    /// the host copy, which a spilled parameter set reads back from its file).
    fn holds_params(&self, srs: &cuzk_groth16::Srs) -> bool {
        self.gpu.tuning().residency
            && [&srs.h, &srs.l, &srs.a, &srs.b_g1].iter().all(|s| msm::holds::<G1>(&self.gpu, s))
            && msm::holds::<G2>(&self.gpu, &srs.b_g2)
    }

    fn ntt(&self, values: &mut [Scalar], direction: NttDirection) -> Result<(), BackendError> {
        let log_n = ntt_log_size(values.len())?;
        ntt::ntt(&self.gpu, values, log_n, direction).map_err(unavailable)
    }

    fn coset_quotient(
        &self,
        a: &mut [Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<(), BackendError> {
        check_quotient_args(a.len(), b.len(), c.len())?;
        ntt::coset_quotient(&self.gpu, a, b, c).map_err(unavailable)
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        check_msm_args(bases.len(), selection, scalars.len())?;
        self.noted(msm::msm::<G1>(&self.gpu, bases, selection, Scalars::Host(scalars)))
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G2Projective, BackendError> {
        check_msm_args(bases.len(), selection, scalars.len())?;
        self.noted(msm::msm::<G2>(&self.gpu, bases, selection, Scalars::Host(scalars)))
    }

    fn sum_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
    ) -> Result<G1Projective, BackendError> {
        selection.check(bases.len())?;
        self.noted(msm::sum::<G1>(&self.gpu, bases, selection))
    }

    fn sum_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
    ) -> Result<G2Projective, BackendError> {
        selection.check(bases.len())?;
        self.noted(msm::sum::<G2>(&self.gpu, bases, selection))
    }

    /// On the device when the budget holds a, b, c, a scratch buffer and a twiddle table
    /// of the domain size (`ProofFootprint::h_step_bytes`): they go up once, h is made
    /// there and its MSM reads it in place. Otherwise the lean path in one NTT's memory
    /// (h kept on the device too); the host path only when switched to.
    fn h_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> Result<(G1Projective, Duration), BackendError> {
        check_quotient_args(a.len(), b.len(), c.len())?;
        let n = domain_size(a.len());
        let log_n = ntt_log_size(n)?;
        check_msm_args(h_bases.len(), Selection::All, n - 1)?;
        let path = if !self.gpu.tuning().device_h || log_n == 0 {
            HStep::Host
        } else if ntt::h_step_bytes(log_n) <= self.gpu.available() {
            HStep::Device
        } else {
            HStep::Lean
        };
        self.last.lock().unwrap().h_step = path;
        let t = Instant::now();
        let h = match path {
            HStep::Host => {
                let out = cuzk_groth16::hstep::h_msm_via_host(self, a, b, c, h_bases)?;
                let msm = self.gpu.last_timings();
                self.last.lock().unwrap().h_split = HSplit { step: OpTimings::default(), msm };
                return Ok(out);
            }
            HStep::Device => ntt::h_on_device(&self.gpu, a, b, c, log_n),
            HStep::Lean => {
                let (mut b, mut c) = (b, c);
                let need = ntt::ntt_bytes(log_n);
                if need > self.gpu.available() {
                    return Err(unavailable(self.gpu.over_budget(need)));
                }
                let h = ntt::h_on_device_lean(&self.gpu, &a, &mut b, &mut c, log_n);
                cuzk_groth16::release::drop_in_background((a, b, c));
                h
            }
        }
        .map_err(unavailable)?;
        let h_step = t.elapsed();
        let step = self.gpu.last_timings();
        let acc = self.noted(msm::msm::<G1>(&self.gpu, h_bases, Selection::All, Scalars::Device(&h)))?;
        self.last.lock().unwrap().h_split = HSplit { step, msm: self.gpu.last_timings() };
        Ok((acc, h_step))
    }

    /// a, b and c evaluated on the device from the resident compiled circuit (`eval.rs`),
    /// then the H step and its MSM from there: only the assignment crosses PCIe. Where the
    /// plan says the circuit does not fit (or `device_eval` is off), evaluated on the host
    /// and proved as `h_msm` does; `last_report().eval` says which, and why.
    fn h_msm_compiled(
        &self,
        circuit: &dyn cuzk_groth16::constraints::Constraints,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        check: bool,
    ) -> Result<cuzk_groth16::HOutcome, BackendError> {
        use cuzk_groth16::HOutcome;
        let n = domain_size(circuit.num_constraints());
        let log_n = ntt_log_size(n)?;
        check_msm_args(h_bases.len(), Selection::All, n - 1)?;
        // The plan may evict resident arrays for the circuit: it runs in the device region,
        // which the evaluation below keeps, so that no other call takes the room between.
        let region = if !self.gpu.tuning().device_h || log_n == 0 { None } else { Some(self.gpu.enter().map_err(unavailable)?) };
        let plan = match &region {
            None => eval::Plan::Host("device_h is off"),
            Some(_) => eval::plan(&self.gpu, circuit, log_n, ntt::h_step_bytes(log_n)),
        };
        if let eval::Plan::Host(why) = plan {
            drop(region);
            // Said once per change of reason, under eval's target with the upload's line.
            let mut last = self.last.lock().unwrap();
            if last.eval != EvalPath::Host(why) {
                log::info!(target: "cuzk_gpu::eval", "GPU {}: a, b and c evaluated on the host: {why}", self.gpu.info().ordinal);
            }
            last.eval = EvalPath::Host(why);
            drop(last);
            return cuzk_groth16::hstep::h_msm_compiled_via_host(self, circuit, inputs, aux, h_bases, check);
        }
        let t = Instant::now();
        let h = {
            let _region = region;
            self.gpu.check_cancel().map_err(unavailable)?;
            let e = eval::evaluate(&self.gpu, circuit, inputs, aux, log_n).map_err(unavailable)?;
            {
                let mut last = self.last.lock().unwrap();
                last.eval = EvalPath::Device { uploaded: e.uploaded, kernel: e.timings.kernels };
                last.h_step = HStep::Device;
            }
            if let Some(row) = e.first_bad.filter(|_| check) {
                return Ok(HOutcome::Unsatisfied(row));
            }
            ntt::h_of_device_polys(&self.gpu, e.polys, log_n, e.timings).map_err(unavailable)?
        };
        let h_step = t.elapsed();
        let step = self.gpu.last_timings();
        let acc = self.noted(msm::msm::<G1>(&self.gpu, h_bases, Selection::All, Scalars::Device(&h)))?;
        self.last.lock().unwrap().h_split = HSplit { step, msm: self.gpu.last_timings() };
        Ok(HOutcome::Done(acc, h_step))
    }
}
