//! Live reload: `systemctl reload cuzk` (SIGHUP) or D-Bus `Reload()` reads the configuration
//! file again and puts in force what can change while jobs run, without losing a queued or
//! running one:
//! - `[engine]`: host memory budget, synthesis workers, queue and spool limits, result TTL,
//!   attempts;
//! - `[gpus]`: workers per GPU (`gpu_workers_per_device` and each device's `workers`);
//! - `[srs] cache_limit_bytes`, `[log] level`, `[daemon] drain_timeout_secs`.
//!
//! Every other key needs a restart: a changed one is named in the log and in the answer
//! and keeps its running value until then (listen address and TCP settings, state
//! directory, message size and stream limits, parameter and parent directories, the GPU
//! backend, which GPUs and their VRAM budgets, the pinned memory budget, the bus, the log
//! target). A file that does not parse changes nothing; the answer names the problem.

use std::sync::Mutex;

use cuzk_engine::Engine;

use crate::config::Config;

/// What one reload did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// "key: old -> new", one per setting put in force.
    pub applied: Vec<String>,
    /// Keys whose new value waits for a restart.
    pub restart_needed: Vec<String>,
}

impl ReloadOutcome {
    /// One line for logs, STATUS= and the D-Bus answer.
    pub fn summary(&self) -> String {
        let applied = if self.applied.is_empty() { "nothing changed".to_string() } else { self.applied.join("; ") };
        if self.restart_needed.is_empty() {
            format!("reloaded: {applied}")
        } else {
            format!("reloaded: {applied}; needs a restart to change: {}", self.restart_needed.join(", "))
        }
    }
}

/// The configuration in force and how to change it.
pub struct Reloader {
    current: Mutex<Config>,
    engine: Engine,
    /// GPUs opened at start (synthesis workers default to two per GPU).
    gpus_opened: usize,
}

impl Reloader {
    pub fn new(config: Config, engine: Engine, gpus_opened: usize) -> Reloader {
        Reloader { current: Mutex::new(config), engine, gpus_opened }
    }

    /// The configuration in force.
    pub fn current(&self) -> Config {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the file again and applies it (see the module's documentation).
    pub fn reload(&self) -> Result<ReloadOutcome, String> {
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let path = cur
            .source
            .clone()
            .ok_or("the daemon was started without a configuration file; nothing to reload")?;
        let new = Config::load(&path).map_err(|e| format!("{e}; nothing changed"))?;
        let old = cur.clone();
        let mut restart = Vec::new();
        let mut differs = |key: &str, changed: bool| {
            if changed {
                restart.push(key.to_string());
            }
        };
        let (od, nd) = (&old.daemon, &new.daemon);
        differs("daemon.listen", od.listen != nd.listen);
        differs("daemon.state_dir", od.state_dir != nd.state_dir);
        differs("daemon.max_message_bytes", od.max_message_bytes != nd.max_message_bytes);
        differs("daemon.max_concurrent_streams", od.max_concurrent_streams != nd.max_concurrent_streams);
        differs("daemon.tcp", od.tcp != nd.tcp);
        differs("metrics.listen", old.metrics != new.metrics);
        differs("srs.param_cache", old.srs.param_cache != new.srs.param_cache);
        differs("srs.parent_cache", old.srs.parent_cache != new.srs.parent_cache);
        differs("gpus.backend", old.gpus.backend != new.gpus.backend);
        let gpus = |c: &Config| c.gpus.plan().iter().map(|p| (p.ordinal, p.vram_budget_bytes)).collect::<Vec<_>>();
        let same_gpus = gpus(&old) == gpus(&new);
        differs("gpus.devices (which GPUs, their VRAM budgets)", !same_gpus);
        differs("gpus.pinned_memory_budget_bytes", old.gpus.pinned_memory_budget_bytes != new.gpus.pinned_memory_budget_bytes);
        let tunings = |c: &Config| c.gpus.plan().into_iter().map(|p| p.tuning).collect::<Vec<_>>();
        differs("gpus.pin_host, gpus.copy_threads", tunings(&old) != tunings(&new));
        differs("dbus.bus", old.dbus.bus != new.dbus.bus);
        differs("log.target", old.log.target != new.log.target);
        differs("synthesis", old.synthesis != new.synthesis);

        // The live part: what is in force after this reload.
        let mut in_force = old.clone();
        in_force.engine = new.engine.clone();
        in_force.prover = new.prover.clone();
        in_force.srs.cache_limit_bytes = new.srs.cache_limit_bytes;
        in_force.daemon.drain_timeout_secs = new.daemon.drain_timeout_secs;
        in_force.log.level = new.log.level.clone();
        in_force.gpus.gpu_workers_per_device = new.gpus.gpu_workers_per_device;
        if same_gpus {
            in_force.gpus.devices = new.gpus.devices.clone();
        }
        let status = self.engine.status();
        // Each device's workers: a GPU's from its plan; the CPU device takes the default.
        let plan = in_force.gpus.plan();
        let device_workers: Vec<Option<usize>> = status
            .devices
            .iter()
            .map(|d| d.ordinal.and_then(|o| plan.iter().find(|p| p.ordinal as u32 == o)).map(|p| p.workers))
            .collect();
        let mut applied = self
            .engine
            .reconfigure(in_force.engine_config(self.gpus_opened), &device_workers)
            .map_err(|e| format!("{e}; nothing changed"))?;
        if old.log.level != in_force.log.level {
            let note = crate::logging::set_level(&in_force.log.level)?;
            applied.push(format!("log.level: {:?} -> {:?} ({note})", old.log.level, in_force.log.level));
        }
        if od.drain_timeout_secs != nd.drain_timeout_secs {
            applied.push(format!("daemon.drain_timeout_secs: {} -> {}", od.drain_timeout_secs, nd.drain_timeout_secs));
        }
        *cur = in_force;
        Ok(ReloadOutcome { applied, restart_needed: restart })
    }
}

/// A reload as systemd wants it told: `RELOADING=1` with `MONOTONIC_USEC=`, the reload,
/// then `READY=1` and the outcome in `STATUS=` (for Type=notify-reload and for
/// `systemctl reload` under Type=notify alike). Logged either way.
pub fn reload_and_notify(r: &Reloader, why: &str) -> Result<ReloadOutcome, String> {
    use sd_notify::NotifyState;
    let _ = sd_notify::notify(&[NotifyState::Reloading, NotifyState::MonotonicUsec(monotonic_usec())]);
    let outcome = r.reload();
    match &outcome {
        Ok(o) => {
            log::info!("{why}: {}", o.summary());
            if !o.restart_needed.is_empty() {
                log::warn!("{why}: keeps its running value until a restart: {}", o.restart_needed.join(", "));
            }
        }
        Err(e) => log::error!("{why}: reload failed: {e}"),
    }
    let status = match &outcome {
        Ok(o) => o.summary(),
        Err(e) => format!("reload failed: {e}"),
    };
    let _ = sd_notify::notify(&[NotifyState::Ready, NotifyState::Status(&status)]);
    outcome
}

/// CLOCK_MONOTONIC in microseconds, for `MONOTONIC_USEC=` beside `RELOADING=1`.
pub fn monotonic_usec() -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as i128 * 1_000_000 + ts.tv_nsec as i128 / 1000
}
