//! A compute device as the engine schedules it ([`Device`]), and the wrapper its kernels run
//! through for one job ([`DeviceBackend`]): the per-device lock, the job's cancel flag, and
//! the kernel time and lock wait the job reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, Scalar};
use cuzk_groth16::{Backend, BackendError, DeviceLock, Srs};

use crate::runner::{CancelToken, MemoryStatus};

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
    cuzk_groth16::forward_kernels!(run);
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    /// A backend with its own H step (the GPU keeps a, b, c and h on the device) gets the
    /// call as one kernel region; a host-path H step ([`Backend::h_step_on_host`], the CPU
    /// backend's) goes through this wrapper kernel by kernel, so that a cancel stops it
    /// between NTTs.
    fn h_msm(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> Result<(G1Projective, Duration), BackendError> {
        if self.inner.h_step_on_host() {
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
        if self.inner.h_step_on_host() {
            cuzk_groth16::hstep::h_msm_compiled_via_host(self, circuit, inputs, aux, h_bases, check)
        } else {
            self.run(|be| be.h_msm_compiled(circuit, inputs, aux, h_bases, check))
        }
    }
    fn h_step_on_host(&self) -> bool {
        self.inner.h_step_on_host()
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
    use blstrs::{G2Affine, G2Projective};
    use cuzk_groth16::{NttDirection, Selection};
    
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
