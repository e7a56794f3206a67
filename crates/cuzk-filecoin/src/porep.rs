//! PoRep commit phase 2 with cuzk's prover: the partition circuits of storage-proofs-porep,
//! synthesized into [`PartitionWitness`]es and proved through a [`Backend`], output exactly
//! as filecoin-proofs' `seal_commit_phase2` writes it, and verified with filecoin-proofs'
//! `verify_seal` before it is returned.

use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use cuzk_groth16::{prove, Backend, PartitionWitness, Proof, ProveError, ProveTimings, Srs};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, PoRepConfig, SealCommitOutput,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use rand::rngs::OsRng;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use crate::c1::C1Input;

#[derive(Debug, thiserror::Error)]
pub enum PoRepError {
    #[error("C1 output is inconsistent: {0}")]
    BadInput(String),
    #[error("building the circuit of partition {partition} failed: {reason}")]
    Circuit { partition: usize, reason: String },
    #[error("synthesizing partition {partition} failed: {reason}")]
    Synthesis { partition: usize, reason: String },
    #[error(
        "partition {partition}: the vanilla proof does not satisfy constraint {constraint} of \
         the circuit (corrupt or tampered C1 output, or one made for another sector)"
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
        "the proof does not verify with filecoin-proofs (prover id or sector id not the ones \
         the sector was sealed with, or wrong parameters); it was discarded"
    )]
    DoesNotVerify,
}

/// Where the time of one PoRep C2 went.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoRepTimings {
    pub partitions: usize,
    pub circuits: Duration,
    pub synthesis: Duration,
    pub prove: ProveTimings,
    pub aggregate: Duration,
    pub verify: Duration,
}

/// What identifies the sector beyond its C1 output.
#[derive(Clone, Copy, Debug)]
pub struct SectorIdentity {
    pub prover_id: [u8; 32],
    pub sector_id: u64,
}

/// Filecoin's prover id of a miner actor: the unsigned LEB128 of the actor id (the payload of
/// its ID address), zero-padded to 32 bytes.
pub fn prover_id_from_miner(actor_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = actor_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// The blinding values (r, s) of each partition's proof.
#[derive(Clone, Debug)]
pub enum Blinding {
    /// Fresh random values from the OS: what production proofs must use.
    Random,
    /// Given values, one pair per partition: for comparing backends bit for bit.
    Fixed(Vec<(Fr, Fr)>),
}

/// Proves a sector's C1 output. `srs` must be the parameters of its registered proof (see
/// [`crate::params::seal_params_path`]); filecoin-proofs must already point at the same
/// parameter directory for the verifying key ([`crate::params::use_proof_dirs`]).
pub fn prove_porep_c2(
    c1: &C1Input,
    id: SectorIdentity,
    srs: &Srs,
    backend: &dyn Backend,
) -> Result<(Vec<u8>, PoRepTimings), PoRepError> {
    prove_porep_c2_with(c1, id, srs, backend, &Blinding::Random)
}

/// [`prove_porep_c2`] with chosen blinding values.
pub fn prove_porep_c2_with(
    c1: &C1Input,
    id: SectorIdentity,
    srs: &Srs,
    backend: &dyn Backend,
    blinding: &Blinding,
) -> Result<(Vec<u8>, PoRepTimings), PoRepError> {
    let size = u64::from(c1.registered_proof().sector_size());
    with_shape!(size, prove_shape, &c1.output, id, srs, backend, blinding)
}

/// Verifies C2 output bytes with filecoin-proofs, as the chain would.
pub fn verify_porep_c2(
    c1: &SealCommitPhase1Output,
    id: SectorIdentity,
    proof: &[u8],
) -> Result<bool, PoRepError> {
    filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        id.prover_id,
        SectorId::from(id.sector_id),
        c1.ticket,
        c1.seed,
        proof,
    )
    .map_err(|e| PoRepError::Verify(format!("{e:#}")))
}

fn prove_shape<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
    id: SectorIdentity,
    srs: &Srs,
    backend: &dyn Backend,
    blinding: &Blinding,
) -> Result<(Vec<u8>, PoRepTimings), PoRepError> {
    let bad = |e: anyhow::Error| PoRepError::BadInput(format!("{e:#}"));
    let proof_type: RegisteredSealProof = c1.registered_proof;
    let config: PoRepConfig = proof_type.as_v1_config();
    let mut t = PoRepTimings::default();

    if c1.comm_d == [0; 32] || c1.comm_r == [0; 32] {
        return Err(PoRepError::BadInput("all-zero comm_d or comm_r".into()));
    }
    if c1.seed == [0; 32] {
        return Err(PoRepError::BadInput("all-zero PoRep challenge seed".into()));
    }
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        c1.vanilla_proofs.clone().try_into().map_err(bad)?;
    if vanilla.is_empty() || vanilla.iter().any(|p| p.is_empty()) {
        return Err(PoRepError::BadInput("no vanilla proofs".into()));
    }
    if vanilla.len() != usize::from(config.partitions) {
        return Err(PoRepError::BadInput(format!(
            "{} partitions of vanilla proofs, {proof_type:?} has {}",
            vanilla.len(),
            usize::from(config.partitions)
        )));
    }
    if let Blinding::Fixed(pairs) = blinding {
        if pairs.len() != vanilla.len() {
            return Err(PoRepError::BadInput(format!(
                "{} blinding pairs for {} partitions",
                pairs.len(),
                vanilla.len()
            )));
        }
    }
    let replica_fr: Fr = c1.replica_id.into();
    let public_inputs = stacked::PublicInputs::<
        <Tree::Hasher as Hasher>::Domain,
        DefaultPieceDomain,
    > {
        replica_id: replica_fr.into(),
        tau: Some(stacked::Tau {
            comm_d: DefaultPieceDomain::try_from_bytes(&c1.comm_d).map_err(bad)?,
            comm_r: as_safe_commitment(&c1.comm_r, "comm_r").map_err(bad)?,
        }),
        k: None,
        seed: Some(c1.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).map_err(bad)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    let public_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(bad)?;

    // One partition at a time: synthesis and proof of partition k hold one witness in memory.
    let mut proofs: Vec<Proof> = Vec::with_capacity(vanilla.len());
    for (k, partition) in vanilla.iter().enumerate() {
        let start = Instant::now();
        let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &public_inputs,
            Default::default(),
            partition,
            &public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| PoRepError::Circuit {
            partition: k,
            reason: format!("{e:#}"),
        })?;
        t.circuits += start.elapsed();

        let start = Instant::now();
        let witness = PartitionWitness::synthesize(circuit).map_err(|e| PoRepError::Synthesis {
            partition: k,
            reason: e.to_string(),
        })?;
        if let Some(constraint) = witness.first_unsatisfied() {
            return Err(PoRepError::Unsatisfied { partition: k, constraint });
        }
        t.synthesis += start.elapsed();

        let (r, s) = match blinding {
            Blinding::Random => cuzk_groth16::prover::random_blinding(&mut OsRng),
            Blinding::Fixed(pairs) => pairs[k],
        };
        let (proof, pt) = prove(backend, srs, witness, r, s)
            .map_err(|source| PoRepError::Prove { partition: k, source })?;
        t.prove.accumulate(&pt);
        proofs.push(proof);
    }
    t.partitions = proofs.len();
    let mut bytes = Proof::concat(&proofs);

    if config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        let start = Instant::now();
        bytes = filecoin_proofs::aggregate_seal_commit_proofs::<Tree>(
            &config,
            &[c1.comm_r],
            &[c1.seed],
            &[SealCommitOutput { proof: bytes }],
            bellperson::groth16::aggregate::AggregateVersion::V2,
        )
        .map_err(|e| PoRepError::Aggregate(format!("{e:#}")))?;
        t.aggregate = start.elapsed();
    }

    let start = Instant::now();
    let ok = verify_porep_c2(c1, id, &bytes)?;
    t.verify = start.elapsed();
    if !ok {
        return Err(PoRepError::DoesNotVerify);
    }
    Ok((bytes, t))
}
