//! The error of every proof kind's job (PoRep C2, PoSt, SnapDeals).

use cuzk_groth16::ProveError;

/// What every message about a shape-only input says ([`crate::shape_marker`]).
pub const SHAPE_ONLY_NOTE: &str = "shape-only: cannot verify";

#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    /// The request's input is wrong; the message names the field and what was expected.
    #[error("{0}")]
    BadInput(String),
    /// The input is a shape-only one (`cuzk-lab gen-fixture --shape-only`: random contents,
    /// a real input's structure, for benches); `what` names the field that carries it.
    #[error(
        "{what} is a shape-only input ({note}): random contents made by `cuzk-lab \
         gen-fixture --shape-only` for benches; the daemon proves only real inputs",
        note = SHAPE_ONLY_NOTE
    )]
    ShapeOnly { what: String },
    #[error("building the circuit of partition {partition} failed: {reason}")]
    Circuit { partition: usize, reason: String },
    #[error("synthesizing partition {partition} failed: {reason}")]
    Synthesis { partition: usize, reason: String },
    #[error(
        "partition {partition}: the vanilla proof does not satisfy constraint {constraint} of \
         the circuit (corrupt or tampered vanilla proof, or one made for another sector)"
    )]
    Unsatisfied { partition: usize, constraint: usize },
    #[error("proving partition {partition}: {source}")]
    Prove {
        partition: usize,
        #[source]
        source: ProveError,
    },
    #[error("aggregating the NI-PoRep partition proofs failed: {0}")]
    Aggregate(String),
    #[error("verifying the proof with filecoin-proofs failed: {0}")]
    Verify(String),
    #[error(
        "the proof does not verify with filecoin-proofs (an input not the one the vanilla \
         proofs were made for, or wrong parameters); it was discarded"
    )]
    DoesNotVerify,
}

impl ProofError {
    /// Partition `partition`'s proving error: an unsatisfied constraint the backend found
    /// while evaluating a deferred witness is the input's fault, as synthesis's check is.
    pub fn proving(partition: usize, source: ProveError) -> ProofError {
        match source {
            ProveError::Unsatisfied { constraint } => ProofError::Unsatisfied { partition, constraint },
            source => ProofError::Prove { partition, source },
        }
    }

    /// Whether the request is at fault (its input), rather than the prover.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ProofError::BadInput(_) | ProofError::ShapeOnly { .. } | ProofError::Unsatisfied { .. })
    }
}
