//! Queue and budget: what is waiting, what has started, what each thread takes next, and the
//! host memory every partition reserves. Pure state behind the engine's one mutex: nothing
//! here blocks, does I/O or runs a runner stage, so the order rules are unit-tested below
//! without threads.
//!
//! The unit of work is the partition. A job is *queued* until its first partition starts,
//! then *active* until it ends. Order everywhere is [`QueueKey`]: priority, then acceptance
//! order, then (for partitions) the partition index.
//!
//! - Synthesis threads take [`SynthesisTask`]s in that order over the active jobs and the
//!   first queued one: the next partition of the highest job that has one, or a job's last
//!   step (`finish`) once all its partitions are proved. Only the first queued job may
//!   start (strict priority: a job never starts before a queued job of higher priority or
//!   an earlier one of the same).
//! - Each partition reserves the plan's `partition_bytes` before its synthesis and returns it
//!   when its proof is done; a job's first partition also reserves `job_bytes`, held until
//!   the job ends. What does not fit waits at the head: nothing behind it takes memory,
//!   unless the memory in use is only what started jobs hold until they end (their
//!   `job_bytes`, no partition in flight), which no waiting would return; then started jobs
//!   behind it go on (so that they can end and free it) and no new job starts.
//! - Workers take the synthesized partition of the highest job ([`SchedulerState::ready`]),
//!   so a higher-priority job's partitions go before a lower job's remaining ones.
//! - A failed or cancelled partition stops its job ([`SchedulerState::stop`]): the job's
//!   waiting partitions are dropped at once and their memory returned, no new partition of
//!   it starts, and the job ends when its last partition in flight has come back.
//! - A partition whose device failed ([`SchedulerState::partition_device_failed`]) is the
//!   device's failure, not the job's: the device is marked unhealthy (its workers take
//!   nothing more), the partition returns its memory and goes back to be synthesized again
//!   (its witness went into the failed proof), ahead of the job's other partitions, and is
//!   proved on a healthy device. After as many device failures as there are devices, the
//!   job fails naming each. While no device is healthy no job starts.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::Srs;
use tokio::sync::watch;

use crate::job::{JobRequest, JobResult, JobState, JobStatus, Priority, ProofKind, StageTimings};
use crate::runner::{CancelToken, JobPlan, PartitionProof, PartitionWork, PreparedJob};

/// The parameters resident in host memory, as the budget sees them.
pub(crate) trait ParamsView {
    /// Bytes of every resident parameter set.
    fn resident_bytes(&self) -> u64;
    /// Whether `circuit_id`'s parameters are resident.
    fn is_resident(&self, circuit_id: &str) -> bool;
    /// `circuit_id`'s parameters, held for a job, when resident.
    fn hold(&self, circuit_id: &str) -> Option<Arc<Srs>>;
}

impl ParamsView for crate::residency::Residency<Srs> {
    fn resident_bytes(&self) -> u64 {
        crate::residency::Residency::resident_bytes(self)
    }
    fn is_resident(&self, circuit_id: &str) -> bool {
        self.is_loaded(circuit_id)
    }
    fn hold(&self, circuit_id: &str) -> Option<Arc<Srs>> {
        self.get(circuit_id)
    }
}

/// The order of jobs: higher priority first, then earlier acceptance; the id makes keys
/// unique.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct QueueKey {
    pub priority: Reverse<Priority>,
    pub seq: u64,
    pub job_id: String,
}

/// One accepted job, from submission until its result expires.
pub(crate) struct JobEntry {
    pub kind: ProofKind,
    pub priority: Priority,
    pub seq: u64,
    /// [`JobRequest::content_digest`]: the same id with other content is another request.
    /// `None` only for results stored before digests existed.
    pub digest: Option<String>,
    /// Payload bytes counted in `SchedulerState::spool_bytes` until the job ends.
    pub payload_bytes: u64,
    /// In memory when small; else read back from the spool when needed.
    pub request: Option<Arc<JobRequest>>,
    pub state: JobState,
    /// In the queued set (false while its request is being written).
    pub spooled: bool,
    pub cancel: CancelToken,
    pub plan: Option<JobPlan>,
    pub planning: bool,
    /// Present from the start of the first partition until the job ends.
    pub run: Option<JobRun>,
    pub attempts: u32,
    pub accepted: Instant,
    pub timings: StageTimings,
    /// The device of the partition that last started proving.
    pub device: Option<usize>,
    pub result: Option<Arc<JobResult>>,
    pub expires_unix_ms: u64,
    pub watch: watch::Sender<Option<Arc<JobResult>>>,
}

impl JobEntry {
    pub fn new(kind: ProofKind, priority: Priority, seq: u64, request: Option<Arc<JobRequest>>) -> JobEntry {
        JobEntry {
            kind,
            priority,
            seq,
            digest: None,
            payload_bytes: 0,
            request,
            state: JobState::Queued,
            spooled: false,
            cancel: CancelToken::default(),
            plan: None,
            planning: false,
            run: None,
            attempts: 0,
            accepted: Instant::now(),
            timings: StageTimings::default(),
            device: None,
            result: None,
            expires_unix_ms: 0,
            watch: watch::channel(None).0,
        }
    }

    pub fn key(&self, id: &str) -> QueueKey {
        QueueKey { priority: Reverse(self.priority), seq: self.seq, job_id: id.to_string() }
    }

    /// Started and not ended.
    pub fn in_flight(&self) -> bool {
        matches!(self.state, JobState::Synthesizing | JobState::Synthesized | JobState::Proving)
    }
}

/// A started job's partitions.
pub(crate) struct JobRun {
    /// `None` while `prepare` runs (on the thread that then synthesizes partition 0).
    pub prepared: Option<Arc<dyn PreparedJob>>,
    pub partitions: usize,
    pub partition_bytes: u64,
    pub job_bytes: u64,
    /// The next partition whose synthesis has not started.
    pub next_partition: usize,
    /// Partitions to synthesize again, before `next_partition`: their device failed under
    /// their proof.
    pub redo: BTreeSet<usize>,
    /// Each partition's device failures so far: (device name, error).
    pub device_failures: HashMap<usize, Vec<(String, String)>>,
    /// Synthesized partitions waiting for a worker, with the time they became ready.
    pub ready: BTreeMap<usize, (PartitionWork, Instant)>,
    pub proofs: Vec<Option<PartitionProof>>,
    pub proved: usize,
    pub synthesizing: usize,
    pub proving: usize,
    pub finishing: bool,
    /// Bytes this job holds in the budget now.
    pub reserved: u64,
    /// Why the job stops (the first failed partition, a cancel, a shutdown); it ends once
    /// no thread works on it.
    pub stop: Option<(JobStatus, String)>,
    /// The job's parameters, held from its first proof to its end (so they are neither
    /// evicted nor loaded twice under it).
    pub srs: Option<Arc<Srs>>,
}

impl JobRun {
    fn new(plan: &JobPlan) -> JobRun {
        JobRun {
            prepared: None,
            partitions: plan.partitions,
            partition_bytes: plan.partition_bytes,
            job_bytes: plan.job_bytes,
            next_partition: 0,
            redo: BTreeSet::new(),
            device_failures: HashMap::new(),
            ready: BTreeMap::new(),
            proofs: (0..plan.partitions).map(|_| None).collect(),
            proved: 0,
            synthesizing: 0,
            proving: 0,
            finishing: false,
            reserved: 0,
            stop: None,
            srs: None,
        }
    }

    /// No thread works on this job now.
    pub fn idle(&self) -> bool {
        self.synthesizing == 0 && self.proving == 0 && !self.finishing
    }
}

/// What a synthesis thread does next.
pub(crate) enum SynthesisTask {
    /// Plan the first queued job.
    Plan { id: String, request: Option<Arc<JobRequest>> },
    /// Fail a job that can never fit.
    Fail { id: String, message: String },
    /// Start a job: its first partition is reserved; prepare it, then synthesize partition 0.
    Prepare { id: String },
    Synthesize { id: String, partition: usize, job: Arc<dyn PreparedJob>, cancel: CancelToken },
    /// Every partition is proved: assemble and verify.
    Finish { id: String, job: Arc<dyn PreparedJob>, proofs: Vec<PartitionProof>, cancel: CancelToken },
}

/// What a worker proves next.
pub(crate) struct ProveTask {
    pub id: String,
    pub kind: ProofKind,
    pub partition: usize,
    pub job: Arc<dyn PreparedJob>,
    pub work: PartitionWork,
    pub srs: Option<crate::runner::SrsRef>,
    pub cancel: CancelToken,
    /// The job's first partition to prove: its state becomes Proving.
    pub first: bool,
}

/// How a partition came back from a thread (a failure: [`SchedulerState::partition_failed`]).
pub(crate) enum PartitionOutcome {
    Synthesized(PartitionWork),
    Proved(PartitionProof),
}

/// Whether a device takes partitions. A device failure marks it unhealthy; a reconfigure
/// that gives it workers marks it healthy again (`Engine::reconfigure`).
#[derive(Clone, Debug)]
pub(crate) struct DeviceHealth {
    pub healthy: bool,
    /// The last device failure, kept after the device is healthy again.
    pub last_error: Option<String>,
    /// Device failures since the engine started.
    pub failures: u64,
}

impl DeviceHealth {
    pub fn healthy() -> DeviceHealth {
        DeviceHealth { healthy: true, last_error: None, failures: 0 }
    }
}

/// A partition's failure message: the partition named when the job has more than one.
pub(crate) fn partition_message(partition: usize, partitions: usize, e: &dyn Display) -> String {
    if partitions > 1 {
        format!("partition {partition} of {partitions}: {e}")
    } else {
        e.to_string()
    }
}

/// Every job and the engine's scheduling state.
#[derive(Default)]
pub(crate) struct SchedulerState {
    pub jobs: HashMap<String, JobEntry>,
    /// Accepted jobs whose first partition has not started.
    pub queued: BTreeSet<QueueKey>,
    /// Started jobs that have not ended.
    pub active: BTreeSet<QueueKey>,
    /// Synthesized partitions waiting for a worker.
    pub ready: BTreeSet<(QueueKey, usize)>,
    pub mem_in_use: u64,
    pub mem_high_water: u64,
    /// The part of `mem_in_use` that started jobs hold until they end (their `job_bytes`).
    pub job_bytes_in_use: u64,
    /// Parameters not resident yet, reserved (bytes, by circuit id) by the job that started
    /// first needing them, until their load has ended.
    pub params_loading: HashMap<String, u64>,
    /// How many bytes the last synthesis pick lacked, and the parameters it needs (to keep
    /// when evicting idle ones for room); zero when it was not short of memory.
    pub memory_wanted: (u64, Option<String>),
    /// Payload bytes of accepted jobs without a result (admission: `max_spool_bytes`).
    pub spool_bytes: u64,
    pub paused: bool,
    pub draining: bool,
    pub stopping: bool,
    pub next_seq: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Jobs ended per kind and where partitions' and jobs' time went (the metrics).
    pub stats: crate::stats::Stats,
    /// The job and partition each worker slot proves now.
    pub worker_jobs: Vec<Option<(String, usize)>>,
    /// The device of each worker slot.
    pub worker_device: Vec<usize>,
    /// Worker slots retired by a reload: each leaves once its partition (if any) is done.
    pub worker_retired: Vec<bool>,
    /// Each device's health, by device index (empty: every device is healthy).
    pub device_health: Vec<DeviceHealth>,
    /// Synthesis threads wanted per lane (`Lane::index`; a reload changes them); thread i
    /// of a lane leaves when i >= its target.
    pub synth_target: [usize; 2],
    /// Which synthesis thread indices run, per lane.
    pub synth_alive: [Vec<bool>; 2],
    pub live_threads: usize,
}

/// Which jobs a synthesis thread takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Any job (`synthesis_workers`).
    All,
    /// Only jobs of priority High or Critical (`urgent_synthesis_workers`); its first
    /// thread only Critical ones ([`Lane::takes`]).
    Urgent,
}

impl Lane {
    pub const BOTH: [Lane; 2] = [Lane::All, Lane::Urgent];

    /// Its slot in [`SchedulerState::synth_target`] and `synth_alive`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether thread `index` of this lane takes a job of `priority`. The urgent lane's
    /// first thread is kept for Critical jobs (WinningPoSt, due within seconds): a 32 GiB
    /// WindowPoSt partition (High) takes 27 s to synthesize alone on 16 cores (27-63 s beside
    /// other synthesis), and a WinningPoSt that found the lane's only thread inside one
    /// waited 38 s (bench/runs/2026-12-06-h100-window-lane/). High jobs take the lane's other threads
    /// and, ahead of every Normal or Low job, the bulk threads.
    pub fn takes(self, index: usize, priority: Priority) -> bool {
        match self {
            Lane::All => true,
            Lane::Urgent if index == 0 => priority >= Priority::Critical,
            Lane::Urgent => priority >= Priority::High,
        }
    }

    /// Its threads' name prefix.
    pub fn thread_name(self) -> &'static str {
        match self {
            Lane::All => "cuzk-synth",
            Lane::Urgent => "cuzk-urgent",
        }
    }
}

impl SchedulerState {
    fn reserve(&mut self, bytes: u64) {
        self.mem_in_use = self.mem_in_use.saturating_add(bytes);
        self.mem_high_water = self.mem_high_water.max(self.mem_in_use);
    }

    fn release(&mut self, bytes: u64) {
        self.mem_in_use = self.mem_in_use.saturating_sub(bytes);
    }

    /// Whether device `device`'s workers take partitions.
    pub fn device_healthy(&self, device: usize) -> bool {
        self.device_health.get(device).is_none_or(|h| h.healthy)
    }

    /// The devices that prove: those with a worker that is not retired.
    fn working_devices(&self) -> BTreeSet<usize> {
        (0..self.worker_device.len()).filter(|&w| !self.worker_retired[w]).map(|w| self.worker_device[w]).collect()
    }

    /// Whether a device with workers takes partitions (no job starts while none does).
    pub fn any_device_healthy(&self) -> bool {
        self.device_health.is_empty() || self.working_devices().into_iter().any(|d| self.device_healthy(d))
    }

    /// Returns one partition's reservation of job `id`.
    fn release_partition(&mut self, id: &str) {
        let Some(run) = self.jobs.get_mut(id).and_then(|j| j.run.as_mut()) else { return };
        let bytes = run.partition_bytes.min(run.reserved);
        run.reserved -= bytes;
        self.release(bytes);
    }

    /// [`SchedulerState::next_synthesis_task_in`] for a thread of [`Lane::All`] (tests).
    #[cfg(test)]
    pub fn next_synthesis_task(&mut self, budget: u64, params: &dyn ParamsView) -> Option<SynthesisTask> {
        self.next_synthesis_task_in(budget, 0, params, Lane::All, 0)
    }

    /// The next task for a synthesis thread of `lane` within `budget` bytes, which resident
    /// parameters (`params`), parameters being loaded and what the runner holds outside every
    /// reservation (`runner_held`, [`crate::ProofRunner::held_bytes`]: compiled circuits)
    /// share with partitions; reserves
    /// what it needs. Thread `index` of an urgent lane passes over every job it does not
    /// take ([`Lane::takes`]). When it returns `None` for want of memory, `memory_wanted`
    /// says how much.
    pub fn next_synthesis_task_in(
        &mut self,
        budget: u64,
        runner_held: u64,
        params: &dyn ParamsView,
        lane: Lane,
        index: usize,
    ) -> Option<SynthesisTask> {
        self.memory_wanted = (0, None);
        let loading: u64 = self.params_loading.values().sum();
        let params_bytes = params.resident_bytes().saturating_add(loading);
        let full_budget = budget;
        // What the runner holds is taken off while some partition is in memory (it comes back):
        // it bounds how far synthesis runs ahead, never whether a partition can start at all.
        // Memory that comes back without a new partition starting (some partition is in
        // flight or waiting for a worker): worth waiting for.
        let returns = self.mem_in_use > self.job_bytes_in_use;
        let held = if returns { runner_held } else { 0 };
        let budget = budget.saturating_sub(params_bytes).saturating_sub(held);
        // Idle parameters are evicted only for what partitions lack beside them, never for
        // the runner's share: that shortfall waits for the partitions in flight.
        let evict_over = budget.saturating_add(held);
        let mut may_start = !self.paused && !self.draining && !self.stopping && self.any_device_healthy();
        let head = if may_start { self.queued.first().cloned() } else { None };
        let mut order: Vec<QueueKey> = self.active.iter().cloned().collect();
        if let Some(head) = head {
            let at = order.partition_point(|k| *k < head);
            order.insert(at, head);
        }
        for key in order {
            if !lane.takes(index, key.priority.0) {
                continue;
            }
            let id = key.job_id.clone();
            let in_use = self.mem_in_use;
            let Some(job) = self.jobs.get_mut(&id) else { continue };
            let Some(run) = job.run.as_mut() else {
                // The first queued job.
                if !may_start {
                    continue;
                }
                let Some(plan) = &job.plan else {
                    if job.planning {
                        continue;
                    }
                    job.planning = true;
                    return Some(SynthesisTask::Plan { id, request: job.request.clone() });
                };
                if plan.partitions == 0 {
                    return Some(SynthesisTask::Fail { id, message: "engine fault: the job's plan has no partitions".into() });
                }
                let need = plan.job_bytes.saturating_add(plan.partition_bytes);
                // Its parameters, unless resident or already reserved by another job.
                let circuit = plan.srs.as_ref().map(|r| r.circuit_id.clone());
                let load = match &plan.srs {
                    Some(r) if !params.is_resident(&r.circuit_id) && !self.params_loading.contains_key(&r.circuit_id) => r.bytes,
                    _ => 0,
                };
                let params_needed = plan.srs.as_ref().map_or(0, |r| r.bytes);
                if need.saturating_add(params_needed) > full_budget {
                    return Some(SynthesisTask::Fail { id, message: too_large(plan, full_budget) });
                }
                if in_use.saturating_add(need).saturating_add(load) > budget {
                    want(&mut self.memory_wanted, in_use.saturating_add(need).saturating_add(load).saturating_sub(evict_over), circuit);
                    if returns {
                        return None;
                    }
                    may_start = false;
                    continue;
                }
                let mut run = JobRun::new(plan);
                run.srs = circuit.as_deref().and_then(|c| params.hold(c));
                if load > 0 {
                    if let Some(c) = &circuit {
                        self.params_loading.insert(c.clone(), load);
                    }
                }
                run.next_partition = 1;
                run.synthesizing = 1;
                run.reserved = need;
                let job_bytes = run.job_bytes;
                job.run = Some(run);
                job.state = JobState::Synthesizing;
                job.attempts += 1;
                job.timings.queue_wait = job.accepted.elapsed();
                self.queued.remove(&key);
                self.active.insert(key);
                self.reserve(need);
                self.job_bytes_in_use += job_bytes;
                return Some(SynthesisTask::Prepare { id });
            };
            if run.stop.is_some() {
                continue;
            }
            if run.proved == run.partitions {
                if run.finishing {
                    continue;
                }
                let Some(prepared) = run.prepared.clone() else { continue };
                run.finishing = true;
                let proofs = run.proofs.iter_mut().filter_map(Option::take).collect();
                return Some(SynthesisTask::Finish { id, job: prepared, proofs, cancel: job.cancel.clone() });
            }
            let Some(prepared) = run.prepared.clone() else { continue };
            if run.redo.is_empty() && run.next_partition >= run.partitions {
                continue;
            }
            let own_params = job.plan.as_ref().and_then(|p| p.srs.as_ref()).map_or(0, |r| r.bytes);
            if run.partition_bytes.saturating_add(run.job_bytes).saturating_add(own_params) > full_budget {
                // Only after a lower budget (reconfigure): this job can never go on.
                let message = format!(
                    "host_memory_budget_bytes was lowered to {full_budget} while the job ran; its \
                     partitions need {} bytes each (and {} for the job, {own_params} for its \
                     parameters); raise the budget",
                    run.partition_bytes, run.job_bytes
                );
                return Some(SynthesisTask::Fail { id, message });
            }
            if in_use.saturating_add(run.partition_bytes) > budget {
                let circuit = job.plan.as_ref().and_then(|p| p.srs.as_ref()).map(|r| r.circuit_id.clone());
                want(&mut self.memory_wanted, in_use.saturating_add(run.partition_bytes).saturating_sub(evict_over), circuit);
                if returns {
                    return None;
                }
                may_start = false;
                continue;
            }
            let partition = run.redo.pop_first().unwrap_or_else(|| {
                run.next_partition += 1;
                run.next_partition - 1
            });
            run.synthesizing += 1;
            run.reserved += run.partition_bytes;
            let bytes = run.partition_bytes;
            let cancel = job.cancel.clone();
            self.reserve(bytes);
            return Some(SynthesisTask::Synthesize { id, partition, job: prepared, cancel });
        }
        None
    }

    /// The synthesized partition of the highest job, for a worker on `device`.
    pub fn next_prove_task(&mut self, device: usize) -> Option<ProveTask> {
        while let Some((key, partition)) = self.ready.pop_first() {
            let Some(job) = self.jobs.get_mut(&key.job_id) else { continue };
            let Some(run) = job.run.as_mut() else { continue };
            let (Some((work, ready_at)), Some(prepared)) = (run.ready.remove(&partition), run.prepared.clone())
            else {
                continue;
            };
            run.proving += 1;
            let waited = ready_at.elapsed();
            job.timings.synthesized_wait += waited;
            job.device = Some(device);
            let first = job.state != JobState::Proving;
            job.state = JobState::Proving;
            let task = ProveTask {
                id: key.job_id,
                kind: job.kind,
                partition,
                job: prepared,
                work,
                srs: job.plan.as_ref().and_then(|p| p.srs.clone()),
                cancel: job.cancel.clone(),
                first,
            };
            self.stats.partition(task.kind, crate::stats::PartitionStage::SynthesizedWait, waited);
            return Some(task);
        }
        None
    }

    /// Job `id`'s prepared job, once `prepare` returned; `false` when the job stopped
    /// meanwhile (the caller then skips partition 0).
    pub fn prepared(&mut self, id: &str, job: Arc<dyn PreparedJob>) -> bool {
        let Some(run) = self.jobs.get_mut(id).and_then(|j| j.run.as_mut()) else { return false };
        run.prepared = Some(job);
        run.stop.is_none()
    }

    /// Partition `partition` of job `id` came back from a synthesis thread or a worker.
    /// Returns the job's state when it changed (to announce), and whether the job is to end
    /// now, with how.
    pub fn partition_done(
        &mut self,
        id: &str,
        partition: usize,
        outcome: PartitionOutcome,
    ) -> (Option<JobState>, Option<(JobStatus, String)>) {
        let mut changed = None;
        let mut release = false;
        {
            let Some(job) = self.jobs.get_mut(id) else { return (None, None) };
            let key = job.key(id);
            let Some(run) = job.run.as_mut() else { return (None, None) };
            match outcome {
                PartitionOutcome::Synthesized(work) => {
                    run.synthesizing = run.synthesizing.saturating_sub(1);
                    if run.stop.is_some() {
                        release = true;
                    } else {
                        run.ready.insert(partition, (work, Instant::now()));
                        self.ready.insert((key, partition));
                        if job.state == JobState::Synthesizing {
                            job.state = JobState::Synthesized;
                            changed = Some(JobState::Synthesized);
                        }
                    }
                }
                PartitionOutcome::Proved(proof) => {
                    run.proving = run.proving.saturating_sub(1);
                    release = true;
                    if let Some(slot) = run.proofs.get_mut(partition) {
                        if slot.replace(proof).is_none() {
                            run.proved += 1;
                        }
                    }
                }
            }
        }
        if release {
            self.release_partition(id);
        }
        (changed, self.end_if_stopped(id))
    }

    /// A partition failure of job `id` in a known stage (`proving`: on a worker).
    pub fn partition_failed(
        &mut self,
        id: &str,
        proving: bool,
        message: String,
    ) -> Option<(JobStatus, String)> {
        if let Some(run) = self.jobs.get_mut(id).and_then(|j| j.run.as_mut()) {
            if proving {
                run.proving = run.proving.saturating_sub(1);
            } else {
                run.synthesizing = run.synthesizing.saturating_sub(1);
            }
        }
        self.release_partition(id);
        self.stop(id, JobStatus::Failed, message);
        self.end_if_stopped(id)
    }

    /// Partition `partition` of job `id` failed on device `device` (named `device_name`)
    /// with `error`, a device failure: the device is marked unhealthy, the partition's memory
    /// comes back, and it is synthesized again and proved on a healthy device; unless it
    /// has now failed as many times as there are devices with workers, then its job stops, failed,
    /// naming every device and its error. Returns how the job ends, when it ends now.
    pub fn partition_device_failed(
        &mut self,
        id: &str,
        partition: usize,
        device: usize,
        device_name: &str,
        error: String,
    ) -> Option<(JobStatus, String)> {
        if let Some(h) = self.device_health.get_mut(device) {
            h.healthy = false;
            h.last_error = Some(error.clone());
            h.failures += 1;
        }
        let devices = self.working_devices().len().max(1);
        let run = self.jobs.get_mut(id)?.run.as_mut()?;
        run.proving = run.proving.saturating_sub(1);
        let failures = run.device_failures.entry(partition).or_default();
        failures.push((device_name.to_string(), error));
        let give_up = (failures.len() >= devices).then(|| {
            let each: Vec<String> = failures.iter().map(|(d, e)| format!("on {d}: {e}")).collect();
            let why = format!(
                "its device failed on each of its {} tries, the most for {devices} device(s): {}",
                failures.len(),
                each.join("; ")
            );
            partition_message(partition, run.partitions, &why)
        });
        if give_up.is_none() && run.stop.is_none() {
            run.redo.insert(partition);
        }
        self.release_partition(id);
        if let Some(message) = give_up {
            self.stop(id, JobStatus::Failed, message);
        }
        self.end_if_stopped(id)
    }

    /// Stops job `id` (the first reason wins): its cancel token is set, its waiting
    /// partitions are dropped and their memory returned, and no partition of it starts.
    pub fn stop(&mut self, id: &str, status: JobStatus, message: String) {
        let Some(job) = self.jobs.get_mut(id) else { return };
        let key = job.key(id);
        let Some(run) = job.run.as_mut() else { return };
        if run.stop.is_none() {
            run.stop = Some((status, message));
        }
        job.cancel.cancel();
        run.next_partition = run.partitions;
        run.redo.clear();
        let dropped: Vec<usize> = run.ready.keys().copied().collect();
        run.ready.clear();
        let bytes = (run.partition_bytes.saturating_mul(dropped.len() as u64)).min(run.reserved);
        run.reserved -= bytes;
        for k in dropped {
            self.ready.remove(&(key.clone(), k));
        }
        self.release(bytes);
    }

    /// How job `id` ends, when it has stopped and no thread works on it any more.
    pub fn end_if_stopped(&self, id: &str) -> Option<(JobStatus, String)> {
        let run = self.jobs.get(id)?.run.as_ref()?;
        if run.idle() {
            run.stop.clone()
        } else {
            None
        }
    }

    /// The load of `circuit_id`'s parameters has ended (they are resident now, or failed):
    /// their reservation is counted as resident parameters from here on.
    pub fn params_loaded(&mut self, circuit_id: &str) {
        self.params_loading.remove(circuit_id);
    }

    /// Removes job `id`'s run: every byte it still holds goes back to the budget, and so
    /// does a parameter reservation no other started job needs.
    pub fn end_run(&mut self, id: &str) {
        let Some(job) = self.jobs.get_mut(id) else { return };
        let key = job.key(id);
        let circuit = job.plan.as_ref().and_then(|p| p.srs.as_ref()).map(|r| r.circuit_id.clone());
        if let Some(run) = job.run.take() {
            for k in run.ready.keys() {
                self.ready.remove(&(key.clone(), *k));
            }
            self.release(run.reserved);
            self.job_bytes_in_use = self.job_bytes_in_use.saturating_sub(run.job_bytes);
        }
        self.active.remove(&key);
        self.queued.remove(&key);
        if let Some(circuit) = circuit {
            if self.jobs_using(&circuit).is_empty() {
                self.params_loading.remove(&circuit);
            }
        }
    }

    /// Ids of the started jobs whose plan names parameters `circuit_id`.
    pub fn jobs_using(&self, circuit_id: &str) -> Vec<String> {
        self.active
            .iter()
            .filter(|k| {
                self.jobs
                    .get(&k.job_id)
                    .and_then(|j| j.plan.as_ref())
                    .and_then(|p| p.srs.as_ref())
                    .is_some_and(|s| s.circuit_id == circuit_id)
            })
            .map(|k| k.job_id.clone())
            .collect()
    }

    /// 1-based position of a queued job (0 once it has started).
    pub fn queue_position(&self, id: &str) -> u32 {
        match self.jobs.get(id) {
            Some(j) if j.state == JobState::Queued => self.queued.range(..=j.key(id)).count() as u32,
            _ => 0,
        }
    }
}

/// Notes in `wanted` what the first (highest) work short of memory lacks.
fn want(wanted: &mut (u64, Option<String>), bytes: u64, keep: Option<String>) {
    if wanted.0 == 0 {
        *wanted = (bytes, keep);
    }
}

/// The refusal of a job that cannot fit the whole budget.
fn too_large(plan: &JobPlan, budget: u64) -> String {
    format!(
        "the job needs {} bytes of host memory for one partition's synthesis and proof (and {} \
         for the job, {} for its parameters), more than host_memory_budget_bytes = {budget}; \
         raise the budget",
        plan.partition_bytes,
        plan.job_bytes,
        plan.srs.as_ref().map_or(0, |r| r.bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RunError;
    use crate::runner::{ProofOutput, ProveContext};

    struct Nothing;
    impl PreparedJob for Nothing {
        fn partitions(&self) -> usize {
            0
        }
        fn synthesize(&self, _: usize, _: &CancelToken) -> Result<PartitionWork, RunError> {
            Ok(PartitionWork::default())
        }
        fn prove(&self, _: usize, _: PartitionWork, _: ProveContext<'_>) -> Result<PartitionProof, RunError> {
            Err(RunError::Prove("not here".into()))
        }
        fn finish(&self, _: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
            Ok(ProofOutput::default())
        }
    }

    /// Parameters as the budget sees them: `bytes` resident, of the circuits named.
    #[derive(Default)]
    struct Params {
        bytes: u64,
        resident: Vec<&'static str>,
    }

    impl ParamsView for Params {
        fn resident_bytes(&self) -> u64 {
            self.bytes
        }
        fn is_resident(&self, circuit_id: &str) -> bool {
            self.resident.contains(&circuit_id)
        }
        fn hold(&self, _: &str) -> Option<Arc<Srs>> {
            None
        }
    }

    /// A state with planned, queued jobs: (id, priority, partitions, bytes per partition).
    fn state(jobs: &[(&str, Priority, usize, u64)]) -> SchedulerState {
        let mut s = SchedulerState::default();
        for (seq, &(id, priority, partitions, bytes)) in jobs.iter().enumerate() {
            let mut j = JobEntry::new(ProofKind::PoRepSealCommit, priority, seq as u64, None);
            j.plan = Some(JobPlan::new(partitions, bytes));
            s.queued.insert(j.key(id));
            s.jobs.insert(id.to_string(), j);
        }
        s
    }

    /// What the next synthesis task is, as (id, partition); prepares a started job at once.
    fn next(s: &mut SchedulerState, budget: u64) -> Option<(String, usize)> {
        match s.next_synthesis_task(budget, &Params::default())? {
            SynthesisTask::Prepare { id } => {
                assert!(s.prepared(&id, Arc::new(Nothing)));
                Some((id, 0))
            }
            SynthesisTask::Synthesize { id, partition, .. } => Some((id, partition)),
            SynthesisTask::Finish { id, .. } => Some((id, usize::MAX)),
            SynthesisTask::Plan { id, .. } => panic!("{id} was planned already"),
            SynthesisTask::Fail { id, message } => panic!("{id} failed: {message}"),
        }
    }

    fn synthesized(s: &mut SchedulerState, id: &str, k: usize) {
        s.partition_done(id, k, PartitionOutcome::Synthesized(PartitionWork::default()));
    }

    /// An urgent lane's thread passes over a started low job's partitions and takes the
    /// Critical job queued behind it; its first thread passes over a High job too, which
    /// its second thread takes.
    #[test]
    fn the_urgent_lane_takes_only_high_and_critical_jobs() {
        let mut s = state(&[("low", Priority::Low, 3, 10)]);
        let none = Params::default();
        assert!(matches!(s.next_synthesis_task(100, &none), Some(SynthesisTask::Prepare { .. })));
        assert!(s.next_synthesis_task_in(100, 0, &none, Lane::Urgent, 1).is_none(), "nothing urgent yet");
        let mut window = JobEntry::new(ProofKind::WindowPostPartition, Priority::High, 8, None);
        window.plan = Some(JobPlan::new(1, 10));
        s.queued.insert(window.key("window"));
        s.jobs.insert("window".into(), window);
        assert!(s.next_synthesis_task_in(100, 0, &none, Lane::Urgent, 0).is_none(), "the first lane thread is kept for Critical jobs");
        match s.next_synthesis_task_in(100, 0, &none, Lane::Urgent, 1) {
            Some(SynthesisTask::Prepare { id }) => assert_eq!(id, "window"),
            _ => panic!("the lane's second thread did not start the High job"),
        }
        let mut win = JobEntry::new(ProofKind::WinningPost, Priority::Critical, 9, None);
        win.plan = Some(JobPlan::new(1, 10));
        s.queued.insert(win.key("win"));
        s.jobs.insert("win".into(), win);
        match s.next_synthesis_task_in(100, 0, &none, Lane::Urgent, 0) {
            Some(SynthesisTask::Prepare { id }) => assert_eq!(id, "win"),
            _ => panic!("the urgent lane did not start the Critical job"),
        }
        assert!(!Lane::Urgent.takes(1, Priority::Normal) && Lane::Urgent.takes(1, Priority::High) && Lane::All.takes(0, Priority::Low));
        assert!(!Lane::Urgent.takes(0, Priority::High) && Lane::Urgent.takes(0, Priority::Critical));
    }

    #[test]
    fn keys_order_by_priority_then_acceptance() {
        let key = |p, seq| QueueKey { priority: Reverse(p), seq, job_id: format!("{seq}") };
        let mut keys = [key(Priority::Low, 0), key(Priority::Normal, 2), key(Priority::Critical, 3), key(Priority::Normal, 1)];
        keys.sort();
        let seqs: Vec<u64> = keys.iter().map(|k| k.seq).collect();
        assert_eq!(seqs, [3, 1, 2, 0]);
    }

    /// Partitions are taken in priority order, and a higher job queued later starts before
    /// the remaining partitions of a lower one.
    #[test]
    fn higher_jobs_go_before_the_remaining_partitions_of_lower_ones() {
        let mut s = state(&[("low", Priority::Low, 3, 10)]);
        assert_eq!(next(&mut s, 1000), Some(("low".into(), 0)));
        assert_eq!(next(&mut s, 1000), Some(("low".into(), 1)));
        let mut high = JobEntry::new(ProofKind::WinningPost, Priority::Critical, 9, None);
        high.plan = Some(JobPlan::new(2, 10));
        s.queued.insert(high.key("high"));
        s.jobs.insert("high".into(), high);
        assert_eq!(next(&mut s, 1000), Some(("high".into(), 0)));
        assert_eq!(next(&mut s, 1000), Some(("high".into(), 1)));
        assert_eq!(next(&mut s, 1000), Some(("low".into(), 2)));
        assert_eq!(next(&mut s, 1000), None, "every partition has started");
        // Workers take the high job's partitions first, whatever was synthesized first.
        for (id, k) in [("low", 0), ("low", 1), ("high", 1), ("high", 0)] {
            synthesized(&mut s, id, k);
        }
        let order: Vec<(String, usize)> =
            std::iter::from_fn(|| s.next_prove_task(0).map(|t| (t.id, t.partition))).collect();
        assert_eq!(order, [("high".into(), 0), ("high".into(), 1), ("low".into(), 0), ("low".into(), 1)]);
        assert_eq!(s.mem_in_use, 50, "five partitions reserved");
    }

    /// The budget holds two partitions: a third waits until a proof returns memory, and a
    /// smaller lower job does not overtake the waiting one.
    #[test]
    fn what_does_not_fit_waits_at_the_head() {
        let mut s = state(&[("big", Priority::Normal, 3, 40), ("small", Priority::Low, 1, 1)]);
        assert_eq!(next(&mut s, 100), Some(("big".into(), 0)));
        assert_eq!(next(&mut s, 100), Some(("big".into(), 1)));
        assert_eq!(next(&mut s, 100), None, "big's partition 2 waits, and small behind it");
        assert_eq!(s.mem_in_use, 80);
        synthesized(&mut s, "big", 0);
        let t = s.next_prove_task(0).unwrap();
        s.partition_done("big", t.partition, PartitionOutcome::Proved(PartitionProof::placeholder()));
        assert_eq!(s.mem_in_use, 40);
        assert_eq!(next(&mut s, 100), Some(("big".into(), 2)));
        assert_eq!(next(&mut s, 100), Some(("small".into(), 0)));
    }

    /// Memory that only ends with the jobs holding it (their job bytes, nothing in flight)
    /// is not waited for: the started jobs behind go on, and no new job starts.
    #[test]
    fn memory_held_until_jobs_end_does_not_block_them() {
        let mut s = state(&[("a", Priority::Low, 2, 30), ("b", Priority::Critical, 1, 50), ("c", Priority::Low, 1, 1)]);
        for id in ["a", "b", "c"] {
            s.jobs.get_mut(id).unwrap().plan.as_mut().unwrap().job_bytes = 40;
        }
        // Only a is there at first: it starts (70 bytes).
        let (b, c) = (s.queued.iter().find(|k| k.job_id == "b").cloned().unwrap(), s.queued.iter().find(|k| k.job_id == "c").cloned().unwrap());
        s.queued.remove(&b);
        s.queued.remove(&c);
        assert_eq!(next(&mut s, 100), Some(("a".into(), 0)));
        synthesized(&mut s, "a", 0);
        let t = s.next_prove_task(0).unwrap();
        s.partition_done("a", t.partition, PartitionOutcome::Proved(PartitionProof::placeholder()));
        assert_eq!(s.mem_in_use, 40, "a's job bytes");
        s.queued.insert(b);
        s.queued.insert(c);
        // b needs 90: it cannot fit until a ends, and nothing a holds comes back before, so
        // a's partition 1 goes; c (behind b) does not start.
        assert_eq!(next(&mut s, 100), Some(("a".into(), 1)));
        assert_eq!(next(&mut s, 100), None);
        synthesized(&mut s, "a", 1);
        let t = s.next_prove_task(0).unwrap();
        s.partition_done("a", t.partition, PartitionOutcome::Proved(PartitionProof::placeholder()));
        assert_eq!(next(&mut s, 100), Some(("a".into(), usize::MAX)), "a finishes");
        s.end_run("a");
        assert_eq!(s.mem_in_use, 0);
        assert_eq!(next(&mut s, 100), Some(("b".into(), 0)));
    }

    /// A failed partition stops its job: waiting partitions are dropped with their memory,
    /// no new one starts, and the job ends when the last one in flight comes back.
    #[test]
    fn a_failed_partition_releases_everything_of_its_job() {
        let mut s = state(&[("j", Priority::Normal, 5, 10)]);
        for k in 0..5 {
            assert_eq!(next(&mut s, 1000), Some(("j".into(), k)));
        }
        synthesized(&mut s, "j", 0);
        synthesized(&mut s, "j", 1);
        let t = s.next_prove_task(0).unwrap();
        assert_eq!(t.partition, 0);
        // Partition 3 fails in synthesis while 0 proves, 1 waits and 2 and 4 synthesize.
        let ended = s.partition_failed("j", false, "partition 3 of 5: unsatisfied".into());
        assert_eq!(ended, None, "partitions are still in flight");
        assert!(t.cancel.is_cancelled(), "the others are told to stop");
        assert!(s.ready.is_empty(), "partition 1's witness dropped");
        assert_eq!(s.mem_in_use, 30, "0, 2 and 4 still held by their threads");
        assert_eq!(s.partition_failed("j", false, "cancelled".into()), None);
        s.partition_done("j", 4, PartitionOutcome::Synthesized(PartitionWork::default()));
        assert!(s.ready.is_empty(), "a partition of a stopped job is not proved");
        let end = s.partition_failed("j", true, "cancelled".into());
        assert_eq!(end, Some((JobStatus::Failed, "partition 3 of 5: unsatisfied".into())), "the first failure is the job's");
        assert_eq!(s.mem_in_use, 0);
        s.end_run("j");
        assert!(s.active.is_empty() && s.ready.is_empty());
    }

    /// A device failure is not the job's: the device is marked unhealthy, the partition's
    /// memory comes back and it is synthesized again before the job's next partition, then
    /// proved on the other device. A second device failure of the same partition (two
    /// devices) fails the job naming both devices. While no device is healthy, no job starts.
    #[test]
    fn a_device_failure_sends_the_partition_to_another_device_and_one_per_device_fails_the_job() {
        let mut s = state(&[("j", Priority::Normal, 3, 10), ("later", Priority::Low, 1, 10)]);
        s.device_health = vec![DeviceHealth::healthy(); 2];
        (s.worker_device, s.worker_retired) = (vec![0, 1], vec![false; 2]);
        assert_eq!(next(&mut s, 1000), Some(("j".into(), 0)));
        synthesized(&mut s, "j", 0);
        let t = s.next_prove_task(0).unwrap();
        assert_eq!(s.partition_device_failed("j", t.partition, 0, "gpu0", "device failed: lost".into()), None);
        assert!(!s.device_healthy(0) && s.device_healthy(1));
        assert!(!t.cancel.is_cancelled(), "the job goes on");
        assert_eq!(s.mem_in_use, 0, "the failed partition's witness is gone, and so is its reservation");
        assert_eq!(next(&mut s, 1000), Some(("j".into(), 0)), "partition 0 again, before partition 1");
        assert_eq!(next(&mut s, 1000), Some(("j".into(), 1)));
        assert_eq!(s.mem_in_use, 20);
        synthesized(&mut s, "j", 0);
        let t = s.next_prove_task(1).unwrap();
        assert_eq!(t.partition, 0);
        // It fails on the second device as well: the job fails, naming both.
        let end = s.partition_device_failed("j", 0, 1, "gpu1", "device failed: launch".into());
        assert_eq!(end, None, "partition 1 is still synthesizing");
        assert!(t.cancel.is_cancelled());
        assert!(!s.any_device_healthy());
        assert_eq!(next(&mut s, 1000), None, "no device is healthy: the queued job does not start");
        let (status, message) = s.partition_failed("j", false, "cancelled".into()).unwrap();
        assert_eq!(status, JobStatus::Failed);
        assert!(
            message.starts_with("partition 0 of 3: its device failed on each of its 2 tries")
                && message.contains("on gpu0: device failed: lost; on gpu1: device failed: launch"),
            "{message}"
        );
        s.end_run("j");
        assert_eq!(s.mem_in_use, 0);
        assert!(s.queued.iter().any(|k| k.job_id == "later"), "still queued, not failed");
        s.device_health[1].healthy = true;
        s.worker_retired[1] = true;
        assert!(!s.any_device_healthy(), "a healthy device without workers proves nothing");
        s.worker_retired[1] = false;
        assert_eq!(next(&mut s, 1000), Some(("later".into(), 0)));
    }

    #[test]
    fn a_job_larger_than_the_budget_fails_and_planning_is_asked_first() {
        let mut s = state(&[("huge", Priority::Normal, 1, 101)]);
        match s.next_synthesis_task(100, &Params::default()) {
            Some(SynthesisTask::Fail { message, .. }) => {
                assert!(message.contains("host_memory_budget_bytes = 100"), "{message}")
            }
            _ => panic!("expected a failure"),
        }
        let mut s = SchedulerState::default();
        let j = JobEntry::new(ProofKind::PoRepSealCommit, Priority::Normal, 0, None);
        s.queued.insert(j.key("new"));
        s.jobs.insert("new".into(), j);
        assert!(matches!(s.next_synthesis_task(100, &Params::default()), Some(SynthesisTask::Plan { .. })));
        assert!(s.next_synthesis_task(100, &Params::default()).is_none(), "planned once, by one thread");
        s.paused = true;
        s.jobs.get_mut("new").unwrap().plan = Some(JobPlan::new(1, 1));
        assert!(s.next_synthesis_task(100, &Params::default()).is_none(), "paused: no job starts");
    }

    /// Parameters share the budget: resident ones leave less for partitions, a job whose
    /// parameters are not resident reserves their bytes until their load has ended (once
    /// for two jobs of the same circuit), and what a blocked pick lacks is reported, naming
    /// the parameters not to evict for it.
    #[test]
    fn parameters_count_against_the_budget() {
        let srs = |id: &str| crate::runner::SrsRef { circuit_id: id.into(), path: "/nonexistent".into(), bytes: 50 };
        let mut s = state(&[("a", Priority::Normal, 1, 10), ("b", Priority::Normal, 1, 10), ("c", Priority::Low, 1, 10)]);
        for id in ["a", "b"] {
            s.jobs.get_mut(id).unwrap().plan.as_mut().unwrap().srs = Some(srs("porep-32g"));
        }
        s.jobs.get_mut("c").unwrap().plan.as_mut().unwrap().srs = Some(srs("snap-32g"));
        let none = Params::default();
        assert!(matches!(s.next_synthesis_task(100, &none), Some(SynthesisTask::Prepare { .. })));
        assert_eq!(s.params_loading.get("porep-32g"), Some(&50), "a reserves the load");
        assert!(matches!(s.next_synthesis_task(100, &none), Some(SynthesisTask::Prepare { .. })), "b shares it");
        assert_eq!((s.mem_in_use, s.params_loading.len()), (20, 1));
        // c needs its own 50 on top of 20 + 50 (and its 10): short by 30, and snap-32g is not to be
        // evicted for it.
        assert!(s.next_synthesis_task(100, &none).is_none());
        assert_eq!(s.memory_wanted, (30, Some("snap-32g".into())));
        // Loaded: counted as resident from now on, the same bytes.
        s.params_loaded("porep-32g");
        let loaded = Params { bytes: 50, resident: vec!["porep-32g"] };
        assert!(s.next_synthesis_task(100, &loaded).is_none());
        // Evicting idle parameters (other ones, resident beside) is what makes room.
        let crowded = Params { bytes: 90, resident: vec!["porep-32g", "wpost-32g"] };
        assert!(s.next_synthesis_task(150, &crowded).is_none());
        assert_eq!(s.memory_wanted.0, 20);
        // A job that can never fit with its parameters fails, naming them.
        let mut big = state(&[("big", Priority::Normal, 1, 60)]);
        big.jobs.get_mut("big").unwrap().plan.as_mut().unwrap().srs = Some(srs("porep-32g"));
        match big.next_synthesis_task(100, &none) {
            Some(SynthesisTask::Fail { message, .. }) => assert!(message.contains("50 for its parameters"), "{message}"),
            _ => panic!("expected a failure"),
        }
        // A job's end returns the load reservation no other job needs.
        let mut s = state(&[("a", Priority::Normal, 1, 10)]);
        s.jobs.get_mut("a").unwrap().plan.as_mut().unwrap().srs = Some(srs("porep-32g"));
        assert!(matches!(s.next_synthesis_task(100, &none), Some(SynthesisTask::Prepare { .. })));
        s.end_run("a");
        assert!(s.params_loading.is_empty() && s.mem_in_use == 0);
    }
}
