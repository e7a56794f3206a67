//! A job from submission to its result: admission and the spool, await, cancel, the end
//! of a job (result stored, memory returned), recovery after a restart, drain, and the
//! parameters jobs share.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_groth16::{Srs, SrsError};

use super::queue::{JobEntry, SchedulerState};
use super::*;
use crate::error::EngineError;
use crate::runner::SrsRef;
use crate::spool::SpooledJobRef;

impl Engine {
    pub(super) fn restore(&self, rec: crate::spool::Recovered) -> Vec<(String, u32)> {
        let now = now_unix_ms();
        let ttl = millis(self.cfg().result_ttl);
        let mut s = lock(&self.shared.sched);
        for r in rec.results {
            let expires = r.finished_unix_ms.saturating_add(ttl);
            if expires <= now {
                let _ = self.shared.spool.remove_result(&r.job_id);
                continue;
            }
            let mut job = JobEntry::new(r.kind, r.priority, 0, None);
            job.digest = r.digest.clone();
            job.state = r.status.state();
            job.attempts = r.attempts;
            job.expires_unix_ms = expires;
            let r = Arc::new(r);
            job.watch.send_replace(Some(r.clone()));
            job.result = Some(r.clone());
            s.jobs.insert(r.job_id.clone(), job);
        }
        let mut exhausted = Vec::new();
        for (sj, attempts) in rec.jobs {
            s.next_seq = s.next_seq.max(sj.seq.saturating_add(1));
            let id = sj.job_id.clone();
            // The payload stays in the spool; planning reads it back.
            let mut job = JobEntry::new(sj.request.kind, sj.priority, sj.seq, None);
            job.digest = sj.digest;
            job.payload_bytes = sj.payload_bytes;
            s.spool_bytes = s.spool_bytes.saturating_add(sj.payload_bytes);
            job.attempts = attempts;
            job.spooled = true;
            if attempts >= self.cfg().max_attempts {
                exhausted.push((id.clone(), attempts));
            } else {
                if attempts > 0 {
                    log::warn!("job {id} was interrupted (attempt {attempts}); running it again");
                }
                s.queued.insert(job.key(&id));
            }
            s.jobs.insert(id, job);
        }
        exhausted
    }

    fn generate_id(&self) -> String {
        let n = self.shared.id_counter.fetch_add(1, Ordering::Relaxed);
        format!("job-{:x}-{:x}-{n}", now_unix_ms(), std::process::id())
    }

    /// Accepts a job: returns once its request is durably in the spool. A known request id
    /// attaches to the existing job (or its stored result): `existing` is then true and
    /// nothing new is queued.
    pub fn submit(&self, mut request: JobRequest) -> Result<Submitted, EngineError> {
        if request.request_id.len() > MAX_REQUEST_ID_BYTES {
            return Err(EngineError::InvalidRequest(format!(
                "request_id is {} bytes long; at most {MAX_REQUEST_ID_BYTES} are accepted",
                request.request_id.len()
            )));
        }
        if let Some(c) = request.request_id.chars().find(|c| c.is_control()) {
            return Err(EngineError::InvalidRequest(format!(
                "request_id contains the control character {c:?}; ids are printable text (spaces, \
                 brackets and any other printable character are fine)"
            )));
        }
        if request.request_id.is_empty() {
            request.request_id = self.generate_id();
        }
        let id = request.request_id.clone();
        let priority = request.effective_priority();
        let kind = request.kind;
        let digest = request.content_digest();
        let payload = request.payload_bytes();
        let request = Arc::new(request);
        let (seq, replaced) = {
            let mut s = lock(&self.shared.sched);
            let mut replaced = false;
            if let Some(j) = s.jobs.get(&id) {
                match &j.digest {
                    // Same content (or a result from before digests): the retry attaches.
                    Some(d) if *d != digest => {}
                    _ => {
                        return Ok(Submitted {
                            job_id: id.clone(),
                            existing: true,
                            state: j.state,
                            queue_position: s.queue_position(&id),
                            device: self.device_name(j),
                        })
                    }
                }
                if j.result.is_none() {
                    return Err(EngineError::Conflict { id: id.clone(), state: j.state.name() });
                }
                // Ended, and the id now comes with other content: a sector sealed again
                // after a failure (Curio's ids are `porep-<miner>-<sector>`). Its old result
                // answers a request nobody makes any more; a new job replaces it.
                log::info!(
                    "request id {id}: new content; the stored {} result of its earlier content \
                     is replaced by a new job",
                    j.state.name()
                );
                replaced = true;
            }
            if s.draining || s.stopping {
                return Err(EngineError::Draining);
            }
            let c = self.cfg();
            if s.queued.len() >= c.max_queued_jobs {
                return Err(EngineError::ResourceExhausted {
                    limit: "max_queued_jobs",
                    value: c.max_queued_jobs as u64,
                    detail: format!("{} jobs are queued", s.queued.len()),
                });
            }
            if s.spool_bytes.saturating_add(payload) > c.max_spool_bytes {
                return Err(EngineError::ResourceExhausted {
                    limit: "max_spool_bytes",
                    value: c.max_spool_bytes,
                    detail: format!(
                        "accepted jobs hold {} bytes of input and this request brings {payload}",
                        s.spool_bytes
                    ),
                });
            }
            if replaced {
                s.jobs.remove(&id);
            }
            let seq = s.next_seq;
            s.next_seq += 1;
            let mut job = JobEntry::new(kind, priority, seq, Some(request.clone()));
            job.digest = Some(digest.clone());
            job.payload_bytes = payload;
            s.spool_bytes += payload;
            s.jobs.insert(id.clone(), job);
            (seq, replaced)
        };
        // The old result goes before the new request is durable: a crash in between must
        // not leave both (recovery lets a result win over its request).
        let written = if replaced { self.shared.spool.remove_result(&id) } else { Ok(()) }.and_then(|_| {
            self.shared.spool.put_job(&SpooledJobRef {
                job_id: &id,
                seq,
                priority,
                accepted_unix_ms: now_unix_ms(),
                digest: &digest,
                payload_bytes: payload,
                request: &request,
            })
        });
        let mut s = lock(&self.shared.sched);
        if let Err(e) = written {
            // Not durable, so not accepted. Anyone who attached meanwhile sees NotFound.
            if let Some(j) = s.jobs.remove(&id) {
                s.spool_bytes = s.spool_bytes.saturating_sub(j.payload_bytes);
            }
            drop(s);
            let _ = self.shared.spool.remove_job(&id);
            return Err(e);
        }
        let mut state = JobState::Cancelled;
        if let Some(j) = s.jobs.get_mut(&id) {
            state = j.state;
            if j.state == JobState::Queued {
                j.spooled = true;
                j.request
                    .take_if(|r| r.payload_bytes() > PAYLOAD_KEPT_IN_MEMORY);
                let key = j.key(&id);
                s.queued.insert(key);
                self.shared.wake.notify_all();
            }
        }
        let queue_position = s.queue_position(&id);
        if state == JobState::Queued {
            // Under the lock, so that no later state of this job is announced before it.
            self.emit(&id, kind, JobState::Queued);
        }
        drop(s);
        Ok(Submitted {
            job_id: id,
            existing: false,
            state,
            queue_position,
            device: None,
        })
    }

    /// Waits for a job's result; `None` waits forever (the wire's `timeout_ms = 0`). On
    /// timeout the job goes on and the answer is [`AwaitOutcome::Timeout`]. A fetched result
    /// is kept `fetched_result_ttl`.
    pub async fn await_job(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitOutcome, EngineError> {
        let mut rx = {
            let s = lock(&self.shared.sched);
            s.jobs
                .get(id)
                .ok_or_else(|| EngineError::NotFound(id.to_string()))?
                .watch
                .subscribe()
        };
        let waited = {
            let wait = rx.wait_for(|r| r.is_some());
            match timeout {
                None => Some(wait.await.map(|r| r.clone())),
                Some(t) => tokio::time::timeout(t, wait)
                    .await
                    .ok()
                    .map(|r| r.map(|r| r.clone())),
            }
        };
        match waited {
            None => {
                let state = self.job(id).map(|j| j.state).unwrap_or(JobState::Queued);
                Ok(AwaitOutcome::Timeout { state })
            }
            Some(Ok(Some(result))) => {
                self.mark_fetched(id);
                Ok(AwaitOutcome::Done(result))
            }
            // The job vanished (its spooling failed, or the result expired meanwhile).
            Some(_) => Err(EngineError::NotFound(id.to_string())),
        }
    }

    /// Submit and await in one call (the wire's `Prove`).
    pub async fn prove(
        &self,
        request: JobRequest,
        timeout: Option<Duration>,
    ) -> Result<(Submitted, AwaitOutcome), EngineError> {
        let this = self.clone();
        let submitted = match tokio::task::spawn_blocking(move || this.submit(request)).await {
            Ok(r) => r?,
            Err(e) => return Err(EngineError::Internal(format!("submit task failed: {e}"))),
        };
        let outcome = self.await_job(&submitted.job_id, timeout).await?;
        Ok((submitted, outcome))
    }

    fn mark_fetched(&self, id: &str) {
        let until = now_unix_ms().saturating_add(millis(self.cfg().fetched_result_ttl));
        let mut s = lock(&self.shared.sched);
        if let Some(j) = s.jobs.get_mut(id) {
            j.expires_unix_ms = j.expires_unix_ms.min(until);
        }
    }

    /// Cancels a queued job at once, or a started one: its waiting partitions are dropped
    /// now, the ones in flight stop at their next stage boundary or kernel, and the job ends
    /// when the last of them has come back.
    pub fn cancel(&self, id: &str) -> Result<CancelOutcome, EngineError> {
        let mut s = lock(&self.shared.sched);
        let j = s
            .jobs
            .get_mut(id)
            .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        if let Some(r) = &j.result {
            return Ok(CancelOutcome::AlreadyFinished(r.status));
        }
        match j.state {
            JobState::Queued => {
                drop(s);
                self.end_job(id, JobStatus::Cancelled, Vec::new(), Some("cancelled before it started".into()));
                Ok(CancelOutcome::Dequeued)
            }
            JobState::Synthesizing | JobState::Synthesized | JobState::Proving => {
                let (proved, partitions) = j.run.as_ref().map_or((0, 0), |r| (r.proved, r.partitions));
                let message = format!("cancelled after {proved} of {partitions} partitions were proved");
                s.stop(id, JobStatus::Cancelled, message);
                self.shared.wake.notify_all();
                let ended = s.end_if_stopped(id);
                drop(s);
                if let Some((status, message)) = ended {
                    // Nothing in flight (its partitions were waiting): it ends here.
                    self.end_job(id, status, Vec::new(), Some(message));
                }
                Ok(CancelOutcome::Stopping)
            }
            // Terminal, result being written: nothing to stop.
            state => {
                let status = match state {
                    JobState::Completed => JobStatus::Completed,
                    JobState::Failed => JobStatus::Failed,
                    _ => JobStatus::Cancelled,
                };
                Ok(CancelOutcome::AlreadyFinished(status))
            }
        }
    }

    /// Ends a job: every byte it held back to the budget, result to the spool, then to
    /// waiters and events. Idempotent. Called once no thread works on the job any more.
    pub(super) fn end_job(&self, id: &str, status: JobStatus, proof: Vec<u8>, error: Option<String>) {
        let result = {
            let mut s = lock(&self.shared.sched);
            let Some(j) = s.jobs.get(id) else { return };
            if j.state.is_terminal() {
                return;
            }
            let shutdown = j.cancel.is_shutdown();
            let started = j.run.is_some();
            s.end_run(id);
            let Some(j) = s.jobs.get_mut(id) else { return };
            if status != JobStatus::Completed && shutdown {
                if !started {
                    // Put back already (a cancel racing the shutdown): once is enough.
                    return;
                }
                // Stopped by a shutdown, not by the job: it stays in the spool (its
                // partitions are redone at the next start), and this start does not count
                // as an attempt.
                j.state = JobState::Queued;
                j.spooled = true;
                let attempts = j.attempts.saturating_sub(1);
                j.attempts = attempts;
                drop(s);
                let _ = self.shared.spool.put_attempts(id, attempts);
                self.shared.wake.notify_all();
                return;
            }
            j.request = None;
            j.plan = None;
            let payload = std::mem::take(&mut j.payload_bytes);
            let digest = j.digest.clone();
            j.state = status.state();
            j.timings.total = j.accepted.elapsed();
            let result = JobResult {
                job_id: id.to_string(),
                kind: j.kind,
                priority: j.priority,
                status,
                proof,
                error,
                timings: j.timings,
                finished_unix_ms: now_unix_ms(),
                attempts: j.attempts,
                digest,
            };
            j.expires_unix_ms = result
                .finished_unix_ms
                .saturating_add(millis(self.cfg().result_ttl));
            s.spool_bytes = s.spool_bytes.saturating_sub(payload);
            match status {
                JobStatus::Completed => s.completed += 1,
                JobStatus::Failed => s.failed += 1,
                JobStatus::Cancelled => s.cancelled += 1,
            }
            s.stats.job_ended(result.kind, status, &result.timings);
            self.shared.wake.notify_all();
            Arc::new(result)
        };
        match &result.error {
            Some(e) => log::warn!("job {id} {}: {e}", result.status.state().name()),
            None => log::info!("job {id} completed in {:?}", result.timings.total),
        }
        if let Err(e) = self.shared.spool.put_result(&result) {
            log::error!("job {id}: result not stored, it will run again after a restart: {e}");
        }
        let kind = result.kind;
        {
            let mut s = lock(&self.shared.sched);
            if let Some(j) = s.jobs.get_mut(id) {
                j.result = Some(result.clone());
                j.watch.send_replace(Some(result.clone()));
            }
        }
        self.emit(id, kind, result.status.state());
    }

    /// The job's request: the one in memory, or read back from the spool.
    pub(super) fn request_of(
        &self,
        id: &str,
        cached: Option<Arc<JobRequest>>,
    ) -> Result<Arc<JobRequest>, String> {
        match cached {
            Some(r) => Ok(r),
            None => self
                .shared
                .spool
                .get_job(id)
                .map(|sj| Arc::new(sj.request))
                .map_err(|e| format!("the spooled request could not be read back: {e}")),
        }
    }
    /// No new job starts until [`Engine::resume`]; started jobs go on with all their
    /// partitions.
    pub fn pause(&self) {
        lock(&self.shared.sched).paused = true;
    }

    pub fn resume(&self) {
        lock(&self.shared.sched).paused = false;
        self.shared.wake.notify_all();
    }

    /// Graceful stop: accepts nothing more, starts no new job, waits up to `timeout` for
    /// started jobs (all their partitions), then stops what still runs at its next stage
    /// boundary and leaves it, with every queued job, in the spool for the next start (its
    /// partitions are redone then). Blocking.
    pub fn drain(&self, timeout: Duration) -> DrainReport {
        let shared = &*self.shared;
        let deadline = deadline_after(timeout);
        let mut s = lock(&shared.sched);
        s.draining = true;
        shared.wake.notify_all();
        let busy = |s: &SchedulerState| s.jobs.values().filter(|j| j.in_flight()).count();
        while busy(&s) > 0 && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = wait(&shared.wake, s, left);
        }
        let finished_in_time = busy(&s) == 0;
        s.stopping = true;
        let started: Vec<String> = s.active.iter().map(|k| k.job_id.clone()).collect();
        let mut idle = Vec::new();
        for id in started {
            if let Some(j) = s.jobs.get(&id) {
                j.cancel.shut_down();
            }
            s.stop(&id, JobStatus::Cancelled, "the engine shut down".into());
            if let Some(end) = s.end_if_stopped(&id) {
                idle.push((id, end));
            }
        }
        shared.wake.notify_all();
        drop(s);
        // Jobs whose partitions were only waiting have no thread to notice: put them back
        // here.
        for (id, (status, message)) in idle {
            self.end_job(&id, status, Vec::new(), Some(message));
        }
        let mut s = lock(&shared.sched);
        // Threads stop at their next stage boundary; give them what is left of the timeout,
        // and at least a moment.
        let deadline = deadline.max(Instant::now() + Duration::from_millis(200));
        while s.live_threads > 0 && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = wait(&shared.wake, s, left);
        }
        DrainReport {
            finished_in_time,
            left_in_spool: s.jobs.values().filter(|j| j.result.is_none()).count(),
            threads_stopped: s.live_threads == 0,
        }
    }


    /// Makes a circuit's parameters resident: (already_loaded, load_time). Blocking.
    pub fn preload_srs(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        let r = self
            .shared
            .runner
            .srs_for_circuit(circuit_id)
            .map_err(|e| EngineError::Srs {
                circuit_id: circuit_id.to_string(),
                reason: e.to_string(),
            })?;
        let (_, loaded) = self
            .resident_srs(circuit_id, &r)
            .map_err(|e| EngineError::Srs {
                circuit_id: circuit_id.to_string(),
                reason: e.to_string(),
            })?;
        Ok(match loaded {
            Some(t) => (false, t),
            None => (true, Duration::ZERO),
        })
    }

    /// The parameters of `circuit_id`, loaded from `r.path` unless resident; the load time
    /// when this call loaded them.
    pub(super) fn resident_srs(
        &self,
        circuit_id: &str,
        r: &SrsRef,
    ) -> Result<(Arc<Srs>, Option<Duration>), SrsError> {
        let spill = self.shared.config.lock().unwrap_or_else(|p| p.into_inner()).srs_host_release_dir.clone();
        self.shared.srs.get_or_load(circuit_id, r.bytes, || {
            let mut srs = Srs::load(&r.path)?;
            if let Some(dir) = spill {
                let t = Instant::now();
                let bytes = srs.spill_to(&dir)?;
                log::info!(
                    "parameters {circuit_id}: {:.1} GiB spilled to {} in {:.1} s; their host copy goes once a device holds them",
                    bytes as f64 / (1u64 << 30) as f64,
                    dir.display(),
                    t.elapsed().as_secs_f64()
                );
            }
            let bytes = srs.shape_of().point_bytes() as u64;
            Ok((srs, bytes))
        })
    }

    /// Drops a circuit's parameters when no job holds them: (was_loaded, freed_bytes);
    /// [`EngineError::SrsInUse`] while jobs do (nothing is dropped).
    pub fn evict_srs(&self, circuit_id: &str) -> Result<(bool, u64), EngineError> {
        // Every started job whose plan names them holds them (from its first proof to its
        // end; one that has not loaded them yet would load them again at once).
        let jobs = lock(&self.shared.sched).jobs_using(circuit_id);
        if !jobs.is_empty() {
            return Err(EngineError::SrsInUse { circuit_id: circuit_id.to_string(), holders: jobs.len() as u32, jobs });
        }
        self.shared.srs.evict(circuit_id).map_err(|holders| EngineError::SrsInUse {
            circuit_id: circuit_id.to_string(),
            holders,
            jobs: Vec::new(),
        })
    }
}
