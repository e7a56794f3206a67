//! cuzk's prover against bellperson's on synthetic circuits with fresh parameters:
//! byte-identical proofs for the same r, s; proofs that bellperson's verifier accepts;
//! parameter files that are broken in each way are refused with their own error.

use std::path::PathBuf;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_groth16::testing::SyntheticCircuit as Synthetic;
use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::{prove, CpuBackend, PartitionWitness, ProveError, Srs, SrsError};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuzk-groth16-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn params_for(c: &Synthetic, rng: &mut ChaCha20Rng, name: &str) -> (groth16::Parameters<Bls12>, PathBuf) {
    let params = groth16::generate_random_parameters::<Bls12, _, _>(c.clone(), rng).unwrap();
    let path = temp_path(name);
    let mut f = std::fs::File::create(&path).unwrap();
    params.write(&mut f).unwrap();
    (params, path)
}

#[test]
fn proofs_equal_bellperson_and_verify() {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    // powers of two (no padding) and sizes just past one (maximal padding), up to 2^16
    for (k, constraints) in [16usize, 17, 100, 1 << 10, (1 << 12) + 7, 1 << 14, 1 << 16]
        .into_iter()
        .enumerate()
    {
        let inputs: Vec<Fr> = (0..3).map(|_| Fr::random(&mut rng)).collect();
        let c = Synthetic { constraints, inputs: inputs.clone(), seed: k as u64 };
        let (params, path) = params_for(&c, &mut rng, &format!("synthetic-{constraints}.params"));
        let srs = Srs::load(&path).unwrap();
        assert_eq!(srs.h.len(), params.h.len());

        let r = Fr::random(&mut rng);
        let s = Fr::random(&mut rng);
        let witness = PartitionWitness::synthesize(c.clone()).unwrap();
        assert_eq!(witness.num_constraints(), constraints);
        assert_eq!(witness.first_unsatisfied(), None);
        let (ours, _) = prove(&CpuBackend, &srs, witness, r, s).unwrap();

        let theirs = groth16::create_proof::<Bls12, _, _>(c, &params, r, s).unwrap();
        let mut theirs_bytes = vec![];
        theirs.write(&mut theirs_bytes).unwrap();
        assert_eq!(ours.to_bytes().to_vec(), theirs_bytes, "{constraints} constraints: proof bytes differ");

        let pvk = groth16::prepare_verifying_key(&params.vk);
        let decoded = groth16::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
        assert!(groth16::verify_proof(&pvk, &decoded, &inputs).unwrap(), "{constraints}: does not verify");
        let mut wrong = inputs.clone();
        wrong[0] += Fr::ONE;
        assert!(!groth16::verify_proof(&pvk, &decoded, &wrong).unwrap(), "verifies for wrong inputs");
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn random_blinding_proofs_verify() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let inputs: Vec<Fr> = (0..2).map(|_| Fr::random(&mut rng)).collect();
    let c = Synthetic { constraints: 300, inputs: inputs.clone(), seed: 3 };
    let (params, path) = params_for(&c, &mut rng, "blinding.params");
    let srs = Srs::load(&path).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let mut seen = vec![];
    for _ in 0..3 {
        let (r, s) = cuzk_groth16::prover::random_blinding(&mut rng);
        let (p, _) = prove(&CpuBackend, &srs, PartitionWitness::synthesize(c.clone()).unwrap(), r, s).unwrap();
        let decoded = groth16::Proof::<Bls12>::read(&p.to_bytes()[..]).unwrap();
        assert!(groth16::verify_proof(&pvk, &decoded, &inputs).unwrap());
        assert!(!seen.contains(&p.to_bytes()), "blinding did not change the proof");
        seen.push(p.to_bytes());
    }
}

#[test]
fn broken_parameter_files_are_refused_with_their_own_error() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let c = Synthetic { constraints: 64, inputs: vec![Fr::ONE], seed: 1 };
    let (_, path) = params_for(&c, &mut rng, "broken.params");
    let good = std::fs::read(&path).unwrap();

    let missing = temp_path("does-not-exist.params");
    let e = Srs::load(&missing).unwrap_err();
    assert!(matches!(e, SrsError::Io { .. }), "{e}");
    assert!(e.to_string().contains("does-not-exist.params"), "{e}");

    let truncated = temp_path("truncated.params");
    std::fs::write(&truncated, &good[..good.len() - 100]).unwrap();
    let e = Srs::load(&truncated).unwrap_err();
    assert!(matches!(e, SrsError::Truncated { section: "b_g2", .. }), "{e}");
    assert!(e.to_string().contains("truncated.params") && e.to_string().contains("truncated"), "{e}");

    let header_only = temp_path("header.params");
    std::fs::write(&header_only, &good[..100]).unwrap();
    let e = Srs::load(&header_only).unwrap_err();
    assert!(matches!(e, SrsError::Truncated { section: "verifying key", .. }), "{e}");

    let trailing = temp_path("trailing.params");
    std::fs::write(&trailing, [&good[..], b"junk"].concat()).unwrap();
    let e = Srs::load(&trailing).unwrap_err();
    assert!(matches!(e, SrsError::TrailingBytes { extra: 4, .. }), "{e}");

    // Corrupt the x coordinate of the first h point: off the curve.
    let vk_len = 3 * 96 + 3 * 192 + 4 + 2 * 96; // fixed vk + ic (ONE and one input)
    let mut corrupt = good.clone();
    corrupt[vk_len + 4 + 40] ^= 0x55;
    let bad_point = temp_path("corrupt.params");
    std::fs::write(&bad_point, &corrupt).unwrap();
    let e = Srs::load(&bad_point).unwrap_err();
    assert!(matches!(e, SrsError::BadPoint { section: "h", index: 0, .. }), "{e}");

    // Parameters of another circuit: refused before any arithmetic, naming the section.
    let other = Synthetic { constraints: 128, inputs: vec![Fr::ONE], seed: 1 };
    let srs = Srs::load(&path).unwrap();
    let e = prove(&CpuBackend, &srs, PartitionWitness::synthesize(other).unwrap(), Fr::ONE, Fr::ONE)
        .unwrap_err();
    assert!(matches!(e, ProveError::ParamsMismatch { section: "h", expected: 127, found: 63, .. }), "{e}");
}

#[test]
fn unsatisfied_witness_is_detected() {
    struct Lying;
    impl Circuit<Fr> for Lying {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::from(3)))?;
            let y = cs.alloc(|| "y", || Ok(Fr::from(5)))?;
            cs.enforce(|| "ok", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + x);
            cs.enforce(|| "lie", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }
    let w = PartitionWitness::synthesize(Lying).unwrap();
    assert_eq!(w.first_unsatisfied(), Some(1));
}

/// `Srs::write_params` is the inverse of `Srs::load`: parameters bellperson wrote come back
/// byte for byte, and random shape-only parameters written then read are the same points.
#[test]
fn written_parameters_are_bellpersons_bytes() {
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let c = Synthetic { constraints: 300, inputs: vec![Fr::ONE, Fr::ONE.double()], seed: 9 };
    let (_, path) = params_for(&c, &mut rng, "write-src");
    let srs = Srs::load(&path).unwrap();
    let again = temp_path("write-again");
    let n = srs.write_params(&again).unwrap();
    let (theirs, ours) = (std::fs::read(&path).unwrap(), std::fs::read(&again).unwrap());
    assert_eq!(n as usize, ours.len());
    assert!(theirs == ours, "rewritten parameters differ from bellperson's file ({} against {} bytes)", ours.len(), theirs.len());

    let shape = cuzk_groth16::SrsShape { ic: 5, h: 1023, l: 700, a: 900, b_g1: 300, b_g2: 300 };
    let random = cuzk_groth16::shape::random_srs(&shape, 5);
    let out = temp_path("write-random");
    random.write_params(&out).unwrap();
    assert_eq!(Srs::shape(&out).unwrap(), shape);
    let back = Srs::load(&out).unwrap();
    assert_eq!(back.vk, random.vk);
    assert!(back.h[..] == random.h[..] && back.l[..] == random.l[..] && back.a[..] == random.a[..]);
    assert!(back.b_g1[..] == random.b_g1[..] && back.b_g2[..] == random.b_g2[..]);

    let err = random.write_params(&std::env::temp_dir().join("no-such-dir-cuzk/x.params")).unwrap_err();
    assert!(err.to_string().contains("no-such-dir-cuzk/x.params"), "{err}");
}
