//! The seam between scheduling and proving.
//!
//! Why a trait: the engine's hard parts (priorities, the spool, cancel, budgets, recovery)
//! must be testable in milliseconds, while a real proof takes tens of seconds even for a
//! 2 KiB sector. The engine only sees the three stages a job goes through; the real
//! implementation, [`FilecoinRunner`], calls cuzk-filecoin's jobs, and tests drive the
//! engine with doubles that sleep or fail on command.
//!
//! Stages: `plan` (cheap: which parameters, how many bytes of host memory) -> `synthesize`
//! (CPU, may run ahead of proving while the memory budget allows) -> `prove` (on a worker,
//! with the parameters resident and a backend whose kernels run under the device lock).
//!
//! Cancellation is cooperative: the engine sets a [`CancelToken`]; runners check it between
//! stages, and the engine's backend wrapper ([`DeviceBackend`]) refuses the next kernel once
//! it is set, so a cancelled proof stops at its next NTT or MSM, between partitions at the
//! latest, and drops its witnesses on the way out.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_filecoin::c1::REGISTERED_SEAL_PROOFS;
use cuzk_filecoin::params::{post_params_path, seal_params_path, update_params_path, use_proof_dirs};
use cuzk_filecoin::post::post_proof_from_wire;
use cuzk_filecoin::snap::update_proof_from_wire;
use cuzk_filecoin::{
    parse_c1, prover_id_from_miner, C1Input, PoRepJob, PoStJob, PoStRequest, ProofError, ProofJob, SealCommit,
    SectorIdentity, SnapJob, SnapRequest,
};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use cuzk_groth16::{Backend, BackendError, NttDirection, PartitionWitness, Selection, Srs, SrsShape};

use crate::engine::MemoryStatus;

use crate::error::RunError;
use crate::job::{JobRequest, ProofKind};

/// A job's cancellation flag, shared by the engine and the thread running the job.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    cancelled: Arc<AtomicBool>,
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
    /// Host memory the job holds from synthesis to the end of proving (parameters are
    /// accounted separately, by residency). The engine reserves it from the budget before
    /// synthesis starts.
    pub footprint_bytes: u64,
}

/// The output of synthesis, opaque to the engine. Dropping it frees the job's memory.
pub struct Synthesized(pub Box<dyn Any + Send>);

/// What the proving stage gets.
pub struct ProveContext<'a> {
    pub srs: Option<&'a Srs>,
    pub backend: &'a dyn Backend,
    pub cancel: &'a CancelToken,
}

/// A proof and where the runner's time went (engine-measured stages are added to it).
#[derive(Clone, Debug, Default)]
pub struct ProofOutput {
    pub proof: Vec<u8>,
    /// Synthesis that happened inside `prove` (runners that cannot split it out).
    pub synthesis: Duration,
    pub verify: Duration,
}

/// How jobs are proved. Implementations must not panic on any request content; every
/// problem is a [`RunError`] that becomes the job's failure message.
pub trait ProofRunner: Send + Sync + 'static {
    /// Cheap checks and the job's needs. Called without any engine lock held.
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError>;

    /// CPU work that may run ahead of proving (under the job's memory reservation).
    fn synthesize(
        &self,
        request: &JobRequest,
        plan: &JobPlan,
        cancel: &CancelToken,
    ) -> Result<Synthesized, RunError>;

    /// The proof, on a worker.
    fn prove(&self, work: Synthesized, ctx: ProveContext<'_>) -> Result<ProofOutput, RunError>;

    /// The parameters of a circuit id, for explicit preload.
    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError>;
}

/// Reads a device's memory counters (budget, in use, high-water) for status reports.
pub type MemoryProbe = Arc<dyn Fn() -> MemoryStatus + Send + Sync>;

/// A compute device as the engine schedules it: a backend, a name for status and logs, and
/// for GPUs a probe of its memory arena.
#[derive(Clone)]
pub struct Device {
    pub name: String,
    pub backend: Arc<dyn Backend>,
    pub memory: Option<MemoryProbe>,
    /// Proving workers on this device; `None`: `EngineConfig::gpu_workers_per_device`.
    pub workers: Option<usize>,
    /// A GPU's driver ordinal (`None` for the CPU).
    pub ordinal: Option<u32>,
    /// A GPU's page-locked host transfer pool.
    pub pinned: Option<MemoryProbe>,
}

impl Device {
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>) -> Device {
        Device { name: name.into(), backend, memory: None, workers: None, ordinal: None, pinned: None }
    }

    /// Runs `n` proving workers on this device instead of the engine-wide count (0: none).
    pub fn with_workers(mut self, n: usize) -> Device {
        self.workers = Some(n);
        self
    }

    /// Reports `probe()` as this device's memory in [`crate::EngineStatus::devices`].
    pub fn with_memory(mut self, probe: MemoryProbe) -> Device {
        self.memory = Some(probe);
        self
    }

    /// Marks the device as the GPU of driver ordinal `ordinal`, whose pinned host pool
    /// `pinned()` reads.
    pub fn with_gpu(mut self, ordinal: u32, pinned: MemoryProbe) -> Device {
        self.ordinal = Some(ordinal);
        self.pinned = Some(pinned);
        self
    }

    /// The CPU backend, as one device.
    pub fn cpu() -> Device {
        Device::new("cpu", Arc::new(cuzk_groth16::CpuBackend))
    }
}

/// Wraps a device's backend for one job: every kernel checks the job's cancel flag first
/// and runs under the per-device lock, so that workers sharing a device interleave only
/// between kernels while their CPU-side work (synthesis, assembly) runs outside the lock.
/// Measures kernel time and lock wait.
pub struct DeviceBackend<'a> {
    inner: &'a dyn Backend,
    lock: &'a Mutex<()>,
    cancel: &'a CancelToken,
    busy_ns: AtomicU64,
    wait_ns: AtomicU64,
}

impl<'a> DeviceBackend<'a> {
    pub fn new(inner: &'a dyn Backend, lock: &'a Mutex<()>, cancel: &'a CancelToken) -> Self {
        DeviceBackend {
            inner,
            lock,
            cancel,
            busy_ns: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        }
    }

    pub fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed))
    }
    pub fn lock_wait(&self) -> Duration {
        Duration::from_nanos(self.wait_ns.load(Ordering::Relaxed))
    }

    fn run<R>(
        &self,
        f: impl FnOnce(&dyn Backend) -> Result<R, BackendError>,
    ) -> Result<R, BackendError> {
        let cancelled = || BackendError::Unavailable {
            backend: "engine",
            reason: "job cancelled".into(),
        };
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let t = Instant::now();
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.wait_ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let t = Instant::now();
        let r = f(self.inner);
        self.busy_ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
}

impl Backend for DeviceBackend<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn ntt(&self, values: &mut [Scalar], direction: NttDirection) -> Result<(), BackendError> {
        self.run(|b| b.ntt(values, direction))
    }
    fn coset_quotient(
        &self,
        a: &mut [Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<(), BackendError> {
        self.run(|be| be.coset_quotient(a, b, c))
    }
    fn msm_g1(
        &self,
        bases: &[G1Affine],
        sel: Selection<'_>,
        s: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        self.run(|b| b.msm_g1(bases, sel, s))
    }
    fn msm_g2(
        &self,
        bases: &[G2Affine],
        sel: Selection<'_>,
        s: &[Scalar],
    ) -> Result<G2Projective, BackendError> {
        self.run(|b| b.msm_g2(bases, sel, s))
    }
    fn sum_g1(&self, bases: &[G1Affine], sel: Selection<'_>) -> Result<G1Projective, BackendError> {
        self.run(|b| b.sum_g1(bases, sel))
    }
    fn sum_g2(&self, bases: &[G2Affine], sel: Selection<'_>) -> Result<G2Projective, BackendError> {
        self.run(|b| b.sum_g2(bases, sel))
    }
}

/// Host bytes a proof over parameters of `shape` holds at its peak, one partition at a
/// time (what `prove_porep_c2` does): the a, b, c evaluations and h over the domain, plus
/// the assignment of every input and aux variable, 32 bytes per field element.
pub fn partition_footprint(shape: &SrsShape) -> u64 {
    let domain = (shape.h as u64 + 1).next_power_of_two();
    let variables = (shape.ic + shape.l) as u64;
    (4 * domain + variables) * 32
}

/// Short size label of a circuit id: 2048 -> "2k", 32 GiB -> "32g".
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}g", b >> 30),
        b if b >= 1 << 20 => format!("{}m", b >> 20),
        b => format!("{}k", b >> 10),
    }
}

/// Every proof kind with cuzk's prover (cuzk-filecoin): PoRep C2, SnapDeals, a WindowPoSt
/// partition and WinningPoSt, each verified with filecoin-proofs before it is returned.
pub struct FilecoinRunner {
    param_dir: PathBuf,
}

/// What the synthesis stage hands to proving: the checked job of any kind and partition 0's
/// witness, synthesized ahead under the job's memory reservation. Later partitions are
/// synthesized while the previous one proves (see [`pipeline_partitions`]), so a
/// multi-partition job holds at most two witnesses, which its reservation covers.
struct Work {
    job: Box<dyn ProofJob>,
    first: PartitionWitness,
    first_synthesis: Duration,
}

/// Proves partitions `0..n` in order. With `overlap`, partition k + 1 is synthesized on its
/// own thread while partition k proves, so that the device never waits for the CPU between
/// partitions (a 32 GiB PoRep has 10); without it, one after the other, holding one witness.
/// `first` is partition 0's witness when it was synthesized ahead. Stops at the first error
/// (after the synthesis in flight, if any, has ended: it cannot be interrupted).
pub fn pipeline_partitions<W: Send, P, E: Send>(
    n: usize,
    first: Option<W>,
    overlap: bool,
    synthesize: impl Fn(usize) -> Result<W, E> + Sync,
    mut prove: impl FnMut(usize, W) -> Result<P, E>,
) -> Result<Vec<P>, E> {
    let mut out = Vec::with_capacity(n);
    std::thread::scope(|scope| {
        let synthesize = &synthesize;
        let mut ready = first;
        let mut ahead: Option<std::thread::ScopedJoinHandle<'_, Result<W, E>>> = None;
        for k in 0..n {
            let w = match (ready.take(), ahead.take()) {
                (Some(w), _) => w,
                (None, Some(h)) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?,
                (None, None) => synthesize(k)?,
            };
            if overlap && k + 1 < n {
                ahead = Some(scope.spawn(move || synthesize(k + 1)));
            }
            out.push(prove(k, w)?);
        }
        Ok(out)
    })
}

fn job_error(e: ProofError, cancel: &CancelToken) -> RunError {
    if cancel.is_cancelled() {
        RunError::Cancelled
    } else if e.is_bad_input() {
        RunError::BadRequest(e.to_string())
    } else {
        RunError::Prove(e.to_string())
    }
}

/// The proof type a request names, by kind.
#[derive(Clone, Copy, Debug)]
enum Typed {
    /// The seal proof type comes from the C1 output.
    Seal(RegisteredSealProof),
    PoSt(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

impl FilecoinRunner {
    /// Parameters (`.params` and `.vk`) in `param_dir` by Filecoin's naming; filecoin-proofs
    /// is pointed at the same directory (and at `parent_dir`, when given) for verification.
    pub fn new(param_dir: &Path, parent_dir: Option<&Path>) -> Result<FilecoinRunner, RunError> {
        use_proof_dirs(param_dir, parent_dir).map_err(|e| RunError::Params(e.to_string()))?;
        Ok(FilecoinRunner {
            param_dir: param_dir.to_path_buf(),
        })
    }

    /// Saves the proof types' compiled circuits in `dir` and finds them there after a
    /// restart (see cuzk_filecoin::synthesis; process-wide).
    pub fn save_compiled_circuits_in(&self, dir: &Path) {
        cuzk_filecoin::synthesis::set_compiled_dir(Some(dir.to_path_buf()));
    }

    /// "porep-2k" for the interactive and synthetic proofs of a 2 KiB sector (they share
    /// parameters), "ni-porep-2k" for non-interactive PoRep.
    pub fn circuit_id(proof: RegisteredSealProof) -> String {
        let size = size_label(u64::from(proof.sector_size()));
        if format!("{proof:?}").contains("NonInteractive") {
            format!("ni-porep-{size}")
        } else {
            format!("porep-{size}")
        }
    }

    /// "winning-2k" or "wpost-2k" (WindowPoSt API 1.0 and 1.2 share parameters).
    pub fn post_circuit_id(proof: RegisteredPoStProof) -> String {
        let size = size_label(u64::from(proof.sector_size()));
        match proof.typ() {
            filecoin_proofs::PoStType::Winning => format!("winning-{size}"),
            filecoin_proofs::PoStType::Window => format!("wpost-{size}"),
        }
    }

    /// "snap-32g".
    pub fn update_circuit_id(proof: RegisteredUpdateProof) -> String {
        format!("snap-{}", size_label(u64::from(proof.sector_size())))
    }

    fn srs_ref(&self, typed: Typed) -> Result<SrsRef, RunError> {
        let (path, circuit_id) = match typed {
            Typed::Seal(p) => (seal_params_path(&self.param_dir, p), Self::circuit_id(p)),
            Typed::PoSt(p) => (post_params_path(&self.param_dir, p), Self::post_circuit_id(p)),
            Typed::Update(p) => (update_params_path(&self.param_dir, p), Self::update_circuit_id(p)),
        };
        let path = path.map_err(|e| RunError::Params(e.to_string()))?;
        let shape = Srs::shape(&path).map_err(|e| {
            RunError::Params(format!(
                "{e} (parameters for {typed:?} are expected in {}; fetch them or point the \
                 parameter cache there)",
                self.param_dir.display()
            ))
        })?;
        Ok(SrsRef {
            circuit_id,
            path,
            bytes: shape.point_bytes() as u64,
        })
    }

    /// A request's sector_size against its proof type's (0: take the type's, as Curio's
    /// proofshare requests do).
    fn check_sector_size(request: &JobRequest, size: u64, typed: Typed) -> Result<(), RunError> {
        if request.sector_size != 0 && request.sector_size != size {
            return Err(RunError::BadRequest(format!(
                "sector_size {} does not match registered_proof {} ({typed:?}, {size} bytes)",
                request.sector_size, request.registered_proof
            )));
        }
        Ok(())
    }

    fn parse_c1(request: &JobRequest) -> Result<C1Input, RunError> {
        let c1 = parse_c1(&request.vanilla_proof)
            .map_err(|e| RunError::BadRequest(format!("vanilla_proof: {e}")))?;
        if request.sector_size != 0 {
            c1.check_sector_size(request.sector_size)
                .map_err(|e| RunError::BadRequest(format!("sector_size: {e}")))?;
        }
        Ok(c1)
    }

    /// The proof type and its partition count, checked against the kind and sector size.
    fn typed(request: &JobRequest) -> Result<(Typed, usize), RunError> {
        let bad = |e: ProofError| RunError::BadRequest(e.to_string());
        match request.kind {
            ProofKind::PoRepSealCommit => {
                let c1 = Self::parse_c1(request)?;
                let p = c1.registered_proof();
                Ok((Typed::Seal(p), usize::from(p.partitions())))
            }
            ProofKind::SnapDealsUpdate => {
                let p = update_proof_from_wire(request.registered_proof).map_err(bad)?;
                Self::check_sector_size(request, u64::from(p.sector_size()), Typed::Update(p))?;
                Ok((Typed::Update(p), usize::from(p.partitions())))
            }
            ProofKind::WindowPostPartition | ProofKind::WinningPost => {
                let p = post_proof_from_wire(request.registered_proof).map_err(bad)?;
                let winning = request.kind == ProofKind::WinningPost;
                if winning != (p.typ() == filecoin_proofs::PoStType::Winning) {
                    return Err(RunError::BadRequest(format!(
                        "registered_proof {} is {p:?}, not a {} proof type; {} takes {}",
                        request.registered_proof,
                        if winning { "WinningPoSt" } else { "WindowPoSt" },
                        request.kind.queue_name(),
                        if winning { "0-4" } else { "5-14" }
                    )));
                }
                Self::check_sector_size(request, u64::from(p.sector_size()), Typed::PoSt(p))?;
                Ok((Typed::PoSt(p), 1))
            }
        }
    }

    fn miner(request: &JobRequest) -> Result<u64, RunError> {
        if request.miner_id == 0 {
            return Err(RunError::BadRequest(
                "miner_id is 0; expected the miner actor id the sector belongs to".into(),
            ));
        }
        Ok(request.miner_id)
    }

    /// The checked job of a request.
    fn job(request: &JobRequest, cancel: &CancelToken) -> Result<Box<dyn ProofJob>, RunError> {
        let (typed, _) = Self::typed(request)?;
        Ok(match typed {
            Typed::Seal(_) => {
                let c1 = Self::parse_c1(request)?;
                let miner = Self::miner(request)?;
                let sector_id = match (request.sector_number, c1.sector_num) {
                    (0, Some(n)) => n,
                    (0, None) => {
                        return Err(RunError::BadRequest(
                            "sector_number is 0 and the C1 input is not an envelope with SectorNum".into(),
                        ))
                    }
                    (n, _) => n,
                };
                let id = SectorIdentity { prover_id: prover_id_from_miner(miner), sector_id };
                let job = PoRepJob::new(&c1).map_err(|e| job_error(e, cancel))?;
                Box::new(SealCommit { job, id })
            }
            Typed::Update(registered_proof) => Box::new(
                SnapJob::new(&SnapRequest {
                    registered_proof,
                    vanilla_proofs: &request.vanilla_proofs,
                    comm_r_old: &request.comm_r_old,
                    comm_r_new: &request.comm_r_new,
                    comm_d_new: &request.comm_d_new,
                })
                .map_err(|e| job_error(e, cancel))?,
            ),
            Typed::PoSt(registered_proof) => Box::new(
                PoStJob::new(&PoStRequest {
                    registered_proof,
                    randomness: &request.randomness,
                    prover_id: prover_id_from_miner(Self::miner(request)?),
                    partition_index: request.partition_index as usize,
                    vanilla_proofs: &request.vanilla_proofs,
                })
                .map_err(|e| job_error(e, cancel))?,
            ),
        })
    }
}

impl ProofRunner for FilecoinRunner {
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError> {
        let (typed, partitions) = Self::typed(request)?;
        let srs = self.srs_ref(typed)?;
        let shape = Srs::shape(&srs.path).map_err(|e| RunError::Params(e.to_string()))?;
        // Two witnesses at once when partitions are pipelined (see `prove`).
        let witnesses = (partitions as u64).clamp(1, 2);
        Ok(JobPlan {
            footprint_bytes: witnesses * partition_footprint(&shape) + 2 * request.payload_bytes(),
            srs: Some(srs),
        })
    }

    fn synthesize(
        &self,
        request: &JobRequest,
        _plan: &JobPlan,
        cancel: &CancelToken,
    ) -> Result<Synthesized, RunError> {
        cancel.check()?;
        let job = Self::job(request, cancel)?;
        cancel.check()?;
        let (first, t) = job.synthesize(0).map_err(|e| job_error(e, cancel))?;
        Ok(Synthesized(Box::new(Work {
            job,
            first,
            first_synthesis: t.circuit + t.synthesis,
        })))
    }

    fn prove(&self, work: Synthesized, ctx: ProveContext<'_>) -> Result<ProofOutput, RunError> {
        ctx.cancel.check()?;
        let work = work
            .0
            .downcast::<Work>()
            .map_err(|_| RunError::Prove("internal: synthesis output of another runner".into()))?;
        let srs = ctx
            .srs
            .ok_or_else(|| RunError::Prove("internal: proving needs parameters".into()))?;
        let Work { job, first, first_synthesis } = *work;
        // Pipelining only pays when the device is not the CPU that synthesizes.
        let overlap = ctx.backend.name() != cuzk_groth16::CpuBackend.name();
        let synthesis_ns = AtomicU64::new(first_synthesis.as_nanos() as u64);
        let proofs = pipeline_partitions(
            job.partitions(),
            Some(first),
            overlap,
            |k| {
                ctx.cancel.check()?;
                let (w, t) = job.synthesize(k).map_err(|e| job_error(e, ctx.cancel))?;
                synthesis_ns.fetch_add((t.circuit + t.synthesis).as_nanos() as u64, Ordering::Relaxed);
                Ok(w)
            },
            |k, w| {
                ctx.cancel.check()?;
                let (r, s) = cuzk_groth16::prover::random_blinding(&mut rand::rngs::OsRng);
                let (proof, _) = cuzk_groth16::prove(ctx.backend, srs, w, r, s).map_err(|e| {
                    job_error(ProofError::Prove { partition: k, source: e }, ctx.cancel)
                })?;
                Ok(proof)
            },
        )?;
        let synthesis = Duration::from_nanos(synthesis_ns.load(Ordering::Relaxed));
        ctx.cancel.check()?;
        let (proof, t) = job.finish(&proofs).map_err(|e| job_error(e, ctx.cancel))?;
        Ok(ProofOutput {
            proof,
            synthesis,
            verify: t.verify,
        })
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        // Canonical proof per circuit id: the newest interactive (or NI) seal version, the
        // newest PoSt API.
        let seal = REGISTERED_SEAL_PROOFS
            .iter()
            .rev()
            .copied()
            .filter(|p| !format!("{p:?}").contains("Synthetic"))
            .find(|p| Self::circuit_id(*p) == circuit_id)
            .map(Typed::Seal);
        let post = || {
            (0..15u64)
                .rev()
                .filter_map(|v| post_proof_from_wire(v).ok())
                .find(|p| Self::post_circuit_id(*p) == circuit_id)
                .map(Typed::PoSt)
        };
        let update = || {
            (0..5u64)
                .filter_map(|v| update_proof_from_wire(v).ok())
                .find(|p| Self::update_circuit_id(*p) == circuit_id)
                .map(Typed::Update)
        };
        let typed = seal.or_else(post).or_else(update).ok_or_else(|| {
            RunError::BadRequest(format!(
                "circuit_id {circuit_id:?} is unknown; expected porep-<size>, ni-porep-<size>, \
                 snap-<size>, wpost-<size> or winning-<size> with size 2k, 8m, 512m, 32g or 64g"
            ))
        })?;
        self.srs_ref(typed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs_api::RegisteredSealProof as P;

    #[test]
    fn circuit_ids_name_size_and_variant() {
        assert_eq!(FilecoinRunner::circuit_id(P::StackedDrg2KiBV1_1), "porep-2k");
        assert_eq!(
            FilecoinRunner::circuit_id(P::StackedDrg32GiBV1_1_Feat_SyntheticPoRep),
            "porep-32g"
        );
        assert_eq!(
            FilecoinRunner::circuit_id(P::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep),
            "ni-porep-64g"
        );
        assert_eq!(FilecoinRunner::circuit_id(P::StackedDrg512MiBV1), "porep-512m");
    }

    /// Partition k + 1's synthesis runs while partition k proves, results stay in order,
    /// and without overlap nothing runs at once.
    #[test]
    fn partitions_are_pipelined_in_order() {
        for overlap in [true, false] {
            let synthesizing = AtomicU64::new(0);
            let overlapped = AtomicU64::new(0);
            let synthesized = Mutex::new(Vec::new());
            let proofs = pipeline_partitions(
                4,
                Some(0usize),
                overlap,
                |k| {
                    synthesizing.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    synthesized.lock().unwrap().push(k);
                    synthesizing.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, String>(k)
                },
                |k, w| {
                    assert_eq!(k, w, "partition {k} got witness {w}");
                    let end = Instant::now() + Duration::from_millis(1000);
                    while Instant::now() < end {
                        if synthesizing.load(Ordering::SeqCst) > 0 {
                            overlapped.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(k * 10)
                },
            )
            .unwrap();
            assert_eq!(proofs, [0, 10, 20, 30]);
            assert_eq!(*synthesized.lock().unwrap(), [1, 2, 3], "partition 0 came ready");
            // Proofs 0, 1 and 2 each saw the next partition synthesizing; proof 3 had none next.
            assert_eq!(overlapped.load(Ordering::SeqCst), if overlap { 3 } else { 0 }, "overlap = {overlap}");
        }
    }

    #[test]
    fn a_failed_partition_stops_the_pipeline() {
        let proved = AtomicU64::new(0);
        let r = pipeline_partitions(
            5,
            None,
            true,
            |k| if k == 2 { Err(format!("partition {k} unsatisfied")) } else { Ok(k) },
            |_, _| {
                proved.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(())
            },
        );
        assert_eq!(r.unwrap_err(), "partition 2 unsatisfied");
        assert_eq!(proved.load(Ordering::SeqCst), 2, "partitions 0 and 1 proved, then the error");
        let r = pipeline_partitions(3, None, true, Ok::<usize, String>, |k, _| if k == 1 { Err("device lost".to_string()) } else { Ok(k) });
        assert_eq!(r.unwrap_err(), "device lost");
    }

    /// Counts how many calls run at once; each NTT takes 20 ms, or, with `rendezvous`,
    /// until two run at once (2 s at most).
    #[derive(Default)]
    struct Probe {
        now: AtomicU64,
        max: AtomicU64,
        rendezvous: bool,
    }

    impl Backend for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn ntt(&self, _: &mut [Scalar], _: NttDirection) -> Result<(), BackendError> {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            let end = Instant::now() + Duration::from_secs(2);
            while self.rendezvous && self.max.load(Ordering::SeqCst) < 2 && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.now.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
        fn coset_quotient(
            &self,
            _: &mut [Scalar],
            _: &[Scalar],
            _: &[Scalar],
        ) -> Result<(), BackendError> {
            unreachable!()
        }
        fn msm_g1(
            &self,
            _: &[G1Affine],
            _: Selection<'_>,
            _: &[Scalar],
        ) -> Result<G1Projective, BackendError> {
            unreachable!()
        }
        fn msm_g2(
            &self,
            _: &[G2Affine],
            _: Selection<'_>,
            _: &[Scalar],
        ) -> Result<G2Projective, BackendError> {
            unreachable!()
        }
        fn sum_g1(&self, _: &[G1Affine], _: Selection<'_>) -> Result<G1Projective, BackendError> {
            unreachable!()
        }
        fn sum_g2(&self, _: &[G2Affine], _: Selection<'_>) -> Result<G2Projective, BackendError> {
            unreachable!()
        }
    }

    #[test]
    fn kernels_of_one_device_never_overlap_and_stop_once_cancelled() {
        let probe = Probe::default();
        let lock = Mutex::new(());
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let cancel = CancelToken::default();
                    let dev = DeviceBackend::new(&probe, &lock, &cancel);
                    for _ in 0..3 {
                        dev.ntt(&mut [], NttDirection::Forward).unwrap();
                    }
                    assert!(dev.busy() >= Duration::from_millis(60));
                });
            }
        });
        assert_eq!(
            probe.max.load(Ordering::SeqCst),
            1,
            "the device lock serializes kernels"
        );

        // Without a shared lock (two devices) they do overlap: the probe can see it.
        let (l1, l2) = (Mutex::new(()), Mutex::new(()));
        let probe = Probe {
            rendezvous: true,
            ..Probe::default()
        };
        std::thread::scope(|s| {
            for l in [&l1, &l2] {
                let probe = &probe;
                s.spawn(move || {
                    let cancel = CancelToken::default();
                    DeviceBackend::new(probe, l, &cancel)
                        .ntt(&mut [], NttDirection::Forward)
                        .unwrap();
                });
            }
        });
        assert_eq!(probe.max.load(Ordering::SeqCst), 2);

        let cancel = CancelToken::default();
        cancel.cancel();
        let probe = Probe::default();
        let err = DeviceBackend::new(&probe, &lock, &cancel)
            .ntt(&mut [], NttDirection::Forward)
            .unwrap_err();
        assert!(err.to_string().contains("job cancelled"), "{err}");
        assert_eq!(probe.max.load(Ordering::SeqCst), 0, "no kernel ran");
    }

    #[test]
    fn footprint_grows_with_the_domain() {
        let small = SrsShape {
            ic: 2,
            h: 1023,
            l: 1000,
            a: 10,
            b_g1: 10,
            b_g2: 10,
        };
        let big = SrsShape {
            h: (1 << 20) - 1,
            ..small
        };
        assert_eq!(partition_footprint(&small), (4 * 1024 + 1002) * 32);
        assert!(partition_footprint(&big) > 100 * partition_footprint(&small));
    }
}
