//! A PoSt or SnapDeals request's fields as JSON ([`KindInput`]): what the client sends for
//! `-t snap|wpost|winning --input PATH`, and what the fixtures write as `kinds/*.json`.

use serde::{Deserialize, Serialize};

use crate::prover_id_from_miner;

/// The request fields of one PoSt or SnapDeals proof, as Curio fills them: the JSON input of
/// `cuzk-bench single|batch -t snap|wpost|winning --input PATH` (base64 bytes), and of the
/// fixtures' `kinds/*.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KindInput {
    /// "winning", "window" or "snap".
    pub kind: String,
    /// The wire number of the registered proof (see `post::post_proof_from_wire`,
    /// `snap::update_proof_from_wire`).
    pub registered_proof: u64,
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_id: u64,
    #[serde(with = "b64")]
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    #[serde(with = "b64_vec")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    #[serde(with = "b64")]
    pub comm_r_old: Vec<u8>,
    #[serde(with = "b64")]
    pub comm_r_new: Vec<u8>,
    #[serde(with = "b64")]
    pub comm_d_new: Vec<u8>,
    /// The sector's comm_r (PoSt; the sector key's for SnapDeals), for verification.
    #[serde(with = "b64")]
    pub comm_r: Vec<u8>,
}

impl KindInput {
    /// The PoSt request these fields make, as the runner makes it from Curio's.
    pub fn post_request(&self) -> Result<crate::PoStRequest<'_>, crate::ProofError> {
        Ok(crate::PoStRequest {
            registered_proof: crate::post::post_proof_from_wire(self.registered_proof)?,
            randomness: &self.randomness,
            prover_id: prover_id_from_miner(self.miner_id),
            partition_index: self.partition_index as usize,
            vanilla_proofs: &self.vanilla_proofs,
        })
    }

    /// The SnapDeals request these fields make.
    pub fn snap_request(&self) -> Result<crate::SnapRequest<'_>, crate::ProofError> {
        Ok(crate::SnapRequest {
            registered_proof: crate::snap::update_proof_from_wire(self.registered_proof)?,
            vanilla_proofs: &self.vanilla_proofs,
            comm_r_old: &self.comm_r_old,
            comm_r_new: &self.comm_r_new,
            comm_d_new: &self.comm_d_new,
        })
    }
}

mod b64 {
    use base64::Engine;
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(s).map_err(serde::de::Error::custom)
    }
}

mod b64_vec {
    use base64::Engine;
    pub fn serialize<S: serde::Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let e: Vec<String> = v.iter().map(|b| base64::engine::general_purpose::STANDARD.encode(b)).collect();
        serde::Serialize::serialize(&e, s)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let v: Vec<String> = serde::Deserialize::deserialize(d)?;
        v.iter()
            .map(|s| base64::engine::general_purpose::STANDARD.decode(s).map_err(serde::de::Error::custom))
            .collect()
    }
}
