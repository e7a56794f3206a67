//! The engine: accepted jobs, their order, the threads that run them, and what they report.
//!
//! Threads, and why:
//!
//! - `synthesis_workers` synthesis threads take the highest-priority queued job (FIFO within
//!   a priority), plan it, reserve its host memory from the budget and synthesize it. They
//!   run ahead of proving, so the CPU prepares the next job while the device proves the
//!   current one; the memory budget is what bounds how far ahead. A job at the head of the
//!   queue that does not fit waits: smaller, lower-priority jobs never overtake it.
//! - `gpu_workers_per_device x devices` worker threads take the highest-priority synthesized
//!   job, make its parameters resident and prove it. Kernels run under the per-device lock
//!   ([`crate::runner::DeviceBackend`]); everything else runs outside it.
//! - one housekeeping thread removes results whose time has passed.
//!
//! All scheduling state sits behind one mutex with one condition variable; no I/O happens
//! under it except where noted. Proving threads are plain OS threads, never async tasks:
//! a proof blocks for seconds to minutes.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cuzk_groth16::{Srs, SrsError};
use tokio::sync::{broadcast, watch};

use crate::error::{EngineError, RunError};
use crate::job::*;
use crate::panic::contained;
use crate::residency::{Residency, ResidentStatus};
use crate::runner::{
    CancelToken, Device, DeviceBackend, JobPlan, ProofRunner, ProveContext, SrsRef, Synthesized,
};
use crate::spool::{Spool, SpooledJobRef};

/// Engine settings. Names follow the daemon's TOML keys.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Spool and lock file live here (`/var/lib/cuzk` for the daemon).
    pub state_dir: PathBuf,
    /// Proving workers per device (unless the device sets its own, [`Device::with_workers`]);
    /// with the CPU backend (one device) the worker count.
    pub gpu_workers_per_device: usize,
    /// Threads that synthesize ahead of proving.
    pub synthesis_workers: usize,
    /// Host memory that synthesized-but-unproved and proving jobs may hold together.
    pub host_memory_budget_bytes: u64,
    /// Resident parameters above this are evicted when idle (LRU); 0 = no limit.
    pub srs_cache_limit_bytes: u64,
    /// How long a result is kept when nobody fetches it.
    pub result_ttl: Duration,
    /// How long a result is kept after it was fetched (so a retried request still gets it).
    pub fetched_result_ttl: Duration,
    /// A job interrupted (crash, kill) this many times fails instead of running again.
    pub max_attempts: u32,
    /// Start paused (recovered jobs wait for [`Engine::resume`]): for inspecting the spool
    /// after a crash before anything runs.
    pub start_paused: bool,
    /// Admission: at most this many jobs wait in the queue; beyond it `submit` answers
    /// [`EngineError::ResourceExhausted`].
    pub max_queued_jobs: usize,
    /// Admission: the payload bytes of accepted, unfinished jobs (what the spool holds).
    pub max_spool_bytes: u64,
}

impl EngineConfig {
    /// Defaults: one worker per device, one synthesis thread, 3/4 of the machine's memory as
    /// budget, results kept an hour (five minutes once fetched), three attempts, 1000 queued
    /// jobs and 32 GiB of spooled payload at most (about 650 waiting 32 GiB PoRep inputs).
    pub fn new(state_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            state_dir: state_dir.into(),
            gpu_workers_per_device: 1,
            synthesis_workers: 1,
            host_memory_budget_bytes: default_memory_budget(),
            srs_cache_limit_bytes: 0,
            result_ttl: Duration::from_secs(3600),
            fetched_result_ttl: Duration::from_secs(300),
            max_attempts: 3,
            start_paused: false,
            max_queued_jobs: 1000,
            max_spool_bytes: 32 << 30,
        }
    }
}

/// 3/4 of MemTotal, or 16 GiB when /proc/meminfo cannot be read.
pub fn default_memory_budget() -> u64 {
    machine_memory_bytes().map_or(16 << 30, |m| m / 4 * 3)
}

/// The default of `[srs] cache_limit_bytes`: half of the machine's memory (no limit when
/// it cannot be read).
pub fn default_srs_cache_limit() -> u64 {
    machine_memory_bytes().map_or(0, |m| m / 2)
}

/// The machine's memory (MemTotal in /proc/meminfo).
fn machine_memory_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
}

/// Whether the engine starts new work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineState {
    Running,
    Paused,
    Draining,
    Stopped,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    pub kind: ProofKind,
    pub pending: u32,
    pub in_progress: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerStatus {
    pub device: String,
    pub job_id: Option<String>,
    pub kind: Option<ProofKind>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStatus {
    pub budget_bytes: u64,
    pub in_use_bytes: u64,
    pub high_water_bytes: u64,
}

/// Everything `GetStatus`, D-Bus properties and sd_notify STATUS= need.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    pub state: EngineState,
    pub queues: Vec<QueueStatus>,
    pub running: u32,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub uptime: Duration,
    pub memory: MemoryStatus,
    pub srs: Vec<ResidentStatus>,
    pub workers: Vec<WorkerStatus>,
    pub devices: Vec<DeviceStatus>,
}

/// One device: its name and, for GPUs, its ordinal, its memory arena's and pinned pool's
/// counters, and the jobs its workers prove now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    pub name: String,
    pub ordinal: Option<u32>,
    pub memory: Option<MemoryStatus>,
    pub pinned: Option<MemoryStatus>,
    /// Jobs on this device's workers, with their kinds.
    pub jobs: Vec<(String, ProofKind)>,
}

impl EngineStatus {
    pub fn queue_depth(&self) -> u32 {
        self.queues.iter().map(|q| q.pending).sum()
    }
}

/// What [`Engine::drain`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// All running work finished before the timeout.
    pub finished_in_time: bool,
    /// Jobs left in the spool for the next start.
    pub left_in_spool: usize,
    /// All engine threads have exited (the state directory is free again).
    pub threads_stopped: bool,
}

/// Requests with more payload than this are not kept in memory while queued: the spool
/// has them (a 32 GiB PoRep C1 is about 50 MB, and hundreds may wait).
const PAYLOAD_KEPT_IN_MEMORY: u64 = 1 << 20;

type QKey = (std::cmp::Reverse<Priority>, u64, String);

struct Job {
    kind: ProofKind,
    priority: Priority,
    seq: u64,
    /// [`JobRequest::content_digest`]: the same id with other content is another request.
    /// `None` only for results stored before digests existed.
    digest: Option<String>,
    /// Payload bytes counted in `Sched::spool_bytes` until the job ends.
    payload_bytes: u64,
    request: Option<Arc<JobRequest>>,
    state: JobState,
    /// In the queued set (false while its request is being written).
    spooled: bool,
    cancel: CancelToken,
    plan: Option<JobPlan>,
    planning: bool,
    reserved: u64,
    work: Option<Synthesized>,
    attempts: u32,
    accepted: Instant,
    synthesized_at: Option<Instant>,
    t: StageTimings,
    device: Option<usize>,
    result: Option<Arc<JobResult>>,
    expires_unix_ms: u64,
    watch: watch::Sender<Option<Arc<JobResult>>>,
}

impl Job {
    fn key(&self, id: &str) -> QKey {
        (std::cmp::Reverse(self.priority), self.seq, id.to_string())
    }
    fn in_flight(&self) -> bool {
        matches!(
            self.state,
            JobState::Synthesizing | JobState::Synthesized | JobState::Proving
        )
    }
}

#[derive(Default)]
struct Sched {
    jobs: HashMap<String, Job>,
    queued: BTreeSet<QKey>,
    synthesized: BTreeSet<QKey>,
    mem_in_use: u64,
    mem_high_water: u64,
    /// Payload bytes of accepted jobs without a result (admission: `max_spool_bytes`).
    spool_bytes: u64,
    paused: bool,
    draining: bool,
    stopping: bool,
    next_seq: u64,
    completed: u64,
    failed: u64,
    cancelled: u64,
    worker_jobs: Vec<Option<String>>,
    /// The device of each worker slot.
    worker_device: Vec<usize>,
    /// Worker slots retired by a reload: each leaves once its job (if any) has ended.
    worker_retired: Vec<bool>,
    /// Synthesis threads wanted (a reload changes it); thread i leaves when i >= this.
    synth_target: usize,
    /// Which synthesis thread indices run.
    synth_alive: Vec<bool>,
    live_threads: usize,
}

struct Inner {
    /// The configuration in force (live reload replaces it, see [`Engine::reconfigure`]).
    config: Mutex<EngineConfig>,
    runner: Arc<dyn ProofRunner>,
    devices: Vec<Device>,
    device_locks: Vec<Mutex<()>>,
    spool: Spool,
    srs: Residency<Srs>,
    sched: Mutex<Sched>,
    wake: Condvar,
    events: broadcast::Sender<JobEvent>,
    started: Instant,
    state_lock: Mutex<Option<File>>,
    id_counter: AtomicU64,
}

/// A handle to a running engine; cheap to clone, shareable across async tasks and threads.
///
/// Blocking calls (`submit` writes and fsyncs the request, `preload_srs` loads parameters,
/// `drain` waits) belong in `spawn_blocking` when called from an async runtime;
/// `await_job` is async; the rest return at once.
///
/// Dropping every handle does not stop the engine's threads (a job in progress finishes and
/// stores its result); [`Engine::drain`] is the way to stop.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// A duration in whole milliseconds, saturating (a configured TTL of centuries must not wrap).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `now + d`, or a point far enough away when `d` is too large to add (never panics).
fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86400)))
        .unwrap_or(now)
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn lock(m: &Mutex<Sched>) -> MutexGuard<'_, Sched> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wait<'a>(cv: &Condvar, s: MutexGuard<'a, Sched>, timeout: Duration) -> MutexGuard<'a, Sched> {
    cv.wait_timeout(s, timeout)
        .map(|r| r.0)
        .unwrap_or_else(|p| p.into_inner().0)
}

fn new_job(kind: ProofKind, priority: Priority, seq: u64, request: Option<Arc<JobRequest>>) -> Job {
    Job {
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
        reserved: 0,
        work: None,
        attempts: 0,
        accepted: Instant::now(),
        synthesized_at: None,
        t: StageTimings::default(),
        device: None,
        result: None,
        expires_unix_ms: 0,
        watch: watch::channel(None).0,
    }
}

impl Engine {
    /// Opens the state directory (refusing one another engine holds), recovers the spool
    /// (queued and interrupted jobs run again, or fail once interrupted `max_attempts`
    /// times; stored results come back until their TTL), and starts the threads.
    pub fn start(
        config: EngineConfig,
        runner: Arc<dyn ProofRunner>,
        devices: Vec<Device>,
    ) -> Result<Engine, EngineError> {
        if devices.is_empty() {
            return Err(EngineError::Config(
                "no devices; give at least Device::cpu()".into(),
            ));
        }
        if config.gpu_workers_per_device == 0 || config.synthesis_workers == 0 {
            return Err(EngineError::Config(
                "gpu_workers_per_device and synthesis_workers must be at least 1".into(),
            ));
        }
        if config.host_memory_budget_bytes == 0 {
            return Err(EngineError::Config(
                "host_memory_budget_bytes is 0: no job could ever start".into(),
            ));
        }
        if config.max_attempts == 0 {
            return Err(EngineError::Config(
                "max_attempts must be at least 1".into(),
            ));
        }
        let dir = &config.state_dir;
        std::fs::create_dir_all(dir).map_err(|source| EngineError::Spool {
            path: dir.clone(),
            action: "creating the state directory",
            source,
        })?;
        let lock_path = dir.join("engine.lock");
        let lock_file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| EngineError::Spool {
                path: lock_path.clone(),
                action: "opening the lock file",
                source,
            })?;
        if lock_file.try_lock().is_err() {
            return Err(EngineError::StateDirBusy(dir.clone()));
        }
        let spool = Spool::open(dir)?;
        let recovered = spool.recover()?;
        for u in &recovered.unreadable {
            log::error!("spool: unreadable record {u}");
        }

        // Each device's workers: its own count when set, else gpu_workers_per_device.
        let worker_device: Vec<usize> = devices
            .iter()
            .enumerate()
            .flat_map(|(d, dev)| std::iter::repeat_n(d, dev.workers.unwrap_or(config.gpu_workers_per_device)))
            .collect();
        if worker_device.is_empty() {
            return Err(EngineError::Config("every device has 0 workers; give at least one".into()));
        }
        let workers = worker_device.len();
        let synth = config.synthesis_workers;
        let inner = Arc::new(Inner {
            srs: Residency::new(config.srs_cache_limit_bytes),
            device_locks: devices.iter().map(|_| Mutex::new(())).collect(),
            devices,
            runner,
            spool,
            sched: Mutex::new(Sched {
                worker_jobs: vec![None; workers],
                worker_device,
                worker_retired: vec![false; workers],
                synth_target: synth,
                paused: config.start_paused,
                ..Sched::default()
            }),
            wake: Condvar::new(),
            events: broadcast::channel(1024).0,
            started: Instant::now(),
            state_lock: Mutex::new(Some(lock_file)),
            id_counter: AtomicU64::new(0),
            config: Mutex::new(config),
        });
        let engine = Engine { inner };
        let exhausted = engine.restore(recovered);
        for (id, attempts) in exhausted {
            engine.finish(
                &id,
                JobStatus::Failed,
                Vec::new(),
                Some(format!(
                    "the job was interrupted {attempts} times while it ran (the daemon crashed or \
                     was killed mid-proof); giving up after max_attempts = {}",
                    engine.cfg().max_attempts
                )),
            );
        }
        engine.spawn_threads(workers);
        Ok(engine)
    }

    /// Puts recovered records back; returns jobs that ran out of attempts.
    fn restore(&self, rec: crate::spool::Recovered) -> Vec<(String, u32)> {
        let now = now_unix_ms();
        let ttl = millis(self.cfg().result_ttl);
        let mut s = lock(&self.inner.sched);
        for r in rec.results {
            let expires = r.finished_unix_ms.saturating_add(ttl);
            if expires <= now {
                let _ = self.inner.spool.remove_result(&r.job_id);
                continue;
            }
            let mut job = new_job(r.kind, r.priority, 0, None);
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
            let mut job = new_job(sj.request.kind, sj.priority, sj.seq, None);
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

    fn spawn_threads(&self, workers: usize) {
        let n = self.cfg().synthesis_workers;
        for i in 0..n {
            self.spawn_synthesis(i);
        }
        for w in 0..workers {
            self.spawn_worker(w);
        }
        lock(&self.inner.sched).live_threads += 1;
        let e = self.clone();
        std::thread::Builder::new()
            .name("cuzk-housekeeping".into())
            .spawn(move || {
                e.keep_running("housekeeping", || e.housekeeping_loop());
                e.thread_exit();
            })
            .ok();
    }

    fn spawn_synthesis(&self, i: usize) {
        {
            let mut s = lock(&self.inner.sched);
            if s.synth_alive.len() <= i {
                s.synth_alive.resize(i + 1, false);
            }
            s.synth_alive[i] = true;
            s.live_threads += 1;
        }
        let e = self.clone();
        std::thread::Builder::new()
            .name(format!("cuzk-synth-{i}"))
            .spawn(move || {
                e.keep_running("synthesis", || e.synthesis_loop(i));
                e.thread_exit();
            })
            .ok();
    }

    fn spawn_worker(&self, w: usize) {
        lock(&self.inner.sched).live_threads += 1;
        let e = self.clone();
        std::thread::Builder::new()
            .name(format!("cuzk-worker-{w}"))
            .spawn(move || {
                e.keep_running("worker", || e.worker_loop(w));
                e.thread_exit();
            })
            .ok();
    }

    /// The configuration in force.
    fn cfg(&self) -> EngineConfig {
        self.inner.config.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Applies a new configuration to the running engine (live reload): budgets and limits,
    /// result TTLs, attempts, the parameter cache limit, synthesis threads and each device's
    /// proving workers. Nothing queued or running is lost: a retired synthesis thread or
    /// worker leaves after its current job; a lower memory budget holds back new synthesis
    /// until jobs in flight have returned their memory. `device_workers[d]` is device d's
    /// own worker count (`None`: `gpu_workers_per_device`). The state directory cannot
    /// change (a restart moves it). Returns what changed, one line per setting.
    pub fn reconfigure(&self, new: EngineConfig, device_workers: &[Option<usize>]) -> Result<Vec<String>, EngineError> {
        let old = self.cfg();
        if new.state_dir != old.state_dir {
            return Err(EngineError::Config(format!(
                "state_dir cannot change while the engine runs ({} -> {}); restart to move it",
                old.state_dir.display(),
                new.state_dir.display()
            )));
        }
        if device_workers.len() != self.inner.devices.len() {
            return Err(EngineError::Config(format!(
                "{} device worker counts for {} devices (the device list changes only with a restart)",
                device_workers.len(),
                self.inner.devices.len()
            )));
        }
        if new.gpu_workers_per_device == 0 || new.synthesis_workers == 0 || new.host_memory_budget_bytes == 0 || new.max_attempts == 0 {
            return Err(EngineError::Config(
                "gpu_workers_per_device, synthesis_workers, host_memory_budget_bytes and max_attempts must be at least 1".into(),
            ));
        }
        let targets: Vec<usize> = device_workers.iter().map(|w| w.unwrap_or(new.gpu_workers_per_device)).collect();
        if targets.iter().all(|&t| t == 0) {
            return Err(EngineError::Config("every device would have 0 workers; give at least one".into()));
        }
        let mut changes = Vec::new();
        let mut note = |what: &str, a: String, b: String| {
            if a != b {
                changes.push(format!("{what}: {a} -> {b}"));
            }
        };
        note("host_memory_budget_bytes", old.host_memory_budget_bytes.to_string(), new.host_memory_budget_bytes.to_string());
        note("synthesis_workers", old.synthesis_workers.to_string(), new.synthesis_workers.to_string());
        note("max_queued_jobs", old.max_queued_jobs.to_string(), new.max_queued_jobs.to_string());
        note("max_spool_bytes", old.max_spool_bytes.to_string(), new.max_spool_bytes.to_string());
        note("srs_cache_limit_bytes", old.srs_cache_limit_bytes.to_string(), new.srs_cache_limit_bytes.to_string());
        note("result_ttl", format!("{:?}", old.result_ttl), format!("{:?}", new.result_ttl));
        note("fetched_result_ttl", format!("{:?}", old.fetched_result_ttl), format!("{:?}", new.fetched_result_ttl));
        note("max_attempts", old.max_attempts.to_string(), new.max_attempts.to_string());
        self.inner.srs.set_limit(new.srs_cache_limit_bytes);
        let synth = new.synthesis_workers;
        *self.inner.config.lock().unwrap_or_else(|p| p.into_inner()) = EngineConfig { start_paused: old.start_paused, ..new };
        // Synthesis threads: indices below the target run; missing ones start.
        let missing: Vec<usize> = {
            let mut s = lock(&self.inner.sched);
            s.synth_target = synth;
            (0..synth).filter(|&i| !s.synth_alive.get(i).copied().unwrap_or(false)).collect()
        };
        for i in missing {
            self.spawn_synthesis(i);
        }
        // Workers, device by device: retire the newest slots above the target, add slots
        // below it.
        let mut start = Vec::new();
        {
            let mut s = lock(&self.inner.sched);
            for (d, &target) in targets.iter().enumerate() {
                let live: Vec<usize> =
                    (0..s.worker_device.len()).filter(|&w| s.worker_device[w] == d && !s.worker_retired[w]).collect();
                if live.len() != target {
                    changes.push(format!("workers on {}: {} -> {target}", self.inner.devices[d].name, live.len()));
                }
                for &w in live.iter().skip(target) {
                    s.worker_retired[w] = true;
                }
                for _ in live.len()..target {
                    s.worker_device.push(d);
                    s.worker_retired.push(false);
                    s.worker_jobs.push(None);
                    start.push(s.worker_device.len() - 1);
                }
            }
        }
        for w in start {
            self.spawn_worker(w);
        }
        self.inner.wake.notify_all();
        Ok(changes)
    }

    /// Runs a thread's loop again if engine code itself panics (runner stages are contained
    /// one level down, per job, by [`contained`]): a thread of the engine never dies of a
    /// panic while the engine runs.
    fn keep_running(&self, what: &str, body: impl Fn()) {
        loop {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&body)) {
                Ok(()) => return,
                Err(p) => {
                    log::error!("engine {what} thread: panic in engine code (a bug), restarting its loop: {}", crate::panic::panic_message(&*p));
                    if lock(&self.inner.sched).stopping {
                        return;
                    }
                }
            }
        }
    }

    fn thread_exit(&self) {
        let mut s = lock(&self.inner.sched);
        s.live_threads = s.live_threads.saturating_sub(1);
        if s.live_threads == 0 {
            // The last thread out frees the state directory for the next engine.
            if let Some(f) = self
                .inner
                .state_lock
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                let _ = f.unlock();
            }
        }
        self.inner.wake.notify_all();
    }

    fn emit(&self, id: &str, kind: ProofKind, state: JobState) {
        log::debug!("job {id} ({}) -> {}", kind.queue_name(), state.name());
        let _ = self.inner.events.send(JobEvent {
            job_id: id.to_string(),
            kind,
            state,
        });
    }

    fn generate_id(&self) -> String {
        let n = self.inner.id_counter.fetch_add(1, Ordering::Relaxed);
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
            let mut s = lock(&self.inner.sched);
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
                            queue_position: queue_position(&s, &id),
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
            let mut job = new_job(kind, priority, seq, Some(request.clone()));
            job.digest = Some(digest.clone());
            job.payload_bytes = payload;
            s.spool_bytes += payload;
            s.jobs.insert(id.clone(), job);
            (seq, replaced)
        };
        // The old result goes before the new request is durable: a crash in between must
        // not leave both (recovery lets a result win over its request).
        let written = if replaced { self.inner.spool.remove_result(&id) } else { Ok(()) }.and_then(|_| {
            self.inner.spool.put_job(&SpooledJobRef {
                job_id: &id,
                seq,
                priority,
                accepted_unix_ms: now_unix_ms(),
                digest: &digest,
                payload_bytes: payload,
                request: &request,
            })
        });
        let mut s = lock(&self.inner.sched);
        if let Err(e) = written {
            // Not durable, so not accepted. Anyone who attached meanwhile sees NotFound.
            if let Some(j) = s.jobs.remove(&id) {
                s.spool_bytes = s.spool_bytes.saturating_sub(j.payload_bytes);
            }
            drop(s);
            let _ = self.inner.spool.remove_job(&id);
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
                self.inner.wake.notify_all();
            }
        }
        let queue_position = queue_position(&s, &id);
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
            let s = lock(&self.inner.sched);
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
        let mut s = lock(&self.inner.sched);
        if let Some(j) = s.jobs.get_mut(id) {
            j.expires_unix_ms = j.expires_unix_ms.min(until);
        }
    }

    /// Cancels a queued job at once, or a running one at its next stage boundary.
    pub fn cancel(&self, id: &str) -> Result<CancelOutcome, EngineError> {
        let mut s = lock(&self.inner.sched);
        let j = s
            .jobs
            .get_mut(id)
            .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        if let Some(r) = &j.result {
            return Ok(CancelOutcome::AlreadyFinished(r.status));
        }
        let outcome = match j.state {
            JobState::Queued => CancelOutcome::Dequeued,
            JobState::Synthesized => {
                // Holds memory but no thread: end it here.
                j.cancel.cancel();
                CancelOutcome::Stopping
            }
            JobState::Synthesizing | JobState::Proving => {
                j.cancel.cancel();
                return Ok(CancelOutcome::Stopping);
            }
            // Terminal, result being written: nothing to stop.
            state => {
                let status = match state {
                    JobState::Completed => JobStatus::Completed,
                    JobState::Failed => JobStatus::Failed,
                    _ => JobStatus::Cancelled,
                };
                return Ok(CancelOutcome::AlreadyFinished(status));
            }
        };
        drop(s);
        let msg = match outcome {
            CancelOutcome::Dequeued => "cancelled before it started",
            _ => "cancelled after synthesis, before proving",
        };
        self.finish(id, JobStatus::Cancelled, Vec::new(), Some(msg.into()));
        Ok(outcome)
    }

    /// Ends a job: result to the spool, then to waiters and events. Idempotent.
    fn finish(&self, id: &str, status: JobStatus, proof: Vec<u8>, error: Option<String>) {
        let result = {
            let mut s = lock(&self.inner.sched);
            let Some(j) = s.jobs.get_mut(id) else { return };
            if j.state.is_terminal() {
                return;
            }
            let key = j.key(id);
            let reserved = std::mem::take(&mut j.reserved);
            j.work = None;
            if status != JobStatus::Completed && j.cancel.is_shutdown() {
                // Stopped by a shutdown, not by the job: it stays in the spool, and this
                // start does not count as an attempt.
                j.state = JobState::Queued;
                j.spooled = true;
                let attempts = j.attempts.saturating_sub(1);
                j.attempts = attempts;
                s.mem_in_use = s.mem_in_use.saturating_sub(reserved);
                s.synthesized.remove(&key);
                drop(s);
                let _ = self.inner.spool.put_attempts(id, attempts);
                self.inner.wake.notify_all();
                return;
            }
            j.request = None;
            j.plan = None;
            let payload = std::mem::take(&mut j.payload_bytes);
            let digest = j.digest.clone();
            j.state = status.state();
            j.t.total = j.accepted.elapsed();
            let result = JobResult {
                job_id: id.to_string(),
                kind: j.kind,
                priority: j.priority,
                status,
                proof,
                error,
                timings: j.t,
                finished_unix_ms: now_unix_ms(),
                attempts: j.attempts,
                digest,
            };
            j.expires_unix_ms = result
                .finished_unix_ms
                .saturating_add(millis(self.cfg().result_ttl));
            s.spool_bytes = s.spool_bytes.saturating_sub(payload);
            s.queued.remove(&key);
            s.synthesized.remove(&key);
            s.mem_in_use = s.mem_in_use.saturating_sub(reserved);
            match status {
                JobStatus::Completed => s.completed += 1,
                JobStatus::Failed => s.failed += 1,
                JobStatus::Cancelled => s.cancelled += 1,
            }
            self.inner.wake.notify_all();
            Arc::new(result)
        };
        match &result.error {
            Some(e) => log::warn!("job {id} {}: {e}", result.status.state().name()),
            None => log::info!("job {id} completed in {:?}", result.timings.total),
        }
        if let Err(e) = self.inner.spool.put_result(&result) {
            log::error!("job {id}: result not stored, it will run again after a restart: {e}");
        }
        let kind = result.kind;
        {
            let mut s = lock(&self.inner.sched);
            if let Some(j) = s.jobs.get_mut(id) {
                j.result = Some(result.clone());
                j.watch.send_replace(Some(result.clone()));
            }
        }
        self.emit(id, kind, result.status.state());
    }

    fn synthesis_loop(&self, index: usize) {
        let inner = &*self.inner;
        loop {
            enum Next {
                Plan(String, Option<Arc<JobRequest>>),
                Fail(String, String),
                Synthesize(String),
            }
            let next = {
                let config = self.cfg();
                let mut s = lock(&inner.sched);
                loop {
                    if s.stopping || index >= s.synth_target {
                        // Under the lock, so that a reload that raises the target again
                        // starts this index anew rather than counting on this thread.
                        s.synth_alive[index] = false;
                        return;
                    }
                    if let Some(n) = (!s.paused && !s.draining)
                        .then(|| pick_for_synthesis(&mut s, &config))
                        .flatten()
                    {
                        break n;
                    }
                    s = wait(&inner.wake, s, Duration::from_millis(500));
                }
            };
            match next {
                Next::Plan(id, request) => {
                    let plan = self.request_of(&id, request).and_then(|r| {
                        contained("plan", || inner.runner.plan(&r)).map(|p| (p, r)).map_err(|e| e.to_string())
                    });
                    let mut s = lock(&inner.sched);
                    let Some(j) = s.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.planning = false;
                    match plan {
                        Ok((p, r)) => {
                            j.plan = Some(p);
                            // A small request read back from the spool (after a restart) stays
                            // for synthesis instead of being read a second time; a large one
                            // goes back to waiting on disk.
                            if r.payload_bytes() <= PAYLOAD_KEPT_IN_MEMORY {
                                j.request = Some(r);
                            }
                            inner.wake.notify_all();
                        }
                        Err(e) => {
                            drop(s);
                            self.finish(&id, JobStatus::Failed, Vec::new(), Some(e));
                        }
                    }
                }
                Next::Fail(id, msg) => self.finish(&id, JobStatus::Failed, Vec::new(), Some(msg)),
                Next::Synthesize(id) => self.synthesize(&id),
            }

            fn pick_for_synthesis(s: &mut Sched, config: &EngineConfig) -> Option<Next> {
                let (_, _, id) = s.queued.first()?.clone();
                let in_use = s.mem_in_use;
                let j = s.jobs.get_mut(&id)?;
                match &j.plan {
                    None if j.planning => None,
                    None => {
                        j.planning = true;
                        Some(Next::Plan(id, j.request.clone()))
                    }
                    Some(p) if p.footprint_bytes > config.host_memory_budget_bytes => {
                        Some(Next::Fail(
                            id,
                            format!(
                                "the job needs {} bytes of host memory for synthesis and proving, \
                             more than host_memory_budget_bytes = {}; raise the budget",
                                p.footprint_bytes, config.host_memory_budget_bytes
                            ),
                        ))
                    }
                    Some(p) if in_use + p.footprint_bytes > config.host_memory_budget_bytes => None,
                    Some(p) => {
                        let fp = p.footprint_bytes;
                        let key = j.key(&id);
                        j.state = JobState::Synthesizing;
                        j.reserved = fp;
                        j.attempts += 1;
                        j.t.queue_wait = j.accepted.elapsed();
                        s.queued.remove(&key);
                        s.mem_in_use += fp;
                        s.mem_high_water = s.mem_high_water.max(s.mem_in_use);
                        Some(Next::Synthesize(id))
                    }
                }
            }
        }
    }

    fn synthesize(&self, id: &str) {
        let inner = &*self.inner;
        let (request, plan, cancel, attempts, kind) = {
            let s = lock(&inner.sched);
            let Some(j) = s.jobs.get(id) else { return };
            (
                j.request.clone(),
                j.plan.clone(),
                j.cancel.clone(),
                j.attempts,
                j.kind,
            )
        };
        let (request, plan) = match (self.request_of(id, request), plan) {
            (Ok(r), Some(p)) => (r, p),
            (Err(e), _) => return self.finish(id, JobStatus::Failed, Vec::new(), Some(e)),
            (_, None) => {
                let msg = "engine fault: synthesis started without a plan".to_string();
                return self.finish(id, JobStatus::Failed, Vec::new(), Some(msg));
            }
        };
        // Durable before it runs: a crash from here on counts as an interrupted attempt.
        if let Err(e) = inner.spool.put_attempts(id, attempts) {
            log::error!("job {id}: attempt count not stored: {e}");
        }
        self.emit(id, kind, JobState::Synthesizing);
        let start = Instant::now();
        let out = cancel
            .check()
            .and_then(|_| contained("synthesize", || inner.runner.synthesize(&request, &plan, &cancel)));
        let elapsed = start.elapsed();
        match out {
            Ok(work) if !cancel.is_cancelled() => {
                let mut s = lock(&inner.sched);
                let Some(j) = s.jobs.get_mut(id) else { return };
                j.t.synthesis += elapsed;
                j.work = Some(work);
                j.state = JobState::Synthesized;
                j.synthesized_at = Some(Instant::now());
                let key = j.key(id);
                s.synthesized.insert(key);
                self.emit(id, kind, JobState::Synthesized);
                inner.wake.notify_all();
                drop(s);
            }
            Ok(_) | Err(RunError::Cancelled) => self.finish(
                id,
                JobStatus::Cancelled,
                Vec::new(),
                Some("cancelled during synthesis".into()),
            ),
            Err(e) if cancel.is_cancelled() => {
                log::debug!("job {id}: synthesis stopped by cancel: {e}");
                self.finish(
                    id,
                    JobStatus::Cancelled,
                    Vec::new(),
                    Some("cancelled during synthesis".into()),
                )
            }
            Err(e) => self.finish(id, JobStatus::Failed, Vec::new(), Some(e.to_string())),
        }
    }

    /// The job's request: the one in memory, or read back from the spool.
    fn request_of(
        &self,
        id: &str,
        cached: Option<Arc<JobRequest>>,
    ) -> Result<Arc<JobRequest>, String> {
        match cached {
            Some(r) => Ok(r),
            None => self
                .inner
                .spool
                .get_job(id)
                .map(|sj| Arc::new(sj.request))
                .map_err(|e| format!("the spooled request could not be read back: {e}")),
        }
    }

    fn worker_loop(&self, worker: usize) {
        let inner = &*self.inner;
        let device = lock(&inner.sched).worker_device[worker];
        loop {
            let (id, kind, work, plan, cancel) = {
                let mut s = lock(&inner.sched);
                let id = loop {
                    if s.stopping || s.worker_retired[worker] {
                        return;
                    }
                    // A drain finishes what has started, paused or not.
                    if !s.paused || s.draining {
                        if let Some((_, _, id)) = s.synthesized.pop_first() {
                            break id;
                        }
                    }
                    s = wait(&inner.wake, s, Duration::from_millis(500));
                };
                let Some(j) = s.jobs.get_mut(&id) else {
                    continue;
                };
                let (Some(work), Some(plan)) = (j.work.take(), j.plan.clone()) else {
                    continue;
                };
                j.state = JobState::Proving;
                j.device = Some(device);
                if let Some(t) = j.synthesized_at {
                    j.t.synthesized_wait = t.elapsed();
                }
                let out = (id.clone(), j.kind, work, plan, j.cancel.clone());
                s.worker_jobs[worker] = Some(id);
                out
            };
            self.emit(&id, kind, JobState::Proving);
            self.prove_on(device, &id, work, &plan, &cancel);
            lock(&inner.sched).worker_jobs[worker] = None;
        }
    }

    fn prove_on(
        &self,
        device: usize,
        id: &str,
        work: Synthesized,
        plan: &JobPlan,
        cancel: &CancelToken,
    ) {
        let inner = &*self.inner;
        let mut srs_load = Duration::ZERO;
        let srs = match &plan.srs {
            None => None,
            Some(r) => match contained("parameter load", || {
                self.resident_srs(&r.circuit_id, r).map_err(|e| RunError::Params(e.to_string()))
            }) {
                Ok((srs, load_time)) => {
                    srs_load = load_time.unwrap_or_default();
                    Some(srs)
                }
                Err(e) => {
                    let msg = format!("parameters of circuit {}: {e}", r.circuit_id);
                    return self.finish(id, JobStatus::Failed, Vec::new(), Some(msg));
                }
            },
        };
        let dev = &inner.devices[device];
        let backend = DeviceBackend::new(&*dev.backend, &inner.device_locks[device], cancel);
        let start = Instant::now();
        let out = cancel.check().and_then(|_| {
            contained("prove", || {
                inner.runner.prove(
                    work,
                    ProveContext {
                        srs: srs.as_deref(),
                        backend: &backend,
                        cancel,
                    },
                )
            })
        });
        let prove = start.elapsed();
        drop(srs);
        {
            let mut s = lock(&inner.sched);
            if let Some(j) = s.jobs.get_mut(id) {
                j.t.srs_load = srs_load;
                j.t.prove = prove;
                j.t.gpu_compute = backend.busy();
                j.t.device_wait = backend.lock_wait();
                if let Ok(o) = &out {
                    j.t.synthesis += o.synthesis;
                    j.t.verify = o.verify;
                }
            }
        }
        match out {
            Ok(o) => self.finish(id, JobStatus::Completed, o.proof, None),
            Err(_) if cancel.is_cancelled() => self.finish(
                id,
                JobStatus::Cancelled,
                Vec::new(),
                Some("cancelled while proving".into()),
            ),
            Err(e) => self.finish(id, JobStatus::Failed, Vec::new(), Some(e.to_string())),
        }
    }

    fn housekeeping_loop(&self) {
        let inner = &*self.inner;
        let c = self.cfg();
        let period = (c.result_ttl.min(c.fetched_result_ttl) / 4)
            .clamp(Duration::from_millis(20), Duration::from_secs(5));
        let mut s = lock(&inner.sched);
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
                    if let Err(e) = inner.spool.remove_result(id) {
                        log::error!("{e}");
                    }
                }
                s = lock(&inner.sched);
            }
            s = wait(&inner.wake, s, period);
        }
    }

    /// No new job starts until [`Engine::resume`]; running and synthesized jobs go on.
    pub fn pause(&self) {
        lock(&self.inner.sched).paused = true;
    }

    pub fn resume(&self) {
        lock(&self.inner.sched).paused = false;
        self.inner.wake.notify_all();
    }

    /// Graceful stop: accepts nothing more, starts nothing more, waits up to `timeout` for
    /// running work, then stops what still runs at its next stage boundary and leaves it, with
    /// every queued job, in the spool for the next start. Blocking.
    pub fn drain(&self, timeout: Duration) -> DrainReport {
        let inner = &*self.inner;
        let deadline = deadline_after(timeout);
        let mut s = lock(&inner.sched);
        s.draining = true;
        inner.wake.notify_all();
        let busy = |s: &Sched| s.jobs.values().filter(|j| j.in_flight()).count();
        while busy(&s) > 0 && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = wait(&inner.wake, s, left);
        }
        let finished_in_time = busy(&s) == 0;
        s.stopping = true;
        let mut idle = Vec::new();
        for (id, j) in &s.jobs {
            if j.in_flight() {
                j.cancel.shut_down();
                if j.state == JobState::Synthesized {
                    idle.push(id.clone());
                }
            }
        }
        inner.wake.notify_all();
        drop(s);
        // Synthesized jobs have no thread to notice the shutdown: put them back here.
        for id in idle {
            self.finish(&id, JobStatus::Cancelled, Vec::new(), None);
        }
        let mut s = lock(&inner.sched);
        // Threads stop at their next stage boundary; give them what is left of the timeout,
        // and at least a moment.
        let deadline = deadline.max(Instant::now() + Duration::from_millis(200));
        while s.live_threads > 0 && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = wait(&inner.wake, s, left);
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
            .inner
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
    fn resident_srs(
        &self,
        circuit_id: &str,
        r: &SrsRef,
    ) -> Result<(Arc<Srs>, Option<Duration>), SrsError> {
        self.inner.srs.get_or_load(circuit_id, r.bytes, || {
            Srs::load(&r.path).map(|srs| {
                let bytes = srs.shape_of().point_bytes() as u64;
                (srs, bytes)
            })
        })
    }

    /// Drops a circuit's parameters when no job holds them: (was_loaded, freed_bytes);
    /// [`EngineError::SrsInUse`] while jobs do (nothing is dropped).
    pub fn evict_srs(&self, circuit_id: &str) -> Result<(bool, u64), EngineError> {
        self.inner.srs.evict(circuit_id).map_err(|jobs| EngineError::SrsInUse {
            circuit_id: circuit_id.to_string(),
            jobs,
        })
    }

    /// State changes of every job, as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.inner.events.subscribe()
    }

    /// One job, while it is known (running, queued, or result not yet expired).
    pub fn job(&self, id: &str) -> Result<JobInfo, EngineError> {
        let s = lock(&self.inner.sched);
        let j = s
            .jobs
            .get(id)
            .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        Ok(self.info(id, j))
    }

    fn info(&self, id: &str, j: &Job) -> JobInfo {
        JobInfo {
            job_id: id.to_string(),
            kind: j.kind,
            priority: j.priority,
            state: j.state,
            attempts: j.attempts,
            device: self.device_name(j),
            error: j.result.as_ref().and_then(|r| r.error.clone()),
        }
    }

    /// The device a job was given (while proving, and after).
    fn device_name(&self, j: &Job) -> Option<String> {
        j.device.and_then(|d| self.inner.devices.get(d)).map(|d| d.name.clone())
    }

    /// All known jobs, in queue order first, then the rest by id.
    pub fn list_jobs(&self) -> Vec<JobInfo> {
        let s = lock(&self.inner.sched);
        let mut v: Vec<(u8, u64, &String, &Job)> = s
            .jobs
            .iter()
            .map(|(id, j)| (j.state.is_terminal() as u8, j.seq, id, j))
            .collect();
        v.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        v.into_iter()
            .map(|(_, _, id, j)| self.info(id, j))
            .collect()
    }

    pub fn status(&self) -> EngineStatus {
        let inner = &*self.inner;
        let s = lock(&inner.sched);
        let queues = ProofKind::ALL
            .iter()
            .map(|&kind| QueueStatus {
                kind,
                pending: s
                    .jobs
                    .values()
                    .filter(|j| j.kind == kind && j.state == JobState::Queued)
                    .count() as u32,
                in_progress: s
                    .jobs
                    .values()
                    .filter(|j| j.kind == kind && j.in_flight())
                    .count() as u32,
            })
            .collect();
        let state = if s.stopping {
            EngineState::Stopped
        } else if s.draining {
            EngineState::Draining
        } else if s.paused {
            EngineState::Paused
        } else {
            EngineState::Running
        };
        EngineStatus {
            state,
            queues,
            running: s.jobs.values().filter(|j| j.in_flight()).count() as u32,
            completed: s.completed,
            failed: s.failed,
            cancelled: s.cancelled,
            uptime: inner.started.elapsed(),
            memory: MemoryStatus {
                budget_bytes: self.cfg().host_memory_budget_bytes,
                in_use_bytes: s.mem_in_use,
                high_water_bytes: s.mem_high_water,
            },
            srs: inner.srs.status(),
            workers: s
                .worker_jobs
                .iter()
                .enumerate()
                .filter(|(w, id)| !s.worker_retired[*w] || id.is_some())
                .map(|(w, id)| WorkerStatus {
                    device: inner.devices[s.worker_device[w]].name.clone(),
                    job_id: id.clone(),
                    kind: id.as_ref().and_then(|id| s.jobs.get(id)).map(|j| j.kind),
                })
                .collect(),
            devices: inner
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| DeviceStatus {
                    name: d.name.clone(),
                    ordinal: d.ordinal,
                    memory: d.memory.as_ref().map(|probe| probe()),
                    pinned: d.pinned.as_ref().map(|probe| probe()),
                    jobs: s
                        .worker_jobs
                        .iter()
                        .enumerate()
                        .filter(|(w, _)| s.worker_device[*w] == i)
                        .filter_map(|(_, id)| id.as_ref())
                        .filter_map(|id| s.jobs.get(id).map(|j| (id.clone(), j.kind)))
                        .collect(),
                })
                .collect(),
        }
    }

    /// Prometheus text exposition of [`Engine::status`].
    pub fn metrics_text(&self) -> String {
        crate::metrics::render(&self.status())
    }
}

fn queue_position(s: &Sched, id: &str) -> u32 {
    match s.jobs.get(id) {
        Some(j) if j.state == JobState::Queued => s.queued.range(..=j.key(id)).count() as u32,
        _ => 0,
    }
}
