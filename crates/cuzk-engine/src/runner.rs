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
//! stages, and the engine's backend wrapper ([`DeviceBackend`]) refuses the next kernel once
//! it is set, so a cancelled proof stops at its next NTT or MSM, and the engine drops the
//! job's synthesized partitions at once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_groth16::{Backend, BackendError, DeviceLock, NttDirection, PartitionWitness, Proof, Selection, Srs};

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

thread_local! {
    static URGENT_LANE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one of the urgent lane's synthesis threads (the engine's
/// `urgent_synthesis_workers`).
pub(crate) fn mark_urgent_lane() {
    URGENT_LANE.with(|u| u.set(true));
}

/// Whether [`PreparedJob::synthesize`] (or another stage) runs on a synthesis thread of the
/// urgent lane: a job of priority High or Critical that should not wait for the CPU behind
/// bulk synthesis. A runner may then synthesize at a higher CPU priority (cuzk-filecoin's
/// runner uses a thread pool of its own at the process's priority).
pub fn on_urgent_lane() -> bool {
    URGENT_LANE.with(|u| u.get())
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
/// The lock is the backend's own where it has one ([`Backend::device_lock`], the GPU's), so
/// a device has one lock; and the job's cancel flag is the call's
/// ([`cuzk_groth16::region::with_cancel`]), so a backend that works in steps stops at its
/// next step once the job is cancelled. Measures kernel time and lock wait.
pub struct DeviceBackend<'a> {
    inner: &'a dyn Backend,
    lock: &'a DeviceLock,
    cancel: &'a CancelToken,
    busy_ns: AtomicU64,
    wait_ns: AtomicU64,
}

impl<'a> DeviceBackend<'a> {
    /// `fallback` is the device's lock for a backend without one of its own.
    pub fn new(inner: &'a dyn Backend, fallback: &'a DeviceLock, cancel: &'a CancelToken) -> Self {
        DeviceBackend {
            inner,
            lock: inner.device_lock().unwrap_or(fallback),
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
        let _held = self.lock.enter();
        self.wait_ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let t = Instant::now();
        let r = cuzk_groth16::region::with_cancel(&self.cancel.cancelled, || f(self.inner));
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
    /// A backend with its own H step (the GPU keeps a, b, c and h on the device) gets the
    /// call as one kernel region; the CPU backend's H step is the host path, which goes
    /// through this wrapper kernel by kernel, so that a cancel stops it between NTTs.
    fn h_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> Result<(G1Projective, Duration), BackendError> {
        if self.inner.name() == cuzk_groth16::CpuBackend.name() {
            cuzk_groth16::hstep::h_msm_via_host(self, a, b, c, h_bases)
        } else {
            self.run(|be| be.h_msm(a, b, c, h_bases))
        }
    }
    /// As `h_msm`: on the CPU the evaluation, then the host path through this wrapper; a
    /// device's call is one kernel region.
    fn h_msm_compiled(
        &self,
        circuit: &dyn cuzk_groth16::constraints::Constraints,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        check: bool,
    ) -> Result<cuzk_groth16::HOutcome, BackendError> {
        if self.inner.name() == cuzk_groth16::CpuBackend.name() {
            cuzk_groth16::hstep::h_msm_compiled_via_host(self, circuit, inputs, aux, h_bases, check)
        } else {
            self.run(|be| be.h_msm_compiled(circuit, inputs, aux, h_bases, check))
        }
    }
    fn device_lock(&self) -> Option<&DeviceLock> {
        Some(self.lock)
    }
    fn holds_params(&self, srs: &Srs) -> bool {
        self.inner.holds_params(srs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    
    /// The Backend methods of the test doubles below, which implement only `ntt`.
    macro_rules! only_ntt {
        () => {
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
        };
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
        cuzk_groth16::h_msm_on_host!();
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
        only_ntt!();
    }

    /// A device that holds every parameter set (as a GPU with them resident).
    struct Holder;
    impl Backend for Holder {
        cuzk_groth16::h_msm_on_host!();
        fn name(&self) -> &'static str {
            "holder"
        }
        fn ntt(&self, _: &mut [Scalar], _: NttDirection) -> Result<(), BackendError> {
            unreachable!()
        }
        fn holds_params(&self, _: &Srs) -> bool {
            true
        }
        only_ntt!();
    }

    /// The engine's wrapper forwards `holds_params`, so that spilled parameters proved
    /// through the engine on a device that holds them give their host copy back (the
    /// worker calls `release_if_held` with the wrapper).
    #[test]
    fn the_device_wrapper_lets_held_parameters_go() {
        let shape = cuzk_groth16::SrsShape { ic: 2, h: 63, l: 40, a: 30, b_g1: 10, b_g2: 10 };
        let mut srs = cuzk_groth16::shape::random_srs(&shape, 1);
        let dir = tempfile::tempdir().unwrap();
        srs.spill_to(dir.path()).unwrap();
        let (lock, cancel) = (DeviceLock::new(), CancelToken::default());
        let cpu = DeviceBackend::new(&cuzk_groth16::CpuBackend, &lock, &cancel);
        assert_eq!(srs.release_if_held(&cpu), None, "the CPU holds nothing of its own");
        let dev = DeviceBackend::new(&Holder, &lock, &cancel);
        assert!(srs.release_if_held(&dev).is_some() && srs.host_released());
    }

    #[test]
    fn kernels_of_one_device_never_overlap_and_stop_once_cancelled() {
        let probe = Probe::default();
        let lock = DeviceLock::new();
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
        let (l1, l2) = (DeviceLock::new(), DeviceLock::new());
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

    /// A backend with a lock of its own, whose NTT runs until its caller's cancel flag is set
    /// (2 s at most) and reports whether it ran inside its own lock.
    #[derive(Default)]
    struct Stepper {
        lock: DeviceLock,
        held: AtomicU64,
        steps: AtomicU64,
    }

    impl Backend for Stepper {
        cuzk_groth16::h_msm_on_host!();
        fn name(&self) -> &'static str {
            "stepper"
        }
        fn device_lock(&self) -> Option<&DeviceLock> {
            Some(&self.lock)
        }
        fn ntt(&self, _: &mut [Scalar], _: NttDirection) -> Result<(), BackendError> {
            let _region = self.lock.enter(); // re-entered: the engine holds it already
            self.held
                .store(self.lock.held_here() as u64, Ordering::SeqCst);
            let end = Instant::now() + Duration::from_secs(2);
            while Instant::now() < end {
                if cuzk_groth16::region::cancel_requested() {
                    return Err(BackendError::Unavailable {
                        backend: "stepper",
                        reason: "cancelled".into(),
                    });
                }
                self.steps.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        }
        only_ntt!();
    }

    #[test]
    fn a_device_has_one_lock_and_a_cancel_reaches_the_call_in_progress() {
        let stepper = Stepper::default();
        let engines_own = DeviceLock::new();
        let cancel = CancelToken::default();
        let t = Instant::now();
        std::thread::scope(|s| {
            let dev = DeviceBackend::new(&stepper, &engines_own, &cancel);
            let call = s.spawn(move || dev.ntt(&mut [], NttDirection::Forward));
            // The call holds the backend's lock, not the engine's fallback: another thread
            // could take the fallback now, but must wait for the backend's.
            while stepper.steps.load(Ordering::SeqCst) < 3 {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(
                stepper.held.load(Ordering::SeqCst),
                1,
                "the backend's own lock is held inside the call"
            );
            drop(engines_own.enter());
            cancel.cancel();
            let err = call.join().unwrap().unwrap_err();
            assert!(err.to_string().contains("cancelled"), "{err}");
        });
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "the cancel stopped the call mid-way: {:?}",
            t.elapsed()
        );
        assert!(!stepper.lock.held_here());
        drop(stepper.lock.enter());
    }
}
