//! Host side of the MSM and batch sum over G1 and G2 (kernels/msm.cuh).
//!
//! A call is planned before anything is allocated ([`plan`]): the bases are either resident
//! in device memory (uploaded once, kept across calls in the arena, see `resident.rs`) or
//! streamed per chunk from pageable memory through the pinned staging buffers; the scalars
//! (and indices) are cut into chunks whose whole workspace fits what the arena can give,
//! at most 2^22 points each so that the upload of chunk k+1 (copy stream) runs while chunk k
//! is computed (compute stream). Each chunk's window sums come back through one of two
//! pinned readback buffers (double-buffered: chunk k is read back while chunk k+1 computes)
//! and the host adds them up and combines the windows. A call that cannot fit even its
//! smallest chunk is refused with `OverBudget` before any allocation; none meets a CUDA
//! out-of-memory error.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_groth16::Selection;
use group::Group;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::arena::{reserved_size, DeviceBuffer};
use crate::device::{arg, Event, Gpu, OpTimings, SyncOnDrop};
use crate::error::GpuError;
use crate::kernels::{CurveKernels, Kernels};
use crate::resident::{ResidentKey, MIN_RESIDENT_POINTS};

const BLOCK: u32 = 128;
const FR_BYTES: usize = 32;

/// One group's sizes and kernels.
pub(crate) trait Curve {
    type Affine: Copy + Send + Sync;
    type Proj: Group + Copy + Send + Sync;
    const AFFINE_BYTES: usize;
    const XYZZ_BYTES: usize;
    const JAC_BYTES: usize;
    const GROUP: u8;
    fn kernels(k: &Kernels) -> CurveKernels;
}

pub(crate) struct G1;
pub(crate) struct G2;

impl Curve for G1 {
    type Affine = G1Affine;
    type Proj = G1Projective;
    const AFFINE_BYTES: usize = 96;
    const XYZZ_BYTES: usize = 192;
    const JAC_BYTES: usize = 144;
    const GROUP: u8 = 1;
    fn kernels(k: &Kernels) -> CurveKernels {
        k.g1()
    }
}

impl Curve for G2 {
    type Affine = G2Affine;
    type Proj = G2Projective;
    const AFFINE_BYTES: usize = 192;
    const XYZZ_BYTES: usize = 384;
    const JAC_BYTES: usize = 288;
    const GROUP: u8 = 2;
    fn kernels(k: &Kernels) -> CurveKernels {
        k.g2()
    }
}

// Blstrs types are used on the device as they are (blst_p1/p2 and their affine forms).
const _: () = assert!(std::mem::size_of::<G1Affine>() == G1::AFFINE_BYTES);
const _: () = assert!(std::mem::size_of::<G1Projective>() == G1::JAC_BYTES);
const _: () = assert!(std::mem::size_of::<G2Affine>() == G2::AFFINE_BYTES);
const _: () = assert!(std::mem::size_of::<G2Projective>() == G2::JAC_BYTES);

/// Window width c for chunks of m points: log2(m) - 4, at most 16 bits (2^15 buckets per
/// window). Measured on the H200 (bench/NOTES.md, 2026-12-03): in one pass over 2^26 and
/// 2^27 points no width from 17 to 22 bits beat 16, though 22 needs a quarter fewer
/// additions.
fn window_bits(m: usize) -> u32 {
    let log = usize::BITS - m.max(1).leading_zeros() - 1;
    log.saturating_sub(4).clamp(4, 16)
}

/// The widest window a caller may force (bucket keys and counts stay
/// within 32 bits: windows x 2^(c-1) < 2^32).
pub(crate) const MAX_WINDOW: u32 = 22;

/// Per-thread segments of buckets in the window reduction: 1024 per window, or more for
/// windows wider than 16 bits (at most 32 buckets per thread then).
fn segments(half: usize) -> usize {
    half.min((half / 32).max(1024))
}

/// Sorted bucket entries each thread of the bucket phase adds.
const RUN_CHUNK: usize = 32;
/// Points the scalar-one sum gives each thread.
const SUM_CHUNK: usize = 32;
/// Partial sums each thread of the tree reduction adds.
const REDUCE_CHUNK: usize = 16;
/// The smallest chunk a plan may take before it refuses the call.
pub(crate) const MIN_CHUNK: usize = 1 << 12;

/// Batch-affine levels of the bucket phase (kernels/msm_affine.cuh): in G1 calls that upload
/// nothing per chunk (the H MSM: scalars on the device, bases resident) of at least
/// 2^BATCH_MIN_LOG points, each bucket's entries can first be summed pairwise in affine
/// coordinates, the inversions of a level batched, for a number of levels (each halves the
/// points left) before the XYZZ bucket phase adds what is left. Off by default: on the H200
/// (bench/NOTES.md, 2026-12-04) the H MSM of a 32 GiB partition took 1181 ms of kernels
/// without levels against 1255, 1263 and 1305 ms with 1, 3 and 6, the levels' two passes
/// over randomly gathered points costing more than the products they save.
/// `CUZK_MSM_BATCH_LEVELS` (0 to 12, read at every call) sets it for measurements.
const BATCH_LEVELS: u32 = 0;
/// Output slots each thread of a batch-affine level takes (its denominators share one
/// running product).
const BA_GROUP: usize = 16;
/// The fewest slots per thread `CUZK_MSM_BA_GROUP` may set (the group products' buffer is
/// sized for it).
const BA_MIN_GROUP: usize = 8;
/// Group products each thread of the batch inversion multiplies per step.
const INV_GROUP: usize = 32;
/// At most this many values are inverted one by one (Fermat) at the end of a batch inversion.
const INV_DIRECT: usize = 1 << 15;
const FQ_BYTES: usize = 48;

/// Chunks below 2^BATCH_MIN_LOG points keep the XYZZ bucket phase alone: a level has a
/// latency of its own (the Fermat inversions at its end, about half a millisecond, per group
/// of windows), which a 2^22 call's additions do not repay. `CUZK_MSM_BATCH_MIN_LOG`
/// overrides it (the GPU tests set 0 to take the levels at every size).
const BATCH_MIN_LOG: u32 = 24;

/// Bucket keys derived from the scatter's cursors (msm.cuh `derived_keys`) instead of stored
/// beside the entries: half the scatter's scattered 4-byte stores, and no key array (4 bytes
/// per point and window: 8 GiB at 2^27 points and 16 windows). The default since its H200
/// measurement (bench/NOTES.md, 2026-12-04, fourth session): the 32 GiB proof's H MSM's
/// scatter took 98 ms instead of 236, its kernels 1051 ms instead of 1181, the bucket runs
/// unchanged. `CUZK_MSM_DERIVED_KEYS` (0 or 1, read at every call) and the backend's
/// `set_msm_derived_keys` set it. Never with batch-affine levels: their first level reads the
/// stored keys.
const DERIVED_KEYS: bool = true;

/// Chunks of at least 2^WIDE_MIN_LOG points (in a proof, only the H MSM's) take
/// `CUZK_MSM_WIDE_WINDOW` bits when it is set (at most [`MAX_WINDOW`]), instead of
/// [`window_bits`]'s 16: a measurement switch for the width of the H MSM alone, which the
/// backend's `set_msm_window` (every call) cannot give.
const WIDE_MIN_LOG: u32 = 26;

/// The environment's switches of a plan, read once per call.
struct PlanSwitches {
    /// The batch-affine rule's (min_log, levels), for [`levels_for`].
    min_log: u32,
    levels: u32,
    derived_keys: bool,
    /// The window of chunks of 2^WIDE_MIN_LOG points or more.
    wide_window: Option<u32>,
    /// `CUZK_MSM_MAX_CHUNK_LOG` and `CUZK_MSM_UPLOAD_CHUNK_LOG` (10 to 30), for [`max_chunk`].
    max_chunk_log: Option<u32>,
    upload_chunk_log: Option<u32>,
}

/// The window of a chunk of m points: `forced` when given, else `wide` for chunks of
/// 2^WIDE_MIN_LOG points or more when given, else [`window_bits`].
fn window_for(m: usize, forced: Option<u32>, wide: Option<u32>) -> u32 {
    match (forced, wide) {
        (Some(c), _) => c.clamp(4, MAX_WINDOW),
        (None, Some(c)) if m >= 1 << WIDE_MIN_LOG => c.clamp(4, MAX_WINDOW),
        _ => window_bits(m),
    }
}

fn plan_switches() -> PlanSwitches {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<u32>().ok());
    PlanSwitches {
        min_log: var("CUZK_MSM_BATCH_MIN_LOG").unwrap_or(BATCH_MIN_LOG),
        levels: var("CUZK_MSM_BATCH_LEVELS").unwrap_or(BATCH_LEVELS),
        derived_keys: var("CUZK_MSM_DERIVED_KEYS").map_or(DERIVED_KEYS, |v| v != 0),
        wide_window: var("CUZK_MSM_WIDE_WINDOW"),
        max_chunk_log: var("CUZK_MSM_MAX_CHUNK_LOG").map(|l| l.clamp(10, 30)),
        upload_chunk_log: var("CUZK_MSM_UPLOAD_CHUNK_LOG").map(|l| l.clamp(10, 30)),
    }
}

/// The rule: `forced` when given, else `levels` for chunks of at least 2^min_log points;
/// never for chunks of 2^30 or more (the kernels index a group's slots in 31 bits).
fn levels_for(m: usize, forced: Option<u32>, min_log: u32, levels: u32) -> u32 {
    if m >= 1 << 30 {
        return 0;
    }
    match forced {
        Some(l) => l.min(12),
        None if (m as u64) < 1u64 << min_log.min(40) => 0,
        None => levels.min(12),
    }
}

/// Bytes of the scratch a batch inversion of `count` values needs (prefixes and group
/// products of each step).
fn inv_scratch_bytes(count: usize) -> usize {
    if count <= INV_DIRECT {
        return 0;
    }
    let t = count.div_ceil(INV_GROUP);
    (count + t) * FQ_BYTES + inv_scratch_bytes(t)
}

/// The batch-affine buffers of a chunk of m points: windows go through the levels in
/// groups of `g`. Level k's region per window has `stride(k)` slots (level 0: the chunk's
/// entry region).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct BaLayout {
    levels: u32,
    g: usize,
    m: usize,
    half: usize,
}

impl BaLayout {
    fn stride(&self, k: u32) -> usize {
        if k == 0 {
            self.m
        } else {
            (self.m >> k) + 2 * self.half
        }
    }
    /// Output slots of one level at most (level 1's).
    fn out_slots(&self) -> usize {
        self.g * self.stride(1)
    }
    fn totals(&self) -> usize {
        self.out_slots().div_ceil(BA_MIN_GROUP)
    }
    /// Slots left for the XYZZ bucket phase per group.
    fn remainder(&self) -> usize {
        self.g * self.stride(self.levels)
    }
    /// Byte sizes of the buffers: points and keys of the odd and even levels, prefixes,
    /// group products, inversion scratch, lens and offs twice, then the output slots'
    /// sources.
    fn buffers(&self) -> [usize; 12] {
        let (r1, r2) = (self.g * self.stride(1), if self.levels >= 2 { self.g * self.stride(2) } else { 0 });
        let per_window = (self.half + 1) * 4;
        [
            r1 * G1::AFFINE_BYTES,
            r2 * G1::AFFINE_BYTES,
            r1 * 4,
            r2 * 4,
            r1 * FQ_BYTES,
            self.totals() * FQ_BYTES,
            inv_scratch_bytes(self.totals()),
            self.g * per_window,
            self.g * per_window,
            self.g * per_window,
            self.g * per_window,
            r1 * 4,
        ]
    }
    fn bytes(&self) -> usize {
        self.buffers().iter().map(|&b| if b == 0 { 0 } else { reserved_size(b) }).sum()
    }
}

/// The largest chunk (points per pass). A call that uploads per chunk (scalars from the
/// host, streamed bases or an index array) takes at most 2^22 points, so that chunk k + 1
/// goes up while chunk k computes. A call that uploads nothing (scalars on the device,
/// bases resident and not indexed: the H MSM) is one pass when the budget holds it, since
/// there is nothing to overlap. A call that streams its bases over scalars already on the
/// device (the H MSM when the budget does not hold its bases: a 16 GB card) takes 2^24:
/// each chunk pays its own carries and window reduction (178 ms of the 2^27 H MSM's 1234
/// in chunks of 2^22), and its base uploads stay overlapped. Measured on the H200
/// (bench/NOTES.md, 2026-12-04, fourth session, `CUZK_MSM_UPLOAD_CHUNK_LOG=24` in the same
/// run): that call took 1189 ms against 1256 (kernels 1140 against 1234), while the same
/// switch made L/A/B, which upload their scalars, slower (645 against 612 ms), so they keep
/// 2^22. Measurement switches, read once per call (10 to 30): CUZK_MSM_MAX_CHUNK_LOG sets
/// every call's chunk when set (up to what the budget holds); otherwise
/// CUZK_MSM_UPLOAD_CHUNK_LOG sets the chunk of all calls that upload (fewer chunk
/// boundaries against a longer first upload).
fn max_chunk(uploads: bool, streams_over_device_scalars: bool, sw: &PlanSwitches) -> usize {
    match (sw.max_chunk_log, sw.upload_chunk_log) {
        (Some(l), _) => 1 << l,
        (None, Some(l)) if uploads => 1 << l,
        (None, _) if uploads && streams_over_device_scalars => 1 << 24,
        (None, _) if uploads => 1 << 22,
        (None, _) => 1 << 31,
    }
}

/// The steps of a tree reduction of `count` sums in `groups` equal groups: (count, chunk,
/// threads) of each launch.
fn reduce_steps(mut count: usize, groups: usize) -> Vec<(usize, usize, usize)> {
    let mut steps = Vec::new();
    while count > groups {
        let per = count / groups;
        let chunk = REDUCE_CHUNK.min(per);
        debug_assert!(groups == 1 || per.is_multiple_of(chunk));
        let threads = if groups == 1 {
            count.div_ceil(chunk)
        } else {
            groups * (per / chunk)
        };
        steps.push((count, chunk, threads));
        count = threads;
    }
    steps
}

/// Where a call's points come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointSource {
    /// Uploaded per chunk (gathered through the pinned staging buffers).
    Streamed,
    /// The whole base array in device memory; selected points by an index array.
    Resident { indexed: bool },
}

/// Byte sizes of one chunk's device buffers.
#[derive(Clone, Copy, Debug, Default)]
struct Layout {
    points: usize,
    idx: usize,
    scalars: usize,
    class: usize,
    cursor: usize,
    entries: usize,
    /// The scatter's stored bucket keys (0 when they are derived).
    keys: usize,
    carry_a: usize,
    carry_b: usize,
    buckets: usize,
    segs: usize,
    red_a: usize,
    red_b: usize,
    partial: usize,
    jac: usize,
    ba: BaLayout,
}

impl Layout {
    /// For chunks of `m` points, c-bit windows; `sum_only`: a batch sum (no scalars);
    /// `batch`: batch-affine levels before the XYZZ bucket phase (G1 only); `derived`: bucket
    /// keys derived from the cursors, not stored.
    fn new<C: Curve>(m: usize, c: u32, source: PointSource, sum_only: bool, batch: u32, derived: bool) -> Layout {
        let (x, windows) = (C::XYZZ_BYTES, 256usize.div_ceil(c as usize));
        let half = 1usize << (c - 1);
        let mut l = Layout {
            points: if source == PointSource::Streamed {
                m * C::AFFINE_BYTES
            } else {
                0
            },
            idx: if source == (PointSource::Resident { indexed: true }) {
                m * 4
            } else {
                0
            },
            ..Default::default()
        };
        let partials = m.div_ceil(SUM_CHUNK);
        l.partial = partials * x;
        let mut reds = vec![reduce_steps(partials, 1)];
        if sum_only {
            l.jac = C::JAC_BYTES;
        } else {
            let slots = windows * m;
            let mut l1 = slots.div_ceil(RUN_CHUNK);
            if batch > 0 {
                // Windows go through the levels in groups as large as the XYZZ phase's carry
                // buffers would have been (at least one window); the carries then only
                // serve what the levels leave.
                let mut ba = BaLayout { levels: batch, g: 1, m, half };
                ba.g = (l1 * (x + 4) / ba.bytes().max(1)).clamp(1, windows);
                l.ba = ba;
                l1 = ba.remainder().div_ceil(RUN_CHUNK);
            }
            let l2 = l1.div_ceil(RUN_CHUNK);
            let segs = segments(half);
            l.scalars = m * FR_BYTES;
            l.class = m;
            l.cursor = windows * (half + 1) * 4;
            l.entries = slots * 4;
            l.keys = if derived { 0 } else { slots * 4 };
            l.carry_a = l1 * (x + 4);
            l.carry_b = l2 * (x + 4);
            l.buckets = windows * half * x;
            l.segs = windows * segs * x;
            l.jac = (windows + 1) * C::JAC_BYTES;
            reds.push(reduce_steps(windows * segs, windows));
        }
        for r in reds {
            // Outputs alternate between red_a and red_b, the first (largest) in red_a.
            for (i, s) in r.iter().enumerate() {
                let slot = if i % 2 == 0 {
                    &mut l.red_a
                } else {
                    &mut l.red_b
                };
                *slot = (*slot).max(s.2 * x);
            }
        }
        l
    }

    /// As [`Layout::new`], without scalar buffers when the scalars are already on the
    /// device (chunks read them in place).
    fn of_call<C: Curve>(
        m: usize,
        c: u32,
        source: PointSource,
        sum_only: bool,
        device_scalars: bool,
        batch: u32,
        derived: bool,
    ) -> Layout {
        let mut l = Layout::new::<C>(m, c, source, sum_only, batch, derived);
        if device_scalars {
            l.scalars = 0;
        }
        l
    }

    /// What the chunk's workspace takes from the arena: inputs and readback sources twice
    /// (double-buffered), the rest once.
    fn bytes(&self) -> usize {
        let r = |b: usize| if b == 0 { 0 } else { reserved_size(b) };
        2 * (r(self.points) + r(self.idx) + r(self.scalars) + r(self.jac))
            + r(self.class)
            + r(self.cursor)
            + r(self.entries)
            + r(self.keys)
            + r(self.carry_a)
            + r(self.carry_b)
            + r(self.buckets)
            + r(self.segs)
            + r(self.red_a)
            + r(self.red_b)
            + r(self.partial)
            + self.ba.bytes()
            // rounding of the carry buffers (two allocations each)
            + 4 * 256
    }
}

/// What one MSM or sum call will take, decided before it allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    /// Points in the call.
    pub n: usize,
    /// Points per chunk and the number of chunks.
    pub chunk: usize,
    pub chunks: usize,
    /// Window width.
    pub c: u32,
    pub source: PointSource,
    /// Device bytes of the chunk workspace (the resident bases not included).
    pub work_bytes: usize,
    /// Device bytes of the resident base array (0 when streamed).
    pub resident_bytes: usize,
    /// Batch-affine levels of the bucket phase (0: none).
    pub batch_levels: u32,
    /// Bucket keys derived from the scatter's cursors rather than stored.
    pub derived_keys: bool,
}

/// The plan for `n` points out of `bases` base points, with `available` bytes to spend
/// (scalars from the host).
pub(crate) fn plan<C: Curve>(
    n: usize,
    source: PointSource,
    sum_only: bool,
    available: usize,
) -> Result<MsmPlan, usize> {
    plan_with::<C>(n, source, sum_only, false, available, None, None, None)
}

/// As [`plan`]; `device_scalars`: the scalars are already in device memory (no scalar
/// buffers, and with resident unindexed bases nothing to upload, so no chunk limit); the
/// window width forced (4 to [`MAX_WINDOW`] bits) when `window` is given, the batch-affine
/// levels when `batch` is, derived bucket keys when `derived` is.
pub(crate) fn plan_with<C: Curve>(
    n: usize,
    source: PointSource,
    sum_only: bool,
    device_scalars: bool,
    available: usize,
    window: Option<u32>,
    batch: Option<u32>,
    derived: Option<bool>,
) -> Result<MsmPlan, usize> {
    let uploads = !(sum_only || device_scalars) || source != (PointSource::Resident { indexed: false });
    let sw = plan_switches();
    let mut m = n.clamp(1, max_chunk(uploads, device_scalars && source == PointSource::Streamed, &sw));
    loop {
        let c = window_for(m, window, sw.wide_window);
        let levels =
            if C::GROUP == 1 && !sum_only && !uploads { levels_for(m, batch, sw.min_log, sw.levels) } else { 0 };
        let derived_keys = !sum_only && levels == 0 && derived.unwrap_or(sw.derived_keys);
        let bytes = Layout::of_call::<C>(m, c, source, sum_only, device_scalars, levels, derived_keys).bytes();
        if bytes <= available {
            return Ok(MsmPlan {
                n,
                chunk: m,
                chunks: n.div_ceil(m).max(1),
                c,
                source,
                work_bytes: bytes,
                resident_bytes: 0,
                batch_levels: levels,
                derived_keys,
            });
        }
        if m <= MIN_CHUNK {
            return Err(bytes);
        }
        m = m.div_ceil(2);
    }
}

/// Device bytes a resident copy of `len` bases takes.
pub(crate) fn resident_size<C: Curve>(len: usize) -> usize {
    reserved_size(len * C::AFFINE_BYTES)
}

/// The chunk workspace, allocated once per call and reused by every chunk.
struct Workspace {
    points: [Option<DeviceBuffer>; 2],
    idx: [Option<DeviceBuffer>; 2],
    scalars: [Option<DeviceBuffer>; 2],
    jac: [DeviceBuffer; 2],
    class: Option<DeviceBuffer>,
    cursor: Option<DeviceBuffer>,
    entries: Option<DeviceBuffer>,
    keys: Option<DeviceBuffer>,
    carry_a: Option<(DeviceBuffer, DeviceBuffer)>,
    carry_b: Option<(DeviceBuffer, DeviceBuffer)>,
    buckets: Option<DeviceBuffer>,
    segs: Option<DeviceBuffer>,
    red_a: Option<DeviceBuffer>,
    red_b: Option<DeviceBuffer>,
    partial: DeviceBuffer,
    /// The batch-affine buffers, in the order of `BaLayout::buffers`.
    ba: Vec<Option<DeviceBuffer>>,
}

fn alloc_opt(gpu: &Gpu, bytes: usize) -> Result<Option<DeviceBuffer>, GpuError> {
    if bytes == 0 {
        Ok(None)
    } else {
        gpu.alloc(bytes).map(Some)
    }
}

impl Workspace {
    fn new<C: Curve>(gpu: &Gpu, l: &Layout, m: usize) -> Result<Self, GpuError> {
        let two = |b: usize| -> Result<[Option<DeviceBuffer>; 2], GpuError> {
            Ok([alloc_opt(gpu, b)?, alloc_opt(gpu, b)?])
        };
        let carry = |b: usize| -> Result<Option<(DeviceBuffer, DeviceBuffer)>, GpuError> {
            if b == 0 {
                return Ok(None);
            }
            let entries = b / (C::XYZZ_BYTES + 4);
            Ok(Some((
                gpu.alloc(entries * C::XYZZ_BYTES)?,
                gpu.alloc(entries * 4)?,
            )))
        };
        let _ = m;
        Ok(Workspace {
            points: two(l.points)?,
            idx: two(l.idx)?,
            scalars: two(l.scalars)?,
            jac: [gpu.alloc(l.jac)?, gpu.alloc(l.jac)?],
            class: alloc_opt(gpu, l.class)?,
            cursor: alloc_opt(gpu, l.cursor)?,
            entries: alloc_opt(gpu, l.entries)?,
            keys: alloc_opt(gpu, l.keys)?,
            carry_a: carry(l.carry_a)?,
            carry_b: carry(l.carry_b)?,
            buckets: alloc_opt(gpu, l.buckets)?,
            segs: alloc_opt(gpu, l.segs)?,
            red_a: alloc_opt(gpu, l.red_a)?,
            red_b: alloc_opt(gpu, l.red_b)?,
            partial: gpu.alloc(l.partial)?,
            ba: if l.ba.levels > 0 {
                l.ba.buffers().iter().map(|&b| alloc_opt(gpu, b)).collect::<Result<_, _>>()?
            } else {
                Vec::new()
            },
        })
    }
}

fn ptr(b: &Option<DeviceBuffer>) -> u64 {
    b.as_ref().map_or(0, |b| b.ptr())
}

/// Tree reduction of `count` XYZZ points at `src` in `groups` equal groups, ping-ponging
/// between red_a and red_b; the address of the `groups` sums.
fn reduce(
    gpu: &Gpu,
    k: &CurveKernels,
    src: u64,
    count: usize,
    groups: usize,
    red: [u64; 2],
) -> Result<u64, GpuError> {
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

fn to_jacobian(
    gpu: &Gpu,
    k: &CurveKernels,
    src: u64,
    dst: u64,
    count: usize,
) -> Result<(), GpuError> {
    let c32 = count as u32;
    gpu.launch(
        k.xyzz_to_jacobian,
        count,
        BLOCK,
        0,
        &mut [arg(&src), arg(&dst), arg(&c32)],
    )
}

/// Where the bucket phase finds keys it was not given (a null key array): the scatter's
/// cursors, now the buckets' ends, windows of `region` slots and `half` buckets.
struct Derived {
    ends: u64,
    region: usize,
    half: u32,
}

/// The XYZZ bucket phase over `len` key-sorted slots. `src` is (points, index array,
/// entries, keys): entry i names its point (a null entry array: slot i's own point); with a
/// null key array, `derived` says where the keys come from. Level 1
/// writes each bucket once and leaves carries; later levels fold the carries into the
/// buckets until one chunk is left, ping-ponging between the two carry buffers.
fn bucket_phase(
    gpu: &Gpu,
    k: &CurveKernels,
    src: [u64; 4],
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
    gpu.launch(
        k.bucket_runs_affine,
        chunks,
        BLOCK,
        0,
        &mut [
            arg(&pts),
            arg(&pidx),
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
struct BaInput {
    points: u64,
    idx: u64,
    entries: u64,
    keys: u64,
    /// The scatter's cursors: the end of each bucket.
    cursor: u64,
    /// The chunk's length: each window's region of entries and keys.
    len: usize,
    c: u32,
    windows: usize,
}

/// Kernel phases of an MSM call, as `CUZK_MSM_PROFILE` reports them.
#[derive(Clone, Copy)]
enum Phase {
    /// Waits for a chunk's inputs and readback slot.
    Other,
    /// Count memset; scalars out of Montgomery form, classes and bucket counts; the offsets
    /// scan.
    Classify,
    /// Key memset, entries scattered to their buckets' slots, bucket memset.
    Scatter,
    /// The XYZZ bucket phase's first level: sorted entries added into buckets.
    BucketRuns,
    /// The XYZZ bucket phase's later levels: carries folded into buckets.
    Carries,
    /// Window segments, their tree reduction and the conversion to Jacobian.
    Windows,
    /// The scalar-one points' sum.
    Ones,
    /// Batch-affine levels: lens, keys, memsets.
    BaSetup,
    BaPrefix,
    BaInvert,
    BaApply,
}

const PHASE_NAMES: [&str; 11] = [
    "other", "classify", "scatter", "bucket runs", "carries", "windows", "ones", "ba setup", "ba prefix",
    "ba inversion", "ba apply",
];

/// `CUZK_MSM_PROFILE` (a measurement switch, read at every call; it replaces CUZK_MSM_BA_PROFILE): an event on the compute
/// stream after each phase, the milliseconds summed per phase over the call's chunks and
/// printed to stderr when the call ends. Off, it records nothing.
struct Profile {
    marks: Option<Vec<(Phase, Event)>>,
}

impl Profile {
    fn from_env(gpu: &Gpu) -> Result<Self, GpuError> {
        let mut p = Profile { marks: std::env::var_os("CUZK_MSM_PROFILE").map(|_| Vec::new()) };
        p.mark(gpu, Phase::Other)?;
        Ok(p)
    }

    /// The work queued since the previous mark belongs to `phase`.
    fn mark(&mut self, gpu: &Gpu, phase: Phase) -> Result<(), GpuError> {
        if let Some(m) = self.marks.as_mut() {
            let e = Event::new(true)?;
            e.record(gpu.stream())?;
            m.push((phase, e));
        }
        Ok(())
    }

    /// Milliseconds per phase, printed (after the stream is synchronized).
    fn report(&self, what: &str) -> Result<(), GpuError> {
        let Some(m) = self.marks.as_ref() else { return Ok(()) };
        let mut ms = [0f64; PHASE_NAMES.len()];
        for w in m.windows(2) {
            ms[w[1].0 as usize] += w[1].1.since(&w[0].1)?.as_secs_f64() * 1e3;
        }
        let parts: Vec<String> =
            PHASE_NAMES.iter().zip(ms).filter(|(_, v)| *v > 0.0).map(|(name, v)| format!("{name} {v:.1}")).collect();
        eprintln!("msm profile ({what}), ms: {}", parts.join(", "));
        Ok(())
    }
}

/// The bucket phase with batch-affine levels first (G1; kernels/msm_affine.cuh): per group of
/// windows, `levels` pairwise affine levels, then the XYZZ bucket phase over what is left.
fn batch_affine(
    gpu: &Gpu,
    k: &CurveKernels,
    ba: &BaLayout,
    bufs: &[Option<DeviceBuffer>],
    input: BaInput,
    buckets: u64,
    carries: [(u64, u64); 2],
    prof: &mut Profile,
) -> Result<(), GpuError> {
    let b = |i: usize| ptr(&bufs[i]);
    let (out_pts, out_keys) = ([b(0), b(1)], [b(2), b(3)]);
    let (prefix, totals, scratch) = (b(4), b(5), b(6));
    let (lens, offs, src) = ([b(7), b(8)], [b(9), b(10)], b(11));
    let kn = &gpu.kernels;
    let (half, words, len) = (ba.half, ba.half + 1, input.len);
    let group = std::env::var("CUZK_MSM_BA_GROUP").ok().and_then(|v| v.parse::<usize>().ok()).map_or(BA_GROUP, |g| g.clamp(BA_MIN_GROUP, 64));
    let (half32, c, grp) = (half as u32, input.c, group as u32);
    // The kernels index a group's slots in 31 bits (levels_for keeps chunks below 2^30).
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
        bucket_phase(gpu, k, [in_pts, 0, 0, in_keys], None, gg * in_stride, buckets, carries, prof)?;
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
    sum_only: bool,
) -> Result<(PointSource, Option<Arc<DeviceBuffer>>), GpuError> {
    let indexed = matches!(selection, Selection::Indices(_));
    let resident = PointSource::Resident { indexed };
    if bases.len() < MIN_RESIDENT_POINTS || !gpu.residency_enabled() {
        return Ok((PointSource::Streamed, None));
    }
    let key = ResidentKey::of(bases, C::GROUP);
    if let Some(buf) = gpu.resident.lock().unwrap().get(&key) {
        return Ok((resident, Some(buf)));
    }
    // Admit when the selection is not tiny, the cache stays within half the budget and the
    // call still has room for a full chunk.
    let size = resident_size::<C>(bases.len());
    let budget = gpu.counters().budget;
    let cached = gpu.resident.lock().unwrap().bytes();
    let chunk = n.clamp(1, max_chunk(true, false, &plan_switches()));
    let full_chunk = Layout::new::<C>(
        chunk,
        window_bits(chunk),
        resident,
        sum_only,
        0,
        false,
    )
    .bytes();
    if n.saturating_mul(8) < bases.len()
        || cached + size > budget / 2
        || size + full_chunk > gpu.available()
    {
        return Ok((PointSource::Streamed, None));
    }
    let buf = gpu.alloc(bases.len() * C::AFFINE_BYTES)?;
    gpu.upload_with(
        buf.ptr(),
        bases.len(),
        None,
        |start, out: &mut [C::Affine]| out.copy_from_slice(&bases[start..start + out.len()]),
    )?;
    let buf = Arc::new(buf);
    gpu.resident.lock().unwrap().insert(key, buf.clone());
    Ok((resident, Some(buf)))
}

/// The scalars of one call.
#[derive(Clone, Copy)]
pub(crate) enum Scalars<'a> {
    /// A batch sum: each selected base once.
    None,
    Host(&'a [Scalar]),
    /// Already in device memory (h from the H step), one per selected base: chunks read
    /// them in place and nothing is uploaded.
    Device(&'a DeviceBuffer),
}

/// sum_i scalars[i] * bases[sel_i] (or, with `Scalars::None`, the sum of the selected
/// bases), equal to the CPU backend's result. Arguments are checked by the caller.
pub(crate) fn msm<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    selection: Selection<'_>,
    scalars: Scalars<'_>,
) -> Result<C::Proj, GpuError> {
    let n = selection.len(bases.len());
    if n == 0 {
        return Ok(C::Proj::identity());
    }
    let t_enter = Instant::now();
    let _region = gpu.enter()?;
    let t0 = Instant::now();
    let sum_only = matches!(scalars, Scalars::None);
    if let Scalars::Device(d) = scalars {
        assert!(d.len_bytes() >= n * FR_BYTES, "device scalars shorter than the selection");
    }
    let (source, resident) = choose_source::<C>(gpu, bases, selection, n, sum_only)?;
    let device_scalars = matches!(scalars, Scalars::Device(_));
    let p = plan_with::<C>(n, source, sum_only, device_scalars, gpu.available(), gpu.msm_window(), gpu.msm_batch_levels(), gpu.msm_derived_keys())
        .map_err(|need| {
            let c = gpu.counters();
            GpuError::OverBudget {
                device: gpu.info().ordinal,
                requested: need,
                in_use: c.in_use,
                budget: c.budget,
            }
        })?;
    let k = C::kernels(&gpu.kernels);
    let (m, c) = (p.chunk, p.c);
    let windows = 256u32.div_ceil(c);
    let half = 1usize << (c - 1);
    let l = Layout::of_call::<C>(m, c, source, sum_only, device_scalars, p.batch_levels, p.derived_keys);
    gpu.set_last_batch_levels(p.batch_levels);
    gpu.set_last_derived_keys(p.derived_keys);
    let ta = Instant::now();
    let ws = Workspace::new::<C>(gpu, &l, m)?;
    let alloc = ta.elapsed();
    let mut upload_time = Duration::ZERO;

    // Inputs of chunk j into slot j % 2, on the copy stream after the compute stream has
    // finished reading that slot (chunk j - 2).
    let in_free = [Event::new(false)?, Event::new(false)?];
    let upload_chunk = |j: usize| -> Result<(), GpuError> {
        let (s, lo) = (j % 2, j * m);
        let len = m.min(n - lo);
        let after = (j >= 2).then_some(&in_free[s]);
        if let Scalars::Host(sc) = scalars {
            let d = ws.scalars[s].as_ref().unwrap();
            gpu.upload_with(d.ptr(), len, after, |start, out: &mut [Scalar]| {
                out.copy_from_slice(&sc[lo + start..lo + start + out.len()])
            })?;
        }
        match (source, selection) {
            (PointSource::Streamed, Selection::All) => {
                gpu.upload_with(ptr(&ws.points[s]), len, after, |start, out| {
                    out.copy_from_slice(&bases[lo + start..lo + start + out.len()])
                })?
            }
            (PointSource::Streamed, Selection::Indices(idx)) => {
                gpu.upload_with(ptr(&ws.points[s]), len, after, |start, out| {
                    for (o, &i) in out.iter_mut().zip(&idx[lo + start..]) {
                        *o = bases[i as usize];
                    }
                })?
            }
            (PointSource::Resident { .. }, Selection::Indices(idx)) => {
                gpu.upload_with(ptr(&ws.idx[s]), len, after, |start, out: &mut [u32]| {
                    out.copy_from_slice(&idx[lo + start..lo + start + out.len()])
                })?
            }
            (PointSource::Resident { .. }, Selection::All) => {}
        }
        Ok(())
    };

    let readback_bytes = l.jac;
    let mut readback = [
        gpu.pinned().alloc(readback_bytes)?,
        gpu.pinned().alloc(readback_bytes)?,
    ];
    let read_done = [Event::new(false)?, Event::new(false)?];
    // On every exit (an error or a cancel mid-way included), queued copies and kernels are
    // finished before the readback buffers and the workspace go back.
    let _drain = SyncOnDrop(gpu);
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    let results = if sum_only { 1 } else { windows as usize + 1 };
    let mut window_acc = vec![C::Proj::identity(); windows as usize];
    let mut ones_acc = C::Proj::identity();
    let mut consume = |slot: usize, buf: &crate::pinned::PinnedBuffer| {
        let r = buf.as_slice::<C::Proj>(results);
        let _ = slot;
        if sum_only {
            ones_acc += r[0];
        } else {
            for (a, w) in window_acc.iter_mut().zip(&r[..windows as usize]) {
                *a += w;
            }
            ones_acc += r[windows as usize];
        }
    };

    let t = Instant::now();
    upload_chunk(0)?;
    upload_time += t.elapsed();
    kstart.record(gpu.stream())?;
    let mut prof = Profile::from_env(gpu)?;
    let red = [ptr(&ws.red_a), ptr(&ws.red_b)];
    for j in 0..p.chunks {
        gpu.check_cancel()?;
        let (s, lo) = (j % 2, j * m);
        let len = m.min(n - lo);
        let n32 = len as u32;
        let (pts, pidx) = match (source, &resident) {
            (PointSource::Resident { indexed: false }, Some(r)) => {
                (r.ptr() + (lo * C::AFFINE_BYTES) as u64, 0u64)
            }
            (PointSource::Resident { indexed: true }, Some(r)) => (r.ptr(), ptr(&ws.idx[s])),
            _ => (ptr(&ws.points[s]), 0u64),
        };
        let jac = ws.jac[s].ptr();
        if j >= 2 {
            // The readback of chunk j - 2 from this jac slot is done (consumed below).
            read_done[s].wait_in(gpu.stream())?;
        }
        prof.mark(gpu, Phase::Other)?;
        let pcls = ptr(&ws.class);
        if !sum_only {
            let ps = match scalars {
                Scalars::Device(d) => d.ptr() + (lo * FR_BYTES) as u64,
                _ => ptr(&ws.scalars[s]),
            };
            let pk = ptr(&ws.cursor);
            gpu.memset(ws.cursor.as_ref().unwrap(), 0)?;
            gpu.launch(
                gpu.kernels.msm_classify,
                len,
                BLOCK,
                0,
                &mut [
                    arg(&ps),
                    arg(&pcls),
                    arg(&pk),
                    arg(&n32),
                    arg(&c),
                    arg(&windows),
                ],
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
                &mut [
                    arg(&ps),
                    arg(&pcls),
                    arg(&pk),
                    arg(&pe),
                    arg(&pkeys),
                    arg(&n32),
                    arg(&c),
                    arg(&windows),
                ],
            )?;
            let pb = ptr(&ws.buckets);
            gpu.memset(ws.buckets.as_ref().unwrap(), 0)?; // all infinity (ZZ = 0)
            prof.mark(gpu, Phase::Scatter)?;
            let (ca, cb) = (ws.carry_a.as_ref().unwrap(), ws.carry_b.as_ref().unwrap());
            let carries = [(ca.0.ptr(), ca.1.ptr()), (cb.0.ptr(), cb.1.ptr())];
            if l.ba.levels > 0 {
                let input = BaInput { points: pts, idx: pidx, entries: pe, keys: pkeys, cursor: pk, len, c, windows: windows as usize };
                batch_affine(gpu, &k, &l.ba, &ws.ba, input, pb, carries, &mut prof)?;
            } else {
                let derived = p.derived_keys.then_some(Derived { ends: pk, region: len, half: half as u32 });
                bucket_phase(gpu, &k, [pts, pidx, pe, pkeys], derived, slots, pb, carries, &mut prof)?;
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
            let sums = reduce(gpu, &k, pg, windows as usize * segs, windows as usize, red)?;
            to_jacobian(gpu, &k, sums, jac, windows as usize)?;
            prof.mark(gpu, Phase::Windows)?;
        }
        // The scalar-one points (or, for a sum, all of them).
        let threads = len.div_ceil(SUM_CHUNK);
        let (po, chunk, t32) = (ws.partial.ptr(), SUM_CHUNK as u32, threads as u32);
        let cls = if sum_only { 0u64 } else { pcls };
        gpu.launch(
            k.sum_partials,
            threads,
            BLOCK,
            0,
            &mut [
                arg(&pts),
                arg(&pidx),
                arg(&cls),
                arg(&po),
                arg(&n32),
                arg(&chunk),
                arg(&t32),
            ],
        )?;
        let total = reduce(gpu, &k, po, threads, 1, red)?;
        let ones_at = if sum_only { 0 } else { windows as usize };
        to_jacobian(gpu, &k, total, jac + (ones_at * C::JAC_BYTES) as u64, 1)?;
        prof.mark(gpu, Phase::Ones)?;
        in_free[s].record(gpu.stream())?;

        // Next chunk's inputs while this one computes.
        if j + 1 < p.chunks {
            let t = Instant::now();
            upload_chunk(j + 1)?;
            upload_time += t.elapsed();
        }
        // This chunk's results back on the copy stream (after the upload just queued).
        let ready = Event::new(false)?;
        ready.record(gpu.stream())?;
        ready.wait_in(gpu.copy_stream())?;
        {
            let out = readback[s].as_mut_slice::<u8>(results * C::JAC_BYTES);
            // SAFETY: pinned destination, read only after read_done[s] completes.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(out, jac, gpu.copy_stream().cu_stream())
            }
            .map_err(crate::error::driver("cuMemcpyDtoHAsync"))?;
        }
        read_done[s].record(gpu.copy_stream())?;
        // The previous chunk's results, double-buffered.
        if j >= 1 {
            let ps = (j - 1) % 2;
            read_done[ps].sync()?;
            consume(ps, &readback[ps]);
        }
    }
    kend.record(gpu.stream())?;
    let last = (p.chunks - 1) % 2;
    read_done[last].sync()?;
    consume(last, &readback[last]);
    gpu.sync()?;
    let kernels = kend.since(&kstart)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    prof.report(&format!(
        "G{}, {n} points, c = {c}, {windows} windows, {} chunk(s) of {m}, {} batch-affine levels, kernels {:.1} ms; \
         host: wall {:.1} ms = device lock {:.1} + source and plan {:.1} + workspace alloc {:.1} + the rest, \
         of which staging uploads {:.1}",
        C::GROUP,
        p.chunks,
        p.batch_levels,
        ms(kernels),
        ms(t_enter.elapsed()),
        ms(t0 - t_enter),
        ms(ta - t0),
        ms(alloc),
        ms(upload_time)
    ))?;
    drop(readback);
    drop(ws);

    // Horner over windows, top first: acc = acc * 2^c + W_w.
    let mut acc = C::Proj::identity();
    for w in window_acc.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += w;
    }
    gpu.set_timings(OpTimings {
        upload: upload_time,
        compute: t0.elapsed().saturating_sub(upload_time),
        download: Duration::ZERO,
        kernels,
        alloc,
        ..Default::default()
    });
    Ok(acc + ones_acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows cover 256 bits (room for the last signed digit's carry) and the segment
    /// count divides the bucket count, as the kernels assume.
    #[test]
    fn window_shapes() {
        for log in 0..=30 {
            let c = window_bits(1 << log);
            assert!((4..=16).contains(&c));
            for forced in 4..=MAX_WINDOW {
                assert!(256u32.div_ceil(forced) * forced >= 256);
                let half = 1usize << (forced - 1);
                assert_eq!(half % segments(half), 0);
                assert!(segments(half).is_power_of_two());
            }
            assert!(256u32.div_ceil(c) * c >= 256);
            let half = 1usize << (c - 1);
            assert_eq!(half % segments(half), 0);
        }
    }

    /// A plan shrinks its chunks to what is available, and refuses below the smallest.
    #[test]
    fn plans_chunk_to_fit() {
        let n = 1 << 22;
        let full = plan::<G1>(n, PointSource::Streamed, false, usize::MAX).unwrap();
        assert_eq!((full.chunk, full.chunks), (n, 1));
        let small = plan::<G1>(n, PointSource::Streamed, false, full.work_bytes / 5).unwrap();
        assert!(small.chunks > 1 && small.work_bytes <= full.work_bytes / 5);
        assert_eq!(small.chunk * small.chunks, n);
        assert!(plan::<G1>(n, PointSource::Streamed, false, 1 << 20).is_err());
        let g2 = plan::<G2>(
            1000,
            PointSource::Resident { indexed: true },
            false,
            usize::MAX,
        )
        .unwrap();
        assert_eq!((g2.chunk, g2.chunks), (1000, 1));
        // Resident points take no per-chunk point buffers.
        let r = plan::<G1>(
            n,
            PointSource::Resident { indexed: false },
            false,
            usize::MAX,
        )
        .unwrap();
        assert!(r.work_bytes + 2 * n * 96 <= full.work_bytes + 4096);
    }

    /// Scalars already on the device over resident, unindexed bases: one pass when the
    /// budget holds it, no scalar buffers, chunks again when it does not;
    /// host scalars stay in upload-sized chunks.
    #[test]
    fn device_scalars_plan_one_pass() {
        let n = (1 << 27) - 1;
        let res = PointSource::Resident { indexed: false };
        let one = plan_with::<G1>(n, res, false, true, usize::MAX, None, None, None).unwrap();
        assert_eq!((one.chunk, one.chunks), (n, 1));
        if std::env::var_os("CUZK_MSM_WIDE_WINDOW").is_none() {
            assert_eq!(one.c, 16);
        }
        let host = plan_with::<G1>(n, res, false, false, usize::MAX, None, None, None).unwrap();
        assert_eq!(host.chunk, 1 << 22, "host scalars: upload-sized chunks");
        let streamed = plan_with::<G1>(n, PointSource::Streamed, false, true, usize::MAX, None, None, None).unwrap();
        assert_eq!(streamed.chunk, 1 << 24, "device scalars over streamed bases: chunks of 2^24");
        let streamed_host = plan_with::<G1>(n, PointSource::Streamed, false, false, usize::MAX, None, None, None).unwrap();
        assert_eq!(streamed_host.chunk, 1 << 22, "host scalars over streamed bases keep 2^22");
        let tight = plan_with::<G1>(n, res, false, true, one.work_bytes / 3, None, None, None).unwrap();
        assert!(tight.chunks > 1 && tight.work_bytes <= one.work_bytes / 3);
        let idx = PointSource::Resident { indexed: true };
        assert_eq!(plan_with::<G1>(n, idx, false, true, usize::MAX, None, None, None).unwrap().chunk, 1 << 22);
        // No scalar buffers for device scalars.
        let m = 1 << 20;
        let with = Layout::of_call::<G1>(m, 16, res, false, false, 0, false).bytes();
        let without = Layout::of_call::<G1>(m, 16, res, false, true, 0, false).bytes();
        assert!(without + 2 * m * FR_BYTES <= with + 4096);
        // Batch-affine levels (forced here: off by default) only where nothing is
        // uploaded, in G1, and not in sums.
        let forced = |n: usize, src, sum_only, dev, g2: bool| {
            let p = if g2 {
                plan_with::<G2>(n, src, sum_only, dev, usize::MAX, None, Some(6), None)
            } else {
                plan_with::<G1>(n, src, sum_only, dev, usize::MAX, None, Some(6), None)
            };
            p.unwrap().batch_levels
        };
        assert_eq!(forced(n, res, false, true, false), 6);
        assert_eq!(forced(n, res, false, false, false), 0, "host scalars upload");
        assert_eq!(forced(n, idx, false, true, false), 0, "an index array uploads");
        assert_eq!(forced(n, res, true, false, false), 0, "a sum");
        assert_eq!(forced(n >> 2, res, false, true, true), 0, "G2");
        if std::env::var_os("CUZK_MSM_BATCH_LEVELS").is_none() {
            assert_eq!(one.batch_levels, BATCH_LEVELS);
        }
    }

    /// Derived bucket keys (forced here either way; on by default) leave the key array out of the
    /// workspace, and never go with batch-affine levels or sums.
    #[test]
    fn derived_keys_plan() {
        let n = (1 << 27) - 1;
        let res = PointSource::Resident { indexed: false };
        let stored = plan_with::<G1>(n, res, false, true, usize::MAX, None, Some(0), Some(false)).unwrap();
        let derived = plan_with::<G1>(n, res, false, true, usize::MAX, None, Some(0), Some(true)).unwrap();
        assert!(!stored.derived_keys && derived.derived_keys);
        assert_eq!((derived.chunk, derived.c), (stored.chunk, stored.c));
        let keys = reserved_size(256usize.div_ceil(derived.c as usize) * n * 4);
        assert_eq!(stored.work_bytes - derived.work_bytes, keys, "one key array of 4 bytes per slot fewer");
        let host = plan_with::<G2>(1 << 20, PointSource::Streamed, false, false, usize::MAX, None, None, Some(true));
        assert!(host.unwrap().derived_keys, "any call without levels, G2 and uploads included");
        let levels = plan_with::<G1>(n, res, false, true, usize::MAX, None, Some(6), Some(true)).unwrap();
        assert!(!levels.derived_keys && levels.batch_levels == 6, "the levels read stored keys");
        let sum = plan_with::<G1>(n, res, true, false, usize::MAX, None, None, Some(true)).unwrap();
        assert!(!sum.derived_keys, "a sum has no buckets");
        if std::env::var_os("CUZK_MSM_DERIVED_KEYS").is_none() {
            let default = plan_with::<G1>(n, res, false, true, usize::MAX, None, None, None).unwrap();
            assert_eq!(default.derived_keys, DERIVED_KEYS);
        }
    }

    #[test]
    fn wide_window_rule() {
        assert_eq!(window_for(1 << 27, None, None), 16);
        assert_eq!(window_for(1 << 27, None, Some(20)), 20, "the H MSM's size takes the wide window");
        assert_eq!(window_for((1 << 26) - 1, None, Some(20)), 16, "smaller chunks keep the rule");
        assert_eq!(window_for(1 << 21, None, Some(20)), 16);
        assert_eq!(window_for(1 << 27, Some(12), Some(20)), 12, "a forced window wins");
        assert_eq!(window_for(1 << 27, None, Some(40)), MAX_WINDOW);
    }

    #[test]
    fn batch_levels_rule() {
        // Forced: any size below 2^30; otherwise only from 2^min_log points.
        assert_eq!(levels_for(1 << 10, Some(6), BATCH_MIN_LOG, 0), 6);
        assert_eq!(levels_for(1 << 10, Some(20), BATCH_MIN_LOG, 0), 12);
        assert_eq!(levels_for((1 << 24) - 1, None, 24, 5), 0);
        assert_eq!(levels_for(1 << 24, None, 24, 5), 5);
        assert_eq!(levels_for(1 << 27, None, 24, 0), 0, "off by default");
        assert_eq!(levels_for(1 << 30, Some(6), 0, 6), 0, "slots past 31 bits");
        assert_eq!(levels_for(1 << 10, None, 0, 3), 3);
    }

    #[test]
    fn batch_affine_layout() {
        // The H MSM of a 32 GiB partition: one window at a time, in about the room the
        // XYZZ phase's carries took.
        let (m, c) = ((1usize << 27) - 1, 16);
        let res = PointSource::Resident { indexed: false };
        let plain = Layout::of_call::<G1>(m, c, res, false, true, 0, false);
        let batch = Layout::of_call::<G1>(m, c, res, false, true, 6, false);
        assert_eq!(batch.ba.g, 1);
        assert!(batch.bytes() < plain.bytes() * 21 / 20, "{} against {}", batch.bytes(), plain.bytes());
        let small = Layout::of_call::<G1>(1 << 20, 12, res, false, true, 3, false);
        assert!(small.ba.g >= 1 && small.ba.g <= 22);
        // Every level's region holds its outputs: half the inputs, plus a half for each
        // bucket with an odd count.
        for ba in [batch.ba, small.ba] {
            for k in 0..=ba.levels {
                assert!(2 * ba.stride(k + 1) >= ba.stride(k) + ba.half, "{ba:?} level {k}");
                if k >= 1 {
                    let buf = if k % 2 == 1 { 0 } else { 1 };
                    assert!(ba.g * ba.stride(k) * G1::AFFINE_BYTES <= ba.buffers()[buf], "{ba:?} level {k}");
                }
            }
        }
        // The inversion scratch covers every step of the recursion.
        assert_eq!(inv_scratch_bytes(INV_DIRECT), 0);
        let (n, t) = (INV_DIRECT * INV_GROUP * 3, INV_DIRECT * 3);
        assert_eq!(inv_scratch_bytes(n), (n + t) * FQ_BYTES + (t + t / INV_GROUP) * FQ_BYTES);
    }

    #[test]
    fn reductions_end_at_one_sum_per_group() {
        for (count, groups) in [
            (1usize, 1usize),
            (33, 1),
            (16 * 1024, 16),
            (8 * 64, 64),
            (1 << 17, 1),
        ] {
            let steps = reduce_steps(count, groups);
            let last = steps.last().map_or(count, |s| s.2);
            assert_eq!(last, groups, "{count} in {groups} groups");
        }
    }
}
