//! Projective points to affine, a whole slice at a time (one field inversion per call):
//! what the parameter setup and the shape-only random points share.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::{prime::PrimeCurveAffine, Group};

/// Projective to affine for a whole slice at once (blst's batch inversion: one field
/// inversion per call instead of one per point).
pub trait BatchAffine: Group + Send + Sync {
    type Affine: Copy + Send + Sync;
    fn identity_affine() -> Self::Affine;
    /// `p + a` (a mixed addition).
    fn add_affine(p: &Self, a: &Self::Affine) -> Self;
    fn to_affine_batch(points: &[Self], out: &mut [Self::Affine]);
}

macro_rules! batch_affine {
    ($proj:ty, $aff:ty, $raw:ty, $raw_aff:ty, $f:ident) => {
        impl BatchAffine for $proj {
            type Affine = $aff;
            fn identity_affine() -> $aff {
                <$aff>::identity()
            }
            fn add_affine(p: &$proj, a: &$aff) -> $proj {
                p + a
            }
            fn to_affine_batch(points: &[$proj], out: &mut [$aff]) {
                assert_eq!(points.len(), out.len());
                let ptrs: Vec<*const $raw> =
                    points.iter().map(|p| (p as *const $proj).cast::<$raw>()).collect();
                // SAFETY: blstrs' point types are repr(transparent) over blst's; `out`
                // holds one affine point per input.
                unsafe { blst::$f(out.as_mut_ptr().cast::<$raw_aff>(), ptrs.as_ptr(), ptrs.len()) }
            }
        }
    };
}
batch_affine!(G1Projective, G1Affine, blst::blst_p1, blst::blst_p1_affine, blst_p1s_to_affine);
batch_affine!(G2Projective, G2Affine, blst::blst_p2, blst::blst_p2_affine, blst_p2s_to_affine);
