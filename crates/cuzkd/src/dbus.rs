//! The D-Bus control interface: name and object path `org.cuzk.Prover1` /
//! `/org/cuzk/Prover1`, interface `org.cuzk.Prover1`. Read-only properties for status,
//! methods for the operator's controls, and a `JobStateChanged(id, state)` signal for every
//! job state change. Who may call what is the bus policy's business
//! (`systemd/`: anyone reads and introspects; root and group `cuzk` change state).
//!
//! The interface is served before the engine starts, so `State` reads `starting` while the
//! spool is recovered and parameters are checked; methods then answer
//! `org.cuzk.Prover1.Error.Starting`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cuzk_engine::{CancelOutcome, Engine, EngineError, EngineState};
use tokio::sync::broadcast::error::RecvError;
use zbus::object_server::SignalEmitter;
use zbus::wire::{OwnedVariant, Str};

use crate::config::BusChoice;

pub const BUS_NAME: &str = "org.cuzk.Prover1";
pub const OBJECT_PATH: &str = "/org/cuzk/Prover1";

/// Errors a caller sees, as `org.cuzk.Prover1.Error.<Variant>` with a message.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.cuzk.Prover1.Error")]
pub enum ControlError {
    #[zbus(error)]
    ZBus(zbus::Error),
    /// The engine is not up yet.
    Starting(String),
    /// No job with this id (never submitted, or its result expired).
    UnknownJob(String),
    /// An argument the engine refused (names the argument and the problem).
    InvalidArgs(String),
    /// The parameters are held by running jobs.
    InUse(String),
    Failed(String),
}

impl From<EngineError> for ControlError {
    fn from(e: EngineError) -> Self {
        match e {
            e @ EngineError::NotFound(_) => ControlError::UnknownJob(e.to_string()),
            EngineError::InvalidRequest(m) => ControlError::InvalidArgs(m),
            e @ EngineError::Srs { .. } => ControlError::InvalidArgs(e.to_string()),
            e @ EngineError::SrsInUse { .. } => ControlError::InUse(e.to_string()),
            other => ControlError::Failed(other.to_string()),
        }
    }
}

/// The object behind `/org/cuzk/Prover1`.
pub struct Prover {
    engine: Arc<OnceLock<Engine>>,
    reloader: Arc<OnceLock<Arc<crate::reload::Reloader>>>,
}

impl Prover {
    fn engine(&self) -> Result<&Engine, ControlError> {
        self.engine
            .get()
            .ok_or_else(|| ControlError::Starting("cuzkd is starting (recovering its spool); try again shortly".into()))
    }
}

/// `State`: starting, ready, paused or draining.
fn state_name(engine: Option<&Engine>) -> &'static str {
    match engine.map(|e| e.status().state) {
        None => "starting",
        Some(EngineState::Running) => "ready",
        Some(EngineState::Paused) => "paused",
        Some(EngineState::Draining | EngineState::Stopped) => "draining",
    }
}

#[zbus::interface(name = "org.cuzk.Prover1")]
impl Prover {
    #[zbus(property(emits_changed_signal = "const"))]
    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    /// starting, ready, paused or draining.
    #[zbus(property(emits_changed_signal = "false"))]
    fn state(&self) -> String {
        state_name(self.engine.get()).to_string()
    }

    /// Jobs accepted and not yet started.
    #[zbus(property(emits_changed_signal = "false"))]
    fn queue_depth(&self) -> u32 {
        self.engine.get().map_or(0, |e| e.status().queue_depth())
    }

    /// Jobs synthesizing or proving.
    #[zbus(property(emits_changed_signal = "false"))]
    fn running_jobs(&self) -> u32 {
        self.engine.get().map_or(0, |e| e.status().running)
    }

    #[zbus(property(emits_changed_signal = "false"))]
    fn proofs_completed(&self) -> u64 {
        self.engine.get().map_or(0, |e| e.status().completed)
    }

    #[zbus(property(emits_changed_signal = "false"))]
    fn proofs_failed(&self) -> u64 {
        self.engine.get().map_or(0, |e| e.status().failed)
    }

    /// One entry per GPU: (name, memory budget, in use, high-water), bytes.
    #[zbus(property(emits_changed_signal = "false"))]
    fn gpus(&self) -> Vec<(String, u64, u64, u64)> {
        self.engine.get().map_or_else(Vec::new, |e| {
            e.status()
                .devices
                .into_iter()
                .filter_map(|d| d.memory.map(|m| (d.name, m.budget_bytes, m.in_use_bytes, m.high_water_bytes)))
                .collect()
        })
    }

    /// One entry per device (GPUs, or the CPU): (name, healthy, device failures, last
    /// failure or ""). An unhealthy device takes no partitions until a reload.
    #[zbus(property(emits_changed_signal = "false"))]
    fn devices(&self) -> Vec<(String, bool, u64, String)> {
        self.engine.get().map_or_else(Vec::new, |e| {
            e.status()
                .devices
                .into_iter()
                .map(|d| (d.name, d.healthy, d.failures, d.last_error.unwrap_or_default()))
                .collect()
        })
    }

    /// Every known job: (id, proof kind, state), queued ones first in the order they start.
    #[zbus(out_args("jobs"))]
    fn list_jobs(&self) -> Result<Vec<(String, String, String)>, ControlError> {
        Ok(self
            .engine()?
            .list_jobs()
            .into_iter()
            .map(|j| (j.job_id, j.kind.queue_name().to_string(), j.state.name().to_string()))
            .collect())
    }

    /// One job: id, kind, priority, state, attempts, and device and error when set.
    #[zbus(out_args("job"))]
    fn get_job(&self, id: &str) -> Result<HashMap<String, OwnedVariant>, ControlError> {
        let j = self.engine()?.job(id)?;
        let mut m = HashMap::new();
        let mut put = |k: &str, v: OwnedVariant| {
            m.insert(k.to_string(), v);
        };
        let s = |v: &str| OwnedVariant::from(Str::from(v.to_string()));
        put("id", s(&j.job_id));
        put("kind", s(j.kind.queue_name()));
        put("priority", s(&format!("{:?}", j.priority).to_uppercase()));
        put("state", s(j.state.name()));
        put("attempts", OwnedVariant::from(j.attempts));
        if let Some(d) = &j.device {
            put("device", s(d));
        }
        if let Some(e) = &j.error {
            put("error", s(e));
        }
        Ok(m)
    }

    /// "cancelled" (it had not started), "stopping" (it stops at its next stage boundary),
    /// or "already <state>".
    #[zbus(out_args("outcome"))]
    fn cancel_job(&self, id: &str) -> Result<String, ControlError> {
        Ok(match self.engine()?.cancel(id)? {
            CancelOutcome::Dequeued => "cancelled".into(),
            CancelOutcome::Stopping => "stopping".into(),
            CancelOutcome::AlreadyFinished(s) => format!("already {}", s.state().name()),
        })
    }

    /// Loads a circuit's parameters now: (already loaded, load time in ms).
    #[zbus(out_args("already_loaded", "load_time_ms"))]
    async fn preload_srs(&self, circuit: String) -> Result<(bool, u64), ControlError> {
        let engine = self.engine()?.clone();
        let (already, took) = tokio::task::spawn_blocking(move || engine.preload_srs(&circuit))
            .await
            .map_err(|e| ControlError::Failed(format!("preload task: {e}")))??;
        Ok((already, took.as_millis() as u64))
    }

    /// Drops a circuit's parameters if no job uses them: (evicted, bytes freed); the
    /// InUse error names the jobs' count otherwise.
    #[zbus(out_args("evicted", "freed_bytes"))]
    fn evict_srs(&self, circuit: &str) -> Result<(bool, u64), ControlError> {
        Ok(self.engine()?.evict_srs(circuit)?)
    }

    /// No new job starts; running ones finish.
    fn pause(&self) -> Result<(), ControlError> {
        self.engine()?.pause();
        log::info!("paused over D-Bus");
        Ok(())
    }

    fn resume(&self) -> Result<(), ControlError> {
        self.engine()?.resume();
        log::info!("resumed over D-Bus");
        Ok(())
    }

    /// Reads the configuration file again and puts in force what can change live (as
    /// `systemctl reload`): what changed, and the keys whose new value needs a restart.
    #[zbus(out_args("applied", "restart_needed"))]
    fn reload(&self) -> Result<(Vec<String>, Vec<String>), ControlError> {
        let r = self.reloader.get().ok_or_else(|| ControlError::Starting("cuzkd is starting; try again shortly".into()))?;
        let o = crate::reload::reload_and_notify(r, "D-Bus Reload()").map_err(ControlError::Failed)?;
        Ok((o.applied, o.restart_needed))
    }

    /// A job entered `state` (queued, synthesizing, synthesized, proving, completed, failed,
    /// cancelled).
    #[zbus(signal)]
    async fn job_state_changed(emitter: &SignalEmitter<'_>, id: &str, state: &str) -> zbus::Result<()>;
}

/// The served interface; [`Control::attach`] hands it the engine once it is up.
pub struct Control {
    engine: Arc<OnceLock<Engine>>,
    reloader: Arc<OnceLock<Arc<crate::reload::Reloader>>>,
    conn: Option<zbus::Connection>,
}

impl Control {
    /// Connects to the configured bus, serves the object and takes the name. A failure is
    /// logged and leaves the daemon without D-Bus: proving does not depend on it.
    pub async fn start(bus: BusChoice) -> Control {
        let engine = Arc::new(OnceLock::new());
        let reloader = Arc::new(OnceLock::new());
        let builder = match bus {
            BusChoice::None => return Control { engine, reloader, conn: None },
            BusChoice::System => zbus::connection::Builder::system(),
            BusChoice::Session => zbus::connection::Builder::session(),
        };
        let which = format!("{bus:?}").to_lowercase();
        let built = builder
            .serve_at(OBJECT_PATH, Prover { engine: engine.clone(), reloader: reloader.clone() })
            .name(BUS_NAME)
            .build()
            .await;
        match built {
            Ok(conn) => {
                log::info!("D-Bus: {BUS_NAME} at {OBJECT_PATH} on the {which} bus");
                Control { engine, reloader, conn: Some(conn) }
            }
            Err(e) => {
                log::error!(
                    "D-Bus: cannot serve {BUS_NAME} on the {which} bus ({e}); proving goes on without the control \
                     interface ([dbus] bus = \"none\" silences this)"
                );
                Control { engine, reloader, conn: None }
            }
        }
    }

    /// Makes the methods live and forwards the engine's job events as `JobStateChanged`.
    pub fn attach(&self, engine: &Engine, reloader: &Arc<crate::reload::Reloader>) {
        let _ = self.reloader.set(reloader.clone());
        let _ = self.engine.set(engine.clone());
        let Some(conn) = self.conn.clone() else { return };
        let mut events = engine.subscribe();
        tokio::spawn(async move {
            let emitter = match SignalEmitter::new(&conn, OBJECT_PATH) {
                Ok(e) => e,
                Err(e) => return log::error!("D-Bus signal emitter: {e}"),
            };
            loop {
                match events.recv().await {
                    Ok(ev) => {
                        if let Err(e) = Prover::job_state_changed(&emitter, &ev.job_id, ev.state.name()).await {
                            log::warn!("D-Bus JobStateChanged({}, {}): {e}", ev.job_id, ev.state.name());
                        }
                    }
                    Err(RecvError::Lagged(n)) => log::warn!("D-Bus: {n} job events were not signalled (too many at once)"),
                    Err(RecvError::Closed) => break,
                }
            }
        });
    }
}
