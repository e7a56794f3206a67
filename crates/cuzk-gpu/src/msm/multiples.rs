//! Precomputed multiples of resident G1 bases (kernels/multiples.cuh): copy j of a base
//! array is 2^(c j) P for each base P, j = 1 .. per - 1, so that `per` windows of a call
//! add into one bucket set (kernels/msm.cuh) and wider windows cost no bucket reduction per
//! window. Parameters never change while the daemon runs, so the copies are built once on
//! the device, the first time a plan takes them, and stay resident beside the bases until
//! an allocation needs their room (they are evicted before any base array, resident.rs).
//!
//! The width and the copies are the plan's ([`choose_multiples`]), within the tuning's
//! `msm_multiples` and the room the budget leaves: the budget less everything resident
//! (other arrays' multiples included) and less what an H step of the call's size and the
//! call's own workspace need. Multiples already resident for these bases are used at their width whatever the
//! room says now, so that a call never rebuilds another set beside them (unless the tuning
//! changed: fewer copies, or another forced width, drops them).

use std::sync::Arc;
use std::time::Instant;

use crate::arena::{reserved_size, DeviceBuffer};
use crate::device::{arg, Gpu, SyncOnDrop};
use crate::error::GpuError;
use crate::ntt::h_step_bytes;
use crate::resident::{ResidentKey, MIN_RESIDENT_POINTS};
use crate::tuning::GpuTuning;

use super::buckets::BLOCK;
use super::curve::Curve;
use super::plan::{choose_multiples, forced_window, plan, window_bits, PointSource, ScalarKind};

/// Points each thread of the build takes (MULTIPLE_PER_THREAD in kernels/multiples.cuh).
const PER_THREAD: usize = 16;

/// The multiples a call reads: `per` copies of its bases at c-bit windows (the bases
/// themselves, then `buf`'s per - 1 copies of `len` points each).
pub(crate) struct Shared {
    pub(crate) c: u32,
    pub(crate) per: u32,
    pub(crate) buf: Arc<DeviceBuffer>,
    pub(crate) len: usize,
}

/// What the budget leaves for multiples beside the `resident` bytes (parameters, circuits,
/// other multiples), an H step of 2^log n and the call's workspace (`work` bytes).
pub(crate) fn room(budget: usize, resident: usize, n: usize, work: usize) -> usize {
    let log_n = usize::BITS - n.saturating_sub(1).leading_zeros();
    budget.saturating_sub(resident).saturating_sub(h_step_bytes(log_n.max(1)).max(work))
}

/// The room for multiples of a call of `n` points over resident bases with scalars on the
/// device (the H MSM), default tuning, on a device of `budget` bytes holding `resident`
/// bytes: what the plan may spend (benches print it, `cuzk-lab msm-plan`).
pub fn multiples_room(budget: usize, resident: usize, n: usize) -> usize {
    let work = plan::<super::G1>(n, PointSource::Resident { indexed: false }, ScalarKind::Device, &GpuTuning::default(), usize::MAX)
        .map_or(0, |p| p.work_bytes);
    room(budget, resident, n, work)
}

/// The multiples of `bases` (resident in `base_buf`) for a call of `n` general or one
/// scalars of kind `scalars` over them, when the tuning and the budget let the plan take
/// them: resident already, or built now. None: the call runs without.
pub(crate) fn for_call<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    base_buf: &DeviceBuffer,
    n: usize,
    source: PointSource,
    scalars: ScalarKind,
    tuning: &GpuTuning,
) -> Result<Option<Shared>, GpuError> {
    if C::GROUP != 1 || tuning.msm_multiples <= 1 || scalars == ScalarKind::AllOne || n < MIN_RESIDENT_POINTS {
        return Ok(None);
    }
    let key = ResidentKey::of(bases, C::GROUP);
    let len = bases.len();
    let fixed = forced_window(n, tuning);
    let found = gpu.resident.lock().unwrap().multiples_of(&key);
    if let Some((c, per, buf)) = found {
        // Kept unless the tuning now forbids them (fewer copies, another forced width).
        if per <= tuning.msm_multiples && fixed.is_none_or(|f| f == c) {
            return Ok(Some(Shared { c, per, buf, len }));
        }
        drop(buf);
        gpu.resident.lock().unwrap().drop_multiples_of(&key);
    }
    let work = plan::<C>(n, source, scalars, tuning, usize::MAX).map_or(0, |p| p.work_bytes);
    // Everything resident counts here, other arrays' multiples included: the first call to
    // take multiples (a proof's H MSM) takes the room, later ones what is left, and nothing
    // is evicted to build them.
    // The room leaves an H step of the longest resident array's size, not only of this
    // call's: a proof's small MSMs never take what its H step needs next.
    let (resident, longest) = {
        let r = gpu.resident.lock().unwrap();
        (r.all_bytes(), r.longest())
    };
    let room = room(gpu.counters().budget, resident, n.max(longest), work).min(gpu.available().saturating_sub(work));
    let plain = fixed.unwrap_or_else(|| window_bits(n));
    let choice = choose_multiples(n, n, len, C::AFFINE_BYTES, tuning.msm_multiples, room, tuning.msm_scatter_per_set, fixed, plain);
    if choice.per <= 1 {
        return Ok(None);
    }
    let t = Instant::now();
    let buf = build::<C>(gpu, base_buf, len, choice.c, choice.per)?;
    log::info!(
        "gpu{}: built {} multiples of {len} G{} bases (c = {}, {:.1} GiB) in {:.0} ms; the model gives {:.0} ms of bucket work \
         against {:.0} ms without (an estimate)",
        gpu.info().ordinal,
        choice.per - 1,
        C::GROUP,
        choice.c,
        choice.bytes as f64 / (1u64 << 30) as f64,
        t.elapsed().as_secs_f64() * 1e3,
        choice.modeled_ms,
        choose_multiples(n, n, len, C::AFFINE_BYTES, 1, 0, tuning.msm_scatter_per_set, fixed, plain).modeled_ms,
    );
    let buf = Arc::new(buf);
    gpu.resident.lock().unwrap().insert(key.multiples(choice.c, choice.per), buf.clone());
    Ok(Some(Shared { c: choice.c, per: choice.per, buf, len }))
}

/// Copies 1 .. per - 1 of `len` bases at `bases`: copy j = 2^c * copy j - 1.
fn build<C: Curve>(gpu: &Gpu, bases: &DeviceBuffer, len: usize, c: u32, per: u32) -> Result<DeviceBuffer, GpuError> {
    let bytes = len * C::AFFINE_BYTES;
    let buf = gpu.alloc((per as usize - 1) * bytes)?;
    debug_assert!(buf.reserved_bytes() >= reserved_size((per as usize - 1) * bytes));
    let _sync = SyncOnDrop(gpu);
    let kernel = C::kernels(&gpu.kernels).next_multiple;
    let n = len as u64;
    for j in 1..per as u64 {
        gpu.check_cancel()?;
        let src = if j == 1 { bases.ptr() } else { buf.ptr() + (j - 2) * bytes as u64 };
        let dst = buf.ptr() + (j - 1) * bytes as u64;
        gpu.launch(kernel, len.div_ceil(PER_THREAD), BLOCK, 0, &mut [arg(&src), arg(&dst), arg(&n), arg(&c)])?;
    }
    gpu.sync()?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;

    /// The room for multiples beside the resident parameters and an H step of the call's
    /// size: the budget less both (the larger of the H step and the workspace).
    #[test]
    fn room_leaves_the_h_step() {
        let n = 1 << 27;
        let h = h_step_bytes(27);
        assert!(h > 16 * GIB && h < 24 * GIB, "an H step at 2^27 takes {h}");
        assert_eq!(room(141 * GIB, 50 * GIB, n, 0), 141 * GIB - 50 * GIB - h);
        assert_eq!(room(141 * GIB, 50 * GIB, n, 100 * GIB), 0);
        assert_eq!(room(14 * GIB, 0, n, 0), 0, "a 14 GiB budget holds no H step and multiples");
        assert_eq!(room(141 * GIB, 50 * GIB, (1 << 27) - 1, 0), room(141 * GIB, 50 * GIB, n, 0), "n - 1 points: the same domain");
    }
}
