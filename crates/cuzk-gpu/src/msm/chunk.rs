//! The kernels of one MSM chunk (kernels/msm.cuh), queued on the compute stream: the
//! windows (digits classified and scattered into buckets, the bucket phase, each window
//! reduced to one sum) and the sum of the points whose scalar is one (or, in a batch sum,
//! of every point). Results land in Jacobian form in the chunk's readback source.

use crate::device::{arg, Gpu};
use crate::error::GpuError;
use crate::kernels::CurveKernels;

use super::batch_affine::{batch_affine, BaInput};
use super::buckets::{bucket_phase, Derived, BLOCK};
use super::curve::Curve;
use super::plan::{reduce_steps, segments, MsmPlan, SUM_CHUNK};
use super::profile::{Phase, Profile};
use super::workspace::{ptr, Workspace};

/// A chunk's points on the device: the base array (resident, or the chunk's streamed
/// points), the index array into it (0: none) and the chunk's length.
pub(crate) struct ChunkPoints {
    pub(crate) pts: u64,
    pub(crate) idx: u64,
    pub(crate) len: usize,
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

/// The window sums of one chunk into `jac` (one Jacobian point per window): the scalars at
/// `scalars` out of Montgomery form and into signed digits, counted and scattered into
/// their buckets' slots, the bucket phase (batch-affine levels first when the plan has
/// them, `ba_group` slots per thread), each window's buckets reduced to one sum.
pub(crate) fn window_sums<C: Curve>(
    gpu: &Gpu,
    k: &CurveKernels,
    ws: &Workspace,
    p: &MsmPlan,
    chunk: &ChunkPoints,
    scalars: u64,
    jac: u64,
    ba_group: usize,
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let (c, len) = (p.c, chunk.len);
    let windows = 256u32.div_ceil(c);
    let half = 1usize << (c - 1);
    let (n32, pcls, pk) = (len as u32, ptr(&ws.class), ptr(&ws.cursor));
    gpu.memset(ws.cursor.as_ref().unwrap(), 0)?;
    gpu.launch(
        gpu.kernels.msm_classify,
        len,
        BLOCK,
        0,
        &mut [arg(&scalars), arg(&pcls), arg(&pk), arg(&n32), arg(&c), arg(&windows)],
    )?;
    let scan_threads = 1024u32;
    gpu.launch(
        gpu.kernels.msm_bucket_offsets,
        windows as usize * scan_threads as usize,
        scan_threads,
        scan_threads * 4,
        &mut [arg(&pk), arg(&c)],
    )?;
    prof.mark(gpu, Phase::Classify)?;
    let slots = windows as usize * len;
    let (pe, pkeys) = (ptr(&ws.entries), ptr(&ws.keys));
    if let Some(keys) = ws.keys.as_ref() {
        gpu.memset_bytes(keys.ptr(), slots * 4, 0xff)?;
    }
    gpu.launch(
        gpu.kernels.msm_scatter,
        len,
        BLOCK,
        0,
        &mut [arg(&scalars), arg(&pcls), arg(&pk), arg(&pe), arg(&pkeys), arg(&n32), arg(&c), arg(&windows)],
    )?;
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
        let derived = p.derived_keys.then_some(Derived { ends: pk, region: len, half: half as u32 });
        bucket_phase(gpu, k, [chunk.pts, chunk.idx, pe, pkeys], derived, slots, pb, carries, prof)?;
    }
    let segs = segments(half);
    let (pg, segs32) = (ptr(&ws.segs), segs as u32);
    gpu.launch(
        k.window_segments,
        windows as usize * segs,
        BLOCK,
        0,
        &mut [arg(&pb), arg(&pg), arg(&c), arg(&windows), arg(&segs32)],
    )?;
    let red = [ptr(&ws.red_a), ptr(&ws.red_b)];
    let sums = reduce(gpu, k, pg, windows as usize * segs, windows as usize, red)?;
    to_jacobian(gpu, k, sums, jac, windows as usize)?;
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
