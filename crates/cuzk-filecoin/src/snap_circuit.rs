//! storage-proofs-update 19.1's SnapDeals (empty sector update) circuit, rebuilt so that a
//! partition can be synthesized as parts in parallel and its tree D SHA-256 computed natively
//! in witness-only synthesis ([`crate::native_sha`]).
//!
//! [`SnapCircuit`] takes the steps of storage-proofs-update's
//! `EmptySectorUpdateCircuit::synthesize` in its order, allocating the same variables and
//! enforcing the same constraints with the same public gadgets of storage-proofs-core,
//! bellperson, neptune and filecoin-hashers (its own gadgets module is private to the crate:
//! `apex_por`, `gen_challenge_bits`, `get_challenge_high_bits` and `label_r_new` are written
//! again here, step for step). First a prefix: the public inputs, the `k` and `h_select` bits,
//! phi, comm_c and the roots, the apex leaves and partition path, the comm_r checks, the apex
//! tree and its path to comm_d_new, and the generated bits of every challenge. Then each
//! challenge (rho, the encoding, both tree R paths, the apex leaf's selection and tree D's
//! path to it) in its top-level namespace `snap_challenge_<i>`; namespaces change nothing in
//! the matrices, so the recording is storage-proofs-update's own (checked by the tests). A
//! circuit can hold a run of the challenges only ([`SnapCircuit::parts`]): every part has the
//! same prefix, as `cuzk_groth16::compiled::synthesize_compiled_pieces` needs.
//!
//! Two steps differ in a constraint system that is a witness generator (cuzk's witness-only
//! one): each SHA-256 of tree D (the apex tree, the partition path and every challenge's path
//! to its apex leaf) is computed natively with the gadgets' allocations
//! ([`native_sha::hash_leaves_and_pack`], after the same insertion gadget); and a part that
//! does not start at the first challenge writes its prefix's tree D hashes as the allocations
//! of one fixed hash instead of computing them: the pieces never read them (their rows read
//! the bits, phi, the roots and the apex leaves only), and the join takes the first part's
//! prefix. Anywhere else (recording, the reference `WitnessCs`) the gadgets run.

use std::ops::Range;
use std::sync::OnceLock;

use anyhow::ensure;
use bellpepper_core::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use bellperson::gadgets::multipack::pack_bits;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher};
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::gadgets::por::por_no_challenge_input;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::{ChallengeProof, EmptySectorUpdateCircuit};
use storage_proofs_update::constants::{
    hs, validate_tree_r_shape, TreeD, TreeDHasher, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS,
};
use storage_proofs_update::PublicParams;

use crate::native_sha::{self, Allocations};

/// A SnapDeals partition circuit, or a run of its challenges after the whole prefix: equal to
/// storage-proofs-update's `EmptySectorUpdateCircuit` of the same values (whole).
pub(crate) struct SnapCircuit<Tree: MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: PublicParams,
    k_and_h_select: Option<Fr>,
    comm_r_old: Option<Fr>,
    comm_d_new: Option<Fr>,
    comm_r_new: Option<Fr>,
    comm_c: Option<Fr>,
    root_r_old: Option<Fr>,
    root_r_new: Option<Fr>,
    apex_leafs: Vec<Option<Fr>>,
    /// Tree D's path from the apex root to comm_d_new (the top of every challenge's path).
    partition_path: Vec<Option<Fr>>,
    /// The challenges here: their indices in the partition and their proofs.
    first: usize,
    challenges: Vec<ChallengeProof<Tree>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapCircuit<Tree> {
    /// The whole circuit of `c` (storage-proofs-update's circuit of a partition), with the
    /// checks its synthesis asserts.
    pub(crate) fn new(c: EmptySectorUpdateCircuit<Tree>) -> anyhow::Result<Self> {
        let EmptySectorUpdateCircuit { pub_params: params, pub_inputs, priv_inputs } = c;
        validate_tree_r_shape::<Tree>(params.sector_nodes);
        let (cbl, pbl) = (params.challenge_bit_len, params.partition_bit_len);
        if let Some(v) = pub_inputs.k_and_h_select {
            let bits: Vec<bool> = v.to_le_bits().into_iter().collect();
            let k = bits[..pbl].iter().rev().fold(0usize, |k, &b| (k << 1) | usize::from(b));
            ensure!(k < params.partition_count, "partition-index {k} exceeds partition count {}", params.partition_count);
            let h_select = &bits[pbl..pbl + hs(params.sector_nodes).len()];
            ensure!(h_select.iter().filter(|b| **b).count() == 1, "h_select does not have exactly one bit set");
            ensure!(bits[pbl + h_select.len()..].iter().all(|b| !*b), "k_and_h_select has high bits set");
        }
        ensure!(
            priv_inputs.apex_leafs.len() == params.apex_leaf_count,
            "{} apex leafs; expected {}",
            priv_inputs.apex_leafs.len(),
            params.apex_leaf_count
        );
        let challenges = priv_inputs.challenge_proofs;
        ensure!(
            challenges.len() == params.challenge_count,
            "{} challenge proofs; expected {}",
            challenges.len(),
            params.challenge_count
        );
        for (i, c) in challenges.iter().enumerate() {
            ensure!(c.path_d_new.len() == cbl, "challenge {i}: tree D path of {} levels; expected {cbl}", c.path_d_new.len());
            ensure!(c.path_d_new.iter().all(|s| s.len() == 1), "challenge {i}: tree D path with a level of other than one sibling");
            ensure!(
                c.path_d_new[cbl - pbl..] == challenges[0].path_d_new[cbl - pbl..],
                "challenge {i}: its partition path differs from challenge 0's"
            );
        }
        let partition_path = challenges[0].path_d_new[cbl - pbl..].iter().map(|s| s[0]).collect();
        Ok(SnapCircuit {
            params,
            k_and_h_select: pub_inputs.k_and_h_select,
            comm_r_old: pub_inputs.comm_r_old,
            comm_d_new: pub_inputs.comm_d_new,
            comm_r_new: pub_inputs.comm_r_new,
            comm_c: priv_inputs.comm_c,
            root_r_old: priv_inputs.root_r_old,
            root_r_new: priv_inputs.root_r_new,
            apex_leafs: priv_inputs.apex_leafs,
            partition_path,
            first: 0,
            challenges,
        })
    }

    /// `c`'s circuit as `parts` circuits (at most one per challenge) of consecutive runs of its
    /// challenges, each after the whole prefix, in order.
    pub(crate) fn parts(c: EmptySectorUpdateCircuit<Tree>, parts: usize) -> anyhow::Result<Vec<Self>> {
        let mut whole = Self::new(c)?;
        let count = whole.challenges.len();
        let parts = parts.clamp(1, count.max(1));
        let mut challenges = std::mem::take(&mut whole.challenges).into_iter();
        let runs: Vec<Range<usize>> = (0..parts).map(|j| j * count / parts..(j + 1) * count / parts).collect();
        Ok(runs
            .into_iter()
            .map(|run| SnapCircuit {
                params: whole.params.clone(),
                apex_leafs: whole.apex_leafs.clone(),
                partition_path: whole.partition_path.clone(),
                first: run.start,
                challenges: challenges.by_ref().take(run.len()).collect(),
                ..whole
            })
            .collect())
    }
}

/// How tree D's SHA-256 is computed: the gadgets (recording, reference), natively (a witness
/// generator), or not at all (a witness generator's prefix in a part after the first: one
/// fixed hash's allocations, which no row of the part reads).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sha {
    Gadget,
    Native,
    Skipped,
}

impl Sha {
    fn of<CS: ConstraintSystem<Fr>>(cs: &CS, values: bool) -> Sha {
        match (cs.is_witness_generator(), values) {
            (false, _) => Sha::Gadget,
            (true, true) => Sha::Native,
            (true, false) => Sha::Skipped,
        }
    }
}

fn alloc<CS: ConstraintSystem<Fr>>(mut cs: CS, v: Option<Fr>) -> Result<AllocatedNum<Fr>, SynthesisError> {
    AllocatedNum::alloc(cs.namespace(|| "value"), || v.ok_or(SynthesisError::AssignmentMissing))
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Circuit<Fr> for SnapCircuit<Tree> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let PublicParams { sector_nodes, challenge_count, challenge_bit_len, partition_bit_len, apex_leaf_bit_len, .. } =
            self.params;
        let hs = hs(sector_nodes);

        // The public inputs: k and h_select packed in one, then the three commitments.
        let k_and_h_select = alloc(cs.namespace(|| "k_and_h_select"), self.k_and_h_select)?;
        k_and_h_select.inputize(cs.namespace(|| "k_and_h_select (public input)"))?;
        let bit_len = partition_bit_len + hs.len();
        let values: Vec<Option<bool>> = match k_and_h_select.get_value() {
            Some(v) => v.to_le_bits().into_iter().take(bit_len).map(Some).collect(),
            None => vec![None; bit_len],
        };
        let k_and_h_select_bits = values
            .into_iter()
            .enumerate()
            .map(|(i, b)| AllocatedBit::alloc(cs.namespace(|| format!("k_and_h_select_bit_{i}")), b))
            .collect::<Result<Vec<_>, _>>()?;
        let mut lc = LinearCombination::<Fr>::zero();
        let mut pow2 = Fr::ONE;
        for bit in &k_and_h_select_bits {
            lc = lc + (pow2, bit.get_variable());
            pow2 = pow2.double();
        }
        cs.enforce(
            || "k_and_h_select binary decomp",
            |_| lc,
            |lc| lc + CS::one(),
            |lc| lc + k_and_h_select.get_variable(),
        );
        let (partition_bits, h_select_bits) = k_and_h_select_bits.split_at(partition_bit_len);
        let partition = pack_bits(
            cs.namespace(|| "pack partition bits"),
            &partition_bits.iter().cloned().map(Boolean::from).collect::<Vec<_>>(),
        )?;
        let mut public = |name: &'static str, v: Option<Fr>| -> Result<AllocatedNum<Fr>, SynthesisError> {
            let num = alloc(cs.namespace(|| name), v)?;
            num.inputize(cs.namespace(|| format!("{name}_input")))?;
            Ok(num)
        };
        let comm_r_old = public("comm_r_old", self.comm_r_old)?;
        let comm_d_new = public("comm_d_new", self.comm_d_new)?;
        let comm_r_new = public("comm_r_new", self.comm_r_new)?;

        // phi = H(comm_d_new || comm_r_old).
        let phi = poseidon_hash(
            cs.namespace(|| "phi"),
            vec![comm_d_new.clone(), comm_r_old.clone()],
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;

        // The private values but the challenges' paths.
        let comm_c = alloc(cs.namespace(|| "comm_c"), self.comm_c)?;
        let root_r_old = alloc(cs.namespace(|| "root_r_old"), self.root_r_old)?;
        let root_r_new = alloc(cs.namespace(|| "root_r_new"), self.root_r_new)?;
        let apex_leafs = self
            .apex_leafs
            .iter()
            .enumerate()
            .map(|(i, &v)| alloc(cs.namespace(|| format!("apex_leaf_{i}")), v))
            .collect::<Result<Vec<_>, _>>()?;
        let partition_path = self
            .partition_path
            .iter()
            .enumerate()
            .map(|(i, &v)| alloc(cs.namespace(|| format!("partition_path_sibling_{i}")), v))
            .collect::<Result<Vec<_>, _>>()?;

        // comm_r = H(comm_c || root_r), old and new.
        for (name, root, comm_r) in [("old", &root_r_old, &comm_r_old), ("new", &root_r_new, &comm_r_new)] {
            let calc = <TreeRHasher as Hasher>::Function::hash2_circuit(
                cs.namespace(|| format!("comm_r_{name}_calc")),
                &comm_c,
                root,
            )?;
            cs.enforce(
                || format!("enforce comm_r_{name}_calc == comm_r_{name}"),
                |lc| lc + calc.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + comm_r.get_variable(),
            );
        }

        // The apex leaves against comm_d_new; natively only where the values are kept.
        let prefix_sha = Sha::of(cs, self.first == 0);
        apex_por(cs.namespace(|| "apex_gadget"), &apex_leafs, partition_bits, partition_path, &comm_d_new, prefix_sha)?;

        // Every challenge's bits, whichever challenges this circuit holds.
        let generated_bits = gen_challenge_bits(
            cs.namespace(|| "gen_challenge_bits"),
            &comm_r_new,
            &partition,
            challenge_count,
            challenge_bit_len - partition_bit_len,
        )?;

        let prefix = Prefix {
            partition_bits,
            h_select_bits,
            hs: &hs,
            phi: &phi,
            root_r_old: &root_r_old,
            root_r_new: &root_r_new,
            apex_leafs: &apex_leafs,
            path_to_apex_leaf: challenge_bit_len - partition_bit_len - apex_leaf_bit_len,
            apex_leaf_bit_len,
        };
        for (c_index, proof) in (self.first..).zip(self.challenges) {
            let bits = generated_bits.get(c_index).ok_or(SynthesisError::Unsatisfiable)?;
            challenge::<Tree, _>(&mut cs.namespace(|| format!("snap_challenge_{c_index}")), c_index, bits, proof, &prefix)?;
        }
        Ok(())
    }
}

/// What every challenge reads of the prefix.
struct Prefix<'a> {
    partition_bits: &'a [AllocatedBit],
    h_select_bits: &'a [AllocatedBit],
    hs: &'a [usize],
    phi: &'a AllocatedNum<Fr>,
    root_r_old: &'a AllocatedNum<Fr>,
    root_r_new: &'a AllocatedNum<Fr>,
    apex_leafs: &'a [AllocatedNum<Fr>],
    /// Tree D's levels from a challenged leaf to its apex leaf.
    path_to_apex_leaf: usize,
    apex_leaf_bit_len: usize,
}

/// One challenge: storage-proofs-update's loop body for `c_index`.
fn challenge<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    c_index: usize,
    generated_bits: &[AllocatedBit],
    proof: ChallengeProof<Tree>,
    p: &Prefix<'_>,
) -> Result<(), SynthesisError> {
    let c_bits: Vec<AllocatedBit> = generated_bits.iter().chain(p.partition_bits).cloned().collect();

    // rho = H(phi || c_high).
    let c_high = get_challenge_high_bits(
        cs.namespace(|| format!("get_challenge_high_bits (c_index={c_index})")),
        &c_bits,
        p.h_select_bits,
        p.hs,
    )?;
    let rho = poseidon_hash(
        cs.namespace(|| format!("rho (c_index={c_index})")),
        vec![p.phi.clone(), c_high],
        &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;

    let leaf_r_old = alloc(cs.namespace(|| format!("leaf_r_old (c_index={c_index})")), proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs.namespace(|| format!("leaf_d_new (c_index={c_index})")), proof.leaf_d_new)?;
    let leaf_r_new = label_r_new(cs.namespace(|| format!("leaf_r_new (c_index={c_index})")), &leaf_r_old, &leaf_d_new, &rho)?;
    // storage-proofs-update asserts that the encoding gives the proof's new leaf.
    if let (Some(computed), Some(given)) = (leaf_r_new.get_value(), proof.leaf_r_new) {
        if computed != given {
            return Err(SynthesisError::Unsatisfiable);
        }
    }

    let tree_r_path = |cs: &mut CS, name: &str, path: &[Vec<Option<Fr>>]| -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
        path.iter()
            .enumerate()
            .map(|(row, siblings)| {
                siblings
                    .iter()
                    .enumerate()
                    .map(|(s, &v)| {
                        alloc(cs.namespace(|| format!("{name} sibling (c_index={c_index}, tree_row={row}, sibling_index={s})")), v)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let path_r_old = tree_r_path(cs, "path_r_old", &proof.path_r_old)?;
    por_no_challenge_input::<Tree, _>(
        cs.namespace(|| format!("por tree_r_old (c_index={c_index})")),
        c_bits.clone(),
        leaf_r_old,
        path_r_old,
        p.root_r_old.clone(),
    )?;
    let path_r_new = tree_r_path(cs, "path_r_new", &proof.path_r_new)?;
    por_no_challenge_input::<Tree, _>(
        cs.namespace(|| format!("por tree_r_new (c_index={c_index})")),
        c_bits.clone(),
        leaf_r_new,
        path_r_new,
        p.root_r_new.clone(),
    )?;

    // The apex leaf the challenge's bits select, and tree D's path from the leaf to it.
    let apex_leaf_bits: Vec<Boolean> =
        c_bits[p.path_to_apex_leaf..p.path_to_apex_leaf + p.apex_leaf_bit_len].iter().cloned().map(Boolean::from).collect();
    let apex_leaf = select(cs.namespace(|| format!("select_apex_leaf (c_index={c_index})")), p.apex_leafs, &apex_leaf_bits)?;
    let c_bits_to_apex_leaf: Vec<AllocatedBit> = c_bits.into_iter().take(p.path_to_apex_leaf).collect();
    let path_to_apex_leaf = proof
        .path_d_new
        .iter()
        .take(p.path_to_apex_leaf)
        .enumerate()
        .map(|(row, siblings)| {
            let v = siblings.first().copied().flatten();
            alloc(cs.namespace(|| format!("path_to_apex_leaf sibling (c_index={c_index}, tree_row={row})")), v)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sha = Sha::of(cs, true);
    tree_d_por(
        cs.namespace(|| format!("por to_apex_leaf (c_index={c_index})")),
        c_bits_to_apex_leaf,
        leaf_d_new,
        path_to_apex_leaf,
        &apex_leaf,
        sha,
    )
}

/// storage-proofs-update's `apex_por`: the apex tree of `apex_leafs` (a power of two), then
/// its root's path to `comm_d` along `partition_bits`.
fn apex_por<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    apex_leafs: &[AllocatedNum<Fr>],
    partition_bits: &[AllocatedBit],
    partition_path: Vec<AllocatedNum<Fr>>,
    comm_d: &AllocatedNum<Fr>,
    sha: Sha,
) -> Result<(), SynthesisError> {
    let height = apex_leafs.len().trailing_zeros() as usize;
    let mut row = apex_leafs.to_vec();
    for row_index in 0..height {
        row = row
            .chunks(2)
            .enumerate()
            .map(|(i, siblings)| {
                let cs = cs.namespace(|| format!("apex_tree generation hash (tree_row={row_index}, siblings={i})"));
                sha_node(cs, &siblings[0], &siblings[1], sha)
            })
            .collect::<Result<Vec<_>, _>>()?;
    }
    let apex_root = row.swap_remove(0);
    tree_d_por(cs.namespace(|| "partition-tree por"), partition_bits.to_vec(), apex_root, partition_path, comm_d, sha)
}

/// storage-proofs-core's `por_no_challenge_input` over tree D (binary, SHA-256): with the
/// gadgets, or each level's insertion gadget and then the hash natively (or skipped).
fn tree_d_por<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    bits: Vec<AllocatedBit>,
    leaf: AllocatedNum<Fr>,
    path: Vec<AllocatedNum<Fr>>,
    root: &AllocatedNum<Fr>,
    sha: Sha,
) -> Result<(), SynthesisError> {
    if sha == Sha::Gadget {
        let path = path.into_iter().map(|s| vec![s]).collect();
        return por_no_challenge_input::<TreeD, _>(cs, bits, leaf, path, root.clone());
    }
    assert_eq!(bits.len(), path.len(), "challenge bit-length and tree arity do not agree");
    let mut cur = leaf;
    for (height, (bit, sibling)) in bits.into_iter().zip(path).enumerate() {
        let pair = insert(
            &mut cs.namespace(|| format!("merkle proof insert (height={height})")),
            &cur,
            &[Boolean::from(bit)],
            &[sibling],
        )?;
        cur = sha_node(cs.namespace(|| format!("merkle proof hash (height={height})")), &pair[0], &pair[1], sha)?;
    }
    cs.enforce(
        || "calculated root == provided root",
        |lc| lc + cur.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + root.get_variable(),
    );
    Ok(())
}

/// Tree D's node hash of `a` and `b` (filecoin-hashers' SHA-256 `hash2_circuit`, which
/// allocates as `hash_multi_leaf_circuit` of two leaves).
fn sha_node<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    a: &AllocatedNum<Fr>,
    b: &AllocatedNum<Fr>,
    sha: Sha,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let value = |n: &AllocatedNum<Fr>| n.get_value().ok_or(SynthesisError::AssignmentMissing);
    match sha {
        Sha::Gadget => <TreeDHasher as Hasher>::Function::hash2_circuit(cs, a, b),
        Sha::Native => native_sha::hash_leaves_and_pack(cs, &[value(a)?, value(b)?]),
        Sha::Skipped => {
            // One fixed hash's allocations (their number does not depend on the values: every
            // message bit is allocated), and its packing as `hash_leaves_and_pack` writes it.
            static FIXED: OnceLock<(Allocations, Fr)> = OnceLock::new();
            let (al, packed) = FIXED.get_or_init(|| {
                let mut al = Allocations::default();
                let mut input = native_sha::renumbered_bits(&mut al, Fr::ZERO);
                input.extend(native_sha::renumbered_bits(&mut al, Fr::ZERO));
                native_sha::sha256(&mut al, &input);
                (al, Fr::ZERO)
            });
            al.write(&mut cs)?;
            let num = AllocatedNum::alloc(cs.namespace(|| "result_num"), || Ok(*packed))?;
            cs.enforce(|| "packing constraint", |lc| lc, |lc| lc, |lc| lc);
            Ok(num)
        }
    }
}

/// storage-proofs-update's `allocated_num_to_allocated_bits`: `Fr::NUM_BITS` allocated bits,
/// least significant first, and their packing constraint.
fn num_to_bits<CS: ConstraintSystem<Fr>>(mut cs: CS, num: &AllocatedNum<Fr>) -> Result<Vec<AllocatedBit>, SynthesisError> {
    let bits = field_into_allocated_bits_le(&mut cs, num.get_value())?;
    assert_eq!(bits.len(), Fr::NUM_BITS as usize);
    let mut lc = LinearCombination::<Fr>::zero();
    let mut pow2 = Fr::ONE;
    for bit in &bits {
        lc = lc + (pow2, bit.get_variable());
        pow2 = pow2.double();
    }
    cs.enforce(|| "binary decomp", |_| lc, |lc| lc + CS::one(), |lc| lc + num.get_variable());
    Ok(bits)
}

/// storage-proofs-update's `gen_challenge_bits`: `challenges` runs of `bits_per_challenge`
/// bits, cut from the digests H(comm_r_new || k * digests + j).
fn gen_challenge_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let challenges_per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    // As storage-proofs-update counts them (through f32: exact at these sizes).
    let digests = (challenges as f32 / challenges_per_digest as f32).ceil() as u64;
    let mut generated = Vec::with_capacity(challenges);
    for j in 0..digests {
        let digest_index = AllocatedNum::alloc(cs.namespace(|| format!("digest_index_{j}")), || {
            let k = partition.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Ok(k * Fr::from(digests) + Fr::from(j))
        })?;
        cs.enforce(
            || format!("digest_index_{j} == k * digests_per_partition + {j}"),
            |lc| lc + (Fr::from(digests), partition.get_variable()) + (Fr::from(j), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + digest_index.get_variable(),
        );
        let digest = poseidon_hash(
            cs.namespace(|| format!("digest_{j}")),
            vec![comm_r_new.clone(), digest_index],
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let digest_bits = num_to_bits(cs.namespace(|| format!("digest_{j}_bits")), &digest)?;
        let take = if j == digests - 1 { challenges - generated.len() } else { challenges_per_digest };
        generated.extend(digest_bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(generated)
}

/// storage-proofs-update's `get_challenge_high_bits`: the `h` high bits of `c_bits` packed,
/// `h` chosen among `hs` by the one set bit of `h_select_bits`.
fn get_challenge_high_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    assert_eq!(h_select_bits.len(), hs.len());
    let bit_len = c_bits.len();
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Boolean::from).collect();
    let mut c_high_and_zeros = Vec::with_capacity(hs.len());
    for (k, (h, h_select_bit)) in hs.iter().zip(h_select_bits).enumerate() {
        let c_high = pack_bits(cs.namespace(|| format!("c_high (h={h}, k={k})")), &c_bits[bit_len - h..])?;
        let c_high_or_zero = AllocatedNum::alloc(cs.namespace(|| format!("c_high_or_zero (h={h}, k={k})")), || {
            if h_select_bit.get_value().ok_or(SynthesisError::AssignmentMissing)? {
                c_high.get_value().ok_or(SynthesisError::AssignmentMissing)
            } else {
                Ok(Fr::ZERO)
            }
        })?;
        cs.enforce(
            || format!("c_high_or_zero == c_high * h_select_bit (h={h}, k={k})"),
            |lc| lc + c_high.get_variable(),
            |lc| lc + h_select_bit.get_variable(),
            |lc| lc + c_high_or_zero.get_variable(),
        );
        c_high_and_zeros.push(c_high_or_zero);
    }
    let selected = AllocatedNum::alloc(cs.namespace(|| "c_high_selected"), || {
        let mut sum = Fr::ZERO;
        for c in &c_high_and_zeros {
            sum += c.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        }
        Ok(sum)
    })?;
    cs.enforce(
        || "c_high_selected == dot(c_highs, h_select_bits)",
        |mut lc| {
            for c in &c_high_and_zeros {
                lc = lc + c.get_variable();
            }
            lc
        },
        |lc| lc + CS::one(),
        |lc| lc + selected.get_variable(),
    );
    Ok(selected)
}

/// storage-proofs-update's `label_r_new`: label_r_old + label_d_new * rho.
fn label_r_new<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    label_r_old: &AllocatedNum<Fr>,
    label_d_new: &AllocatedNum<Fr>,
    rho: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let product = label_d_new.mul(cs.namespace(|| "label_d_new * rho"), rho)?;
    let label = AllocatedNum::alloc(cs.namespace(|| "label_r_new"), || {
        let old = label_r_old.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(old + product.get_value().ok_or(SynthesisError::AssignmentMissing)?)
    })?;
    cs.enforce(
        || "label_r_new == label_r_old + label_d_new * rho",
        |lc| lc + label_r_old.get_variable() + product.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + label.get_variable(),
    );
    Ok(label)
}

#[cfg(test)]
mod tests {
    //! [`SnapCircuit`] against storage-proofs-update's circuit of the same vanilla proof: the
    //! recording (whole, and in parts of every split) has its matrices, counts and densities;
    //! its witness, recorded or witness-only (native SHA-256, the parts written in place or
    //! joined, the whole), is the reference `WitnessCs` run of storage-proofs-update's circuit.
    //! On the real 2 KiB fixture (satisfied) and shape-only 2 KiB and 8 MiB partitions (not
    //! satisfiable: the first unsatisfied constraint is compared too).
    use super::*;
    use crate::fixture::kind_fixtures_2kib;
    use crate::kind_input::KindInput;
    use crate::shape_kinds::shape_only_snap;
    use cuzk_groth16::compiled::{compile, compile_pieces, synthesize_compiled, synthesize_compiled_pieces, CompiledCircuit};
    use cuzk_groth16::PartitionWitness;
    use filecoin_hashers::Domain;
    use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB, SectorUpdateConfig};
    use filecoin_proofs_api::RegisteredUpdateProof;
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_update::constants::{TreeDDomain, TreeRDomain};
    use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof};

    const MARKER: &str = "snap_challenge_";

    /// storage-proofs-update's circuit of `input`'s partition `k`, as snap.rs builds it.
    fn upstream<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &KindInput, k: usize) -> EmptySectorUpdateCircuit<Tree> {
        let proof = crate::snap::update_proof_from_wire(input.registered_proof).unwrap();
        let config = SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
        let params = PublicParams::from_sector_size(u64::from(config.sector_size));
        let vanilla: PartitionProof<Tree> = bincode::deserialize(&input.vanilla_proofs[k]).unwrap();
        let inputs = storage_proofs_update::PublicInputs {
            k,
            comm_r_old: TreeRDomain::try_from_bytes(&input.comm_r_old).unwrap(),
            comm_d_new: TreeDDomain::try_from_bytes(&input.comm_d_new).unwrap(),
            comm_r_new: TreeRDomain::try_from_bytes(&input.comm_r_new).unwrap(),
            h: config.h,
        };
        EmptySectorUpdateCompound::<Tree>::circuit(&inputs, (), &vanilla, &params, Some(k)).unwrap()
    }

    fn first_aux_difference(a: &PartitionWitness, b: &PartitionWitness) -> Option<usize> {
        a.aux_assignment.iter().zip(&b.aux_assignment).position(|(x, y)| x != y)
    }

    fn assert_equal(what: &str, w: &PartitionWitness, bad: Option<usize>, reference: &PartitionWitness) {
        assert_eq!(first_aux_difference(w, reference), None, "{what}: the first aux that differs");
        assert!(w == reference, "{what}: the witness differs from storage-proofs-update's");
        assert_eq!(bad, reference.first_unsatisfied(), "{what}: the first unsatisfied constraint");
    }

    /// Every check of the module doc on partition `k` of `input`, split into each of `splits`.
    fn check<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(name: &str, input: &KindInput, k: usize, splits: &[usize]) {
        let reference = PartitionWitness::synthesize(upstream::<Tree>(input, k)).unwrap();
        let (recorded, theirs): (PartitionWitness, CompiledCircuit) = compile(upstream::<Tree>(input, k)).unwrap();
        assert!(recorded == reference, "{name}: storage-proofs-update's recording changed its witness");
        drop(recorded);

        // Whole: the same recording exactly, and the same witness recorded or witness-only.
        let (w, ours) = compile(SnapCircuit::new(upstream::<Tree>(input, k)).unwrap()).unwrap();
        assert!(ours == theirs, "{name}: the whole SnapCircuit's recording differs from storage-proofs-update's");
        assert_equal(&format!("{name}, whole, recorded"), &w, reference.first_unsatisfied(), &reference);
        drop((w, ours));
        let fast = synthesize_compiled(SnapCircuit::new(upstream::<Tree>(input, k)).unwrap(), &theirs).unwrap().unwrap();
        assert_equal(&format!("{name}, whole, witness-only"), &fast.witness, fast.first_unsatisfied, &reference);
        drop(fast);

        let parts = |n| SnapCircuit::parts(upstream::<Tree>(input, k), n).unwrap();
        for &n in splits {
            let what = format!("{name}, {n} parts");
            assert_eq!(parts(n).len(), n, "{what}");
            let (w, ours) = compile_pieces(parts(n), Some(MARKER)).unwrap();
            assert!(ours.same_constraints(&theirs), "{what}: the recording differs from storage-proofs-update's");
            assert_eq!(ours.recorded_parts(), Some(n), "{what}: recorded as parts");
            assert_equal(&format!("{what}, recorded"), &w.witness, w.first_unsatisfied, &reference);
            drop(w);
            // Written in place (the recording's layout), then joined (a recording without one).
            for (how, compiled) in [("in place", &ours), ("joined", &theirs)] {
                let fast = synthesize_compiled_pieces(parts(n), MARKER, compiled).unwrap().unwrap();
                assert_eq!(fast.timings.parts, n, "{what}, {how}");
                assert_eq!(fast.timings.in_place, how == "in place", "{what}, {how}");
                assert_equal(&format!("{what}, witness-only {how}"), &fast.witness, fast.first_unsatisfied, &reference);
            }
        }
        eprintln!(
            "{name}: partition {k}, {} constraints, {} aux: SnapCircuit's recordings and witnesses equal storage-proofs-update's",
            reference.num_constraints(),
            reference.aux_assignment.len()
        );
    }

    #[test]
    fn snap_circuit_equals_storage_proofs_update_at_2kib() {
        let real = &kind_fixtures_2kib().snap;
        check::<SectorShape2KiB>("2 KiB fixture", real, 0, &[2, 3, 10]);
        let shape = shape_only_snap(RegisteredUpdateProof::StackedDrg2KiBV1, 5).unwrap();
        check::<SectorShape2KiB>("2 KiB shape-only", &shape, 0, &[2, 10]);
    }

    /// 8 MiB: 4 partitions (the partition bits and path are not empty), 128 apex leaves.
    #[test]
    fn snap_circuit_equals_storage_proofs_update_at_8mib() {
        let shape = shape_only_snap(RegisteredUpdateProof::StackedDrg8MiBV1, 5).unwrap();
        check::<SectorShape8MiB>("8 MiB shape-only", &shape, 3, &[3]);
    }
}
