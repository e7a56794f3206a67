//! [`GpuBackend`]: the `cuzk_groth16::Backend` trait on one GPU.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use cuzk_groth16::backend::{check_msm_args, check_quotient_args, domain_size, ntt_log_size};
use cuzk_groth16::{Backend, BackendError, NttDirection, Selection, SrsShape};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::arena::{reserved_size, ArenaCounters};
use crate::device::{DeviceInfo, Gpu, OpTimings, UploadRates, VramBudget};
use crate::error::GpuError;
use crate::msm::{MsmPlan, PointSource, Scalars, G1, G2};
use crate::pinned::PinnedCounters;
use crate::{msm, ntt};

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
    /// Whether [`Backend::h_msm`] may keep h on the device (on unless switched off).
    device_h: AtomicBool,
    /// Which path the last `h_msm` call took (an [`HStep`] as u8).
    last_h: AtomicU8,
    /// The splits of the last `h_msm` call's H step and MSM (the other MSMs of a proof
    /// overwrite [`GpuBackend::last_timings`]).
    last_h_split: Mutex<HSplit>,
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
    /// taken only when switched to with [`GpuBackend::set_device_h`]).
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
    /// Device 0 with the default budget (90% of its free memory).
    pub fn new() -> Result<Self, GpuError> {
        Self::open(0, VramBudget::default())
    }

    pub fn open(ordinal: usize, budget: VramBudget) -> Result<Self, GpuError> {
        Ok(Self::over(Gpu::open(ordinal, budget)?))
    }

    /// As [`GpuBackend::open`] with a pinned host memory budget in bytes.
    pub fn open_with(
        ordinal: usize,
        budget: VramBudget,
        pinned_budget: usize,
    ) -> Result<Self, GpuError> {
        Ok(Self::over(Gpu::open_with(ordinal, budget, pinned_budget)?))
    }

    fn over(gpu: Gpu) -> Self {
        GpuBackend {
            gpu,
            device_h: AtomicBool::new(true),
            last_h: AtomicU8::new(HStep::Host as u8),
            last_h_split: Mutex::default(),
        }
    }

    /// Lets [`Backend::h_msm`] keep a, b, c and h on the device when the budget holds
    /// them (default), or makes it take the host path (each NTT's values up and back, h
    /// uploaded again for its MSM): the reference for equality tests and benches.
    pub fn set_device_h(&self, on: bool) {
        self.device_h.store(on, Ordering::Relaxed)
    }

    /// The split of the last [`Backend::h_msm`] call.
    pub fn last_h_split(&self) -> HSplit {
        *self.last_h_split.lock().unwrap()
    }

    /// The path the last [`Backend::h_msm`] took.
    pub fn last_h_step(&self) -> HStep {
        match self.last_h.load(Ordering::Relaxed) {
            0 => HStep::Device,
            1 => HStep::Lean,
            _ => HStep::Host,
        }
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

    /// Keep large base arrays resident across calls (default on).
    pub fn set_residency(&self, on: bool) {
        self.gpu.set_residency(on)
    }

    /// Whether the H step page-locks a, b and c in place for direct DMA (otherwise as
    /// `CUZK_GPU_PIN_HOST` says; default off: through the staging buffers).
    pub fn set_pin_host(&self, on: bool) {
        self.gpu.set_pin_host(on)
    }

    /// Forces the MSM window width (4 to 22 bits), or lets the plan choose (None).
    pub fn set_msm_window(&self, bits: Option<u32>) {
        self.gpu.set_msm_window(bits)
    }

    /// Forces the batch-affine levels of the G1 bucket phase (0 to 12) in every call that
    /// uploads nothing (the H MSM), whatever its size; None: the plan's rule.
    pub fn set_msm_batch_levels(&self, levels: Option<u32>) {
        self.gpu.set_msm_batch_levels(levels)
    }

    /// The batch-affine levels the last MSM call took (0: the XYZZ bucket phase alone).
    pub fn last_msm_batch_levels(&self) -> u32 {
        self.gpu.last_msm_batch_levels()
    }

    /// Forces the MSM bucket keys derived from the scatter's cursors (Some(true)) or stored
    /// (Some(false)) in every call without batch-affine levels; None: the plan's rule.
    pub fn set_msm_derived_keys(&self, on: Option<bool>) {
        self.gpu.set_msm_derived_keys(on)
    }

    /// Whether the last MSM call derived its bucket keys.
    pub fn last_msm_derived_keys(&self) -> bool {
        self.gpu.last_msm_derived_keys()
    }

    /// Drops resident base arrays, the staging buffers and cached pinned blocks.
    pub fn release_caches(&self) -> Result<(), GpuError> {
        self.gpu.release_caches()
    }

    /// Upload / kernels / download split of the last operation.
    pub fn last_timings(&self) -> OpTimings {
        self.gpu.last_timings()
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
        msm::plan::<G1>(n, PointSource::Streamed, false, self.gpu.available()).map_err(|need| {
            let c = self.gpu.counters();
            GpuError::OverBudget {
                device: self.gpu.info().ordinal,
                requested: need,
                in_use: c.in_use,
                budget: c.budget,
            }
        })
    }

    /// The device footprint of a proof whose parameters have `shape` (see
    /// `cuzk_groth16::prover::required_shape`), against this arena's budget: whether it can
    /// run, in how large chunks, and whether its parameters can stay resident.
    pub fn plan_footprint(&self, shape: &SrsShape) -> ProofFootprint {
        let budget = self.gpu.counters().budget;
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
        let (msm_chunk, msm_bytes) =
            match msm::plan::<G1>(largest, PointSource::Streamed, false, budget) {
                Ok(p) => (p.chunk, p.work_bytes),
                Err(need) => (0, need),
            };
        let g2_bytes = msm::plan::<G2>(shape.b_g2.max(1), PointSource::Streamed, false, budget)
            .map_or(usize::MAX, |p| p.work_bytes);
        let peak_bytes = ntt_bytes.max(quotient_bytes).max(msm_bytes).max(g2_bytes);
        let fits = peak_bytes <= budget && msm_chunk > 0 && quotient_chunk > 0;
        let h_step_bytes = ntt::h_step_bytes(log_n.max(1));
        let full = msm::plan::<G1>(largest, PointSource::Streamed, false, usize::MAX)
            .expect("an unlimited plan");
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
/// device (crate::random): the same points as the host's generator.
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

impl GpuBackend {
    /// Random points made on the device into `out` (crate::random), each slice copied in
    /// on the host's cores.
    fn random_into<C: crate::msm::Curve>(&self, out: &mut [C::Affine], seed: u64, stream: u64) -> Result<(), BackendError>
    where
        C::Proj: cuzk_groth16::shape::BatchAffine<Affine = C::Affine> + group::Curve<AffineRepr = C::Affine>,
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
        self.gpu.residency_enabled()
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
        msm::msm::<G1>(&self.gpu, bases, selection, Scalars::Host(scalars)).map_err(unavailable)
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G2Projective, BackendError> {
        check_msm_args(bases.len(), selection, scalars.len())?;
        msm::msm::<G2>(&self.gpu, bases, selection, Scalars::Host(scalars)).map_err(unavailable)
    }

    fn sum_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
    ) -> Result<G1Projective, BackendError> {
        selection.check(bases.len())?;
        msm::msm::<G1>(&self.gpu, bases, selection, Scalars::None).map_err(unavailable)
    }

    fn sum_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
    ) -> Result<G2Projective, BackendError> {
        selection.check(bases.len())?;
        msm::msm::<G2>(&self.gpu, bases, selection, Scalars::None).map_err(unavailable)
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
        let path = if !self.device_h.load(Ordering::Relaxed) || log_n == 0 {
            HStep::Host
        } else if ntt::h_step_bytes(log_n) <= self.gpu.available() {
            HStep::Device
        } else {
            HStep::Lean
        };
        self.last_h.store(path as u8, Ordering::Relaxed);
        let t = Instant::now();
        let h = match path {
            HStep::Host => {
                let out = cuzk_groth16::prover::h_msm_via_host(self, a, b, c, h_bases)?;
                let msm = self.gpu.last_timings();
                *self.last_h_split.lock().unwrap() = HSplit { step: OpTimings::default(), msm };
                return Ok(out);
            }
            HStep::Device => ntt::h_on_device(&self.gpu, a, b, c, log_n),
            HStep::Lean => {
                let (mut b, mut c) = (b, c);
                let need = ntt::ntt_bytes(log_n);
                if need > self.gpu.available() {
                    let c = self.gpu.counters();
                    return Err(unavailable(GpuError::OverBudget {
                        device: self.gpu.info().ordinal,
                        requested: need,
                        in_use: c.in_use,
                        budget: c.budget,
                    }));
                }
                let h = ntt::h_on_device_lean(&self.gpu, &a, &mut b, &mut c, log_n);
                cuzk_groth16::release::drop_in_background((a, b, c));
                h
            }
        }
        .map_err(unavailable)?;
        let h_step = t.elapsed();
        let step = self.gpu.last_timings();
        // Measurement switch: CUZK_GPU_H_MSM_FROM_HOST=1 brings h back and uploads it again
        // for its MSM (as the host path's MSM does), to compare the two MSM inputs.
        let acc = if std::env::var("CUZK_GPU_H_MSM_FROM_HOST").is_ok_and(|v| v == "1") {
            let mut host = vec![Scalar::ZERO; n - 1];
            {
                let _region = self.gpu.enter().map_err(unavailable)?;
                self.gpu.download_to(&mut host, h.ptr()).map_err(unavailable)?;
                self.gpu.sync().map_err(unavailable)?;
            }
            drop(h);
            msm::msm::<G1>(&self.gpu, h_bases, Selection::All, Scalars::Host(&host))
        } else {
            msm::msm::<G1>(&self.gpu, h_bases, Selection::All, Scalars::Device(&h))
        }
        .map_err(unavailable)?;
        *self.last_h_split.lock().unwrap() = HSplit { step, msm: self.gpu.last_timings() };
        Ok((acc, h_step))
    }
}
