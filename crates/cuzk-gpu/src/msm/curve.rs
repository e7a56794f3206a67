//! The two groups an MSM runs over: their sizes on the device and their kernels.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;

use crate::kernels::{CurveKernels, Kernels};

/// One group's sizes and kernels.
pub(crate) trait Curve {
    type Affine: Copy + Send + Sync;
    type Proj: Group + Copy + Send + Sync;
    const AFFINE_BYTES: usize;
    const XYZZ_BYTES: usize;
    const JAC_BYTES: usize;
    const GROUP: u8;
    fn kernels(k: &Kernels) -> CurveKernels;
}

pub(crate) struct G1;
pub(crate) struct G2;

impl Curve for G1 {
    type Affine = G1Affine;
    type Proj = G1Projective;
    const AFFINE_BYTES: usize = 96;
    const XYZZ_BYTES: usize = 192;
    const JAC_BYTES: usize = 144;
    const GROUP: u8 = 1;
    fn kernels(k: &Kernels) -> CurveKernels {
        k.g1()
    }
}

impl Curve for G2 {
    type Affine = G2Affine;
    type Proj = G2Projective;
    const AFFINE_BYTES: usize = 192;
    const XYZZ_BYTES: usize = 384;
    const JAC_BYTES: usize = 288;
    const GROUP: u8 = 2;
    fn kernels(k: &Kernels) -> CurveKernels {
        k.g2()
    }
}

// Blstrs types are used on the device as they are (blst_p1/p2 and their affine forms).
const _: () = assert!(std::mem::size_of::<G1Affine>() == G1::AFFINE_BYTES);
const _: () = assert!(std::mem::size_of::<G1Projective>() == G1::JAC_BYTES);
const _: () = assert!(std::mem::size_of::<G2Affine>() == G2::AFFINE_BYTES);
const _: () = assert!(std::mem::size_of::<G2Projective>() == G2::JAC_BYTES);
