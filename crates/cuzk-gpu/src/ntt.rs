//! Host side of the Fr NTT and the coset quotient (kernels/ntt.cuh).

use blstrs::Scalar;
use cuzk_groth16::backend::Scaling;
use cuzk_groth16::domain::vanishing_inverse_on_coset;
use cuzk_groth16::NttDirection;
use ff::Field;

use crate::arena::{reserved_size, DeviceBuffer};
use std::time::{Duration, Instant};

use crate::device::{arg, span, Event, Gpu, OpTimings, SyncOnDrop};
use crate::error::GpuError;
use crate::tuning::{GpuTuning, NttPasses};

const BLOCK: u32 = 256;
/// Most stages one fused pass (kernels/ntt.cuh, `fr_ntt_fused`) does in shared memory: its
/// tile is 1024 elements, so 9 stages leave two columns per block (2^27: three passes).
/// Which passes run, fused (registers capped or not) or one per radix, is
/// [`GpuTuning::ntt_passes`]; its doc has the measurements.
const FUSED_MAX_STAGES: u32 = 9;
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

/// The pre and post scalings of a direction's plan, uploaded.
type Scalings = (Option<DevicePowers>, Option<DevicePowers>);

fn plan_scalings(gpu: &Gpu, dir: NttDirection, log_n: u32) -> Result<Scalings, GpuError> {
    let plan = dir.plan(log_n);
    let pre = plan.pre.map(|p| upload_powers(gpu, &Powers::of(p, log_n))).transpose()?;
    let post = plan.post.map(|p| upload_powers(gpu, &Powers::of(p, log_n))).transpose()?;
    Ok((pre, post))
}

/// The passes of one transform of the 2^log_n elements in `values`, queued on the compute
/// stream with the twiddles of the direction's root at `tw`, on the kernels `tuning` names;
/// results alternate between `values` and `scratch`, which are swapped at the end if needed
/// so that the result is in `values`.
fn run_passes(
    gpu: &Gpu,
    tuning: &GpuTuning,
    values: &mut DeviceBuffer,
    scratch: &mut DeviceBuffer,
    tw: u64,
    log_n: u32,
    pre: Option<&DevicePowers>,
    post: Option<&DevicePowers>,
) -> Result<(), GpuError> {
    let n = 1usize << log_n;
    let none = PowerTableArg::default();
    // Passes of up to ntt_max_log_radix stages each (fused: up to FUSED_MAX_STAGES through
    // shared memory), the stages spread evenly over the passes.
    let fused = tuning.ntt_passes != NttPasses::Radix && log_n >= 2;
    let max_stages = if fused {
        FUSED_MAX_STAGES
    } else {
        tuning.ntt_max_log_radix.clamp(1, 4)
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
            let kernel = if tuning.ntt_passes == NttPasses::Fused {
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
        return Err(gpu.over_budget(need));
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
    run_passes(gpu, &gpu.tuning(), &mut data, &mut scratch, tw.ptr(), log_n, pre.as_ref(), post.as_ref())?;
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

/// Which of the H step's three transforms: their twiddle table and scalings.
#[derive(Clone, Copy)]
enum HTransform {
    /// Values to coefficients.
    Inverse = 0,
    /// Coefficients to values on the coset.
    CosetForward = 1,
    /// Values on the coset to h's coefficients.
    CosetInverse = 2,
}

/// What both device-resident H paths ([`h_on_device`], [`h_on_device_lean`]) set up and
/// share: a scratch buffer and a twiddle table of the domain's size, 1/Z on the coset, the
/// scalings of the three transforms they run, the kernel-time events, and the tuning read
/// once. Queued work finishes before these buffers go back, on every exit; buffers the
/// caller allocated before it are waited for too (they are dropped after it).
struct HKit<'g> {
    /// The first field, dropped first: the streams are done before the buffers go back.
    _drain: SyncOnDrop<'g>,
    gpu: &'g Gpu,
    tuning: GpuTuning,
    log_n: u32,
    scratch: DeviceBuffer,
    tw: DeviceBuffer,
    dz: DeviceBuffer,
    scalings: [Scalings; 3],
    /// The forward and the inverse root of the domain.
    roots: (Scalar, Scalar),
    kstart: Event,
    kend: Event,
}

impl<'g> HKit<'g> {
    fn new(gpu: &'g Gpu, log_n: u32) -> Result<Self, GpuError> {
        let n = 1usize << log_n;
        let scratch = gpu.alloc(n * FR_BYTES)?;
        let tw = gpu.alloc(n / 2 * FR_BYTES)?;
        let dz = gpu.alloc(FR_BYTES)?;
        gpu.upload(&dz, &[vanishing_inverse_on_coset(n)])?;
        let scalings = [
            plan_scalings(gpu, NttDirection::Inverse, log_n)?,
            plan_scalings(gpu, NttDirection::CosetForward, log_n)?,
            plan_scalings(gpu, NttDirection::CosetInverse, log_n)?,
        ];
        Ok(HKit {
            _drain: SyncOnDrop(gpu),
            gpu,
            tuning: gpu.tuning(),
            log_n,
            scratch,
            tw,
            dz,
            scalings,
            roots: (NttDirection::Forward.plan(log_n).root, NttDirection::Inverse.plan(log_n).root),
            kstart: Event::new(true)?,
            kend: Event::new(true)?,
        })
    }

    /// Expands the twiddle table of `t`'s root (queued on the compute stream): the inverse
    /// root for the inverse transforms, the forward root for the coset forward one.
    fn twiddles(&self, t: HTransform) -> Result<(), GpuError> {
        let root = match t {
            HTransform::CosetForward => self.roots.0,
            HTransform::Inverse | HTransform::CosetInverse => self.roots.1,
        };
        twiddles(self.gpu, root, self.log_n, &self.tw)
    }

    /// Transform `t` of `x` in place (its twiddle table expanded before).
    fn transform(&mut self, x: &mut DeviceBuffer, t: HTransform) -> Result<(), GpuError> {
        let (pre, post) = &self.scalings[t as usize];
        run_passes(self.gpu, &self.tuning, x, &mut self.scratch, self.tw.ptr(), self.log_n, pre.as_ref(), post.as_ref())
    }

    /// a = (a * b - c) / Z on the coset, `count` elements at the three addresses.
    fn quotient(&self, a: u64, b: u64, c: u64, count: usize) -> Result<(), GpuError> {
        let (pz, count32) = (self.dz.ptr(), count as u32);
        self.gpu.launch(
            self.gpu.kernels.fr_coset_quotient,
            count,
            BLOCK,
            0,
            &mut [arg(&a), arg(&b), arg(&c), arg(&pz), arg(&count32)],
        )
    }

    /// The coset inverse transform of the quotient in `x`, which leaves h's coefficients
    /// there; then the end of the kernels' time and a wait for the streams. Returns the
    /// kernels' time since `kstart`.
    fn finish(&mut self, x: &mut DeviceBuffer) -> Result<Duration, GpuError> {
        self.twiddles(HTransform::CosetInverse)?;
        self.transform(x, HTransform::CosetInverse)?;
        self.kend.record(self.gpu.stream())?;
        self.gpu.sync()?;
        self.kend.since(&self.kstart)
    }
}

/// h on the device: a, b, c (each at most 2^log_n long, zero-padded there) uploaded once,
/// then the three inverse NTTs, the three coset NTTs, the coset quotient and the coset
/// inverse NTT without leaving the device. The buffer returned holds the 2^log_n
/// coefficients, of which the first 2^log_n - 1 are h (the last is zero for a satisfied
/// witness and is not part of h); nothing of it crosses PCIe. Equal to
/// `cuzk_groth16::hstep::compute_h` element for element. The caller checks
/// [`h_step_bytes`] against the budget first.
///
/// Each polynomial's inverse NTT is queued as soon as it is up, so that the next one's
/// upload (the host filling the staging buffers) runs beside it; and a, b and c are freed
/// (on a thread of their own) as soon as each is up, so that giving their pages back to
/// the system overlaps the NTT kernels instead of the H MSM, whose workspace allocation
/// waits for it (on the H200, 2026-12-03, bench/history/2026-12-03.md: the 32 GiB partition's H MSM
/// spent 0.36-0.75 s allocating its workspace beside such a free, 1-3 ms without it). The
/// switches that gave the old orders (all uploads first; the frees after the step) are
/// gone.
pub(crate) fn h_on_device(
    gpu: &Gpu,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    log_n: u32,
) -> Result<DeviceBuffer, GpuError> {
    let n = 1usize << log_n;
    assert!(a.len() <= n && b.len() == a.len() && c.len() == a.len() && log_n >= 1);
    let _region = gpu.enter()?;
    gpu.check_cancel()?;
    let t0 = Instant::now();
    let mut polys = [gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?];
    let mut kit = HKit::new(gpu, log_n)?;
    // The inverse root's table while a, b, c go up (copy stream) and their tails are zeroed.
    kit.twiddles(HTransform::Inverse)?;
    let mut upload = Duration::ZERO;
    let mut pin = Duration::ZERO;
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
        cuzk_groth16::release::drop_in_background(v);
        if k == 0 {
            kit.kstart.record(gpu.stream())?;
        }
        kit.transform(p, HTransform::Inverse)?;
    }
    kit.twiddles(HTransform::CosetForward)?;
    for p in polys.iter_mut() {
        kit.transform(p, HTransform::CosetForward)?;
    }
    gpu.check_cancel()?;
    kit.quotient(polys[0].ptr(), polys[1].ptr(), polys[2].ptr(), n)?;
    let kernels = kit.finish(&mut polys[0])?;
    drop(kit);
    let [h, ..] = polys;
    gpu.set_timings(OpTimings {
        upload,
        compute: t0.elapsed().saturating_sub(upload + pin),
        download: Duration::ZERO,
        kernels,
        pin,
        ..Default::default()
    });
    Ok(h)
}

/// h from a, b and c already on the device (each 2^log_n long, zero-padded there; a
/// deferred witness's, evaluated by `crate::eval`): the three inverse NTTs, the three coset
/// NTTs, the quotient and the coset inverse NTT, as [`h_on_device`] runs them after its
/// uploads. The caller holds the device region. `before` is what the caller's own part took
/// (its upload and its kernels), added to the timings set here.
pub(crate) fn h_of_device_polys(
    gpu: &Gpu,
    mut polys: [DeviceBuffer; 3],
    log_n: u32,
    before: OpTimings,
) -> Result<DeviceBuffer, GpuError> {
    let t0 = Instant::now();
    let mut kit = HKit::new(gpu, log_n)?;
    kit.twiddles(HTransform::Inverse)?;
    kit.kstart.record(gpu.stream())?;
    for p in polys.iter_mut() {
        kit.transform(p, HTransform::Inverse)?;
    }
    kit.twiddles(HTransform::CosetForward)?;
    for p in polys.iter_mut() {
        kit.transform(p, HTransform::CosetForward)?;
    }
    gpu.check_cancel()?;
    kit.quotient(polys[0].ptr(), polys[1].ptr(), polys[2].ptr(), 1 << log_n)?;
    let kernels = kit.finish(&mut polys[0])?;
    drop(kit);
    let [h, ..] = polys;
    gpu.set_timings(OpTimings {
        upload: before.upload,
        compute: before.compute + t0.elapsed(),
        download: Duration::ZERO,
        kernels: before.kernels + kernels,
        ..Default::default()
    });
    Ok(h)
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
/// scratch: PCIe is full duplex, so two of the 4n-element legs take the time of one (on
/// the H200, 2026-12-04, fifth session, bench/history/2026-12-04.md: the 14 GiB budget's H step took
/// 987 ms against 1036-1069 ms one after the other; that switch is gone).
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
    let mut kit = HKit::new(gpu, log_n)?;
    kit.kstart.record(gpu.stream())?;
    let mut upload = Duration::ZERO;
    let mut download = Duration::ZERO;
    // Zeroes the tail of `into` past `v` and uploads `v` (after `free`, when given).
    let put = |v: &[Scalar], into: &DeviceBuffer, free: Option<&Event>| -> Result<(), GpuError> {
        gpu.memset_bytes(into.ptr() + (v.len() * FR_BYTES) as u64, (n - v.len()) * FR_BYTES, 0)?;
        gpu.upload_slice(into, v, free)
    };
    // The two forward transforms of the polynomial in x.
    let transforms = |kit: &mut HKit<'_>, x: &mut DeviceBuffer| -> Result<(), GpuError> {
        kit.twiddles(HTransform::Inverse)?;
        kit.transform(x, HTransform::Inverse)?;
        kit.twiddles(HTransform::CosetForward)?;
        kit.transform(x, HTransform::CosetForward)
    };
    let tu = Instant::now();
    put(&b[..m], &x, None)?;
    upload += tu.elapsed();
    transforms(&mut kit, &mut x)?;
    // x's transform comes back into `done` while `next` goes up into the scratch buffer,
    // which then holds the values (x the scratch); next's transforms are queued there.
    let mut exchange = |kit: &mut HKit<'_>, done: &mut [Scalar], next: &[Scalar]| -> Result<(), GpuError> {
        gpu.check_cancel()?;
        let t = Instant::now();
        // The copy stream writes scratch once the compute stream is done with it.
        let free = Event::new(false)?;
        free.record(gpu.stream())?;
        let mut up = Duration::ZERO;
        gpu.download_while_uploading(&mut done[..], x.ptr(), || {
            let tu = Instant::now();
            let r = put(next, &kit.scratch, Some(&free));
            up = tu.elapsed();
            r
        })?;
        upload += up;
        download += t.elapsed().saturating_sub(up);
        std::mem::swap(&mut x, &mut kit.scratch);
        transforms(kit, &mut x)
    };
    exchange(&mut kit, b, &c[..m])?;
    exchange(&mut kit, c, a)?;
    // The quotient over halves: b's and c's half side by side in the scratch buffer.
    let half = n / 2;
    for lo in [0, half] {
        gpu.check_cancel()?;
        // The copy stream writes the scratch buffer only once the compute stream is done
        // with it (a's last pass, or the previous half's quotient).
        let read = Event::new(false)?;
        read.record(gpu.stream())?;
        read.wait_in(gpu.copy_stream())?;
        let (sb, sc) = (kit.scratch.ptr(), kit.scratch.ptr() + (half * FR_BYTES) as u64);
        let tu = Instant::now();
        gpu.upload_slice_at(sb, &b[lo..lo + half], None)?;
        gpu.upload_slice_at(sc, &c[lo..lo + half], None)?;
        upload += tu.elapsed();
        kit.quotient(x.ptr() + (lo * FR_BYTES) as u64, sb, sc, half)?;
    }
    let kernels = kit.finish(&mut x)?;
    drop(kit);
    let pin = pins.release();
    gpu.set_timings(OpTimings {
        upload,
        compute: t0.elapsed().saturating_sub(upload + download + pin),
        download,
        kernels,
        pin,
        ..Default::default()
    });
    Ok(x)
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
        .ok_or_else(|| gpu.over_budget(3 * reserved_size((1 << 12) * FR_BYTES)))?;
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
    let mut upload = Duration::ZERO;
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
        download: Duration::ZERO,
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
