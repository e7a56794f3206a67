//! Shape-only PoSt and SnapDeals inputs: a WinningPoSt, one WindowPoSt partition or a
//! SnapDeals update proof, as Curio's request fields ([`KindInput`]), whose vanilla proofs
//! have exactly the structure of a real one, with random contents, for every sector size (32
//! and 64 GiB included). **Shape-only: cannot verify.**
//!
//! Exact, and taken from filecoin-proofs' and storage-proofs' own definitions of the proof
//! type, never typed here: the sector count (`PoStConfig::sector_count`: 1 for WinningPoSt,
//! 2349 in a 32 GiB WindowPoSt partition), the challenges per sector
//! (`PoStConfig::challenge_count`), the leaf each challenge opens (storage-proofs'
//! `generate_leaf_challenge` from the randomness and the sector id, with its
//! `get_challenge_index`), and the Merkle paths of tree R (the tree type's base, sub- and
//! top-tree arities, `base_path_length` levels), each leading to the leaf it opens. The
//! proofs are built through storage-proofs' own types (`MerkleProof`, `SectorProof`,
//! `fallback::Proof`, filecoin-proofs' `FallbackPoStSectorProof`) and serialized with bincode
//! as Curio sends them.
//!
//! Random (ChaCha20, from a seed): the randomness, every hash, leaf and comm_r_last. Every
//! comm_c is the shape-only tag ([`crate::shape_marker::SHAPE_ONLY_TAG`]), which marks the
//! input where no JSON travels (gRPC carries the vanilla proofs alone): the daemon refuses it
//! ([`crate::PoStJob::new`]), only [`crate::PoStJob::new_shape_only`] takes it. comm_r is
//! `H(comm_c, comm_r_last)`; no path hashes to its root, so the witness has the real circuit's
//! counts and densities and does not satisfy it.
//!
//! SnapDeals ([`shape_only_snap`]): every count from storage-proofs-update's public parameters
//! (`PublicParams::from_sector_size`: 16 partitions of 86 challenges at 32 GiB, 128 apex
//! leaves, tree D's `challenge_bit_len` levels) and filecoin-proofs' `SectorUpdateConfig`
//! (`h`); the challenges are storage-proofs-update's own (`Challenges::new` from comm_r_new
//! and the partition). The circuit asserts some values while it is built, so they are made to
//! hold: every challenge of a partition shares tree D's top `partition_bit_len` siblings,
//! trees R old and new each have one root, and each new replica leaf is
//! `leaf_r_old + leaf_d_new * rho(phi, high bits)`. comm_r_old and comm_r_new are
//! `H(comm_c, root)`; everything else is random.
//!
//! On disk (`cuzk-lab gen-fixture --shape-only`): `kinds/{winning,window,snap}.shape-only.json`,
//! the [`KindInput`] JSON with the shape-only field first ([`shape_only_kind_json`]).

use anyhow::{ensure, Context, Result};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{as_safe_commitment, with_shape, FallbackPoStSectorProof, PoStType, SectorUpdateConfig, TreeRHasher};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use rand::RngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{self, FallbackPoSt};

use crate::kind_input::KindInput;
use crate::post::post_proof_to_wire;
use crate::shape_c1::{random_bytes, random_node, random_path, random_tree_proof, TreeDomain};
use crate::shape_marker::{marked_json, SHAPE_ONLY_TAG};

/// The miner id of every shape-only input.
pub const SHAPE_ONLY_MINER: u64 = 1000;

/// The registered PoSt proof a shape-only input is made for: WinningPoSt, or WindowPoSt of
/// API 1.2 (the network's `V1_1` types), at a sector size.
pub fn shape_only_post_proof(winning: bool, sector_size: u64) -> Result<RegisteredPoStProof> {
    let base = if winning { 0 } else { 10 };
    (base..base + 5)
        .map(|w| crate::post::post_proof_from_wire(w).expect("0-14 are PoSt proof types"))
        .find(|p| u64::from(p.sector_size()) == sector_size)
        .with_context(|| format!("no PoSt proof type for a sector of {sector_size} bytes"))
}

/// A shape-only WinningPoSt, or one WindowPoSt partition (partition index 0) of `sectors`
/// sectors (`None`: the partition's full count), as request fields. Deterministic in `seed`.
pub fn shape_only_post(
    proof: RegisteredPoStProof,
    sectors: Option<usize>,
    seed: u64,
) -> Result<KindInput> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, shaped_post, proof, sectors, seed)
}

fn shaped_post<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    sectors: Option<usize>,
    seed: u64,
) -> Result<KindInput> {
    let config = proof.as_v1_config();
    let winning = config.typ == PoStType::Winning;
    let n = if winning {
        config.sector_count
    } else {
        sectors.unwrap_or(config.sector_count)
    };
    ensure!(
        (1..=config.sector_count).contains(&n),
        "{proof:?} proves 1 to {} sectors per partition, not {n}",
        config.sector_count
    );
    let vanilla_params = if winning {
        winning_post_setup_params(&config)?
    } else {
        window_post_setup_params(&config)
    };
    let params = FallbackPoSt::<Tree>::setup(&vanilla_params)?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let randomness = random_bytes(&mut rng);
    let randomness_safe: TreeDomain<Tree> = as_safe_commitment(&randomness, "randomness")?;
    let leaves = u64::from(config.sector_size) as usize / 32;
    let tag = TreeDomain::<Tree>::try_from_bytes(&SHAPE_ONLY_TAG)?;
    let first_id = 1 + rng.next_u32() as u64;
    let mut vanilla_proofs = Vec::with_capacity(n);
    let mut first_comm_r = None;
    for i in 0..n {
        let sector_id = SectorId::from(first_id + i as u64);
        let comm_r_last: TreeDomain<Tree> = random_node(&mut rng, false);
        let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&tag, &comm_r_last);
        first_comm_r.get_or_insert(comm_r);
        let inclusion_proofs = (0..config.challenge_count)
            .map(|c| {
                // The challenge index as storage-proofs derives it (partition 0): WinningPoSt's
                // challenges are numbered across its one sector.
                let index = if winning {
                    c as u64
                } else {
                    fallback::get_challenge_index(params.api_version, i, params.challenge_count, c)
                };
                let leaf = fallback::generate_leaf_challenge(
                    &params,
                    randomness_safe,
                    u64::from(sector_id),
                    index,
                );
                random_tree_proof::<Tree>(&mut rng, leaf as usize, leaves, comm_r_last)
            })
            .collect();
        let p = FallbackPoStSectorProof::<Tree> {
            sector_id,
            comm_r,
            vanilla_proof: fallback::Proof {
                sectors: vec![fallback::SectorProof {
                    inclusion_proofs,
                    comm_c: tag,
                    comm_r_last,
                }],
            },
        };
        vanilla_proofs.push(bincode::serialize(&p)?);
    }
    Ok(KindInput {
        kind: if winning { "winning" } else { "window" }.into(),
        registered_proof: post_proof_to_wire(proof),
        sector_size: u64::from(config.sector_size),
        miner_id: SHAPE_ONLY_MINER,
        sector_id: first_id,
        randomness: randomness.to_vec(),
        partition_index: 0,
        vanilla_proofs,
        comm_r_old: Vec::new(),
        comm_r_new: Vec::new(),
        comm_d_new: Vec::new(),
        comm_r: first_comm_r.map(|c| c.into_bytes()).unwrap_or_default(),
    })
}

/// The update proof of a sector size.
pub fn shape_only_update_proof(sector_size: u64) -> Result<RegisteredUpdateProof> {
    (0..5)
        .map(|w| crate::snap::update_proof_from_wire(w).expect("0-4 are update proof types"))
        .find(|p| u64::from(p.sector_size()) == sector_size)
        .with_context(|| format!("no update proof type for a sector of {sector_size} bytes"))
}

/// A shape-only SnapDeals update proof (every partition) of `proof`, as request fields.
/// Deterministic in `seed`.
pub fn shape_only_snap(proof: RegisteredUpdateProof, seed: u64) -> Result<KindInput> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, shaped_snap, proof, seed)
}

fn shaped_snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    seed: u64,
) -> Result<KindInput> {
    use blstrs::Scalar as Fr;
    use generic_array::typenum::{U0, U2};
    use storage_proofs_core::merkle::MerkleProof;
    use storage_proofs_update::constants::{TreeDDomain, TreeDHasher, TreeRDomain};
    use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams};

    let config = SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
    let sector_bytes = u64::from(config.sector_size);
    let params = PublicParams::from_sector_size(sector_bytes);
    ensure!(
        params.partition_count == crate::snap::update_partitions(proof),
        "{proof:?}: storage-proofs-update's partition count {} is not the update config's",
        params.partition_count
    );
    let nodes = params.sector_nodes;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let tag = TreeRDomain::try_from_bytes(&SHAPE_ONLY_TAG)?;
    let root_r_old: TreeRDomain = random_node(&mut rng, false);
    let root_r_new: TreeRDomain = random_node(&mut rng, false);
    let comm_r_old = <TreeRHasher as Hasher>::Function::hash2(&tag, &root_r_old);
    let comm_r_new = <TreeRHasher as Hasher>::Function::hash2(&tag, &root_r_new);
    let comm_d_new: TreeDDomain = random_node(&mut rng, true);
    let phi = phi(&comm_d_new, &comm_r_old);
    let high_shift = params.challenge_bit_len - config.h;
    let top = params.challenge_bit_len - params.partition_bit_len;
    let mut vanilla_proofs = Vec::with_capacity(params.partition_count);
    for k in 0..params.partition_count {
        let apex_leafs: Vec<TreeDDomain> = (0..params.apex_leaf_count).map(|_| random_node(&mut rng, true)).collect();
        // Tree D's top levels above the partition's subtree: the same for all its challenges.
        let shared: Vec<TreeDDomain> = (0..params.partition_bit_len).map(|_| random_node(&mut rng, true)).collect();
        let challenge_proofs = Challenges::new(nodes, comm_r_new, k)
            .map(|c| {
                let leaf_r_old: TreeRDomain = random_node(&mut rng, false);
                let leaf_d_new: TreeDDomain = random_node(&mut rng, true);
                let leaf_r_new: TreeRDomain =
                    (Fr::from(leaf_r_old) + Fr::from(leaf_d_new) * rho(&phi, c >> high_shift)).into();
                let r_path = |rng: &mut ChaCha20Rng| {
                    random_path::<TreeRHasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(rng, c as usize, nodes, false)
                };
                let mut d_path = random_path::<TreeDHasher, U2, U0, U0>(&mut rng, c as usize, nodes, true);
                for (level, sibling) in d_path[top..].iter_mut().zip(&shared) {
                    level.0 = vec![*sibling];
                }
                ChallengeProof::<Tree> {
                    proof_r_old: MerkleProof::from_parts(leaf_r_old, root_r_old, r_path(&mut rng)),
                    proof_d_new: MerkleProof::from_parts(leaf_d_new, comm_d_new, d_path),
                    proof_r_new: MerkleProof::from_parts(leaf_r_new, root_r_new, r_path(&mut rng)),
                }
            })
            .collect();
        let p = PartitionProof::<Tree> { comm_c: tag, apex_leafs, challenge_proofs };
        vanilla_proofs.push(bincode::serialize(&p)?);
    }
    Ok(KindInput {
        kind: "snap".into(),
        registered_proof: crate::snap::update_proof_to_wire(proof),
        sector_size: sector_bytes,
        miner_id: SHAPE_ONLY_MINER,
        sector_id: 1,
        randomness: Vec::new(),
        partition_index: 0,
        vanilla_proofs,
        comm_r_old: comm_r_old.into_bytes(),
        comm_r_new: comm_r_new.into_bytes(),
        comm_d_new: comm_d_new.into_bytes(),
        comm_r: comm_r_old.into_bytes(),
    })
}

/// The bench-only job of a shape-only SnapDeals input (its vanilla proofs tagged; no verifier).
pub fn shape_only_snap_job(input: &KindInput) -> Result<crate::SnapJob, crate::ProofError> {
    crate::SnapJob::new_shape_only(&input.snap_request()?)
}

/// The JSON of a shape-only kind input: the [`KindInput`] JSON with the shape-only field
/// first, saying "shape-only: cannot verify" and the seed it was drawn from.
pub fn shape_only_kind_json(input: &KindInput, seed: u64) -> Result<Vec<u8>> {
    let note = format!(
        "random contents with the exact structure of a {} input (registered proof {}), for \
         benches only; every comm_c is the shape-only tag, and the daemon refuses it",
        input.kind, input.registered_proof
    );
    Ok(marked_json(input, &note, seed)?)
}

/// The bench-only job of a shape-only PoSt input (its vanilla proofs tagged; no verifier).
pub fn shape_only_post_job(input: &KindInput) -> Result<crate::PoStJob, crate::ProofError> {
    crate::PoStJob::new_shape_only(&input.post_request()?)
}
