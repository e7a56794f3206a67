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
mod resident;

pub use arena::{ArenaCounters, DeviceBuffer, VramArena};
pub use backend::{GpuBackend, ProofFootprint};
pub use device::{devices, driver_present, DeviceInfo, Gpu, OpTimings, UploadRates, VramBudget};
pub use error::GpuError;
pub use kernels::kernels_built;
pub use msm::{MsmPlan, PointSource};
pub use pinned::{PinnedBuffer, PinnedCounters, PinnedPool};
