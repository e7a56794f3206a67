//! The native SHA-256 witness (`cuzk_filecoin::native_sha`) against bellperson's gadget:
//! circuits that hash natively when their constraint system is a witness generator and
//! through the gadget otherwise are recorded (gadget), then synthesized witness-only
//! (native); the witness must equal the reference `WitnessCs` run of the gadget exactly
//! (aux values in order, counts, a, b, c) and satisfy the recorded constraints. Inputs mix
//! allocated, negated and constant bits, at lengths on both sides of the padding limits,
//! and the label layout goes through `porep_circuit::label` against storage-proofs'
//! `create_label_circuit`; tree D's inclusion goes through `porep_circuit::comm_d_inclusion`
//! against storage-proofs' `PoRCircuit`, on paths of several heights that go left, right
//! and both. The digest itself is checked against the sha2 crate.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::gadgets::sha256::sha256;
use blstrs::Scalar as Fr;
use cuzk_filecoin::native_sha::{self, Allocations, Bit};
use cuzk_groth16::compiled::{compile, synthesize_compiled};
use cuzk_groth16::PartitionWitness;
use rand::{Rng, SeedableRng};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::util::reverse_bit_numbering;

/// The kinds of the message's bits: every 7th constant, every 3rd negated.
fn message_bits<CS: ConstraintSystem<Fr>>(cs: &mut CS, msg: &[u8]) -> Result<Vec<Boolean>, SynthesisError> {
    let mut bits = Vec::with_capacity(msg.len() * 8);
    for (i, v) in msg.iter().flat_map(|byte| (0..8).rev().map(move |j| (byte >> j) & 1 == 1)).enumerate() {
        bits.push(if i % 7 == 0 {
            Boolean::Constant(v)
        } else if i % 3 == 0 {
            Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("n{i}")), Some(!v))?).not()
        } else {
            Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("b{i}")), Some(v))?)
        });
    }
    Ok(bits)
}

struct Sha256Circuit {
    msg: Vec<u8>,
}

impl Circuit<Fr> for Sha256Circuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = message_bits(cs, &self.msg)?;
        if cs.is_witness_generator() {
            let mut al = Allocations::default();
            let input = bits.iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;
            native_sha::sha256(&mut al, &input);
            al.write(cs)
        } else {
            sha256(cs.namespace(|| "sha256"), &bits).map(|_| ())
        }
    }
}

/// One label of the PoRep layout: a replica id and 37 parents as numbers, their bits, the
/// layer and the node; the label number inputized so that it is used.
struct LabelCircuit {
    replica_id: Fr,
    parents: Vec<Fr>,
    layer: u32,
    node: u64,
}

impl Circuit<Fr> for LabelCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let id = AllocatedNum::alloc(cs.namespace(|| "id"), || Ok(self.replica_id))?;
        let id_bits = reverse_bit_numbering(id.to_bits_le(cs.namespace(|| "id bits"))?);
        let node = UInt64::alloc(cs.namespace(|| "node"), Some(self.node))?;
        let mut parents = Vec::new();
        for (i, p) in self.parents.iter().enumerate() {
            let n = AllocatedNum::alloc(cs.namespace(|| format!("p{i}")), || Ok(*p))?;
            parents.push(reverse_bit_numbering(n.to_bits_le(cs.namespace(|| format!("p{i} bits")))?));
        }
        let label = cuzk_filecoin::porep_circuit::label(cs.namespace(|| "label"), &id_bits, parents, self.layer, &node)?;
        label.inputize(cs.namespace(|| "label input"))
    }
}

/// A leaf of tree D, its path and root: the inclusion under the root, which is inputized
/// like comm_d.
struct TreeDCircuit {
    leaf: Fr,
    path: cuzk_filecoin::porep_circuit::PathOptions,
    root: Fr,
}

impl Circuit<Fr> for TreeDCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let root = AllocatedNum::alloc(cs.namespace(|| "root"), || Ok(self.root))?;
        root.inputize(cs.namespace(|| "root input"))?;
        let leaf = AllocatedNum::alloc(cs.namespace(|| "leaf"), || Ok(self.leaf))?;
        cuzk_filecoin::porep_circuit::comm_d_inclusion::<filecoin_hashers::sha256::Sha256Hasher, _>(
            cs.namespace(|| "comm_d_inclusion"),
            self.path,
            &root,
            &leaf,
        )
    }
}

/// Tree D's node hash, by the sha2 crate: SHA-256 of the two 32-byte little-endian values,
/// its top two bits cleared.
fn sha256_node(left: Fr, right: Fr) -> Fr {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(left.to_bytes_le());
    h.update(right.to_bytes_le());
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0x3f;
    Fr::from_bytes_le(&out).unwrap()
}

/// Recorded through the gadget, then witness-only through the native path: equal to the
/// reference and satisfied.
fn assert_native_equals_gadget<C: Circuit<Fr> + Send>(make: impl Fn() -> C, what: &str) {
    let reference = PartitionWitness::synthesize(make()).unwrap();
    let (recorded, compiled) = compile(make()).unwrap();
    assert!(recorded == reference, "{what}: recording changed the witness");
    let native = synthesize_compiled(make(), &compiled).unwrap().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(native.witness.aux_assignment.len(), reference.aux_assignment.len(), "{what}: aux count");
    let first_diff = native.witness.aux_assignment.iter().zip(&reference.aux_assignment).position(|(a, b)| a != b);
    assert_eq!(first_diff, None, "{what}: first aux that differs");
    assert!(native.witness == reference, "{what}: the native witness differs from the gadget's");
    assert_eq!(native.first_unsatisfied, None, "{what}: unsatisfied");
}

#[test]
fn native_sha256_witness_equals_the_gadget_for_every_padding_case() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for len in [0usize, 1, 32, 55, 56, 63, 64, 65, 119, 128, 200] {
        let msg: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        assert_native_equals_gadget(|| Sha256Circuit { msg: msg.clone() }, &format!("{len} bytes"));
    }
}

#[test]
fn native_label_witness_equals_create_label_circuit() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let mut field = || {
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes);
        bytes[31] &= 0x3f;
        Fr::from_bytes_le(&bytes).unwrap()
    };
    for (layer, node) in [(1u32, 0u64), (2, 5), (11, u64::MAX >> 3)] {
        let replica_id = field();
        let parents: Vec<Fr> = (0..37).map(|_| field()).collect();
        assert_native_equals_gadget(
            || LabelCircuit { replica_id, parents: parents.clone(), layer, node },
            &format!("label of layer {layer}, node {node}"),
        );
    }
}

#[test]
fn native_tree_d_inclusion_witness_equals_por_circuit() {
    use ff::Field;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut field = |full: bool| {
        if full {
            return Fr::random(&mut rng);
        }
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes);
        bytes[31] &= 0x3f;
        Fr::from_bytes_le(&bytes).unwrap()
    };
    // (height, the node's index): all left, all right, alternating, mixed.
    for (height, node) in [(1usize, 0usize), (1, 1), (2, 2), (3, 0b101), (5, 0b11111), (5, 0), (11, 0b101_1001_1100)] {
        // One leaf and one sibling from the whole field (its bit 254 may be set), the
        // others 254-bit values as tree D holds them.
        let leaf = field(height == 5);
        let mut cur = leaf;
        let mut path = Vec::new();
        for level in 0..height {
            let sibling = field(level == 1);
            let right = (node >> level) & 1 == 1;
            cur = if right { sha256_node(sibling, cur) } else { sha256_node(cur, sibling) };
            path.push((vec![Some(sibling)], Some(usize::from(right))));
        }
        assert_native_equals_gadget(
            || TreeDCircuit { leaf, path: path.clone(), root: cur },
            &format!("tree D path of height {height}, node {node:#b}"),
        );
    }
}

#[test]
fn native_digests_are_sha2s_for_allocated_and_constant_bits() {
    use sha2::Digest;
    for len in [0usize, 3, 55, 56, 64, 119, 1216] {
        let msg: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        for constant in [false, true] {
            let bits: Vec<Bit> = msg
                .iter()
                .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
                .map(|v| if constant { Bit::Constant(v) } else { Bit::Is(v) })
                .collect();
            let mut al = Allocations::default();
            let out = native_sha::sha256(&mut al, &bits);
            let bytes: Vec<u8> = out.chunks(8).map(|c| c.iter().fold(0u8, |v, b| (v << 1) | u8::from(b.value()))).collect();
            assert_eq!(bytes, sha2::Sha256::digest(&msg).to_vec(), "{len} bytes, constant {constant}");
            // Constant input (the empty one too): the gadget allocates nothing.
            assert_eq!(constant || len == 0, al.values.is_empty(), "{len} bytes");
        }
    }
}
