//! cuzk's GPU layer: everything CUDA, over cudarc. Nothing outside this crate calls cudarc.
//!
//! The main types:
//!
//! - [`GpuBackend`]: `cuzk_groth16::Backend` on one GPU (NTTs, the H step, G1 and G2 MSMs
//!   and sums), equal bit for bit to the CPU backend. Opened with
//!   [`GpuBackend::open_with`] (device, VRAM budget, pinned budget, tuning) or the shorter
//!   [`GpuBackend::open`] and [`GpuBackend::new`] (default budgets and tuning).
//! - [`GpuTuning`]: every choice an operator may set ([`GpuTuning::pin_host`],
//!   [`GpuTuning::copy_threads`]) or a bench may vary (the NTT kernels, MSM windows, chunks,
//!   bucket keys, batch-affine levels, the H step's path, residency), in one struct whose
//!   `Default` is what was measured best. It enters at open; benches compare variants over
//!   the same resident parameters with [`GpuBackend::retune`] and [`GpuTuning::set`]
//!   (`NAME=VALUE`). Nothing in this crate reads the environment, except the test helper
//!   [`backend_or_skip`] (`CUZK_REQUIRE_GPU`).
//! - [`VramBudget`]: how much device memory the arena may hold (bytes, or a fraction of the
//!   free memory at open). Every call plans its memory before it allocates; a call that
//!   cannot fit is refused with [`GpuError::OverBudget`], never a CUDA out-of-memory error.
//!   [`GpuBackend::plan_footprint`] gives a whole proof's [`ProofFootprint`] ahead of it.
//! - [`LastReport`]: what the last calls did (timings, the H step's path, the last MSM's
//!   [`MsmPlan`]), for benches and tests.
//! - [`GpuError`]: no driver, no device, no kernels, over budget, cancelled, a driver call
//!   that failed.
//!
//! Below them: [`device`] (driver presence, checked before any driver call so that a
//! machine without libcuda gets [`GpuError::NoDriver`], never a panic; device discovery;
//! [`Gpu`], the per-device runtime: context, streams, events, staged transfers, pinning),
//! [`arena`] ([`VramArena`]: the byte budget and RAII buffers), [`pinned`] ([`PinnedPool`]:
//! the only owner of page-locked memory in the process's use of this crate), [`kernels`]
//! (the fatbin compiled from `kernels/` by build.rs, embedded in the binary), and the host
//! side of the algorithms (`ntt.rs`, `msm/`). README.md in this crate has the kernels and
//! what remains to be done.
//!
//! A tuning, as the daemon and a bench build it (this runs without a GPU: opening fails
//! with an error then):
//!
//! ```
//! use cuzk_gpu::device::DEFAULT_PINNED_BUDGET;
//! use cuzk_gpu::{GpuBackend, GpuTuning, NttPasses, VramBudget};
//!
//! // The defaults are the measured ones.
//! let default = GpuTuning::default();
//! assert!(!default.pin_host && default.copy_threads == 0 && default.device_h);
//! assert_eq!(default.ntt_passes, NttPasses::FusedCapped);
//!
//! // An operator key is a plain field; a bench variant is NAME=VALUE, bounds checked.
//! let mut tuning = GpuTuning { copy_threads: 8, ..GpuTuning::default() };
//! tuning.set("msm_max_chunk_log", "22")?;
//! assert_eq!(tuning.msm_max_chunk_log, Some(22));
//! let refused = tuning.set("msm_max_chunk_log", "40").unwrap_err();
//! assert!(refused.contains("from 10 to 30"), "{refused}");
//! assert!(tuning.set("h_overlap", "0").unwrap_err().contains("msm_max_chunk_log"));
//!
//! match GpuBackend::open_with(0, VramBudget::default(), DEFAULT_PINNED_BUDGET, tuning.clone()) {
//!     Ok(gpu) => {
//!         assert_eq!(gpu.tuning(), tuning);
//!         // A bench's reference in the same process: the H step on the host path.
//!         gpu.retune(GpuTuning { device_h: false, ..tuning });
//!         assert!(!gpu.tuning().device_h);
//!     }
//!     Err(e) => println!("no GPU here: {e}"),
//! }
//! # Ok::<(), String>(())
//! ```

pub mod arena;
pub mod backend;
pub mod device;
pub mod error;
mod eval;
pub mod kernels;
mod msm;
mod ntt;
pub mod pinned;
#[cfg(feature = "testing")]
mod random;
mod resident;
mod tuning;

pub use arena::{ArenaCounters, DeviceBuffer, VramArena};
pub use backend::{GpuBackend, HSplit, HStep, LastReport, ProofFootprint};
pub use device::{devices, driver_present, DeviceInfo, Gpu, OpTimings, UploadRates, VramBudget};
pub use error::GpuError;
pub use kernels::kernels_built;
pub use msm::{choose_multiples, modeled_ms, multiples_room, MsmPlan, MultiplesChoice, PointSource};
pub use pinned::{PinnedBuffer, PinnedCounters, PinnedPool};
pub use tuning::{GpuTuning, NttPasses};

/// The one place GPU tests decide between skipping and failing when the backend cannot be
/// opened. Without `CUZK_REQUIRE_GPU=1` (a machine without a GPU, such as CI) the reason is
/// printed as `SKIPPED: <what>: <reason>` on stderr, past the harness's capture, and `None`
/// comes back; with it (the device run script sets it on GPU machines) this panics with the
/// reason, so a broken fatbin or driver fails the test instead of passing as a skip.
pub fn backend_or_skip(what: &str, opened: Result<GpuBackend, GpuError>) -> Option<GpuBackend> {
    let required = std::env::var("CUZK_REQUIRE_GPU").is_ok_and(|v| v == "1");
    backend_or_skip_if(required, what, opened)
}

fn backend_or_skip_if(required: bool, what: &str, opened: Result<GpuBackend, GpuError>) -> Option<GpuBackend> {
    match opened {
        Ok(b) => Some(b),
        Err(e) if required => {
            panic!("{what}: CUZK_REQUIRE_GPU=1 but the GPU backend did not open: {e}")
        }
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: {what}: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_required_gpu_that_does_not_open_fails_and_an_optional_one_skips() {
        let failed = std::panic::catch_unwind(|| {
            super::backend_or_skip_if(true, "probe", Err(super::GpuError::NoDriver("libcuda.so.1 not found".into())))
        });
        let Err(msg) = failed else { panic!("a required GPU must not skip") };
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("CUZK_REQUIRE_GPU=1") && msg.contains("libcuda.so.1"), "{msg}");
        assert!(super::backend_or_skip_if(false, "probe", Err(super::GpuError::NoKernels)).is_none());
    }
}
