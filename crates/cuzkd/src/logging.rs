//! Logging: journald with structured fields when the journal is there, stderr otherwise.
//!
//! Everything logs through `tracing` (the `log` records of the engine and the libraries are
//! bridged in). Job state changes are logged by [`log_job_events`] with the fields
//! `JOB_ID`, `PROOF_KIND`, `STAGE` and, once a job is on a device, `GPU`, so that
//! `journalctl -u cuzk JOB_ID=porep-1000-1` shows one job's story.

use std::path::Path;

use cuzk_engine::Engine;
use tokio::sync::broadcast::error::RecvError;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogTarget};

/// Where journald listens for native-protocol messages.
const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

/// Dependencies that log a lot below `warn` (zbus traces every message it routes;
/// filecoin-proofs logs every parameter read).
const QUIET: &str = "h2=warn,hyper=warn,hyper_util=warn,tower=warn,tonic=warn,zbus=warn,tracing=warn,\
                     filecoin_proofs=warn,storage_proofs_core=warn,storage_proofs_porep=warn,bellperson=warn";

/// The filter: `RUST_LOG` if set, else the configured level; the dependencies in [`QUIET`]
/// stay at `warn` unless the level names them.
pub fn filter(level: &str) -> EnvFilter {
    let wanted = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| level.to_string());
    filter_from(&wanted)
}

/// Builds the filter from `wanted`, never panicking or hanging: tracing-subscriber's parser
/// panics on a directive with surrounding spaces and non-ASCII text, and compiles field
/// values into regexes that can take minutes (both found by the `config` fuzz target), so
/// directives are trimmed, non-ASCII is refused and field values match literally.
fn filter_from(wanted: &str) -> EnvFilter {
    let fallback = |why: String| {
        eprintln!("cuzkd: log filter {wanted:?}: {why}; using \"info\"");
        EnvFilter::new(format!("{QUIET},info"))
    };
    if !wanted.is_ascii() {
        return fallback("not ASCII".into());
    }
    let directives: Vec<&str> = wanted.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    EnvFilter::builder()
        .with_regex(false)
        .parse(format!("{QUIET},{}", directives.join(",")))
        .unwrap_or_else(|e| fallback(e.to_string()))
}

#[cfg(test)]
mod tests {
    /// The fuzz target's reproducers through the RUST_LOG path: no panic, no minutes-long
    /// regex build; good filters still parse.
    #[test]
    fn rust_log_values_cannot_panic_or_hang() {
        let start = std::time::Instant::now();
        for wanted in [" \u{e9}=", "[{f=.*_................}]", " info , cuzk_engine=debug ", "info,[span{f=1}]=trace"] {
            let _ = super::filter_from(wanted);
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(2), "{:?}", start.elapsed());
        assert!(super::filter_from("info,cuzk_engine=debug").to_string().contains("cuzk_engine=debug"));
    }
}

/// Installs the global subscriber. Returns where the logs go, for the first log line.
pub fn init(cfg: &LogConfig) -> &'static str {
    let want_journal = match cfg.target {
        LogTarget::Stderr => false,
        LogTarget::Journald => true,
        LogTarget::Auto => Path::new(JOURNAL_SOCKET).exists(),
    };
    let journald = if want_journal {
        match tracing_journald::layer() {
            Ok(l) => Some(l.with_field_prefix(None).with_syslog_identifier("cuzkd".into())),
            Err(e) => {
                eprintln!("cuzkd: journald unavailable ({e}); logging to stderr");
                None
            }
        }
    } else {
        None
    };
    let (layer, handle) = tracing_subscriber::reload::Layer::new(filter(&cfg.level));
    let _ = LEVEL.set(handle);
    let registry = tracing_subscriber::registry().with(layer);
    let (result, target) = match journald {
        Some(j) => (registry.with(j).try_init(), "journald"),
        None => (
            registry.with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false)).try_init(),
            "stderr",
        ),
    };
    if let Err(e) = result {
        eprintln!("cuzkd: logging already initialised ({e})");
    }
    target
}

/// The installed filter, replaced on reload.
static LEVEL: std::sync::OnceLock<tracing_subscriber::reload::Handle<EnvFilter, tracing_subscriber::Registry>> =
    std::sync::OnceLock::new();

/// Puts `[log] level` = `level` in force (live reload). `RUST_LOG`, when set, still wins, as at
/// start; the answer says so.
pub fn set_level(level: &str) -> Result<String, String> {
    let handle = LEVEL.get().ok_or("logging was not initialised by cuzkd (a library caller); level unchanged")?;
    handle.reload(filter(level)).map_err(|e| format!("log level not changed: {e}"))?;
    Ok(match std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty()) {
        Some(v) => format!("RUST_LOG={v} is set and still decides the filter"),
        None => format!("filter now {level:?}"),
    })
}

/// Logs every job state change with structured fields, for the life of the engine.
pub fn log_job_events(engine: &Engine) {
    let mut events = engine.subscribe();
    let engine = engine.clone();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => {
                    let info = engine.job(&ev.job_id).ok();
                    let gpu = info.as_ref().and_then(|j| j.device.clone()).unwrap_or_default();
                    let error = info.as_ref().and_then(|j| j.error.clone());
                    let kind = ev.kind.queue_name();
                    let stage = ev.state.name();
                    match error {
                        Some(error) if ev.state == cuzk_engine::JobState::Failed => tracing::warn!(
                            JOB_ID = %ev.job_id, PROOF_KIND = kind, STAGE = stage, GPU = %gpu,
                            "job {} {stage}: {error}", ev.job_id
                        ),
                        _ => tracing::info!(
                            JOB_ID = %ev.job_id, PROOF_KIND = kind, STAGE = stage, GPU = %gpu,
                            "job {} {stage}{}", ev.job_id,
                            if gpu.is_empty() { String::new() } else { format!(" on {gpu}") }
                        ),
                    }
                }
                Err(RecvError::Lagged(n)) => tracing::warn!("{n} job state changes were not logged (too many at once)"),
                Err(RecvError::Closed) => break,
            }
        }
    });
}
