//! Device discovery and the per-device runtime ([`Gpu`]): context, compute, upload (copy)
//! and download streams ordered by events, kernels, the VRAM arena, the pinned host pool,
//! the tuning, launches and waits.
//!
//! - `transfer.rs`: staged copies between pageable host memory and the device, through two
//!   pinned buffers each way.
//! - `pinning.rs`: host ranges page-locked in place for direct DMA (`Gpu::pin_host`).
//! - `probe.rs`: host-to-device copy rates (`Gpu::upload_rates`).

mod pinning;
mod probe;
mod transfer;

use std::ffi::c_void;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use cuzk_groth16::region::{DeviceLock, RegionGuard};

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::arena::{ArenaCounters, DeviceBuffer, VramArena};
use crate::error::{driver, GpuError};
use crate::kernels::{Kernel, Kernels};
use crate::pinned::PinnedPool;
use crate::resident::ResidentCache;
use crate::tuning::GpuTuning;

pub(crate) use pinning::span;
pub use probe::UploadRates;
use transfer::{StageSlot, STAGE_BYTES};

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

/// The pinned pool's least budget: the four staging buffers.
pub const MIN_PINNED_BUDGET: usize = 4 * STAGE_BYTES;

/// Default pinned host budget: the staging buffers and MSM readback, with room to spare.
pub const DEFAULT_PINNED_BUDGET: usize = 256 << 20;

/// One opened GPU: its context, a compute stream, a copy stream for uploads and one for
/// downloads, ordered by events (an upload and a download can run at once: PCIe is full
/// duplex), the loaded kernels, the VRAM arena, the pinned host pool (with the two upload
/// and two download staging buffers that every transfer goes through) and the cache of
/// device-resident base arrays. Operations take `enter()` for their kernel region, so
/// several callers can share it.
pub struct Gpu {
    info: DeviceInfo,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    down: Arc<CudaStream>,
    pub(crate) kernels: Kernels,
    arena: VramArena,
    pinned: PinnedPool,
    staging: Mutex<Option<[StageSlot; 2]>>,
    down_staging: Mutex<Option<[StageSlot; 2]>>,
    /// Host ranges page-locked by live `HostPins` (pinning.rs): (first byte, end), page-rounded.
    pinned_ranges: Mutex<Vec<(usize, usize)>>,
    pub(crate) resident: Mutex<ResidentCache>,
    pub(crate) lock: DeviceLock,
    timings: Mutex<OpTimings>,
    /// Set at open, changed only by [`Gpu::retune`]; each call reads it once at its start.
    tuning: RwLock<GpuTuning>,
}

/// Wall-clock split of the last operation: host time spent handing data to the copy stream
/// (pageable -> pinned staging -> device, overlapped with kernels already queued), the rest
/// of the call until its results were on the host, the device-to-host part of that, and the
/// kernels alone (measured with events on the compute stream). `alloc` is the part of
/// `compute` spent taking the call's device workspace from the driver (MSM only); `pin` the
/// time spent page-locking host ranges and releasing them (`Gpu::pin_host`; the H step
/// only), apart from the other four.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTimings {
    pub upload: Duration,
    pub compute: Duration,
    pub download: Duration,
    pub kernels: Duration,
    pub alloc: Duration,
    pub pin: Duration,
}

/// Pointer to a kernel argument, as cuLaunchKernel takes them.
pub(crate) fn arg<T>(x: &T) -> *mut c_void {
    x as *const T as *mut c_void
}

/// A CUDA event (destroyed on drop).
pub(crate) struct Event(sys::CUevent);
// SAFETY: a driver handle, usable from any thread with the context bound.
unsafe impl Send for Event {}

impl Event {
    pub(crate) fn new(timing: bool) -> Result<Event, GpuError> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        result::event::create(flags)
            .map(Event)
            .map_err(driver("cuEventCreate"))
    }
    pub(crate) fn record(&self, stream: &CudaStream) -> Result<(), GpuError> {
        // SAFETY: live event and stream of the bound context.
        unsafe { result::event::record(self.0, stream.cu_stream()) }
            .map_err(driver("cuEventRecord"))
    }
    /// Work queued on `stream` after this call waits for the event.
    pub(crate) fn wait_in(&self, stream: &CudaStream) -> Result<(), GpuError> {
        // SAFETY: as above.
        unsafe {
            result::stream::wait_event(
                stream.cu_stream(),
                self.0,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(driver("cuStreamWaitEvent"))
    }
    pub(crate) fn sync(&self) -> Result<(), GpuError> {
        // SAFETY: live event.
        unsafe { result::event::synchronize(self.0) }.map_err(driver("cuEventSynchronize"))
    }
    /// Time from `start` to `self` (both recorded with timing, both complete).
    pub(crate) fn since(&self, start: &Event) -> Result<Duration, GpuError> {
        // SAFETY: live events.
        let ms = unsafe { result::event::elapsed(start.0, self.0) }
            .map_err(driver("cuEventElapsedTime"))?;
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate, destroyed once (the driver defers the release
        // until pending work that records it is done).
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

impl Gpu {
    /// Device `ordinal` with a VRAM budget, a pinned host memory budget in bytes (at least
    /// [`MIN_PINNED_BUDGET`], the four 32 MiB staging buffers) and a tuning
    /// ([`crate::GpuBackend::open_with`] is the way in).
    pub fn open_with(
        ordinal: usize,
        budget: VramBudget,
        pinned_budget: usize,
        tuning: GpuTuning,
    ) -> Result<Self, GpuError> {
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
        let copy = ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        let down = ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        let kernels = Kernels::load()?;
        let (free, _total) = ctx.mem_get_info().map_err(driver("cuMemGetInfo"))?;
        let budget = match budget {
            VramBudget::Bytes(b) => b.min(free),
            VramBudget::FractionOfFree(f) => (free as f64 * f.clamp(0.0, 1.0)) as usize,
        };
        let arena = VramArena::new(ctx.clone(), budget);
        let pinned = PinnedPool::new(ctx.clone(), pinned_budget.max(MIN_PINNED_BUDGET));
        Ok(Gpu {
            info,
            ctx,
            stream,
            copy,
            down,
            kernels,
            arena,
            pinned,
            staging: Mutex::new(None),
            down_staging: Mutex::new(None),
            pinned_ranges: Mutex::new(Vec::new()),
            resident: Mutex::new(ResidentCache::default()),
            lock: DeviceLock::new(),
            timings: Mutex::default(),
            tuning: RwLock::new(tuning),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn arena(&self) -> &VramArena {
        &self.arena
    }

    pub fn pinned(&self) -> &PinnedPool {
        &self.pinned
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

    /// [`GpuError::Cancelled`] once the work calling in is cancelled: the caller's flag
    /// ([`cuzk_groth16::region::with_cancel`]), asked at each step (MSM chunk, NTT pass).
    pub(crate) fn check_cancel(&self) -> Result<(), GpuError> {
        if cuzk_groth16::region::cancel_requested() {
            Err(GpuError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The tuning calls read now (a copy: a call keeps the one it started with).
    pub fn tuning(&self) -> GpuTuning {
        self.tuning.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the tuning for the calls that start after this; turning
    /// [`GpuTuning::residency`] off drops the resident base arrays. For benches and tests,
    /// which compare variants in one process over the same resident parameters; the daemon
    /// sets its tuning at open.
    pub fn retune(&self, tuning: GpuTuning) {
        let drop_resident = !tuning.residency;
        *self.tuning.write().unwrap_or_else(|e| e.into_inner()) = tuning;
        if drop_resident {
            let _g = self.lock.enter();
            self.resident.lock().unwrap().clear();
        }
    }

    /// The refusal of `requested` bytes against this device's budget.
    pub(crate) fn over_budget(&self, requested: usize) -> GpuError {
        let c = self.counters();
        GpuError::OverBudget { device: self.info.ordinal, requested, in_use: c.in_use, budget: c.budget }
    }

    /// Free and total device memory as the driver reports them.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        self.ctx.mem_get_info().map_err(driver("cuMemGetInfo"))
    }

    /// Bytes of resident entries (base arrays, circuits and precomputed multiples) and how
    /// many there are.
    pub fn resident_bytes(&self) -> (usize, usize) {
        let r = self.resident.lock().unwrap();
        (r.all_bytes(), r.len())
    }

    /// Drops every resident base array (memory goes back to the arena at once) and frees the
    /// pinned staging buffers and every cached pinned block.
    pub fn release_caches(&self) -> Result<(), GpuError> {
        let _g = self.enter()?;
        self.resident.lock().unwrap().clear();
        *self.staging.lock().unwrap() = None;
        *self.down_staging.lock().unwrap() = None;
        self.pinned.trim();
        Ok(())
    }

    /// Enters the device's kernel region: binds the context to this thread and holds the
    /// per-device lock until the guard drops (at once if this thread holds it already, as
    /// the engine's worker does around each call).
    pub(crate) fn enter(&self) -> Result<RegionGuard<'_>, GpuError> {
        let guard = self.lock.enter();
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        Ok(guard)
    }

    /// Device memory from the arena; when the budget is short, resident base arrays not in
    /// use are evicted (least recently used first) before the request is refused.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        loop {
            match self.arena.alloc(bytes) {
                Err(GpuError::OverBudget { .. }) if self.resident.lock().unwrap().evict_one(bytes) => {}
                r => return r,
            }
        }
    }

    /// Bytes a new allocation could get now, counting resident arrays that may be evicted.
    pub(crate) fn available(&self) -> usize {
        let c = self.arena.counters();
        let evictable = self.resident.lock().unwrap().evictable_bytes();
        c.budget.saturating_sub(c.in_use) + evictable
    }

    pub(crate) fn stream(&self) -> &CudaStream {
        &self.stream
    }

    pub(crate) fn copy_stream(&self) -> &CudaStream {
        &self.copy
    }

    /// Binds the context to the calling thread (for a thread that does not [`Gpu::enter`],
    /// such as the download side of [`Gpu::download_while_uploading`]).
    pub(crate) fn bind(&self) -> Result<(), GpuError> {
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))
    }

    /// Copies `src` to the start of `dst` (small transfers: tables, constants). Queued on
    /// the compute stream from pageable memory, and waited for.
    pub(crate) fn upload<T: Copy>(&self, dst: &DeviceBuffer, src: &[T]) -> Result<(), GpuError> {
        assert!(
            std::mem::size_of_val(src) <= dst.len_bytes(),
            "upload larger than its buffer"
        );
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds at least size_of_val(src) bytes; the stream is synchronized
        // before `src` can go away.
        unsafe { result::memcpy_htod_async(dst.ptr(), src, self.stream.cu_stream()) }
            .map_err(driver("cuMemcpyHtoDAsync"))?;
        // A pageable source may be reused by the caller as soon as we return.
        self.sync()
    }

    /// Sets every byte of `dst` to `byte` (queued on the compute stream).
    pub(crate) fn memset(&self, dst: &DeviceBuffer, byte: u8) -> Result<(), GpuError> {
        self.memset_bytes(dst.ptr(), dst.len_bytes(), byte)
    }

    pub(crate) fn memset_bytes(&self, dst: u64, bytes: usize, byte: u8) -> Result<(), GpuError> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller names a range inside one of its buffers.
        unsafe { result::memset_d8_async(dst, byte, bytes, self.stream.cu_stream()) }
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

    /// Waits for the three streams; reports any fault of the kernels launched before.
    pub(crate) fn sync(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))?;
        self.copy
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))?;
        self.down
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }
}

/// Waits for the device's streams when dropped: declared after a call's buffers, it makes
/// every exit (an error or a cancel mid-way included) finish the queued copies and kernels
/// before those buffers go back.
pub(crate) struct SyncOnDrop<'a>(pub(crate) &'a Gpu);

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.sync();
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            let _ = self.stream.synchronize();
            let _ = self.copy.synchronize();
            let _ = self.down.synchronize();
        }
    }
}
