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

    /// Concatenation of the proofs' bytes, as filecoin-proofs writes a multi-partition proof.
    pub fn concat(proofs: &[Proof]) -> Vec<u8> {
        proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }
}
