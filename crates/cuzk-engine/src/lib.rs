//! cuzk-engine: the proving engine under the `cuzkd` daemon. Jobs, priorities, a durable
//! spool, scheduling over devices and workers, a host memory budget, parameter residency,
//! cancellation, per-stage timings and metrics. No I/O protocol lives here: the daemon maps
//! gRPC and D-Bus calls onto [`Engine`]'s methods one to one.
//!
//! # Why it is built this way
//!
//! A storage provider's deadlines are uneven (a WinningPoSt must be out in seconds, a PoRep
//! can wait an hour), proofs take minutes, and the daemon is restarted by upgrades, OOM
//! killers and power cuts. So: strict priorities with FIFO inside each; a request is on disk
//! before it is acknowledged; and the request id is an idempotency key, because Curio
//! retries with the same id after any hiccup, and a second copy of a 32 GiB PoRep would
//! double the load exactly when the machine is struggling.
//!
//! The unit of work is the partition ([`ProofRunner`], [`PreparedJob`]): a plan (parameters,
//! partitions, host bytes per partition), a prepared job, each partition synthesized on the
//! CPU and proved on any device, then one last step that assembles and verifies. Synthesis
//! runs ahead of proving while the host memory budget allows, so the devices never wait for
//! the CPU; the budget, not a job count, bounds the lookahead, because a 32 GiB PoRep
//! partition and a WinningPoSt differ by orders of magnitude in memory. Priorities act
//! between partitions: a WinningPoSt that arrives behind a 32 GiB PoRep waits for the
//! partitions in flight, not for the PoRep's other nine.
//!
//! The engine knows no proof kind: the real runner is cuzk-filecoin's `FilecoinRunner`, beside
//! the circuits it runs (every kind through cuzk-filecoin's `ProofJob`).
//!
//! # Use
//!
//! ```no_run
//! # async fn demo() -> Result<(), cuzk_engine::EngineError> {
//! use std::{path::Path, sync::Arc, time::Duration};
//! use cuzk_engine::*;
//! use cuzk_filecoin::FilecoinRunner;
//!
//! let runner = FilecoinRunner::new(Path::new("/var/tmp/filecoin-proof-parameters"), None)
//!     .map_err(|e| EngineError::Config(e.to_string()))?;
//! let engine = Engine::start(EngineConfig::new("/var/lib/cuzk"), Arc::new(runner), vec![Device::cpu()])?;
//! let c1 = std::fs::read("c1.json").unwrap_or_default();
//! let job = engine.submit(JobRequest::porep("porep-1000-1", c1, 1000, 1))?;
//! match engine.await_job(&job.job_id, Some(Duration::from_secs(1800))).await? {
//!     AwaitOutcome::Done(r) => println!("{:?}: {} bytes", r.status, r.proof.len()),
//!     AwaitOutcome::Timeout { state } => println!("still {}", state.name()),
//! }
//! engine.drain(Duration::from_secs(60));
//! # Ok(()) }
//! ```
//!
//! # Architecture invariants
//!
//! - Nothing accepted is lost: `submit` returns only after the request is fsync'd and
//!   renamed into the spool; a job that was running when the process died runs again at the
//!   next start, or fails with a message once interrupted `max_attempts` times. A result is
//!   written before the request is removed.
//! - One request id, one job, one content: an id is bound to a digest of its request
//!   ([`JobRequest::content_digest`], stored with the request and the result, so it survives
//!   restarts). The same id with the same content attaches to its job or stored result; with
//!   other content it is refused ([`EngineError::Conflict`]) while the job has not ended, and
//!   replaces the job once it has (a sector sealed again after a failure reuses Curio's id
//!   `porep-<miner>-<sector>`; refusing it until the old result expired would fail all ten
//!   of Curio's retries, answering it with the old result would return a proof that does not
//!   verify for the new sector). No caller ever gets the proof of other content.
//!   Checked by: `scheduling.rs`, `a_request_id_is_bound_to_its_content`.
//! - Admission is bounded: queued jobs (`max_queued_jobs`) and spooled input bytes
//!   (`max_spool_bytes`); past a limit `submit` refuses with [`EngineError::ResourceExhausted`]
//!   naming it, and nothing is half-accepted.
//! - Large payloads wait in the spool, not in memory; only jobs being planned or
//!   synthesized hold theirs. Recovery reads only the records' headers (id, order,
//!   priority, kind, digest, size), never the payloads.
//! - Priority is strict: a queued job never starts before a queued job of higher priority,
//!   nor before an earlier one of the same priority (also across restarts: the spool keeps
//!   the acceptance order); partitions are synthesized and proved in (priority, acceptance,
//!   partition) order. A partition that does not fit the memory budget waits at the head.
//!   Checked by: `partitions.rs`, `a_higher_job_goes_before_the_remaining_partitions_of_a_lower_one`.
//! - The host memory budget is never exceeded by reservations: each partition's bytes are
//!   reserved before its synthesis and released when its proof is done, a job's own bytes
//!   from its start to its end, on every path (completed, failed, cancelled, shut down). A
//!   job whose partition is larger than the whole budget fails with a message. Checked by:
//!   `partitions.rs`, `a_budget_of_three_witnesses_never_holds_four`.
//! - A partition's failure is its job's: the job fails naming the partition, its other
//!   partitions stop, and it returns everything it held. Partitions proved before a crash
//!   are redone after it (the spool keeps requests, not partial proofs).
//! - Only kernels hold the per-device lock ([`device::DeviceBackend`]).
//! - Cancellation is cooperative and prompt: checked at every stage boundary and before
//!   every kernel; a cancelled job drops its synthesized partitions at once.
//! - Parameters are loaded once per circuit id, count against the host memory budget, and
//!   are evicted only when no started job holds them: least recently used first past the
//!   cache limit or for room in the budget, or explicitly ([`Engine::evict_srs`] refuses
//!   while a job holds them, naming it). Checked by: `params_2kib.rs`.
//! - A bad request fails alone: runner errors become that job's `Failed` result, and a
//!   panic in any runner stage (plan, prepare, synthesize, parameter load, prove, finish) is caught
//!   ([`panic::contained`]) and becomes one too; no request content can stop a thread of
//!   the engine or another job. Checked by: `scheduling.rs`, `a_panic_in_any_stage_fails_its_job_alone`.
//! - The engine never speaks a protocol and never spawns async tasks for proving: proving
//!   runs on its own OS threads, async callers only await results.

pub mod engine;
pub mod error;
pub mod job;
pub mod metrics;
pub mod device;
pub mod lane;
pub mod panic;
pub mod residency;
pub mod runner;
pub mod spool;
pub mod stats;

pub use engine::{
    default_memory_budget, default_srs_cache_limit, DeviceStatus, DrainReport, Engine, EngineConfig, EngineState, EngineStatus,
    MemoryStatus, QueueStatus, WorkerStatus,
};
pub use error::{Cause, EngineError, RunError};
pub use job::{
    AwaitOutcome, CancelOutcome, JobEvent, JobInfo, JobRequest, JobResult, JobState, JobStatus,
    PartitionProgress, Priority, ProofKind, StageTimings, Submitted,
};
pub use residency::{is_pinned, ResidentStatus};
pub use device::{Device, DeviceBackend, MemoryProbe};
pub use lane::on_urgent_lane;
pub use runner::{
    CancelToken, JobPlan, PartitionProof, PartitionWork, PreparedJob, ProofOutput, ProofRunner, ProveContext, SrsRef,
};
