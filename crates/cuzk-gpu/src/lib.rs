//! cuzk's GPU layer: everything CUDA, over cudarc. Nothing outside this crate calls cudarc.
//!
//! - [`kernels`]: the fatbin compiled from `kernels/` by build.rs, embedded in the binary.
//! - [`device`]: driver presence (checked before any driver call, so a machine without
//!   libcuda gets [`GpuError::NoDriver`], never a panic), device discovery, the per-device
//!   runtime (context, stream, kernels, lock).
//! - [`arena`]: the VRAM arena with a byte budget and RAII buffers.
//! - [`pinned`]: the pinned host pool (page-locked, reused, counted; the only owner of
//!   page-locked memory in the process's use of this crate).
//! - [`GpuBackend`]: `cuzk_groth16::Backend` on a GPU, equal bit for bit to the CPU backend.
//!
//! See README.md in this crate for the kernels and what remains to be done.

pub mod arena;
pub mod backend;
pub mod device;
pub mod error;
pub mod kernels;
mod msm;
mod ntt;
pub mod pinned;
mod random;
mod resident;

pub use arena::{ArenaCounters, DeviceBuffer, VramArena};
pub use backend::{GpuBackend, HSplit, HStep, ProofFootprint};
pub use device::{devices, driver_present, DeviceInfo, Gpu, OpTimings, UploadRates, VramBudget};
pub use error::GpuError;
pub use kernels::kernels_built;
pub use msm::{MsmPlan, PointSource};
pub use pinned::{PinnedBuffer, PinnedCounters, PinnedPool};

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
