//! The Groth16 proof and its byte format (bellperson's: A, B, C compressed, 192 bytes).

use blstrs::{G1Affine, G2Affine};
use group::GroupEncoding;

/// Bytes of one proof: compressed G1 (48) + G2 (96) + G1 (48).
pub const PROOF_BYTES: usize = 192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

impl Proof {
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(self.a.to_bytes().as_ref());
        out[48..144].copy_from_slice(self.b.to_bytes().as_ref());
        out[144..].copy_from_slice(self.c.to_bytes().as_ref());
        out
    }

    /// The inverse of [`Proof::to_bytes`]: None when a point is not a valid compressed point
    /// of its group's prime-order subgroup.
    pub fn from_bytes(bytes: &[u8; PROOF_BYTES]) -> Option<Proof> {
        let g1 = |b: &[u8]| {
            let mut repr = <G1Affine as GroupEncoding>::Repr::default();
            repr.as_mut().copy_from_slice(b);
            Option::<G1Affine>::from(G1Affine::from_bytes(&repr))
        };
        let mut repr = <G2Affine as GroupEncoding>::Repr::default();
        repr.as_mut().copy_from_slice(&bytes[48..144]);
        let b = Option::<G2Affine>::from(G2Affine::from_bytes(&repr))?;
        Some(Proof { a: g1(&bytes[..48])?, b, c: g1(&bytes[144..])? })
    }

    /// Concatenation of the proofs' bytes, as filecoin-proofs writes a multi-partition proof.
    pub fn concat(proofs: &[Proof]) -> Vec<u8> {
        proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::{Curve, Group};

    #[test]
    fn bytes_round_trip_and_a_bad_point_is_refused() {
        let mut rng = rand::thread_rng();
        let p = Proof {
            a: blstrs::G1Projective::random(&mut rng).to_affine(),
            b: blstrs::G2Projective::random(&mut rng).to_affine(),
            c: blstrs::G1Projective::random(&mut rng).to_affine(),
        };
        let bytes = p.to_bytes();
        assert_eq!(Proof::from_bytes(&bytes), Some(p));
        // The compression flag cleared: not an encoding of any point.
        let mut bad = bytes;
        bad[144] &= 0x7f;
        assert_eq!(Proof::from_bytes(&bad), None);
    }
}
