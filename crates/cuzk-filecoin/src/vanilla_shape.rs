//! The shape a C1 output's vanilla proofs must have for its registered proof, checked before
//! any circuit is built.
//!
//! storage-proofs builds and synthesizes the PoRep circuit from the vanilla proofs as they
//! come. A Merkle path one level short, a missing parent or a missing layer trips an `assert!`
//! deep inside synthesis (a panic, not an error), a hash that is not a field element trips an
//! `expect`, and 40 times the challenges is 40 times the work before anything fails.
//! [`check_vanilla_shape`] compares every count, length and index with what the proof type
//! gives, in one pass over the input, and names the partition, the challenge, the part, what
//! was expected and what was found.
//!
//! Checked, for the stacked DRG `Proof` of storage-proofs-porep 19 (one per challenge):
//! - partitions, and challenges per partition: filecoin-proofs' `PoRepConfig` and
//!   `setup_params` (interactive, synthetic and non-interactive PoRep differ);
//! - the challenged node (labeling proofs, encoding proof, the comm_d, comm_r_last and c_x
//!   openings): the node the verifier derives from the seed (from comm_r for NI-PoRep) with
//!   the same storage-proofs function, in order;
//! - every Merkle proof (comm_d: the binary SHA-256 tree D; comm_r_last and every column: trees
//!   R and C, 8-ary with the sector shape's sub- and top-tree levels): one path element per
//!   level, arity - 1 sibling hashes and a position below the arity at each, leading to the
//!   node it opens;
//! - replica columns: one row per layer; the graph's 6 DRG and 8 expansion parents, each
//!   column at its parent's node;
//! - labeling proofs: one per layer, in layer order, 37 parents each; the encoding proof: the
//!   last layer's, 37 parents;
//! - every Merkle node and column row is a canonical BLS12-381 scalar (storage-proofs converts
//!   them with `Fr::from_repr_vartime(..).expect(..)`).
//!
//! Not checked: the hashes themselves (that is Merkle verification, the vanilla verifier's
//! work). A proof with a wrong hash has the right shape; its partition's synthesis finds the
//! unsatisfied constraint before any proving. The other `assert!`s of the circuit code are on
//! the configuration (arities, degrees, 2 or 11 layers), not on the input.
//!
//! The private fields of storage-proofs' types (column rows and indices, labeling proofs) are
//! read by serializing each challenge proof and reading it back into this module's mirror of
//! the format: about half the time `parse_c1` spends on the same input.

use ff::PrimeField;
use filecoin_hashers::Hasher;
use filecoin_proofs::{with_shape, DefaultPieceDomain, DefaultPieceHasher, PoRepConfig};
use filecoin_proofs_api::RegisteredSealProof;
use rayon::prelude::*;
use serde::Deserialize;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, BinaryMerkleTree, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, TOTAL_PARENTS};

#[derive(Debug, thiserror::Error)]
pub enum VanillaShapeError {
    /// The outer list of the vanilla proofs (one entry per partition) has the wrong length.
    #[error("{found} partitions of vanilla proofs; {proof:?} has {expected}")]
    Partitions {
        proof: RegisteredSealProof,
        expected: usize,
        found: usize,
    },
    /// A partition holds the wrong number of challenge proofs.
    #[error(
        "partition {partition} holds {found} challenge proofs; {proof:?} has {expected} \
         challenges per partition"
    )]
    Challenges {
        proof: RegisteredSealProof,
        partition: usize,
        expected: usize,
        found: usize,
    },
    /// One part of one challenge's proof differs from what the proof type gives.
    #[error(
        "partition {partition}, challenge {challenge}, {part}: expected {expected}, found {found}"
    )]
    Mismatch {
        partition: usize,
        challenge: usize,
        part: String,
        expected: String,
        found: String,
    },
    /// A field of the C1 output that storage-proofs reads as a field element is not one (it
    /// would panic on it).
    #[error("{field} is not a BLS12-381 scalar (found {found}); the C1 output is corrupt")]
    NotAScalar { field: &'static str, found: String },
    /// A challenge proof could not be re-read for checking: storage-proofs' serialized form is
    /// not the one this module reads (a cuzk bug after an upgrade, not a bad input).
    #[error(
        "partition {partition}, challenge {challenge}: the vanilla proof cannot be read for \
         checking ({reason}); storage-proofs' serialization differs from what cuzk expects"
    )]
    Unreadable {
        partition: usize,
        challenge: usize,
        reason: String,
    },
    /// The node or parent derivation of storage-proofs failed.
    #[error("deriving the challenged nodes of partition {partition} failed: {reason}")]
    Derivation { partition: usize, reason: String },
    /// The arities of a tree type could not be read (a cuzk bug after an upgrade).
    #[error("cannot read the arities of the tree type {tree}")]
    TreeArities { tree: String },
    /// filecoin-proofs refused to set up the proof type's public parameters.
    #[error("setting up the public parameters of {proof:?} failed: {reason}")]
    Setup {
        proof: RegisteredSealProof,
        reason: String,
    },
}

/// The arities of the levels a Merkle path climbs, leaf to root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeShape {
    pub base_arity: usize,
    /// Levels of the base tree (one path element each).
    pub base_levels: usize,
    /// The sub-tree level's arity (one element), 0 where the tree has none.
    pub sub_arity: usize,
    /// The top-tree level's arity (one element), 0 where the tree has none.
    pub top_arity: usize,
}

impl TreeShape {
    /// The shape of `Tree` over `leaves` leaves. The arities are read from the tree's name,
    /// `merkletree-<hasher>-<base>-<sub>-<top>`, which also names every parameter file (so it
    /// does not drift).
    pub fn of<Tree: MerkleTreeTrait>(leaves: usize) -> Result<TreeShape, VanillaShapeError> {
        let name = Tree::display();
        let bad = || VanillaShapeError::TreeArities { tree: name.clone() };
        let mut arities = name.rsplitn(4, '-').take(3).map(|a| a.parse::<usize>());
        let (top, sub, base) = match (arities.next(), arities.next(), arities.next()) {
            (Some(Ok(t)), Some(Ok(s)), Some(Ok(b))) => (t, s, b),
            _ => return Err(bad()),
        };
        if base < 2 || (top > 0 && sub == 0) {
            return Err(bad());
        }
        Ok(TreeShape {
            base_arity: base,
            base_levels: base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
                leaves,
            ),
            sub_arity: sub,
            top_arity: top,
        })
    }

    /// Arity of each path element, leaf to root.
    pub fn levels(&self) -> Vec<usize> {
        let mut levels = vec![self.base_arity; self.base_levels];
        levels.extend(
            [self.sub_arity, self.top_arity]
                .into_iter()
                .filter(|&a| a > 0),
        );
        levels
    }
}

impl std::fmt::Display for TreeShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} levels of arity {}",
            self.base_levels, self.base_arity
        )?;
        if self.sub_arity > 0 {
            write!(f, ", a sub-tree level of arity {}", self.sub_arity)?;
        }
        if self.top_arity > 0 {
            write!(f, ", a top-tree level of arity {}", self.top_arity)?;
        }
        Ok(())
    }
}

/// What a registered proof's vanilla proofs must look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedShape {
    pub proof: RegisteredSealProof,
    /// Nodes of the sector (32 bytes each).
    pub nodes: usize,
    pub partitions: usize,
    pub challenges_per_partition: usize,
    pub layers: usize,
    pub drg_parents: usize,
    pub exp_parents: usize,
    /// Parents hashed into one label (the DRG and expansion parents, repeated).
    pub label_parents: usize,
    /// Tree D, the SHA-256 tree of the sector data (comm_d).
    pub tree_d: TreeShape,
    /// Trees R and C (comm_r_last, and the columns' comm_c), which share a shape.
    pub tree_r: TreeShape,
}

impl ExpectedShape {
    /// The shape of `proof`'s vanilla proofs, from filecoin-proofs' configuration of it.
    pub fn of(proof: RegisteredSealProof) -> Result<ExpectedShape, VanillaShapeError> {
        let size = u64::from(proof.sector_size());
        with_shape!(size, expected_shape, proof)
    }

    /// The shape from the proof's configuration and its vanilla public parameters.
    pub(crate) fn new<Tree: 'static + MerkleTreeTrait>(
        proof: RegisteredSealProof,
        config: &PoRepConfig,
        params: &stacked::PublicParams<Tree>,
    ) -> Result<ExpectedShape, VanillaShapeError> {
        let nodes = params.graph.size();
        Ok(ExpectedShape {
            proof,
            nodes,
            partitions: usize::from(config.partitions),
            challenges_per_partition: params.challenges.num_challenges_per_partition(),
            layers: params.num_layers,
            drg_parents: params.graph.base_graph().degree(),
            exp_parents: params.graph.expansion_degree(),
            label_parents: TOTAL_PARENTS,
            tree_d: TreeShape::of::<BinaryMerkleTree<DefaultPieceHasher>>(nodes)?,
            tree_r: TreeShape::of::<Tree>(nodes)?,
        })
    }
}

fn expected_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
) -> Result<ExpectedShape, VanillaShapeError> {
    let config = proof.as_v1_config();
    let failed = |e: anyhow::Error| VanillaShapeError::Setup {
        proof,
        reason: format!("{e:#}"),
    };
    let setup = filecoin_proofs::parameters::setup_params(&config).map_err(failed)?;
    let params =
        <stacked::StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(&setup)
            .map_err(failed)?;
    ExpectedShape::new::<Tree>(proof, &config, &params)
}

/// True when `bytes` is the canonical little-endian encoding of a BLS12-381 scalar, the
/// condition under which storage-proofs' domain-to-`Fr` conversions do not panic.
pub fn is_field_element(bytes: &[u8]) -> bool {
    let Ok(repr) = <[u8; 32]>::try_from(bytes) else {
        return false;
    };
    bool::from(blstrs::Scalar::from_repr_vartime(repr).is_some())
}

/// Little-endian bytes as the number they encode, in hex.
pub(crate) fn hex_le(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().rev().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

/// Refuses vanilla proofs whose shape is not `expected`'s: counts first (before any work
/// proportional to a possibly inflated input), then each challenge proof, in parallel. The
/// error reported is the first in (partition, challenge) order.
pub(crate) fn check_vanilla_shape<Tree: 'static + MerkleTreeTrait>(
    expected: &ExpectedShape,
    params: &stacked::PublicParams<Tree>,
    public_inputs: &stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    vanilla: &[Vec<stacked::Proof<Tree, DefaultPieceHasher>>],
) -> Result<(), VanillaShapeError> {
    if vanilla.len() != expected.partitions {
        return Err(VanillaShapeError::Partitions {
            proof: expected.proof,
            expected: expected.partitions,
            found: vanilla.len(),
        });
    }
    if let Some((partition, p)) = vanilla
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() != expected.challenges_per_partition)
    {
        return Err(VanillaShapeError::Challenges {
            proof: expected.proof,
            partition,
            expected: expected.challenges_per_partition,
            found: p.len(),
        });
    }
    // The nodes the verifier's public inputs are derived from (storage-proofs'
    // `generate_public_inputs` calls the same `challenges` and `parents`).
    let nodes: Vec<Vec<(usize, Vec<u32>)>> = (0..expected.partitions)
        .into_par_iter()
        .map(|k| {
            let challenges = public_inputs.challenges(&params.challenges, expected.nodes, Some(k));
            if challenges.len() != expected.challenges_per_partition {
                return Err(VanillaShapeError::Derivation {
                    partition: k,
                    reason: format!("{} challenges derived", challenges.len()),
                });
            }
            challenges
                .into_iter()
                .map(|c| {
                    let mut parents = vec![0u32; expected.drg_parents + expected.exp_parents];
                    params.graph.parents(c, &mut parents).map_err(|e| {
                        VanillaShapeError::Derivation {
                            partition: k,
                            reason: format!("parents of node {c}: {e:#}"),
                        }
                    })?;
                    Ok((c, parents))
                })
                .collect()
        })
        .collect::<Result<_, _>>()?;

    let at: Vec<(usize, usize)> = (0..expected.partitions)
        .flat_map(|k| (0..expected.challenges_per_partition).map(move |i| (k, i)))
        .collect();
    match at.par_iter().find_map_first(|&(k, i)| {
        let (challenge, parents) = &nodes[k][i];
        check_challenge_proof(expected, &vanilla[k][i], *challenge, parents)
            .err()
            .map(|e| e.at(k, i))
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What is wrong with one challenge proof, before the partition and challenge are known.
enum ChallengeError {
    Mismatch {
        part: String,
        expected: String,
        found: String,
    },
    Unreadable(String),
}

impl ChallengeError {
    fn at(self, partition: usize, challenge: usize) -> VanillaShapeError {
        match self {
            ChallengeError::Mismatch {
                part,
                expected,
                found,
            } => VanillaShapeError::Mismatch {
                partition,
                challenge,
                part,
                expected,
                found,
            },
            ChallengeError::Unreadable(reason) => VanillaShapeError::Unreadable {
                partition,
                challenge,
                reason,
            },
        }
    }
}

fn mismatch(
    part: impl Into<String>,
    expected: impl ToString,
    found: impl ToString,
) -> ChallengeError {
    ChallengeError::Mismatch {
        part: part.into(),
        expected: expected.to_string(),
        found: found.to_string(),
    }
}

/// One challenge proof as it serializes (storage-proofs-porep's `stacked::Proof`), with the
/// fields its crate keeps private readable. Node values are read as bytes.
#[derive(Deserialize)]
struct ChallengeProof {
    comm_d_proofs: MerkleProof,
    comm_r_last_proof: MerkleProof,
    replica_column_proofs: ReplicaColumnProof,
    labeling_proofs: Vec<LabelProof>,
    encoding_proof: LabelProof,
}

type Node = [u8; 32];

/// storage-proofs-core's `MerkleProof`: its `data` is one of three kinds by tree shape.
#[derive(Deserialize)]
struct MerkleProof {
    data: ProofData,
}

#[derive(Deserialize)]
enum ProofData {
    Single {
        root: Node,
        leaf: Node,
        path: InclusionPath,
    },
    Sub {
        base_proof: InclusionPath,
        sub_proof: InclusionPath,
        root: Node,
        leaf: Node,
    },
    Top {
        base_proof: InclusionPath,
        sub_proof: InclusionPath,
        top_proof: InclusionPath,
        root: Node,
        leaf: Node,
    },
}

#[derive(Deserialize)]
struct InclusionPath {
    path: Vec<PathElement>,
}

#[derive(Deserialize)]
struct PathElement {
    hashes: Vec<Node>,
    index: u64,
}

#[derive(Deserialize)]
struct ReplicaColumnProof {
    c_x: ColumnProof,
    drg_parents: Vec<ColumnProof>,
    exp_parents: Vec<ColumnProof>,
}

#[derive(Deserialize)]
struct ColumnProof {
    column: Column,
    inclusion_proof: MerkleProof,
}

#[derive(Deserialize)]
struct Column {
    index: u32,
    rows: Vec<Node>,
}

/// A labeling or encoding proof (the same fields).
#[derive(Deserialize)]
struct LabelProof {
    parents: Vec<Node>,
    layer_index: u32,
    node: u64,
}

impl MerkleProof {
    /// The proof's paths (base, then sub and top where present), root and leaf.
    fn parts(&self) -> (Vec<&InclusionPath>, &Node, &Node) {
        match &self.data {
            ProofData::Single { root, leaf, path } => (vec![path], root, leaf),
            ProofData::Sub {
                base_proof,
                sub_proof,
                root,
                leaf,
            } => (vec![base_proof, sub_proof], root, leaf),
            ProofData::Top {
                base_proof,
                sub_proof,
                top_proof,
                root,
                leaf,
            } => (vec![base_proof, sub_proof, top_proof], root, leaf),
        }
    }
}

fn field_element(part: &str, what: &str, bytes: &Node) -> Result<(), ChallengeError> {
    if is_field_element(bytes) {
        return Ok(());
    }
    Err(mismatch(
        format!("{part}, {what}"),
        "a BLS12-381 scalar (below the modulus)",
        hex_le(bytes),
    ))
}

/// Checks a Merkle proof against its tree's shape and returns the node it opens (the index
/// the circuit's path bits spell: each level's position times the leaves below it). What is
/// checked is the path as the circuit reads it (`MerkleProofTrait::path`: base, then sub- and
/// top-tree elements), whatever the proof's kind.
fn check_merkle_proof(
    part: &str,
    proof: &MerkleProof,
    shape: &TreeShape,
) -> Result<u64, ChallengeError> {
    let (parts, root, leaf) = proof.parts();
    let levels = shape.levels();
    let elements: Vec<&PathElement> = parts.iter().flat_map(|p| p.path.iter()).collect();
    if elements.len() != levels.len() {
        return Err(mismatch(
            format!("{part}, path"),
            format!("{} levels ({shape})", levels.len()),
            format!("{} levels", elements.len()),
        ));
    }
    field_element(part, "root", root)?;
    field_element(part, "leaf", leaf)?;
    let mut node: u64 = 0;
    let mut below: u64 = 1;
    for (level, (element, arity)) in elements.into_iter().zip(levels).enumerate() {
        if element.hashes.len() != arity - 1 {
            return Err(mismatch(
                format!("{part}, level {level}"),
                format!("{} sibling hashes (arity {arity})", arity - 1),
                element.hashes.len(),
            ));
        }
        if element.index >= arity as u64 {
            return Err(mismatch(
                format!("{part}, level {level}"),
                format!("a position below the arity {arity}"),
                format!("position {}", element.index),
            ));
        }
        for hash in &element.hashes {
            field_element(part, &format!("level {level} sibling hash"), hash)?;
        }
        node += element.index * below;
        below *= arity as u64;
    }
    Ok(node)
}

fn check_column(
    part: &str,
    column: &ColumnProof,
    expected: &ExpectedShape,
) -> Result<u64, ChallengeError> {
    if column.column.rows.len() != expected.layers {
        return Err(mismatch(
            format!("{part}, rows"),
            format!("{} (one per layer)", expected.layers),
            column.column.rows.len(),
        ));
    }
    for (layer, row) in column.column.rows.iter().enumerate() {
        field_element(part, &format!("row of layer {}", layer + 1), row)?;
    }
    let opened = check_merkle_proof(
        &format!("{part}, inclusion proof"),
        &column.inclusion_proof,
        &expected.tree_r,
    )?;
    if u64::from(column.column.index) != opened {
        return Err(mismatch(
            format!("{part}, column index"),
            format!("node {opened} (the one its inclusion proof opens)"),
            column.column.index,
        ));
    }
    Ok(opened)
}

fn check_label_proof(
    part: &str,
    proof: &LabelProof,
    layer: usize,
    expected: &ExpectedShape,
) -> Result<(), ChallengeError> {
    if proof.layer_index as usize != layer {
        return Err(mismatch(
            format!("{part}, layer index"),
            layer,
            proof.layer_index,
        ));
    }
    if proof.parents.len() != expected.label_parents {
        return Err(mismatch(
            format!("{part}, parents"),
            format!(
                "{} (the DRG and expansion parents, repeated)",
                expected.label_parents
            ),
            proof.parents.len(),
        ));
    }
    Ok(())
}

fn check_challenge_proof<P: serde::Serialize>(
    expected: &ExpectedShape,
    typed: &P,
    challenge: usize,
    parents: &[u32],
) -> Result<(), ChallengeError> {
    let json = serde_json::to_vec(typed).map_err(|e| ChallengeError::Unreadable(e.to_string()))?;
    let proof: ChallengeProof =
        serde_json::from_slice(&json).map_err(|e| ChallengeError::Unreadable(e.to_string()))?;
    let challenge = challenge as u64;
    let node_mismatch = |part: &str, found: u64| {
        mismatch(
            part,
            format!("node {challenge} (the challenge the verifier derives)"),
            format!("node {found}"),
        )
    };

    // Counts first: the circuit asserts on them.
    if proof.labeling_proofs.len() != expected.layers {
        return Err(mismatch(
            "labeling proofs",
            format!("{} (one per layer)", expected.layers),
            proof.labeling_proofs.len(),
        ));
    }
    let columns = &proof.replica_column_proofs;
    if columns.drg_parents.len() != expected.drg_parents {
        return Err(mismatch(
            "DRG parent columns",
            expected.drg_parents,
            columns.drg_parents.len(),
        ));
    }
    if columns.exp_parents.len() != expected.exp_parents {
        return Err(mismatch(
            "expansion parent columns",
            expected.exp_parents,
            columns.exp_parents.len(),
        ));
    }

    // The circuit takes the challenge from the first labeling proof.
    for (i, label) in proof.labeling_proofs.iter().enumerate() {
        let part = format!("labeling proof of layer {}", i + 1);
        check_label_proof(&part, label, i + 1, expected)?;
        if label.node != challenge {
            return Err(node_mismatch(&part, label.node));
        }
    }
    check_label_proof(
        "encoding proof",
        &proof.encoding_proof,
        expected.layers,
        expected,
    )?;
    if proof.encoding_proof.node != challenge {
        return Err(node_mismatch("encoding proof", proof.encoding_proof.node));
    }

    let opened = check_merkle_proof("comm_d proof", &proof.comm_d_proofs, &expected.tree_d)?;
    if opened != challenge {
        return Err(node_mismatch("comm_d proof", opened));
    }
    let opened = check_merkle_proof(
        "comm_r_last proof",
        &proof.comm_r_last_proof,
        &expected.tree_r,
    )?;
    if opened != challenge {
        return Err(node_mismatch("comm_r_last proof", opened));
    }
    let opened = check_column("column of the challenged node", &columns.c_x, expected)?;
    if opened != challenge {
        return Err(node_mismatch("column of the challenged node", opened));
    }

    let parent_columns = columns
        .drg_parents
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("column of DRG parent {i}"), c))
        .chain(
            columns
                .exp_parents
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("column of expansion parent {i}"), c)),
        );
    for ((part, column), &parent) in parent_columns.zip(parents) {
        let opened = check_column(&part, column, expected)?;
        if opened != u64::from(parent) {
            return Err(mismatch(
                part,
                format!("node {parent} (the graph's parent of node {challenge})"),
                format!("node {opened}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs_api::RegisteredSealProof::*;

    fn tree(base_levels: usize, sub_arity: usize, top_arity: usize) -> TreeShape {
        TreeShape {
            base_arity: 8,
            base_levels,
            sub_arity,
            top_arity,
        }
    }

    fn binary(levels: usize) -> TreeShape {
        TreeShape {
            base_arity: 2,
            base_levels: levels,
            sub_arity: 0,
            top_arity: 0,
        }
    }

    /// The published values: 1 partition of 2 challenges and 2 layers up to 1 GiB, 10
    /// partitions of 18 challenges and 11 layers at 32 and 64 GiB; NI-PoRep 13 or 126
    /// partitions; 6 DRG and 8 expansion parents; tree R 8-ary with the sector shape's levels.
    #[test]
    fn expected_shapes_are_filecoin_proofs_values() {
        let cases = [
            (StackedDrg2KiBV1_1, 64, 1, 2, 2, binary(6), tree(2, 0, 0)),
            (
                StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
                64,
                1,
                2,
                2,
                binary(6),
                tree(2, 0, 0),
            ),
            (
                StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
                64,
                13,
                2,
                2,
                binary(6),
                tree(2, 0, 0),
            ),
            (
                StackedDrg8MiBV1_1,
                1 << 18,
                1,
                2,
                2,
                binary(18),
                tree(6, 0, 0),
            ),
            (
                StackedDrg512MiBV1_1,
                1 << 24,
                1,
                2,
                2,
                binary(24),
                tree(8, 0, 0),
            ),
            (
                StackedDrg32GiBV1_1,
                1 << 30,
                10,
                18,
                11,
                binary(30),
                tree(9, 8, 0),
            ),
            (
                StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
                1 << 30,
                10,
                18,
                11,
                binary(30),
                tree(9, 8, 0),
            ),
            (
                StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
                1 << 30,
                126,
                18,
                11,
                binary(30),
                tree(9, 8, 0),
            ),
            (
                StackedDrg64GiBV1_1,
                1 << 31,
                10,
                18,
                11,
                binary(31),
                tree(9, 8, 2),
            ),
        ];
        for (proof, nodes, partitions, challenges, layers, tree_d, tree_r) in cases {
            let e = ExpectedShape::of(proof).unwrap();
            let expected = ExpectedShape {
                proof,
                nodes,
                partitions,
                challenges_per_partition: challenges,
                layers,
                drg_parents: 6,
                exp_parents: 8,
                label_parents: 37,
                tree_d,
                tree_r,
            };
            assert_eq!(e, expected, "{proof:?}");
        }
        assert_eq!(tree(9, 8, 2).levels(), [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 2]);
    }

    /// Every registered proof has an expected shape (its tree's arities can be read).
    #[test]
    fn every_registered_proof_has_a_shape() {
        for proof in crate::c1::REGISTERED_SEAL_PROOFS {
            ExpectedShape::of(proof).unwrap_or_else(|e| panic!("{proof:?}: {e}"));
        }
    }

    #[test]
    fn field_elements_are_those_below_the_modulus() {
        assert!(is_field_element(&[0; 32]));
        let mut r_minus_1 = (-blstrs::Scalar::from(1u64)).to_repr();
        assert!(is_field_element(&r_minus_1));
        r_minus_1[0] += 1; // r itself
        assert!(!is_field_element(&r_minus_1));
        assert!(!is_field_element(&[0xff; 32]));
    }

    /// What this module reads of a Merkle proof is what storage-proofs' `path()` gives the
    /// circuit, for every proof kind: generated trees of each sector shape, every leaf.
    fn reads_merkle_proofs_as_storage_proofs_does<Tree: 'static + MerkleTreeTrait>(leaves: usize) {
        use storage_proofs_core::merkle::{generate_tree, MerkleProofTrait};
        let mut rng = rand::thread_rng();
        let (_, tree) = generate_tree::<Tree, _>(&mut rng, leaves, None);
        let shape = TreeShape::of::<Tree>(leaves).unwrap();
        for leaf in 0..leaves {
            let typed = tree.gen_proof(leaf).unwrap();
            let read: MerkleProof =
                serde_json::from_slice(&serde_json::to_vec(&typed).unwrap()).unwrap();
            let opened = check_merkle_proof("proof", &read, &shape).unwrap_or_else(|e| match e {
                ChallengeError::Mismatch {
                    part,
                    expected,
                    found,
                } => {
                    panic!(
                        "{}: {part}: expected {expected}, found {found}",
                        Tree::display()
                    )
                }
                ChallengeError::Unreadable(r) => panic!("{r}"),
            });
            assert_eq!(opened, leaf as u64, "{}", Tree::display());
            assert_eq!(typed.path_index(), leaf);
            let (parts, _, _) = read.parts();
            let elements: Vec<(usize, u64)> = parts
                .iter()
                .flat_map(|p| p.path.iter())
                .map(|e| (e.hashes.len(), e.index))
                .collect();
            let typed_elements: Vec<(usize, u64)> = typed
                .path()
                .iter()
                .map(|(h, i)| (h.len(), *i as u64))
                .collect();
            assert_eq!(elements, typed_elements, "{}", Tree::display());
        }
    }

    #[test]
    fn reads_merkle_proofs_of_every_tree_shape() {
        use filecoin_hashers::{poseidon::PoseidonHasher, sha256::Sha256Hasher};
        use filecoin_proofs::constants::{
            SectorShapeBase, SectorShapeSub2, SectorShapeSub8, SectorShapeTop2,
        };
        use storage_proofs_core::merkle::DiskTree;
        type Shape<S> = DiskTree<
            PoseidonHasher,
            <S as MerkleTreeTrait>::Arity,
            <S as MerkleTreeTrait>::SubTreeArity,
            <S as MerkleTreeTrait>::TopTreeArity,
        >;
        reads_merkle_proofs_as_storage_proofs_does::<Shape<SectorShapeBase>>(64);
        reads_merkle_proofs_as_storage_proofs_does::<Shape<SectorShapeSub2>>(128);
        reads_merkle_proofs_as_storage_proofs_does::<Shape<SectorShapeSub8>>(512);
        reads_merkle_proofs_as_storage_proofs_does::<Shape<SectorShapeTop2>>(1024);
        reads_merkle_proofs_as_storage_proofs_does::<BinaryMerkleTree<Sha256Hasher>>(64);
    }
}
