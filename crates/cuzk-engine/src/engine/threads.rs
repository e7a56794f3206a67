//! The threads that run partitions: synthesis threads (plan, prepare, synthesize, finish),
//! workers (prove a partition on their device) and housekeeping (expired results). Each
//! takes its next task from the scheduler state (`queue`) under the lock, runs it outside
//! the lock with every runner stage under [`contained`], and reports back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::queue::{partition_message, Lane, PartitionOutcome, ProveTask, SynthesisTask};
use super::*;
use crate::error::RunError;
use crate::panic::contained;
use crate::device::DeviceBackend;
use crate::runner::{CancelToken, PartitionProof, PreparedJob, ProveContext};

impl Engine {
    pub(super) fn synthesis_loop(&self, lane: Lane, index: usize) {
        let shared = &*self.shared;
        if lane == Lane::Urgent {
            crate::lane::mark_urgent_lane();
        }
        loop {
            let task = {
                let mut s = lock(&shared.sched);
                loop {
                    if s.stopping || index >= s.synth_target[lane.index()] {
                        // Under the lock, so that a reload that raises the target again
                        // starts this index anew rather than counting on this thread.
                        s.synth_alive[lane.index()][index] = false;
                        return;
                    }
                    let budget = self.cfg().host_memory_budget_bytes;
                    let held = shared.runner.held_bytes();
                    if let Some(task) = s.next_synthesis_task_in(budget, held, &shared.srs, lane, index) {
                        break task;
                    }
                    // Short of memory: idle parameters (no started job holds them) make room
                    // first, least recently used first, never the ones the waiting work needs.
                    let (wanted, keep) = std::mem::take(&mut s.memory_wanted);
                    if wanted > 0 && shared.srs.evict_idle_bytes(wanted, keep.as_deref()) > 0 {
                        continue;
                    }
                    s = wait(&shared.wake, s, Duration::from_millis(500));
                }
            };
            match task {
                SynthesisTask::Plan { id, request } => self.plan(&id, request),
                SynthesisTask::Fail { id, message } => self.fail(&id, message),
                SynthesisTask::Prepare { id } => self.prepare(&id),
                SynthesisTask::Synthesize { id, partition, job, cancel } => {
                    self.synthesize_partition(&id, partition, &*job, &cancel)
                }
                SynthesisTask::Finish { id, job, proofs, cancel } => self.finish_job(&id, &*job, proofs, &cancel),
            }
        }
    }

    /// A job's last step, once every partition is proved: assembly and verification, then
    /// its end. The job stays `finishing` until it has ended, so no other thread takes it.
    fn finish_job(&self, id: &str, job: &dyn PreparedJob, proofs: Vec<PartitionProof>, cancel: &CancelToken) {
        let start = Instant::now();
        let out = contained("finish", || job.finish(proofs, cancel));
        log::debug!("job {id}: assembled and verified in {:?}", start.elapsed());
        let stopped = {
            let mut s = lock(&self.shared.sched);
            let Some(j) = s.jobs.get_mut(id) else { return };
            if let Ok(o) = &out {
                j.timings.verify = o.verify;
            }
            j.run.as_ref().and_then(|r| r.stop.clone())
        };
        match out {
            Ok(o) => self.end_job(id, JobStatus::Completed, o.proof, None),
            Err(e) => {
                let (status, message) = stopped.unwrap_or((JobStatus::Failed, e.to_string()));
                self.end_job(id, status, Vec::new(), Some(message))
            }
        }
    }

    /// A job that can never run: stopped, and ended once nothing of it runs.
    fn fail(&self, id: &str, message: String) {
        let ended = {
            let mut s = lock(&self.shared.sched);
            if s.jobs.get(id).is_some_and(|j| j.run.is_some()) {
                s.stop(id, JobStatus::Failed, message);
                s.end_if_stopped(id)
            } else {
                Some((JobStatus::Failed, message))
            }
        };
        if let Some((status, message)) = ended {
            self.end_job(id, status, Vec::new(), Some(message));
        }
    }

    fn plan(&self, id: &str, request: Option<Arc<JobRequest>>) {
        let shared = &*self.shared;
        let plan = self.request_of(id, request).and_then(|r| {
            contained("plan", || shared.runner.plan(&r)).map(|p| (p, r)).map_err(|e| e.to_string())
        });
        let mut s = lock(&shared.sched);
        let Some(j) = s.jobs.get_mut(id) else { return };
        j.planning = false;
        match plan {
            Ok((p, r)) => {
                j.plan = Some(p);
                // A small request read back from the spool (after a restart) stays for
                // prepare instead of being read a second time; a large one goes back to
                // waiting on disk.
                if r.payload_bytes() <= PAYLOAD_KEPT_IN_MEMORY {
                    j.request = Some(r);
                }
                shared.wake.notify_all();
            }
            Err(e) => {
                drop(s);
                self.end_job(id, JobStatus::Failed, Vec::new(), Some(e));
            }
        }
    }

    /// A job's start: its attempt made durable, `prepare`, then partition 0 on this thread.
    fn prepare(&self, id: &str) {
        let shared = &*self.shared;
        let (request, plan, cancel, attempts, kind) = {
            let s = lock(&shared.sched);
            let Some(j) = s.jobs.get(id) else { return };
            (j.request.clone(), j.plan.clone(), j.cancel.clone(), j.attempts, j.kind)
        };
        // Durable before it runs: a crash from here on counts as an interrupted attempt.
        if let Err(e) = shared.spool.put_attempts(id, attempts) {
            log::error!("job {id}: attempt count not stored: {e}");
        }
        self.emit(id, kind, JobState::Synthesizing);
        let prepared = match (self.request_of(id, request), plan) {
            (Ok(r), Some(p)) => cancel.check().map_err(|e| e.to_string()).and_then(|_| {
                let job = contained("prepare", || shared.runner.prepare(&r, &p, &cancel)).map_err(|e| e.to_string())?;
                if job.partitions() != p.partitions {
                    return Err(format!(
                        "engine fault: the prepared job has {} partitions, its plan {}",
                        job.partitions(),
                        p.partitions
                    ));
                }
                Ok(job)
            }),
            (Err(e), _) => Err(e),
            (_, None) => Err("engine fault: a job started without a plan".into()),
        };
        match prepared {
            Ok(job) => {
                let job: Arc<dyn PreparedJob> = Arc::from(job);
                let go_on = lock(&shared.sched).prepared(id, job.clone());
                shared.wake.notify_all();
                if go_on {
                    self.synthesize_partition(id, 0, &*job, &cancel);
                } else {
                    self.partition_failed(id, false, "stopped".into());
                }
            }
            Err(message) => self.partition_failed(id, false, message),
        }
    }

    fn synthesize_partition(&self, id: &str, partition: usize, job: &dyn PreparedJob, cancel: &CancelToken) {
        let start = Instant::now();
        let out = cancel.check().and_then(|_| contained("synthesize", || job.synthesize(partition, cancel)));
        let elapsed = start.elapsed();
        match out {
            Ok(work) => {
                let ended = {
                    let mut s = lock(&self.shared.sched);
                    if let Some(j) = s.jobs.get_mut(id) {
                        j.timings.synthesis += elapsed;
                        let kind = j.kind;
                        s.stats.partition(kind, crate::stats::PartitionStage::Synthesis, elapsed);
                    }
                    let (changed, ended) = s.partition_done(id, partition, PartitionOutcome::Synthesized(work));
                    if let (Some(state), Some(j)) = (changed, s.jobs.get(id)) {
                        self.emit(id, j.kind, state);
                    }
                    self.shared.wake.notify_all();
                    ended
                };
                if let Some((status, message)) = ended {
                    self.end_job(id, status, Vec::new(), Some(message));
                }
            }
            Err(e) => {
                let partitions = job.partitions();
                self.partition_failed(id, false, partition_message(partition, partitions, &e));
            }
        }
    }

    /// A partition that failed (or stopped) in synthesis (`proving` false) or on a worker.
    fn partition_failed(&self, id: &str, proving: bool, message: String) {
        let ended = {
            let mut s = lock(&self.shared.sched);
            let ended = s.partition_failed(id, proving, message);
            self.shared.wake.notify_all();
            ended
        };
        if let Some((status, message)) = ended {
            self.end_job(id, status, Vec::new(), Some(message));
        }
    }

    pub(super) fn worker_loop(&self, worker: usize) {
        let shared = &*self.shared;
        let device = lock(&shared.sched).worker_device[worker];
        loop {
            let task = {
                let mut s = lock(&shared.sched);
                loop {
                    if s.stopping || s.worker_retired[worker] {
                        return;
                    }
                    // An unhealthy device's workers wait (for a reload, `Engine::reconfigure`).
                    if let Some(task) = s.device_healthy(device).then(|| s.next_prove_task(device)).flatten() {
                        s.worker_jobs[worker] = Some((task.id.clone(), task.partition));
                        if task.first {
                            self.emit(&task.id, task.kind, JobState::Proving);
                        }
                        break task;
                    }
                    s = wait(&shared.wake, s, Duration::from_millis(500));
                }
            };
            self.prove_partition(device, task);
            lock(&shared.sched).worker_jobs[worker] = None;
        }
    }

    fn prove_partition(&self, device: usize, task: ProveTask) {
        let shared = &*self.shared;
        let ProveTask { id, partition, job, work, srs, cancel, .. } = task;
        let id = id.as_str();
        let partitions = job.partitions();
        let (params, srs_load) = match srs.as_ref().map(|r| self.job_params(id, r)).transpose() {
            Ok(loaded) => loaded.map_or((None, Duration::ZERO), |(p, t)| (Some(p), t)),
            Err(message) => {
                drop(work);
                return self.partition_failed(id, true, message);
            }
        };
        let dev = &shared.devices[device];
        let backend = DeviceBackend::new(&*dev.backend, &shared.device_locks[device], &cancel);
        let tuning = self.shared.config.lock().unwrap_or_else(|p| p.into_inner()).prover;
        let start = Instant::now();
        let out = cancel.check().and_then(|_| {
            contained("prove", || {
                let ctx = ProveContext { srs: params.as_deref(), backend: &backend, cancel: &cancel, tuning: &tuning };
                job.prove(partition, work, ctx)
            })
        });
        let prove = start.elapsed();
        if out.is_ok() {
            // Spilled parameters that this device now holds whole: their host copy goes
            // (`srs_host_release_dir`; a no-op otherwise, or once released), on a thread of
            // its own while this worker goes on.
            if let Some(p) = &params {
                p.release_in_background_if_held(&backend, |_| {});
            }
        }
        drop(params);
        {
            let mut s = lock(&shared.sched);
            if let Some(j) = s.jobs.get_mut(id) {
                j.timings.srs_load += srs_load;
                j.timings.prove += prove;
                j.timings.gpu_compute += backend.busy();
                j.timings.device_wait += backend.lock_wait();
                let kind = j.kind;
                if out.is_ok() {
                    use crate::stats::PartitionStage;
                    s.stats.partition(kind, PartitionStage::Prove, prove);
                    s.stats.partition(kind, PartitionStage::GpuCompute, backend.busy());
                }
            }
        }
        match out {
            Ok(proof) => {
                let ended = {
                    let mut s = lock(&shared.sched);
                    let (_, ended) = s.partition_done(id, partition, PartitionOutcome::Proved(proof));
                    shared.wake.notify_all();
                    ended
                };
                if let Some((status, message)) = ended {
                    self.end_job(id, status, Vec::new(), Some(message));
                }
            }
            Err(e @ RunError::Device(_)) => self.device_failed(device, id, partition, e),
            Err(e) => self.partition_failed(id, true, partition_message(partition, partitions, &e)),
        }
    }

    /// Device `device` failed under partition `partition` of job `id`: the device takes
    /// nothing more, and the partition is synthesized again for another device (or the job
    /// fails, once the partition has failed on as many devices as there are).
    fn device_failed(&self, device: usize, id: &str, partition: usize, e: RunError) {
        let name = &self.shared.devices[device].name;
        log::error!(
            "device {name} failed under partition {partition} of job {id}: {e}; marked unhealthy, it \
             takes no new partition until a reload; the partition is proved again on another device"
        );
        let ended = {
            let mut s = lock(&self.shared.sched);
            let ended = s.partition_device_failed(id, partition, device, name, e.to_string());
            if !s.any_device_healthy() {
                log::error!("no healthy device: partitions and queued jobs wait for a reload (SIGHUP or D-Bus Reload)");
            }
            self.shared.wake.notify_all();
            ended
        };
        if let Some((status, message)) = ended {
            self.end_job(id, status, Vec::new(), Some(message));
        }
    }


    /// Job `id`'s parameters, resident (loaded now if need be, with the load time), held
    /// by the job until it ends.
    fn job_params(&self, id: &str, r: &crate::runner::SrsRef) -> Result<(Arc<Srs>, Duration), String> {
        let loaded = contained("parameter load", || {
            self.resident_srs(&r.circuit_id, r).map_err(|e| RunError::Params(e.to_string().into()))
        });
        let mut s = lock(&self.shared.sched);
        // Resident now (counted as such), or failed: the load's reservation ends.
        s.params_loaded(&r.circuit_id);
        let (params, load_time) = loaded.map_err(|e| format!("parameters of circuit {}: {e}", r.circuit_id))?;
        if let Some(run) = s.jobs.get_mut(id).and_then(|j| j.run.as_mut()) {
            run.srs.get_or_insert_with(|| params.clone());
        }
        Ok((params, load_time.unwrap_or_default()))
    }

    pub(super) fn housekeeping_loop(&self) {
        let shared = &*self.shared;
        let c = self.cfg();
        let period = (c.result_ttl.min(c.fetched_result_ttl) / 4)
            .clamp(Duration::from_millis(20), Duration::from_secs(5));
        let mut s = lock(&shared.sched);
        loop {
            if s.stopping {
                return;
            }
            let now = now_unix_ms();
            let expired: Vec<String> = s
                .jobs
                .iter()
                .filter(|(_, j)| j.result.is_some() && j.expires_unix_ms <= now)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                s.jobs.remove(id);
            }
            if !expired.is_empty() {
                drop(s);
                for id in &expired {
                    log::debug!("result of {id} expired");
                    if let Err(e) = shared.spool.remove_result(id) {
                        log::error!("{e}");
                    }
                }
                s = lock(&shared.sched);
            }
            s = wait(&shared.wake, s, period);
        }
    }

}
