//! SnapDeals (empty sector update) with cuzk's prover: storage-proofs-update's circuit, one
//! per partition, built from the partition vanilla proofs exactly as filecoin-proofs'
//! `generate_empty_sector_update_proof_with_vanilla` builds it, proved through a
//! [`Backend`](cuzk_groth16::Backend), written as it writes it (the partitions' Groth16
//! proofs in order), and verified with `verify_empty_sector_update_proof` before it is
//! returned. Its compiled paths synthesize the partition through `crate::snap_circuit` (the
//! same circuit, its challenges in parts in parallel, tree D's SHA-256 natively when
//! witness-only); the reference path through storage-proofs-update's own.
//!
//! Input checks, before any circuit is built (a refusal names the field or partition and
//! what was expected): the three commitments are 32 bytes and BLS12-381 scalars; one vanilla
//! proof per partition of the proof type; each one whole bincode `PartitionProof` with the
//! type's apex-leaf and challenge counts, every Merkle path of its tree's length and every
//! hash a scalar. Then storage-proofs-update's vanilla verifier, partition by partition; when
//! it refuses one, the cause is named: which commitment does not match the vanilla proofs,
//! a partition's proof given in another partition's place, or a tampered path or encoding.



use cuzk_groth16::{PartitionWitness, Proof};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{with_shape, PoRepConfig, SectorUpdateConfig, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain};
use storage_proofs_update::{
    Challenges, EmptySectorUpdate, EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams, SetupParams,
};

use crate::error::ProofError;
use crate::job::{
    check_partition, circuit_error, finish_verified, synthesize_partition, FinishTimings, ProofJob, SynthesisTimings,
};
use crate::post::{bincode_exact, check_path_shape};
use crate::shape_marker::{check_tag, Input};
use crate::snap_circuit::SnapCircuit;
use crate::synthesis::SynthesisPath;
use crate::vanilla_shape::{hex_le, is_field_element};

/// Every update proof type by the number Curio sends in `registered_proof` (the FFI's
/// `RegisteredUpdateProof`).
pub fn update_proof_from_wire(v: u64) -> Result<RegisteredUpdateProof, ProofError> {
    use RegisteredUpdateProof::*;
    const BY_WIRE: [RegisteredUpdateProof; 5] =
        [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1];
    BY_WIRE.get(v as usize).copied().ok_or_else(|| {
        ProofError::BadInput(format!(
            "registered_proof {v} is not a sector update proof type; expected 0-4 (2KiB, 8MiB, \
             512MiB, 32GiB, 64GiB)"
        ))
    })
}

/// The number Curio sends for `proof` (inverse of [`update_proof_from_wire`]).
pub fn update_proof_to_wire(proof: RegisteredUpdateProof) -> u64 {
    (0..5).find(|&v| update_proof_from_wire(v).ok() == Some(proof)).unwrap_or(u64::MAX)
}

/// The partition count of a sector update proof: storage-proofs-update's own
/// (`SectorUpdateConfig::update_partitions`: 16 at 32 and 64 GiB), not the PoRep count that
/// `RegisteredUpdateProof::partitions()` returns (10 there).
pub fn update_partitions(proof: RegisteredUpdateProof) -> usize {
    usize::from(SectorUpdateConfig::from_porep_config(&proof.as_v1_config()).update_partitions)
}

/// What a SnapDeals request carries.
#[derive(Clone, Copy, Debug)]
pub struct SnapRequest<'a> {
    pub registered_proof: RegisteredUpdateProof,
    /// One bincode `PartitionProof` per partition, in order.
    pub vanilla_proofs: &'a [Vec<u8>],
    pub comm_r_old: &'a [u8],
    pub comm_r_new: &'a [u8],
    pub comm_d_new: &'a [u8],
}

/// A SnapDeals update proof, checked.
pub struct SnapJob {
    proof: RegisteredUpdateProof,
    shape: Box<dyn SnapShape>,
}

impl std::fmt::Debug for SnapJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapJob")
            .field("registered_proof", &self.proof)
            .field("partitions", &self.shape.partitions())
            .finish()
    }
}

impl SnapJob {
    /// Checks the request (its fields, each partition proof's shape, then filecoin-proofs'
    /// vanilla verifier). A shape-only input is refused as [`ProofError::ShapeOnly`] before
    /// the verifier.
    pub fn new(req: &SnapRequest<'_>) -> Result<SnapJob, ProofError> {
        let size = u64::from(req.registered_proof.sector_size());
        let shape = with_shape!(size, snap_shape, req, Input::Real)?;
        Ok(SnapJob { proof: req.registered_proof, shape })
    }

    /// A shape-only input's job, for benches (`crate::shape_kinds`: random contents, the
    /// exact structure; it cannot verify): the same checks as [`SnapJob::new`] but the
    /// vanilla verifier, and only inputs whose every `comm_c` is the shape-only tag.
    #[cfg(any(test, feature = "testing"))]
    pub fn new_shape_only(req: &SnapRequest<'_>) -> Result<SnapJob, ProofError> {
        let size = u64::from(req.registered_proof.sector_size());
        let shape = with_shape!(size, snap_shape, req, Input::ShapeOnly)?;
        Ok(SnapJob { proof: req.registered_proof, shape })
    }

    pub fn registered_proof(&self) -> RegisteredUpdateProof {
        self.proof
    }
}

impl ProofJob for SnapJob {
    fn partitions(&self) -> usize {
        self.shape.partitions()
    }

    fn synthesize_unchecked(
        &self,
        k: usize,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        check_partition(k, self.partitions())?;
        self.shape.synthesize(k, &self.circuit_key(), path)
    }

    fn finish(&self, proofs: &[Proof]) -> Result<(Vec<u8>, FinishTimings), ProofError> {
        finish_verified(proofs, self.partitions(), Ok, |bytes| self.shape.verify(bytes))
    }

    fn circuit_key(&self) -> String {
        format!("snap-{:?}", self.proof)
    }
}

trait SnapShape: Send + Sync {
    fn partitions(&self) -> usize;
    fn synthesize(
        &self,
        k: usize,
        key: &str,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError>;
    fn verify(&self, proof: &[u8]) -> Result<bool, ProofError>;
}

struct Shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    porep_config: PoRepConfig,
    comms: [[u8; 32]; 3],
    pub_params: compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
    pub_inputs: PublicInputs,
    vanilla: Vec<PartitionProof<Tree>>,
}

fn raw<D: AsRef<[u8]>>(d: &D) -> Vec<u8> {
    d.as_ref().to_vec()
}

fn bad(msg: String) -> ProofError {
    ProofError::BadInput(msg)
}

fn commitment(name: &str, bytes: &[u8]) -> Result<[u8; 32], ProofError> {
    let c: [u8; 32] = bytes.try_into().map_err(|_| bad(format!("{name}: {} bytes; expected 32", bytes.len())))?;
    if !is_field_element(&c) {
        return Err(bad(format!("{name} {} is not a BLS12-381 scalar", hex_le(&c))));
    }
    Ok(c)
}

/// Counts, path lengths and scalars of partition `k`'s vanilla proof.
fn check_partition_shape<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    k: usize,
    p: &PartitionProof<Tree>,
    params: &PublicParams,
) -> Result<(), ProofError> {
    let who = format!("vanilla_proofs[{k}]");
    if p.apex_leafs.len() != params.apex_leaf_count {
        return Err(bad(format!(
            "{who}: {} apex leafs; the proof type has {}",
            p.apex_leafs.len(),
            params.apex_leaf_count
        )));
    }
    if p.challenge_proofs.len() != params.challenge_count {
        return Err(bad(format!(
            "{who}: {} challenge proofs; the proof type has {} per partition",
            p.challenge_proofs.len(),
            params.challenge_count
        )));
    }
    let mut fields: Vec<(String, Vec<u8>)> = vec![("comm_c".into(), raw(&p.comm_c))];
    fields.extend(p.apex_leafs.iter().enumerate().map(|(i, l)| (format!("apex leaf {i}"), raw(&l))));
    let nodes = params.sector_nodes;
    for (c, cp) in p.challenge_proofs.iter().enumerate() {
        let shapes = [
            ("proof_r_old", check_path_shape(&cp.proof_r_old, nodes)),
            ("proof_d_new", check_path_shape(&cp.proof_d_new, nodes)),
            ("proof_r_new", check_path_shape(&cp.proof_r_new, nodes)),
        ];
        for (name, shape) in shapes {
            shape.map_err(|e| bad(format!("{who}: challenge {c}, {name} {e}")))?;
        }
        let mut add = |name: &str, leaf: Vec<u8>, root: Vec<u8>, path: Vec<Vec<u8>>| {
            fields.push((format!("challenge {c}, {name} leaf"), leaf));
            fields.push((format!("challenge {c}, {name} root"), root));
            fields.extend(path.into_iter().map(|h| (format!("challenge {c}, {name} path hash"), h)));
        };
        let hashes_r = |ip: &storage_proofs_core::merkle::MerkleProof<TreeRHasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>| {
            ip.path().into_iter().flat_map(|(h, _)| h.into_iter().map(|d| raw(&d))).collect::<Vec<_>>()
        };
        add("proof_r_old", raw(&cp.proof_r_old.leaf()), raw(&cp.proof_r_old.root()), hashes_r(&cp.proof_r_old));
        add("proof_r_new", raw(&cp.proof_r_new.leaf()), raw(&cp.proof_r_new.root()), hashes_r(&cp.proof_r_new));
        let d: Vec<Vec<u8>> =
            cp.proof_d_new.path().into_iter().flat_map(|(h, _)| h.into_iter().map(|d| raw(&d))).collect();
        add("proof_d_new", raw(&cp.proof_d_new.leaf()), raw(&cp.proof_d_new.root()), d);
    }
    if let Some((name, b)) = fields.iter().find(|(_, b)| !is_field_element(b)) {
        return Err(bad(format!("{who}: {name} {} is not a BLS12-381 scalar", hex_le(b))));
    }
    Ok(())
}

fn snap_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: &SnapRequest<'_>,
    input: Input,
) -> Result<Box<dyn SnapShape>, ProofError> {
    let proof = req.registered_proof;
    let comm_r_old = commitment("comm_r_old", req.comm_r_old)?;
    let comm_r_new = commitment("comm_r_new", req.comm_r_new)?;
    let comm_d_new = commitment("comm_d_new", req.comm_d_new)?;
    let porep_config = proof.as_v1_config();
    let config = SectorUpdateConfig::from_porep_config(&porep_config);
    let partitions = update_partitions(proof);
    if req.vanilla_proofs.len() != partitions {
        return Err(bad(format!(
            "vanilla_proofs: {} partition proofs; {proof:?} has {partitions} partitions",
            req.vanilla_proofs.len()
        )));
    }
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams { sector_bytes: u64::from(config.sector_size) },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = EmptySectorUpdateCompound::<Tree>::setup(&setup).map_err(|e| bad(format!("{e:#}")))?;
    let mut vanilla = Vec::with_capacity(partitions);
    for (k, bytes) in req.vanilla_proofs.iter().enumerate() {
        let p: PartitionProof<Tree> = bincode_exact(bytes).map_err(|e| {
            bad(format!(
                "vanilla_proofs[{k}]: not a bincode PartitionProof of {proof:?} ({} bytes): {e}",
                bytes.len()
            ))
        })?;
        check_partition_shape(k, &p, &pub_params.vanilla_params)?;
        check_tag(input, &format!("vanilla_proofs[{k}]"), p.comm_c.as_ref())?;
        vanilla.push(p);
    }
    let domain_r = |c: &[u8; 32]| TreeRDomain::try_from_bytes(c).map_err(|e| bad(format!("{e:#}")));
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: domain_r(&comm_r_old)?,
        comm_d_new: TreeDDomain::try_from_bytes(&comm_d_new).map_err(|e| bad(format!("{e:#}")))?,
        comm_r_new: domain_r(&comm_r_new)?,
        h: config.h,
    };
    // Shape-only inputs: the checks above, no verifier.
    for (k, p) in vanilla.iter().enumerate().filter(|_| input == Input::Real) {
        let inputs = PublicInputs { k, ..pub_inputs };
        let ok = EmptySectorUpdate::<Tree>::verify(&pub_params.vanilla_params, &inputs, p)
            .map_err(|e| bad(format!("vanilla_proofs[{k}]: {e:#}")))?;
        if !ok {
            return Err(diagnose(k, p, &pub_params.vanilla_params, &pub_inputs));
        }
    }
    Ok(Box::new(Shaped::<Tree> {
        porep_config,
        comms: [comm_r_old, comm_r_new, comm_d_new],
        pub_params,
        pub_inputs,
        vanilla,
    }))
}

/// Why partition `k`'s vanilla proof does not verify.
fn diagnose<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    k: usize,
    p: &PartitionProof<Tree>,
    params: &PublicParams,
    inputs: &PublicInputs,
) -> ProofError {
    let who = format!("vanilla_proofs[{k}]");
    let first = &p.challenge_proofs[0];
    let h = <TreeRHasher as Hasher>::Function::hash2;
    if h(&p.comm_c, &first.proof_r_old.root()) != inputs.comm_r_old {
        return bad(format!(
            "comm_r_old {} is not the sector key's commitment the vanilla proofs were made from \
             ({who} gives {})",
            hex_le(inputs.comm_r_old.as_ref()),
            hex_le(h(&p.comm_c, &first.proof_r_old.root()).as_ref())
        ));
    }
    if h(&p.comm_c, &first.proof_r_new.root()) != inputs.comm_r_new {
        return bad(format!(
            "comm_r_new {} is not the updated replica's commitment the vanilla proofs were made \
             from ({who} gives {})",
            hex_le(inputs.comm_r_new.as_ref()),
            hex_le(h(&p.comm_c, &first.proof_r_new.root()).as_ref())
        ));
    }
    if first.proof_d_new.root() != inputs.comm_d_new {
        return bad(format!(
            "comm_d_new {} is not the data commitment the vanilla proofs were made from ({who} \
             gives {})",
            hex_le(inputs.comm_d_new.as_ref()),
            hex_le(first.proof_d_new.root().as_ref())
        ));
    }
    let opens = |q: usize| {
        Challenges::new(params.sector_nodes, inputs.comm_r_new, q)
            .zip(&p.challenge_proofs)
            .all(|(c, cp)| cp.proof_r_new.path_index() == c as usize)
    };
    if !opens(k) {
        if let Some(q) = (0..params.partition_count).find(|&q| opens(q)) {
            return bad(format!(
                "{who} is the vanilla proof of partition {q}, given in partition {k}'s place \
                 (vanilla_proofs must be in partition order)"
            ));
        }
        return bad(format!(
            "{who}: its challenges are not the ones comm_r_new gives for partition {k} (tampered)"
        ));
    }
    bad(format!("{who}: a Merkle path or the replica encoding does not verify (tampered)"))
}

/// How many parts a partition's `challenges` are synthesized in (consecutive runs, each part
/// after the whole prefix; `crate::snap_circuit`): 8 of about 11 challenges from 512 MiB up
/// (86 challenges), 2 of 5 at 2 KiB and 8 MiB (10). Each part after the first costs the
/// prefix's allocations again (5.9 M of 81 M aux at 32 GiB; its SHA-256 is not computed).
fn snap_parts(challenges: usize) -> usize {
    challenges.div_ceil(11).max(2)
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapShape for Shaped<Tree> {
    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn synthesize(
        &self,
        k: usize,
        key: &str,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
        let upstream = || {
            EmptySectorUpdateCompound::<Tree>::circuit(
                &self.pub_inputs,
                Default::default(),
                &self.vanilla[k],
                &self.pub_params.vanilla_params,
                Some(k),
            )
        };
        if path == SynthesisPath::Reference {
            return synthesize_partition(key, path, k, upstream, None);
        }
        // storage-proofs-update's circuit with each challenge in a namespace of its own, its
        // challenges in parts synthesized in parallel (crate::snap_circuit).
        let parts = || -> Result<Vec<SnapCircuit<Tree>>, ProofError> {
            let count = self.pub_params.vanilla_params.challenge_count;
            SnapCircuit::parts(upstream().map_err(|e| circuit_error(k, e))?, snap_parts(count))
                .map_err(|e| circuit_error(k, e))
        };
        let make = || SnapCircuit::new(upstream()?);
        let pieces = crate::synthesis::Pieces { marker: "snap_challenge_", parts: &parts };
        synthesize_partition(key, path, k, make, Some(pieces))
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, ProofError> {
        let [r_old, r_new, d_new] = self.comms;
        filecoin_proofs::verify_empty_sector_update_proof::<Tree>(&self.porep_config, proof, r_old, r_new, d_new)
            .map_err(|e| ProofError::Verify(format!("{e:#}")))
    }
}
