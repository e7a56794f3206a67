//! Batch-affine bucket levels for G1 (kernels/msm_affine.cuh): per group of windows, each
//! bucket's entries summed pairwise in affine coordinates for a number of levels (each
//! halves the points left), a level's inversions batched, then the XYZZ bucket phase over
//! what is left. Off by default ([`crate::GpuTuning::msm_batch_levels`]): measured slower
//! than the XYZZ phase alone on the H200.

use crate::arena::DeviceBuffer;
use crate::device::{arg, Gpu};
use crate::error::GpuError;
use crate::kernels::CurveKernels;
use crate::tuning::BA_GROUPS;

use super::buckets::{Mults, bucket_phase, BLOCK};
use super::plan::{BaLayout, FQ_BYTES, INV_DIRECT, INV_GROUP};
use super::profile::{Phase, Profile};
use super::workspace::ptr;

/// One batch-affine level as the kernels take it (`ba_level` in kernels/msm_affine.cuh,
/// which asserts the same size).
#[repr(C)]
struct BaLevel {
    bases: u64,
    idx: u64,
    entries: u64,
    in_pts: u64,
    in_keys: u64,
    in_lens: u64,
    in_offs: u64,
    out_pts: u64,
    out_keys: u64,
    out_src: u64,
    out_lens: u64,
    out_offs: u64,
    in_stride: u64,
    out_stride: u64,
    w0: u32,
    half: u32,
}

const _: () = assert!(std::mem::size_of::<BaLevel>() == 120);

/// A chunk's sorted entries, as the scatter left them.
pub(crate) struct BaInput {
    pub(crate) points: u64,
    pub(crate) idx: u64,
    pub(crate) entries: u64,
    pub(crate) keys: u64,
    /// The scatter's cursors: the end of each bucket.
    pub(crate) cursor: u64,
    /// The chunk's length: each window's region of entries and keys.
    pub(crate) len: usize,
    pub(crate) c: u32,
    pub(crate) windows: usize,
}

/// The bucket phase with batch-affine levels first: per group of windows, `ba.levels`
/// pairwise affine levels (output slots per thread: `group`, 8 to 64), then the XYZZ bucket
/// phase over what is left.
pub(crate) fn batch_affine(
    gpu: &Gpu,
    k: &CurveKernels,
    ba: &BaLayout,
    bufs: &[Option<DeviceBuffer>],
    input: BaInput,
    buckets: u64,
    carries: [(u64, u64); 2],
    group: usize,
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let b = |i: usize| ptr(&bufs[i]);
    let (out_pts, out_keys) = ([b(0), b(1)], [b(2), b(3)]);
    let (prefix, totals, scratch) = (b(4), b(5), b(6));
    let (lens, offs, src) = ([b(7), b(8)], [b(9), b(10)], b(11));
    let kn = &gpu.kernels;
    let (half, words, len) = (ba.half, ba.half + 1, input.len);
    let group = group.clamp(BA_GROUPS.0, BA_GROUPS.1);
    let (half32, c, grp) = (half as u32, input.c, group as u32);
    // The kernels index a group's slots in 31 bits (the plan keeps chunks below 2^30).
    let slots = ba.g * len.max(ba.stride(1));
    assert!(slots < 1 << 31, "batch-affine group of {slots} slots");
    for w0 in (0..input.windows).step_by(ba.g) {
        gpu.check_cancel()?;
        let gg = ba.g.min(input.windows - w0);
        let cnt = (gg * words) as u32;
        let cursor = input.cursor + (w0 * words * 4) as u64;
        gpu.launch(
            kn.ba_lens0,
            cnt as usize,
            BLOCK,
            0,
            &mut [arg(&cursor), arg(&lens[0]), arg(&offs[0]), arg(&cnt), arg(&half32)],
        )?;
        let (mut in_pts, mut in_keys, mut in_stride) = (0u64, input.keys + (w0 * len * 4) as u64, len);
        let mut cur = 0;
        for lv in 0..ba.levels {
            let (li, lo, o) = (cur, 1 - cur, (lv % 2) as usize);
            gpu.launch(
                kn.ba_halve,
                cnt as usize,
                BLOCK,
                0,
                &mut [arg(&lens[li]), arg(&lens[lo]), arg(&offs[lo]), arg(&cnt)],
            )?;
            gpu.launch(kn.msm_bucket_offsets, gg * 1024, 1024, 1024 * 4, &mut [arg(&offs[lo]), arg(&c)])?;
            let out_stride = ba.stride(lv + 1);
            let out_total = gg * out_stride;
            gpu.memset_bytes(out_keys[o], out_total * 4, 0xff)?;
            gpu.memset_bytes(src, out_total * 4, 0xff)?;
            let first = lv == 0;
            let level = BaLevel {
                bases: if first { input.points } else { 0 },
                idx: if first { input.idx } else { 0 },
                entries: if first { input.entries + (w0 * len * 4) as u64 } else { 0 },
                in_pts,
                in_keys,
                in_lens: lens[li],
                in_offs: offs[li],
                out_pts: out_pts[o],
                out_keys: out_keys[o],
                out_src: src,
                out_lens: lens[lo],
                out_offs: offs[lo],
                in_stride: in_stride as u64,
                out_stride: out_stride as u64,
                w0: w0 as u32,
                half: half32,
            };
            let in_total = (gg * in_stride) as u64;
            gpu.launch(kn.ba_keys, gg * in_stride, BLOCK, 0, &mut [arg(&level), arg(&in_total)])?;
            prof.mark(gpu, Phase::BaSetup)?;
            let threads = out_total.div_ceil(group);
            let ot = out_total as u64;
            // ba_prefix and ba_apply take the same arguments.
            let pass = |kernel| {
                gpu.launch(kernel, threads, BLOCK, 0, &mut [arg(&level), arg(&ot), arg(&grp), arg(&prefix), arg(&totals)])
            };
            pass(kn.ba_prefix)?;
            prof.mark(gpu, Phase::BaPrefix)?;
            invert_batch(gpu, totals, threads, scratch)?;
            prof.mark(gpu, Phase::BaInvert)?;
            pass(kn.ba_apply)?;
            prof.mark(gpu, Phase::BaApply)?;
            (in_pts, in_keys, in_stride, cur) = (out_pts[o], out_keys[o], out_stride, lo);
        }
        bucket_phase(gpu, k, [in_pts, 0, 0, in_keys], Mults::NONE, None, gg * in_stride, buckets, carries, prof)?;
    }
    Ok(())
}

/// `count` field elements at `vals` replaced by their inverses (none may be 0): group
/// products and prefixes per INV_GROUP values, the products inverted the same way until at
/// most INV_DIRECT are left (those by Fermat, one per thread), then the inverses propagated
/// back. `scratch` holds `inv_scratch_bytes(count)`.
fn invert_batch(gpu: &Gpu, vals: u64, count: usize, scratch: u64) -> Result<(), GpuError> {
    let kn = &gpu.kernels;
    let c64 = count as u64;
    if count <= INV_DIRECT {
        return gpu.launch(kn.fq_invert_each, count, BLOCK, 0, &mut [arg(&vals), arg(&c64)]);
    }
    let t = count.div_ceil(INV_GROUP);
    let (prefix, totals) = (scratch, scratch + (count * FQ_BYTES) as u64);
    let grp = INV_GROUP as u32;
    gpu.launch(
        kn.fq_group_prefix,
        t,
        BLOCK,
        0,
        &mut [arg(&vals), arg(&c64), arg(&grp), arg(&prefix), arg(&totals)],
    )?;
    invert_batch(gpu, totals, t, totals + (t * FQ_BYTES) as u64)?;
    gpu.launch(
        kn.fq_group_backprop,
        t,
        BLOCK,
        0,
        &mut [arg(&vals), arg(&c64), arg(&grp), arg(&prefix), arg(&totals)],
    )
}
