//! Host side of the G1 MSM and batch sum (kernels/msm.cuh).

use blstrs::{G1Affine, G1Projective, Scalar};
use group::Group;

use crate::arena::DeviceBuffer;
use std::time::{Duration, Instant};

use crate::device::{arg, Gpu, OpTimings};
use crate::error::GpuError;

const BLOCK: u32 = 128;
const AFFINE_BYTES: usize = 96;
const XYZZ_BYTES: usize = 192;
const FR_BYTES: usize = 32;
const _: () = assert!(std::mem::size_of::<G1Affine>() == AFFINE_BYTES);
const _: () = assert!(std::mem::size_of::<G1Projective>() == 144);

/// Window width c for n points: wide enough that the bucket phase dominates, at most 16
/// bits (2^15 buckets per window).
fn window_bits(n: usize) -> u32 {
    let log = usize::BITS - n.max(1).leading_zeros() - 1;
    log.saturating_sub(4).clamp(4, 16)
}

/// Per-thread segments of buckets in the window reduction.
fn segments(half: usize) -> usize {
    half.min(1024)
}

/// Sorted bucket entries each thread of the bucket phase adds.
const RUN_CHUNK: usize = 32;
/// Points the scalar-one sum gives each thread.
const SUM_CHUNK: usize = 32;
/// Partial sums each thread of the tree reduction adds.
const REDUCE_CHUNK: usize = 16;

/// sum_i scalars[i] * points[i], equal to `CpuBackend::msm_g1` over the same points.
pub(crate) fn msm_g1(
    gpu: &Gpu,
    points: &[G1Affine],
    scalars: &[Scalar],
) -> Result<G1Projective, GpuError> {
    let n = points.len();
    debug_assert_eq!(n, scalars.len());
    if n == 0 {
        return Ok(G1Projective::identity());
    }
    let _region = gpu.enter()?;
    let c = window_bits(n);
    let windows = 256u32.div_ceil(c);
    let half = 1usize << (c - 1);
    let stride = half + 1;

    let d_points = gpu.alloc(n * AFFINE_BYTES)?;
    let d_scalars = gpu.alloc(n * FR_BYTES)?;
    let d_class = gpu.alloc(n)?;
    let d_cursor = gpu.alloc(windows as usize * stride * 4)?;
    let t0 = Instant::now();
    gpu.upload(&d_points, points)?;
    gpu.upload(&d_scalars, scalars)?;
    let t1 = Instant::now();
    gpu.memset(&d_cursor, 0)?;

    let (pp, ps, pc, pk, n32) = (
        d_points.ptr(),
        d_scalars.ptr(),
        d_class.ptr(),
        d_cursor.ptr(),
        n as u32,
    );
    gpu.launch(
        gpu.kernels.msm_classify,
        n,
        BLOCK,
        0,
        &mut [
            arg(&ps),
            arg(&pc),
            arg(&pk),
            arg(&n32),
            arg(&c),
            arg(&windows),
        ],
    )?;
    let scan_threads = 1024u32;
    gpu.launch(
        gpu.kernels.msm_bucket_offsets,
        windows as usize * scan_threads as usize,
        scan_threads,
        scan_threads * 4,
        &mut [arg(&pk), arg(&c)],
    )?;
    // Sorted entries and their bucket keys; slots past a window's count keep NO_KEY.
    let slots = windows as usize * n;
    let d_entries = gpu.alloc(slots * 4)?;
    let d_keys = gpu.alloc(slots * 4)?;
    gpu.memset(&d_keys, 0xff)?;
    let (pe, pkeys) = (d_entries.ptr(), d_keys.ptr());
    gpu.launch(
        gpu.kernels.msm_scatter,
        n,
        BLOCK,
        0,
        &mut [
            arg(&ps),
            arg(&pc),
            arg(&pk),
            arg(&pe),
            arg(&pkeys),
            arg(&n32),
            arg(&c),
            arg(&windows),
        ],
    )?;
    let buckets = windows as usize * half;
    let d_buckets = gpu.alloc(buckets * XYZZ_BYTES)?;
    gpu.memset(&d_buckets, 0)?; // all infinity (ZZ = 0)
    let pb = d_buckets.ptr();
    let cap = RUN_CHUNK as u32;
    let mut len = slots;
    let mut chunks = len.div_ceil(RUN_CHUNK);
    let mut carry_vals = gpu.alloc(chunks * XYZZ_BYTES)?;
    let mut carry_keys = gpu.alloc(chunks * 4)?;
    let (len64, pv, pck) = (len as u64, carry_vals.ptr(), carry_keys.ptr());
    gpu.launch(
        gpu.kernels.g1_bucket_runs_affine,
        chunks,
        BLOCK,
        0,
        &mut [
            arg(&pp),
            arg(&pe),
            arg(&pkeys),
            arg(&len64),
            arg(&cap),
            arg(&pb),
            arg(&pv),
            arg(&pck),
        ],
    )?;
    drop((d_entries, d_keys));
    // Fold the carries until one chunk is left (its first run cannot continue anything).
    while chunks > 1 {
        len = chunks;
        chunks = len.div_ceil(RUN_CHUNK);
        let next_vals = gpu.alloc(chunks * XYZZ_BYTES)?;
        let next_keys = gpu.alloc(chunks * 4)?;
        let (len64, pv, pck, nv, nk) = (
            len as u64,
            carry_vals.ptr(),
            carry_keys.ptr(),
            next_vals.ptr(),
            next_keys.ptr(),
        );
        gpu.launch(
            gpu.kernels.g1_bucket_runs_xyzz,
            chunks,
            BLOCK,
            0,
            &mut [
                arg(&pv),
                arg(&pck),
                arg(&len64),
                arg(&cap),
                arg(&pb),
                arg(&nv),
                arg(&nk),
            ],
        )?;
        carry_vals = next_vals;
        carry_keys = next_keys;
    }
    drop((carry_vals, carry_keys));
    let segs = segments(half);
    let d_segs = gpu.alloc(windows as usize * segs * XYZZ_BYTES)?;
    let (pg, segs32) = (d_segs.ptr(), segs as u32);
    gpu.launch(
        gpu.kernels.g1_window_segments,
        windows as usize * segs,
        BLOCK,
        0,
        &mut [arg(&pb), arg(&pg), arg(&c), arg(&windows), arg(&segs32)],
    )?;
    drop(d_buckets);
    let window_sums = reduce_groups(gpu, d_segs, windows as usize * segs, windows as usize)?;
    let window_sums = to_host(gpu, &window_sums, windows as usize)?;

    let ones = sum_points(gpu, &d_points, Some(&d_class), n)?;
    gpu.sync()?;

    // Horner over windows, top first: acc = acc * 2^c + W_w.
    let mut acc = G1Projective::identity();
    for w in window_sums.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += w;
    }
    gpu.set_timings(OpTimings {
        upload: t1 - t0,
        compute: t1.elapsed(),
        download: Duration::ZERO,
    });
    Ok(acc + ones)
}

/// Sum of the points (all of them), equal to `CpuBackend::sum_g1`.
pub(crate) fn sum_g1(gpu: &Gpu, points: &[G1Affine]) -> Result<G1Projective, GpuError> {
    let n = points.len();
    if n == 0 {
        return Ok(G1Projective::identity());
    }
    let _region = gpu.enter()?;
    let d_points = gpu.alloc(n * AFFINE_BYTES)?;
    let t0 = Instant::now();
    gpu.upload(&d_points, points)?;
    let t1 = Instant::now();
    let sum = sum_points(gpu, &d_points, None, n)?;
    gpu.set_timings(OpTimings {
        upload: t1 - t0,
        compute: t1.elapsed(),
        download: Duration::ZERO,
    });
    Ok(sum)
}

/// Sum of the n points in `d_points` whose class is 1 (or all when `class` is None).
fn sum_points(
    gpu: &Gpu,
    d_points: &DeviceBuffer,
    class: Option<&DeviceBuffer>,
    n: usize,
) -> Result<G1Projective, GpuError> {
    let threads = n.div_ceil(SUM_CHUNK);
    let d_partial = gpu.alloc(threads * XYZZ_BYTES)?;
    let (pp, pc, po) = (
        d_points.ptr(),
        class.map_or(0u64, |c| c.ptr()),
        d_partial.ptr(),
    );
    let (n32, chunk, t32) = (n as u32, SUM_CHUNK as u32, threads as u32);
    gpu.launch(
        gpu.kernels.g1_sum_partials,
        threads,
        BLOCK,
        0,
        &mut [
            arg(&pp),
            arg(&pc),
            arg(&po),
            arg(&n32),
            arg(&chunk),
            arg(&t32),
        ],
    )?;
    let total = reduce_groups(gpu, d_partial, threads, 1)?;
    Ok(to_host(gpu, &total, 1)?[0])
}

/// Tree reduction of `count` XYZZ points made of `groups` equal contiguous groups (each a
/// power of two long when groups > 1) down to one sum per group.
fn reduce_groups(
    gpu: &Gpu,
    mut buf: DeviceBuffer,
    mut count: usize,
    groups: usize,
) -> Result<DeviceBuffer, GpuError> {
    while count > groups {
        let per = count / groups;
        let chunk = REDUCE_CHUNK.min(per);
        debug_assert!(groups == 1 || per.is_multiple_of(chunk));
        let threads = if groups == 1 {
            count.div_ceil(chunk)
        } else {
            groups * (per / chunk)
        };
        let out = gpu.alloc(threads * XYZZ_BYTES)?;
        let (pi, po, c32, ch, t32) = (
            buf.ptr(),
            out.ptr(),
            count as u32,
            chunk as u32,
            threads as u32,
        );
        gpu.launch(
            gpu.kernels.g1_xyzz_sum_partials,
            threads,
            BLOCK,
            0,
            &mut [arg(&pi), arg(&po), arg(&c32), arg(&ch), arg(&t32)],
        )?;
        buf = out;
        count = threads;
    }
    Ok(buf)
}

/// Converts `count` XYZZ points to Jacobian on the device and reads them as blstrs points
/// (G1Projective is blst_p1, the layout of jacobian_t).
fn to_host(gpu: &Gpu, xyzz: &DeviceBuffer, count: usize) -> Result<Vec<G1Projective>, GpuError> {
    let d_jac = gpu.alloc(count * 144)?;
    let (pi, po, c32) = (xyzz.ptr(), d_jac.ptr(), count as u32);
    gpu.launch(
        gpu.kernels.g1_xyzz_to_jacobian,
        count,
        BLOCK,
        0,
        &mut [arg(&pi), arg(&po), arg(&c32)],
    )?;
    gpu.sync()?;
    let mut out = vec![G1Projective::identity(); count];
    gpu.download(&mut out, &d_jac)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows cover 256 bits (room for the last signed digit's carry) and the segment
    /// count divides the bucket count, as the kernels assume.
    #[test]
    fn window_shapes() {
        for log in 0..=30 {
            let c = window_bits(1 << log);
            assert!((4..=16).contains(&c));
            assert!(256u32.div_ceil(c) * c >= 256);
            let half = 1usize << (c - 1);
            assert_eq!(half % segments(half), 0);
        }
    }
}
