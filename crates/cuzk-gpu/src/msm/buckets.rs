//! The XYZZ bucket phase (kernels/msm.cuh): key-sorted entries added into their buckets by
//! fixed runs, the carries between runs folded in level by level, so a bucket that holds
//! every point is as fast as any other.

use crate::device::{arg, Gpu};
use crate::error::GpuError;
use crate::kernels::CurveKernels;

use super::plan::RUN_CHUNK;
use super::profile::{Phase, Profile};

/// Threads per block of the MSM kernels.
pub(crate) const BLOCK: u32 = 128;

/// Where the bucket phase finds keys it was not given (a null key array): the scatter's
/// cursors, now the buckets' ends, windows of `region` slots and `half` buckets.
pub(crate) struct Derived {
    pub(crate) ends: u64,
    pub(crate) region: usize,
    pub(crate) half: u32,
}

/// Where entries' multiples lie (kernels/msm.cuh's entry_points): copies 1 .. of the bases,
/// `stride` points apart, from `ptr` (0: none); the multiple's number from bit `shift` of an
/// entry (31: none).
#[derive(Clone, Copy)]
pub(crate) struct Mults {
    pub(crate) ptr: u64,
    pub(crate) stride: usize,
    pub(crate) shift: u32,
}

impl Mults {
    pub(crate) const NONE: Mults = Mults { ptr: 0, stride: 0, shift: 31 };
}

/// The XYZZ bucket phase over `len` key-sorted slots. `src` is (points, index array,
/// entries, keys): entry i names its point (a null entry array: slot i's own point), or a
/// multiple of it in `mults`; with a
/// null key array, `derived` says where the keys come from. Level 1
/// writes each bucket once and leaves carries; later levels fold the carries into the
/// buckets until one chunk is left, ping-ponging between the two carry buffers.
pub(crate) fn bucket_phase(
    gpu: &Gpu,
    k: &CurveKernels,
    src: [u64; 4],
    mults: Mults,
    derived: Option<Derived>,
    len: usize,
    buckets: u64,
    carries: [(u64, u64); 2],
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let [pts, pidx, pe, pkeys] = src;
    let d = derived.unwrap_or(Derived { ends: 0, region: 0, half: 0 });
    assert!(pkeys != 0 || d.ends != 0, "the bucket phase needs keys or the cursors to derive them");
    let (ends, region, dhalf) = (d.ends, d.region as u64, d.half);
    let cap = RUN_CHUNK as u32;
    let mut chunks = len.div_ceil(RUN_CHUNK);
    let (len64, pv, pck) = (len as u64, carries[0].0, carries[0].1);
    let (mp, mstride, mshift) = (mults.ptr, mults.stride as u64, mults.shift);
    gpu.launch(
        k.bucket_runs_affine,
        chunks,
        BLOCK,
        0,
        &mut [
            arg(&pts),
            arg(&pidx),
            arg(&mp),
            arg(&mstride),
            arg(&mshift),
            arg(&pe),
            arg(&pkeys),
            arg(&len64),
            arg(&cap),
            arg(&buckets),
            arg(&pv),
            arg(&pck),
            arg(&ends),
            arg(&region),
            arg(&dhalf),
        ],
    )?;
    prof.mark(gpu, Phase::BucketRuns)?;
    let mut level = 0;
    while chunks > 1 {
        let level_len = chunks;
        chunks = level_len.div_ceil(RUN_CHUNK);
        let (src, dst) = (carries[level % 2], carries[(level + 1) % 2]);
        let len64 = level_len as u64;
        gpu.launch(
            k.bucket_runs_xyzz,
            chunks,
            BLOCK,
            0,
            &mut [
                arg(&src.0),
                arg(&src.1),
                arg(&len64),
                arg(&cap),
                arg(&buckets),
                arg(&dst.0),
                arg(&dst.1),
            ],
        )?;
        level += 1;
    }
    prof.mark(gpu, Phase::Carries)
}
