//! The pinned host pool: the only place this crate takes page-locked host memory.
//!
//! Invariant (DESIGN.md 3): page-locked memory has one owner. Buffers are allocated here
//! with `cuMemHostAlloc` (never `cuMemHostRegister` of foreign memory, so no range can be
//! registered twice), handed out as RAII [`PinnedBuffer`]s, returned to the pool when
//! dropped and reused by later calls; the pool counts what it holds against a byte budget
//! (pinned memory is host memory the kernel cannot page out) and frees everything when it
//! is dropped. A request that would pass the budget first frees cached blocks, then fails
//! with [`GpuError::PinnedOverBudget`] before the driver is asked.

use std::sync::{Arc, Mutex};

use cudarc::driver::{result, CudaContext};

use crate::error::{driver, GpuError};

/// Blocks are rounded to this many bytes, so that reuse finds equal sizes.
const GRAIN: usize = 1 << 20;

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinnedCounters {
    /// Bytes in buffers handed out and not yet returned.
    pub in_use: usize,
    /// Bytes of returned blocks kept for reuse.
    pub cached: usize,
    /// The largest `in_use + cached` seen.
    pub high_water: usize,
    /// The most `in_use + cached` may reach.
    pub budget: usize,
    /// Calls that reused a cached block / that asked the driver.
    pub reused: u64,
    pub allocated: u64,
}

struct Block(*mut u8, usize);
// SAFETY: a page-locked host block, owned by exactly one PinnedBuffer or the free list.
unsafe impl Send for Block {}

struct PoolState {
    free: Vec<Block>,
    counters: PinnedCounters,
}

struct PoolInner {
    ctx: Arc<CudaContext>,
    state: Mutex<PoolState>,
}

/// Page-locked host memory of one device's context under a byte budget.
#[derive(Clone)]
pub struct PinnedPool {
    inner: Arc<PoolInner>,
}

impl PinnedPool {
    pub(crate) fn new(ctx: Arc<CudaContext>, budget: usize) -> Self {
        PinnedPool {
            inner: Arc::new(PoolInner {
                ctx,
                state: Mutex::new(PoolState {
                    free: Vec::new(),
                    counters: PinnedCounters {
                        budget,
                        ..Default::default()
                    },
                }),
            }),
        }
    }

    pub fn counters(&self) -> PinnedCounters {
        self.inner.state.lock().unwrap().counters
    }

    /// A page-locked buffer of at least `bytes` bytes (contents undefined).
    pub fn alloc(&self, bytes: usize) -> Result<PinnedBuffer, GpuError> {
        let size = bytes.max(1).next_multiple_of(GRAIN);
        let mut to_free = Vec::new();
        {
            let mut s = self.inner.state.lock().unwrap();
            // Smallest cached block that holds the request (and is not more than twice it).
            let best = s
                .free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.1 >= size && b.1 <= 2 * size)
                .min_by_key(|(_, b)| b.1)
                .map(|(i, _)| i);
            if let Some(i) = best {
                let b = s.free.swap_remove(i);
                s.counters.cached -= b.1;
                s.counters.in_use += b.1;
                s.counters.reused += 1;
                return Ok(PinnedBuffer {
                    ptr: b.0,
                    bytes,
                    size: b.1,
                    pool: self.inner.clone(),
                });
            }
            // Make room by freeing cached blocks, largest first.
            s.free.sort_by_key(|b| b.1);
            while s.counters.in_use + s.counters.cached + size > s.counters.budget {
                match s.free.pop() {
                    Some(b) => {
                        s.counters.cached -= b.1;
                        to_free.push(b);
                    }
                    None => break,
                }
            }
            if s.counters.in_use + s.counters.cached + size > s.counters.budget {
                let c = s.counters;
                drop(s);
                self.inner.free_blocks(to_free);
                return Err(GpuError::PinnedOverBudget {
                    requested: size,
                    in_use: c.in_use,
                    budget: c.budget,
                });
            }
            s.counters.in_use += size;
            s.counters.allocated += 1;
            s.counters.high_water = s
                .counters
                .high_water
                .max(s.counters.in_use + s.counters.cached);
        }
        self.inner.free_blocks(to_free);
        let ptr = self
            .inner
            .ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))
            // SAFETY: plain page-locked allocation in the bound context.
            .and_then(|()| {
                unsafe { result::malloc_host(size, 0) }.map_err(driver("cuMemHostAlloc"))
            });
        match ptr {
            Ok(p) => Ok(PinnedBuffer {
                ptr: p as *mut u8,
                bytes,
                size,
                pool: self.inner.clone(),
            }),
            Err(e) => {
                self.inner.state.lock().unwrap().counters.in_use -= size;
                Err(e)
            }
        }
    }

    /// Frees every cached block (buffers in use stay).
    pub fn trim(&self) {
        let blocks = {
            let mut s = self.inner.state.lock().unwrap();
            s.counters.cached = 0;
            std::mem::take(&mut s.free)
        };
        self.inner.free_blocks(blocks);
    }
}

impl PoolInner {
    fn free_blocks(&self, blocks: Vec<Block>) {
        if blocks.is_empty() {
            return;
        }
        if self.ctx.bind_to_thread().is_ok() {
            for b in blocks {
                // SAFETY: allocated by cuMemHostAlloc in this context, freed once; no copy
                // still reads it (every user waits for its copies before returning a buffer).
                let _ = unsafe { result::free_host(b.0 as *mut std::ffi::c_void) };
            }
        }
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let blocks = std::mem::take(&mut self.state.get_mut().unwrap().free);
        self.free_blocks(blocks);
    }
}

/// A page-locked host buffer; back to its pool when dropped. Whoever queues a copy from or
/// to it must wait for that copy before dropping it.
pub struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
    size: usize,
    pool: Arc<PoolInner>,
}

// SAFETY: owned memory, like a Vec<u8>.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The buffer as `len` elements of T (`len * size_of::<T>()` at most the buffer).
    pub(crate) fn as_mut_slice<T: Copy>(&mut self, len: usize) -> &mut [T] {
        assert!(len * std::mem::size_of::<T>() <= self.size);
        assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0);
        // SAFETY: within the block, aligned (page-aligned allocation), plain-old-data T.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, len) }
    }

    pub(crate) fn as_slice<T: Copy>(&self, len: usize) -> &[T] {
        assert!(len * std::mem::size_of::<T>() <= self.size);
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        let mut s = self.pool.state.lock().unwrap();
        s.counters.in_use -= self.size;
        s.counters.cached += self.size;
        s.free.push(Block(self.ptr, self.size));
    }
}
