//! The kernels of one MSM chunk (kernels/msm.cuh), queued on the compute stream: the
//! windows (digits classified and scattered into buckets, the bucket phase, each window
//! reduced to one sum) and the sum of the points whose scalar is one (or, in a batch sum,
//! of every point). Results land in Jacobian form in the chunk's readback source.

use crate::device::{arg, Gpu};
use crate::error::GpuError;
use crate::kernels::CurveKernels;

use super::batch_affine::{batch_affine, BaInput};
use super::buckets::{bucket_phase, Derived, Mults, BLOCK};
use super::curve::Curve;
use super::plan::{entry_shift, reduce_steps, segments, windows, MsmPlan, SUM_CHUNK};
use super::profile::{Phase, Profile};
use super::workspace::{ptr, Workspace};

/// A chunk's points on the device: the base array (resident, or the chunk's streamed
/// points), the index array into it (0: none), the chunk's length, and the multiples of the
/// bases (copies 1 .. per - 1, `mult_stride` points apart, from the chunk's first point when
/// there is no index array; 0: none).
pub(crate) struct ChunkPoints {
    pub(crate) pts: u64,
    pub(crate) idx: u64,
    pub(crate) len: usize,
    pub(crate) mults: u64,
    pub(crate) mult_stride: usize,
}

/// Tree reduction of `count` XYZZ points at `src` in `groups` equal groups, ping-ponging
/// between red_a and red_b; the address of the `groups` sums.
fn reduce(gpu: &Gpu, k: &CurveKernels, src: u64, count: usize, groups: usize, red: [u64; 2]) -> Result<u64, GpuError> {
    let mut cur = src;
    for (i, (count, chunk, threads)) in reduce_steps(count, groups).into_iter().enumerate() {
        let out = red[i % 2];
        let (c32, ch, t32) = (count as u32, chunk as u32, threads as u32);
        gpu.launch(
            k.xyzz_sum_partials,
            threads,
            BLOCK,
            0,
            &mut [arg(&cur), arg(&out), arg(&c32), arg(&ch), arg(&t32)],
        )?;
        cur = out;
    }
    Ok(cur)
}

fn to_jacobian(gpu: &Gpu, k: &CurveKernels, src: u64, dst: u64, count: usize) -> Result<(), GpuError> {
    let c32 = count as u32;
    gpu.launch(k.xyzz_to_jacobian, count, BLOCK, 0, &mut [arg(&src), arg(&dst), arg(&c32)])
}

/// The bucket-set sums of one chunk into `jac` (one Jacobian point per set: per window
/// without multiples): the scalars at `scalars` out of Montgomery form and into signed
/// digits, counted and scattered into their buckets' slots (all sets in one pass, or one set
/// per pass with the tuning's `msm_scatter_per_set`), the bucket phase (batch-affine levels
/// first when the plan has them, `ba_group` slots per thread), each set's buckets reduced to
/// one sum.
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_sums<C: Curve>(
    gpu: &Gpu,
    k: &CurveKernels,
    ws: &Workspace,
    p: &MsmPlan,
    chunk: &ChunkPoints,
    scalars: u64,
    jac: u64,
    ba_group: usize,
    per_set: bool,
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let (c, len, per) = (p.c, chunk.len, p.per);
    let windows = windows(c);
    let sets = p.sets();
    let shift = entry_shift(len, per).expect("the plan's chunk leaves room for the multiple's number");
    let half = 1usize << (c - 1);
    let (n32, pcls, pk) = (len as u32, ptr(&ws.class), ptr(&ws.cursor));
    gpu.memset(ws.cursor.as_ref().unwrap(), 0)?;
    gpu.launch(
        gpu.kernels.msm_classify,
        len,
        BLOCK,
        0,
        &mut [arg(&scalars), arg(&pcls), arg(&pk), arg(&n32), arg(&c), arg(&windows), arg(&per)],
    )?;
    let scan_threads = 1024u32;
    gpu.launch(
        gpu.kernels.msm_bucket_offsets,
        sets as usize * scan_threads as usize,
        scan_threads,
        scan_threads * 4,
        &mut [arg(&pk), arg(&c)],
    )?;
    prof.mark(gpu, Phase::Classify)?;
    let region = per as usize * len;
    let slots = sets as usize * region;
    let (pe, pkeys) = (ptr(&ws.entries), ptr(&ws.keys));
    if let Some(keys) = ws.keys.as_ref() {
        gpu.memset_bytes(keys.ptr(), slots * 4, 0xff)?;
    }
    // One pass for all sets, or a pass per set: the windows of set g are per * g ..
    // per * (g + 1), its cursors and slots offset to its own (the kernel's set 0).
    let passes: Vec<(u32, u32)> =
        if per_set { (0..sets).map(|g| (g * per, (windows - g * per).min(per))).collect() } else { vec![(0, windows)] };
    for (w0, nw) in passes {
        let g32 = w0 / per;
        let g = g32 as u64;
        let cur = pk + g * (half as u64 + 1) * 4;
        let (ent, keys) = (pe + g * region as u64 * 4, if pkeys == 0 { 0 } else { pkeys + g * region as u64 * 4 });
        gpu.launch(
            gpu.kernels.msm_scatter,
            len,
            BLOCK,
            0,
            &mut [
                arg(&scalars),
                arg(&pcls),
                arg(&cur),
                arg(&ent),
                arg(&keys),
                arg(&n32),
                arg(&c),
                arg(&w0),
                arg(&nw),
                arg(&per),
                arg(&shift),
                arg(&g32),
            ],
        )?;
    }
    let pb = ptr(&ws.buckets);
    gpu.memset(ws.buckets.as_ref().unwrap(), 0)?; // all infinity (ZZ = 0)
    prof.mark(gpu, Phase::Scatter)?;
    let carries = ws.carries();
    if ws.ba_layout.levels > 0 {
        let input = BaInput {
            points: chunk.pts,
            idx: chunk.idx,
            entries: pe,
            keys: pkeys,
            cursor: pk,
            len,
            c,
            windows: windows as usize,
        };
        batch_affine(gpu, k, &ws.ba_layout, &ws.ba, input, pb, carries, ba_group, prof)?;
    } else {
        let derived = p.derived_keys.then_some(Derived { ends: pk, region, half: half as u32 });
        let mults = if chunk.mults == 0 { Mults::NONE } else { Mults { ptr: chunk.mults, stride: chunk.mult_stride, shift } };
        bucket_phase(gpu, k, [chunk.pts, chunk.idx, pe, pkeys], mults, derived, slots, pb, carries, prof)?;
    }
    let segs = segments(half);
    let (pg, segs32) = (ptr(&ws.segs), segs as u32);
    gpu.launch(
        k.window_segments,
        sets as usize * segs,
        BLOCK,
        0,
        &mut [arg(&pb), arg(&pg), arg(&c), arg(&sets), arg(&segs32)],
    )?;
    let red = [ptr(&ws.red_a), ptr(&ws.red_b)];
    let sums = reduce(gpu, k, pg, sets as usize * segs, sets as usize, red)?;
    to_jacobian(gpu, k, sums, jac, sets as usize)?;
    prof.mark(gpu, Phase::Windows)
}

/// The sum of the chunk's points whose class (from [`window_sums`]'s classify) says scalar
/// one, or of all of them when `class` is 0 (a batch sum), as one Jacobian point at `out`.
pub(crate) fn ones_sum(
    gpu: &Gpu,
    k: &CurveKernels,
    ws: &Workspace,
    chunk: &ChunkPoints,
    class: u64,
    out: u64,
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let threads = chunk.len.div_ceil(SUM_CHUNK);
    let (n32, po, per, t32) = (chunk.len as u32, ws.partial.ptr(), SUM_CHUNK as u32, threads as u32);
    gpu.launch(
        k.sum_partials,
        threads,
        BLOCK,
        0,
        &mut [arg(&chunk.pts), arg(&chunk.idx), arg(&class), arg(&po), arg(&n32), arg(&per), arg(&t32)],
    )?;
    let total = reduce(gpu, k, po, threads, 1, [ptr(&ws.red_a), ptr(&ws.red_b)])?;
    to_jacobian(gpu, k, total, out, 1)?;
    prof.mark(gpu, Phase::Ones)
}
