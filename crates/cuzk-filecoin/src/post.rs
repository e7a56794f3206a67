//! WinningPoSt and one WindowPoSt partition with cuzk's prover: the fallback PoSt circuit of
//! storage-proofs-post, built from the vanilla proofs Curio sends exactly as filecoin-proofs'
//! `generate_winning_post_with_vanilla` and `generate_single_window_post_with_vanilla` build
//! it, proved through a [`Backend`](cuzk_groth16::Backend), written as they write it (one
//! 192-byte Groth16 proof), and verified before it is returned: WinningPoSt with
//! filecoin-proofs' `verify_winning_post`, a WindowPoSt partition with the public inputs
//! storage-proofs derives for that partition and bellperson's verifier (what
//! `verify_window_post` does for each partition of a whole WindowPoSt).
//!
//! Input checks, before any circuit is built (a refusal names the vanilla proof, the sector
//! and what was expected):
//! - `randomness` is 32 bytes and a BLS12-381 scalar (Curio clears the top two bits of
//!   byte 31);
//! - each vanilla proof is one whole bincode `FallbackPoStSectorProof` of the proof type's
//!   tree shape, nothing after it; every hash in it is a scalar; it holds one sector with
//!   the proof type's challenge count of inclusion proofs, each one level per tree level;
//! - WinningPoSt: exactly the proof type's sector count (1); WindowPoSt: 1 to the partition's
//!   sector count, no sector twice;
//! - then filecoin-proofs' own vanilla check. When it fails, the cause is named: a comm_r that
//!   is not the proof's (another sector's proof, or tampered), a path that does not hash to
//!   its root, challenged leaves that belong to another partition index (PoSt API 1.0, where
//!   challenges depend on it), or challenged leaves that do not follow from the randomness
//!   and sector id.

use std::io::Cursor;


use cuzk_groth16::{PartitionWitness, Proof};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs, with_shape,
    FallbackPoStSectorProof, PoStConfig, PoStType, PublicReplicaInfo,
};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use crate::error::ProofError;
use crate::shape_marker::{check_tag, Input};
use crate::job::{check_partition, finish_verified, synthesize_partition, FinishTimings, ProofJob, SynthesisTimings};
use crate::synthesis::SynthesisPath;
use crate::vanilla_shape::{hex_le, is_field_element};

/// Every PoSt proof type by the number Curio sends in `registered_proof` (the FFI's
/// `RegisteredPoStProof`, whose 10 to 14 are WindowPoSt V1_1 of the FFI, API 1.2 here).
pub fn post_proof_from_wire(v: u64) -> Result<RegisteredPoStProof, ProofError> {
    use RegisteredPoStProof::*;
    const BY_WIRE: [RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    BY_WIRE.get(v as usize).copied().ok_or_else(|| {
        ProofError::BadInput(format!(
            "registered_proof {v} is not a PoSt proof type; expected 0-4 (WinningPoSt 2KiB to \
             64GiB), 5-9 (WindowPoSt V1) or 10-14 (WindowPoSt V1_1, API 1.2)"
        ))
    })
}

/// The number Curio sends for `proof` (inverse of [`post_proof_from_wire`]).
pub fn post_proof_to_wire(proof: RegisteredPoStProof) -> u64 {
    (0..15).find(|&v| post_proof_from_wire(v).ok() == Some(proof)).unwrap_or(u64::MAX)
}

/// The largest WindowPoSt API 1.0 partition index accepted (and searched when its challenges
/// belong to another partition).
pub const MAX_V1_PARTITION_INDEX: usize = 1023;

/// What a PoSt request carries.
#[derive(Clone, Copy, Debug)]
pub struct PoStRequest<'a> {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: &'a [u8],
    pub prover_id: [u8; 32],
    /// WindowPoSt: the partition of the deadline these sectors are; WinningPoSt: 0.
    pub partition_index: usize,
    /// One bincode `FallbackPoStSectorProof` per sector.
    pub vanilla_proofs: &'a [Vec<u8>],
}

/// A WinningPoSt or one WindowPoSt partition, checked: one partition, one circuit.
pub struct PoStJob {
    proof: RegisteredPoStProof,
    shape: Box<dyn PoStShape>,
}

impl std::fmt::Debug for PoStJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoStJob").field("registered_proof", &self.proof).finish()
    }
}

impl PoStJob {
    /// Checks the request (its fields, each vanilla proof's shape, then filecoin-proofs'
    /// vanilla verifier) and arranges the partition. A shape-only input is refused as
    /// [`ProofError::ShapeOnly`] before the verifier.
    pub fn new(req: &PoStRequest<'_>) -> Result<PoStJob, ProofError> {
        let size = u64::from(req.registered_proof.sector_size());
        let shape = with_shape!(size, post_shape, req, Input::Real)?;
        Ok(PoStJob { proof: req.registered_proof, shape })
    }

    /// A shape-only input's job, for benches (`crate::shape_kinds`: random contents, the
    /// exact structure; it cannot verify): the same checks as [`PoStJob::new`] but the
    /// vanilla verifier, and only inputs whose every `comm_c` is the shape-only tag.
    #[cfg(any(test, feature = "testing"))]
    pub fn new_shape_only(req: &PoStRequest<'_>) -> Result<PoStJob, ProofError> {
        let size = u64::from(req.registered_proof.sector_size());
        let shape = with_shape!(size, post_shape, req, Input::ShapeOnly)?;
        Ok(PoStJob { proof: req.registered_proof, shape })
    }

    pub fn registered_proof(&self) -> RegisteredPoStProof {
        self.proof
    }
}

impl ProofJob for PoStJob {
    fn partitions(&self) -> usize {
        1
    }

    fn synthesize_unchecked(
        &self,
        k: usize,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        check_partition(k, 1)?;
        self.shape.synthesize(&self.circuit_key(), path)
    }

    fn finish(&self, proofs: &[Proof]) -> Result<(Vec<u8>, FinishTimings), ProofError> {
        finish_verified(proofs, 1, Ok, |bytes| self.shape.verify(bytes))
    }

    /// One compiled circuit per PoSt proof type (V1 and V1_2 windows have one structure but
    /// are kept apart, as their parameters are named apart).
    fn circuit_key(&self) -> String {
        format!("post-{:?}", self.proof)
    }
}

trait PoStShape: Send + Sync {
    fn synthesize(
        &self,
        key: &str,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError>;
    fn verify(&self, proof: &[u8]) -> Result<bool, ProofError>;
    /// The partition's vanilla proof as arranged (bincode), and the same from [`arrange`].
    #[cfg(test)]
    fn arrangements(&self) -> (Vec<u8>, Vec<u8>);
}

type Vanilla<Tree> = fallback::Proof<<Tree as MerkleTreeTrait>::Proof>;
type PubParams<Tree> = compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>>;

struct Shaped<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    partition_index: usize,
    pub_params: PubParams<Tree>,
    pub_inputs: fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    partition: Vanilla<Tree>,
    /// (sector id, comm_r) of each vanilla proof, in order.
    sectors: Vec<(SectorId, [u8; 32])>,
    /// The sector proofs as given (the tests compare arrangements).
    #[cfg(test)]
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
}

fn bad(msg: String) -> ProofError {
    ProofError::BadInput(msg)
}

fn hex8(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// One whole bincode value of `T`, nothing after it.
pub(crate) fn bincode_exact<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut cur = Cursor::new(bytes);
    let v: T = bincode::deserialize_from(&mut cur).map_err(|e| match *e {
        bincode::ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            format!("ends early, at byte {} (truncated)", bytes.len())
        }
        other => other.to_string(),
    })?;
    if cur.position() != bytes.len() as u64 {
        return Err(format!("{} bytes follow the end of its value", bytes.len() as u64 - cur.position()));
    }
    Ok(v)
}

/// The field whose bytes are not a scalar, if any, as "name 0x..".
fn non_scalar<'a>(fields: impl IntoIterator<Item = (String, &'a [u8])>) -> Option<String> {
    fields.into_iter().find(|(_, b)| !is_field_element(b)).map(|(name, b)| format!("{name} {}", hex_le(b)))
}

/// A Merkle path's shape: one level per tree level, each with its arity - 1 sibling hashes
/// and a position below the arity (storage-proofs' circuits assert on these).
pub(crate) fn check_path_shape<P: MerkleProofTrait>(ip: &P, leaves: usize) -> Result<(), String> {
    use generic_array::typenum::Unsigned;
    let (a, b, c) = (P::Arity::to_usize(), P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize());
    let levels = ip.expected_len(leaves);
    let path = ip.path();
    if path.len() != levels {
        return Err(format!("has {} levels; the tree has {levels}", path.len()));
    }
    let tops = usize::from(b > 0) + usize::from(c > 0);
    let arity = |level: usize| match level.checked_sub(levels - tops) {
        None => a,
        Some(0) if b > 0 => b,
        Some(_) => c,
    };
    for (level, (hashes, index)) in path.iter().enumerate() {
        let ar = arity(level);
        if hashes.len() + 1 != ar || *index >= ar {
            return Err(format!(
                "level {level}: {} sibling hashes at position {index}; the level has arity {ar}",
                hashes.len()
            ));
        }
    }
    Ok(())
}

/// The shape checks of one sector's vanilla proof: one sector, `challenges` inclusion proofs,
/// each of the tree's path length, every hash a scalar.
fn check_sector_shape<Tree: MerkleTreeTrait>(
    i: usize,
    p: &FallbackPoStSectorProof<Tree>,
    challenges: usize,
    leaves: usize,
) -> Result<(), ProofError> {
    let who = format!("vanilla_proofs[{i}] (sector {})", u64::from(p.sector_id));
    let sectors = &p.vanilla_proof.sectors;
    if sectors.len() != 1 {
        return Err(bad(format!("{who}: holds {} sector proofs; expected 1", sectors.len())));
    }
    let s = &sectors[0];
    if s.inclusion_proofs.len() != challenges {
        return Err(bad(format!(
            "{who}: {} inclusion proofs; the proof type challenges {challenges} leaves per sector",
            s.inclusion_proofs.len()
        )));
    }
    let mut fields: Vec<(String, &[u8])> = vec![
        ("comm_r".into(), p.comm_r.as_ref()),
        ("comm_c".into(), s.comm_c.as_ref()),
        ("comm_r_last".into(), s.comm_r_last.as_ref()),
    ];
    let paths: Vec<_> = s.inclusion_proofs.iter().map(|ip| (ip.leaf(), ip.root(), ip.path())).collect();
    for (n, ip) in s.inclusion_proofs.iter().enumerate() {
        check_path_shape(ip, leaves).map_err(|e| bad(format!("{who}: inclusion proof {n} {e}")))?;
    }
    for (n, (leaf, root, path)) in paths.iter().enumerate() {
        fields.push((format!("inclusion proof {n} leaf"), leaf.as_ref()));
        fields.push((format!("inclusion proof {n} root"), root.as_ref()));
        for (level, (hashes, _)) in path.iter().enumerate() {
            for h in hashes {
                fields.push((format!("inclusion proof {n} level {level} hash"), h.as_ref()));
            }
        }
    }
    if let Some(f) = non_scalar(fields) {
        return Err(bad(format!("{who}: {f} is not a BLS12-381 scalar")));
    }
    Ok(())
}

/// A partition's vanilla proof from the sector proofs, as filecoin-proofs'
/// `single_partition_vanilla_proofs` arranges it, without its verifier (shape-only inputs;
/// the tests compare it with filecoin-proofs' on the real fixtures): WindowPoSt takes each
/// sector's proof in order and pads to the partition's sector count with copies of the last;
/// WinningPoSt unrolls the sector's inclusion proofs into one-challenge sector proofs.
pub(crate) fn arrange<Tree: MerkleTreeTrait>(
    config: &PoStConfig,
    vanilla: &[FallbackPoStSectorProof<Tree>],
) -> Vanilla<Tree> {
    let mut sectors: Vec<fallback::SectorProof<Tree::Proof>> = Vec::new();
    match config.typ {
        PoStType::Window => {
            sectors.extend(vanilla.iter().flat_map(|p| p.vanilla_proof.sectors.iter().cloned()));
            while sectors.len() < config.sector_count {
                sectors.push(sectors[sectors.len() - 1].clone());
            }
        }
        PoStType::Winning => {
            let s = &vanilla[0].vanilla_proof.sectors[0];
            sectors.extend(s.inclusion_proofs.iter().map(|ip| fallback::SectorProof {
                inclusion_proofs: vec![ip.clone()],
                comm_c: s.comm_c,
                comm_r_last: s.comm_r_last,
            }));
        }
    }
    fallback::Proof { sectors }
}

fn post_shape<Tree: 'static + MerkleTreeTrait>(
    req: &PoStRequest<'_>,
    input: Input,
) -> Result<Box<dyn PoStShape>, ProofError> {
    let proof = req.registered_proof;
    let config = proof.as_v1_config();
    let randomness: [u8; 32] = req.randomness.try_into().map_err(|_| {
        bad(format!("randomness: {} bytes; expected 32", req.randomness.len()))
    })?;
    if !is_field_element(&randomness) {
        return Err(bad(format!(
            "randomness {} is not a BLS12-381 scalar (Curio clears the top two bits of byte 31)",
            hex_le(&randomness)
        )));
    }
    let (randomness_safe, prover_id_safe) = match (
        as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&randomness, "randomness"),
        as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&req.prover_id, "prover_id"),
    ) {
        (Ok(r), Ok(p)) => (r, p),
        (Err(e), _) | (_, Err(e)) => return Err(bad(format!("{e:#}"))),
    };
    let winning = config.typ == PoStType::Winning;
    let n = req.vanilla_proofs.len();
    let kind = if winning { "WinningPoSt" } else { "a WindowPoSt partition" };
    if winning && n != config.sector_count {
        return Err(bad(format!(
            "vanilla_proofs: {n} sector proofs; {proof:?} proves {} sector",
            config.sector_count
        )));
    }
    if !winning && (n == 0 || n > config.sector_count) {
        return Err(bad(format!(
            "vanilla_proofs: {n} sector proofs; {kind} of {proof:?} proves 1 to {} sectors",
            config.sector_count
        )));
    }
    if winning && req.partition_index != 0 {
        return Err(bad(format!("partition_index {}: WinningPoSt has one partition, 0", req.partition_index)));
    }
    // API 1.0 derives challenges from the partition index, and its verification stands the
    // sectors of earlier partitions in: bound it (1.2's challenges do not depend on it).
    if !winning && config.api_version != ApiVersion::V1_2_0 && req.partition_index > MAX_V1_PARTITION_INDEX {
        return Err(bad(format!(
            "partition_index {}: more than {MAX_V1_PARTITION_INDEX}, the most cuzk takes for {proof:?} \
             (WindowPoSt API 1.0; the network uses the V1_1 types, 10-14)",
            req.partition_index
        )));
    }
    let leaves = u64::from(config.sector_size) as usize / 32;
    let mut vanilla: Vec<FallbackPoStSectorProof<Tree>> = Vec::with_capacity(n);
    for (i, bytes) in req.vanilla_proofs.iter().enumerate() {
        let p: FallbackPoStSectorProof<Tree> = bincode_exact(bytes).map_err(|e| {
            bad(format!(
                "vanilla_proofs[{i}]: not a bincode FallbackPoStSectorProof of {proof:?} ({} bytes): {e}",
                bytes.len()
            ))
        })?;
        check_sector_shape(i, &p, config.challenge_count, leaves)?;
        check_tag(input, &format!("vanilla_proofs[{i}]"), p.vanilla_proof.sectors[0].comm_c.as_ref())?;
        if let Some(j) = vanilla.iter().position(|q| q.sector_id == p.sector_id) {
            return Err(bad(format!(
                "vanilla_proofs[{i}] and [{j}] are both of sector {}",
                u64::from(p.sector_id)
            )));
        }
        vanilla.push(p);
    }

    let vanilla_params = if winning {
        winning_post_setup_params(&config).map_err(|e| bad(format!("{e:#}")))?
    } else {
        window_post_setup_params(&config)
    };
    let setup = compound_proof::SetupParams { vanilla_params, partitions: None, priority: config.priority };
    let pub_params: PubParams<Tree> = FallbackPoStCompound::setup(&setup).map_err(|e| bad(format!("{e:#}")))?;
    let pub_inputs = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors: vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect(),
        k: (!winning).then_some(req.partition_index),
    };
    // filecoin-proofs' own arrangement of the sector proofs into the partition's, which also
    // runs the vanilla verifier; on failure, find out why. Shape-only inputs: the same
    // arrangement, no verifier.
    let partition = if input == Input::ShapeOnly {
        arrange(&config, &vanilla)
    } else {
        let arranged = if winning {
            partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_inputs, 1, &vanilla)
                .map(|mut v| v.remove(0))
        } else {
            single_partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_inputs, &vanilla)
        };
        let partition = arranged.map_err(|e| {
            diagnose::<Tree>(&config, &pub_params.vanilla_params, randomness_safe, &vanilla, req.partition_index)
                .unwrap_or_else(|| bad(format!("vanilla_proofs: refused by filecoin-proofs: {e:#}")))
        })?;
        // filecoin-proofs' vanilla check of WinningPoSt reads only the first of the sector's
        // inclusion proofs (it pairs the one public sector with the partition's first proof);
        // the circuit takes all of them, so check the others here rather than fail in
        // synthesis.
        if winning {
            if let Some(e) = diagnose::<Tree>(&config, &pub_params.vanilla_params, randomness_safe, &vanilla, 0) {
                return Err(e);
            }
        }
        partition
    };
    Ok(Box::new(Shaped::<Tree> {
        sectors: vanilla.iter().map(|p| (p.sector_id, p.comm_r.into_bytes().try_into().unwrap_or([0; 32]))).collect(),
        config,
        randomness,
        prover_id: req.prover_id,
        partition_index: req.partition_index,
        pub_params,
        pub_inputs,
        partition,
        #[cfg(test)]
        vanilla,
    }))
}

/// Why the vanilla proofs do not verify, when one of the causes the module names is found.
fn diagnose<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    params: &fallback::PublicParams,
    randomness: <Tree::Hasher as Hasher>::Domain,
    vanilla: &[FallbackPoStSectorProof<Tree>],
    partition_index: usize,
) -> Option<ProofError> {
    let winning = config.typ == PoStType::Winning;
    // The leaf each inclusion proof must open, for a partition index.
    let expected = |i: usize, id: SectorId, n: usize, part: usize| -> u64 {
        let index = if winning {
            n as u64
        } else {
            fallback::get_challenge_index(params.api_version, part * params.sector_count + i, params.challenge_count, n)
        };
        fallback::generate_leaf_challenge(params, randomness, u64::from(id), index)
    };
    let opens = |i: usize, p: &FallbackPoStSectorProof<Tree>, part: usize| {
        p.vanilla_proof.sectors[0]
            .inclusion_proofs
            .iter()
            .enumerate()
            .all(|(n, ip)| ip.path_index() as u64 == expected(i, p.sector_id, n, part))
    };
    for (i, p) in vanilla.iter().enumerate() {
        let who = format!("vanilla_proofs[{i}] (sector {})", u64::from(p.sector_id));
        let s = &p.vanilla_proof.sectors[0];
        let calc = <Tree::Hasher as Hasher>::Function::hash2(&s.comm_c, &s.comm_r_last);
        if calc != p.comm_r {
            return Some(bad(format!(
                "{who}: its comm_r {} is not H(comm_c || comm_r_last) of its own tree: the vanilla \
                 proof of another sector, or tampered",
                hex_le(p.comm_r.as_ref())
            )));
        }
        for (n, ip) in s.inclusion_proofs.iter().enumerate() {
            if ip.root() != s.comm_r_last || !ip.verify() {
                return Some(bad(format!(
                    "{who}: inclusion proof {n} does not hash to the sector's comm_r_last (tampered)"
                )));
            }
        }
        if !opens(i, p, partition_index) {
            let v1 = !winning && params.api_version != ApiVersion::V1_2_0;
            if v1 {
                if let Some(q) = (0..=MAX_V1_PARTITION_INDEX).find(|&q| q != partition_index && opens(i, p, q)) {
                    return Some(bad(format!(
                        "{who}: its challenges are those of partition {q}, but partition_index is \
                         {partition_index}"
                    )));
                }
            }
            let (n, ip) = s
                .inclusion_proofs
                .iter()
                .enumerate()
                .find(|(n, ip)| ip.path_index() as u64 != expected(i, p.sector_id, *n, partition_index))?;
            return Some(bad(format!(
                "{who}: challenge {n} opens leaf {}, but randomness {}.. challenges leaf {} of this \
                 sector: the vanilla proofs were generated for other randomness{}",
                ip.path_index(),
                hex8(randomness.as_ref()),
                expected(i, p.sector_id, n, partition_index),
                if v1 { " or another partition" } else { "" }
            )));
        }
    }
    None
}

impl<Tree: 'static + MerkleTreeTrait> PoStShape for Shaped<Tree> {
    #[cfg(test)]
    fn arrangements(&self) -> (Vec<u8>, Vec<u8>) {
        (bincode::serialize(&self.partition).unwrap(), bincode::serialize(&arrange(&self.config, &self.vanilla)).unwrap())
    }

    fn synthesize(
        &self,
        key: &str,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        let make = || {
            FallbackPoStCompound::<Tree>::circuit(
                &self.pub_inputs,
                Default::default(),
                &self.partition,
                &self.pub_params.vanilla_params,
                Some(0),
            )
        };
        synthesize_partition(key, path, 0, make, None)
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, ProofError> {
        let failed = |e: anyhow::Error| ProofError::Verify(format!("{e:#}"));
        if self.config.typ == PoStType::Winning {
            let replicas: Vec<(SectorId, PublicReplicaInfo)> = self
                .sectors
                .iter()
                .map(|(id, comm_r)| Ok((*id, PublicReplicaInfo::new(*comm_r)?)))
                .collect::<anyhow::Result<_>>()
                .map_err(failed)?;
            return filecoin_proofs::verify_winning_post::<Tree>(
                &self.config,
                &self.randomness,
                &replicas,
                self.prover_id,
                proof,
            )
            .map_err(failed);
        }
        // One partition of a WindowPoSt: the public inputs storage-proofs derives for
        // partition `partition_index` of the deadline (the sectors before it stand in as
        // copies: only this partition's chunk is read). API 1.2's challenges do not depend on
        // the partition, so there it is partition 0 with nothing before it.
        let k = if self.config.api_version == ApiVersion::V1_2_0 { 0 } else { self.partition_index };
        let mut sectors = vec![self.pub_inputs.sectors[0].clone(); k * self.pub_params.vanilla_params.sector_count];
        sectors.extend(self.pub_inputs.sectors.iter().cloned());
        let inputs = fallback::PublicInputs { sectors, k: None, ..self.pub_inputs.clone() };
        let public = FallbackPoStCompound::<Tree>::generate_public_inputs(&inputs, &self.pub_params.vanilla_params, Some(k))
            .map_err(failed)?;
        let vk = <FallbackPoStCompound<Tree> as CompoundProof<'_, FallbackPoSt<'_, Tree>, _>>::verifying_key::<
            rand::rngs::OsRng,
        >(None, &self.pub_params.vanilla_params)
        .map_err(failed)?;
        let pvk = bellperson::groth16::prepare_verifying_key(&vk);
        let proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(proof)
            .map_err(|e| ProofError::Verify(format!("reading the proof back: {e}")))?;
        bellperson::groth16::verify_proof(&pvk, &proof, &public).map_err(|e| ProofError::Verify(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`arrange`] (the shape-only inputs' arrangement, no verifier) equals filecoin-proofs'
    /// on the real 2 KiB WinningPoSt and WindowPoSt fixtures (API 1.2 and 1.0), byte for byte.
    #[test]
    fn the_shape_only_arrangement_is_filecoin_proofs_on_the_real_fixtures() {
        let k = crate::fixture::kind_fixtures_2kib();
        for i in [&k.winning, &k.window, &k.window_v1] {
            let job = PoStJob::new(&PoStRequest {
                registered_proof: post_proof_from_wire(i.registered_proof).unwrap(),
                randomness: &i.randomness,
                prover_id: crate::prover_id_from_miner(i.miner_id),
                partition_index: i.partition_index as usize,
                vanilla_proofs: &i.vanilla_proofs,
            })
            .unwrap();
            let (theirs, ours) = job.shape.arrangements();
            assert!(theirs == ours, "{}: the arrangements differ", i.kind);
        }
    }
}
