//! What the engine counts for its metrics: jobs ended per kind and outcome, and where the
//! time of partitions and jobs went, as histograms (Prometheus' cumulative buckets). Kept
//! in the scheduler's state, copied into [`crate::EngineStatus`], rendered by
//! [`crate::metrics`]. Counts start at zero with the process, as Prometheus counters do.

use std::time::Duration;

use crate::job::{JobStatus, ProofKind, StageTimings};

/// A histogram of seconds over fixed upper bounds (the `+Inf` bucket is `count`).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    pub bounds: &'static [f64],
    /// Observations at most `bounds[i]`, per bound (not cumulative; the renderer sums).
    pub counts: Vec<u64>,
    pub count: u64,
    pub sum: f64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: vec![0; bounds.len()], count: 0, sum: 0.0 }
    }

    pub fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|&b| s <= b) {
            self.counts[i] += 1;
        }
        self.count += 1;
        self.sum += s;
    }

    /// Cumulative counts per bound, as Prometheus' `_bucket{le=...}` lines carry them.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.bounds.iter().zip(self.counts.iter().scan(0u64, |acc, &c| {
            *acc += c;
            Some(*acc)
        })).map(|(&b, c)| (b, c))
    }
}

/// Seconds: a 2 KiB partition takes milliseconds, a 32 GiB one seconds; a stalled one shows
/// in the top buckets.
const PARTITION_BOUNDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 300.0];
/// Seconds: a WinningPoSt takes about a second, a 32 GiB PoRep half a minute alone and
/// minutes behind a queue.
const JOB_BOUNDS: &[f64] = &[0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];

/// The stages of one partition, in the order they happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionStage {
    /// Witness synthesis on a synthesis thread.
    Synthesis,
    /// Synthesized, waiting for a worker of a healthy device.
    SynthesizedWait,
    /// The proof on the worker (parameter loading excluded).
    Prove,
    /// Inside the backend's kernels, part of `Prove`.
    GpuCompute,
}

impl PartitionStage {
    pub const ALL: [PartitionStage; 4] =
        [PartitionStage::Synthesis, PartitionStage::SynthesizedWait, PartitionStage::Prove, PartitionStage::GpuCompute];

    pub fn name(self) -> &'static str {
        match self {
            PartitionStage::Synthesis => "synthesis",
            PartitionStage::SynthesizedWait => "synthesized_wait",
            PartitionStage::Prove => "prove",
            PartitionStage::GpuCompute => "gpu_compute",
        }
    }
}

/// The stages of a completed job as a whole (its [`StageTimings`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStage {
    QueueWait,
    SrsLoad,
    Verify,
    Total,
}

impl JobStage {
    pub const ALL: [JobStage; 4] = [JobStage::QueueWait, JobStage::SrsLoad, JobStage::Verify, JobStage::Total];

    pub fn name(self) -> &'static str {
        match self {
            JobStage::QueueWait => "queue_wait",
            JobStage::SrsLoad => "srs_load",
            JobStage::Verify => "verify",
            JobStage::Total => "total",
        }
    }

    fn of(self, t: &StageTimings) -> Duration {
        match self {
            JobStage::QueueWait => t.queue_wait,
            JobStage::SrsLoad => t.srs_load,
            JobStage::Verify => t.verify,
            JobStage::Total => t.total,
        }
    }
}

/// One proof kind's counts.
#[derive(Clone, Debug, PartialEq)]
pub struct KindStats {
    pub kind: ProofKind,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// By [`PartitionStage::ALL`]'s order.
    pub partition: Vec<Histogram>,
    /// By [`JobStage::ALL`]'s order; completed jobs only.
    pub job: Vec<Histogram>,
}

/// Every kind's counts, in [`ProofKind::ALL`]'s order.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub kinds: Vec<KindStats>,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            kinds: ProofKind::ALL
                .iter()
                .map(|&kind| KindStats {
                    kind,
                    completed: 0,
                    failed: 0,
                    cancelled: 0,
                    partition: PartitionStage::ALL.iter().map(|_| Histogram::new(PARTITION_BOUNDS)).collect(),
                    job: JobStage::ALL.iter().map(|_| Histogram::new(JOB_BOUNDS)).collect(),
                })
                .collect(),
        }
    }
}

impl Stats {
    fn kind(&mut self, kind: ProofKind) -> &mut KindStats {
        let i = ProofKind::ALL.iter().position(|&k| k == kind).unwrap_or(0);
        &mut self.kinds[i]
    }

    pub fn partition(&mut self, kind: ProofKind, stage: PartitionStage, d: Duration) {
        let i = PartitionStage::ALL.iter().position(|&s| s == stage).unwrap_or(0);
        self.kind(kind).partition[i].observe(d);
    }

    /// A job ended: its outcome, and for a completed one where its time went.
    pub fn job_ended(&mut self, kind: ProofKind, status: JobStatus, timings: &StageTimings) {
        let k = self.kind(kind);
        match status {
            JobStatus::Completed => {
                k.completed += 1;
                for (h, stage) in k.job.iter_mut().zip(JobStage::ALL) {
                    h.observe(stage.of(timings));
                }
            }
            JobStatus::Failed => k.failed += 1,
            JobStatus::Cancelled => k.cancelled += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_count_every_observation() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        for ms in [500, 1000, 1500, 2500] {
            h.observe(Duration::from_millis(ms));
        }
        assert_eq!(h.cumulative().collect::<Vec<_>>(), [(1.0, 2), (2.0, 3)]);
        assert_eq!(h.count, 4, "the +Inf bucket holds the 2.5 s one too");
        assert!((h.sum - 5.5).abs() < 1e-9);
    }

    #[test]
    fn a_completed_job_counts_its_stages_a_failed_one_only_its_outcome() {
        let mut s = Stats::default();
        let t = StageTimings { total: Duration::from_secs(3), ..Default::default() };
        s.job_ended(ProofKind::WinningPost, JobStatus::Completed, &t);
        s.job_ended(ProofKind::WinningPost, JobStatus::Failed, &t);
        let w = &s.kinds[ProofKind::ALL.iter().position(|&k| k == ProofKind::WinningPost).unwrap()];
        assert_eq!((w.completed, w.failed, w.cancelled), (1, 1, 0));
        assert_eq!(w.job[3].count, 1);
        assert_eq!(w.job[3].cumulative().find(|&(b, _)| b == 5.0), Some((5.0, 1)));
        assert!(s.kinds.iter().filter(|k| k.kind != ProofKind::WinningPost).all(|k| k.completed + k.failed == 0));
    }
}
