//! SHA-256 witnesses computed natively, equal to what bellperson's SHA-256 gadget
//! (`bellperson::gadgets::sha256::sha256`, 0.27) allocates: the same aux values in the same
//! order, and the same number of constraints, without building one linear combination.
//!
//! Witness-only synthesis (`cuzk_groth16::compiled::WitnessOnlyCs`) needs only the values
//! the gadget assigns; its constraints come from a recording. The gadget's time goes into
//! linear combinations (`UInt32::addmany` and `MultiEq` rebuild theirs for every addition),
//! so here every bit is one of the gadget's three kinds, [`Bit`], and each operation follows
//! the gadget's case analysis of constant, allocated and negated operands: which results are
//! allocated, which are constants or copies, and in which order. What must stay true: the
//! allocations, in order and value, and the constraint count of [`sha256`] equal the
//! gadget's for every input, which the tests check on inputs with constant and allocated
//! bits (`tests/native_sha.rs`). [`num_into_bits`] and [`hash_leaves_and_pack`] do the same
//! for `AllocatedNum::to_bits_le` and filecoin-hashers' SHA-256 node hash (tree D).
//!
//! Every allocation of the gadget comes with one constraint (`AllocatedBit`'s boolean,
//! xor, and, nor constraints; `ch`; `maj` and its `b and c`), and `MultiEq` adds one per
//! packed group of additions, so [`Allocations`] counts them alongside the values.

use bellpepper_core::boolean::Boolean;
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

/// A bit as the gadget holds it: a constant, an allocated variable, or the negation of an
/// allocated variable (its variable's value is the field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    Constant(bool),
    Is(bool),
    /// The negation of a variable holding this value.
    Not(bool),
}

impl Bit {
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(c) | Bit::Is(c) => c,
            Bit::Not(v) => !v,
        }
    }

    fn not(self) -> Bit {
        match self {
            Bit::Constant(c) => Bit::Constant(!c),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }

    fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    /// The kind and value of a gadget bit (an allocated one without a value: missing).
    pub fn of(b: &Boolean) -> Result<Bit, SynthesisError> {
        Ok(match b {
            Boolean::Constant(c) => Bit::Constant(*c),
            Boolean::Is(v) => Bit::Is(v.get_value().ok_or(SynthesisError::AssignmentMissing)?),
            Boolean::Not(v) => Bit::Not(v.get_value().ok_or(SynthesisError::AssignmentMissing)?),
        })
    }
}

/// The aux values the gadget would allocate, in order, and its constraint count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocations {
    pub values: Vec<bool>,
    pub constraints: usize,
}

impl Allocations {
    /// An allocated bit with its one constraint.
    fn bit(&mut self, v: bool) -> Bit {
        self.values.push(v);
        self.constraints += 1;
        Bit::Is(v)
    }

    /// Writes the values into `cs` as aux variables, in one block where `cs` is a witness
    /// generator, and counts the constraints with empty ones (a witness-only system keeps
    /// only their number; elsewhere they are 0 = 0 placeholders, for counting in tests).
    pub fn write<CS: ConstraintSystem<Fr>>(&self, cs: &mut CS) -> Result<(), SynthesisError> {
        let field = |v: bool| if v { Fr::ONE } else { Fr::ZERO };
        if cs.is_witness_generator() {
            // `allocate_empty` (bellpepper's `Namespace` forwards it; not `allocate_empty_aux`).
            let (dst, _) = cs.allocate_empty(self.values.len(), 0);
            for (d, &v) in dst.iter_mut().zip(&self.values) {
                *d = field(v);
            }
        } else {
            for &v in &self.values {
                cs.alloc(|| "bit", || Ok(field(v)))?;
            }
        }
        for _ in 0..self.constraints {
            cs.enforce(|| "counted", |lc| lc, |lc| lc, |lc| lc);
        }
        Ok(())
    }
}

fn xor(al: &mut Allocations, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Bit::Constant(false), x) | (x, Bit::Constant(false)) => x,
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x.not(),
        // An allocated and a negated one: the xor of the two variables, negated.
        (Bit::Is(p), Bit::Not(q)) | (Bit::Not(q), Bit::Is(p)) => al.bit(p ^ q).not(),
        (Bit::Is(p), Bit::Is(q)) | (Bit::Not(p), Bit::Not(q)) => al.bit(p ^ q),
    }
}

fn and(al: &mut Allocations, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
        // and, and-not and nor of the variables: each one allocated result.
        (x, y) => al.bit(x.value() & y.value()),
    }
}

/// `Boolean::sha256_ch`: (a and b) xor (not a and c).
fn ch(al: &mut Allocations, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), _, c) => c,
        (a, Bit::Constant(false), c) => and(al, a.not(), c),
        (a, b, Bit::Constant(false)) => and(al, a, b),
        (a, b, Bit::Constant(true)) => and(al, a, b.not()).not(),
        (a, Bit::Constant(true), c) => and(al, a.not(), c.not()).not(),
        _ => al.bit(v),
    }
}

/// `Boolean::sha256_maj`: the majority of a, b and c.
fn maj(al: &mut Allocations, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), b, c) => and(al, b, c),
        (a, Bit::Constant(false), c) => and(al, a, c),
        (a, b, Bit::Constant(false)) => and(al, a, b),
        (a, b, Bit::Constant(true)) => and(al, a.not(), b.not()).not(),
        (a, Bit::Constant(true), c) => and(al, a.not(), c.not()).not(),
        (Bit::Constant(true), b, c) => and(al, b.not(), c.not()).not(),
        _ => {
            // The result first, then "b and c" (all three are variables here).
            let m = al.bit(v);
            al.bit(b.value() & c.value());
            m
        }
    }
}

/// A 32-bit word as `UInt32` holds it: bits least significant first.
#[derive(Clone, Copy)]
struct Word([Bit; 32]);

impl Word {
    fn constant(v: u32) -> Word {
        Word(std::array::from_fn(|i| Bit::Constant((v >> i) & 1 == 1)))
    }

    /// From 32 bits most significant first.
    fn from_bits_be(bits: &[Bit]) -> Word {
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    fn value(&self) -> u32 {
        self.0.iter().enumerate().fold(0, |v, (i, b)| v | (u32::from(b.value()) << i))
    }

    fn rotr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    fn shr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| if i + by < 32 { self.0[i + by] } else { Bit::Constant(false) }))
    }

    fn xor(&self, al: &mut Allocations, other: &Word) -> Word {
        let mut out = [Bit::Constant(false); 32];
        for i in 0..32 {
            out[i] = xor(al, self.0[i], other.0[i]);
        }
        Word(out)
    }

    fn triop(al: &mut Allocations, a: &Word, b: &Word, c: &Word, op: fn(&mut Allocations, Bit, Bit, Bit) -> Bit) -> Word {
        let mut out = [Bit::Constant(false); 32];
        for i in 0..32 {
            out[i] = op(al, a.0[i], b.0[i], c.0[i]);
        }
        Word(out)
    }
}

/// `MultiEq`'s packing of equalities into one constraint per `Fr::CAPACITY` bits.
struct MultiEq {
    bits_used: usize,
}

impl MultiEq {
    fn enforce_equal(&mut self, al: &mut Allocations, num_bits: usize) {
        if Fr::CAPACITY as usize <= self.bits_used + num_bits {
            al.constraints += 1;
            self.bits_used = 0;
        }
        self.bits_used += num_bits;
    }

    /// The last group's constraint, when the compression ends.
    fn finish(self, al: &mut Allocations) {
        if self.bits_used > 0 {
            al.constraints += 1;
        }
    }
}

/// `UInt32::addmany`: a constant when every operand bit is constant; otherwise as many
/// allocated result bits as the largest possible sum has, the low 32 kept.
fn addmany(al: &mut Allocations, eq: &mut MultiEq, operands: &[Word]) -> Word {
    let sum: u64 = operands.iter().map(|w| u64::from(w.value())).sum();
    if operands.iter().all(|w| w.0.iter().all(|b| b.is_constant())) {
        return Word::constant(sum as u32);
    }
    let max = operands.len() as u64 * u64::from(u32::MAX);
    let bits = (64 - max.leading_zeros()) as usize;
    let mut out = [Bit::Constant(false); 32];
    for i in 0..bits {
        let b = al.bit((sum >> i) & 1 == 1);
        if i < 32 {
            out[i] = b;
        }
    }
    eq.enforce_equal(al, bits);
    Word(out)
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// A working variable of the rounds: an addition the gadget defers until the word is read,
/// so that its operands are summed at once.
enum Pending {
    Sum(Vec<Word>),
    Word(Word),
}

impl Pending {
    /// The word; a deferred sum is taken with `more` operands (a concrete word ignores them,
    /// as the gadget does).
    fn resolve(self, al: &mut Allocations, eq: &mut MultiEq, more: &[Word]) -> Word {
        match self {
            Pending::Word(w) => w,
            Pending::Sum(mut ops) => {
                ops.extend_from_slice(more);
                addmany(al, eq, &ops)
            }
        }
    }
}

/// One compression of a 512-bit block, the gadget's order of operations.
fn compress(al: &mut Allocations, block: &[Bit], current: &[Word; 8]) -> [Word; 8] {
    let mut eq = MultiEq { bits_used: 0 };
    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(al, &w[i - 15].rotr(18)).xor(al, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(al, &w[i - 2].rotr(19)).xor(al, &w[i - 2].shr(10));
        let next = addmany(al, &mut eq, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(next);
    }
    let mut a = Pending::Word(current[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *current;
    let mut e = Pending::Word(current[4]);
    for i in 0..64 {
        let new_e = e.resolve(al, &mut eq, &[]);
        let s1 = new_e.rotr(6).xor(al, &new_e.rotr(11)).xor(al, &new_e.rotr(25));
        let ch = Word::triop(al, &new_e, &f, &g, ch);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];
        let new_a = a.resolve(al, &mut eq, &[]);
        let s0 = new_a.rotr(2).xor(al, &new_a.rotr(13)).xor(al, &new_a.rotr(22));
        let maj = Word::triop(al, &new_a, &b, &c, maj);
        h = g;
        g = f;
        f = new_e;
        e = Pending::Sum(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Pending::Sum(temp1.iter().copied().chain([s0, maj]).collect());
    }
    let out = [
        a.resolve(al, &mut eq, &[current[0]]),
        addmany(al, &mut eq, &[current[1], b]),
        addmany(al, &mut eq, &[current[2], c]),
        addmany(al, &mut eq, &[current[3], d]),
        e.resolve(al, &mut eq, &[current[4]]),
        addmany(al, &mut eq, &[current[5], f]),
        addmany(al, &mut eq, &[current[6], g]),
        addmany(al, &mut eq, &[current[7], h]),
    ];
    eq.finish(al);
    out
}

/// SHA-256 of `input` (a whole number of bytes, bits most significant first) as the
/// gadget computes it: padding as constant bits, one compression per block from the IV
/// as constants. The digest's 256 bits (most significant first within each word, as the
/// gadget returns them), with what the gadget would allocate added to `al`.
pub fn sha256(al: &mut Allocations, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len() % 8 == 0, "SHA-256 input of {} bits, not whole bytes", input.len());
    let len = input.len() as u64;
    let mut padded = input.to_vec();
    padded.push(Bit::Constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Constant(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Constant((len >> i) & 1 == 1)));
    let mut cur = IV.map(Word::constant);
    for block in padded.chunks(512) {
        cur = compress(al, block, &cur);
    }
    cur.iter().flat_map(|w| w.0.iter().rev().copied()).collect()
}

/// `create_label_circuit`'s hash and packing, natively: SHA-256 of `input` (the label's
/// 1216-byte layout), its bits renumbered within each byte and the first `Fr::CAPACITY`
/// packed into one allocated number, as `multipack::pack_bits` does. Everything the gadget
/// allocates is written to `cs`, then the number.
pub fn hash_and_pack<CS: ConstraintSystem<Fr>>(cs: CS, input: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    hash_and_pack_after(cs, Allocations::default(), input)
}

/// filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit` (and so `hash2_circuit` of
/// two leaves), natively: each leaf's `AllocatedNum::to_bits_le` ([`num_into_bits`]), the
/// bits padded to whole bytes and renumbered within each byte, then [`hash_and_pack`]'s
/// hash and packing. The same allocations, in the same order, as the gadgets.
pub fn hash_leaves_and_pack<CS: ConstraintSystem<Fr>>(cs: CS, leaves: &[Fr]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut al = Allocations::default();
    let mut input = Vec::with_capacity(leaves.len() * 256);
    for &leaf in leaves {
        input.extend(renumbered_bits(&mut al, leaf));
    }
    hash_and_pack_after(cs, al, &input)
}

/// storage-proofs' `reverse_bit_numbering(num.to_bits_le(..))`, natively: the value's
/// [`num_into_bits`], padded with constant zeros to whole bytes, each byte's bits reversed.
pub fn renumbered_bits(al: &mut Allocations, value: Fr) -> Vec<Bit> {
    let mut bits = num_into_bits(al, value);
    while bits.len() % 8 != 0 {
        bits.push(Bit::Constant(false));
    }
    bits.chunks_exact(8).flat_map(|byte| byte.iter().rev().copied()).collect()
}

/// `AllocatedNum::to_bits_le`: the value's `Fr::NUM_BITS` low bits, least significant first,
/// each an allocated bit with its boolean constraint, and then the unpacking constraint.
pub fn num_into_bits(al: &mut Allocations, value: Fr) -> Vec<Bit> {
    let repr = value.to_repr();
    let bits = (0..Fr::NUM_BITS as usize).map(|i| al.bit((repr.as_ref()[i / 8] >> (i % 8)) & 1 == 1)).collect();
    al.constraints += 1;
    bits
}

/// SHA-256 of `input` with `al` (what the gadgets allocated before the hash) and the
/// packing: all of it written to `cs`, then the packed number.
pub fn hash_and_pack_after<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    mut al: Allocations,
    input: &[Bit],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    // About 30,000 allocations per block of the message and its padding.
    al.values.reserve((input.len() / 512 + 1) * 30_000);
    let digest = sha256(&mut al, input);
    al.write(&mut cs)?;
    let value = pack_le_bytes(&digest);
    let num = AllocatedNum::alloc(cs.namespace(|| "result_num"), || Ok(value))?;
    cs.enforce(|| "packing constraint", |lc| lc, |lc| lc, |lc| lc);
    Ok(num)
}

/// The number whose bit i is bit 7 - i % 8 of byte i / 8 of `bits` (bytes most significant
/// bit first), for the first `Fr::CAPACITY` bits: `pack_bits` after `reverse_bit_numbering`.
fn pack_le_bytes(bits: &[Bit]) -> Fr {
    let mut repr = <Fr as PrimeField>::Repr::default();
    for i in 0..Fr::CAPACITY as usize {
        if bits[(i / 8) * 8 + 7 - i % 8].value() {
            repr.as_mut()[i / 8] |= 1 << (i % 8);
        }
    }
    Fr::from_repr_vartime(repr).expect("254 bits are below the modulus")
}
