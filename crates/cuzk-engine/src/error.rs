//! Errors at the engine's boundary. `EngineError` is what a caller (the daemon) maps to a
//! transport status: `InvalidRequest` to INVALID_ARGUMENT, `NotFound` to NOT_FOUND,
//! `Conflict` to ALREADY_EXISTS, `ResourceExhausted` to RESOURCE_EXHAUSTED, `SrsInUse` to
//! FAILED_PRECONDITION, `Draining` to UNAVAILABLE, the rest to INTERNAL. A proof that fails is not an error here:
//! it is a [`crate::JobResult`] with status `Failed` and a message.

use std::path::PathBuf;

use cuzk_groth16::BackendError;


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

/// What a [`RunError`] says, and the error that caused it where the runner had one
/// ([`Cause::of`], [`Cause::with`]): kept for `Error::source`, so a log or a caller can walk
/// the chain instead of parsing text. It reads as its message (`Deref<Target = str>`).
#[derive(Debug)]
pub struct Cause {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Cause {
    /// `error`'s own text, with `error` as the source.
    pub fn of<E: std::error::Error + Send + Sync + 'static>(error: E) -> Cause {
        Cause { message: error.to_string(), source: Some(Box::new(error)) }
    }

    /// `message` (which usually names `error` with its context), with `error` as the source.
    pub fn with<E: std::error::Error + Send + Sync + 'static>(message: impl Into<String>, error: E) -> Cause {
        Cause { message: message.into(), source: Some(Box::new(error)) }
    }

    /// The error this one came from, if the runner had one.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause { message, source: None }
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Cause {
        Cause { message: message.to_string(), source: None }
    }
}

impl std::ops::Deref for Cause {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl PartialEq<str> for Cause {
    fn eq(&self, other: &str) -> bool {
        self.message == other
    }
}

impl PartialEq<&str> for Cause {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

/// An error from a [`crate::ProofRunner`]: what went wrong with one job. It becomes the
/// job's `Failed` result message; it never stops the engine. `Error::source` is the
/// [`Cause`]'s source, where there is one.
#[derive(Debug)]
pub enum RunError {
    BadRequest(Cause),
    Params(Cause),
    Prove(Cause),
    /// The device failed under a partition's proof (a kernel, allocation or driver error, a
    /// lost device, no memory budget), not the job: the engine marks the device unhealthy
    /// and proves the partition again on another one. Set only for
    /// [`BackendError::Unavailable`] ([`RunError::from_backend`]); the backend's argument
    /// errors are the prover's own and fail the job.
    Device(Cause),
    Cancelled,
    /// A stage panicked (a bug, contained: the job fails, the engine goes on).
    Panicked { stage: &'static str, message: String },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::BadRequest(c) => write!(f, "bad request: {c}"),
            RunError::Params(c) => write!(f, "parameters: {c}"),
            RunError::Prove(c) => write!(f, "proving failed: {c}"),
            RunError::Device(c) => write!(f, "device failed: {c}"),
            RunError::Cancelled => f.write_str("cancelled"),
            RunError::Panicked { stage, message } => write!(
                f,
                "internal fault: the {stage} stage panicked: {message} (a bug in cuzk or a library it \
                 calls, reached by this request; the job failed alone and the daemon goes on; please \
                 report it with the request)"
            ),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::BadRequest(c) | RunError::Params(c) | RunError::Prove(c) | RunError::Device(c) => {
                c.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
            }
            RunError::Cancelled | RunError::Panicked { .. } => None,
        }
    }
}

impl RunError {
    /// How a backend error of a proving stage counts: `Cancelled` once the job's token is
    /// set (the engine's own refusal of a cancelled job's kernel is `Unavailable` too),
    /// `Device` for an unavailable backend, `Prove` for the argument errors (the same
    /// on every device: a bug, not the device) and for work over the device's memory
    /// budget (the job's size against the settings: marking the device unhealthy would stop
    /// every job until a reload). `message` is the error with its context.
    /// `cancelled` is the job's `CancelToken::is_cancelled`.
    pub fn from_backend(error: &BackendError, message: impl Into<Cause>, cancelled: bool) -> RunError {
        if cancelled {
            RunError::Cancelled
        } else if matches!(error, BackendError::Unavailable { .. }) {
            RunError::Device(message.into())
        } else {
            RunError::Prove(message.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::CancelToken;

    #[test]
    fn only_an_unavailable_backend_is_a_device_failure() {
        let cancel = CancelToken::default();
        let lost = BackendError::Unavailable { backend: "gpu", reason: "CUDA_ERROR_LAUNCH_FAILED".into() };
        let e = RunError::from_backend(&lost, lost.to_string(), cancel.is_cancelled());
        assert!(matches!(&e, RunError::Device(m) if m.contains("LAUNCH_FAILED")), "{e}");
        let bad = BackendError::BadNttSize(3);
        assert!(matches!(RunError::from_backend(&bad, bad.to_string(), cancel.is_cancelled()), RunError::Prove(_)));
        // Work that does not fit this device's budget fails its job; the device is fine.
        let big = BackendError::OverBudget { backend: "gpu", reason: "VRAM budget of device 0 exceeded".into() };
        assert!(matches!(RunError::from_backend(&big, big.to_string(), cancel.is_cancelled()), RunError::Prove(_)));
        cancel.cancel();
        assert!(matches!(RunError::from_backend(&lost, String::new(), cancel.is_cancelled()), RunError::Cancelled));
    }

    /// A cause made from an error keeps it as the source; the text reads as before.
    #[test]
    fn a_cause_keeps_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = RunError::Params(Cause::with("parameters /p: no such file", io));
        assert_eq!(e.to_string(), "parameters: parameters /p: no such file");
        let source = std::error::Error::source(&e).expect("the io error is kept");
        assert_eq!(source.to_string(), "no such file");
        assert!(source.downcast_ref::<std::io::Error>().is_some());
        let plain = RunError::BadRequest("bad".into());
        assert!(std::error::Error::source(&plain).is_none());
        assert!(matches!(&plain, RunError::BadRequest(m) if *m == "bad" && m.contains("ba")));
    }
}
