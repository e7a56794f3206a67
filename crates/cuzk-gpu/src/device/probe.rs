//! Host-to-device copy rates, for benches: pageable, pinned, staged and pinned in place.

use cudarc::driver::result;

use crate::error::{driver, GpuError};

use super::{span, Gpu};

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
    /// (`Gpu::pin_host`), one DMA, and the pages released, all three timed.
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
