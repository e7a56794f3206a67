//! An MSM call's kernel time by phase, as trace-level log lines (`RUST_LOG=cuzk_gpu=trace`;
//! it replaces the `CUZK_MSM_PROFILE` switch, which replaced `CUZK_MSM_BA_PROFILE`). With
//! trace off it records nothing: no events, no formatting.

use crate::device::{Event, Gpu};
use crate::error::GpuError;

/// Kernel phases of an MSM call.
#[derive(Clone, Copy)]
pub(crate) enum Phase {
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

/// An event on the compute stream after each phase; the milliseconds summed per phase over
/// the call's chunks and logged at trace level when the call ends.
pub(crate) struct Profile {
    marks: Option<Vec<(Phase, Event)>>,
}

impl Profile {
    /// A profile that records when trace logging is on for this module.
    pub(crate) fn start(gpu: &Gpu) -> Result<Self, GpuError> {
        let mut p = Profile { marks: log::log_enabled!(log::Level::Trace).then(Vec::new) };
        p.mark(gpu, Phase::Other)?;
        Ok(p)
    }

    /// The work queued since the previous mark belongs to `phase`.
    pub(crate) fn mark(&mut self, gpu: &Gpu, phase: Phase) -> Result<(), GpuError> {
        if let Some(m) = self.marks.as_mut() {
            let e = Event::new(true)?;
            e.record(gpu.stream())?;
            m.push((phase, e));
        }
        Ok(())
    }

    /// Milliseconds per phase, logged after `what()` (after the stream is synchronized).
    pub(crate) fn report(&self, what: impl FnOnce() -> String) -> Result<(), GpuError> {
        let Some(m) = self.marks.as_ref() else { return Ok(()) };
        let mut ms = [0f64; PHASE_NAMES.len()];
        for w in m.windows(2) {
            ms[w[1].0 as usize] += w[1].1.since(&w[0].1)?.as_secs_f64() * 1e3;
        }
        let parts: Vec<String> =
            PHASE_NAMES.iter().zip(ms).filter(|(_, v)| *v > 0.0).map(|(name, v)| format!("{name} {v:.1}")).collect();
        log::trace!("msm profile ({}), ms: {}", what(), parts.join(", "));
        Ok(())
    }
}
