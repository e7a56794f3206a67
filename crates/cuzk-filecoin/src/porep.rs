//! PoRep commit phase 2 with cuzk's prover: the partition circuits of storage-proofs-porep,
//! synthesized into [`PartitionWitness`]es and proved through a [`Backend`], output exactly
//! as filecoin-proofs' `seal_commit_phase2` writes it, and verified with filecoin-proofs'
//! `verify_seal` before it is returned. Witness-only synthesis runs the same circuit through
//! [`crate::porep_circuit`], whose labels' and tree D path's SHA-256 are computed natively
//! ([`LabelHashing`]).


use blstrs::Scalar as Fr;
use cuzk_groth16::{Backend, PartitionWitness, Proof, Srs};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, PoRepConfig, SealCommitOutput,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use crate::c1::C1Input;
use crate::error::ProofError;
use crate::job::{
    check_partition, circuit_error, finish_verified, prove_job, refuse_unsatisfied, synthesize_partition, Blinding,
    FinishTimings, JobTimings, ProofJob, SynthesisTimings,
};
use crate::vanilla_shape::{check_vanilla_shape, hex_le, is_field_element, ExpectedShape, VanillaShapeError};

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

/// Proves a sector's C1 output. `srs` must be the parameters of its registered proof (see
/// [`crate::params::seal_params_path`]); filecoin-proofs must already point at the same
/// parameter directory for the verifying key ([`crate::params::use_proof_dirs`]).
pub fn prove_porep_c2(
    c1: &C1Input,
    id: SectorIdentity,
    srs: &Srs,
    backend: &dyn Backend,
) -> Result<(Vec<u8>, JobTimings), ProofError> {
    prove_porep_c2_with(c1, id, srs, backend, &Blinding::Random)
}

/// [`prove_porep_c2`] with chosen blinding values.
pub fn prove_porep_c2_with(
    c1: &C1Input,
    id: SectorIdentity,
    srs: &Srs,
    backend: &dyn Backend,
    blinding: &Blinding,
) -> Result<(Vec<u8>, JobTimings), ProofError> {
    let job = SealCommit { job: PoRepJob::new(c1)?, id };
    prove_job(&job, srs, backend, blinding)
}

/// A PoRep C2 split into its stages, so that a scheduler can synthesize partition k + 1 on
/// the CPU while partition k is proved, and hold as many witnesses as its memory allows:
/// [`PoRepJob::new`] checks the input, [`PoRepJob::synthesize`] makes one partition's
/// witness, [`PoRepJob::finish`] turns the partition proofs into the output bytes and
/// verifies them. [`prove_porep_c2`] is these stages in order.
pub struct PoRepJob {
    shape: Box<dyn ShapeJob>,
    c1: SealCommitPhase1Output,
}

impl std::fmt::Debug for PoRepJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoRepJob")
            .field("registered_proof", &self.c1.registered_proof)
            .field("partitions", &self.shape.partitions())
            .finish()
    }
}

impl PoRepJob {
    /// Checks the C1 output, its vanilla proofs' shape included (see
    /// [`crate::vanilla_shape`]: a malformed one is refused here, in milliseconds, as
    /// [`ProofError::BadInput`], never left to panic in synthesis), and prepares its partition
    /// circuits' inputs.
    pub fn new(c1: &C1Input) -> Result<PoRepJob, ProofError> {
        let size = u64::from(c1.registered_proof().sector_size());
        let shape = with_shape!(size, shape_job, &c1.output)?;
        Ok(PoRepJob { shape, c1: c1.output.clone() })
    }

    pub fn partitions(&self) -> usize {
        self.shape.partitions()
    }

    /// Partition `k`'s witness, checked to satisfy its circuit (a tampered C1 output stops
    /// here, before any proving).
    pub fn synthesize(&self, k: usize) -> Result<(PartitionWitness, SynthesisTimings), ProofError> {
        self.synthesize_with(k, crate::synthesis::SynthesisPath::Compiled)
    }

    /// As [`PoRepJob::synthesize`] on the given path (tests and benches compare them).
    pub fn synthesize_with(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings), ProofError> {
        refuse_unsatisfied(k, self.synthesize_unchecked(k, path)?)
    }

    /// Partition `k`'s witness and its first constraint with a * b != c, **not refused**:
    /// for benches on shape-only inputs only (`crate::shape_c1`: they cannot verify). No
    /// proving path calls this; [`PoRepJob::synthesize`] refuses an unsatisfied witness.
    pub fn synthesize_unchecked(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        self.synthesize_unchecked_with(k, path, LabelHashing::default())
    }

    /// As [`PoRepJob::synthesize_unchecked`] with the labels' SHA-256 computed as `labels`
    /// says (tests and benches compare the two; the witness is the same).
    pub fn synthesize_unchecked_with(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
        labels: LabelHashing,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        check_partition(k, self.partitions())?;
        self.shape.synthesize(k, path, labels)
    }

    /// The key of this proof type's compiled circuit (see [`crate::synthesis`]).
    pub fn circuit_key(&self) -> String {
        circuit_key(self.c1.registered_proof)
    }

    /// The output bytes from all partition proofs, in order, exactly as filecoin-proofs'
    /// `seal_commit_phase2` writes them, verified with `verify_seal`.
    pub fn finish(&self, proofs: &[Proof], id: SectorIdentity) -> Result<(Vec<u8>, FinishTimings), ProofError> {
        finish_verified(
            proofs,
            self.partitions(),
            |bytes| self.shape.output(bytes, &self.c1),
            |bytes| verify_porep_c2(&self.c1, id, bytes),
        )
    }
}

/// A [`PoRepJob`] with the sector it is for: the [`ProofJob`] of a PoRep C2.
pub struct SealCommit {
    pub job: PoRepJob,
    pub id: SectorIdentity,
}

impl ProofJob for SealCommit {
    fn partitions(&self) -> usize {
        self.job.partitions()
    }
    fn synthesize_unchecked(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        self.job.synthesize_unchecked(k, path)
    }
    fn finish(&self, proofs: &[Proof]) -> Result<(Vec<u8>, FinishTimings), ProofError> {
        self.job.finish(proofs, self.id)
    }
    fn circuit_key(&self) -> String {
        self.job.circuit_key()
    }
}

/// How the compiled path's witness-only synthesis computes the SHA-256 of the labels and
/// of tree D's inclusion paths (the reference path always runs storage-proofs' circuit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LabelHashing {
    /// [`crate::porep_circuit`]: natively, with the gadget's allocations (the default).
    #[default]
    Native,
    /// storage-proofs' circuit and its SHA-256 gadgets, as recorded.
    Gadget,
}

/// The sector-shape-specific part of a [`PoRepJob`] (filecoin-proofs' types are generic over
/// the Merkle tree shape; this erases it).
trait ShapeJob: Send + Sync {
    fn partitions(&self) -> usize;
    /// The witness, its timings and its first unsatisfied constraint.
    fn synthesize(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
        labels: LabelHashing,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError>;
    /// Partition proofs (concatenated) to output bytes: as they are, or aggregated (NI-PoRep).
    fn output(&self, proofs: Vec<u8>, c1: &SealCommitPhase1Output) -> Result<Vec<u8>, ProofError>;
}

/// One compiled circuit per seal proof type: its partitions share one structure.
fn circuit_key(proof: RegisteredSealProof) -> String {
    format!("porep-{proof:?}")
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Drg<Tree> = StackedDrg<'static, Tree, DefaultPieceHasher>;

struct Shaped<Tree: 'static + MerkleTreeTrait> {
    proof_type: RegisteredSealProof,
    config: PoRepConfig,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    public_inputs: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    vanilla_params: stacked::PublicParams<Tree>,
}

fn shape_job<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
) -> Result<Box<dyn ShapeJob>, ProofError> {
    let bad = |e: anyhow::Error| ProofError::BadInput(format!("C1 output is inconsistent: {e:#}"));
    let bad_shape = |e: VanillaShapeError| ProofError::BadInput(format!("C1 output is inconsistent: {e}"));
    let proof_type: RegisteredSealProof = c1.registered_proof;
    let config: PoRepConfig = proof_type.as_v1_config();
    if c1.comm_d == [0; 32] || c1.comm_r == [0; 32] {
        return Err(ProofError::BadInput("C1 output is inconsistent: all-zero comm_d or comm_r".into()));
    }
    if c1.seed == [0; 32] {
        return Err(ProofError::BadInput("C1 output is inconsistent: all-zero PoRep challenge seed".into()));
    }
    // storage-proofs converts these to Fr with a panic on a value that is not a field element
    // (comm_r is checked by `as_safe_commitment` below; comm_d's domain is not).
    let replica_bytes = c1.replica_id.into_bytes();
    for (field, bytes) in [("replica_id", &replica_bytes[..]), ("comm_d", &c1.comm_d[..])] {
        if !is_field_element(bytes) {
            return Err(bad_shape(VanillaShapeError::NotAScalar { field, found: hex_le(bytes) }));
        }
    }
    let replica_fr: Fr = c1.replica_id.into();
    let public_inputs = stacked::PublicInputs {
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
    let public_params =
        <Compound<Tree> as CompoundProof<Drg<Tree>, _>>::setup(&setup).map_err(bad)?;
    let vanilla_params = public_params.vanilla_params;

    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        c1.vanilla_proofs.clone().try_into().map_err(bad)?;
    // Before any circuit is built: storage-proofs asserts on the shape during synthesis.
    let expected = ExpectedShape::new(proof_type, &config, &vanilla_params).map_err(bad_shape)?;
    check_vanilla_shape(&expected, &vanilla_params, &public_inputs, &vanilla).map_err(bad_shape)?;
    Ok(Box::new(Shaped {
        proof_type,
        config,
        vanilla,
        public_inputs,
        vanilla_params,
    }))
}

impl<Tree: 'static + MerkleTreeTrait> ShapeJob for Shaped<Tree> {
    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn synthesize(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
        labels: LabelHashing,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        if labels == LabelHashing::Native && path != crate::synthesis::SynthesisPath::Reference {
            return self.synthesize_circuits(k, path, |group| {
                crate::porep_circuit::PoRepCircuit::new(&self.public_inputs, group)
            });
        }
        self.synthesize_circuits(k, path, |group| {
            <Compound<Tree> as CompoundProof<Drg<Tree>, _>>::circuit(
                &self.public_inputs,
                Default::default(),
                &group.to_vec(),
                &self.vanilla_params,
                Some(k),
            )
        })
    }

    fn output(&self, proofs: Vec<u8>, c1: &SealCommitPhase1Output) -> Result<Vec<u8>, ProofError> {
        if !self.config.feature_enabled(ApiFeature::NonInteractivePoRep) {
            return Ok(proofs);
        }
        filecoin_proofs::aggregate_seal_commit_proofs::<Tree>(
            &self.config,
            &[c1.comm_r],
            &[c1.seed],
            &[SealCommitOutput { proof: proofs }],
            bellperson::groth16::aggregate::AggregateVersion::V2,
        )
        .map_err(|e| ProofError::Aggregate(format!("{e:#}")))
    }
}

impl<Tree: 'static + MerkleTreeTrait> Shaped<Tree> {
    /// Partition `k` through the circuits `build` makes of a run of its challenge proofs:
    /// the whole partition, and one circuit per challenge for parallel synthesis
    /// (storage-proofs-porep 19 synthesizes a partition's challenges one after the other,
    /// each in a top-level namespace "challenge_<i>" after the public values; parts of one
    /// challenge each leave rayon free to balance them, also across partitions synthesized
    /// at once: 18 challenges of a 32 GiB partition on 16 cores).
    fn synthesize_circuits<C: bellpepper_core::Circuit<Fr> + Send>(
        &self,
        k: usize,
        path: crate::synthesis::SynthesisPath,
        build: impl Fn(&[stacked::Proof<Tree, DefaultPieceHasher>]) -> anyhow::Result<C> + Sync,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        let challenges = &self.vanilla[k];
        let make = || build(challenges);
        let parts = || -> Result<Vec<C>, ProofError> {
            challenges.chunks(1).map(|group| build(group).map_err(|e| circuit_error(k, e))).collect()
        };
        // The challenge groups in parallel (bench/history/2026-12-01.md: all 16 cores on a 32 GiB partition).
        let pieces = (challenges.len() > 1)
            .then_some(crate::synthesis::Pieces { marker: "challenge_", parts: &parts });
        synthesize_partition(&circuit_key(self.proof_type), path, k, make, pieces)
    }
}

/// Verifies C2 output bytes with filecoin-proofs, as the chain would.
pub fn verify_porep_c2(
    c1: &SealCommitPhase1Output,
    id: SectorIdentity,
    proof: &[u8],
) -> Result<bool, ProofError> {
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
    .map_err(|e| ProofError::Verify(format!("{e:#}")))
}
