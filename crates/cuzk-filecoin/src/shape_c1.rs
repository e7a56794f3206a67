//! Shape-only C1 outputs: a `SealCommitPhase1Output` of a proof type (32 and 64 GiB
//! included) whose vanilla proofs have exactly the structure of a real one, with random
//! contents. **Shape-only: cannot verify.**
//!
//! What is exact is everything the circuit's structure depends on, and taken from
//! filecoin-proofs' and storage-proofs' own definitions of the proof type, never typed here:
//! partitions (`PoRepConfig`), challenges per partition and the challenged nodes
//! (storage-proofs' challenge derivation from the seed, or from comm_r for NI-PoRep), layers,
//! the graph's DRG and expansion parents of each challenged node (`StackedBucketGraph`'s
//! `parents`), and the Merkle paths of tree D (binary, SHA-256) and trees R and C (the tree
//! type's base, sub- and top-tree arities, `base_path_length` levels), each leading to the
//! node it opens. The proofs are built through storage-proofs' own types (`MerkleProof`,
//! `ColumnProof`, `LabelingProof`, `EncodingProof`, `stacked::Proof`), so they serialize as a
//! real C1 output does, and [`crate::PoRepJob::new`]'s shape check (derived from
//! filecoin-proofs' public parameters, [`crate::vanilla_shape`]) accepts them.
//!
//! What is random (ChaCha20, from a seed): every hash, label, column row and leaf, the
//! replica id, comm_d, comm_c, comm_r_last, the PoRep seed and the ticket. comm_r is
//! `H(comm_c, comm_r_last)` and every opening of one tree shares its root (the circuit
//! builder requires one comm_c and one comm_r_last per partition), but no Merkle path hashes
//! to its root and no label is the hash of its parents, so a partition's witness has the
//! real circuit's counts and densities and does **not** satisfy its constraints.
//!
//! Where such an output may go:
//! - the daemon refuses it at plan, by its mark (`ProofError::ShapeOnly`, "shape-only: cannot
//!   verify"; `crate::shape_marker`), and its proving path keeps every check besides:
//!   [`crate::PoRepJob::synthesize`] refuses its partitions as `ProofError::Unsatisfied`, as
//!   it refuses any tampered input;
//! - only a bench may skip that check, through [`synthesize_for_bench`], which returns the
//!   witness together with its first unsatisfied constraint and which no proving path calls.
//!
//! On disk it is `c1.shape-only.json` ([`SHAPE_ONLY_FILE`]): the bare C1 JSON with one more
//! top-level field, [`SHAPE_ONLY_FIELD`], saying so ([`shape_only_json`], [`is_shape_only`]);
//! `parse_c1` reads it as any C1 output (serde ignores the extra field).

use std::any::Any;
use std::time::Duration;

use anyhow::{anyhow, bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use cuzk_groth16::PartitionWitness;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{
    parameters::setup_params, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, VanillaSealProof as RawVanillaSealProof, SECTOR_SIZE_2_KIB,
    SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use generic_array::typenum::{Unsigned, U0, U2};
use rand::RngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof,
    StackedDrg, TOTAL_PARENTS,
};

use crate::c1::C1Input;
use crate::error::ProofError;

/// The file name of a shape-only C1 output in a fixture directory.
pub const SHAPE_ONLY_FILE: &str = "c1.shape-only.json";
pub use crate::shape_marker::{is_shape_only, SHAPE_ONLY_FIELD, SHAPE_ONLY_NOTE};

/// The registered proof a shape-only output is made for at a sector size: interactive PoRep,
/// API 1.1 (what sectors are sealed with), for every production and test sector size.
pub fn shape_only_proof(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        SECTOR_SIZE_2_KIB => StackedDrg2KiBV1_1,
        SECTOR_SIZE_8_MIB => StackedDrg8MiBV1_1,
        SECTOR_SIZE_512_MIB => StackedDrg512MiBV1_1,
        SECTOR_SIZE_32_GIB => StackedDrg32GiBV1_1,
        SECTOR_SIZE_64_GIB => StackedDrg64GiBV1_1,
        _ => bail!(
            "no seal proof for a sector of {sector_size} bytes (2KiB, 8MiB, 512MiB, 32GiB or \
             64GiB)"
        ),
    })
}

/// A C1 output of `proof` with the exact structure of a real one and random contents drawn
/// from `seed` (the same seed gives the same output). Shape-only: cannot verify (see the
/// module documentation for where it may be used).
pub fn shape_only_c1(proof: RegisteredSealProof, seed: u64) -> Result<SealCommitPhase1Output> {
    ensure!(
        proof.major_version() == 1,
        "{proof:?}: only version 1 seal proofs have a stacked DRG C1 output"
    );
    let size = u64::from(proof.sector_size());
    with_shape!(size, shaped, proof, seed)
}

pub(crate) type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
pub(crate) type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// 32 random bytes, the top two bits clear (as filecoin-proofs makes its seeds and tickets,
/// and as SHA-256 domain elements are trimmed), never all zero.
pub(crate) fn random_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    if b == [0; 32] {
        b[0] = 1;
    }
    b
}

/// A random element of a hasher's domain: a BLS12-381 scalar, as storage-proofs requires.
/// SHA-256 domain elements are trimmed to 254 bits, as SHA-256 outputs are in tree D.
pub(crate) fn random_node<D: Domain>(rng: &mut ChaCha20Rng, sha: bool) -> D {
    if sha {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        b[31] &= 0x3f;
        D::try_from_bytes(&b).expect("a 254-bit value is a field element")
    } else {
        D::random(rng)
    }
}

/// The path elements of a Merkle proof opening `node`, leaf to root, as storage-proofs'
/// `MerkleProof::from_parts` takes them: `base_path_length` levels of the base arity, then
/// one sub-tree and one top-tree level where the tree has them; at each level the node's
/// position among its siblings (its index's digits, base levels first) and arity - 1 random
/// sibling hashes.
pub(crate) fn random_path<H: Hasher, A: Unsigned, B: Unsigned, C: Unsigned>(
    rng: &mut ChaCha20Rng,
    node: usize,
    leaves: usize,
    sha: bool,
) -> Vec<(Vec<H::Domain>, usize)> {
    let mut rest = node;
    tree_arities::<A, B, C>(leaves)
        .into_iter()
        .map(|arity| {
            let position = rest % arity;
            rest /= arity;
            let hashes = (1..arity).map(|_| random_node(rng, sha)).collect();
            (hashes, position)
        })
        .collect()
}

/// The levels of a tree type's Merkle paths over `leaves` leaves, leaf level first:
/// `base_path_length` levels of the base arity, then one sub-tree and one top-tree level where
/// the type has them (what `MerkleProof::from_parts` takes).
pub(crate) fn tree_arities<A: Unsigned, B: Unsigned, C: Unsigned>(leaves: usize) -> Vec<usize> {
    let mut arities = vec![A::to_usize(); base_path_length::<A, B, C>(leaves)];
    arities.extend([B::to_usize(), C::to_usize()].into_iter().filter(|&a| a > 0));
    arities
}

pub(crate) fn random_tree_proof<Tree: MerkleTreeTrait>(
    rng: &mut ChaCha20Rng,
    node: usize,
    leaves: usize,
    root: TreeDomain<Tree>,
) -> TreeProof<Tree> {
    let path = random_path::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
        rng, node, leaves, false,
    );
    MerkleProof::from_parts(random_node(rng, false), root, path)
}

fn random_column<Tree: MerkleTreeTrait>(
    rng: &mut ChaCha20Rng,
    node: u32,
    leaves: usize,
    layers: usize,
    comm_c: TreeDomain<Tree>,
) -> ColumnProof<TreeProof<Tree>> {
    let rows = (0..layers).map(|_| random_node(rng, false)).collect();
    let inclusion = random_tree_proof::<Tree>(rng, node as usize, leaves, comm_c);
    ColumnProof::new(node, rows, inclusion)
}

/// `count` random parent labels repeated to the 37 a label hashes, as storage-proofs repeats
/// the real ones (layer 1: the DRG parents; later layers: DRG and expansion parents).
fn random_label_parents<D: Domain>(rng: &mut ChaCha20Rng, count: usize) -> Vec<D> {
    let distinct: Vec<D> = (0..count).map(|_| random_node(rng, false)).collect();
    distinct
        .iter()
        .cycle()
        .take(TOTAL_PARENTS)
        .copied()
        .collect()
}

fn shaped<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    seed: u64,
) -> Result<SealCommitPhase1Output> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let config = proof.as_v1_config();
    let setup = setup_params(&config)?;
    let params = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(&setup)?;
    let graph = &params.graph;
    let nodes = graph.size();
    let layers = params.num_layers;
    let drg_degree = graph.base_graph().degree();
    let degree = graph.degree();
    let partitions = usize::from(config.partitions);

    let replica_id: TreeDomain<Tree> = random_node(&mut rng, false);
    let comm_d: DefaultPieceDomain = random_node(&mut rng, true);
    let comm_c: TreeDomain<Tree> = random_node(&mut rng, false);
    let comm_r_last: TreeDomain<Tree> = random_node(&mut rng, false);
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let porep_seed = random_bytes(&mut rng);
    let ticket = random_bytes(&mut rng);
    let public_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(porep_seed),
    };

    let mut vanilla: Vec<Vec<RawVanillaSealProof<Tree>>> = Vec::with_capacity(partitions);
    for k in 0..partitions {
        let challenges = public_inputs.challenges(&params.challenges, nodes, Some(k));
        let mut partition = Vec::with_capacity(challenges.len());
        for challenge in challenges {
            let mut parents = vec![0u32; degree];
            graph
                .parents(challenge, &mut parents)
                .with_context(|| format!("parents of node {challenge}"))?;
            let column = |rng: &mut ChaCha20Rng, node: u32| {
                random_column::<Tree>(rng, node, nodes, layers, comm_c)
            };
            let c_x = column(&mut rng, challenge as u32);
            let drg_parents = parents[..drg_degree]
                .iter()
                .map(|&p| column(&mut rng, p))
                .collect();
            let exp_parents = parents[drg_degree..]
                .iter()
                .map(|&p| column(&mut rng, p))
                .collect();

            let comm_d_path =
                random_path::<DefaultPieceHasher, U2, U0, U0>(&mut rng, challenge, nodes, true);
            let comm_d_proofs =
                MerkleProof::from_parts(random_node(&mut rng, true), comm_d, comm_d_path);
            let comm_r_last_proof =
                random_tree_proof::<Tree>(&mut rng, challenge, nodes, comm_r_last);

            let mut labeling_proofs = Vec::with_capacity(layers);
            let mut last_parents = Vec::new();
            for layer in 1..=layers {
                let count = if layer == 1 { drg_degree } else { degree };
                let label_parents = random_label_parents::<TreeDomain<Tree>>(&mut rng, count);
                if layer == layers {
                    last_parents = label_parents.clone();
                }
                labeling_proofs.push(LabelingProof::new(
                    layer as u32,
                    challenge as u64,
                    label_parents,
                ));
            }
            let encoding_proof = EncodingProof::new(layers as u32, challenge as u64, last_parents);

            partition.push(stacked::Proof {
                comm_d_proofs,
                comm_r_last_proof,
                replica_column_proofs: ReplicaColumnProof {
                    c_x,
                    drg_parents,
                    exp_parents,
                },
                labeling_proofs,
                encoding_proof,
            });
        }
        vanilla.push(partition);
    }

    let replica_fr: Fr = replica_id.into();
    Ok(SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs: api_proofs::<Tree>(u64::from(proof.sector_size()), vanilla)?,
        comm_r: commitment(&comm_r),
        comm_d: commitment(&comm_d),
        replica_id: replica_fr.into(),
        seed: porep_seed,
        ticket,
    })
}

pub(crate) fn commitment<D: Domain>(d: &D) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// filecoin-proofs-api's vanilla proof enum, whose variant is by sector size.
pub(crate) fn api_proofs<Tree: 'static + MerkleTreeTrait>(
    size: u64,
    proofs: Vec<Vec<RawVanillaSealProof<Tree>>>,
) -> Result<VanillaSealProof> {
    fn take<T: 'static>(any: Box<dyn Any>) -> Result<T> {
        any.downcast::<T>()
            .map(|b| *b)
            .map_err(|_| anyhow!("the sector shape's tree type is not the API's"))
    }
    let any: Box<dyn Any> = Box::new(proofs);
    Ok(match size {
        SECTOR_SIZE_2_KIB => VanillaSealProof::StackedDrg2KiBV1(take(any)?),
        SECTOR_SIZE_8_MIB => VanillaSealProof::StackedDrg8MiBV1(take(any)?),
        SECTOR_SIZE_512_MIB => VanillaSealProof::StackedDrg512MiBV1(take(any)?),
        SECTOR_SIZE_32_GIB => VanillaSealProof::StackedDrg32GiBV1(take(any)?),
        SECTOR_SIZE_64_GIB => VanillaSealProof::StackedDrg64GiBV1(take(any)?),
        _ => bail!("no filecoin-proofs-api vanilla proof for a sector of {size} bytes"),
    })
}

/// The JSON of a shape-only output: the bare C1 JSON with the [`SHAPE_ONLY_FIELD`] field
/// first, saying "shape-only: cannot verify" and the seed it was drawn from.
pub fn shape_only_json(c1: &SealCommitPhase1Output, seed: u64) -> Result<Vec<u8>> {
    let note = format!(
        "random contents with the exact structure of a {:?} C1 output, for benches only (its \
         partitions do not satisfy their circuit)",
        c1.registered_proof
    );
    Ok(crate::shape_marker::marked_json(c1, &note, seed)?)
}

/// A partition's witness made without the satisfaction check, and what that check finds.
pub struct BenchSynthesis {
    pub witness: PartitionWitness,
    /// The first constraint with a * b != c; `Some` for every shape-only output.
    pub first_unsatisfied: Option<usize>,
    /// Building the circuit from the vanilla proofs.
    pub circuit: Duration,
    /// Synthesis proper (the reference path).
    pub synthesis: Duration,
}

/// Partition `k`'s witness on the reference path (`PartitionWitness::synthesize`, as
/// [`crate::PoRepJob::synthesize_with`] with `SynthesisPath::Reference` makes it), **without
/// refusing an unsatisfied one**: for benches on shape-only outputs only (shape-only: cannot
/// verify). The input is checked by [`crate::PoRepJob::new`] first, shape check included;
/// no proving path calls this, and the daemon's [`crate::PoRepJob::synthesize`] keeps
/// refusing unsatisfied witnesses.
pub fn synthesize_for_bench(c1: &C1Input, k: usize) -> Result<BenchSynthesis, ProofError> {
    let job = crate::PoRepJob::new(c1)?;
    let (witness, t, first_unsatisfied) = job.synthesize_unchecked(k, crate::synthesis::SynthesisPath::Reference)?;
    Ok(BenchSynthesis { witness, first_unsatisfied, circuit: t.circuit, synthesis: t.synthesis })
}

/// The scalar mix of a real PoRep witness (partition 0 of the C1 output at `path`,
/// synthesized and checked): what shape-only witnesses are drawn with.
pub fn witness_mix(path: &std::path::Path) -> Result<cuzk_groth16::shape::WitnessMix> {
    let input = crate::parse_c1(&std::fs::read(path).with_context(|| format!("reading {}", path.display()))?)?;
    let (w, _) = crate::PoRepJob::new(&input)?.synthesize(0)?;
    Ok(cuzk_groth16::shape::WitnessMix::of(&w))
}

/// The parameter shape of a job's circuit (any kind): partition 0 synthesized on the
/// compiled path without the satisfaction check (a shape-only input's partitions do not
/// satisfy it).
pub fn srs_shape(job: &dyn crate::ProofJob) -> Result<cuzk_groth16::SrsShape> {
    let (w, _, _) = job.synthesize_unchecked(0, crate::synthesis::SynthesisPath::CompiledUnchecked)?;
    Ok(cuzk_groth16::prover::required_shape(&w))
}
