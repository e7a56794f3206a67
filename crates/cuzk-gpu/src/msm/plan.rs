//! The MSM plan: from a call's size, inputs, tuning and the memory it may take, the chunk
//! size, window width, batch-affine levels and bucket keys, and the bytes of every device
//! buffer a chunk needs ([`Layout`]). Pure: nothing here touches a device, so the unit tests
//! below run anywhere.

use crate::arena::reserved_size;
use crate::tuning::{GpuTuning, BA_GROUPS, CHUNK_LOGS, MAX_BATCH_LEVELS, MAX_WINDOW, MIN_WINDOW};

use super::curve::{Curve, G1};

pub(crate) const FR_BYTES: usize = 32;
pub(crate) const FQ_BYTES: usize = 48;

/// Sorted bucket entries each thread of the bucket phase adds.
pub(crate) const RUN_CHUNK: usize = 32;
/// Points the scalar-one sum gives each thread.
pub(crate) const SUM_CHUNK: usize = 32;
/// Partial sums each thread of the tree reduction adds.
const REDUCE_CHUNK: usize = 16;
/// The smallest chunk a plan may take before it refuses the call.
pub(crate) const MIN_CHUNK: usize = 1 << 12;
/// Group products each thread of the batch inversion multiplies per step.
pub(crate) const INV_GROUP: usize = 32;
/// At most this many values are inverted one by one (Fermat) at the end of a batch inversion.
pub(crate) const INV_DIRECT: usize = 1 << 15;

/// Chunks of at least 2^WIDE_MIN_LOG points (in a proof, only the H MSM's) take
/// [`GpuTuning::msm_wide_window`] bits when it is set, instead of [`window_bits`]'s 16.
const WIDE_MIN_LOG: u32 = 26;

/// Window width c for chunks of m points: log2(m) - 4, at most 16 bits (2^15 buckets per
/// window). Measured on the H200 (bench/history/2026-12-03.md): in one pass over 2^26 and
/// 2^27 points no width from 17 to 22 bits beat 16, though 22 needs a quarter fewer
/// additions.
pub(crate) fn window_bits(m: usize) -> u32 {
    let log = usize::BITS - m.max(1).leading_zeros() - 1;
    log.saturating_sub(4).clamp(4, 16)
}

/// The window of a chunk of m points: the tuning's `msm_window` when set, else its
/// `msm_wide_window` for chunks of 2^WIDE_MIN_LOG points or more when set, else
/// [`window_bits`].
pub(crate) fn window_for(m: usize, t: &GpuTuning) -> u32 {
    forced_window(m, t).unwrap_or_else(|| window_bits(m))
}

/// The width the tuning forces on a chunk of m points (`msm_window`, or `msm_wide_window`
/// from 2^WIDE_MIN_LOG points), if any.
pub(crate) fn forced_window(m: usize, t: &GpuTuning) -> Option<u32> {
    match (t.msm_window, t.msm_wide_window) {
        (Some(c), _) => Some(c),
        (None, Some(c)) if m >= 1 << WIDE_MIN_LOG => Some(c),
        _ => None,
    }
    .map(|c| c.clamp(MIN_WINDOW, MAX_WINDOW))
}

/// Per-thread segments of buckets in the window reduction: 1024 per window, or more for
/// windows wider than 16 bits (at most 32 buckets per thread then).
pub(crate) fn segments(half: usize) -> usize {
    half.min((half / 32).max(1024))
}

/// The batch-affine levels of a chunk of m points: `levels` for chunks of at least
/// 2^min_log points; never for chunks of 2^30 or more (the kernels index a group's slots in
/// 31 bits).
fn levels_for(m: usize, min_log: u32, levels: u32) -> u32 {
    if m >= 1 << 30 || (m as u64) < 1u64 << min_log.min(40) {
        0
    } else {
        levels.min(MAX_BATCH_LEVELS)
    }
}

/// Bytes of the scratch a batch inversion of `count` values needs (prefixes and group
/// products of each step).
pub(crate) fn inv_scratch_bytes(count: usize) -> usize {
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
pub(crate) struct BaLayout {
    pub(crate) levels: u32,
    pub(crate) g: usize,
    m: usize,
    pub(crate) half: usize,
}

impl BaLayout {
    pub(crate) fn stride(&self, k: u32) -> usize {
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
        self.out_slots().div_ceil(BA_GROUPS.0)
    }
    /// Slots left for the XYZZ bucket phase per group.
    fn remainder(&self) -> usize {
        self.g * self.stride(self.levels)
    }
    /// Byte sizes of the buffers: points and keys of the odd and even levels, prefixes,
    /// group products, inversion scratch, lens and offs twice, then the output slots'
    /// sources.
    pub(crate) fn buffers(&self) -> [usize; 12] {
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
/// (bench/history/2026-12-04.md, fourth session, chunks of 2^24 for every uploading call
/// in the same run): that call took 1189 ms against 1256 (kernels 1140 against 1234),
/// while L/A/B, which upload their scalars, became slower (645 against 612 ms), so they
/// keep 2^22. The tuning's `msm_max_chunk_log` sets every call's chunk when set (up to
/// what the budget holds); otherwise its `msm_upload_chunk_log` sets the chunk of all calls
/// that upload.
fn max_chunk(uploads: bool, streams_over_device_scalars: bool, t: &GpuTuning) -> usize {
    let log = |l: u32| 1usize << l.clamp(CHUNK_LOGS.0, CHUNK_LOGS.1);
    match (t.msm_max_chunk_log, t.msm_upload_chunk_log) {
        (Some(l), _) => log(l),
        (None, Some(l)) if uploads => log(l),
        (None, _) if uploads && streams_over_device_scalars => 1 << 24,
        (None, _) if uploads => 1 << 22,
        (None, _) => 1 << 31,
    }
}

/// The steps of a tree reduction of `count` sums in `groups` equal groups: (count, chunk,
/// threads) of each launch.
pub(crate) fn reduce_steps(mut count: usize, groups: usize) -> Vec<(usize, usize, usize)> {
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

/// What a call multiplies its bases by, as its plan sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarKind {
    /// Every scalar one: the batch sum of the selected bases, with no windows and no
    /// buckets (only the scalar-one sum).
    AllOne,
    /// Scalars uploaded per chunk from the host.
    Host,
    /// Scalars already in device memory (h from the H step), read in place.
    Device,
}

/// Byte sizes of one chunk's device buffers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Layout {
    pub(crate) points: usize,
    pub(crate) idx: usize,
    pub(crate) scalars: usize,
    pub(crate) class: usize,
    pub(crate) cursor: usize,
    pub(crate) entries: usize,
    /// The scatter's stored bucket keys (0 when they are derived).
    pub(crate) keys: usize,
    pub(crate) carry_a: usize,
    pub(crate) carry_b: usize,
    pub(crate) buckets: usize,
    pub(crate) segs: usize,
    pub(crate) red_a: usize,
    pub(crate) red_b: usize,
    pub(crate) partial: usize,
    pub(crate) jac: usize,
    pub(crate) ba: BaLayout,
}

impl Layout {
    /// For chunks of `m` points, c-bit windows; `batch`: batch-affine levels before the
    /// XYZZ bucket phase (G1 only); `derived`: bucket keys derived from the cursors, not
    /// stored. Scalars already on the device take no scalar buffers (chunks read them in
    /// place); a sum takes neither scalars nor buckets.
    pub(crate) fn new<C: Curve>(m: usize, c: u32, source: PointSource, scalars: ScalarKind, batch: u32, derived: bool) -> Layout {
        Layout::with_sets::<C>(m, c, 1, source, scalars, batch, derived)
    }

    /// As [`Layout::new`], with windows sharing bucket sets `per` at a time (precomputed
    /// multiples; `per` = 1: a bucket set per window).
    pub(crate) fn with_sets<C: Curve>(
        m: usize,
        c: u32,
        per: u32,
        source: PointSource,
        scalars: ScalarKind,
        batch: u32,
        derived: bool,
    ) -> Layout {
        let (x, windows) = (C::XYZZ_BYTES, 256usize.div_ceil(c as usize));
        let sets = bucket_sets(c, per) as usize;
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
        if scalars == ScalarKind::AllOne {
            l.jac = C::JAC_BYTES;
        } else {
            // Every bucket set's region holds `per` windows' entries (the last set's may be
            // partly unused).
            let slots = sets * per as usize * m;
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
            l.scalars = if scalars == ScalarKind::Host { m * FR_BYTES } else { 0 };
            l.class = m;
            l.cursor = sets * (half + 1) * 4;
            l.entries = slots * 4;
            l.keys = if derived { 0 } else { slots * 4 };
            l.carry_a = l1 * (x + 4);
            l.carry_b = l2 * (x + 4);
            l.buckets = sets * half * x;
            l.segs = sets * segs * x;
            l.jac = (sets + 1) * C::JAC_BYTES;
            reds.push(reduce_steps(sets * segs, sets));
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

    /// What the chunk's workspace takes from the arena: inputs and readback sources twice
    /// (double-buffered), the rest once.
    pub(crate) fn bytes(&self) -> usize {
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
    /// Windows per bucket set: 1, or the copies of the bases (themselves and their
    /// precomputed multiples 2^(c j) P, j < per) the call reads, resident on the device.
    pub per: u32,
    /// Device bytes of those multiples (0: none; not part of `work_bytes`).
    pub multiples_bytes: usize,
}

impl MsmPlan {
    /// Bucket sets of the call (one per window when `per` is 1).
    pub fn sets(&self) -> u32 {
        bucket_sets(self.c, self.per)
    }
}

/// Windows of c bits (one more digit than 255 bits need, for the last signed digit's carry).
pub(crate) fn windows(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Bucket sets of c-bit windows shared `per` at a time.
pub(crate) fn bucket_sets(c: u32, per: u32) -> u32 {
    windows(c).div_ceil(per.max(1))
}

/// The bit from which an entry holds its multiple's number j (kernels/msm.cuh): 31 without
/// multiples (entries are plain indices below the sign bit), else the bits of the chunk's
/// largest index; None when per - 1 does not fit above them.
pub(crate) fn entry_shift(m: usize, per: u32) -> Option<u32> {
    if per <= 1 {
        return Some(31);
    }
    let shift = (usize::BITS - m.saturating_sub(1).leading_zeros()).max(1);
    let top = ((per as u64 - 1) << shift) | ((1u64 << shift) - 1);
    (top < 1 << 31).then_some(shift)
}

/// One choice of window width and bucket-set sharing, and the time the model gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiplesChoice {
    pub c: u32,
    pub per: u32,
    /// Device bytes of the multiples (per - 1 copies of the bases).
    pub bytes: usize,
    /// The model's time for the bucket work of the call, in ms (an estimate, see
    /// [`modeled_ms`]).
    pub modeled_ms: f64,
}

/// Nanoseconds per mixed bucket addition: on the H200 2^31 of them took 889 ms at c = 16
/// (bench/runs/2026-12-06-h200-msm, today's code), 0.413 ns each.
const NS_PER_ADD: f64 = 0.413;
/// Nanoseconds per scatter entry while the open write fronts fit the L2 cache (97 ms for
/// 2^31 entries at c = 16 and 96 ms for 14 x 2^27 at c = 19 in 3 sets, 2026-12-06; 99 ms with
/// 60 MiB of fronts at c = 18) and when they do not (284 ms for 12 x 2^27 entries at c = 22
/// with 768 MiB of fronts, 2026-12-04, third session).
const NS_PER_SCATTER: (f64, f64) = (0.045, 0.18);
/// Bytes of open write fronts (a 32-byte sector per bucket being filled) the scatter keeps
/// at L2 speed: 60 MiB measured fast, 768 MiB slow (the H200's L2 is 50 MB; the fronts
/// are partly written back without harm).
const SCATTER_FRONT_BYTES: usize = 64 << 20;
/// Nanoseconds per bucket of a call, for the bucket runs' stores, the carries and the window
/// reduction together: fit to the H200's phases of 2026-12-06 (c = 20 in 13 sets: bucket
/// runs 80 ms, carries 43 ms and windows 12 ms above c = 16's for 6.3 M more buckets).
const NS_PER_BUCKET: f64 = 21.0;
/// Milliseconds of the H MSM that no lever here moves (classify, the carries' base, the
/// scalar-one sum): 22 to 55 ms of classify and about 40 of carries measured.
const FIXED_MS: f64 = 60.0;

/// The model's time in ms for the bucket work of `n` general scalars at c-bit windows,
/// `per` windows per bucket set, the scatter taking `at_once` bucket sets per pass (all of
/// them, or one). An estimate from the phase times measured on the H200 (the constants
/// above; within 4% of the measured kernels at c = 16 to 20, 2026-12-06), for choosing, not
/// for reporting.
pub fn modeled_ms(n: usize, c: u32, per: u32, at_once: u32) -> f64 {
    let entries = n as f64 * windows(c) as f64;
    let sets = bucket_sets(c, per);
    let front = at_once.clamp(1, sets) as usize * (1usize << (c - 1)) * 32;
    let scatter = if front <= SCATTER_FRONT_BYTES { NS_PER_SCATTER.0 } else { NS_PER_SCATTER.1 };
    // A pass per group of sets reads the scalars again (32 bytes each at about 3 TB/s).
    let passes = sets.div_ceil(at_once.clamp(1, sets)) as f64;
    let reads = passes * n as f64 * 32.0 / 3.0;
    let buckets = sets as f64 * (1u64 << (c - 1)) as f64;
    (entries * (NS_PER_ADD + scatter) + buckets * NS_PER_BUCKET + reads / 1e3) / 1e6 + FIXED_MS * (n as f64 / (1u64 << 27) as f64).min(1.0)
}

/// What each copy of the bases must buy, in ms of the model's time: 1% of it, and 0.5 ms per
/// GiB the copy takes (12 GiB of VRAM at 2^27 for a few ms is not worth keeping; nor 23 GiB
/// for a millisecond of a 2^21 call, which the H200 run of 2026-12-06 built for L and B and
/// which then pushed the H MSM's multiples out).
fn copy_cost_ms(t: f64, copy_bytes: usize) -> f64 {
    (t / 100.0).max(copy_bytes as f64 / (1u64 << 30) as f64 * 0.5)
}

/// Widths the chooser considers.
const CHOICE_WINDOWS: std::ops::RangeInclusive<u32> = 12..=22;

/// The width and sharing for `n` general scalars over `bases` resident bases of `affine`
/// bytes each, with at most `max_per` copies (1: none) and `room` device bytes for the
/// multiples, the scatter taking one bucket set per pass when `per_set`, else all: the
/// choice the model ([`modeled_ms`]) times fastest, each copy paying 1% of it and at least
/// 0.5 ms per GiB; `fixed_c` forces the width; without copies the call keeps `plain_c`. Windows per
/// set never exceed the windows there are, and the entries must hold the multiple's number
/// ([`entry_shift`] for chunks of `m` points).
#[allow(clippy::too_many_arguments)]
pub fn choose_multiples(
    n: usize,
    m: usize,
    bases: usize,
    affine: usize,
    max_per: u32,
    room: usize,
    per_set: bool,
    fixed_c: Option<u32>,
    plain_c: u32,
) -> MultiplesChoice {
    let at_once = |c: u32, per: u32| if per_set { 1 } else { bucket_sets(c, per) };
    // Without multiples the plan keeps its own width (`plain_c`: the tuning's or its rule's,
    // 16 at 2^27, what the H200 measured best in one set per window); the model only says
    // whether copies beat it.
    let c0 = fixed_c.unwrap_or(plain_c);
    let mut best = MultiplesChoice { c: c0, per: 1, bytes: 0, modeled_ms: modeled_ms(n, c0, 1, at_once(c0, 1)) };
    let widths = match fixed_c {
        Some(c) => c..=c,
        None => CHOICE_WINDOWS,
    };
    // Copies are weighed against the best the model finds without any, at any width (so
    // that what a width alone would give is not credited to copies), each copy paying its
    // cost (copy_cost_ms).
    let without = widths.clone().map(|c| modeled_ms(n, c, 1, at_once(c, 1))).fold(best.modeled_ms, f64::min);
    let rank = |t: f64, per: u32| if per == 1 { without } else { t + (per - 1) as f64 * copy_cost_ms(t, bases * affine) };
    for c in widths {
        for per in 2..=max_per.clamp(1, windows(c)) {
            let bytes = (per as usize - 1) * bases * affine;
            if bytes > room || entry_shift(m, per).is_none() {
                continue;
            }
            let t = modeled_ms(n, c, per, at_once(c, per));
            if rank(t, per) < rank(best.modeled_ms, best.per) {
                best = MultiplesChoice { c, per, bytes, modeled_ms: t };
            }
        }
    }
    best
}

/// The plan for `n` points from `source` times `scalars`, under `tuning`, with `available`
/// bytes to spend: the largest chunk the rule and the tuning allow, halved until its
/// workspace fits; `Err` with the bytes of the smallest chunk's workspace when even that
/// does not fit. Scalars on the device over resident, unindexed bases upload nothing, so
/// such a call has no chunk limit; batch-affine levels go only to G1 calls that upload
/// nothing; bucket keys are derived unless the tuning says otherwise or levels read them.
pub(crate) fn plan<C: Curve>(
    n: usize,
    source: PointSource,
    scalars: ScalarKind,
    tuning: &GpuTuning,
    available: usize,
) -> Result<MsmPlan, usize> {
    plan_with::<C>(n, source, scalars, tuning, available, None)
}

/// As [`plan`], with `shared` = (c, per) when the call reads `per` resident copies of its
/// bases (precomputed multiples, [`choose_multiples`]): that width at every chunk size, no
/// batch-affine levels, and chunks whose indices leave room for the multiple's number.
pub(crate) fn plan_with<C: Curve>(
    n: usize,
    source: PointSource,
    scalars: ScalarKind,
    tuning: &GpuTuning,
    available: usize,
    shared: Option<(u32, u32)>,
) -> Result<MsmPlan, usize> {
    let sum_only = scalars == ScalarKind::AllOne;
    let shared = shared.filter(|&(_, per)| per > 1 && !sum_only);
    let device_scalars = scalars == ScalarKind::Device;
    let uploads = scalars == ScalarKind::Host || source != (PointSource::Resident { indexed: false });
    let mut m = n.clamp(1, max_chunk(uploads, device_scalars && source == PointSource::Streamed, tuning));
    loop {
        let (c, per) = shared.unwrap_or((window_for(m, tuning), 1));
        if entry_shift(m, per).is_none() {
            m = m.div_ceil(2);
            continue;
        }
        let levels = if per == 1 && C::GROUP == 1 && !sum_only && !uploads {
            levels_for(m, tuning.msm_batch_min_log, tuning.msm_batch_levels)
        } else {
            0
        };
        let derived_keys = !sum_only && levels == 0 && tuning.msm_derived_keys;
        let bytes = Layout::with_sets::<C>(m, c, per, source, scalars, levels, derived_keys).bytes();
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
                per,
                multiples_bytes: 0,
            });
        }
        if m <= MIN_CHUNK {
            return Err(bytes);
        }
        m = m.div_ceil(2);
    }
}

/// The workspace of a full chunk of a call of `n` points that uploads per chunk, read from
/// resident bases (what admitting a base array leaves room for).
pub(crate) fn full_chunk_bytes<C: Curve>(n: usize, source: PointSource, scalars: ScalarKind, tuning: &GpuTuning) -> usize {
    let chunk = n.clamp(1, max_chunk(true, false, tuning));
    Layout::new::<C>(chunk, window_bits(chunk), source, scalars, 0, false).bytes()
}

/// Device bytes a resident copy of `len` bases takes.
pub(crate) fn resident_size<C: Curve>(len: usize) -> usize {
    reserved_size(len * C::AFFINE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::super::curve::G2;
    use super::*;

    const RES: PointSource = PointSource::Resident { indexed: false };
    const IDX: PointSource = PointSource::Resident { indexed: true };

    fn default() -> GpuTuning {
        GpuTuning::default()
    }

    /// The tuning with `f` applied.
    fn tuned(f: impl FnOnce(&mut GpuTuning)) -> GpuTuning {
        let mut t = GpuTuning::default();
        f(&mut t);
        t
    }

    /// Windows cover 256 bits (room for the last signed digit's carry) and the segment
    /// count divides the bucket count, as the kernels assume.
    #[test]
    fn window_shapes() {
        for log in 0..=30 {
            let c = window_bits(1 << log);
            assert!((4..=16).contains(&c));
            for forced in MIN_WINDOW..=MAX_WINDOW {
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
        let t = default();
        let full = plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &t, usize::MAX).unwrap();
        assert_eq!((full.chunk, full.chunks), (n, 1));
        let small = plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &t, full.work_bytes / 5).unwrap();
        assert!(small.chunks > 1 && small.work_bytes <= full.work_bytes / 5);
        assert_eq!(small.chunk * small.chunks, n);
        assert!(plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &t, 1 << 20).is_err());
        let g2 = plan::<G2>(1000, IDX, ScalarKind::Host, &t, usize::MAX).unwrap();
        assert_eq!((g2.chunk, g2.chunks), (1000, 1));
        // Resident points take no per-chunk point buffers.
        let r = plan::<G1>(n, RES, ScalarKind::Host, &t, usize::MAX).unwrap();
        assert!(r.work_bytes + 2 * n * 96 <= full.work_bytes + 4096);
    }

    /// The default tuning plans the 32 GiB partition's H MSM as measured best: one pass,
    /// 16-bit windows, derived keys, no batch-affine levels.
    #[test]
    fn the_default_plans_the_h_msm_in_one_pass() {
        let n = (1 << 27) - 1;
        let p = plan::<G1>(n, RES, ScalarKind::Device, &default(), usize::MAX).unwrap();
        assert_eq!((p.chunk, p.chunks, p.c, p.batch_levels, p.derived_keys), (n, 1, 16, 0, true));
    }

    /// Scalars already on the device over resident, unindexed bases: one pass when the
    /// budget holds it, no scalar buffers, chunks again when it does not;
    /// host scalars stay in upload-sized chunks.
    #[test]
    fn device_scalars_plan_one_pass() {
        let n = (1 << 27) - 1;
        let t = default();
        let one = plan::<G1>(n, RES, ScalarKind::Device, &t, usize::MAX).unwrap();
        assert_eq!((one.chunk, one.chunks), (n, 1));
        let host = plan::<G1>(n, RES, ScalarKind::Host, &t, usize::MAX).unwrap();
        assert_eq!(host.chunk, 1 << 22, "host scalars: upload-sized chunks");
        let streamed = plan::<G1>(n, PointSource::Streamed, ScalarKind::Device, &t, usize::MAX).unwrap();
        assert_eq!(streamed.chunk, 1 << 24, "device scalars over streamed bases: chunks of 2^24");
        let streamed_host = plan::<G1>(n, PointSource::Streamed, ScalarKind::Host, &t, usize::MAX).unwrap();
        assert_eq!(streamed_host.chunk, 1 << 22, "host scalars over streamed bases keep 2^22");
        let tight = plan::<G1>(n, RES, ScalarKind::Device, &t, one.work_bytes / 3).unwrap();
        assert!(tight.chunks > 1 && tight.work_bytes <= one.work_bytes / 3);
        assert_eq!(plan::<G1>(n, IDX, ScalarKind::Device, &t, usize::MAX).unwrap().chunk, 1 << 22);
        // No scalar buffers for device scalars.
        let m = 1 << 20;
        let with = Layout::new::<G1>(m, 16, RES, ScalarKind::Host, 0, false).bytes();
        let without = Layout::new::<G1>(m, 16, RES, ScalarKind::Device, 0, false).bytes();
        assert!(without + 2 * m * FR_BYTES <= with + 4096);
        // Batch-affine levels (asked for here at every size: off by default) only where
        // nothing is uploaded, in G1, and not in sums.
        let six = tuned(|t| (t.msm_batch_levels, t.msm_batch_min_log) = (6, 0));
        let levels = |n: usize, src, scalars, g2: bool| {
            let p = if g2 {
                plan::<G2>(n, src, scalars, &six, usize::MAX)
            } else {
                plan::<G1>(n, src, scalars, &six, usize::MAX)
            };
            p.unwrap().batch_levels
        };
        assert_eq!(levels(n, RES, ScalarKind::Device, false), 6);
        assert_eq!(levels(n, RES, ScalarKind::Host, false), 0, "host scalars upload");
        assert_eq!(levels(n, IDX, ScalarKind::Device, false), 0, "an index array uploads");
        assert_eq!(levels(n, RES, ScalarKind::AllOne, false), 0, "a sum");
        assert_eq!(levels(n >> 2, RES, ScalarKind::Device, true), 0, "G2");
        assert_eq!(one.batch_levels, 0, "off by default");
    }

    /// The chunk logs of the tuning: `msm_max_chunk_log` caps every call (the one-pass H
    /// MSM included), `msm_upload_chunk_log` only the calls that upload; both are clamped to
    /// 2^10..2^30 and the budget still cuts them.
    #[test]
    fn chunk_logs_set_the_chunks() {
        let n = (1 << 27) - 1;
        let max22 = tuned(|t| t.msm_max_chunk_log = Some(22));
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Device, &max22, usize::MAX).unwrap().chunk, 1 << 22);
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Host, &max22, usize::MAX).unwrap().chunk, 1 << 22);
        let max24 = tuned(|t| t.msm_max_chunk_log = Some(24));
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Host, &max24, usize::MAX).unwrap().chunk, 1 << 24, "host scalars too");
        let up23 = tuned(|t| t.msm_upload_chunk_log = Some(23));
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Host, &up23, usize::MAX).unwrap().chunk, 1 << 23);
        assert_eq!(plan::<G1>(n, PointSource::Streamed, ScalarKind::Device, &up23, usize::MAX).unwrap().chunk, 1 << 23);
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Device, &up23, usize::MAX).unwrap().chunk, n, "uploads nothing");
        let wild = tuned(|t| t.msm_max_chunk_log = Some(3));
        assert_eq!(plan::<G1>(n, RES, ScalarKind::Host, &wild, usize::MAX).unwrap().chunk, 1 << 10, "clamped");
        let one = plan::<G1>(n, RES, ScalarKind::Device, &default(), usize::MAX).unwrap();
        let tight = plan::<G1>(n, RES, ScalarKind::Device, &max24, one.work_bytes / 8).unwrap();
        assert!(tight.chunk < 1 << 24, "the budget cuts the tuning's chunk: {tight:?}");
        // Admitting a base array leaves room for a full uploading chunk under the tuning.
        assert!(full_chunk_bytes::<G1>(n, RES, ScalarKind::Host, &up23) > full_chunk_bytes::<G1>(n, RES, ScalarKind::Host, &default()));
    }

    /// Derived bucket keys (on by default; off as a variant) leave the key array out of the
    /// workspace, and never go with batch-affine levels or sums.
    #[test]
    fn derived_keys_plan() {
        let n = (1 << 27) - 1;
        let stored_t = tuned(|t| t.msm_derived_keys = false);
        let stored = plan::<G1>(n, RES, ScalarKind::Device, &stored_t, usize::MAX).unwrap();
        let derived = plan::<G1>(n, RES, ScalarKind::Device, &default(), usize::MAX).unwrap();
        assert!(!stored.derived_keys && derived.derived_keys);
        assert_eq!((derived.chunk, derived.c), (stored.chunk, stored.c));
        let keys = reserved_size(256usize.div_ceil(derived.c as usize) * n * 4);
        assert_eq!(stored.work_bytes - derived.work_bytes, keys, "one key array of 4 bytes per slot fewer");
        let host = plan::<G2>(1 << 20, PointSource::Streamed, ScalarKind::Host, &default(), usize::MAX);
        assert!(host.unwrap().derived_keys, "any call without levels, G2 and uploads included");
        let six = tuned(|t| (t.msm_batch_levels, t.msm_batch_min_log) = (6, 0));
        let levels = plan::<G1>(n, RES, ScalarKind::Device, &six, usize::MAX).unwrap();
        assert!(!levels.derived_keys && levels.batch_levels == 6, "the levels read stored keys");
        let sum = plan::<G1>(n, RES, ScalarKind::AllOne, &default(), usize::MAX).unwrap();
        assert!(!sum.derived_keys, "a sum has no buckets");
    }

    #[test]
    fn wide_window_rule() {
        let wide = |c| tuned(|t| t.msm_wide_window = Some(c));
        assert_eq!(window_for(1 << 27, &default()), 16);
        assert_eq!(window_for(1 << 27, &wide(20)), 20, "the H MSM's size takes the wide window");
        assert_eq!(window_for((1 << 26) - 1, &wide(20)), 16, "smaller chunks keep the rule");
        assert_eq!(window_for(1 << 21, &wide(20)), 16);
        let both = tuned(|t| (t.msm_window, t.msm_wide_window) = (Some(12), Some(20)));
        assert_eq!(window_for(1 << 27, &both), 12, "msm_window wins");
        assert_eq!(window_for(1 << 27, &wide(40)), MAX_WINDOW);
        assert_eq!(window_for(1 << 10, &tuned(|t| t.msm_window = Some(2))), MIN_WINDOW);
    }

    #[test]
    fn batch_levels_rule() {
        // From 2^min_log points, below 2^30, at most 12.
        assert_eq!(levels_for(1 << 10, 0, 6), 6);
        assert_eq!(levels_for(1 << 10, 0, 20), 12);
        assert_eq!(levels_for((1 << 24) - 1, 24, 5), 0);
        assert_eq!(levels_for(1 << 24, 24, 5), 5);
        assert_eq!(levels_for(1 << 27, 24, 0), 0, "off by default");
        assert_eq!(levels_for(1 << 30, 0, 6), 0, "slots past 31 bits");
        assert_eq!(levels_for(1 << 10, 0, 3), 3);
        assert_eq!(levels_for(1 << 20, 99, 3), 0, "min_log past 40");
    }

    #[test]
    fn batch_affine_layout() {
        // The H MSM of a 32 GiB partition: one window at a time, in about the room the
        // XYZZ phase's carries took.
        let (m, c) = ((1usize << 27) - 1, 16);
        let plain = Layout::new::<G1>(m, c, RES, ScalarKind::Device, 0, false);
        let batch = Layout::new::<G1>(m, c, RES, ScalarKind::Device, 6, false);
        assert_eq!(batch.ba.g, 1);
        assert!(batch.bytes() < plain.bytes() * 21 / 20, "{} against {}", batch.bytes(), plain.bytes());
        let small = Layout::new::<G1>(1 << 20, 12, RES, ScalarKind::Device, 3, false);
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

    const GIB: usize = 1 << 30;
    /// The H MSM of a 32 GiB partition: 2^27 - 1 points over 2^27 resident bases.
    const H_N: usize = (1 << 27) - 1;
    const H_BASES: usize = 1 << 27;

    /// The room a budget leaves for multiples beside the 32 GiB partition's resident
    /// parameters (`params` bytes) and its H step (msm/multiples.rs `room`).
    fn room_beside(budget: usize, params: usize) -> usize {
        let work = plan::<G1>(H_N, RES, ScalarKind::Device, &default(), usize::MAX).unwrap().work_bytes;
        super::super::multiples::room(budget, params, H_N, work)
    }

    /// The multiple's number fits above the chunk's indices, below the sign bit.
    #[test]
    fn entry_shift_leaves_room() {
        assert_eq!(entry_shift(H_N, 1), Some(31), "no multiples: plain indices");
        assert_eq!(entry_shift(1 << 27, 16), Some(27));
        assert_eq!(entry_shift(1 << 27, 17), None);
        assert_eq!(entry_shift((1 << 27) + 1, 8), Some(28));
        assert_eq!(entry_shift((1 << 27) + 1, 9), None);
        assert_eq!(entry_shift(1, 2), Some(1));
        for (m, per) in [(1000usize, 3u32), (1 << 22, 13), (H_N, 16)] {
            let sh = entry_shift(m, per).unwrap();
            assert!((m - 1) < 1 << sh && ((per as u64 - 1) << sh) + (1 << sh) - 1 < 1 << 31, "{m} {per}");
        }
        // A plan whose chunk cannot hold the multiple's number halves it until it does.
        let p = plan_with::<G1>(1 << 28, RES, ScalarKind::Device, &default(), usize::MAX, Some((16, 16))).unwrap();
        assert!(entry_shift(p.chunk, 16).is_some() && p.chunk <= 1 << 27, "{p:?}");
    }

    /// Windows sharing bucket sets: cursors, buckets and segments per set, the entries
    /// still one slot per (scalar, window) at least, the results one per set plus the ones.
    #[test]
    fn shared_sets_layout() {
        let m = 1 << 20;
        for (c, per) in [(16u32, 1u32), (16, 4), (19, 5), (20, 13), (13, 2)] {
            let sets = bucket_sets(c, per) as usize;
            assert_eq!(sets, windows(c).div_ceil(per) as usize);
            let l = Layout::with_sets::<G1>(m, c, per, RES, ScalarKind::Device, 0, true);
            let half = 1usize << (c - 1);
            assert_eq!(l.cursor, sets * (half + 1) * 4, "c {c} per {per}");
            assert_eq!(l.buckets, sets * half * G1::XYZZ_BYTES);
            assert_eq!(l.jac, (sets + 1) * G1::JAC_BYTES);
            assert!(l.entries >= windows(c) as usize * m * 4 && l.entries == sets * per as usize * m * 4);
        }
        assert_eq!(
            Layout::with_sets::<G1>(m, 16, 1, RES, ScalarKind::Device, 0, true).bytes(),
            Layout::new::<G1>(m, 16, RES, ScalarKind::Device, 0, true).bytes(),
            "per 1 is today's layout"
        );
        let p = plan_with::<G1>(H_N, RES, ScalarKind::Device, &default(), usize::MAX, Some((19, 5))).unwrap();
        assert_eq!((p.c, p.per, p.sets(), p.batch_levels), (19, 5, 3, 0));
        let six = tuned(|t| (t.msm_batch_levels, t.msm_batch_min_log) = (6, 0));
        let p = plan_with::<G1>(H_N, RES, ScalarKind::Device, &six, usize::MAX, Some((19, 5))).unwrap();
        assert_eq!(p.batch_levels, 0, "no batch-affine levels over multiples");
        let sum = plan_with::<G1>(H_N, RES, ScalarKind::AllOne, &default(), usize::MAX, Some((19, 5))).unwrap();
        assert_eq!(sum.per, 1, "a sum has no windows");
    }

    /// Without room the plan keeps today's 16-bit windows (what the H200 measured best in
    /// one set per window) or the forced width, and small calls take no copies.
    #[test]
    fn the_model_keeps_todays_width_without_room() {
        let none = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 16, 0, false, None, 16);
        assert_eq!((none.c, none.per, none.bytes), (16, 1, 0));
        let off = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 1, usize::MAX, false, None, 16);
        assert_eq!((off.c, off.per), (16, 1), "msm_multiples = 1: none");
        let forced = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 16, 0, false, Some(20), 16);
        assert_eq!((forced.c, forced.per), (20, 1), "a forced width with no room");
        // A pass per set, no room: the plan's own width, no copies.
        let per_set = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 16, 0, true, None, 16);
        assert_eq!((per_set.c, per_set.per, per_set.bytes), (16, 1, 0));
        // A 2^21 call over 2^27 bases (a proof's L, A or B after the split) takes none: each
        // 12 GiB copy would buy a few milliseconds.
        let small = choose_multiples(1 << 21, 1 << 21, H_BASES, G1::AFFINE_BYTES, 16, usize::MAX, false, None, 16);
        assert_eq!(small.per, 1, "{small:?}");
        // At the GPU test's size (2^16 points over as many bases, copies of 6 MiB) the
        // window reduction is most of the work, and copies pay from 7 bits up: the GPU
        // equality test (multiples_and_bucket_sets_match_cpu) covers these choices.
        let odd = (1usize << 16) - 7;
        for (copies, c, per_set, want) in [(4, 16, false, 4), (4, 13, true, 4), (8, 7, false, 2), (16, 20, false, 13), (16, 22, true, 12)] {
            let p = choose_multiples(odd, odd, odd, G1::AFFINE_BYTES, copies, usize::MAX, per_set, Some(c), 11);
            assert_eq!((p.c, p.per), (c, want), "{copies} copies at c = {c}");
        }
    }

    /// The budgets of issue #35: an H200 (141 GB; the 32 GiB parameters, about 45 GiB of
    /// points, and its compiled circuit, 8.5 GiB, resident) takes multiples within its room;
    /// a 24 GB card and a 14 GiB budget, whose H steps leave no room, take none.
    #[test]
    fn multiples_per_budget() {
        let params = 45 * GIB + 17 * GIB / 2;
        let h200 = room_beside(132 * GIB, params);
        assert!(h200 > 50 * GIB && h200 < 70 * GIB, "H200 room {h200}");
        let pick = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 16, h200, false, None, 16);
        let today = modeled_ms(H_N, 16, 1, 16);
        assert!(pick.per > 1 && pick.bytes <= h200 && pick.bytes == (pick.per as usize - 1) * H_BASES * 96, "{pick:?}");
        assert!(pick.per <= windows(pick.c) && entry_shift(H_N, pick.per).is_some());
        assert!(pick.modeled_ms < today * 0.95, "{pick:?} against {today:.0} ms");
        // Each more copy is 12 GiB; the choice never takes more than the room holds.
        for room in [0, 12 * GIB, 13 * GIB, 30 * GIB, 60 * GIB] {
            let p = choose_multiples(H_N, H_N, H_BASES, G1::AFFINE_BYTES, 16, room, false, None, 16);
            assert!(p.bytes <= room, "{room}: {p:?}");
        }
        assert_eq!(room_beside(22 * GIB, 11 * GIB), 0, "a 24 GB card");
        assert_eq!(room_beside(14 * GIB, 7 * GIB), 0, "a 14 GiB budget");
        assert_eq!(room_beside(14 * GIB, 0), 0, "a 14 GiB budget with nothing resident");
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
