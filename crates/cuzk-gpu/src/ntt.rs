//! Host side of the Fr NTT and the coset quotient (kernels/ntt.cuh).

use blstrs::Scalar;
use cuzk_groth16::backend::{vanishing_inverse_on_coset, Scaling};
use cuzk_groth16::NttDirection;
use ff::Field;

use crate::arena::{reserved_size, DeviceBuffer};
use std::time::Instant;

use crate::device::{arg, span, Event, Gpu, OpTimings, SyncOnDrop};
use crate::error::GpuError;

const BLOCK: u32 = 256;
/// Most stages one pass over memory does (radix 2^k in registers). The passes are bound by
/// Fr multiplications more than by memory, and higher radices cost occupancy (radix 8: 125
/// registers, 16: 247); BENCH.md has the measurements. CUZK_NTT_MAX_LOG_RADIX (1 to 4)
/// overrides the default for measurements.
fn max_log_radix() -> u32 {
    static K: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *K.get_or_init(|| env_knob("CUZK_NTT_MAX_LOG_RADIX", 2).clamp(1, 4))
}
/// A measurement switch from the environment: its number, or `default`.
fn env_knob(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
/// Most stages one fused pass (kernels/ntt.cuh, `fr_ntt_fused`) does in shared memory: its
/// tile is 1024 elements, so 9 stages leave two columns per block (2^27: three passes).
const FUSED_MAX_STAGES: u32 = 9;
/// Which passes: by default the fused kernel with registers capped for three blocks per SM
/// (`cuzk_fr_ntt_fused3`: 80 registers, 28 bytes of spills on sm_90; H200 2^27 forward 47.3
/// ms with the 16-byte loads of 2026-12-04, 66.2 ms without them in the same call). For measurements,
/// CUZK_NTT_FUSED=0 gives the register-radix passes (83.4 ms) and 1 the uncapped fused kernel
/// (`cuzk_fr_ntt_fused`: 96 registers, two blocks per SM, 76.1 ms); those two figures are
/// from before the 16-byte loads.
fn fused_mode() -> u32 {
    static F: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *F.get_or_init(|| env_knob("CUZK_NTT_FUSED", 2))
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
    // (synchronous: the tables are small)
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

/// Device bytes an NTT of 2^log_n elements takes: two value buffers, the twiddles and the
/// small power tables. An NTT is not split: a budget below this refuses it.
pub(crate) fn ntt_bytes(log_n: u32) -> usize {
    let n = 1usize << log_n;
    let table = |len: usize| reserved_size(len * FR_BYTES);
    let side = |bits: u32| table(1 << bits.div_ceil(2)) + table(1 << (bits - bits.div_ceil(2)));
    2 * reserved_size(n * FR_BYTES)
        + reserved_size((n / 2).max(1) * FR_BYTES)
        + side(log_n.saturating_sub(1))
        + 2 * side(log_n)
}

/// Elements per chunk of the coset quotient: all n when a, b, c fit, else the largest power
/// of two that does (at least 2^12), or None.
pub(crate) fn quotient_chunk(n: usize, available: usize) -> Option<usize> {
    let bytes = |m: usize| 3 * reserved_size(m * FR_BYTES) + reserved_size(FR_BYTES);
    let mut m = n.max(1).next_power_of_two().min(n.max(1));
    if bytes(m) <= available {
        return Some(m);
    }
    m = n.next_power_of_two() / 2;
    while m >= 1 << 12 {
        if bytes(m) <= available {
            return Some(m);
        }
        m /= 2;
    }
    None
}

fn over_budget(gpu: &Gpu, requested: usize) -> GpuError {
    let c = gpu.counters();
    GpuError::OverBudget {
        device: gpu.info().ordinal,
        requested,
        in_use: c.in_use,
        budget: c.budget,
    }
}

/// The twiddle table of `root` for a transform of 2^log_n: root^i for i < 2^(log_n - 1),
/// expanded on the device (queued on the compute stream).
fn twiddles(gpu: &Gpu, root: Scalar, log_n: u32, out: &DeviceBuffer) -> Result<(), GpuError> {
    let half = (1usize << log_n) / 2;
    let t = upload_powers(gpu, &Powers::new(root, Scalar::ONE, log_n - 1))?;
    let (ptr, table, count) = (out.ptr(), t.arg, half as u32);
    gpu.launch(
        gpu.kernels.fr_power_table,
        half,
        BLOCK,
        0,
        &mut [arg(&ptr), arg(&table), arg(&count)],
    )
}

/// The pre and post scalings of a plan, uploaded.
fn plan_scalings(
    gpu: &Gpu,
    dir: NttDirection,
    log_n: u32,
) -> Result<(Option<DevicePowers>, Option<DevicePowers>), GpuError> {
    let plan = dir.plan(log_n);
    let pre = plan.pre.map(|p| upload_powers(gpu, &Powers::of(p, log_n))).transpose()?;
    let post = plan.post.map(|p| upload_powers(gpu, &Powers::of(p, log_n))).transpose()?;
    Ok((pre, post))
}

/// The passes of one transform of the 2^log_n elements in `values`, queued on the compute
/// stream with the twiddles of the direction's root at `tw`; results alternate between
/// `values` and `scratch`, which are swapped at the end if needed so that the result is in
/// `values`.
fn run_passes(
    gpu: &Gpu,
    values: &mut DeviceBuffer,
    scratch: &mut DeviceBuffer,
    tw: u64,
    log_n: u32,
    pre: Option<&DevicePowers>,
    post: Option<&DevicePowers>,
) -> Result<(), GpuError> {
    let n = 1usize << log_n;
    let none = PowerTableArg::default();
    // Passes of up to max_log_radix() stages each (fused: up to FUSED_MAX_STAGES through
    // shared memory), the stages spread evenly over the passes.
    let fused = fused_mode() != 0 && log_n >= 2;
    let max_stages = if fused {
        FUSED_MAX_STAGES
    } else {
        max_log_radix()
    };
    let pass_count = log_n.div_ceil(max_stages);
    let mut passes = Vec::with_capacity(pass_count as usize);
    let mut s = 0;
    for p in 0..pass_count {
        let stages = (log_n - s).div_ceil(pass_count - p);
        passes.push((s, stages));
        s += stages;
    }
    let bufs = [values.ptr(), scratch.ptr()];
    for (p, &(s, stages)) in passes.iter().enumerate() {
        gpu.check_cancel()?;
        let (src, dst) = (bufs[p % 2], bufs[(p + 1) % 2]);
        let pre_arg = if p == 0 { pre.map_or(none, |t| t.arg) } else { none };
        let post_arg = if p == passes.len() - 1 {
            post.map_or(none, |t| t.arg)
        } else {
            none
        };
        if fused {
            // n / 4 threads: each owns four elements of a tile of min(n, 1024).
            let block = (n / 4).min(BLOCK as usize) as u32;
            let kernel = if fused_mode() == 1 {
                gpu.kernels.fr_ntt_fused
            } else {
                gpu.kernels.fr_ntt_fused3
            };
            gpu.launch(
                kernel,
                n / 4,
                block,
                0,
                &mut [
                    arg(&src),
                    arg(&dst),
                    arg(&tw),
                    arg(&log_n),
                    arg(&s),
                    arg(&stages),
                    arg(&pre_arg),
                    arg(&post_arg),
                ],
            )?;
            continue;
        }
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
    if passes.len() % 2 == 1 {
        std::mem::swap(values, scratch);
    }
    Ok(())
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
    gpu.check_cancel()?;
    let need = ntt_bytes(log_n);
    if need > gpu.available() {
        return Err(over_budget(gpu, need));
    }
    let t0 = Instant::now();
    let (mut data, mut scratch) = (gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?);
    // Small tables first (synchronous), then the twiddle expansion on the compute stream
    // while the values go up on the copy stream.
    let tw = gpu.alloc(n / 2 * FR_BYTES)?;
    let (pre, post) = plan_scalings(gpu, dir, log_n)?;
    // On every exit, queued work finishes before the buffers above go back.
    let _drain = SyncOnDrop(gpu);
    twiddles(gpu, dir.plan(log_n).root, log_n, &tw)?;
    let tu = Instant::now();
    gpu.upload_slice(&data, values, None)?;
    let upload = tu.elapsed();
    // Kernel time from here: the passes (queued after the wait for the upload).
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    kstart.record(gpu.stream())?;
    run_passes(gpu, &mut data, &mut scratch, tw.ptr(), log_n, pre.as_ref(), post.as_ref())?;
    kend.record(gpu.stream())?;
    let t2 = Instant::now();
    gpu.download_to(values, data.ptr())?;
    gpu.sync()?;
    gpu.set_timings(OpTimings {
        upload,
        compute: (t2 - t0).saturating_sub(upload),
        download: t2.elapsed(),
        kernels: kend.since(&kstart)?,
        ..Default::default()
    });
    Ok(())
}

/// h on the device in less memory, for budgets that hold one NTT's buffers but not a, b
/// and c at once (a 16 GB card at 2^27): b and c each go up, through their inverse and
/// coset NTTs, and come back (into `b` and `c`, resized to the domain); then a goes up
/// and through its NTTs, the quotient streams b and c through the scratch buffer in two
/// halves, and the coset inverse NTT leaves h in the buffer returned, as
/// [`h_on_device`] does. PCIe carries 7n elements (28 GiB at 2^27) against the host
/// path's 18n (each NTT up and back, the quotient's a, b, c up and a back); device bytes:
/// [`ntt_bytes`] and one element.
///
/// Each download (b's transform, then c's) runs beside the next polynomial's upload (c,
/// then a) into the other buffer, which then serves as the values and the first as the
/// scratch: PCIe is full duplex, so two of the 4n-element legs take the time of one.
/// Measurement switch: CUZK_GPU_LEAN_OVERLAP=0 downloads first and uploads after, into
/// the same buffer, as before.
pub(crate) fn h_on_device_lean(
    gpu: &Gpu,
    a: &[Scalar],
    b: &mut Vec<Scalar>,
    c: &mut Vec<Scalar>,
    log_n: u32,
) -> Result<DeviceBuffer, GpuError> {
    let n = 1usize << log_n;
    let m = a.len();
    assert!(m <= n && b.len() == m && c.len() == m && log_n >= 1);
    let overlap = !std::env::var("CUZK_GPU_LEAN_OVERLAP").is_ok_and(|v| v == "0");
    let _region = gpu.enter()?;
    gpu.check_cancel()?;
    let t0 = Instant::now();
    // b and c take their transforms back at the domain's length: grown before they are
    // pinned (within the capacity synthesis gives them, so in place).
    b.resize(n, Scalar::ZERO);
    c.resize(n, Scalar::ZERO);
    // SAFETY: a, b and c are neither resized nor freed before `pins` is released below.
    let pins = unsafe { gpu.pin_host(&[span(a), span(b), span(c)]) };
    let mut x = gpu.alloc(n * FR_BYTES)?;
    let mut scratch = gpu.alloc(n * FR_BYTES)?;
    let tw = gpu.alloc(n / 2 * FR_BYTES)?;
    let dz = gpu.alloc(FR_BYTES)?;
    gpu.upload(&dz, &[vanishing_inverse_on_coset(n)])?;
    let inv = plan_scalings(gpu, NttDirection::Inverse, log_n)?;
    let fwd = plan_scalings(gpu, NttDirection::CosetForward, log_n)?;
    let last = plan_scalings(gpu, NttDirection::CosetInverse, log_n)?;
    let _drain = SyncOnDrop(gpu);
    let (root, root_inv) = (
        NttDirection::Forward.plan(log_n).root,
        NttDirection::Inverse.plan(log_n).root,
    );
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    kstart.record(gpu.stream())?;
    let mut upload = std::time::Duration::ZERO;
    let mut download = std::time::Duration::ZERO;
    // Zeroes the tail of `into` past `v` and uploads `v` (after `free`, when given).
    let put = |v: &[Scalar], into: &DeviceBuffer, free: Option<&Event>| -> Result<(), GpuError> {
        gpu.memset_bytes(into.ptr() + (v.len() * FR_BYTES) as u64, (n - v.len()) * FR_BYTES, 0)?;
        gpu.upload_slice(into, v, free)
    };
    // The two forward transforms of the polynomial in x.
    let transforms = |x: &mut DeviceBuffer, scratch: &mut DeviceBuffer| -> Result<(), GpuError> {
        twiddles(gpu, root_inv, log_n, &tw)?;
        run_passes(gpu, x, scratch, tw.ptr(), log_n, inv.0.as_ref(), inv.1.as_ref())?;
        twiddles(gpu, root, log_n, &tw)?;
        run_passes(gpu, x, scratch, tw.ptr(), log_n, fwd.0.as_ref(), fwd.1.as_ref())
    };
    let tu = Instant::now();
    put(&b[..m], &x, None)?;
    upload += tu.elapsed();
    transforms(&mut x, &mut scratch)?;
    // x's transform comes back into `done` while `next` goes up (into scratch when
    // overlapped), then next's transforms are queued in x.
    let mut exchange = |done: &mut [Scalar], next: &[Scalar]| -> Result<(), GpuError> {
        gpu.check_cancel()?;
        let t = Instant::now();
        if overlap {
            // The copy stream writes scratch once the compute stream is done with it.
            let free = Event::new(false)?;
            free.record(gpu.stream())?;
            let mut up = std::time::Duration::ZERO;
            gpu.download_while_uploading(&mut done[..], x.ptr(), || {
                let tu = Instant::now();
                let r = put(next, &scratch, Some(&free));
                up = tu.elapsed();
                r
            })?;
            upload += up;
            download += t.elapsed().saturating_sub(up);
            std::mem::swap(&mut x, &mut scratch);
        } else {
            gpu.download_to(&mut done[..], x.ptr())?;
            download += t.elapsed();
            let tu = Instant::now();
            put(next, &x, None)?;
            upload += tu.elapsed();
        }
        transforms(&mut x, &mut scratch)
    };
    exchange(b, &c[..m])?;
    exchange(c, a)?;
    // The quotient over halves: b's and c's half side by side in the scratch buffer.
    let half = n / 2;
    for lo in [0, half] {
        gpu.check_cancel()?;
        // The copy stream writes the scratch buffer only once the compute stream is done
        // with it (a's last pass, or the previous half's quotient).
        let read = Event::new(false)?;
        read.record(gpu.stream())?;
        read.wait_in(gpu.copy_stream())?;
        let (sb, sc) = (scratch.ptr(), scratch.ptr() + (half * FR_BYTES) as u64);
        let tu = Instant::now();
        gpu.upload_slice_at(sb, &b[lo..lo + half], None)?;
        gpu.upload_slice_at(sc, &c[lo..lo + half], None)?;
        upload += tu.elapsed();
        let (pa, pz, count) = (x.ptr() + (lo * FR_BYTES) as u64, dz.ptr(), half as u32);
        gpu.launch(
            gpu.kernels.fr_coset_quotient,
            half,
            BLOCK,
            0,
            &mut [arg(&pa), arg(&sb), arg(&sc), arg(&pz), arg(&count)],
        )?;
    }
    twiddles(gpu, root_inv, log_n, &tw)?;
    run_passes(gpu, &mut x, &mut scratch, tw.ptr(), log_n, last.0.as_ref(), last.1.as_ref())?;
    kend.record(gpu.stream())?;
    gpu.sync()?;
    drop(_drain);
    let pin = pins.release();
    gpu.set_timings(OpTimings {
        upload,
        compute: t0.elapsed().saturating_sub(upload + download + pin),
        download,
        kernels: kend.since(&kstart)?,
        pin,
        ..Default::default()
    });
    Ok(x)
}

/// Device bytes of the H step kept on the device ([`h_on_device`]) at 2^log_n: a, b, c
/// and one scratch buffer of the domain size, one twiddle table, the small tables.
pub(crate) fn h_step_bytes(log_n: u32) -> usize {
    let n = 1usize << log_n;
    let table = |len: usize| reserved_size(len * FR_BYTES);
    let side = |bits: u32| table(1 << bits.div_ceil(2)) + table(1 << (bits - bits.div_ceil(2)));
    4 * reserved_size(n * FR_BYTES)
        + reserved_size((n / 2).max(1) * FR_BYTES)
        + side(log_n.saturating_sub(1))
        + 2 * side(log_n)
        + reserved_size(FR_BYTES)
}

/// h on the device: a, b, c (each at most 2^log_n long, zero-padded there) uploaded once,
/// then the three inverse NTTs, the three coset NTTs, the coset quotient and the coset
/// inverse NTT without leaving the device. The buffer returned holds the 2^log_n
/// coefficients, of which the first 2^log_n - 1 are h (the last is zero for a satisfied
/// witness and is not part of h); nothing of it crosses PCIe. Equal to
/// `cuzk_groth16::prover::compute_h` element for element. The caller checks
/// [`h_step_bytes`] against the budget first.
///
/// a, b and c are freed (on a thread of their own) as soon as each is up, so that giving
/// their pages back to the system overlaps the NTT kernels instead of the H MSM, whose
/// workspace allocation waits for it. Measurement switch: CUZK_GPU_FREE_AFTER_UPLOAD=0 frees
/// them after the H step, as before.
pub(crate) fn h_on_device(
    gpu: &Gpu,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    log_n: u32,
) -> Result<DeviceBuffer, GpuError> {
    let n = 1usize << log_n;
    assert!(a.len() <= n && b.len() == a.len() && c.len() == a.len() && log_n >= 1);
    let free_early = !std::env::var("CUZK_GPU_FREE_AFTER_UPLOAD").is_ok_and(|v| v == "0");
    let mut kept = Vec::new();
    let _region = gpu.enter()?;
    gpu.check_cancel()?;
    let t0 = Instant::now();
    let mut polys = [gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?];
    let mut scratch = gpu.alloc(n * FR_BYTES)?;
    let tw = gpu.alloc(n / 2 * FR_BYTES)?;
    let dz = gpu.alloc(FR_BYTES)?;
    gpu.upload(&dz, &[vanishing_inverse_on_coset(n)])?;
    let inv = plan_scalings(gpu, NttDirection::Inverse, log_n)?;
    let fwd = plan_scalings(gpu, NttDirection::CosetForward, log_n)?;
    let last = plan_scalings(gpu, NttDirection::CosetInverse, log_n)?;
    // On every exit, queued work finishes before the buffers above go back.
    let _drain = SyncOnDrop(gpu);
    let (root, root_inv) = (
        NttDirection::Forward.plan(log_n).root,
        NttDirection::Inverse.plan(log_n).root,
    );
    // The inverse root's table while a, b, c go up (copy stream) and their tails are zeroed.
    twiddles(gpu, root_inv, log_n, &tw)?;
    // Each polynomial's inverse NTT is queued as soon as it is up, so that the next one's
    // upload (the host filling the staging buffers) runs beside it. Measurement switch:
    // CUZK_GPU_H_OVERLAP=0 queues them after all three uploads.
    let overlap = !std::env::var("CUZK_GPU_H_OVERLAP").is_ok_and(|v| v == "0");
    let mut upload = std::time::Duration::ZERO;
    let mut pin = std::time::Duration::ZERO;
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    for (k, (p, v)) in polys.iter_mut().zip([a, b, c]).enumerate() {
        gpu.memset_bytes(p.ptr() + (v.len() * FR_BYTES) as u64, (n - v.len()) * FR_BYTES, 0)?;
        // SAFETY: `v` is neither resized nor freed before `pins` is released.
        let pins = unsafe { gpu.pin_host(&[span(&v)]) };
        let tu = Instant::now();
        gpu.upload_slice(p, &v, None)?;
        upload += tu.elapsed();
        pin += pins.release();
        // The host copy is on the device or in the staging buffers once upload_slice
        // returns.
        if free_early {
            cuzk_groth16::release::drop_in_background(v);
        } else {
            kept.push(v);
        }
        if k == 0 && overlap {
            kstart.record(gpu.stream())?;
        }
        if overlap {
            run_passes(gpu, p, &mut scratch, tw.ptr(), log_n, inv.0.as_ref(), inv.1.as_ref())?;
        }
    }
    if !overlap {
        kstart.record(gpu.stream())?;
        for p in polys.iter_mut() {
            run_passes(gpu, p, &mut scratch, tw.ptr(), log_n, inv.0.as_ref(), inv.1.as_ref())?;
        }
    }
    twiddles(gpu, root, log_n, &tw)?;
    for p in polys.iter_mut() {
        run_passes(gpu, p, &mut scratch, tw.ptr(), log_n, fwd.0.as_ref(), fwd.1.as_ref())?;
    }
    gpu.check_cancel()?;
    {
        let (pa, pb, pc, pz, count) = (polys[0].ptr(), polys[1].ptr(), polys[2].ptr(), dz.ptr(), n as u32);
        gpu.launch(
            gpu.kernels.fr_coset_quotient,
            n,
            BLOCK,
            0,
            &mut [arg(&pa), arg(&pb), arg(&pc), arg(&pz), arg(&count)],
        )?;
    }
    twiddles(gpu, root_inv, log_n, &tw)?;
    run_passes(gpu, &mut polys[0], &mut scratch, tw.ptr(), log_n, last.0.as_ref(), last.1.as_ref())?;
    kend.record(gpu.stream())?;
    gpu.sync()?;
    drop(_drain);
    let kernels = kend.since(&kstart)?;
    let [h, ..] = polys;
    drop((scratch, tw, dz));
    // The old order: a, b and c freed once the step's device buffers are back.
    for v in kept {
        cuzk_groth16::release::drop_in_background(v);
    }
    gpu.set_timings(OpTimings {
        upload,
        compute: t0.elapsed().saturating_sub(upload + pin),
        download: std::time::Duration::ZERO,
        kernels,
        pin,
        ..Default::default()
    });
    Ok(h)
}

/// a = (a * b - c) / Z(g) pointwise, equal to `CpuBackend::coset_quotient`; in chunks when
/// a, b and c do not fit the arena together.
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
    gpu.check_cancel()?;
    let m = quotient_chunk(n, gpu.available())
        .ok_or_else(|| over_budget(gpu, 3 * reserved_size((1 << 12) * FR_BYTES)))?;
    let z_inv = [vanishing_inverse_on_coset(n)];
    let t0 = Instant::now();
    let (da, db, dc, dz) = (
        gpu.alloc(m * FR_BYTES)?,
        gpu.alloc(m * FR_BYTES)?,
        gpu.alloc(m * FR_BYTES)?,
        gpu.alloc(FR_BYTES)?,
    );
    gpu.upload(&dz, &z_inv)?;
    let (kstart, kend) = (Event::new(true)?, Event::new(true)?);
    kstart.record(gpu.stream())?;
    let mut upload = std::time::Duration::ZERO;
    for lo in (0..n).step_by(m) {
        gpu.check_cancel()?;
        let hi = (lo + m).min(n);
        let tu = Instant::now();
        gpu.upload_slice(&da, &a[lo..hi], None)?;
        gpu.upload_slice(&db, &b[lo..hi], None)?;
        gpu.upload_slice(&dc, &c[lo..hi], None)?;
        upload += tu.elapsed();
        let (pa, pb, pc, pz, count) = (da.ptr(), db.ptr(), dc.ptr(), dz.ptr(), (hi - lo) as u32);
        gpu.launch(
            gpu.kernels.fr_coset_quotient,
            hi - lo,
            BLOCK,
            0,
            &mut [arg(&pa), arg(&pb), arg(&pc), arg(&pz), arg(&count)],
        )?;
        gpu.download_to(&mut a[lo..hi], da.ptr())?;
    }
    kend.record(gpu.stream())?;
    gpu.sync()?;
    gpu.set_timings(OpTimings {
        upload,
        compute: t0.elapsed().saturating_sub(upload),
        download: std::time::Duration::ZERO,
        kernels: kend.since(&kstart)?,
        ..Default::default()
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
