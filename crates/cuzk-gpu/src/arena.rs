//! The VRAM arena: the only way this crate takes device memory.
//!
//! Invariant (DESIGN.md 1 and 2): every device buffer is a reservation against the device's
//! byte budget, taken with plain synchronous `cuMemAlloc` (never the stream-ordered pool),
//! and given back by `Drop` on every exit path, errors and panics included. A request that
//! would pass the budget fails with [`GpuError::OverBudget`] before the driver is asked, so
//! the backend never meets a CUDA out-of-memory error from its own allocations.

use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys, CudaContext};

use crate::error::{driver, GpuError};

/// Allocation granularity counted against the budget.
const ALIGN: usize = 256;

/// A snapshot of an arena's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaCounters {
    /// Bytes reserved by live buffers.
    pub in_use: usize,
    /// The largest `in_use` seen since the arena was made.
    pub high_water: usize,
    /// The most `in_use` may reach.
    pub budget: usize,
    /// Number of live buffers.
    pub buffers: usize,
}

struct ArenaInner {
    ctx: Arc<CudaContext>,
    counters: Mutex<ArenaCounters>,
}

/// Device memory of one GPU under a byte budget.
#[derive(Clone)]
pub struct VramArena {
    inner: Arc<ArenaInner>,
}

impl VramArena {
    pub(crate) fn new(ctx: Arc<CudaContext>, budget: usize) -> Self {
        VramArena {
            inner: Arc::new(ArenaInner {
                ctx,
                counters: Mutex::new(ArenaCounters {
                    budget,
                    ..Default::default()
                }),
            }),
        }
    }

    pub fn counters(&self) -> ArenaCounters {
        *self.inner.counters.lock().unwrap()
    }

    /// A buffer of at least `bytes` bytes (contents undefined).
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        let reserved = reserved_size(bytes);
        {
            let mut c = self.inner.counters.lock().unwrap();
            if c.in_use + reserved > c.budget {
                return Err(GpuError::OverBudget {
                    device: self.inner.ctx.ordinal(),
                    requested: reserved,
                    in_use: c.in_use,
                    budget: c.budget,
                });
            }
            c.in_use += reserved;
            c.high_water = c.high_water.max(c.in_use);
            c.buffers += 1;
        }
        let ptr = self
            .inner
            .ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))
            // SAFETY: plain synchronous allocation in the bound context.
            .and_then(|()| unsafe { result::malloc_sync(reserved) }.map_err(driver("cuMemAlloc")));
        match ptr {
            Ok(ptr) => Ok(DeviceBuffer {
                ptr,
                bytes,
                reserved,
                arena: self.inner.clone(),
            }),
            Err(e) => {
                self.inner.release(reserved);
                Err(e)
            }
        }
    }
}

impl ArenaInner {
    fn release(&self, reserved: usize) {
        let mut c = self.counters.lock().unwrap();
        c.in_use -= reserved;
        c.buffers -= 1;
    }
}

/// A device allocation; freed (and its reservation returned) when dropped.
pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    reserved: usize,
    arena: Arc<ArenaInner>,
}

impl DeviceBuffer {
    /// The device address, as kernels take it.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }
    /// Bytes counted against the budget.
    pub fn reserved_bytes(&self) -> usize {
        self.reserved
    }
}

/// What an allocation of `bytes` counts against the budget.
pub fn reserved_size(bytes: usize) -> usize {
    bytes.max(1).next_multiple_of(ALIGN)
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} bytes)", self.ptr, self.bytes)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // Work queued on any stream may still use the buffer (an error path can leave
        // launches in flight): wait for the context, then free. Errors here cannot be
        // reported and must not panic during unwinding.
        let ctx = &self.arena.ctx;
        if ctx.bind_to_thread().is_ok() {
            let _ = ctx.synchronize();
            // SAFETY: `ptr` came from cuMemAlloc in this context and is freed once.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
        self.arena.release(self.reserved);
    }
}
