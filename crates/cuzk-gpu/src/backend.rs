//! [`GpuBackend`]: the `cuzk_groth16::Backend` trait on one GPU.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_groth16::backend::{check_msm_args, check_quotient_args, ntt_log_size};
use cuzk_groth16::{Backend, BackendError, CpuBackend, NttDirection, Selection};
use rayon::prelude::*;

use crate::arena::ArenaCounters;
use crate::device::{DeviceInfo, Gpu, OpTimings, VramBudget};
use crate::error::GpuError;
use crate::{msm, ntt};

/// NTT, coset quotient, G1 MSM and G1 sums on a GPU; results equal the CPU backend's bit for
/// bit. G2 MSM and G2 sums still run on the CPU backend (issue #3 follow-up: G2 kernels).
pub struct GpuBackend {
    gpu: Gpu,
    cpu: CpuBackend,
}

fn unavailable(e: GpuError) -> BackendError {
    BackendError::Unavailable {
        backend: "gpu",
        reason: e.to_string(),
    }
}

impl GpuBackend {
    /// Device 0 with the default budget (90% of its free memory).
    pub fn new() -> Result<Self, GpuError> {
        Self::open(0, VramBudget::default())
    }

    pub fn open(ordinal: usize, budget: VramBudget) -> Result<Self, GpuError> {
        Ok(GpuBackend {
            gpu: Gpu::open(ordinal, budget)?,
            cpu: CpuBackend,
        })
    }

    pub fn device(&self) -> &DeviceInfo {
        self.gpu.info()
    }

    pub fn arena_counters(&self) -> ArenaCounters {
        self.gpu.counters()
    }

    /// Upload / kernels / download split of the last operation.
    pub fn last_timings(&self) -> OpTimings {
        self.gpu.last_timings()
    }

    /// The driver's (free, total) memory of the device.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.gpu.mem_info()
    }
}

/// The selected bases as one contiguous array (borrowed when all are selected).
fn gather<'a, A: Copy + Send + Sync>(
    bases: &'a [A],
    selection: Selection<'_>,
) -> std::borrow::Cow<'a, [A]> {
    match selection {
        Selection::All => std::borrow::Cow::Borrowed(bases),
        Selection::Indices(idx) => {
            std::borrow::Cow::Owned(idx.par_iter().map(|&i| bases[i as usize]).collect())
        }
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
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
        msm::msm_g1(&self.gpu, &gather(bases, selection), scalars).map_err(unavailable)
    }

    /// On the CPU for now (G2 kernels are a follow-up of issue #3).
    fn msm_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G2Projective, BackendError> {
        self.cpu.msm_g2(bases, selection, scalars)
    }

    fn sum_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
    ) -> Result<G1Projective, BackendError> {
        selection.check(bases.len())?;
        msm::sum_g1(&self.gpu, &gather(bases, selection)).map_err(unavailable)
    }

    /// On the CPU for now (G2 kernels are a follow-up of issue #3).
    fn sum_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
    ) -> Result<G2Projective, BackendError> {
        self.cpu.sum_g2(bases, selection)
    }
}
