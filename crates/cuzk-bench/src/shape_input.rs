//! Shape-only inputs of every kind as the benches read them: a PoRep C1 output
//! (cuzk_filecoin::shape_c1) or a WinningPoSt, WindowPoSt or SnapDeals kind input
//! (cuzk_filecoin::shape_kinds), both written by `gen-fixture --shape-only`, and the bench's
//! job of each (shape checks, no verifier: they cannot verify).

use anyhow::{bail, Context, Result};
use cuzk_engine::ProofKind;
use cuzk_filecoin::{parse_c1, PoRepJob, ProofJob};

/// The kind of a shape-only input: a kind input names its kind ("winning", "window",
/// "snap"); a C1 output has no such field.
pub fn input_kind(raw: &[u8]) -> Result<ProofKind> {
    let value: serde_json::Value = serde_json::from_slice(raw).context("not JSON: a C1 output or a kind input was expected")?;
    Ok(match value.get("kind").and_then(|k| k.as_str()) {
        None => ProofKind::PoRepSealCommit,
        Some("winning") => ProofKind::WinningPost,
        Some("window") => ProofKind::WindowPostPartition,
        Some("snap") => ProofKind::SnapDealsUpdate,
        Some(k) => bail!("kind {k:?}: expected winning, window or snap"),
    })
}

/// The bench's job of a shape-only input of `kind` (its shape checks; no verifier).
pub fn shape_only_job(kind: ProofKind, raw: &[u8]) -> Result<Box<dyn ProofJob>> {
    Ok(match kind {
        // The sector's identity only enters the verification, which the bench never runs.
        ProofKind::PoRepSealCommit => Box::new(cuzk_filecoin::SealCommit {
            job: PoRepJob::new(&parse_c1(raw)?)?,
            id: cuzk_filecoin::SectorIdentity { prover_id: [0; 32], sector_id: 0 },
        }),
        _ => {
            let input: cuzk_filecoin::kind_input::KindInput = serde_json::from_slice(raw).context("not a kind input")?;
            crate::synth_kinds::kind_job(&input, true)?
        }
    })
}

/// The sector size a shape-only input of `kind` proves.
pub fn sector_size_of(kind: ProofKind, raw: &[u8]) -> Result<u64> {
    Ok(match kind {
        ProofKind::PoRepSealCommit => u64::from(parse_c1(raw)?.registered_proof().sector_size()),
        _ => serde_json::from_slice::<cuzk_filecoin::kind_input::KindInput>(raw)?.sector_size,
    })
}
