//! The seam between scheduling and proving.
//!
//! Why a trait: the engine's hard parts (priorities, the spool, cancel, budgets, recovery)
//! must be testable in milliseconds, while a real proof takes tens of seconds even for a
//! 2 KiB sector. The engine sees a job as N partitions and schedules those; the real
//! implementation, cuzk-filecoin's `FilecoinRunner` (beside the circuits), calls its jobs, and tests drive
//! the engine with doubles that sleep or fail on command.
//!
//! Stages, with the types the compiler checks between them:
//!
//! ```text
//! ProofRunner::plan(&request)              -> JobPlan      cheap: parameters, partitions, bytes
//! ProofRunner::prepare(&request, &plan)    -> PreparedJob  the checked input, shared by all stages
//!   PreparedJob::synthesize(k)             -> PartitionWork   (CPU, any synthesis thread)
//!   PreparedJob::prove(k, work, ctx)       -> PartitionProof  (any worker of any device)
//! PreparedJob::finish(proofs in order)     -> ProofOutput  assembly and verification
//! ```
//!
//! Partitions of one job are synthesized and proved in any order and at the same time
//! (a [`PreparedJob`] is `Sync`); `finish` gets the proofs in partition order.
//!
//! Cancellation is cooperative: the engine sets a [`CancelToken`]; runners check it between
//! stages, and the engine's backend wrapper ([`crate::device::DeviceBackend`]) refuses the next kernel once
//! it is set, so a cancelled proof stops at its next NTT or MSM, and the engine drops the
//! job's synthesized partitions at once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use blstrs::{G1Affine, G2Affine};
use cuzk_groth16::{Backend, PartitionWitness, Proof, Srs};

use crate::error::RunError;
use crate::job::JobRequest;

/// A memory budget's counters: the engine's host budget, a device's arena or pinned pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStatus {
    pub budget_bytes: u64,
    pub in_use_bytes: u64,
    pub high_water_bytes: u64,
}

/// A job's cancellation flag, shared by the engine and the thread running the job.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    pub(crate) cancelled: Arc<AtomicBool>,
    /// Set with `cancelled` when the engine shuts down: the job is left in the spool
    /// instead of ending as cancelled.
    shutdown: Arc<AtomicBool>,
}

impl CancelToken {
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.cancel();
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
    /// `Err(Cancelled)` once cancelled: `token.check()?` at a stage boundary.
    pub fn check(&self) -> Result<(), RunError> {
        if self.is_cancelled() {
            Err(RunError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Which parameters a job needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsRef {
    /// Residency key, e.g. "porep-2k", "porep-32g".
    pub circuit_id: String,
    pub path: PathBuf,
    /// Decoded size, from the file header ([`Srs::shape`]).
    pub bytes: u64,
}

/// What a job will need, known before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPlan {
    pub srs: Option<SrsRef>,
    /// Partitions of the proof (1 for PoSt; 10 for a 32 GiB PoRep; more for NI-PoRep).
    pub partitions: usize,
    /// Host memory one partition holds from the start of its synthesis until its proof is
    /// done: its witness and the prover's working set. The engine reserves it from the
    /// budget before the partition's synthesis starts and releases it when the partition
    /// is proved (or the job ends), so the budget bounds how many are in memory at once.
    pub partition_bytes: u64,
    /// Host memory the prepared job itself holds from `prepare` to its end (the parsed
    /// input), reserved with its first partition.
    pub job_bytes: u64,
}

impl JobPlan {
    /// A plan of `partitions` partitions of `partition_bytes` each, without parameters.
    pub fn new(partitions: usize, partition_bytes: u64) -> JobPlan {
        JobPlan { srs: None, partitions, partition_bytes, job_bytes: 0 }
    }
}

/// One synthesized partition: its witness. Dropping it frees the partition's memory.
#[derive(Debug, Default)]
pub struct PartitionWork {
    pub witness: PartitionWitness,
}

/// One partition's Groth16 proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionProof(pub Proof);

impl PartitionProof {
    /// A proof of identity points: what runners that prove nothing (test doubles) return.
    /// It never verifies.
    pub fn placeholder() -> PartitionProof {
        PartitionProof(Proof { a: G1Affine::default(), b: G2Affine::default(), c: G1Affine::default() })
    }
}

/// What the proving stage gets.
pub struct ProveContext<'a> {
    pub srs: Option<&'a Srs>,
    pub backend: &'a dyn Backend,
    pub cancel: &'a CancelToken,
    /// The engine's `EngineConfig::prover`, for `cuzk_groth16::prove_with`.
    pub tuning: &'a cuzk_groth16::ProverTuning,
}

/// A job's proof and where the runner's time went in `finish` (the engine measures the
/// other stages itself).
#[derive(Clone, Debug, Default)]
pub struct ProofOutput {
    pub proof: Vec<u8>,
    pub verify: Duration,
}

/// How jobs are planned and prepared. Implementations must not panic on any request
/// content; every problem is a [`RunError`] that becomes the job's failure message.
pub trait ProofRunner: Send + Sync + 'static {
    /// Cheap checks and the job's needs. Called without any engine lock held.
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError>;

    /// The checked job, ready for its partitions (on a synthesis thread, under the memory
    /// reservation of `plan.job_bytes` and of its first partition).
    fn prepare(
        &self,
        request: &JobRequest,
        plan: &JobPlan,
        cancel: &CancelToken,
    ) -> Result<Box<dyn PreparedJob>, RunError>;

    /// The parameters of a circuit id, for explicit preload.
    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError>;

    /// Host memory this runner keeps across jobs, outside every job's reservation
    /// (cuzk-filecoin: each proof type's compiled circuit, 8.5 GiB for the 32 GiB PoRep and
    /// 11.6 GiB for the 32 GiB WindowPoSt). The host memory budget counts it as it counts
    /// resident parameters: partitions get what is left. Synthesis threads ask before each
    /// look for work, under the engine's lock: it must be cheap and take no engine lock.
    fn held_bytes(&self) -> u64 {
        0
    }
}

/// A job split into partitions, as the engine schedules it. Shared by the threads that
/// synthesize and prove its partitions at the same time.
pub trait PreparedJob: Send + Sync {
    /// How many partitions; the plan's count.
    fn partitions(&self) -> usize;

    /// Partition `k`'s witness (CPU work).
    fn synthesize(&self, k: usize, cancel: &CancelToken) -> Result<PartitionWork, RunError>;

    /// Partition `k`'s proof from its witness, through `ctx.backend` (a device's kernels).
    fn prove(&self, k: usize, work: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError>;

    /// The output bytes from every partition's proof, in partition order, verified.
    fn finish(&self, proofs: Vec<PartitionProof>, cancel: &CancelToken) -> Result<ProofOutput, RunError>;
}
