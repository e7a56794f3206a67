//! [`GpuTuning`]: every choice of the GPU backend that an operator may set or a bench may
//! vary, in one typed struct. It enters once, at [`crate::GpuBackend::open_with`], and flows
//! down to the device, the MSM plan and the NTT as a field or an argument; nothing in this
//! crate reads the environment for it. `Default` holds today's measured defaults; each
//! field's doc names the measurement behind its default (bench/history/ and BENCH.md).
//!
//! Two fields are operator keys (cuzkd's configuration sets them): [`GpuTuning::pin_host`]
//! and [`GpuTuning::copy_threads`]. The others are bench variants: a bench compares them in
//! one process with [`crate::GpuBackend::retune`] or `--variant NAME=VALUE`
//! ([`GpuTuning::set`]); every variant gives the same results.

/// The widest MSM window a tuning may force: bucket keys and counts stay within 32 bits
/// (windows x 2^(c-1) < 2^32).
pub(crate) const MAX_WINDOW: u32 = 22;
/// The narrowest MSM window.
pub(crate) const MIN_WINDOW: u32 = 4;
/// Bounds of the MSM chunk logs (2^10 to 2^30 points).
pub(crate) const CHUNK_LOGS: (u32, u32) = (10, 30);
/// The most batch-affine levels (each halves the points left).
pub(crate) const MAX_BATCH_LEVELS: u32 = 12;
/// The most copies of a base array (itself and its precomputed multiples) an MSM may read.
pub(crate) const MAX_MULTIPLES: u32 = 16;
/// The fewest and the most output slots per thread of a batch-affine level (the group
/// products' buffer is sized for the fewest).
pub(crate) const BA_GROUPS: (usize, usize) = (8, 64);

/// Which kernels run the NTT's passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttPasses {
    /// One pass over global memory per up to [`GpuTuning::ntt_max_log_radix`] stages, in
    /// registers (`cuzk_fr_ntt_radix2` to `radix16`).
    Radix,
    /// Up to 9 stages per pass through a shared-memory tile, registers uncapped
    /// (`cuzk_fr_ntt_fused`: 96 registers, two blocks per SM).
    Fused,
    /// As `Fused` with registers capped for three blocks per SM (`cuzk_fr_ntt_fused3`: 80
    /// registers).
    FusedCapped,
}

/// The GPU backend's tuning. `Default` is what was measured best; see each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTuning {
    /// Whether the H step page-locks a, b and c in place (`cuMemHostRegister`, 256 MiB
    /// pieces on 8 threads, released on every exit of the step) and moves them by DMA
    /// straight from host memory instead of through the pinned staging buffers. Off: on the
    /// H200 (2026-12-04, sixth session, bench/history/2026-12-04.md) pinning and releasing a 32 GiB
    /// partition's a, b and c took 0.5-0.7 s a proof, more than the staged copy saves
    /// (shape-bench, full budget: 1875.5 ms staged against 2349.5 ms pinned), except on a
    /// 14 GiB budget with synthesis beside it (engine: 3.66 s a partition pinned against
    /// 3.98 s staged). An operator key. Was `CUZK_GPU_PIN_HOST`.
    pub pin_host: bool,
    /// Threads of a pool of their own for the host side of staged copies (pageable memory
    /// to and from the pinned staging buffers); 0 is rayon's global pool. 0: on the H200
    /// (2026-12-03, bench/history/2026-12-03.md, the scalar split on a pool of its own) a 2^27 H step's
    /// uploads took 0.27 s on the global pool's 16 threads and 0.50 s on a pool of 8; through
    /// the engine on a 14 GiB budget (2026-12-04, sixth session) a pool of 16 gave 4.44 s a
    /// partition against 3.98 s. An operator key. Was `CUZK_GPU_COPY_THREADS`.
    pub copy_threads: usize,
    /// Whether `h_msm` keeps a, b, c and h on the device (all four when the budget holds
    /// them, else the lean path in one NTT's memory). Off: the host path, each NTT's values
    /// up and back and h uploaded again for its MSM, the reference for equality tests and
    /// benches. On: on the H200 (2026-12-03, bench/history/2026-12-03.md) the 32 GiB-shaped partition took
    /// 2.35 s against 5.19 s with the host H step in the same run. Was
    /// `GpuBackend::set_device_h`.
    pub device_h: bool,
    /// Whether a deferred witness's a, b and c are evaluated on the device from its compiled
    /// circuit, resident like the parameters, so that only the assignment crosses PCIe
    /// (`Backend::h_msm_compiled`; issue #41). Off, or where the circuit does not fit the
    /// plan: evaluated on the host, then the usual H step. A bench variant (default on; its
    /// H200 measurement is the GPU-run issue's).
    pub device_eval: bool,
    /// Whether large base arrays (the parameters) stay resident in device memory across
    /// calls, at most half the budget, least recently used evicted first. Turned off by
    /// [`crate::GpuBackend::retune`], the resident arrays are dropped and every call
    /// streams its bases. On: the resident 32 GiB partition's L/A/B took 248 ms on the H200
    /// (2026-12-04, fourth session, bench/history/2026-12-04.md) against 612 ms on a 14 GiB budget that
    /// streams some of them. Was `GpuBackend::set_residency`.
    pub residency: bool,
    /// The NTT kernels. [`NttPasses::FusedCapped`]: on the H200 (2026-11-30, BENCH.md v9,
    /// bench/history/2026-11-30.md "NTT: several stages per pass") a 2^27 forward transform took 66.3 ms
    /// of kernels capped, 76.1 ms uncapped and 83.4 ms in radix-4 passes, in one run; 47.3
    /// ms capped since the 16-byte loads (2026-12-04). Transforms of 2 elements take the
    /// radix passes whatever this says. A bench variant. Was `CUZK_NTT_FUSED` (0 radix, 1
    /// fused, 2 fused capped).
    pub ntt_passes: NttPasses,
    /// Most stages of one radix pass (1 to 4: radix 2 to 16) when the NTT runs
    /// [`NttPasses::Radix`]. 2: on the H200 (2026-11-30, BENCH.md v5) 2^24 took 12.8 ms in
    /// radix-4 passes against 17.5 ms in radix 8 (v4: radix 8 needs 125 registers, radix 16
    /// 247 and took 29.8 ms). A bench variant. Was `CUZK_NTT_MAX_LOG_RADIX`.
    pub ntt_max_log_radix: u32,
    /// The window width of every MSM chunk, 4 to 22 bits; None: the plan's rule (log2 of the
    /// chunk minus 4, at most 16). None: on the H200 (2026-12-03, bench/history/2026-12-03.md) no width
    /// from 17 to 22 beat 16 over 2^26 and 2^27 points, in chunks or in one pass. A bench
    /// variant. Was `GpuBackend::set_msm_window`.
    pub msm_window: Option<u32>,
    /// The window width of MSM chunks of 2^26 points or more (in a proof, the H MSM's
    /// alone), 4 to 22 bits; None: the plan's rule (16); [`GpuTuning::msm_window`] wins
    /// over it. None: on the H200 (2026-12-04, fourth session, bench/history/2026-12-04.md) the H MSM took
    /// 1061.2 ms at c = 20 against 1051.2 ms at 16. A bench variant. Was
    /// `CUZK_MSM_WIDE_WINDOW`.
    pub msm_wide_window: Option<u32>,
    /// Caps every MSM call's chunk at 2^k points, k from 10 to 30 (the budget may cut it
    /// further); None: the plan's rule (see [`GpuTuning::msm_upload_chunk_log`]; a call that
    /// uploads nothing, the H MSM over resident bases, is one pass). None: on the H200
    /// (2026-12-03, BENCH.md and bench/history/2026-12-03.md) the one-pass H MSM took 1249 ms of kernels
    /// at 2^27 against 1487 ms in chunks of 2^22; `Some(22)` gives those chunks back. A
    /// bench variant. Was `CUZK_MSM_MAX_CHUNK_LOG`.
    pub msm_max_chunk_log: Option<u32>,
    /// The chunk of every MSM call that uploads per chunk (scalars from the host, streamed
    /// bases or an index array), 2^k points, k from 10 to 30; None: 2^22, and 2^24 for a call
    /// that streams its bases over scalars already on the device (the H MSM on a budget
    /// that cannot keep its bases). On the H200 (2026-12-04, fourth and fifth sessions,
    /// bench/history/2026-12-04.md) 2^24 made that H MSM 1189 ms against 1256 ms, but L/A/B, which upload
    /// their scalars, 645 ms against 612 ms; hence the split rule. A bench variant. Was
    /// `CUZK_MSM_UPLOAD_CHUNK_LOG`.
    pub msm_upload_chunk_log: Option<u32>,
    /// Whether the MSM bucket phase derives each slot's bucket key from the scatter's
    /// cursors instead of storing it beside the entries (half the scatter's scattered
    /// stores, no key array). Never with batch-affine levels, whose first level reads the
    /// stored keys. On: on the H200 (2026-12-04, fourth session, bench/history/2026-12-04.md) the 32 GiB
    /// partition's H MSM scatter took 98 ms instead of 236, its kernels 1051 ms instead of
    /// 1181. A bench variant. Was `CUZK_MSM_DERIVED_KEYS`.
    pub msm_derived_keys: bool,
    /// Batch-affine levels (0 to 12) of the G1 bucket phase in calls that upload nothing
    /// per chunk and have at least 2^[`GpuTuning::msm_batch_min_log`] points: each bucket's
    /// entries summed pairwise in affine coordinates first, a level's inversions batched.
    /// 0: on the H200 (2026-12-04, bench/history/2026-12-04.md "16-byte loads") the 32 GiB partition's H
    /// MSM took 1181 ms of kernels without levels against 1255, 1263 and 1305 ms with 1, 3
    /// and 6 (each level gathers its points twice). A bench variant. Was
    /// `CUZK_MSM_BATCH_LEVELS`.
    pub msm_batch_levels: u32,
    /// The smallest chunk, 2^k points (k from 0 to 40), that takes the batch-affine levels:
    /// a level has a latency of its own (the Fermat inversions at its end, about half a
    /// millisecond per group of windows), which a 2^22 call's additions do not repay; no
    /// measurement of other thresholds is recorded. The GPU tests set 0 to take the levels
    /// at every size. A bench variant. Was `CUZK_MSM_BATCH_MIN_LOG`.
    pub msm_batch_min_log: u32,
    /// Output slots each thread of a batch-affine level takes (their denominators share one
    /// running product), 8 to 64. No measurement of other values is recorded. A bench
    /// variant. Was `CUZK_MSM_BA_GROUP`.
    pub msm_ba_group: usize,
    /// The most copies of a resident G1 base array an MSM may read (1 to 16): the bases and
    /// their precomputed multiples 2^(c j) P, j < copies, built on the device once when the
    /// plan first takes them, kept resident beside the parameters (evicted before any of
    /// them) and shared by `per` windows' digits, so that those windows add into one bucket
    /// set. The plan chooses the width and the copies within this bound and the room the
    /// budget leaves beside the resident parameters and an H step's working set
    /// (`msm::plan::choose_multiples`); 1: none, today's windows. 1 until the H200 measures
    /// the choice (issue #35; its device script runs both). A bench variant.
    pub msm_multiples: u32,
    /// Whether the MSM scatter writes one bucket set per pass over the scalars (its open
    /// write fronts then fit the L2 cache at wider windows) instead of all in one pass.
    /// Off until the H200 measures it (issue #35's device script). A bench variant.
    pub msm_scatter_per_set: bool,
}

impl Default for GpuTuning {
    fn default() -> Self {
        GpuTuning {
            pin_host: false,
            copy_threads: 0,
            device_h: true,
            device_eval: true,
            residency: true,
            ntt_passes: NttPasses::FusedCapped,
            ntt_max_log_radix: 2,
            msm_window: None,
            msm_wide_window: None,
            msm_max_chunk_log: None,
            msm_upload_chunk_log: None,
            msm_derived_keys: true,
            msm_batch_levels: 0,
            msm_batch_min_log: 24,
            msm_ba_group: 16,
            msm_multiples: 1,
            msm_scatter_per_set: false,
        }
    }
}

impl GpuTuning {
    /// The keys [`GpuTuning::set`] takes: the fields' names.
    pub const KEYS: &'static [&'static str] = &[
        "pin_host",
        "copy_threads",
        "device_h",
        "device_eval",
        "residency",
        "ntt_passes",
        "ntt_max_log_radix",
        "msm_window",
        "msm_wide_window",
        "msm_max_chunk_log",
        "msm_upload_chunk_log",
        "msm_derived_keys",
        "msm_batch_levels",
        "msm_batch_min_log",
        "msm_ba_group",
        "msm_multiples",
        "msm_scatter_per_set",
    ];

    /// Sets the field named `key` (as in [`GpuTuning::KEYS`]) from `value`, as a bench's
    /// `--variant NAME=VALUE` gives it: `true` or `false` (also `1`, `0`) for a flag, a
    /// number within the field's bounds, `none` for an optional field left to the plan's
    /// rule, and `radix`, `fused` or `fused_capped` for `ntt_passes`. A value out of bounds
    /// or an unknown key is refused with a message that names the key and what it takes; the
    /// tuning is unchanged then.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        let (w0, w1) = (MIN_WINDOW as u64, MAX_WINDOW as u64);
        let (c0, c1) = (CHUNK_LOGS.0 as u64, CHUNK_LOGS.1 as u64);
        match key {
            "pin_host" => self.pin_host = flag(key, v)?,
            "copy_threads" => self.copy_threads = number(key, v, 0, 1024)? as usize,
            "device_h" => self.device_h = flag(key, v)?,
            "device_eval" => self.device_eval = flag(key, v)?,
            "residency" => self.residency = flag(key, v)?,
            "ntt_passes" => {
                self.ntt_passes = match v {
                    "radix" => NttPasses::Radix,
                    "fused" => NttPasses::Fused,
                    "fused_capped" => NttPasses::FusedCapped,
                    _ => return Err(format!("GPU tuning ntt_passes={v}: expected radix, fused or fused_capped")),
                }
            }
            "ntt_max_log_radix" => self.ntt_max_log_radix = number(key, v, 1, 4)? as u32,
            "msm_window" => self.msm_window = optional(key, v, w0, w1)?,
            "msm_wide_window" => self.msm_wide_window = optional(key, v, w0, w1)?,
            "msm_max_chunk_log" => self.msm_max_chunk_log = optional(key, v, c0, c1)?,
            "msm_upload_chunk_log" => self.msm_upload_chunk_log = optional(key, v, c0, c1)?,
            "msm_derived_keys" => self.msm_derived_keys = flag(key, v)?,
            "msm_batch_levels" => self.msm_batch_levels = number(key, v, 0, MAX_BATCH_LEVELS as u64)? as u32,
            "msm_batch_min_log" => self.msm_batch_min_log = number(key, v, 0, 40)? as u32,
            "msm_ba_group" => self.msm_ba_group = number(key, v, BA_GROUPS.0 as u64, BA_GROUPS.1 as u64)? as usize,
            "msm_multiples" => self.msm_multiples = number(key, v, 1, MAX_MULTIPLES as u64)? as u32,
            "msm_scatter_per_set" => self.msm_scatter_per_set = flag(key, v)?,
            _ => {
                return Err(format!(
                    "unknown GPU tuning key {key:?} (in {key}={v}); the keys are {}",
                    Self::KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }
}

fn flag(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!("GPU tuning {key}={v}: expected true or false (or 1, 0)")),
    }
}

fn number(key: &str, v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("GPU tuning {key}={v}: expected a whole number from {lo} to {hi}")),
    }
}

fn optional(key: &str, v: &str, lo: u64, hi: u64) -> Result<Option<u32>, String> {
    if v == "none" {
        return Ok(None);
    }
    number(key, v, lo, hi)
        .map(|n| Some(n as u32))
        .map_err(|e| format!("{e}, or none (the plan's rule)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key sets its field, within its bounds; the bounds' edges are taken.
    #[test]
    fn set_takes_every_key_within_its_bounds() {
        let mut t = GpuTuning::default();
        for (k, v) in [
            ("pin_host", "true"),
            ("copy_threads", "8"),
            ("device_h", "0"),
            ("device_eval", "false"),
            ("residency", "false"),
            ("ntt_passes", "radix"),
            ("ntt_max_log_radix", "4"),
            ("msm_window", "22"),
            ("msm_wide_window", "4"),
            ("msm_max_chunk_log", "10"),
            ("msm_upload_chunk_log", "30"),
            ("msm_derived_keys", "false"),
            ("msm_batch_levels", "12"),
            ("msm_batch_min_log", "0"),
            ("msm_ba_group", "64"),
            ("msm_multiples", "16"),
            ("msm_scatter_per_set", "true"),
        ] {
            t.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        let want = GpuTuning {
            pin_host: true,
            copy_threads: 8,
            device_h: false,
            device_eval: false,
            residency: false,
            ntt_passes: NttPasses::Radix,
            ntt_max_log_radix: 4,
            msm_window: Some(22),
            msm_wide_window: Some(4),
            msm_max_chunk_log: Some(10),
            msm_upload_chunk_log: Some(30),
            msm_derived_keys: false,
            msm_batch_levels: 12,
            msm_batch_min_log: 0,
            msm_ba_group: 64,
            msm_multiples: 16,
            msm_scatter_per_set: true,
        };
        assert_eq!(t, want);
        t.set("msm_window", "none").unwrap();
        t.set("ntt_passes", "fused_capped").unwrap();
        assert_eq!((t.msm_window, t.ntt_passes), (None, NttPasses::FusedCapped));
        assert_eq!(GpuTuning::KEYS.len(), 17, "a key per field");
    }

    /// Out of bounds, malformed or unknown: refused with the key and what it takes, the
    /// tuning unchanged.
    #[test]
    fn set_refuses_what_is_out_of_bounds_or_unknown() {
        let mut t = GpuTuning::default();
        for (k, v, says) in [
            ("msm_max_chunk_log", "40", "msm_max_chunk_log=40: expected a whole number from 10 to 30, or none"),
            ("msm_window", "3", "from 4 to 22"),
            ("msm_batch_levels", "13", "from 0 to 12"),
            ("msm_ba_group", "4", "from 8 to 64"),
            ("msm_multiples", "0", "msm_multiples=0: expected a whole number from 1 to 16"),
            ("ntt_max_log_radix", "0", "from 1 to 4"),
            ("h_overlap", "false", "unknown GPU tuning key \"h_overlap\""),
            ("pin_host", "yes", "pin_host=yes: expected true or false"),
            ("ntt_passes", "2", "expected radix, fused or fused_capped"),
            ("copy_threads", "-1", "copy_threads=-1"),
        ] {
            let e = t.set(k, v).unwrap_err();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
        let e = t.set("nope", "1").unwrap_err();
        assert!(GpuTuning::KEYS.iter().all(|k| e.contains(k)), "the message lists the keys: {e}");
        assert_eq!(t, GpuTuning::default());
    }
}
