//! Host side of the Fr NTT and the coset quotient (kernels/ntt.cuh).

use blstrs::Scalar;
use cuzk_groth16::backend::{vanishing_inverse_on_coset, Scaling};
use cuzk_groth16::NttDirection;
use ff::Field;

use crate::arena::DeviceBuffer;
use std::time::Instant;

use crate::device::{arg, Gpu, OpTimings};
use crate::error::GpuError;

const BLOCK: u32 = 256;
/// Most stages one pass over memory does (radix 2^k in registers). The passes are bound by
/// Fr multiplications more than by memory, and higher radices cost occupancy (radix 8: 125
/// registers, 16: 247); BENCH.md has the measurements. CUZK_NTT_MAX_LOG_RADIX (1 to 4)
/// overrides the default for measurements.
fn max_log_radix() -> u32 {
    static K: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *K.get_or_init(|| {
        std::env::var("CUZK_NTT_MAX_LOG_RADIX")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2u32)
            .clamp(1, 4)
    })
}
const FR_BYTES: usize = 32;
const _: () = assert!(std::mem::size_of::<Scalar>() == FR_BYTES);

/// `start * base^i` for i < 2^log_n, stored as two tables of about sqrt(2^log_n) entries
/// each: hi[i >> lo_bits] * lo[i & lo_mask] (see `power_table` in kernels/ntt.cuh).
struct Powers {
    hi: Vec<Scalar>,
    lo: Vec<Scalar>,
    lo_bits: u32,
    lo_mask: u32,
}

impl Powers {
    fn new(base: Scalar, start: Scalar, log_n: u32) -> Self {
        let lo_bits = log_n.div_ceil(2);
        let mut lo = Vec::with_capacity(1 << lo_bits);
        let mut p = start;
        for _ in 0..1usize << lo_bits {
            lo.push(p);
            p *= base;
        }
        let step = base.pow_vartime([1u64 << lo_bits]);
        let mut hi = Vec::with_capacity(1 << (log_n - lo_bits));
        let mut q = Scalar::ONE;
        for _ in 0..1usize << (log_n - lo_bits) {
            hi.push(q);
            q *= step;
        }
        Powers {
            hi,
            lo,
            lo_bits,
            lo_mask: (1 << lo_bits) - 1,
        }
    }

    /// The tables of a plan's scaling (a constant when its ratio is one).
    fn of(s: Scaling, log_n: u32) -> Self {
        if s.is_constant() {
            Powers::constant(s.start)
        } else {
            Powers::new(s.ratio, s.start, log_n)
        }
    }

    /// The constant `c` at every index.
    fn constant(c: Scalar) -> Self {
        Powers {
            hi: vec![c],
            lo: vec![Scalar::ONE],
            lo_bits: 31,
            lo_mask: 0,
        }
    }
}

/// `power_table` as the kernels take it (by value).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PowerTableArg {
    hi: u64,
    lo: u64,
    lo_bits: u32,
    lo_mask: u32,
}

/// A `Powers` uploaded; keeps its buffers alive while kernels use them.
struct DevicePowers {
    arg: PowerTableArg,
    _hi: DeviceBuffer,
    _lo: DeviceBuffer,
}

fn upload_powers(gpu: &Gpu, p: &Powers) -> Result<DevicePowers, GpuError> {
    let hi = gpu.alloc(p.hi.len() * FR_BYTES)?;
    let lo = gpu.alloc(p.lo.len() * FR_BYTES)?;
    gpu.upload(&hi, &p.hi)?;
    gpu.upload(&lo, &p.lo)?;
    Ok(DevicePowers {
        arg: PowerTableArg {
            hi: hi.ptr(),
            lo: lo.ptr(),
            lo_bits: p.lo_bits,
            lo_mask: p.lo_mask,
        },
        _hi: hi,
        _lo: lo,
    })
}

/// The transform of `values` (length 2^log_n) in place, equal to `CpuBackend::ntt`.
pub(crate) fn ntt(
    gpu: &Gpu,
    values: &mut [Scalar],
    log_n: u32,
    dir: NttDirection,
) -> Result<(), GpuError> {
    let n = values.len();
    if n == 1 {
        // Every direction is the identity on one element (g^0 = 1, 1/n = 1).
        return Ok(());
    }
    let _region = gpu.enter()?;
    let plan = dir.plan(log_n);
    let w = plan.root;
    let pre = plan.pre.map(|p| Powers::of(p, log_n));
    let post = plan.post.map(|p| Powers::of(p, log_n));

    let bufs = [gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?];
    let t0 = Instant::now();
    gpu.upload(&bufs[0], values)?;
    let t1 = Instant::now();

    // Twiddles omega^k, k < n/2, expanded on the device from two small tables.
    let half = n / 2;
    let twiddles = gpu.alloc(half * FR_BYTES)?;
    {
        let t = upload_powers(gpu, &Powers::new(w, Scalar::ONE, log_n - 1))?;
        let (out, table, count) = (twiddles.ptr(), t.arg, half as u32);
        gpu.launch(
            gpu.kernels.fr_power_table,
            half,
            BLOCK,
            0,
            &mut [arg(&out), arg(&table), arg(&count)],
        )?;
        gpu.sync()?;
    }
    let pre = pre.map(|p| upload_powers(gpu, &p)).transpose()?;
    let post = post.map(|p| upload_powers(gpu, &p)).transpose()?;
    let none = PowerTableArg::default();

    // Passes of up to max_log_radix() stages each, the stages spread evenly over the passes;
    // results alternate between the two buffers.
    let pass_count = log_n.div_ceil(max_log_radix());
    let mut passes = Vec::with_capacity(pass_count as usize);
    let mut s = 0;
    for p in 0..pass_count {
        let stages = (log_n - s).div_ceil(pass_count - p);
        passes.push((s, stages));
        s += stages;
    }
    let tw = twiddles.ptr();
    for (p, &(s, stages)) in passes.iter().enumerate() {
        let (src, dst) = (bufs[p % 2].ptr(), bufs[(p + 1) % 2].ptr());
        let pre_arg = if p == 0 {
            pre.as_ref().map_or(none, |t| t.arg)
        } else {
            none
        };
        let post_arg = if p == passes.len() - 1 {
            post.as_ref().map_or(none, |t| t.arg)
        } else {
            none
        };
        let kernel = match stages {
            1 => gpu.kernels.fr_ntt_radix2,
            2 => gpu.kernels.fr_ntt_radix4,
            3 => gpu.kernels.fr_ntt_radix8,
            _ => gpu.kernels.fr_ntt_radix16,
        };
        gpu.launch(
            kernel,
            n >> stages,
            BLOCK,
            0,
            &mut [
                arg(&src),
                arg(&dst),
                arg(&tw),
                arg(&log_n),
                arg(&s),
                arg(&pre_arg),
                arg(&post_arg),
            ],
        )?;
    }
    gpu.sync()?;
    let t2 = Instant::now();
    gpu.download(values, &bufs[passes.len() % 2])?;
    gpu.set_timings(OpTimings {
        upload: t1 - t0,
        compute: t2 - t1,
        download: t2.elapsed(),
    });
    Ok(())
}

/// a = (a * b - c) / Z(g) pointwise, equal to `CpuBackend::coset_quotient`.
pub(crate) fn coset_quotient(
    gpu: &Gpu,
    a: &mut [Scalar],
    b: &[Scalar],
    c: &[Scalar],
) -> Result<(), GpuError> {
    let n = a.len();
    if n == 0 {
        return Ok(());
    }
    let _region = gpu.enter()?;
    let z_inv = [vanishing_inverse_on_coset(n)];
    let t0 = Instant::now();
    let (da, db, dc, dz) = (
        gpu.alloc(n * FR_BYTES)?,
        gpu.alloc(n * FR_BYTES)?,
        gpu.alloc(n * FR_BYTES)?,
        gpu.alloc(FR_BYTES)?,
    );
    gpu.upload(&da, a)?;
    gpu.upload(&db, b)?;
    gpu.upload(&dc, c)?;
    gpu.upload(&dz, &z_inv)?;
    let t1 = Instant::now();
    let (pa, pb, pc, pz, count) = (da.ptr(), db.ptr(), dc.ptr(), dz.ptr(), n as u32);
    gpu.launch(
        gpu.kernels.fr_coset_quotient,
        n,
        BLOCK,
        0,
        &mut [arg(&pa), arg(&pb), arg(&pc), arg(&pz), arg(&count)],
    )?;
    gpu.sync()?;
    let t2 = Instant::now();
    gpu.download(a, &da)?;
    gpu.set_timings(OpTimings {
        upload: t1 - t0,
        compute: t2 - t1,
        download: t2.elapsed(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-level tables give start * base^i at every index the kernels read.
    #[test]
    fn power_tables_cover_every_index() {
        let base = Scalar::from(7u64);
        let start = Scalar::from(3u64);
        for log_n in [0u32, 1, 2, 5, 10, 11] {
            let p = Powers::new(base, start, log_n);
            for i in 0..1u32 << log_n {
                let got = p.hi[(i >> p.lo_bits) as usize] * p.lo[(i & p.lo_mask) as usize];
                assert_eq!(
                    got,
                    start * base.pow_vartime([i as u64]),
                    "log_n {log_n}, i {i}"
                );
            }
        }
        let c = Powers::constant(start);
        for i in [0u32, 1, 12345, (1 << 27) - 1] {
            assert_eq!(
                c.hi[(i >> c.lo_bits) as usize] * c.lo[(i & c.lo_mask) as usize],
                start
            );
        }
    }
}
