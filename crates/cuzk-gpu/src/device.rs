//! Device discovery and the per-device runtime: context, compute, upload (copy) and download streams, events,
//! kernels, the VRAM arena, the pinned host pool and staged transfers.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuzk_groth16::region::{DeviceLock, RegionGuard};

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::arena::{ArenaCounters, DeviceBuffer, VramArena};
use crate::error::{driver, GpuError};
use crate::kernels::{Kernel, Kernels};
use crate::pinned::{PinnedBuffer, PinnedPool};
use crate::resident::ResidentCache;
use cuzk_groth16::pools::SidePool;
use rayon::prelude::*;

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

/// Bytes of each pinned staging buffer: two that uploads go through, two for downloads.
const STAGE_BYTES: usize = 32 << 20;

/// The pinned pool's least budget: the four staging buffers.
pub const MIN_PINNED_BUDGET: usize = 4 * STAGE_BYTES;

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
    /// Host ranges page-locked by live [`HostPins`]: (first byte, end), page-rounded.
    pinned_ranges: Mutex<Vec<(usize, usize)>>,
    /// Whether [`Gpu::pin_host`] pins: 0 as `CUZK_GPU_PIN_HOST` says (read at each call),
    /// 1 off, 2 on.
    pin_host_on: AtomicU32,
    pub(crate) resident: Mutex<ResidentCache>,
    pub(crate) lock: DeviceLock,
    timings: Mutex<OpTimings>,
    residency: AtomicBool,
    msm_window: AtomicU32,
    /// Forced batch-affine levels plus one (0: the plan's rule).
    msm_batch: AtomicU32,
    /// The batch-affine levels the last MSM call's plan took.
    last_batch: AtomicU32,
    /// Derived bucket keys forced: 0 the plan's rule, 1 off, 2 on.
    msm_derived: AtomicU32,
    /// Whether the last MSM call's plan derived its bucket keys.
    last_derived: AtomicBool,
}

/// A staging buffer and the event recorded after the last copy that used it.
struct StageSlot {
    buf: PinnedBuffer,
    done: Event,
    busy: bool,
}

/// Wall-clock split of the last operation: host time spent handing data to the copy stream
/// (pageable -> pinned staging -> device, overlapped with kernels already queued), the rest
/// of the call until its results were on the host, the device-to-host part of that, and the
/// kernels alone (measured with events on the compute stream). `alloc` is the part of
/// `compute` spent taking the call's device workspace from the driver (MSM only); `pin` the
/// time spent page-locking host ranges and releasing them ([`Gpu::pin_host`]; the H step
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

/// Elements of T per parallel fill task.
const FILL_TASK_BYTES: usize = 1 << 20;

/// The host side of every staged copy (pageable memory to and from the pinned staging
/// buffers) runs on rayon's global pool, or with `CUZK_GPU_COPY_THREADS=N` on a pool of its
/// own (cuzk_groth16::pools), where it cannot queue behind other work on the global pool
/// (synthesis has pools of its own already). Measured on the H200
/// (2026-12-03, bench/NOTES.md) with the scalar split on its own pool: a 2^27 H step's
/// uploads took 0.27 s on the global pool's 16 threads and 0.50 s on a pool of 8, so the
/// global pool is the default; a pool of its own under the engine's synthesis load is not
/// measured yet.
static COPY_POOL: SidePool = SidePool::new("CUZK_GPU_COPY_THREADS", "cuzk-copy", |_| 0);

impl Gpu {
    pub fn open(ordinal: usize, budget: VramBudget) -> Result<Self, GpuError> {
        Self::open_with(ordinal, budget, DEFAULT_PINNED_BUDGET)
    }

    /// As [`Gpu::open`] with a pinned host memory budget in bytes (at least
    /// [`MIN_PINNED_BUDGET`], the four 32 MiB staging buffers).
    pub fn open_with(
        ordinal: usize,
        budget: VramBudget,
        pinned_budget: usize,
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
            pin_host_on: AtomicU32::new(0),
            resident: Mutex::new(ResidentCache::default()),
            lock: DeviceLock::new(),
            timings: Mutex::default(),
            residency: AtomicBool::new(true),
            msm_window: AtomicU32::new(0),
            msm_batch: AtomicU32::new(0),
            last_batch: AtomicU32::new(0),
            msm_derived: AtomicU32::new(0),
            last_derived: AtomicBool::new(false),
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

    /// Whether [`Gpu::pin_host`] page-locks host ranges (otherwise as `CUZK_GPU_PIN_HOST`
    /// says).
    pub fn set_pin_host(&self, on: bool) {
        self.pin_host_on.store(1 + on as u32, Ordering::Relaxed);
    }

    /// Whether large base arrays are kept resident in device memory across calls (default
    /// on). Turning it off drops the resident arrays.
    pub fn set_residency(&self, on: bool) {
        self.residency.store(on, Ordering::Relaxed);
        if !on {
            let _g = self.lock.enter();
            self.resident.lock().unwrap().clear();
        }
    }

    /// Forces the MSM window width (4 to 22 bits; None: chosen from the chunk size). For
    /// measurements: every width gives the same result.
    pub fn set_msm_window(&self, bits: Option<u32>) {
        self.msm_window.store(bits.unwrap_or(0), Ordering::Relaxed);
    }

    pub(crate) fn msm_window(&self) -> Option<u32> {
        match self.msm_window.load(Ordering::Relaxed) {
            0 => None,
            c => Some(c),
        }
    }

    /// Forces the batch-affine levels of the G1 bucket phase (0 to 12) in every call that
    /// uploads nothing, whatever its size (None: the plan's rule, see msm.rs). For tests
    /// and measurements: every level count gives the same result.
    pub fn set_msm_batch_levels(&self, levels: Option<u32>) {
        self.msm_batch.store(levels.map_or(0, |l| l.min(12) + 1), Ordering::Relaxed);
    }

    /// The batch-affine levels the last MSM call took (0: the XYZZ bucket phase alone).
    pub fn last_msm_batch_levels(&self) -> u32 {
        self.last_batch.load(Ordering::Relaxed)
    }

    pub(crate) fn set_last_batch_levels(&self, levels: u32) {
        self.last_batch.store(levels, Ordering::Relaxed);
    }

    pub(crate) fn msm_batch_levels(&self) -> Option<u32> {
        match self.msm_batch.load(Ordering::Relaxed) {
            0 => None,
            l => Some(l - 1),
        }
    }

    /// Forces the bucket keys derived from the scatter's cursors instead of stored (Some(true)),
    /// or stored (Some(false)); None: the plan's rule (msm.rs, `CUZK_MSM_DERIVED_KEYS`). For
    /// tests and measurements: both give the same result.
    pub fn set_msm_derived_keys(&self, on: Option<bool>) {
        self.msm_derived.store(on.map_or(0, |o| 1 + o as u32), Ordering::Relaxed);
    }

    pub(crate) fn msm_derived_keys(&self) -> Option<bool> {
        match self.msm_derived.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v == 2),
        }
    }

    /// Whether the last MSM call derived its bucket keys.
    pub fn last_msm_derived_keys(&self) -> bool {
        self.last_derived.load(Ordering::Relaxed)
    }

    pub(crate) fn set_last_derived_keys(&self, on: bool) {
        self.last_derived.store(on, Ordering::Relaxed);
    }

    pub(crate) fn residency_enabled(&self) -> bool {
        self.residency.load(Ordering::Relaxed)
    }

    /// Free and total device memory as the driver reports them.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        self.ctx.mem_get_info().map_err(driver("cuMemGetInfo"))
    }

    /// Bytes of resident base arrays and how many there are.
    pub fn resident_bytes(&self) -> (usize, usize) {
        let r = self.resident.lock().unwrap();
        (r.bytes(), r.len())
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
                Err(GpuError::OverBudget { .. }) if self.resident.lock().unwrap().evict_one() => {}
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

    fn with_staging<R>(
        &self,
        cell: &Mutex<Option<[StageSlot; 2]>>,
        f: impl FnOnce(&mut [StageSlot; 2]) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let mut st = cell.lock().unwrap();
        if st.is_none() {
            let slot = || -> Result<StageSlot, GpuError> {
                Ok(StageSlot {
                    buf: self.pinned.alloc(STAGE_BYTES)?,
                    done: Event::new(false)?,
                    busy: false,
                })
            };
            *st = Some([slot()?, slot()?]);
        }
        f(st.as_mut().unwrap())
    }

    /// Uploads `len` elements of T to device address `dst` on the copy stream, through the
    /// two pinned staging buffers: `fill(start, out)` writes elements [start, start +
    /// out.len()) (called in parallel over parts of each staging buffer), while the copy of
    /// the previous staging buffer runs. Kernels already queued on the compute stream keep
    /// running meanwhile; work queued on the compute stream after this call waits for the
    /// upload (an event). Copy-stream work waits for `after` first, if given (e.g. the event
    /// after which the compute stream no longer reads `dst`).
    pub(crate) fn upload_with<T: Copy + Send + Sync>(
        &self,
        dst: u64,
        len: usize,
        after: Option<&Event>,
        fill: impl Fn(usize, &mut [T]) + Sync,
    ) -> Result<(), GpuError> {
        if len == 0 {
            return Ok(());
        }
        if let Some(e) = after {
            e.wait_in(&self.copy)?;
        }
        let elem = std::mem::size_of::<T>();
        let per = STAGE_BYTES / elem;
        let task = (FILL_TASK_BYTES / elem).max(1);
        self.with_staging(&self.staging, |slots| {
            for (k, start) in (0..len).step_by(per).enumerate() {
                let slot = &mut slots[k % 2];
                if slot.busy {
                    slot.done.sync()?;
                }
                let count = per.min(len - start);
                let buf = slot.buf.as_mut_slice::<T>(count);
                COPY_POOL.install(|| {
                    buf.par_chunks_mut(task)
                        .enumerate()
                        .for_each(|(i, part)| fill(start + i * task, part))
                });
                // SAFETY: `dst` holds `len` elements; the staging buffer is page-locked and
                // not written again before `done` (recorded next) completes.
                unsafe {
                    result::memcpy_htod_async(
                        dst + (start * elem) as u64,
                        &*buf,
                        self.copy.cu_stream(),
                    )
                }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
                slot.done.record(&self.copy)?;
                slot.busy = true;
            }
            Ok(())
        })?;
        let done = Event::new(false)?;
        done.record(&self.copy)?;
        done.wait_in(&self.stream)
    }

    /// `upload_with` copying a slice.
    pub(crate) fn upload_slice<T: Copy + Send + Sync>(
        &self,
        dst: &DeviceBuffer,
        src: &[T],
        after: Option<&Event>,
    ) -> Result<(), GpuError> {
        assert!(
            std::mem::size_of_val(src) <= dst.len_bytes(),
            "upload larger than its buffer"
        );
        self.upload_slice_at(dst.ptr(), src, after)
    }

    /// Copies `src` to device address `dst` (which holds it) on the copy stream, as
    /// `upload_with` does, and returns once `src` may change. From a range that
    /// [`Gpu::pin_host`] page-locked, one DMA straight from `src`, waited for; otherwise
    /// through the staging buffers.
    pub(crate) fn upload_slice_at<T: Copy + Send + Sync>(
        &self,
        dst: u64,
        src: &[T],
        after: Option<&Event>,
    ) -> Result<(), GpuError> {
        let Some(parts) = self.pinned_parts(src).filter(|_| !src.is_empty()) else {
            return self.upload_with(dst, src.len(), after, |start, out| {
                out.copy_from_slice(&src[start..start + out.len()])
            });
        };
        if let Some(e) = after {
            e.wait_in(&self.copy)?;
        }
        // SAFETY: plain bytes of `src`, which lives for this call.
        let bytes = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const u8, std::mem::size_of_val(src)) };
        for (off, len) in parts {
            // SAFETY: the caller names a device range that holds `src`; this part of `src`
            // is page-locked and is not released before `done` (recorded next) completes:
            // waited for below.
            unsafe { result::memcpy_htod_async(dst + off as u64, &bytes[off..off + len], self.copy.cu_stream()) }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
        }
        let done = Event::new(false)?;
        done.record(&self.copy)?;
        done.wait_in(&self.stream)?;
        done.sync()
    }

    /// When `v` lies inside ranges page-locked by live [`HostPins`]: its bytes split at the
    /// edges of the registered pieces, as (offset in `v`, length); None otherwise.
    fn pinned_parts<T>(&self, v: &[T]) -> Option<Vec<(usize, usize)>> {
        let (lo, hi) = (v.as_ptr() as usize, v.as_ptr() as usize + std::mem::size_of_val(v));
        parts_within(&self.pinned_ranges.lock().unwrap(), lo, hi)
    }

    /// Page-locks the pages under each of `ranges` of at least [`PIN_MIN_BYTES`], so that
    /// [`Gpu::upload_slice_at`] and [`Gpu::download_to`] move slices inside them by DMA
    /// straight from and to host memory: no host copy through the staging buffers, which
    /// takes cores and memory bandwidth that synthesis beside it also wants. A range the
    /// driver refuses stays staged (logged), so this never fails. On or off with
    /// [`Gpu::set_pin_host`] or `CUZK_GPU_PIN_HOST` (1 or 0, a measurement switch;
    /// [`PIN_HOST_DEFAULT`] otherwise). The pins' `took` is zero when nothing was pinned.
    ///
    /// # Safety
    /// Each range must stay allocated, in place and unshared with other pins until the
    /// [`HostPins`] returned is dropped (a `Vec` must not grow past its capacity meanwhile).
    pub(crate) unsafe fn pin_host(&self, ranges: &[(*const u8, usize)]) -> HostPins<'_> {
        let on = match self.pin_host_on.load(Ordering::Relaxed) {
            0 => match std::env::var("CUZK_GPU_PIN_HOST").as_deref() {
                Ok("1") => true,
                Ok("0") => false,
                _ => PIN_HOST_DEFAULT,
            },
            k => k == 2,
        };
        // SAFETY: the caller's promise, passed on.
        unsafe { self.pin_ranges(if on { ranges } else { &[] }) }
    }

    /// [`Gpu::pin_host`] whatever its switch says.
    ///
    /// # Safety
    /// As for [`Gpu::pin_host`].
    unsafe fn pin_ranges(&self, ranges: &[(*const u8, usize)]) -> HostPins<'_> {
        let t = std::time::Instant::now();
        // Each range in pieces of PIN_PIECE_BYTES, registered on PIN_THREADS threads: on
        // the H200 machine (2026-12-04) that took 230 ms for 4 GiB, against 265 ms in one
        // piece on one thread.
        let mut pieces = Vec::new();
        for &(p, bytes) in ranges {
            if bytes < PIN_MIN_BYTES {
                continue;
            }
            // Whole pages: an allocation this large is a mapping of its own, so its first
            // and last pages hold nothing else.
            let base = p as usize & !(HOST_PAGE - 1);
            let end = (p as usize + bytes).next_multiple_of(HOST_PAGE);
            pieces.extend((base..end).step_by(PIN_PIECE_BYTES).map(|b| (b, (b + PIN_PIECE_BYTES).min(end))));
        }
        let done = Mutex::new(Vec::new());
        self.on_pin_threads(&pieces, |&(b, e)| {
            // SAFETY: the caller keeps [b, e) mapped until the pins drop, which unregisters it.
            let r = unsafe { sys::cuMemHostRegister_v2(b as *mut c_void, e - b, 0) };
            if r == sys::CUresult::CUDA_SUCCESS {
                done.lock().unwrap().push((b, e));
            } else {
                log::warn!("page-locking {} MiB of host memory for DMA: {r:?}; staging it instead", (e - b) >> 20);
            }
        });
        let done = done.into_inner().unwrap();
        let bases: Vec<usize> = done.iter().map(|&(b, _)| b).collect();
        self.pinned_ranges.lock().unwrap().extend(done);
        let took = if bases.is_empty() { Duration::ZERO } else { t.elapsed() };
        HostPins { gpu: self, bases, took }
    }

    /// Runs `f` on each of `items` on up to [`PIN_THREADS`] threads with the context bound
    /// (the driver's page-locking and its release).
    fn on_pin_threads<I: Sync>(&self, items: &[I], f: impl Fn(&I) + Sync) {
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..PIN_THREADS.min(items.len()) {
                sc.spawn(|| {
                    if let Err(e) = self.bind() {
                        log::warn!("page-locking thread: {e}");
                        return;
                    }
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                        f(item);
                    }
                });
            }
        });
    }

    /// Copies `dst.len()` elements from device address `src` into `dst` once the compute
    /// stream's queued work is done: on the download stream into one of its pinned staging
    /// buffers while the host copies the other one out (double-buffered), or by one DMA
    /// straight into `dst` when [`Gpu::pin_host`] page-locked it. Returns once the elements
    /// are in `dst`.
    pub(crate) fn download_to<T: Copy + Send + Sync>(
        &self,
        dst: &mut [T],
        src: u64,
    ) -> Result<(), GpuError> {
        if dst.is_empty() {
            return Ok(());
        }
        let ready = Event::new(false)?;
        ready.record(&self.stream)?;
        ready.wait_in(&self.down)?;
        if let Some(parts) = self.pinned_parts(dst) {
            // SAFETY: plain bytes of `dst`, borrowed for this call; T is Copy (no drop).
            let bytes = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut u8, std::mem::size_of_val(dst)) };
            for (off, len) in parts {
                // SAFETY: `src` holds dst.len() elements; this part of `dst` is page-locked
                // and borrowed until `done` (recorded next) completes, waited for here.
                unsafe { result::memcpy_dtoh_async(&mut bytes[off..off + len], src + off as u64, self.down.cu_stream()) }
                    .map_err(driver("cuMemcpyDtoHAsync"))?;
            }
            let done = Event::new(false)?;
            done.record(&self.down)?;
            return done.sync();
        }
        let elem = std::mem::size_of::<T>();
        let per = STAGE_BYTES / elem;
        let task = (FILL_TASK_BYTES / elem).max(1);
        let len = dst.len();
        self.with_staging(&self.down_staging, |slots| {
            let mut pending: [Option<(usize, usize)>; 2] = [None, None];
            let drain = |slot: &mut StageSlot,
                         p: &mut Option<(usize, usize)>,
                         dst: &mut [T]|
             -> Result<(), GpuError> {
                if let Some((start, count)) = p.take() {
                    slot.done.sync()?;
                    slot.busy = false;
                    let from = slot.buf.as_slice::<T>(count);
                    COPY_POOL.install(|| {
                        dst[start..start + count]
                            .par_chunks_mut(task)
                            .zip(from.par_chunks(task))
                            .for_each(|(d, s)| d.copy_from_slice(s))
                    });
                }
                Ok(())
            };
            for (k, start) in (0..len).step_by(per).enumerate() {
                let i = k % 2;
                drain(&mut slots[i], &mut pending[i], dst)?;
                let slot = &mut slots[i];
                if slot.busy {
                    slot.done.sync()?;
                }
                let count = per.min(len - start);
                let buf = slot.buf.as_mut_slice::<T>(count);
                // SAFETY: `src` holds `len` elements; the staging buffer is not read before
                // `done` (recorded next) completes.
                unsafe {
                    result::memcpy_dtoh_async(
                        buf,
                        src + (start * elem) as u64,
                        self.down.cu_stream(),
                    )
                }
                .map_err(driver("cuMemcpyDtoHAsync"))?;
                slot.done.record(&self.down)?;
                slot.busy = true;
                pending[i] = Some((start, count));
            }
            // Oldest first: the slot after the last one used.
            let last = (len - 1) / per % 2;
            for i in [1 - last, last] {
                drain(&mut slots[i], &mut pending[i], dst)?;
            }
            Ok(())
        })
    }

    /// [`Gpu::download_to`] of `dst` from device address `src` on a thread of its own while
    /// this thread runs `upload` (an upload on the copy stream), so that PCIe carries both
    /// directions at once. Returns once both are done, with the upload's error first; a
    /// panic on the download's thread is raised again here.
    pub(crate) fn download_while_uploading<T: Copy + Send + Sync>(
        &self,
        dst: &mut [T],
        src: u64,
        upload: impl FnOnce() -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        std::thread::scope(|s| {
            let down = s.spawn(|| {
                self.bind()?;
                self.download_to(dst, src)
            });
            let up = upload();
            let down = down.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            up.and(down)
        })
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

/// Host ranges page-locked by [`Gpu::pin_host`]; released by [`HostPins::release`] or
/// when dropped, once the device's streams are done with them. `took` is the time pinning
/// took.
pub(crate) struct HostPins<'a> {
    gpu: &'a Gpu,
    bases: Vec<usize>,
    pub(crate) took: Duration,
}

impl HostPins<'_> {
    /// Unregisters the ranges once the streams are done with them; returns `took` plus the
    /// time that took.
    pub(crate) fn release(mut self) -> Duration {
        if self.bases.is_empty() {
            return Duration::ZERO;
        }
        let t = std::time::Instant::now();
        self.unregister();
        self.took + t.elapsed()
    }

    fn unregister(&mut self) {
        if self.bases.is_empty() {
            return;
        }
        let _ = self.gpu.sync();
        let bases = std::mem::take(&mut self.bases);
        self.gpu.pinned_ranges.lock().unwrap().retain(|(b, _)| !bases.contains(b));
        self.gpu.on_pin_threads(&bases, |&b| {
            // SAFETY: registered by pin_ranges at this address; no transfer is queued on it
            // (the streams were waited for above).
            let r = unsafe { sys::cuMemHostUnregister(b as *mut c_void) };
            if r != sys::CUresult::CUDA_SUCCESS {
                log::warn!("releasing page-locked host memory: {r:?}");
            }
        });
    }
}

impl Drop for HostPins<'_> {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// Whether [`Gpu::pin_host`] pins when neither [`Gpu::set_pin_host`] nor
/// `CUZK_GPU_PIN_HOST` (0 or 1) says. Off: on the H200 (2026-12-04, bench/NOTES.md) pinning
/// a 32 GiB partition's a, b and c took 0.5-0.7 s a proof, more than the staged copy it
/// saves, except on a 14 GiB budget with synthesis running beside it (3.66 against 3.98 s
/// a partition through the engine).
const PIN_HOST_DEFAULT: bool = false;

/// [`Gpu::pin_host`] registers ranges in pieces of this size, on up to [`PIN_THREADS`]
/// threads; a transfer is split at the pieces' edges.
const PIN_PIECE_BYTES: usize = 256 << 20;
const PIN_THREADS: usize = 8;

/// The smallest range [`Gpu::pin_host`] page-locks: below it the staging buffers' copy costs
/// less than pinning.
pub(crate) const PIN_MIN_BYTES: usize = 64 << 20;

/// The host's base page size, to which pinned ranges are rounded outwards (4 KiB on the
/// x86-64 and aarch64 hosts cuzk builds for).
const HOST_PAGE: usize = 4096;

/// The bytes [lo, hi) split at the edges of `ranges` (each [first, end)), as (offset from
/// lo, length), when the ranges cover all of them; None otherwise.
fn parts_within(ranges: &[(usize, usize)], lo: usize, hi: usize) -> Option<Vec<(usize, usize)>> {
    let mut parts = Vec::new();
    let mut at = lo;
    while at < hi {
        let &(_, e) = ranges.iter().find(|&&(b, e)| b <= at && at < e)?;
        let to = e.min(hi);
        parts.push((at - lo, to - at));
        at = to;
    }
    Some(parts)
}

/// A slice's address and size in bytes, as [`Gpu::pin_host`] takes them.
pub(crate) fn span<T>(v: &[T]) -> (*const u8, usize) {
    (v.as_ptr() as *const u8, std::mem::size_of_val(v))
}

/// Host-to-device copy rates measured by [`Gpu::upload_rates`], in bytes per second.
#[derive(Clone, Copy, Debug)]
pub struct UploadRates {
    pub bytes: usize,
    /// One cuMemcpyHtoDAsync from a pageable Vec.
    pub pageable: f64,
    /// From a page-locked buffer of the pool (64 MiB copies).
    pub pinned: f64,
    /// What calls use: pageable memory copied into the two pinned staging buffers by the
    /// host threads while the copy stream sends the other one.
    pub staged: f64,
    /// What the H step does with a, b and c: the pageable buffer page-locked in place
    /// ([`Gpu::pin_host`]), one DMA, and the pages released, all three timed.
    pub pinned_in_place: f64,
}

impl Gpu {
    /// Measures host-to-device copy rates with `bytes` bytes (best of three each).
    pub fn upload_rates(&self, bytes: usize) -> Result<UploadRates, GpuError> {
        let _g = self.enter()?;
        let d = self.alloc(bytes)?;
        let host: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
        let best = |f: &dyn Fn() -> Result<(), GpuError>| -> Result<f64, GpuError> {
            let mut best = f64::MAX;
            for _ in 0..3 {
                let t = std::time::Instant::now();
                f()?;
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok(bytes as f64 / best)
        };
        let pageable = best(&|| {
            // SAFETY: `d` holds `bytes` bytes; synchronized before `host` can go away.
            unsafe { result::memcpy_htod_async(d.ptr(), &host[..], self.stream.cu_stream()) }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            self.sync()
        })?;
        let chunk = (64usize << 20).min(bytes);
        let mut p = self.pinned.alloc(chunk)?;
        p.as_mut_slice::<u8>(chunk).copy_from_slice(&host[..chunk]);
        let pinned = best(&|| {
            let src = p.as_slice::<u8>(chunk);
            for off in (0..bytes).step_by(chunk) {
                let len = chunk.min(bytes - off);
                // SAFETY: within both buffers; synchronized before `p` can go away.
                unsafe {
                    result::memcpy_htod_async(
                        d.ptr() + off as u64,
                        &src[..len],
                        self.copy.cu_stream(),
                    )
                }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            }
            self.sync()
        })?;
        drop(p);
        let staged = best(&|| {
            self.upload_slice(&d, &host, None)?;
            self.sync()
        })?;
        let pinned_in_place = best(&|| {
            // SAFETY: `host` is neither resized nor freed before the pins are released.
            let pins = unsafe { self.pin_ranges(&[span(&host)]) };
            self.upload_slice(&d, &host, None)?;
            pins.release();
            Ok(())
        })?;
        Ok(UploadRates {
            bytes,
            pageable,
            pinned,
            staged,
            pinned_in_place,
        })
    }
}

/// Default pinned host budget: the staging buffers and MSM readback, with room to spare.
pub const DEFAULT_PINNED_BUDGET: usize = 256 << 20;

impl Drop for Gpu {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            let _ = self.stream.synchronize();
            let _ = self.copy.synchronize();
            let _ = self.down.synchronize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parts_within;

    /// A transfer from pinned pieces is split at their edges, in order, whatever order
    /// they were registered in; a byte outside every piece sends it through the staging
    /// buffers instead.
    #[test]
    fn transfers_split_at_the_pinned_pieces() {
        let pieces = [(200, 300), (100, 200), (300, 350)];
        assert_eq!(parts_within(&pieces, 150, 320), Some(vec![(0, 50), (50, 100), (150, 20)]));
        assert_eq!(parts_within(&pieces, 100, 350), Some(vec![(0, 100), (100, 100), (200, 50)]));
        assert_eq!(parts_within(&pieces, 210, 220), Some(vec![(0, 10)]));
        assert_eq!(parts_within(&pieces, 90, 120), None, "starts before the first piece");
        assert_eq!(parts_within(&pieces, 340, 351), None, "ends past the last piece");
        assert_eq!(parts_within(&[(0, 10), (20, 30)], 5, 25), None, "a gap between pieces");
        assert_eq!(parts_within(&pieces, 120, 120), Some(vec![]), "nothing to move");
    }
}
