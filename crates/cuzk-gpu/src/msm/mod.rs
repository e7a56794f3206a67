//! Host side of the MSM and batch sum over G1 and G2 (kernels/msm.cuh).
//!
//! A call is planned before anything is allocated ([`plan()`]): the bases are either resident
//! in device memory (uploaded once, kept across calls in the arena, see `resident.rs`) or
//! streamed per chunk from pageable memory through the pinned staging buffers; the scalars
//! (and indices) are cut into chunks whose whole workspace fits what the arena can give,
//! at most 2^22 points each so that the upload of chunk k+1 (copy stream) runs while chunk k
//! is computed (compute stream). Each chunk's window sums come back through one of two
//! pinned readback buffers (double-buffered: chunk k is read back while chunk k+1 computes)
//! and the host adds them up and combines the windows. A call that cannot fit even its
//! smallest chunk is refused with `OverBudget` before any allocation; none meets a CUDA
//! out-of-memory error.
//!
//! - `plan.rs`: the plan and the chunk layout (pure, unit-tested without a GPU).
//! - `workspace.rs`: a call's device buffers. `chunk.rs`: one chunk's kernels;
//!   `buckets.rs`: the XYZZ bucket phase; `batch_affine.rs`: the batch-affine levels.
//! - `multiples.rs`: precomputed multiples of resident bases, so that windows share
//!   bucket sets (built once, resident, evicted first).
//! - `profile.rs`: kernel time by phase, at trace level.
//! - here: the entry points ([`msm`], [`sum`]), where the bases come from, the chunk loop.

mod batch_affine;
mod buckets;
mod chunk;
mod curve;
mod multiples;
pub use multiples::multiples_room;
mod plan;
mod profile;
mod workspace;

use blstrs::Scalar;
use cuzk_groth16::Selection;
use group::Group;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::arena::DeviceBuffer;
use crate::device::{Event, Gpu, OpTimings, SyncOnDrop};
use crate::error::GpuError;
use crate::pinned::PinnedBuffer;
use crate::resident::{ResidentKey, MIN_RESIDENT_POINTS};
use crate::tuning::GpuTuning;

use chunk::{ones_sum, window_sums, ChunkPoints};
pub(crate) use curve::{Curve, G1, G2};
pub(crate) use plan::{plan, resident_size, ScalarKind};
pub use plan::{choose_multiples, modeled_ms, MsmPlan, MultiplesChoice, PointSource};
use plan::{full_chunk_bytes, plan_with, windows, Layout, FR_BYTES};
use profile::{Phase, Profile};
use workspace::{ptr, Workspace};

/// The scalars of one call.
#[derive(Clone, Copy)]
pub(crate) enum Scalars<'a> {
    /// Every scalar one: the batch sum of the selected bases ([`sum`]), taken without
    /// windows or buckets.
    AllOne,
    /// From the host, one per selected base, uploaded per chunk.
    Host(&'a [Scalar]),
    /// Already in device memory (h from the H step), one per selected base: chunks read
    /// them in place and nothing is uploaded.
    Device(&'a DeviceBuffer),
}

impl Scalars<'_> {
    fn kind(&self) -> ScalarKind {
        match self {
            Scalars::AllOne => ScalarKind::AllOne,
            Scalars::Host(_) => ScalarKind::Host,
            Scalars::Device(_) => ScalarKind::Device,
        }
    }
}

/// Whether `bases` are resident on `gpu` now (arrays too short to be kept resident count as
/// held: every call uploads them anyway, from a few host pages).
pub(crate) fn holds<C: Curve>(gpu: &Gpu, bases: &[C::Affine]) -> bool {
    bases.len() < MIN_RESIDENT_POINTS || gpu.resident.lock().unwrap().contains(&ResidentKey::of(bases, C::GROUP))
}

/// The bases of one call, and whether the gpu keeps them resident.
fn choose_source<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    selection: Selection<'_>,
    n: usize,
    scalars: ScalarKind,
    tuning: &GpuTuning,
) -> Result<(PointSource, Option<Arc<DeviceBuffer>>), GpuError> {
    let indexed = matches!(selection, Selection::Indices(_));
    let resident = PointSource::Resident { indexed };
    if bases.len() < MIN_RESIDENT_POINTS || !tuning.residency {
        return Ok((PointSource::Streamed, None));
    }
    let key = ResidentKey::of(bases, C::GROUP);
    if let Some(buf) = gpu.resident.lock().unwrap().get(&key) {
        return Ok((resident, Some(buf)));
    }
    // Admit when the selection is not tiny, the cache stays within half the budget and the
    // call still has room for a full chunk (of a call that uploads its scalars).
    let size = resident_size::<C>(bases.len());
    let budget = gpu.counters().budget;
    let cached = gpu.resident.lock().unwrap().bytes();
    let uploaded = if scalars == ScalarKind::AllOne { ScalarKind::AllOne } else { ScalarKind::Host };
    let full_chunk = full_chunk_bytes::<C>(n, resident, uploaded, tuning);
    if n.saturating_mul(8) < bases.len() {
        // A small selection of a large array: this call streams what it reads; a later,
        // larger call may keep the array.
        return Ok((PointSource::Streamed, None));
    }
    let half_full = cached + size > budget / 2;
    if half_full || size + full_chunk > gpu.available() {
        let why = if half_full { "the resident half of the GPU budget is full" } else { "it and a chunk of the call do not fit the free budget" };
        gpu.resident.lock().unwrap().note_not_kept(&key, size, why);
        return Ok((PointSource::Streamed, None));
    }
    let buf = gpu.alloc(bases.len() * C::AFFINE_BYTES)?;
    gpu.upload_with(buf.ptr(), bases.len(), None, |start, out: &mut [C::Affine]| {
        out.copy_from_slice(&bases[start..start + out.len()])
    })?;
    let buf = Arc::new(buf);
    gpu.resident.lock().unwrap().insert(key, buf.clone());
    Ok((resident, Some(buf)))
}

/// `sum_i scalars[i] * bases[sel_i]`, equal to the CPU backend's result, and the call's plan
/// (None for an empty selection). Arguments are checked by the caller.
pub(crate) fn msm<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    selection: Selection<'_>,
    scalars: Scalars<'_>,
) -> Result<(C::Proj, Option<MsmPlan>), GpuError> {
    run::<C>(gpu, bases, selection, scalars)
}

/// The sum of the selected bases, equal to the CPU backend's result, and the call's plan.
pub(crate) fn sum<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    selection: Selection<'_>,
) -> Result<(C::Proj, Option<MsmPlan>), GpuError> {
    run::<C>(gpu, bases, selection, Scalars::AllOne)
}

/// One call's inputs, as its chunks read them.
struct Call<'a, C: Curve> {
    bases: &'a [C::Affine],
    selection: Selection<'a>,
    scalars: Scalars<'a>,
    /// Points in the call and per chunk.
    n: usize,
    m: usize,
    source: PointSource,
    /// The resident base array when `source` is resident.
    resident: Option<Arc<DeviceBuffer>>,
    /// Its multiples when the plan reads them.
    mults: Option<multiples::Shared>,
}

impl<C: Curve> Call<'_, C> {
    /// Chunk j's first point and length.
    fn span(&self, j: usize) -> (usize, usize) {
        let lo = j * self.m;
        (lo, self.m.min(self.n - lo))
    }
}

fn run<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    selection: Selection<'_>,
    scalars: Scalars<'_>,
) -> Result<(C::Proj, Option<MsmPlan>), GpuError> {
    let n = selection.len(bases.len());
    if n == 0 {
        return Ok((C::Proj::identity(), None));
    }
    let t_enter = Instant::now();
    let _region = gpu.enter()?;
    let t0 = Instant::now();
    let tuning = gpu.tuning();
    if let Scalars::Device(d) = scalars {
        assert!(d.len_bytes() >= n * FR_BYTES, "device scalars shorter than the selection");
    }
    let kind = scalars.kind();
    let (source, resident) = choose_source::<C>(gpu, bases, selection, n, kind, &tuning)?;
    let mults = match &resident {
        Some(r) => multiples::for_call::<C>(gpu, bases, r, n, source, kind, &tuning)?,
        None => None,
    };
    let shared = mults.as_ref().map(|m| (m.c, m.per));
    let mut p = plan_with::<C>(n, source, kind, &tuning, gpu.available(), shared).map_err(|need| gpu.over_budget(need))?;
    p.multiples_bytes = mults.as_ref().map_or(0, |m| m.buf.reserved_bytes());
    let l = Layout::with_sets::<C>(p.chunk, p.c, p.per, source, kind, p.batch_levels, p.derived_keys);
    let ta = Instant::now();
    let ws = Workspace::new::<C>(gpu, &l)?;
    let alloc = ta.elapsed();
    let call = Call::<C> { bases, selection, scalars, n, m: p.chunk, source, resident, mults };
    let sums = run_chunks(gpu, &call, &p, &ws, &tuning)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    sums.prof.report(|| {
        format!(
            "G{}, {n} points, c = {}, {} windows in {} bucket sets ({} copies of the bases), {} chunk(s) of {}, \
             {} batch-affine levels, kernels {:.1} ms; \
             host: wall {:.1} ms = device lock {:.1} + source and plan {:.1} + workspace alloc {:.1} + the rest, \
             of which staging uploads {:.1}",
            C::GROUP,
            p.c,
            windows(p.c),
            p.sets(),
            p.per,
            p.chunks,
            p.chunk,
            p.batch_levels,
            ms(sums.kernels),
            ms(t_enter.elapsed()),
            ms(t0 - t_enter),
            ms(ta - t0),
            ms(alloc),
            ms(sums.upload)
        )
    })?;
    drop(ws);
    let acc = combine::<C>(&sums.windows, p.c * p.per) + sums.ones;
    gpu.set_timings(OpTimings {
        upload: sums.upload,
        compute: t0.elapsed().saturating_sub(sums.upload),
        download: Duration::ZERO,
        kernels: sums.kernels,
        alloc,
        ..Default::default()
    });
    Ok((acc, Some(p)))
}

/// The bucket sets' sums, `bits` apart (c * per; top first: acc = acc * 2^bits + S_g,
/// Horner over the sets).
fn combine<C: Curve>(sets: &[C::Proj], bits: u32) -> C::Proj {
    let mut acc = C::Proj::identity();
    for w in sets.iter().rev() {
        for _ in 0..bits {
            acc = acc.double();
        }
        acc += w;
    }
    acc
}

/// What the chunks of a call add up to: each window's sum and the scalar-one sum (for a
/// batch sum, the whole sum), the kernels' time, the host's upload time and the profile.
struct ChunkSums<C: Curve> {
    windows: Vec<C::Proj>,
    ones: C::Proj,
    kernels: Duration,
    upload: Duration,
    prof: Profile,
}

/// The inputs of chunk j into slot j % 2 on the copy stream, once `in_free[j % 2]` says
/// the compute stream has finished reading that slot (chunk j - 2).
fn upload_inputs<C: Curve>(gpu: &Gpu, call: &Call<'_, C>, ws: &Workspace, j: usize, in_free: &[Event; 2]) -> Result<(), GpuError> {
    let (s, (lo, len)) = (j % 2, call.span(j));
    let after = (j >= 2).then_some(&in_free[s]);
    let bases = call.bases;
    if let Scalars::Host(sc) = call.scalars {
        let d = ws.scalars[s].as_ref().unwrap();
        gpu.upload_with(d.ptr(), len, after, |start, out: &mut [Scalar]| {
            out.copy_from_slice(&sc[lo + start..lo + start + out.len()])
        })?;
    }
    match (call.source, call.selection) {
        (PointSource::Streamed, Selection::All) => gpu.upload_with(ptr(&ws.points[s]), len, after, |start, out| {
            out.copy_from_slice(&bases[lo + start..lo + start + out.len()])
        }),
        (PointSource::Streamed, Selection::Indices(idx)) => gpu.upload_with(ptr(&ws.points[s]), len, after, |start, out| {
            for (o, &i) in out.iter_mut().zip(&idx[lo + start..]) {
                *o = bases[i as usize];
            }
        }),
        (PointSource::Resident { .. }, Selection::Indices(idx)) => {
            gpu.upload_with(ptr(&ws.idx[s]), len, after, |start, out: &mut [u32]| {
                out.copy_from_slice(&idx[lo + start..lo + start + out.len()])
            })
        }
        (PointSource::Resident { .. }, Selection::All) => Ok(()),
    }
}

/// The chunks of a call: chunk j's inputs go up while chunk j - 1 computes, and chunk j's
/// results come back through pinned readback buffer j % 2 while chunk j + 1 computes.
fn run_chunks<C: Curve>(
    gpu: &Gpu,
    call: &Call<'_, C>,
    p: &MsmPlan,
    ws: &Workspace,
    tuning: &GpuTuning,
) -> Result<ChunkSums<C>, GpuError> {
    let sum_only = matches!(call.scalars, Scalars::AllOne);
    let k = C::kernels(&gpu.kernels);
    let windows = p.sets() as usize;
    let results = if sum_only { 1 } else { windows + 1 };
    let in_free = [Event::new(false)?, Event::new(false)?];
    let mut readback = [gpu.pinned().alloc(ws.jac[0].len_bytes())?, gpu.pinned().alloc(ws.jac[0].len_bytes())?];
    let read_done = [Event::new(false)?, Event::new(false)?];
    // On every exit (an error or a cancel mid-way included), queued copies and kernels are
    // finished before the readback buffers and the workspace go back.
    let _drain = SyncOnDrop(gpu);
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    let t = Instant::now();
    upload_inputs(gpu, call, ws, 0, &in_free)?;
    let upload = t.elapsed();
    kstart.record(gpu.stream())?;
    let mut sums = ChunkSums::<C> {
        windows: vec![C::Proj::identity(); windows],
        ones: C::Proj::identity(),
        kernels: Duration::ZERO,
        upload,
        prof: Profile::start(gpu)?,
    };
    let consume = |sums: &mut ChunkSums<C>, buf: &PinnedBuffer| {
        let r = buf.as_slice::<C::Proj>(results);
        for (a, w) in sums.windows.iter_mut().zip(&r[..results - 1]) {
            *a += w;
        }
        sums.ones += r[results - 1];
    };
    for j in 0..p.chunks {
        gpu.check_cancel()?;
        let (s, (lo, len)) = (j % 2, call.span(j));
        let (pts, idx) = match (call.source, &call.resident) {
            (PointSource::Resident { indexed: false }, Some(r)) => (r.ptr() + (lo * C::AFFINE_BYTES) as u64, 0u64),
            (PointSource::Resident { indexed: true }, Some(r)) => (r.ptr(), ptr(&ws.idx[s])),
            _ => (ptr(&ws.points[s]), 0u64),
        };
        let (mults, mult_stride) = match (&call.mults, call.source) {
            (Some(m), PointSource::Resident { indexed: false }) => (m.buf.ptr() + (lo * C::AFFINE_BYTES) as u64, m.len),
            (Some(m), _) => (m.buf.ptr(), m.len),
            (None, _) => (0, 0),
        };
        let chunk = ChunkPoints { pts, idx, len, mults, mult_stride };
        let jac = ws.jac[s].ptr();
        if j >= 2 {
            // The readback of chunk j - 2 from this jac slot is done (consumed below).
            read_done[s].wait_in(gpu.stream())?;
        }
        sums.prof.mark(gpu, Phase::Other)?;
        let class = if sum_only {
            0
        } else {
            let scalars = match call.scalars {
                Scalars::Device(d) => d.ptr() + (lo * FR_BYTES) as u64,
                _ => ptr(&ws.scalars[s]),
            };
            window_sums::<C>(gpu, &k, ws, p, &chunk, scalars, jac, tuning.msm_ba_group, tuning.msm_scatter_per_set, &mut sums.prof)?;
            ptr(&ws.class)
        };
        // The scalar-one points (or, for a sum, all of them) after the windows.
        let ones_at = jac + ((results - 1) * C::JAC_BYTES) as u64;
        ones_sum(gpu, &k, ws, &chunk, class, ones_at, &mut sums.prof)?;
        in_free[s].record(gpu.stream())?;

        // Next chunk's inputs while this one computes.
        if j + 1 < p.chunks {
            let t = Instant::now();
            upload_inputs(gpu, call, ws, j + 1, &in_free)?;
            sums.upload += t.elapsed();
        }
        // This chunk's results back on the copy stream (after the upload just queued).
        let ready = Event::new(false)?;
        ready.record(gpu.stream())?;
        ready.wait_in(gpu.copy_stream())?;
        {
            let out = readback[s].as_mut_slice::<u8>(results * C::JAC_BYTES);
            // SAFETY: pinned destination, read only after read_done[s] completes.
            unsafe { cudarc::driver::result::memcpy_dtoh_async(out, jac, gpu.copy_stream().cu_stream()) }
                .map_err(crate::error::driver("cuMemcpyDtoHAsync"))?;
        }
        read_done[s].record(gpu.copy_stream())?;
        // The previous chunk's results, double-buffered.
        if j >= 1 {
            let ps = (j - 1) % 2;
            read_done[ps].sync()?;
            consume(&mut sums, &readback[ps]);
        }
    }
    kend.record(gpu.stream())?;
    let last = (p.chunks - 1) % 2;
    read_done[last].sync()?;
    consume(&mut sums, &readback[last]);
    gpu.sync()?;
    sums.kernels = kend.since(&kstart)?;
    Ok(sums)
}
