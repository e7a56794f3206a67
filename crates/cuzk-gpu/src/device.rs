//! Device discovery and the per-device runtime: context, stream, kernels, arena.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::arena::{ArenaCounters, DeviceBuffer, VramArena};
use crate::error::{driver, GpuError};
use crate::kernels::{Kernel, Kernels};

/// What the driver says about one GPU.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub total_memory: usize,
    pub sm_count: u32,
    /// (major, minor)
    pub compute_capability: (u32, u32),
}

/// Checks that libcuda can be loaded and initialized. Must run before any other driver
/// call: cudarc panics when the library is missing.
pub fn driver_present() -> Result<(), GpuError> {
    // SAFETY: only tries to dlopen the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoDriver("libcuda could not be loaded".into()));
    }
    result::init().map_err(|e| GpuError::NoDriver(format!("cuInit: {e}")))
}

/// All GPUs the driver sees.
pub fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    driver_present()?;
    let count = result::device::get_count().map_err(driver("cuDeviceGetCount"))? as usize;
    (0..count).map(device_info).collect()
}

fn device_info(ordinal: usize) -> Result<DeviceInfo, GpuError> {
    let dev = result::device::get(ordinal as i32).map_err(driver("cuDeviceGet"))?;
    let attr = |a| {
        // SAFETY: `dev` is a valid device handle.
        unsafe { result::device::get_attribute(dev, a) }
            .map(|v| v as u32)
            .map_err(driver("cuDeviceGetAttribute"))
    };
    use sys::CUdevice_attribute::*;
    Ok(DeviceInfo {
        ordinal,
        name: result::device::get_name(dev).map_err(driver("cuDeviceGetName"))?,
        // SAFETY: as above.
        total_memory: unsafe { result::device::total_mem(dev) }
            .map_err(driver("cuDeviceTotalMem"))?,
        sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        compute_capability: (
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
    })
}

/// How much device memory the arena may hold.
#[derive(Clone, Copy, Debug)]
pub enum VramBudget {
    Bytes(usize),
    /// A fraction of the memory free when the device is opened.
    FractionOfFree(f64),
}

impl Default for VramBudget {
    fn default() -> Self {
        VramBudget::FractionOfFree(0.9)
    }
}

/// One opened GPU: its context, one compute stream, the loaded kernels and the VRAM arena.
/// Operations take `lock()` for their kernel region, so several callers can share it.
pub struct Gpu {
    info: DeviceInfo,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub(crate) kernels: Kernels,
    arena: VramArena,
    lock: Mutex<()>,
    timings: Mutex<OpTimings>,
}

/// Wall-clock split of the last operation: host-to-device copies, kernels (synchronized),
/// device-to-host copies. Transfers are from pageable memory for now.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTimings {
    pub upload: Duration,
    pub compute: Duration,
    pub download: Duration,
}

/// Pointer to a kernel argument, as cuLaunchKernel takes them.
pub(crate) fn arg<T>(x: &T) -> *mut c_void {
    x as *const T as *mut c_void
}

impl Gpu {
    pub fn open(ordinal: usize, budget: VramBudget) -> Result<Self, GpuError> {
        if !crate::kernels::kernels_built() {
            return Err(GpuError::NoKernels);
        }
        driver_present()?;
        let count = result::device::get_count().map_err(driver("cuDeviceGetCount"))? as usize;
        if ordinal >= count {
            return Err(GpuError::NoDevice(count, ordinal));
        }
        let info = device_info(ordinal)?;
        let ctx = CudaContext::new(ordinal).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let stream = ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        let kernels = Kernels::load()?;
        let (free, _total) = ctx.mem_get_info().map_err(driver("cuMemGetInfo"))?;
        let budget = match budget {
            VramBudget::Bytes(b) => b.min(free),
            VramBudget::FractionOfFree(f) => (free as f64 * f.clamp(0.0, 1.0)) as usize,
        };
        let arena = VramArena::new(ctx.clone(), budget);
        Ok(Gpu {
            info,
            ctx,
            stream,
            kernels,
            arena,
            lock: Mutex::new(()),
            timings: Mutex::default(),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn arena(&self) -> &VramArena {
        &self.arena
    }

    pub fn counters(&self) -> ArenaCounters {
        self.arena.counters()
    }

    pub fn last_timings(&self) -> OpTimings {
        *self.timings.lock().unwrap()
    }

    pub(crate) fn set_timings(&self, t: OpTimings) {
        *self.timings.lock().unwrap() = t;
    }

    /// Free and total device memory as the driver reports them.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        self.ctx.mem_get_info().map_err(driver("cuMemGetInfo"))
    }

    /// Enters the device's kernel region: binds the context to this thread and holds the
    /// per-device lock until the guard drops.
    pub(crate) fn enter(&self) -> Result<MutexGuard<'_, ()>, GpuError> {
        let guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        Ok(guard)
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        self.arena.alloc(bytes)
    }

    /// Copies `src` to the start of `dst` on the compute stream.
    pub(crate) fn upload<T: Copy>(&self, dst: &DeviceBuffer, src: &[T]) -> Result<(), GpuError> {
        assert!(
            std::mem::size_of_val(src) <= dst.len_bytes(),
            "upload larger than its buffer"
        );
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds at least size_of_val(src) bytes; the stream is synchronized
        // before `src` can go away (every operation ends with `sync`).
        unsafe { result::memcpy_htod_async(dst.ptr(), src, self.stream.cu_stream()) }
            .map_err(driver("cuMemcpyHtoDAsync"))?;
        // A pageable source may be reused by the caller as soon as we return.
        self.sync()
    }

    /// Copies the start of `src` into `dst` and waits for it.
    pub(crate) fn download<T: Copy>(
        &self,
        dst: &mut [T],
        src: &DeviceBuffer,
    ) -> Result<(), GpuError> {
        assert!(
            std::mem::size_of_val(dst) <= src.len_bytes(),
            "download larger than its buffer"
        );
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `upload`.
        unsafe { result::memcpy_dtoh_async(dst, src.ptr(), self.stream.cu_stream()) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        self.sync()
    }

    /// Sets every byte of `dst` to `byte` (queued on the compute stream).
    pub(crate) fn memset(&self, dst: &DeviceBuffer, byte: u8) -> Result<(), GpuError> {
        // SAFETY: within the buffer.
        unsafe {
            result::memset_d8_async(dst.ptr(), byte, dst.len_bytes(), self.stream.cu_stream())
        }
        .map_err(driver("cuMemsetD8Async"))
    }

    /// Launches a 1-D grid covering `threads` threads in blocks of `block`.
    pub(crate) fn launch(
        &self,
        k: Kernel,
        threads: usize,
        block: u32,
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), GpuError> {
        let grid = threads.div_ceil(block as usize).max(1);
        let grid = u32::try_from(grid).expect("grid fits in u32");
        // SAFETY: the argument list matches the kernel's signature (kernels.rs and cuzk.cu
        // are kept together); every pointer argument is a live buffer of the right size.
        unsafe {
            result::launch_kernel(
                k.0,
                (grid, 1, 1),
                (block, 1, 1),
                shared_bytes,
                self.stream.cu_stream(),
                args,
            )
        }
        .map_err(driver("cuLaunchKernel"))
    }

    /// Waits for the stream; reports any fault of the kernels launched before.
    pub(crate) fn sync(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            let _ = self.stream.synchronize();
        }
    }
}
