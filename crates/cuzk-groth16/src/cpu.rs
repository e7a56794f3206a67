//! The CPU backend: our own multi-threaded radix-2 NTT, and MSMs split over threads, each
//! thread running blst's Pippenger on its share and blst's batch-affine addition for the
//! scalar-one part. It is the reference the GPU backend must match exactly.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::domain::vanishing_inverse_on_coset;
use crate::backend::{
    check_msm_args, check_quotient_args, ntt_log_size, Backend,
    BackendError, NttDirection, Scaling, Selection,
};

/// Multi-threaded CPU implementation of [`Backend`], on the global rayon pool.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    crate::h_msm_on_host!();
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn ntt(&self, values: &mut [Scalar], direction: NttDirection) -> Result<(), BackendError> {
        let log_n = ntt_log_size(values.len())?;
        let plan = direction.plan(log_n);
        if let Some(pre) = plan.pre {
            apply(values, pre);
        }
        fft(values, plan.root, log_n);
        if let Some(post) = plan.post {
            apply(values, post);
        }
        Ok(())
    }

    fn coset_quotient(
        &self,
        a: &mut [Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<(), BackendError> {
        check_quotient_args(a.len(), b.len(), c.len())?;
        let z_inv = vanishing_inverse_on_coset(a.len());
        a.par_iter_mut()
            .zip(b.par_iter().zip(c.par_iter()))
            .for_each(|(a, (b, c))| *a = (*a * b - c) * z_inv);
        Ok(())
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        msm::<G1>(bases, selection, scalars)
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
        scalars: &[Scalar],
    ) -> Result<G2Projective, BackendError> {
        msm::<G2>(bases, selection, scalars)
    }

    fn sum_g1(
        &self,
        bases: &[G1Affine],
        selection: Selection<'_>,
    ) -> Result<G1Projective, BackendError> {
        sum::<G1>(bases, selection)
    }

    fn sum_g2(
        &self,
        bases: &[G2Affine],
        selection: Selection<'_>,
    ) -> Result<G2Projective, BackendError> {
        sum::<G2>(bases, selection)
    }
}

/// Below this many elements a parallel split costs more than it saves.
const MIN_PARALLEL: usize = 1 << 12;
/// NTT elements that stay in a core's L2 cache (32 bytes each: 256 KiB).
const CACHE_CHUNK: usize = 1 << 13;

fn apply(values: &mut [Scalar], s: Scaling) {
    if s.is_constant() {
        values.par_iter_mut().for_each(|v| *v *= s.start);
    } else {
        distribute_powers(values, s.ratio, s.start);
    }
}

/// values[i] *= start * g^i
pub(crate) fn distribute_powers(values: &mut [Scalar], g: Scalar, start: Scalar) {
    let chunk = (values.len() / rayon::current_num_threads().max(1)).max(MIN_PARALLEL);
    values.par_chunks_mut(chunk).enumerate().for_each(|(k, part)| {
        let mut p = start * g.pow_vartime([(k * chunk) as u64]);
        for v in part {
            *v *= p;
            p *= g;
        }
    });
}

/// A pointer that may be shared between threads that write disjoint elements.
#[derive(Clone, Copy)]
struct SharedMut(*mut Scalar);
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl SharedMut {
    /// # Safety
    /// No other thread may access elements `i` or `j` concurrently.
    unsafe fn swap(self, i: usize, j: usize) {
        std::ptr::swap(self.0.add(i), self.0.add(j))
    }
}

fn bit_reverse_permute(values: &mut [Scalar], log_n: u32) {
    if log_n == 0 {
        return;
    }
    let n = values.len();
    let ptr = SharedMut(values.as_mut_ptr());
    (0..n).into_par_iter().with_min_len(MIN_PARALLEL).for_each(move |i| {
        let r = i.reverse_bits() >> (usize::BITS - log_n);
        if i < r {
            // SAFETY: each unordered pair {i, r} is swapped by exactly one index (the
            // smaller), and no other index touches either element.
            unsafe { ptr.swap(i, r) };
        }
    });
}

/// Iterative radix-2 decimation-in-time FFT with a precomputed twiddle table (one
/// multiplication per butterfly).
fn fft(values: &mut [Scalar], omega: Scalar, log_n: u32) {
    let n = values.len();
    if n == 1 {
        return;
    }
    bit_reverse_permute(values, log_n);
    // twiddles[j] = omega^j for j < n/2
    let half_n = n / 2;
    let mut twiddles = vec![Scalar::ZERO; half_n];
    let chunk = (half_n / rayon::current_num_threads().max(1)).max(MIN_PARALLEL);
    twiddles.par_chunks_mut(chunk).enumerate().for_each(|(k, part)| {
        let mut w = omega.pow_vartime([(k * chunk) as u64]);
        for t in part {
            *t = w;
            w *= omega;
        }
    });

    // Stages whose blocks fit in a cache-sized chunk run chunk by chunk, all of them while
    // the chunk is hot: half the passes over memory of a stage-by-stage loop.
    let local = CACHE_CHUNK.min(n);
    values.par_chunks_mut(local).for_each(|chunk| {
        let mut half = 1;
        while half < local {
            let stride = half_n / half;
            for blk in chunk.chunks_mut(2 * half) {
                let (lo, hi) = blk.split_at_mut(half);
                butterflies(lo, hi, &twiddles, 0, stride);
            }
            half *= 2;
        }
    });

    // The remaining stages have blocks larger than a chunk: split each block's halves.
    let mut half = local;
    while half < n {
        let stride = half_n / half;
        let piece = (half / (rayon::current_num_threads() * 4)).clamp(1, MIN_PARALLEL);
        for blk in values.chunks_mut(2 * half) {
            let (lo, hi) = blk.split_at_mut(half);
            lo.par_chunks_mut(piece)
                .zip(hi.par_chunks_mut(piece))
                .enumerate()
                .for_each(|(k, (lo, hi))| butterflies(lo, hi, &twiddles, k * piece, stride));
        }
        half *= 2;
    }
}

#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], twiddles: &[Scalar], j0: usize, stride: usize) {
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *v * twiddles[(j0 + j) * stride];
        *v = *u - t;
        *u += t;
    }
}

// ---- MSM ------------------------------------------------------------------------------

/// blst's multi-point entry points for one group, so that the MSM and batch addition are
/// written once for G1 and G2.
trait BlstGroup {
    type Affine: Sync;
    type Raw: Copy;
    type Proj: group::Group + Send;
    fn zero() -> Self::Raw;
    fn scratch_sizeof(n: usize) -> usize;
    /// # Safety
    /// `points` and `scalars` follow blst's pointer-array convention and hold `n` entries.
    unsafe fn pippenger(
        ret: *mut Self::Raw,
        points: *const *const Self::Affine,
        n: usize,
        scalars: *const *const u8,
        scratch: *mut blst::limb_t,
    );
    /// # Safety
    /// `points` follows blst's pointer-array convention and holds `n` entries.
    unsafe fn add(ret: *mut Self::Raw, points: *const *const Self::Affine, n: usize);
    fn proj(raw: Self::Raw) -> Self::Proj;
}

struct G1;
struct G2;

// blstrs' affine types are `repr(transparent)` over blst's, so a `&[G1Affine]` is a
// contiguous array of `blst_p1_affine`.
impl BlstGroup for G1 {
    type Affine = G1Affine;
    type Raw = blst::blst_p1;
    type Proj = G1Projective;
    fn zero() -> Self::Raw {
        blst::blst_p1::default()
    }
    fn scratch_sizeof(n: usize) -> usize {
        unsafe { blst::blst_p1s_mult_pippenger_scratch_sizeof(n) }
    }
    unsafe fn pippenger(
        ret: *mut Self::Raw,
        points: *const *const G1Affine,
        n: usize,
        scalars: *const *const u8,
        scratch: *mut blst::limb_t,
    ) {
        blst::blst_p1s_mult_pippenger(ret, points.cast(), n, scalars, 255, scratch)
    }
    unsafe fn add(ret: *mut Self::Raw, points: *const *const G1Affine, n: usize) {
        blst::blst_p1s_add(ret, points.cast(), n)
    }
    fn proj(raw: Self::Raw) -> G1Projective {
        // SAFETY: G1Projective is `repr(transparent)` over blst_p1.
        unsafe { std::mem::transmute::<blst::blst_p1, G1Projective>(raw) }
    }
}

impl BlstGroup for G2 {
    type Affine = G2Affine;
    type Raw = blst::blst_p2;
    type Proj = G2Projective;
    fn zero() -> Self::Raw {
        blst::blst_p2::default()
    }
    fn scratch_sizeof(n: usize) -> usize {
        unsafe { blst::blst_p2s_mult_pippenger_scratch_sizeof(n) }
    }
    unsafe fn pippenger(
        ret: *mut Self::Raw,
        points: *const *const G2Affine,
        n: usize,
        scalars: *const *const u8,
        scratch: *mut blst::limb_t,
    ) {
        blst::blst_p2s_mult_pippenger(ret, points.cast(), n, scalars, 255, scratch)
    }
    unsafe fn add(ret: *mut Self::Raw, points: *const *const G2Affine, n: usize) {
        blst::blst_p2s_add(ret, points.cast(), n)
    }
    fn proj(raw: Self::Raw) -> G2Projective {
        // SAFETY: G2Projective is `repr(transparent)` over blst_p2.
        unsafe { std::mem::transmute::<blst::blst_p2, G2Projective>(raw) }
    }
}

/// Work per thread: enough chunks to balance, each big enough for Pippenger to pay off.
fn msm_chunk(n: usize) -> usize {
    (n / (rayon::current_num_threads() * 2).max(1)).max(1 << 10)
}

/// Pointers to the selected bases of `range` (positions within the selection).
fn base_pointers<A>(
    bases: &[A],
    selection: Selection<'_>,
    range: std::ops::Range<usize>,
) -> Vec<*const A> {
    match selection {
        Selection::All => bases[range].iter().map(|b| b as *const A).collect(),
        Selection::Indices(idx) => idx[range].iter().map(|&i| &bases[i as usize] as *const A).collect(),
    }
}

/// One scalar in blst's little-endian canonical form. Sums of chunks are exact, so the
/// split does not change the result.
fn msm<B: BlstGroup>(
    bases: &[B::Affine],
    selection: Selection<'_>,
    scalars: &[Scalar],
) -> Result<B::Proj, BackendError> {
    check_msm_args(bases.len(), selection, scalars.len())?;
    let n = scalars.len();
    let chunk = msm_chunk(n);
    let parts: Vec<B::Proj> = (0..n)
        .into_par_iter()
        .step_by(chunk)
        .map(|start| {
            let range = start..(start + chunk).min(n);
            let points = base_pointers(bases, selection, range.clone());
            let bytes: Vec<[u8; 32]> = scalars[range].iter().map(|s| s.to_repr()).collect();
            let scalar_ptrs: Vec<*const u8> = bytes.iter().map(|b| b.as_ptr()).collect();
            let m = points.len();
            let mut scratch = vec![0 as blst::limb_t; B::scratch_sizeof(m).div_ceil(8)];
            let mut ret = B::zero();
            // SAFETY: `points` and `scalar_ptrs` are full pointer arrays of `m` live entries.
            unsafe {
                if m == 1 {
                    // blst's pointer-array convention needs a second entry.
                    let p = [points[0], std::ptr::null()];
                    let s = [scalar_ptrs[0], std::ptr::null()];
                    B::pippenger(&mut ret, p.as_ptr(), 1, s.as_ptr(), scratch.as_mut_ptr());
                } else {
                    B::pippenger(&mut ret, points.as_ptr(), m, scalar_ptrs.as_ptr(), scratch.as_mut_ptr());
                }
            }
            B::proj(ret)
        })
        .collect();
    Ok(parts.into_iter().fold(<B::Proj as group::Group>::identity(), |acc, p| acc + p))
}

fn sum<B: BlstGroup>(bases: &[B::Affine], selection: Selection<'_>) -> Result<B::Proj, BackendError> {
    selection.check(bases.len())?;
    let n = selection.len(bases.len());
    let chunk = msm_chunk(n).max(1 << 14);
    let parts: Vec<B::Proj> = (0..n)
        .into_par_iter()
        .step_by(chunk)
        .map(|start| {
            let mut points = base_pointers(bases, selection, start..(start + chunk).min(n));
            let m = points.len();
            points.push(std::ptr::null());
            let mut ret = B::zero();
            // SAFETY: a pointer array of `m` live entries, null-terminated for m == 1.
            unsafe { B::add(&mut ret, points.as_ptr(), m) };
            B::proj(ret)
        })
        .collect();
    Ok(parts.into_iter().fold(<B::Proj as group::Group>::identity(), |acc, p| acc + p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{coset_generator, root_of_unity};
    use group::{prime::PrimeCurveAffine, Curve, Group};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Reference: the textbook O(n^2) DFT.
    fn dft(values: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        let n = values.len();
        (0..n)
            .map(|i| {
                let wi = omega.pow_vartime([i as u64]);
                let mut acc = Scalar::ZERO;
                let mut w = Scalar::ONE;
                for v in values {
                    acc += *v * w;
                    w *= wi;
                }
                acc
            })
            .collect()
    }

    #[test]
    fn ntt_matches_naive_dft_and_inverts() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for log_n in 0..=9u32 {
            let n = 1usize << log_n;
            let v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let mut f = v.clone();
            CpuBackend.ntt(&mut f, NttDirection::Forward).unwrap();
            assert_eq!(f, dft(&v, root_of_unity(log_n)), "forward, n = {n}");
            CpuBackend.ntt(&mut f, NttDirection::Inverse).unwrap();
            assert_eq!(f, v, "inverse, n = {n}");
            let mut cf = v.clone();
            CpuBackend.ntt(&mut cf, NttDirection::CosetForward).unwrap();
            let g = coset_generator();
            let shifted: Vec<Scalar> =
                v.iter().enumerate().map(|(i, x)| *x * g.pow_vartime([i as u64])).collect();
            assert_eq!(cf, dft(&shifted, root_of_unity(log_n)), "coset forward, n = {n}");
            CpuBackend.ntt(&mut cf, NttDirection::CosetInverse).unwrap();
            assert_eq!(cf, v, "coset inverse, n = {n}");
        }
        // a size large enough to take the parallel and chunked paths: spot-check
        // evaluations by Horner's rule, then the round trip
        let n = 1 << 16;
        let v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let mut f = v.clone();
        CpuBackend.ntt(&mut f, NttDirection::Forward).unwrap();
        let omega = root_of_unity(16);
        for i in [0usize, 1, 4097, 40000, n - 1] {
            let x = omega.pow_vartime([i as u64]);
            let horner = v.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
            assert_eq!(f[i], horner, "evaluation {i} of a 2^16 NTT");
        }
        let mut f = v.clone();
        CpuBackend.ntt(&mut f, NttDirection::CosetForward).unwrap();
        CpuBackend.ntt(&mut f, NttDirection::CosetInverse).unwrap();
        assert_eq!(f, v);
        assert!(matches!(
            CpuBackend.ntt(&mut f[..3], NttDirection::Forward),
            Err(BackendError::BadNttSize(3))
        ));
    }

    #[test]
    fn msm_matches_naive_sum() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for n in [1usize, 2, 3, 100, 3000] {
            let bases: Vec<G1Affine> =
                (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let bases2: Vec<G2Affine> =
                (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let scalars: Vec<Scalar> = (0..n)
                .map(|i| match i % 3 {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    _ => Scalar::random(&mut rng),
                })
                .collect();
            let naive: G1Projective = bases.iter().zip(&scalars).map(|(b, s)| *b * s).sum();
            let got = CpuBackend.msm_g1(&bases, Selection::All, &scalars).unwrap();
            assert_eq!(got, naive, "g1 n = {n}");
            let naive2: G2Projective = bases2.iter().zip(&scalars).map(|(b, s)| *b * s).sum();
            let got2 = CpuBackend.msm_g2(&bases2, Selection::All, &scalars).unwrap();
            assert_eq!(got2, naive2, "g2 n = {n}");

            let idx: Vec<u32> = (0..n as u32).rev().step_by(2).collect();
            let naive_sum: G1Projective = idx.iter().map(|&i| G1Projective::from(bases[i as usize])).sum();
            assert_eq!(CpuBackend.sum_g1(&bases, Selection::Indices(&idx)).unwrap(), naive_sum);
            let sub: Vec<Scalar> = idx.iter().map(|&i| scalars[i as usize]).collect();
            let naive_sub: G1Projective = idx.iter().map(|&i| bases[i as usize] * scalars[i as usize]).sum();
            assert_eq!(CpuBackend.msm_g1(&bases, Selection::Indices(&idx), &sub).unwrap(), naive_sub);
        }
        let bases = vec![G1Affine::generator(); 2];
        assert!(matches!(
            CpuBackend.msm_g1(&bases, Selection::Indices(&[0, 5]), &[Scalar::ONE, Scalar::ONE]),
            Err(BackendError::IndexOutOfRange { index: 5, bases: 2 })
        ));
    }
}
