//! Host ranges page-locked in place (`cuMemHostRegister`) for the H step's a, b and c, so
//! that transfers inside them move by DMA straight from and to host memory, with no copy
//! through the staging buffers. Only with `GpuTuning::pin_host` on (off by default); every
//! registration is released when its [`HostPins`] drops.

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use cudarc::driver::sys;

use super::Gpu;

impl Gpu {
    /// When `v` lies inside ranges page-locked by live [`HostPins`]: its bytes split at the
    /// edges of the registered pieces, as (offset in `v`, length); None otherwise.
    pub(super) fn pinned_parts<T>(&self, v: &[T]) -> Option<Vec<(usize, usize)>> {
        let (lo, hi) = (v.as_ptr() as usize, v.as_ptr() as usize + std::mem::size_of_val(v));
        parts_within(&self.pinned_ranges.lock().unwrap(), lo, hi)
    }

    /// Page-locks the pages under each of `ranges` of at least [`PIN_MIN_BYTES`], so that
    /// [`Gpu::upload_slice_at`] and [`Gpu::download_to`] move slices inside them by DMA
    /// straight from and to host memory: no host copy through the staging buffers, which
    /// takes cores and memory bandwidth that synthesis beside it also wants. A range the
    /// driver refuses stays staged (logged), so this never fails. Only when
    /// [`crate::GpuTuning::pin_host`] is on (off by default: its doc has the measurements); the
    /// pins' `took` is zero when nothing was pinned.
    ///
    /// # Safety
    /// Each range must stay allocated, in place and unshared with other pins until the
    /// [`HostPins`] returned is dropped (a `Vec` must not grow past its capacity meanwhile).
    pub(crate) unsafe fn pin_host(&self, ranges: &[(*const u8, usize)]) -> HostPins<'_> {
        let on = self.tuning().pin_host;
        // SAFETY: the caller's promise, passed on.
        unsafe { self.pin_ranges(if on { ranges } else { &[] }) }
    }

    /// [`Gpu::pin_host`] whatever its switch says.
    ///
    /// # Safety
    /// As for [`Gpu::pin_host`].
    pub(super) unsafe fn pin_ranges(&self, ranges: &[(*const u8, usize)]) -> HostPins<'_> {
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
