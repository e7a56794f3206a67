//! Errors at the engine's boundary. `EngineError` is what a caller (the daemon) maps to a
//! transport status: `InvalidRequest` to INVALID_ARGUMENT, `NotFound` to NOT_FOUND,
//! `Conflict` to ALREADY_EXISTS, `ResourceExhausted` to RESOURCE_EXHAUSTED, `SrsInUse` to
//! FAILED_PRECONDITION, `Draining` to UNAVAILABLE, the rest to INTERNAL. A proof that fails is not an error here:
//! it is a [`crate::JobResult`] with status `Failed` and a message.

use std::path::PathBuf;

use cuzk_groth16::BackendError;

use crate::runner::CancelToken;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("no job {0:?} (never submitted, or its result was fetched and has expired)")]
    NotFound(String),
    #[error("the engine is draining and accepts no new jobs; resubmit to the next instance")]
    Draining,
    #[error(
        "spool {path}: {action}: {source} (check the state directory's permissions and free space)"
    )]
    Spool {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "state directory {0} is in use by another engine (a running cuzkd?); stop it or choose \
         another state directory"
    )]
    StateDirBusy(PathBuf),
    /// The request id belongs to a job with other content that has not ended.
    #[error(
        "request_id {id:?} is already used by a {state} job with different content (another \
         sector, proof type or input); refused so that no caller gets the proof of other content. \
         Use a new request id, or cancel the old job first"
    )]
    Conflict { id: String, state: &'static str },
    /// An admission limit would be passed; nothing was accepted.
    #[error("{limit} = {value} reached ({detail}); retry later, or raise {limit} in [engine]")]
    ResourceExhausted { limit: &'static str, value: u64, detail: String },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("parameters of circuit {circuit_id:?}: {reason}")]
    Srs { circuit_id: String, reason: String },
    /// An evict asked while jobs hold the parameters.
    #[error(
        "parameters of circuit {circuit_id:?} are in use by {holders} running job(s){} and were \
         not evicted; evict them once those jobs end (or cancel the jobs first)",
        if jobs.is_empty() { String::new() } else { format!(" ({})", jobs.join(", ")) }
    )]
    SrsInUse {
        circuit_id: String,
        /// How many hold them.
        holders: u32,
        /// The ids of the jobs holding them, when known.
        jobs: Vec<String>,
    },
    #[error("engine fault: {0} (a bug; the job itself may still be fine: await it again)")]
    Internal(String),
}

/// An error from a [`crate::ProofRunner`]: what went wrong with one job. It becomes the
/// job's `Failed` result message; it never stops the engine.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("parameters: {0}")]
    Params(String),
    #[error("proving failed: {0}")]
    Prove(String),
    /// The device failed under a partition's proof (a kernel, allocation or driver error, a
    /// lost device, no memory budget), not the job: the engine marks the device unhealthy
    /// and proves the partition again on another one. Set only for
    /// [`BackendError::Unavailable`] ([`RunError::from_backend`]); the backend's argument
    /// errors are the prover's own and fail the job.
    #[error("device failed: {0}")]
    Device(String),
    #[error("cancelled")]
    Cancelled,
    /// A stage panicked (a bug, contained: the job fails, the engine goes on).
    #[error(
        "internal fault: the {stage} stage panicked: {message} (a bug in cuzk or a library it \
         calls, reached by this request; the job failed alone and the daemon goes on; please \
         report it with the request)"
    )]
    Panicked { stage: &'static str, message: String },
}

impl RunError {
    /// How a backend error of a proving stage counts: `Cancelled` once the job's token is
    /// set (the engine's own refusal of a cancelled job's kernel is `Unavailable` too),
    /// `Device` for an unavailable backend, `Prove` for the argument errors (the same
    /// on every device: a bug, not the device) and for work over the device's memory
    /// budget (the job's size against the settings: marking the device unhealthy would stop
    /// every job until a reload). `message` is the error with its context.
    pub fn from_backend(error: &BackendError, message: String, cancel: &CancelToken) -> RunError {
        if cancel.is_cancelled() {
            RunError::Cancelled
        } else if matches!(error, BackendError::Unavailable { .. }) {
            RunError::Device(message)
        } else {
            RunError::Prove(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unavailable_backend_is_a_device_failure() {
        let cancel = CancelToken::default();
        let lost = BackendError::Unavailable { backend: "gpu", reason: "CUDA_ERROR_LAUNCH_FAILED".into() };
        let e = RunError::from_backend(&lost, lost.to_string(), &cancel);
        assert!(matches!(&e, RunError::Device(m) if m.contains("LAUNCH_FAILED")), "{e}");
        let bad = BackendError::BadNttSize(3);
        assert!(matches!(RunError::from_backend(&bad, bad.to_string(), &cancel), RunError::Prove(_)));
        // Work that does not fit this device's budget fails its job; the device is fine.
        let big = BackendError::OverBudget { backend: "gpu", reason: "VRAM budget of device 0 exceeded".into() };
        assert!(matches!(RunError::from_backend(&big, big.to_string(), &cancel), RunError::Prove(_)));
        cancel.cancel();
        assert!(matches!(RunError::from_backend(&lost, String::new(), &cancel), RunError::Cancelled));
    }
}
