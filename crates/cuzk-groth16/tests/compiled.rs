//! The compiled-circuit path (record the R1CS once, then witness-only synthesis and sparse
//! products) against `PartitionWitness::synthesize`, the reference: a, b, c, assignments and
//! densities exactly equal, for another witness than the one recorded, for circuits that
//! synthesize pieces in separate constraint systems, and a circuit of another shape refused.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_groth16::compiled::{compile, compile_pieces, synthesize_compiled, CompiledCircuit};
use cuzk_groth16::testing::SyntheticCircuit;
use cuzk_groth16::PartitionWitness;
use ff::Field;

fn synthetic(constraints: usize, seed: u64) -> SyntheticCircuit {
    SyntheticCircuit {
        constraints,
        inputs: (0..3).map(|i| Scalar::from(seed * 10 + i)).collect(),
        seed,
    }
}

#[test]
fn compiled_witnesses_equal_the_reference_for_other_witnesses() {
    for constraints in [10, 1000, 20_001] {
        let reference = PartitionWitness::synthesize(synthetic(constraints, 1)).unwrap();
        let (recorded, compiled) = compile(synthetic(constraints, 1)).unwrap();
        assert_eq!(recorded, reference, "recording changed the witness ({constraints})");
        assert_eq!(compiled.num_constraints(), reference.num_constraints());
        for seed in [2, 3] {
            let want = PartitionWitness::synthesize(synthetic(constraints, seed)).unwrap();
            let got = synthesize_compiled(synthetic(constraints, seed), &compiled)
                .unwrap()
                .expect("same structure");
            assert_eq!(got.first_unsatisfied, None, "satisfied");
            assert_eq!(got.witness, want, "{constraints} constraints, seed {seed}");
        }
    }
}

/// A circuit that, where the constraint system allows it, synthesizes its parts in
/// constraint systems of their own (each with its own ONE and inputs) and joins them with
/// `extend`, as parallel synthesis does.
struct Pieces {
    pieces: usize,
    seed: u64,
}

fn piece<CS: ConstraintSystem<Scalar>>(cs: &mut CS, k: usize, seed: u64) -> Result<(), SynthesisError> {
    let x_val = Scalar::from(seed + k as u64 + 2);
    let input = cs.alloc_input(|| "in", || Ok(Scalar::from(k as u64 + 5)))?;
    let x = cs.alloc(|| "x", || Ok(x_val))?;
    let y = cs.alloc(|| "y", || Ok(x_val.square()))?;
    cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
    // ONE with a coefficient that is neither 1 nor -1, an input, and terms that merge.
    let z = cs.alloc(|| "z", || Ok((x_val + Scalar::from(5u64)) * Scalar::from(k as u64 + 5)))?;
    cs.enforce(
        || "(x+5)*in=z",
        |lc| lc + x + (Scalar::from(5u64), CS::one()),
        |lc| lc + input,
        |lc| lc + (Scalar::from(3u64), z) - (Scalar::from(2u64), z),
    );
    Ok(())
}

impl Circuit<Scalar> for Pieces {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let top = cs.alloc_input(|| "top", || Ok(Scalar::from(self.seed)))?;
        cs.enforce(|| "top", |lc| lc + top, |lc| lc + CS::one(), |lc| lc + top);
        for k in 0..self.pieces {
            if CS::is_extensible() {
                let mut sub = CS::new();
                sub.alloc_input(|| "one", || Ok(Scalar::ONE))?;
                piece(&mut sub, k, self.seed)?;
                cs.extend(&sub);
            } else {
                piece(cs, k, self.seed)?;
            }
        }
        Ok(())
    }
}

#[test]
fn pieces_joined_with_extend_compile_to_the_same_witness() {
    let reference = PartitionWitness::synthesize(Pieces { pieces: 7, seed: 1 }).unwrap();
    assert_eq!(reference.first_unsatisfied(), None);
    let (recorded, compiled) = compile(Pieces { pieces: 7, seed: 1 }).unwrap();
    assert_eq!(recorded, reference);
    let want = PartitionWitness::synthesize(Pieces { pieces: 7, seed: 9 }).unwrap();
    let got = synthesize_compiled(Pieces { pieces: 7, seed: 9 }, &compiled).unwrap().unwrap();
    assert_eq!((got.witness, got.first_unsatisfied), (want, None));
    assert!(compiled.dictionary_len() >= 3, "ONE, -ONE and 5");
}

#[test]
fn the_check_in_the_evaluation_pass_finds_the_first_unsatisfied_constraint() {
    let (_, compiled) = compile(synthetic(5000, 1)).unwrap();
    let got = synthesize_compiled(synthetic(5000, 2), &compiled.perturbed()).unwrap().unwrap();
    assert!(got.first_unsatisfied.is_some(), "B replaced by A cannot satisfy a * a = c everywhere");
    assert_eq!(got.first_unsatisfied, got.witness.first_unsatisfied());
}

#[test]
fn a_circuit_of_another_shape_is_refused_with_its_counts() {
    let (_, compiled) = compile(synthetic(1000, 1)).unwrap();
    let err = synthesize_compiled(synthetic(1001, 1), &compiled).unwrap().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("does not match") && msg.contains("1000 constraints"), "{msg}");
    assert_eq!((err.want_constraints, err.constraints), (1000, 1001));
}

/// A prefix, then pieces `range` each in its top-level namespace "piece_<k>".
struct Ranged {
    range: std::ops::Range<usize>,
    seed: u64,
}

impl Circuit<Scalar> for Ranged {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let top = cs.alloc_input(|| "top", || Ok(Scalar::from(self.seed)))?;
        let sq = cs.alloc(|| "sq", || Ok(Scalar::from(self.seed).square()))?;
        cs.enforce(|| "top", |lc| lc + top, |lc| lc + top, |lc| lc + sq);
        for k in self.range {
            piece(&mut cs.namespace(|| format!("piece_{k}")), k, self.seed)?;
        }
        Ok(())
    }
}

#[test]
fn pieces_synthesized_apart_in_parallel_join_to_the_whole_witness() {
    let (_, compiled) = compile(Ranged { range: 0..7, seed: 1 }).unwrap();
    let want = PartitionWitness::synthesize(Ranged { range: 0..7, seed: 4 }).unwrap();
    for cuts in [vec![0..7], vec![0..3, 3..7], vec![0..1, 1..2, 2..5, 5..7]] {
        let parts = cuts.iter().map(|r| Ranged { range: r.clone(), seed: 4 }).collect();
        let got = cuzk_groth16::compiled::synthesize_compiled_pieces(parts, "piece_", &compiled)
            .unwrap()
            .expect("same structure");
        assert_eq!((got.witness, got.first_unsatisfied), (want.clone(), None), "cut {cuts:?}");
        assert_eq!(got.timings.parts, cuts.len());
    }
    // Parts that leave a piece out are refused by their counts.
    let parts = vec![Ranged { range: 0..3, seed: 4 }, Ranged { range: 4..7, seed: 4 }];
    let err = cuzk_groth16::compiled::synthesize_compiled_pieces(parts, "piece_", &compiled).unwrap();
    assert!(err.is_err());
}

/// Recording in parallel: parts recorded apart and joined give the compiled circuit of the
/// whole circuit recorded in one piece (matrices, dictionary order, densities), and its
/// witness is the reference's; parts whose prefixes differ are refused.
#[test]
fn pieces_recorded_apart_in_parallel_join_to_the_whole_compiled_circuit() {
    let (whole_witness, whole) = compile(Ranged { range: 0..7, seed: 3 }).unwrap();
    let reference = PartitionWitness::synthesize(Ranged { range: 0..7, seed: 3 }).unwrap();
    assert_eq!(whole_witness, reference, "recording gives the reference witness");
    for cuts in [vec![0..7], vec![0..3, 3..7], vec![0..1, 1..2, 2..5, 5..7]] {
        let parts = cuts.iter().map(|r| Ranged { range: r.clone(), seed: 3 }).collect();
        let (got, compiled) = compile_pieces(parts, Some("piece_")).unwrap();
        assert!(compiled.same_constraints(&whole), "cut {cuts:?}: the joined recording differs from the whole one");
        assert_eq!(compiled.recorded_parts(), (cuts.len() > 1).then_some(cuts.len()));
        assert_eq!((got.witness, got.first_unsatisfied), (reference.clone(), None), "cut {cuts:?}");
        assert_eq!(got.timings.parts, cuts.len());
    }
    // A part whose prefix is longer than the first part's is refused.
    struct Longer(Ranged);
    impl Circuit<Scalar> for Longer {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            cs.alloc(|| "extra", || Ok(Scalar::ONE))?;
            self.0.synthesize(cs)
        }
    }
    let err = compile_pieces(
        vec![Either::L(Ranged { range: 0..3, seed: 3 }), Either::R(Longer(Ranged { range: 3..7, seed: 3 }))],
        Some("piece_"),
    );
    assert!(err.is_err(), "parts with different prefixes must not join");
}

enum Either<A, B> {
    L(A),
    R(B),
}

impl<A: Circuit<Scalar>, B: Circuit<Scalar>> Circuit<Scalar> for Either<A, B> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Either::L(a) => a.synthesize(cs),
            Either::R(b) => b.synthesize(cs),
        }
    }
}

#[test]
fn saved_compiled_circuits_load_equal_and_bad_files_are_refused_with_the_reason() {
    let dir = std::env::temp_dir().join(format!("cuzk-compiled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.pce");
    let (_, compiled) = compile(synthetic(3000, 1)).unwrap();
    compiled.save("synthetic-3000", &path).unwrap();
    let loaded = CompiledCircuit::load("synthetic-3000", &path).unwrap();
    assert_eq!(loaded, compiled);
    let bytes = std::fs::read(&path).unwrap();

    let refused = |contents: &[u8], key: &str| -> String {
        std::fs::write(&path, contents).unwrap();
        CompiledCircuit::load(key, &path).expect_err("a bad file must not load").to_string()
    };
    let other = refused(&bytes, "porep-StackedDrg2KiBV1_1");
    assert!(other.contains("synthetic-3000") && other.contains("porep-StackedDrg2KiBV1_1"), "{other}");
    let truncated = refused(&bytes[..bytes.len() / 2], "synthetic-3000");
    assert!(truncated.contains("truncated or corrupt"), "{truncated}");
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 3] ^= 1;
    let flipped = refused(&flipped, "synthetic-3000");
    assert!(flipped.contains("hash"), "{flipped}");
    let mut newer = bytes.clone();
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    newer[8..12].copy_from_slice(&(version + 1).to_le_bytes());
    let newer = refused(&newer, "synthetic-3000");
    assert!(newer.contains(&format!("format version {}, this build reads {version}", version + 1)), "{newer}");
    let empty = refused(b"", "synthetic-3000");
    assert!(empty.contains("not a compiled circuit"), "{empty}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Deferred witnesses (the assignment only; the backend evaluates a, b and c): synthesized
/// whole and in parallel parts (written in place, the recording's split), they prove on the
/// CPU backend to the same bytes as today's full witnesses; parameters of another circuit are
/// refused by name before any backend call (a backend that fails every call would say so
/// otherwise); an assignment with one value changed fails with the first unsatisfied row of
/// today's check, and gives no proof.
#[test]
fn deferred_witnesses_prove_as_todays_and_are_checked() {
    use cuzk_groth16::compiled::{compile_pieces, synthesize_compiled_deferred, synthesize_compiled_pieces_deferred};
    use cuzk_groth16::setup::{generate, ToxicWaste};
    use cuzk_groth16::{prove, CpuBackend, ProveError};
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(41);
    let (r, s) = (Scalar::from(17u64), Scalar::from(19u64));
    let silent = cuzk_groth16::progress::Silent;

    // Whole, at sizes that are not powers of two.
    for constraints in [10usize, 1037] {
        let (full, compiled) = compile(synthetic(constraints, 1)).unwrap();
        let srs = generate(&compiled, &ToxicWaste::random(&mut rng), &silent).unwrap();
        let compiled = std::sync::Arc::new(compiled);
        let want = synthesize_compiled(synthetic(constraints, 2), &compiled).unwrap().unwrap().witness;
        let got = synthesize_compiled_deferred(synthetic(constraints, 2), &compiled).unwrap().unwrap();
        assert_eq!(got.first_unsatisfied, None);
        let w = got.witness;
        assert!(w.a.is_empty() && w.deferred.is_some());
        assert_eq!((&w.input_assignment, &w.aux_assignment), (&want.input_assignment, &want.aux_assignment));
        let (today, _) = prove(&CpuBackend, &srs, want, r, s).unwrap();
        let (deferred, _) = prove(&CpuBackend, &srs, w, r, s).unwrap();
        assert_eq!(deferred.to_bytes(), today.to_bytes(), "{constraints} constraints");

        // Parameters of another circuit: refused by name, no backend call made.
        let (_, other) = compile(synthetic(constraints + 64, 1)).unwrap();
        let other_srs = generate(&other, &ToxicWaste::random(&mut rng), &silent).unwrap();
        let failing = cuzk_groth16::testing::FailingBackend::new(std::sync::Arc::new(CpuBackend));
        failing.fail_after(0);
        let w = compiled.deferred_witness(full.input_assignment.clone(), full.aux_assignment.clone());
        let e = prove(failing.as_ref(), &other_srs, w, r, s).unwrap_err();
        assert!(matches!(e, ProveError::ParamsMismatch { .. }) && e.to_string().contains("the circuit needs"), "{e}");

        // One aux value changed: today's first unsatisfied row, and no proof.
        let mut aux = full.aux_assignment.clone();
        let at = aux.len() / 2;
        aux[at] += Scalar::ONE;
        let want_row = compiled.witness(full.input_assignment.clone(), aux.clone()).first_unsatisfied().expect("changed");
        let e = prove(&CpuBackend, &srs, compiled.deferred_witness(full.input_assignment.clone(), aux), r, s).unwrap_err();
        assert!(matches!(e, ProveError::Unsatisfied { constraint } if constraint == want_row), "{e}");
    }

    // In parallel parts, written in place (the recording's split).
    let cuts = |seed| vec![Ranged { range: 0..2, seed }, Ranged { range: 2..5, seed }, Ranged { range: 5..7, seed }];
    let (_, compiled) = compile_pieces(cuts(1), Some("piece_")).unwrap();
    let srs = generate(&compiled, &ToxicWaste::random(&mut rng), &silent).unwrap();
    let compiled = std::sync::Arc::new(compiled);
    let want = PartitionWitness::synthesize(Ranged { range: 0..7, seed: 4 }).unwrap();
    let got = synthesize_compiled_pieces_deferred(cuts(4), "piece_", &compiled).unwrap().unwrap();
    assert!(got.timings.in_place, "the recording's split is written in place");
    assert_eq!((&got.witness.input_assignment, &got.witness.aux_assignment), (&want.input_assignment, &want.aux_assignment));
    let (today, _) = prove(&CpuBackend, &srs, want, r, s).unwrap();
    let (deferred, _) = prove(&CpuBackend, &srs, got.witness, r, s).unwrap();
    assert_eq!(deferred.to_bytes(), today.to_bytes(), "parts in place");
}
