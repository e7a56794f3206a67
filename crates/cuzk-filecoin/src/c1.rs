//! Commit-phase-1 output (c1.json) as a prover receives it: the bare
//! `SealCommitPhase1Output` JSON, or lotus-bench's envelope
//! `{"SectorNum": n, "Phase1Out": "<base64 of the bare JSON>", "SectorSize": bytes}`.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use serde::{Deserialize, Serialize};

use crate::shape_marker::json_is_marked;

/// Every registered seal proof by its serialized name, the form a C1 file carries.
pub const REGISTERED_SEAL_PROOFS: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

#[derive(Debug, thiserror::Error)]
pub enum C1Error {
    #[error("C1 input is empty (expected a SealCommitPhase1Output JSON or a lotus-bench envelope)")]
    Empty,
    #[error("C1 input is not JSON: {0} (truncated or garbled file?)")]
    NotJson(serde_json::Error),
    #[error("C1 input is JSON but not an object (found {0})")]
    NotObject(&'static str),
    #[error("lotus-bench envelope: field `Phase1Out` is {0}")]
    BadEnvelope(String),
    #[error(
        "C1 output: unknown registered_proof {found:?}; known seal proofs: {known}"
    )]
    UnknownRegisteredProof { found: String, known: String },
    #[error("C1 output: field `registered_proof` is missing or not a string")]
    MissingRegisteredProof,
    #[error("C1 output does not match SealCommitPhase1Output for {proof:?}: {source}")]
    BadC1 {
        proof: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "sector size {given} bytes contradicts the C1 output, whose {proof:?} is for {actual} bytes"
    )]
    SectorSizeMismatch {
        given: u64,
        proof: RegisteredSealProof,
        actual: u64,
    },
}

/// The lotus-bench envelope around a C1 output.
#[derive(Debug, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "SectorNum")]
    pub sector_num: u64,
    #[serde(rename = "Phase1Out")]
    pub phase1_out: String,
    #[serde(rename = "SectorSize")]
    pub sector_size: u64,
}

/// A parsed C1 input.
#[derive(Debug)]
pub struct C1Input {
    pub output: SealCommitPhase1Output,
    /// From the envelope, when there was one.
    pub sector_num: Option<u64>,
    pub sector_size: Option<u64>,
    /// Whether the C1 JSON carries the shape-only mark
    /// ([`crate::shape_marker::SHAPE_ONLY_FIELD`]): benches take it, the daemon refuses it.
    pub shape_only: bool,
}

impl C1Input {
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.output.registered_proof
    }

    /// Refuses a sector size (from a request or envelope) that the proof type contradicts.
    pub fn check_sector_size(&self, given: u64) -> Result<(), C1Error> {
        let proof = self.registered_proof();
        let actual = u64::from(proof.sector_size());
        if given != actual {
            return Err(C1Error::SectorSizeMismatch { given, proof, actual });
        }
        Ok(())
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn parse_bare(value: serde_json::Value) -> Result<SealCommitPhase1Output, C1Error> {
    let obj = value.as_object().ok_or(C1Error::NotObject(json_kind(&value)))?;
    let name = obj
        .get("registered_proof")
        .and_then(|v| v.as_str())
        .ok_or(C1Error::MissingRegisteredProof)?
        .to_string();
    let known = REGISTERED_SEAL_PROOFS.iter().any(|p| {
        serde_json::to_value(p).ok().and_then(|v| v.as_str().map(|s| s == name)) == Some(true)
    });
    if !known {
        return Err(C1Error::UnknownRegisteredProof {
            found: name,
            known: REGISTERED_SEAL_PROOFS
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    serde_json::from_value(value).map_err(|source| C1Error::BadC1 { proof: name, source })
}

/// Parses either form. The envelope's sector size is checked against the proof type.
pub fn parse_c1(bytes: &[u8]) -> Result<C1Input, C1Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(C1Error::Empty);
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(C1Error::NotJson)?;
    let is_envelope = value.as_object().is_some_and(|o| o.contains_key("Phase1Out"));
    if !is_envelope {
        let shape_only = json_is_marked(&value);
        return Ok(C1Input {
            output: parse_bare(value)?,
            sector_num: None,
            sector_size: None,
            shape_only,
        });
    }
    let env: Envelope = serde_json::from_value(value)
        .map_err(|e| C1Error::BadEnvelope(format!("malformed envelope: {e}")))?;
    let inner = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.trim())
        .map_err(|e| C1Error::BadEnvelope(format!("not valid base64: {e}")))?;
    let inner_value: serde_json::Value = serde_json::from_slice(&inner)
        .map_err(|e| C1Error::BadEnvelope(format!("not a C1 JSON once decoded: {e}")))?;
    let shape_only = json_is_marked(&inner_value);
    let input = C1Input {
        output: parse_bare(inner_value)?,
        sector_num: Some(env.sector_num),
        sector_size: Some(env.sector_size),
        shape_only,
    };
    input.check_sector_size(env.sector_size)?;
    Ok(input)
}

/// Wraps a bare C1 JSON in lotus-bench's envelope.
pub fn to_envelope(c1_json: &[u8], sector_num: u64, sector_size: u64) -> Vec<u8> {
    let env = Envelope {
        sector_num,
        phase1_out: base64::engine::general_purpose::STANDARD.encode(c1_json),
        sector_size,
    };
    serde_json::to_vec(&env).expect("the envelope serializes")
}
