//! The engine: accepted jobs, their partitions, the threads that run them, and what they
//! report. One file per concern:
//!
//! - [`config`]: settings, defaults, checks;
//! - `queue`: the scheduler's state (queued and started jobs, synthesized partitions, the
//!   memory budget) and the order rules, as pure functions under the one lock;
//! - `lifecycle`: a job from submit to its result (spool, cancel, the end of a job,
//!   recovery, drain) and parameter residency;
//! - `threads`: the loops that run partitions (synthesis, workers, housekeeping);
//! - `status`: what status, D-Bus, metrics and sd_notify read.
//!
//! Threads, and why:
//!
//! - `synthesis_workers` synthesis threads take the next partition in priority order
//!   (priority, acceptance, partition index), of any started job or of the first queued one,
//!   each reserving one partition's host memory before it starts, so several partitions of
//!   one job or of several are synthesized at once as far as the budget allows. They also
//!   run each job's last step (assembly and verification) once its partitions are proved,
//!   so the workers never do CPU-only work.
//! - `urgent_synthesis_workers` threads (the urgent lane) do the same for jobs of priority
//!   High or Critical only (WindowPoSt, WinningPoSt), so a WinningPoSt never waits for a
//!   bulk synthesis thread to come out of a 32 GiB partition. Its first thread takes Critical
//!   jobs only, so a WindowPoSt partition (27-63 s of synthesis at 32 GiB) never holds the
//!   thread a WinningPoSt needs; a High job goes to the lane's other threads, if any, or
//!   waits at most for a bulk thread's partition, ahead of every Normal or Low job. The
//!   runner sees the lane ([`crate::lane::on_urgent_lane`]) and may synthesize at a
//!   higher CPU priority.
//! - `gpu_workers_per_device x devices` worker threads take the synthesized partition of the
//!   highest-priority job, on any device: a higher-priority job's partitions go before the
//!   remaining ones of a lower job, so an urgent proof waits for at most the partition in
//!   flight on each worker. Kernels run under the per-device lock
//!   ([`crate::device::DeviceBackend`]); everything else runs outside it.
//!   A worker whose proof fails in the device's backend (`RunError::Device`) marks its
//!   device unhealthy: that device's workers take no partition until a reconfigure, and the
//!   partition is synthesized again for another device (the rule is in `queue`).
//! - one housekeeping thread removes results whose time has passed.
//!
//! All scheduling state sits behind one mutex with one condition variable; no I/O happens
//! under it except where noted. Proving threads are plain OS threads, never async tasks:
//! a proof blocks for seconds to minutes.
//!
//! After a crash, a job's partitions proved before it are redone: the spool keeps the
//! request and the attempt count, never partial proofs (a 32 GiB partition proof is 192
//! bytes but only worth keeping with its job's exact input and parameters, and redoing at
//! most one job's partitions costs minutes, where a wrong mix would cost a sector).

pub mod config;
mod lifecycle;
mod queue;
mod status;
mod threads;

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cuzk_groth16::{DeviceLock, Srs};
use tokio::sync::broadcast;

pub use config::{default_memory_budget, default_srs_cache_limit, EngineConfig};
pub use crate::runner::MemoryStatus;
pub use status::{DeviceStatus, DrainReport, EngineState, EngineStatus, QueueStatus, WorkerStatus};

use crate::error::EngineError;
use crate::job::*;
use crate::residency::Residency;
use crate::device::Device;
use crate::runner::ProofRunner;
use crate::spool::Spool;
use queue::{DeviceHealth, Lane, SchedulerState};

/// Requests with more payload than this are not kept in memory while queued: the spool
/// has them (a 32 GiB PoRep C1 is about 50 MB, and hundreds may wait).
const PAYLOAD_KEPT_IN_MEMORY: u64 = 1 << 20;

struct EngineShared {
    /// The configuration in force (live reload replaces it, see [`Engine::reconfigure`]).
    config: Mutex<EngineConfig>,
    runner: Arc<dyn ProofRunner>,
    devices: Vec<Device>,
    /// Per device, the lock for a backend without its own ([`crate::device::DeviceBackend`]).
    device_locks: Vec<DeviceLock>,
    spool: Spool,
    srs: Residency<Srs>,
    sched: Mutex<SchedulerState>,
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
    shared: Arc<EngineShared>,
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

fn lock(m: &Mutex<SchedulerState>) -> MutexGuard<'_, SchedulerState> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wait<'a>(cv: &Condvar, s: MutexGuard<'a, SchedulerState>, timeout: Duration) -> MutexGuard<'a, SchedulerState> {
    cv.wait_timeout(s, timeout)
        .map(|r| r.0)
        .unwrap_or_else(|p| p.into_inner().0)
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
        config.validate()?;
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
        let device_count = devices.len();
        let synth = [config.synthesis_workers, config.urgent_synthesis_workers];
        let shared = Arc::new(EngineShared {
            srs: {
                let srs = Residency::new(config.srs_cache_limit_bytes);
                srs.set_pinned(config.srs_pinned.clone());
                srs
            },
            device_locks: devices.iter().map(|_| DeviceLock::new()).collect(),
            devices,
            runner,
            spool,
            sched: Mutex::new(SchedulerState {
                worker_jobs: vec![None; workers],
                worker_device,
                worker_retired: vec![false; workers],
                device_health: vec![DeviceHealth::healthy(); device_count],
                synth_target: synth,
                paused: config.start_paused,
                ..SchedulerState::default()
            }),
            wake: Condvar::new(),
            events: broadcast::channel(1024).0,
            started: Instant::now(),
            state_lock: Mutex::new(Some(lock_file)),
            id_counter: AtomicU64::new(0),
            config: Mutex::new(config),
        });
        let engine = Engine { shared };
        let exhausted = engine.restore(recovered);
        for (id, attempts) in exhausted {
            engine.end_job(
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


    fn spawn_threads(&self, workers: usize) {
        let cfg = self.cfg();
        for (lane, n) in [(Lane::All, cfg.synthesis_workers), (Lane::Urgent, cfg.urgent_synthesis_workers)] {
            for i in 0..n {
                self.spawn_synthesis(lane, i);
            }
        }
        for w in 0..workers {
            self.spawn_worker(w);
        }
        lock(&self.shared.sched).live_threads += 1;
        let e = self.clone();
        std::thread::Builder::new()
            .name("cuzk-housekeeping".into())
            .spawn(move || {
                e.keep_running("housekeeping", || e.housekeeping_loop());
                e.thread_exit();
            })
            .ok();
    }

    fn spawn_synthesis(&self, lane: Lane, i: usize) {
        {
            let mut s = lock(&self.shared.sched);
            let alive = &mut s.synth_alive[lane.index()];
            if alive.len() <= i {
                alive.resize(i + 1, false);
            }
            alive[i] = true;
            s.live_threads += 1;
        }
        let e = self.clone();
        std::thread::Builder::new()
            .name(format!("{}-{i}", lane.thread_name()))
            .spawn(move || {
                e.keep_running("synthesis", || e.synthesis_loop(lane, i));
                e.thread_exit();
            })
            .ok();
    }

    fn spawn_worker(&self, w: usize) {
        lock(&self.shared.sched).live_threads += 1;
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
        self.shared.config.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Applies a new configuration to the running engine (live reload): budgets and limits,
    /// result TTLs, attempts, the parameter cache limit, synthesis threads and each device's
    /// proving workers. Nothing queued or running is lost: a retired synthesis thread or
    /// worker leaves after its current partition (or a job's last step); a lower memory
    /// budget holds back new synthesis until partitions in flight have returned their
    /// memory, and fails a started job whose partitions no longer fit at all. `device_workers[d]` is device d's
    /// own worker count (`None`: `gpu_workers_per_device`). The state directory cannot
    /// change (a restart moves it). A device marked unhealthy by a device failure is
    /// healthy again once this gives it workers (a reload is how an operator says "try it
    /// again"; if it fails again it is marked again). Returns what changed, one line per
    /// setting.
    pub fn reconfigure(&self, new: EngineConfig, device_workers: &[Option<usize>]) -> Result<Vec<String>, EngineError> {
        let old = self.cfg();
        if new.state_dir != old.state_dir {
            return Err(EngineError::Config(format!(
                "state_dir cannot change while the engine runs ({} -> {}); restart to move it",
                old.state_dir.display(),
                new.state_dir.display()
            )));
        }
        if device_workers.len() != self.shared.devices.len() {
            return Err(EngineError::Config(format!(
                "{} device worker counts for {} devices (the device list changes only with a restart)",
                device_workers.len(),
                self.shared.devices.len()
            )));
        }
        new.validate()?;
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
        note(
            "urgent_synthesis_workers",
            old.urgent_synthesis_workers.to_string(),
            new.urgent_synthesis_workers.to_string(),
        );
        note("max_queued_jobs", old.max_queued_jobs.to_string(), new.max_queued_jobs.to_string());
        note("max_spool_bytes", old.max_spool_bytes.to_string(), new.max_spool_bytes.to_string());
        note("srs_cache_limit_bytes", old.srs_cache_limit_bytes.to_string(), new.srs_cache_limit_bytes.to_string());
        note("srs_pinned", format!("{:?}", old.srs_pinned), format!("{:?}", new.srs_pinned));
        note("result_ttl", format!("{:?}", old.result_ttl), format!("{:?}", new.result_ttl));
        note("fetched_result_ttl", format!("{:?}", old.fetched_result_ttl), format!("{:?}", new.fetched_result_ttl));
        note("max_attempts", old.max_attempts.to_string(), new.max_attempts.to_string());
        note("prover", format!("{:?}", old.prover), format!("{:?}", new.prover));
        self.shared.srs.set_pinned(new.srs_pinned.clone());
        self.shared.srs.set_limit(new.srs_cache_limit_bytes);
        let synth = [new.synthesis_workers, new.urgent_synthesis_workers];
        *self.shared.config.lock().unwrap_or_else(|p| p.into_inner()) = EngineConfig { start_paused: old.start_paused, ..new };
        // Synthesis threads: indices below their lane's target run; missing ones start.
        let missing: Vec<(Lane, usize)> = {
            let mut s = lock(&self.shared.sched);
            s.synth_target = synth;
            Lane::BOTH
                .into_iter()
                .flat_map(|lane| (0..synth[lane.index()]).map(move |i| (lane, i)))
                .filter(|&(lane, i)| !s.synth_alive[lane.index()].get(i).copied().unwrap_or(false))
                .collect()
        };
        for (lane, i) in missing {
            self.spawn_synthesis(lane, i);
        }
        // Workers, device by device: retire the newest slots above the target, add slots
        // below it.
        let mut start = Vec::new();
        {
            let mut s = lock(&self.shared.sched);
            for (d, &target) in targets.iter().enumerate() {
                let live: Vec<usize> =
                    (0..s.worker_device.len()).filter(|&w| s.worker_device[w] == d && !s.worker_retired[w]).collect();
                if live.len() != target {
                    changes.push(format!("workers on {}: {} -> {target}", self.shared.devices[d].name, live.len()));
                }
                if target > 0 && !s.device_health[d].healthy {
                    s.device_health[d].healthy = true;
                    changes.push(format!(
                        "{}: healthy again (it had failed: {})",
                        self.shared.devices[d].name,
                        s.device_health[d].last_error.as_deref().unwrap_or("unknown")
                    ));
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
        self.shared.wake.notify_all();
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
                    if lock(&self.shared.sched).stopping {
                        return;
                    }
                }
            }
        }
    }

    fn thread_exit(&self) {
        let mut s = lock(&self.shared.sched);
        s.live_threads = s.live_threads.saturating_sub(1);
        if s.live_threads == 0 {
            // The last thread out frees the state directory for the next engine.
            if let Some(f) = self
                .shared
                .state_lock
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                let _ = f.unlock();
            }
        }
        self.shared.wake.notify_all();
    }

    fn emit(&self, id: &str, kind: ProofKind, state: JobState) {
        log::debug!("job {id} ({}) -> {}", kind.queue_name(), state.name());
        let _ = self.shared.events.send(JobEvent {
            job_id: id.to_string(),
            kind,
            state,
        });
    }
}
