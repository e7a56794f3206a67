//! The engine's settings, their defaults and their checks (shared by `Engine::start` and
//! `Engine::reconfigure`).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::EngineError;

/// Engine settings. Names follow the daemon's TOML keys.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Spool and lock file live here (`/var/lib/cuzk` for the daemon).
    pub state_dir: PathBuf,
    /// Proving workers per device (unless the device sets its own, [`crate::Device::with_workers`]);
    /// with the CPU backend (one device) the worker count.
    pub gpu_workers_per_device: usize,
    /// Threads that synthesize partitions ahead of proving (and run each job's last step,
    /// assembly and verification).
    pub synthesis_workers: usize,
    /// Synthesis threads of their own for urgent jobs (priority High or Critical: WindowPoSt
    /// and WinningPoSt by default), which take nothing else. A WinningPoSt that arrives
    /// while every `synthesis_workers` thread is inside a 32 GiB partition (seconds to tens
    /// of seconds) starts at once on one of these, and its synthesis runs at the process's
    /// CPU priority rather than the lower one of bulk synthesis (see the runner's
    /// [`crate::lane::on_urgent_lane`]). The first of them takes Critical jobs only
    /// (WinningPoSt): a 32 GiB WindowPoSt partition holds a thread for 27 s alone on 16 cores
    /// and up to 63 s beside other synthesis, so High jobs take the others, and the bulk
    /// threads ahead of every Normal or Low job.
    /// Default 1: the lane is WinningPoSt's alone. Every lane thread synthesizes on the one
    /// urgent pool, so a second thread lets a WindowPoSt keep the daemon's CPU priority but
    /// fills the pool a WinningPoSt then queues into. 0 turns the lane off.
    pub urgent_synthesis_workers: usize,
    /// Host memory that synthesized-but-unproved and proving partitions, the prepared jobs
    /// they belong to, resident parameters and what the runner keeps across jobs
    /// (`ProofRunner::held_bytes`: compiled circuits) may hold together. The runner's share
    /// bounds how far synthesis runs ahead (a partition that fits beside the parameters always
    /// goes on) and never evicts idle parameters.
    pub host_memory_budget_bytes: u64,
    /// Resident parameters above this are evicted when idle (LRU); 0 = no limit. They count
    /// against `host_memory_budget_bytes` as well, and idle ones make room there.
    pub srs_cache_limit_bytes: u64,
    /// Kinds ("winning") or circuit ids ("winning-32g") whose parameters, once loaded, stay
    /// when idle (`[srs] pinned`): never evicted for the limit above, and for room in the
    /// host budget only when no other idle parameters can make it, so that no job waits on
    /// them. Default `["winning"]`: a WinningPoSt must answer
    /// within seconds, its 32 GiB parameters are 0.2 GB, and reading them again on a loaded
    /// machine costs about a second (bench/history/2026-12-06.md).
    pub srs_pinned: Vec<String>,
    /// Where loaded parameters are spilled (`[srs] host_release_dir`): their decoded points
    /// go to an unlinked file there, and once a device holds every section resident, their
    /// host pages are given back, so that resident parameters cost host memory only while
    /// they load (see `cuzk_groth16::points`). It needs room for the decoded points (47 GB
    /// for 32 GiB PoRep). `None` (the default): parameters stay in host memory.
    pub srs_host_release_dir: Option<PathBuf>,
    /// How long a result is kept when nobody fetches it.
    pub result_ttl: Duration,
    /// How long a result is kept after it was fetched (so a retried request still gets it).
    pub fetched_result_ttl: Duration,
    /// A job interrupted (crash, kill) this many times fails instead of running again.
    pub max_attempts: u32,
    /// Start paused (recovered jobs wait for [`crate::Engine::resume`]): for inspecting the
    /// spool after a crash before anything runs.
    pub start_paused: bool,
    /// Admission: at most this many jobs wait in the queue; beyond it `submit` answers
    /// [`EngineError::ResourceExhausted`].
    pub max_queued_jobs: usize,
    /// Admission: the payload bytes of accepted, unfinished jobs (what the spool holds).
    pub max_spool_bytes: u64,
    /// How the prover uses the host (`[prover]`; read at each partition, so a reload
    /// applies it to the next one).
    pub prover: cuzk_groth16::ProverTuning,
}

impl EngineConfig {
    /// Defaults: one worker per device, one synthesis thread and one for Critical jobs, 3/4 of the machine's memory as
    /// budget, results kept an hour (five minutes once fetched), three attempts, 1000 queued
    /// jobs and 32 GiB of spooled payload at most (about 650 waiting 32 GiB PoRep inputs).
    pub fn new(state_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            state_dir: state_dir.into(),
            gpu_workers_per_device: 1,
            synthesis_workers: 1,
            urgent_synthesis_workers: 1,
            host_memory_budget_bytes: default_memory_budget(),
            srs_cache_limit_bytes: 0,
            srs_pinned: vec!["winning".into()],
            srs_host_release_dir: None,
            result_ttl: Duration::from_secs(3600),
            fetched_result_ttl: Duration::from_secs(300),
            max_attempts: 3,
            start_paused: false,
            max_queued_jobs: 1000,
            max_spool_bytes: 32 << 30,
            prover: cuzk_groth16::ProverTuning::default(),
        }
    }

    /// The settings no engine can run with: no worker, no synthesis thread, no memory, no
    /// attempt.
    pub fn validate(&self) -> Result<(), EngineError> {
        let zero: Vec<&str> = [
            ("gpu_workers_per_device", self.gpu_workers_per_device as u64),
            ("synthesis_workers", self.synthesis_workers as u64),
            ("host_memory_budget_bytes", self.host_memory_budget_bytes),
            ("max_attempts", u64::from(self.max_attempts)),
        ]
        .into_iter()
        .filter(|(_, v)| *v == 0)
        .map(|(k, _)| k)
        .collect();
        if zero.is_empty() {
            Ok(())
        } else {
            Err(EngineError::Config(format!(
                "{} must be at least 1 (with 0 no job could ever run)",
                zero.join(", ")
            )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_settings_are_refused_by_name() {
        assert!(EngineConfig::new("/tmp/x").validate().is_ok());
        let mut c = EngineConfig::new("/tmp/x");
        c.synthesis_workers = 0;
        c.max_attempts = 0;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("synthesis_workers, max_attempts must be at least 1"), "{e}");
    }
}
