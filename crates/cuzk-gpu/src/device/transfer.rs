//! Staged copies: every large transfer between pageable host memory and the device goes
//! through two pinned staging buffers each way (double-buffered: the host fills one while
//! the copy stream sends the other), the host side on the copy pool; a range that
//! `Gpu::pin_host` page-locked moves by one DMA instead.

use std::sync::Mutex;

use cudarc::driver::result;
use cuzk_groth16::pools::SidePool;
use rayon::prelude::*;

use crate::arena::DeviceBuffer;
use crate::error::{driver, GpuError};
use crate::pinned::PinnedBuffer;

use super::{Event, Gpu};

/// Bytes of each pinned staging buffer: two that uploads go through, two for downloads.
pub(super) const STAGE_BYTES: usize = 32 << 20;

/// A staging buffer and the event recorded after the last copy that used it.
pub(super) struct StageSlot {
    buf: PinnedBuffer,
    done: Event,
    busy: bool,
}

/// Elements of T per parallel fill task.
const FILL_TASK_BYTES: usize = 1 << 20;

/// The host side of every staged copy (pageable memory to and from the pinned staging
/// buffers) runs on rayon's global pool, or on a pool of its own of
/// [`crate::GpuTuning::copy_threads`] threads (cuzk_groth16::pools), where it cannot queue behind
/// other work on the global pool (synthesis has pools of its own already). The tuning's doc
/// has the measurements.
static COPY_POOL: SidePool = SidePool::new("cuzk-copy");

impl Gpu {
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
        let threads = self.tuning().copy_threads;
        self.with_staging(&self.staging, |slots| {
            for (k, start) in (0..len).step_by(per).enumerate() {
                let slot = &mut slots[k % 2];
                if slot.busy {
                    slot.done.sync()?;
                }
                let count = per.min(len - start);
                let buf = slot.buf.as_mut_slice::<T>(count);
                COPY_POOL.install(threads, || {
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
        let threads = self.tuning().copy_threads;
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
                    COPY_POOL.install(threads, || {
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
}
