//! cuzk's parameter setup against bellperson's generator: for the same circuit and toxic
//! waste, the `.params` and `.vk` bytes are equal; the parameters prove with cuzk's prover
//! and verify with bellperson's verifier, and not against another waste's key; a circuit
//! bellperson refuses is refused too; a failed setup leaves no file under its final name.

use std::path::{Path, PathBuf};

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::progress::Silent;
use cuzk_groth16::setup::{setup_circuit, SetupError, ToxicWaste};
use cuzk_groth16::testing::SyntheticCircuit as Synthetic;
use cuzk_groth16::{prove, CpuBackend, PartitionWitness, Srs};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuzk-setup-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Our `.params` and `.vk` bytes for `c` and `w`.
fn ours<C: Circuit<Fr>>(c: C, w: &ToxicWaste, dir: &Path) -> Result<(Vec<u8>, Vec<u8>), SetupError> {
    let (p, vk) = (dir.join("c.params"), dir.join("c.vk"));
    setup_circuit(c, w, &p, &vk, &Silent)?;
    Ok((std::fs::read(p).unwrap(), std::fs::read(vk).unwrap()))
}

/// bellperson's bytes for `c` and `w`.
fn theirs<C: Circuit<Fr>>(c: C, w: &ToxicWaste) -> Result<(Vec<u8>, Vec<u8>), SynthesisError> {
    let params =
        groth16::generate_parameters::<Bls12, _>(c, w.g1, w.g2, w.alpha, w.beta, w.gamma, w.delta, w.tau)?;
    let (mut p, mut vk) = (Vec::new(), Vec::new());
    params.write(&mut p).unwrap();
    params.vk.write(&mut vk).unwrap();
    Ok((p, vk))
}

/// Every kind of term a setup meets: coefficients 1, -1, 0, small and general, a variable
/// twice in one combination, inputs in A, B and C, and inputs in no constraint but their own.
#[derive(Clone)]
struct Mixed {
    rows: usize,
    inputs: usize,
    unused_aux: bool,
}

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let ins: Vec<_> = (0..self.inputs).map(|i| cs.alloc_input(|| format!("in{i}"), || Ok(Fr::ONE))).collect::<Result<_, _>>()?;
        let big = Fr::from(0x1234_5678_9abc_def0u64).square();
        let mut prev = cs.alloc(|| "x0", || Ok(Fr::ONE))?;
        for i in 0..self.rows {
            let x = cs.alloc(|| format!("x{}", i + 1), || Ok(Fr::ONE))?;
            let input = ins[i % 2.min(ins.len())];
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + prev + prev - x + (big, input),
                |lc| lc + CS::one() + (-big, x),
                |lc| lc + (Fr::from(3), prev) + (Fr::ZERO, x) + input,
            );
            prev = x;
        }
        if self.unused_aux {
            cs.alloc(|| "never constrained", || Ok(Fr::ONE))?;
        }
        Ok(())
    }
}

#[test]
fn parameters_equal_bellperson_byte_for_byte() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let dir = temp_dir("equal");
    // Powers of two and sizes just past one; 17 constraints with 10 inputs leaves inputs in
    // no constraint of the circuit's own.
    for (k, (constraints, inputs)) in [(16usize, 3usize), (17, 10), (100, 2), (1 << 10, 3), ((1 << 12) + 7, 5)].into_iter().enumerate() {
        let c = Synthetic { constraints, inputs: (0..inputs).map(|_| Fr::random(&mut rng)).collect(), seed: k as u64 };
        let w = ToxicWaste::random(&mut rng);
        let (p, vk) = ours(c.clone(), &w, &dir).unwrap();
        let (tp, tvk) = theirs(c, &w).unwrap();
        assert_eq!(p.len(), tp.len(), "{constraints} constraints: .params sizes differ");
        assert!(p == tp, "{constraints} constraints: .params bytes differ");
        assert!(vk == tvk, "{constraints} constraints: .vk bytes differ");
    }
    for (rows, inputs) in [(1, 1), (5, 2), (300, 7)] {
        let c = Mixed { rows, inputs, unused_aux: false };
        let w = ToxicWaste::random(&mut rng);
        let (p, vk) = ours(c.clone(), &w, &dir).unwrap();
        assert!((p, vk) == theirs(c, &w).unwrap(), "mixed circuit of {rows} rows: bytes differ");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_same_seed_gives_bellpersons_random_parameters() {
    // ToxicWaste::random draws as generate_random_parameters does.
    let c = Synthetic { constraints: 40, inputs: vec![Fr::from(5)], seed: 2 };
    let dir = temp_dir("seeded");
    let w = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(3));
    let (p, _) = ours(c.clone(), &w, &dir).unwrap();
    let params = groth16::generate_random_parameters::<Bls12, _, _>(c, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
    let mut tp = Vec::new();
    params.write(&mut tp).unwrap();
    assert!(p == tp);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn proofs_verify_against_their_own_waste_only() {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let inputs: Vec<Fr> = (0..3).map(|_| Fr::random(&mut rng)).collect();
    let c = Synthetic { constraints: 1000, inputs: inputs.clone(), seed: 9 };
    let dir = temp_dir("verify");
    let (p, vk) = (dir.join("c.params"), dir.join("c.vk"));
    setup_circuit(c.clone(), &ToxicWaste::random(&mut rng), &p, &vk, &Silent).unwrap();
    let (p2, vk2) = (dir.join("other.params"), dir.join("other.vk"));
    setup_circuit(c.clone(), &ToxicWaste::random(&mut rng), &p2, &vk2, &Silent).unwrap();

    let srs = Srs::load(&p).unwrap();
    let (r, s) = cuzk_groth16::prover::random_blinding(&mut rng);
    let (proof, _) = prove(&CpuBackend, &srs, PartitionWitness::synthesize(c).unwrap(), r, s).unwrap();
    let proof = groth16::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    let key = |path: &Path| groth16::prepare_verifying_key(&groth16::VerifyingKey::<Bls12>::read(&std::fs::read(path).unwrap()[..]).unwrap());
    assert!(groth16::verify_proof(&key(&vk), &proof, &inputs).unwrap(), "does not verify against its own key");
    assert!(!groth16::verify_proof(&key(&vk2), &proof, &inputs).unwrap(), "verifies against another waste's key");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_unconstrained_variable_is_refused_as_bellperson_refuses_it() {
    let c = Mixed { rows: 10, inputs: 2, unused_aux: true };
    let w = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(4));
    let dir = temp_dir("unconstrained");
    let err = ours(c.clone(), &w, &dir).unwrap_err();
    assert!(matches!(err, SetupError::Unconstrained { index: 11, aux: 12 }), "{err}");
    assert!(err.to_string().contains("aux variable 11 of 12 occurs in no constraint"), "{err}");
    assert!(matches!(theirs(c, &w), Err(SynthesisError::UnconstrainedVariable)));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "a refused setup wrote files");
    std::fs::remove_dir_all(dir).unwrap();
}

struct Failing;
impl Circuit<Fr> for Failing {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        cs.alloc(|| "x", || Ok(Fr::ONE))?;
        Err(SynthesisError::Unsatisfiable)
    }
}

#[test]
fn failed_setups_name_the_problem_and_leave_no_file() {
    let w = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(5));
    let dir = temp_dir("fail");
    let err = ours(Failing, &w, &dir).unwrap_err();
    assert!(err.to_string().starts_with("recording the circuit's constraints failed: "), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    // Toxic waste that cannot make parameters is refused by name.
    let c = Synthetic { constraints: 20, inputs: vec![Fr::ONE], seed: 1 };
    for (bad, name) in [
        (ToxicWaste { g1: group::Group::identity(), ..w.clone() }, "generator g1 is the identity"),
        (ToxicWaste { delta: Fr::ZERO, ..w.clone() }, "delta is zero"),
        (ToxicWaste { tau: Fr::ONE, ..w.clone() }, "tau is a point of the domain"),
    ] {
        let err = ours(c.clone(), &bad, &dir).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    // A directory that cannot be written: the error names the file, nothing is left.
    let missing = dir.join("no-such-dir");
    let err = setup_circuit(c.clone(), &w, &missing.join("c.params"), &missing.join("c.vk"), &Silent).unwrap_err();
    assert!(err.to_string().contains("no-such-dir/c.params"), "{err}");
    assert!(!missing.exists());

    // The .vk cannot be written (a directory in its place): the .params already renamed
    // stays whole, no partial file is left beside either.
    std::fs::create_dir(dir.join("c.vk")).unwrap();
    let err = setup_circuit(c, &w, &dir.join("c.params"), &dir.join("c.vk"), &Silent).unwrap_err();
    assert!(err.to_string().contains("c.vk"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");
    assert!(Srs::load(&dir.join("c.params")).is_ok());
    std::fs::remove_dir_all(dir).unwrap();
}
