//! The embedded fatbin (built from `kernels/` by build.rs) and handles to its entry points.

use std::ffi::{c_void, CString};

use cudarc::driver::{result, sys};

use crate::error::{driver, GpuError};

/// The fatbin nvcc produced at build time; empty when the crate was built without nvcc.
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cuzk.fatbin"));

/// Whether this build carries kernels at all.
pub fn kernels_built() -> bool {
    !FATBIN.is_empty()
}

/// One kernel entry point. CUfunction handles are plain driver handles, valid in any thread
/// while their module is loaded (the module outlives every `Kernel` in `Kernels`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel(pub(crate) sys::CUfunction);
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

macro_rules! kernels {
    ($($field:ident = $name:literal,)*) => {
        /// All entry points of `kernels/cuzk.cu`.
        pub(crate) struct Kernels { module: sys::CUmodule, $(pub(crate) $field: Kernel,)* }

        impl Kernels {
            /// Loads the fatbin into the current context. The driver picks the SASS for this
            /// GPU or JIT-compiles the PTX.
            pub(crate) fn load() -> Result<Self, GpuError> {
                if FATBIN.is_empty() {
                    return Err(GpuError::NoKernels);
                }
                // cuModuleLoadData wants an aligned image; include_bytes! promises byte alignment only.
                let mut image = vec![0u64; FATBIN.len().div_ceil(8)];
                // SAFETY: `image` has at least FATBIN.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(FATBIN.as_ptr(), image.as_mut_ptr().cast::<u8>(), FATBIN.len())
                };
                // SAFETY: a fatbin produced by nvcc; the driver copies what it needs.
                let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
                    .map_err(driver("cuModuleLoadData"))?;
                let get = |name: &str| -> Result<Kernel, GpuError> {
                    // SAFETY: `module` was just loaded and is not unloaded before `Kernels` drops.
                    unsafe { result::module::get_function(module, CString::new(name).unwrap()) }
                        .map(Kernel)
                        .map_err(driver("cuModuleGetFunction"))
                };
                Ok(Kernels { module, $($field: get($name)?,)* })
            }
        }
    };
}

kernels! {
    fr_power_table = "cuzk_fr_power_table",
    fr_ntt_radix2 = "cuzk_fr_ntt_radix2",
    fr_ntt_radix4 = "cuzk_fr_ntt_radix4",
    fr_ntt_radix8 = "cuzk_fr_ntt_radix8",
    fr_ntt_radix16 = "cuzk_fr_ntt_radix16",
    fr_ntt_fused = "cuzk_fr_ntt_fused",
    fr_ntt_fused3 = "cuzk_fr_ntt_fused3",
    fr_coset_quotient = "cuzk_fr_coset_quotient",
    fr_eval_constraints = "cuzk_fr_eval_constraints",
    msm_classify = "cuzk_msm_classify",
    msm_bucket_offsets = "cuzk_msm_bucket_offsets",
    msm_scatter = "cuzk_msm_scatter",
    g1_bucket_runs_affine = "cuzk_g1_bucket_runs_affine",
    g1_bucket_runs_xyzz = "cuzk_g1_bucket_runs_xyzz",
    g1_window_segments = "cuzk_g1_window_segments",
    g1_sum_partials = "cuzk_g1_sum_partials",
    g1_xyzz_sum_partials = "cuzk_g1_xyzz_sum_partials",
    g1_xyzz_to_jacobian = "cuzk_g1_xyzz_to_jacobian",
    g1_next_multiple = "cuzk_g1_next_multiple",
    ba_lens0 = "cuzk_ba_lens0",
    ba_halve = "cuzk_ba_halve",
    ba_keys = "cuzk_ba_keys",
    ba_prefix = "cuzk_ba_prefix",
    ba_apply = "cuzk_ba_apply",
    fq_group_prefix = "cuzk_fq_group_prefix",
    fq_group_backprop = "cuzk_fq_group_backprop",
    fq_invert_each = "cuzk_fq_invert_each",
    g2_bucket_runs_affine = "cuzk_g2_bucket_runs_affine",
    g2_bucket_runs_xyzz = "cuzk_g2_bucket_runs_xyzz",
    g2_window_segments = "cuzk_g2_window_segments",
    g2_sum_partials = "cuzk_g2_sum_partials",
    g2_xyzz_sum_partials = "cuzk_g2_xyzz_sum_partials",
    g2_xyzz_to_jacobian = "cuzk_g2_xyzz_to_jacobian",
    g2_next_multiple = "cuzk_g2_next_multiple",
    g1_random_run = "cuzk_g1_random_run",
    g2_random_run = "cuzk_g2_random_run",
}

/// The kernels of one group's MSM (G1 or G2).
#[derive(Clone, Copy)]
pub(crate) struct CurveKernels {
    pub(crate) bucket_runs_affine: Kernel,
    pub(crate) bucket_runs_xyzz: Kernel,
    pub(crate) window_segments: Kernel,
    pub(crate) sum_partials: Kernel,
    pub(crate) xyzz_sum_partials: Kernel,
    pub(crate) xyzz_to_jacobian: Kernel,
    /// 2^c times each base (kernels/multiples.cuh).
    pub(crate) next_multiple: Kernel,
    /// Random parameter points (kernels/random.cuh).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))] // random points: benches only
    pub(crate) random_run: Kernel,
}

impl Kernels {
    pub(crate) fn g1(&self) -> CurveKernels {
        CurveKernels {
            bucket_runs_affine: self.g1_bucket_runs_affine,
            bucket_runs_xyzz: self.g1_bucket_runs_xyzz,
            window_segments: self.g1_window_segments,
            sum_partials: self.g1_sum_partials,
            xyzz_sum_partials: self.g1_xyzz_sum_partials,
            xyzz_to_jacobian: self.g1_xyzz_to_jacobian,
            next_multiple: self.g1_next_multiple,
            random_run: self.g1_random_run,
        }
    }
    pub(crate) fn g2(&self) -> CurveKernels {
        CurveKernels {
            bucket_runs_affine: self.g2_bucket_runs_affine,
            bucket_runs_xyzz: self.g2_bucket_runs_xyzz,
            window_segments: self.g2_window_segments,
            sum_partials: self.g2_sum_partials,
            xyzz_sum_partials: self.g2_xyzz_sum_partials,
            xyzz_to_jacobian: self.g2_xyzz_to_jacobian,
            next_multiple: self.g2_next_multiple,
            random_run: self.g2_random_run,
        }
    }
}

unsafe impl Send for Kernels {}
unsafe impl Sync for Kernels {}

impl Drop for Kernels {
    fn drop(&mut self) {
        // SAFETY: the module was loaded by `load` and no kernel of it runs any more (the owner
        // synchronizes its stream before dropping).
        let _ = unsafe { result::module::unload(self.module) };
    }
}
