//! storage-proofs-porep 19's stacked DRG circuit, rebuilt from the vanilla proofs so that
//! witness-only synthesis can hash the labels and tree D's path natively ([`crate::native_sha`]).
//!
//! [`PoRepCircuit`] takes the steps of storage-proofs' `StackedCircuit::synthesize` (the
//! public values, comm_r = H(comm_c, comm_r_last), then each challenge in its top-level
//! namespace `challenge_<i>`) and of its per-challenge `Proof::synthesize` (data leaf and
//! tree D path, the parents' columns and tree C paths, the challenge as input, one label per
//! layer, the encoding and tree R path, the column hash), calling the same public gadgets of
//! storage-proofs, bellperson and filecoin-hashers in the same order. Two steps differ: in a
//! constraint system that is a witness generator (cuzk's witness-only one), each label's
//! SHA-256 and packing, and each level's SHA-256 of tree D's path ([`comm_d_inclusion`]), are
//! computed natively, with the gadgets' allocations; anywhere else (recording, the reference
//! `WitnessCs`) storage-proofs' `create_label_circuit` and `PoRCircuit` run. So
//! the recorded matrices are storage-proofs' own, and the witness-only assignments equal the
//! gadget's (both checked on the 2 KiB fixture and the shape-only circuits by the tests).
//!
//! storage-proofs keeps its circuit's per-challenge type and some vanilla fields (column
//! rows, tree C openings, the labeled node) private; they are read by serializing each
//! challenge proof and reading it back into this module's mirror of those fields, as
//! [`crate::vanilla_shape`] does.

use anyhow::ensure;
use std::any::TypeId;

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::gadgets::{multipack, uint32::UInt32};
use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{HashFunction, Hasher, PoseidonArity};
use generic_array::typenum::{U0, U11, U2};
use serde::Deserialize;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::{constraint, encode::encode, insertion::insert, uint64::UInt64, variables::Root};
use storage_proofs_core::merkle::{DiskStore, MerkleProof, MerkleProofTrait, MerkleTreeTrait, MerkleTreeWrapper};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, create_label_circuit, TOTAL_PARENTS};

use crate::native_sha::{self, Bit};

type TreePath<Tree> = AuthPath<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The private fields of a vanilla challenge proof this circuit needs, as they serialize.
#[derive(Deserialize)]
#[serde(bound(deserialize = "P: serde::de::DeserializeOwned, D: serde::de::DeserializeOwned"))]
struct PrivateFields<P, D> {
    replica_column_proofs: Openings<P, D>,
    labeling_proofs: Vec<LabeledNode>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "P: serde::de::DeserializeOwned, D: serde::de::DeserializeOwned"))]
struct Openings<P, D> {
    c_x: ColumnOpening<P, D>,
    drg_parents: Vec<ColumnOpening<P, D>>,
    exp_parents: Vec<ColumnOpening<P, D>>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "P: serde::de::DeserializeOwned, D: serde::de::DeserializeOwned"))]
struct ColumnOpening<P, D> {
    column: ColumnRows<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "D: serde::de::DeserializeOwned"))]
struct ColumnRows<D> {
    rows: Vec<D>,
}

#[derive(Deserialize)]
struct LabeledNode {
    node: u64,
}

/// A parent's column: its rows (one per layer) and its tree C path.
struct Column<Tree: MerkleTreeTrait> {
    rows: Vec<Fr>,
    path: TreePath<Tree>,
}

/// One challenge's values, as storage-proofs' circuit holds them.
struct Challenge<Tree: MerkleTreeTrait, G: Hasher> {
    data_leaf: Fr,
    /// Tree D's path as `MerkleProof::as_options` gives it: per level, the sibling and
    /// the node's index in its pair.
    comm_d_path: PathOptions,
    /// Tree D's hasher.
    hasher: std::marker::PhantomData<G>,
    node: u64,
    comm_r_last_path: TreePath<Tree>,
    comm_c_path: TreePath<Tree>,
    drg_parents: Vec<Column<Tree>>,
    exp_parents: Vec<Column<Tree>>,
}

/// A partition's stacked DRG circuit (or a run of its challenges: see
/// `cuzk_groth16::compiled::synthesize_compiled_pieces`), equal to storage-proofs'
/// `StackedCompound::circuit` of the same vanilla proofs.
pub struct PoRepCircuit<Tree: MerkleTreeTrait, G: Hasher> {
    replica_id: Fr,
    comm_d: Fr,
    comm_r: Fr,
    comm_r_last: Fr,
    comm_c: Fr,
    challenges: Vec<Challenge<Tree, G>>,
}

impl<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher> PoRepCircuit<Tree, G> {
    /// The circuit of `proofs` (consecutive challenge proofs of one partition), with the
    /// checks storage-proofs' `circuit()` makes.
    pub fn new(
        public_inputs: &stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, G::Domain>,
        proofs: &[stacked::Proof<Tree, G>],
    ) -> anyhow::Result<Self> {
        ensure!(!proofs.is_empty(), "Cannot create a circuit with no vanilla proofs");
        let tau = public_inputs.tau.as_ref().ok_or_else(|| anyhow::anyhow!("missing tau"))?;
        let (comm_r_last, comm_c) = (proofs[0].comm_r_last(), proofs[0].comm_c());
        ensure!(proofs.iter().all(|p| p.comm_r_last() == comm_r_last), "inconsistent comm_r_lasts");
        ensure!(proofs.iter().all(|p| p.comm_c() == comm_c), "inconsistent comm_cs");
        Ok(PoRepCircuit {
            replica_id: public_inputs.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            comm_r_last: comm_r_last.into(),
            comm_c: comm_c.into(),
            challenges: proofs.iter().map(Challenge::of).collect::<anyhow::Result<_>>()?,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher> Challenge<Tree, G> {
    fn of(proof: &stacked::Proof<Tree, G>) -> anyhow::Result<Self> {
        let private: PrivateFields<TreeProof<Tree>, <Tree::Hasher as Hasher>::Domain> =
            serde_json::from_value(serde_json::to_value(proof)?)?;
        let column = |c: ColumnOpening<TreeProof<Tree>, _>| Column::<Tree> {
            rows: c.column.rows.into_iter().map(Into::into).collect(),
            path: c.inclusion_proof.as_options().into(),
        };
        let openings = private.replica_column_proofs;
        let node = private.labeling_proofs.first().ok_or_else(|| anyhow::anyhow!("no labeling proofs"))?.node;
        Ok(Challenge {
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            hasher: std::marker::PhantomData,
            node,
            comm_r_last_path: proof.comm_r_last_proof.as_options().into(),
            comm_c_path: openings.c_x.inclusion_proof.as_options().into(),
            drg_parents: openings.drg_parents.into_iter().map(column).collect(),
            exp_parents: openings.exp_parents.into_iter().map(column).collect(),
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher> Circuit<Fr> for PoRepCircuit<Tree, G> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let replica_id = AllocatedNum::alloc(cs.namespace(|| "replica_id"), || Ok(self.replica_id))?;
        replica_id.inputize(cs.namespace(|| "replica_id_input"))?;
        let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(cs.namespace(|| "replica_id_bits"))?);
        let comm_d = AllocatedNum::alloc(cs.namespace(|| "comm_d"), || Ok(self.comm_d))?;
        comm_d.inputize(cs.namespace(|| "comm_d_input"))?;
        let comm_r = AllocatedNum::alloc(cs.namespace(|| "comm_r"), || Ok(self.comm_r))?;
        comm_r.inputize(cs.namespace(|| "comm_r_input"))?;
        let comm_r_last = AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || Ok(self.comm_r_last))?;
        let comm_c = AllocatedNum::alloc(cs.namespace(|| "comm_c"), || Ok(self.comm_c))?;
        let hash = <Tree::Hasher as Hasher>::Function::hash2_circuit(
            cs.namespace(|| "H_comm_c_comm_r_last"),
            &comm_c,
            &comm_r_last,
        )?;
        constraint::equal(cs, || "enforce comm_r = H(comm_c || comm_r_last)", &comm_r, &hash);
        let commitments = Commitments { comm_d: &comm_d, comm_c: &comm_c, comm_r_last: &comm_r_last };
        for (i, challenge) in self.challenges.into_iter().enumerate() {
            challenge.synthesize(&mut cs.namespace(|| format!("challenge_{i}")), &commitments, &replica_id_bits)?;
        }
        Ok(())
    }
}

struct Commitments<'a> {
    comm_d: &'a AllocatedNum<Fr>,
    comm_c: &'a AllocatedNum<Fr>,
    comm_r_last: &'a AllocatedNum<Fr>,
}

impl<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher> Challenge<Tree, G> {
    fn synthesize<CS: ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
        roots: &Commitments<'_>,
        replica_id: &[Boolean],
    ) -> Result<(), SynthesisError> {
        assert!(!self.drg_parents.is_empty() && !self.exp_parents.is_empty());
        let data_leaf = AllocatedNum::alloc(cs.namespace(|| "data_leaf"), || Ok(self.data_leaf))?;
        comm_d_inclusion::<G, _>(cs.namespace(|| "comm_d_inclusion"), self.comm_d_path, roots.comm_d, &data_leaf)?;

        let layers = self.drg_parents[0].rows.len();
        let columns = |cs: &mut CS, parents: Vec<Column<Tree>>, kind: &str| -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
            let mut out = Vec::with_capacity(parents.len());
            for (i, parent) in parents.into_iter().enumerate() {
                assert_eq!(parent.rows.len(), layers);
                let rows = {
                    let mut parent_ns = cs.namespace(|| format!("{kind}_parent_{i}_num"));
                    let mut ns = parent_ns.namespace(|| "column");
                    parent
                        .rows
                        .iter()
                        .enumerate()
                        .map(|(r, &v)| AllocatedNum::alloc(ns.namespace(|| format!("column_num_row_{r}")), || Ok(v)))
                        .collect::<Result<Vec<_>, _>>()?
                };
                let hash = column_hash(cs.namespace(|| format!("{kind}_parent_{i}_constraint")), &rows)?;
                inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
                    cs.namespace(|| format!("{kind}_parent_{i}_inclusion")),
                    parent.path,
                    roots.comm_c,
                    &hash,
                )?;
                out.push(rows);
            }
            Ok(out)
        };
        let drg = columns(cs, self.drg_parents, "drg")?;
        let exp = columns(cs, self.exp_parents, "exp")?;

        let node = UInt64::alloc(cs.namespace(|| "challenge"), Some(self.node))?;
        node.pack_into_input(cs.namespace(|| "challenge input"))?;

        let mut labels = Vec::with_capacity(layers);
        for layer in 1..=layers {
            let mut cs = cs.namespace(|| format!("labeling_{layer}"));
            // Expander columns hold no first-layer row: layer l's value is row l - 1.
            let rows = drg.iter().map(|c| &c[layer - 1]).chain(exp.iter().filter(|_| layer > 1).map(|c| &c[layer - 2]));
            if cs.is_witness_generator() {
                // The parents' bit decompositions natively too, their allocations ahead
                // of the hash's as the gadgets make them.
                let mut al = native_sha::Allocations::default();
                let mut parents = Vec::with_capacity(drg.len() + exp.len());
                for row in rows {
                    let v = row.get_value().ok_or(SynthesisError::AssignmentMissing)?;
                    parents.push(native_sha::renumbered_bits(&mut al, v));
                }
                let replica: Vec<Bit> = replica_id.iter().map(Bit::of).collect::<Result<_, _>>()?;
                let input = label_input(&replica, &expand_parents(parents, layer), layer as u32, &node)?;
                labels.push(native_sha::hash_and_pack_after(cs.namespace(|| "create_label"), al, &input)?);
                continue;
            }
            let mut parents = Vec::with_capacity(drg.len() + exp.len());
            for row in rows {
                let bits = row.to_bits_le(cs.namespace(|| format!("parent_{}_bits", parents.len())))?;
                parents.push(reverse_bit_numbering(bits));
            }
            labels.push(label(cs.namespace(|| "create_label"), replica_id, expand_parents(parents, layer), layer as u32, &node)?);
        }

        let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
        let encoded = encode(cs.namespace(|| "encode_node"), key, &data_leaf)?;
        inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
            cs.namespace(|| "comm_r_last_data_inclusion"),
            self.comm_r_last_path,
            roots.comm_r_last,
            &encoded,
        )?;
        let column = column_hash(cs.namespace(|| "c_x_column_hash"), &labels)?;
        inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
            cs.namespace(|| "c_x_inclusion"),
            self.comm_c_path,
            roots.comm_c,
            &column,
        )
    }
}

/// storage-proofs' column hash: Poseidon over the rows (2 or 11 of them).
fn column_hash<CS: ConstraintSystem<Fr>>(cs: CS, rows: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    type Poseidon = <PoseidonHasher as Hasher>::Function;
    match rows.len() {
        2 => Poseidon::hash_multi_leaf_circuit::<U2, _>(cs, rows, 0),
        11 => Poseidon::hash_multi_leaf_circuit::<U11, _>(cs, rows, 0),
        n => panic!("unsupported column size: {n}"),
    }
}

/// The inclusion of `leaf` under `root` along `path`: storage-proofs' private PoR circuit.
fn inclusion<H, U, V, W, CS>(cs: CS, path: AuthPath<H, U, V, W>, root: &AllocatedNum<Fr>, leaf: &AllocatedNum<Fr>) -> Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + PoseidonArity,
    V: 'static + PoseidonArity,
    W: 'static + PoseidonArity,
    CS: ConstraintSystem<Fr>,
{
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs,
        Root::from_allocated::<CS>(leaf.clone()),
        path,
        Root::from_allocated::<CS>(root.clone()),
        true,
    )
}

/// A Merkle path as `MerkleProof::as_options` gives it: per level, the siblings and the
/// node's index among them.
pub type PathOptions = Vec<(Vec<Option<Fr>>, Option<usize>)>;

/// The inclusion of `leaf` under `root` in tree D (binary, hashed with `G`), with the path
/// private: storage-proofs' `PoRCircuit`, except that in a witness generator with `G` the
/// SHA-256 hasher each level's hash is computed natively ([`native_sha::hash_leaves_and_pack`])
/// after the same index bit, sibling and insertion gadgets, so that the allocations are
/// `PoRCircuit`'s in value and order, and the path's bits are packed into the same input.
pub fn comm_d_inclusion<G: 'static + Hasher, CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    path: PathOptions,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    if !cs.is_witness_generator() || TypeId::of::<G>() != TypeId::of::<Sha256Hasher>() {
        return inclusion::<G, U2, U0, U0, _>(cs, path.into(), root, leaf);
    }
    let value = |n: &AllocatedNum<Fr>| n.get_value().ok_or(SynthesisError::AssignmentMissing);
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (level, (siblings, index)) in path.into_iter().enumerate() {
        let [sibling] = siblings[..] else { panic!("tree D level {level} has {} siblings, not 1", siblings.len()) };
        let mut cs = cs.namespace(|| format!("level {level}"));
        let bit = Boolean::from(AllocatedBit::alloc(cs.namespace(|| "index bit"), index.map(|i| i & 1 == 1))?);
        let sibling = AllocatedNum::alloc(cs.namespace(|| "sibling"), || sibling.ok_or(SynthesisError::AssignmentMissing))?;
        let pair = insert(&mut cs, &cur, std::slice::from_ref(&bit), &[sibling])?;
        cur = native_sha::hash_leaves_and_pack(cs.namespace(|| "hash"), &[value(&pair[0])?, value(&pair[1])?])?;
        index_bits.push(bit);
    }
    multipack::pack_into_inputs(cs.namespace(|| "path"), &index_bits)?;
    constraint::equal(&mut cs, || "root", &cur, root);
    Ok(())
}

/// One layer's label of the challenged node: natively in a witness generator, else
/// storage-proofs' `create_label_circuit`. The hash input is that function's layout:
/// replica id (32 bytes), layer index and node (padded to 32 bytes), then each parent's 32.
pub fn label<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    replica_id: &[Boolean],
    parents: Vec<Vec<Boolean>>,
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if !cs.is_witness_generator() {
        return create_label_circuit(cs, replica_id, parents, UInt32::constant(layer), node.clone());
    }
    let replica: Vec<Bit> = replica_id.iter().map(Bit::of).collect::<Result<_, _>>()?;
    let parents: Vec<Vec<Bit>> =
        parents.iter().map(|p| p.iter().map(Bit::of).collect::<Result<_, _>>()).collect::<Result<_, _>>()?;
    native_sha::hash_and_pack(cs.namespace(|| "hash"), &label_input(&replica, &parents, layer, node)?)
}

/// The hash's parents, repeated as storage-proofs repeats them: on layer 1 (DRG parents
/// only) six times and the first once more, on later layers twice and then the first nine.
fn expand_parents<T: Clone>(parents: Vec<T>, layer: usize) -> Vec<T> {
    let mut expanded = parents.clone();
    if layer > 1 {
        expanded.extend_from_slice(&parents);
        expanded.extend_from_slice(&parents[..9]);
    } else {
        for _ in 0..5 {
            expanded.extend_from_slice(&parents);
        }
        expanded.push(parents[0].clone());
    }
    expanded
}

/// `create_label_circuit`'s hash input: replica id (32 bytes), layer index and node (padded
/// to 32 bytes), then each parent's 32.
fn label_input(replica_id: &[Bit], parents: &[Vec<Bit>], layer: u32, node: &UInt64) -> Result<Vec<Bit>, SynthesisError> {
    assert!((32..=256).contains(&replica_id.len()), "replica id of {} bits", replica_id.len());
    assert_eq!(parents.len(), TOTAL_PARENTS);
    let pad_to = |bits: &mut Vec<Bit>, multiple: usize| {
        while bits.len() % multiple != 0 {
            bits.push(Bit::Constant(false));
        }
    };
    let mut input = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    input.extend_from_slice(replica_id);
    pad_to(&mut input, 256);
    input.extend((0..32).rev().map(|i| Bit::Constant((layer >> i) & 1 == 1)));
    for b in &node.to_bits_be() {
        input.push(Bit::of(b)?);
    }
    pad_to(&mut input, 512);
    for parent in parents {
        input.extend_from_slice(parent);
        pad_to(&mut input, 256);
    }
    assert_eq!(input.len(), (2 + TOTAL_PARENTS) * 256);
    Ok(input)
}
