//! Random parameter points made on the device, for benches: the points
//! `cuzk_groth16::shape::random_points` makes on the host (the same runs from
//! `shape::run_seeds`, kernels/random.cuh). A 32 GiB-shaped parameter set (47.4 GB) goes
//! into a spill file in 7.6 s on the H200, against 24.7 s on its 16 cores.
//! [`crate::GpuBackend`] implements `shape::RandomPoints` with it.

use cuzk_groth16::shape::{RUN_LOG, SLICE};

use crate::device::{arg, Gpu, SyncOnDrop};
use crate::error::GpuError;
use crate::msm::Curve;

/// Points each thread makes (RANDOM_PER_THREAD in kernels/random.cuh).
const PER_THREAD: usize = 16;
const _: () = assert!((1 << RUN_LOG) % PER_THREAD == 0);

/// Makes the points of the runs `seeds` (start, step) describe, `n` of them: point i is
/// start + (j + 1) step of run i >> RUN_LOG, j = i mod 2^RUN_LOG. One slice of
/// `shape::SLICE` points at a time is made, downloaded into a host buffer of that size and
/// handed to `sink(first point, slice)`.
pub(crate) fn random_points<C: Curve>(
    gpu: &Gpu,
    seeds: &[(C::Affine, C::Affine)],
    n: usize,
    sink: &mut dyn FnMut(usize, &[C::Affine]) -> std::io::Result<()>,
) -> Result<(), GpuError> {
    assert!(seeds.len() == n.div_ceil(1 << RUN_LOG), "one seed per run");
    if n == 0 {
        return Ok(());
    }
    let _region = gpu.enter()?;
    let (starts, steps): (Vec<C::Affine>, Vec<C::Affine>) = seeds.iter().copied().unzip();
    let starts_buf = gpu.alloc(starts.len() * C::AFFINE_BYTES)?;
    let steps_buf = gpu.alloc(steps.len() * C::AFFINE_BYTES)?;
    let slice = SLICE.min(n);
    let out_buf = gpu.alloc(slice * C::AFFINE_BYTES)?;
    let _sync = SyncOnDrop(gpu);
    gpu.upload(&starts_buf, &starts)?;
    gpu.upload(&steps_buf, &steps)?;
    let kernel = C::kernels(&gpu.kernels).random_run;
    let log_run = RUN_LOG;
    let mut host = vec![seeds[0].0; slice];
    for first in (0..n).step_by(slice) {
        gpu.check_cancel()?;
        let count = slice.min(n - first);
        // The slice's first run: slices start on a run's first point.
        let run0 = ((first >> RUN_LOG) * C::AFFINE_BYTES) as u64;
        let (s, t, o, c) = (starts_buf.ptr() + run0, steps_buf.ptr() + run0, out_buf.ptr(), count as u64);
        gpu.launch(kernel, count.div_ceil(PER_THREAD), 128, 0, &mut [arg(&s), arg(&t), arg(&o), arg(&c), arg(&log_run)])?;
        gpu.download_to(&mut host[..count], o)?;
        sink(first, &host[..count]).map_err(|e| GpuError::Sink(e.to_string()))?;
    }
    gpu.sync()
}
