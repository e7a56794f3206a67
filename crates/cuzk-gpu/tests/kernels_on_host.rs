//! Kernels built for the host with the system's C++ compiler (`CUZK_HOST_BUILD`,
//! kernels/host/README.md) and run against host references, so that their logic is checked on
//! every change, on machines without a GPU too:
//! - the batch-affine kernels (kernels/msm_affine.cuh) against sequential sums (the GPU test
//!   `gpu_equivalence::batch_affine_levels_match_cpu` checks them on the device);
//! - the random parameter points (kernels/random.cuh) against
//!   `cuzk_groth16::shape::random_points` (on the device:
//!   `gpu_equivalence::random_points_on_the_device_equal_the_hosts`);
//! - the constraint evaluation (kernels/eval.cuh) against
//!   `cuzk_groth16::compiled::CompiledCircuit::evaluate_checked`;
//! - a whole G1 MSM (kernels/msm.cuh), with precomputed multiples (kernels/multiples.cuh)
//!   and windows sharing bucket sets, against blstrs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use cuzk_groth16::compiled::{compile, CompiledCircuit};
use cuzk_groth16::points::{point_bytes as bytes, PlainPoint};
use cuzk_groth16::shape::{random_points, run_seeds, RUN_LOG};
use cuzk_groth16::testing::SyntheticCircuit;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Builds kernels/host/`name`.cpp into `dir`.
fn build(name: &str, dir: &Path) -> PathBuf {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let bin = dir.join(name);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let built = Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-DCUZK_HOST_BUILD", "-I"])
        .arg(&kernels)
        .arg(kernels.join(format!("host/{name}.cpp")))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap_or_else(|e| panic!("{cxx} (set CXX to another C++17 compiler): {e}"));
    assert!(built.status.success(), "{cxx} failed:\n{}", String::from_utf8_lossy(&built.stderr));
    bin
}

#[test]
fn batch_affine_kernels_match_sequential_sums_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(build("batch_affine_check", dir.path())).output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the kernels' sums differ from sequential ones:\n{out}");
    assert_eq!(out.matches(": 0 of 48 buckets differ").count(), 6, "{out}");
}

/// The kernel's points for `seeds` (group 1 or 2), as bytes.
fn kernel_points<A: PlainPoint>(bin: &Path, group: u64, n: usize, seeds: &[(A, A)]) -> Vec<u8> {
    let mut input: Vec<u8> = [group, n as u64, RUN_LOG as u64].iter().flat_map(|x| x.to_le_bytes()).collect();
    let (starts, steps): (Vec<A>, Vec<A>) = seeds.iter().copied().unzip();
    input.extend_from_slice(bytes(&starts));
    input.extend_from_slice(bytes(&steps));
    let mut child = Command::new(bin).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "random_points_check failed");
    out.stdout
}

/// Two runs (the second partial) of G1 points and a partial run of G2 points, byte for byte.
#[test]
fn random_point_kernels_make_the_hosts_points() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build("random_points_check", dir.path());
    let n = (1 << RUN_LOG) + 300;
    let want = random_points::<G1Projective>(n, 11, 2);
    let got = kernel_points(&bin, 1, n, &run_seeds::<G1Projective>(n, 11, 2));
    assert_eq!(got.len(), bytes(&want).len());
    if let Some(i) = (0..n).find(|&i| got[i * 96..(i + 1) * 96] != bytes(&want)[i * 96..(i + 1) * 96]) {
        panic!("G1 point {i} of {n} differs from the host's");
    }
    let n2 = 200;
    let want = random_points::<G2Projective>(n2, 11, 6);
    let got = kernel_points(&bin, 2, n2, &run_seeds::<G2Projective>(n2, 11, 6));
    assert!(got == bytes(&want), "G2 points differ from the host's");
}

/// The bytes of scalars as they lie in memory (Montgomery form), which is what the kernel reads
/// and writes; `to_bytes_le` would convert them out of Montgomery form.
fn scalar_bytes(v: &[Scalar]) -> &[u8] {
    // SAFETY: a blstrs Scalar is blst_fr, four u64 limbs with no padding; reading its bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// eval_check's input for `compiled` at `z`: the counts, each matrix's row starts (as u32, as the
/// device holds them), terms, columns and coefficient ids, then the dictionary and z.
fn eval_input(compiled: &CompiledCircuit, z: &[Scalar]) -> Vec<u8> {
    let (parts, dictionary) = compiled.parts();
    let rows = compiled.num_constraints() as u64;
    let mut input: Vec<u8> =
        [rows, z.len() as u64, dictionary.len() as u64].iter().flat_map(|x| x.to_le_bytes()).collect();
    for m in parts {
        assert_eq!(m.start.len() as u64, rows + 1);
        for &s in m.start {
            input.extend_from_slice(&u32::try_from(s).expect("terms fit u32 row starts").to_le_bytes());
        }
        input.extend_from_slice(&(m.cols.len() as u64).to_le_bytes());
        input.extend(m.cols.iter().flat_map(|c| c.to_le_bytes()));
        input.extend(m.coeffs.iter().flat_map(|c| c.to_le_bytes()));
    }
    input.extend_from_slice(scalar_bytes(dictionary));
    input.extend_from_slice(scalar_bytes(z));
    input
}

/// Runs eval_check on `input`: its stdout, or its stderr when it refused the input.
fn run_eval_check(bin: &Path, input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child =
        Command::new(bin).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // The tool exits without reading the rest of a malformed input, so a failed write is
    // expected then; its exit status says which case this is.
    let mut stdin = child.stdin.take().unwrap();
    let written = stdin.write_all(input);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    written.unwrap();
    Ok(out.stdout)
}

/// The kernel's a, b and c for `compiled` at z = `inputs` ++ `aux` equal evaluate_checked's,
/// byte for byte, and so does its first unsatisfied row. Returns that row.
fn check_evaluation(
    bin: &Path,
    what: &str,
    compiled: &CompiledCircuit,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Option<usize> {
    let (want, want_bad) = compiled.evaluate_checked(inputs, aux);
    let z: Vec<Scalar> = inputs.iter().chain(aux).copied().collect();
    let out =
        run_eval_check(bin, &eval_input(compiled, &z)).unwrap_or_else(|e| panic!("{what}: eval_check failed: {e}"));
    let rows = compiled.num_constraints();
    assert_eq!(out.len(), 3 * rows * 32 + 4, "{what}: output length");
    for (k, name) in ["a", "b", "c"].iter().enumerate() {
        let got = &out[k * rows * 32..(k + 1) * rows * 32];
        let want = scalar_bytes(&want[k]);
        assert_eq!(want.len(), got.len(), "{what}: {name} length");
        if let Some(i) = (0..rows).find(|&i| got[i * 32..(i + 1) * 32] != want[i * 32..(i + 1) * 32]) {
            panic!("{what}: {name}[{i}] of {rows} differs from the CPU's");
        }
    }
    let got_bad = u32::from_le_bytes(out[3 * rows * 32..].try_into().unwrap());
    let want_code = want_bad.map_or(u32::MAX, |r| u32::try_from(r).unwrap());
    assert_eq!(got_bad, want_code, "{what}: first unsatisfied row (u32::MAX: none)");
    want_bad
}

/// One term of a linear combination: variable, coefficient, and the variable's value.
type Term = (Variable, Scalar, Scalar);

fn lc_value(terms: &[Term]) -> Scalar {
    terms.iter().map(|&(_, k, v)| k * v).sum()
}

/// A circuit with every kind of term a compiled matrix holds: coefficients +1 and -1 (the
/// kernel's own paths), small constants 2 and 5 and general field elements (dictionary
/// entries), rows with no terms in A, B or C or all three, a variable repeated in one linear
/// combination (bellpepper merges it into one term of the summed coefficient, or none where
/// the coefficients cancel), inputs and aux, and values 0 and 1 (the CPU's shortcuts) among
/// random ones. `constraints` of its own, plus one per input (ONE included) that the
/// recording appends. Satisfied at its own assignment.
struct EveryTerm {
    constraints: usize,
    seed: u64,
}

/// `n` terms over random variables of `vars`, coefficients by `coeff(at + t)`.
fn pick(
    vars: &[(Variable, Scalar)],
    n: usize,
    at: usize,
    coeff: &impl Fn(usize) -> Scalar,
    rng: &mut ChaCha8Rng,
) -> Vec<Term> {
    (0..n)
        .map(|t| {
            let (var, v) = vars[rng.gen_range(0..vars.len())];
            (var, coeff(at + t), v)
        })
        .collect()
}

impl Circuit<Scalar> for EveryTerm {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut vars: Vec<(Variable, Scalar)> = vec![(CS::one(), Scalar::ONE)];
        for i in 0..3 {
            let v = Scalar::random(&mut rng);
            vars.push((cs.alloc_input(|| format!("in{i}"), || Ok(v))?, v));
        }
        let inputs = vars.len();
        for i in 0..40 {
            let v = match i % 4 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            };
            vars.push((cs.alloc(|| format!("pool{i}"), || Ok(v))?, v));
        }
        // General coefficients: small multiples of one random-looking element, so that the
        // dictionary holds many distinct ones.
        let big = Scalar::random(&mut rng);
        let coeff = |k: usize| match k % 5 {
            0 => Scalar::ONE,
            1 => -Scalar::ONE,
            2 => Scalar::from(2),
            3 => Scalar::from(5),
            _ => Scalar::from(k as u64 % 97 + 3) * big,
        };
        for row in 0..self.constraints {
            let (a, b, c_rest): (Vec<Term>, Vec<Term>, Vec<Term>) = match row % 8 {
                // No terms in A and C: 0 * b = 0.
                0 => {
                    let b = pick(&vars, 3, row, &coeff, &mut rng);
                    enforce(cs, row, &[], &b, &[]);
                    continue;
                }
                // No terms in B and C: a * 0 = 0.
                1 => {
                    let a = pick(&vars, 2, row, &coeff, &mut rng);
                    enforce(cs, row, &a, &[], &[]);
                    continue;
                }
                // No terms anywhere.
                2 => {
                    enforce(cs, row, &[], &[], &[]);
                    continue;
                }
                // Repeated variables: x twice (2x + 5x = 7x) and y cancelling out (y - y), in
                // A; x again in B.
                3 => {
                    let (x, xv) = vars[rng.gen_range(0..vars.len())];
                    let (y, yv) = vars[rng.gen_range(0..vars.len())];
                    let mut a = pick(&vars, 1, row, &coeff, &mut rng);
                    a.extend([
                        (x, Scalar::from(2), xv),
                        (y, Scalar::ONE, yv),
                        (x, Scalar::from(5), xv),
                        (y, -Scalar::ONE, yv),
                    ]);
                    let mut b = pick(&vars, 2, row + 1, &coeff, &mut rng);
                    b.push((x, coeff(row), xv));
                    (a, b, vec![])
                }
                // Inputs only in A (with -1), the constant ONE times 5 in B, an input in C.
                4 => {
                    let (i, iv) = vars[rng.gen_range(1..inputs)];
                    let (j, jv) = vars[rng.gen_range(1..inputs)];
                    (
                        vec![(i, -Scalar::ONE, iv)],
                        vec![(CS::one(), Scalar::from(5), Scalar::ONE)],
                        vec![(j, coeff(row), jv)],
                    )
                }
                _ => {
                    let a = pick(&vars, rng.gen_range(1..=5), row, &coeff, &mut rng);
                    let b = pick(&vars, rng.gen_range(1..=4), row + 2, &coeff, &mut rng);
                    let c = pick(&vars, rng.gen_range(0..=2), row + 3, &coeff, &mut rng);
                    (a, b, c)
                }
            };
            // C = k w + the other terms, with w chosen so that a * b = c.
            let k = coeff(row + 1);
            let wv = (lc_value(&a) * lc_value(&b) - lc_value(&c_rest)) * k.invert().unwrap();
            let w = cs.alloc(|| format!("w{row}"), || Ok(wv))?;
            let mut c = c_rest;
            c.push((w, k, wv));
            enforce(cs, row, &a, &b, &c);
            vars.push((w, wv));
        }
        Ok(())
    }
}

fn enforce<CS: ConstraintSystem<Scalar>>(cs: &mut CS, row: usize, a: &[Term], b: &[Term], c: &[Term]) {
    let lc = |terms: &[Term]| {
        let terms = terms.to_vec();
        move |lc: bellperson::LinearCombination<Scalar>| terms.iter().fold(lc, |lc, &(var, k, _)| lc + (k, var))
    };
    cs.enforce(|| format!("row{row}"), lc(a), lc(b), lc(c));
}

/// The constraint evaluation kernel (eval.cuh) on the host against
/// `CompiledCircuit::evaluate_checked`: a, b and c byte for byte and the first unsatisfied
/// row, for circuits at their own assignments (satisfied), with one aux value changed, and
/// for the perturbed recording (B replaced by A); and malformed input refused.
#[test]
fn constraint_evaluation_kernel_equals_the_cpu_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build("eval_check", dir.path());
    let synthetic = |constraints: usize, seed: u64| SyntheticCircuit {
        constraints,
        inputs: (0..3).map(|i| Scalar::from(seed * 10 + i)).collect(),
        seed,
    };
    // 1037 rows of its own and 4 input rows (not a multiple of the 64-thread block), 60 + 4
    // (exactly one block) and 5 + 4 (less than one).
    let circuits: Vec<(String, _)> = vec![
        ("every term, 1037".to_string(), compile(EveryTerm { constraints: 1037, seed: 1 }).unwrap()),
        ("every term, 60".to_string(), compile(EveryTerm { constraints: 60, seed: 2 }).unwrap()),
        ("every term, 5".to_string(), compile(EveryTerm { constraints: 5, seed: 3 }).unwrap()),
        ("synthetic, 5000".to_string(), compile(synthetic(5000, 4)).unwrap()),
    ];
    for (what, (witness, compiled)) in &circuits {
        let (inputs, aux) = (&witness.input_assignment, &witness.aux_assignment);
        let ok = check_evaluation(&bin, what, compiled, inputs, aux);
        assert_eq!(ok, None, "{what}: satisfied at its own assignment");

        // One aux value that a middle row's C reads (the first such row from the middle on,
        // or else from the start), changed: that row, or an earlier one reading the same
        // value, is the first unsatisfied.
        let rows = compiled.num_constraints();
        let (parts, _) = compiled.parts();
        let c = parts[2];
        let (mid, col) = (rows / 2..rows)
            .chain(0..rows / 2)
            .find_map(|r| {
                let terms = c.start[r] as usize..c.start[r + 1] as usize;
                c.cols[terms].iter().find(|&&col| col as usize >= compiled.num_inputs).map(|&col| (r, col as usize))
            })
            .unwrap_or_else(|| panic!("{what}: no row whose C reads aux"));
        let mut changed = aux.clone();
        changed[col - compiled.num_inputs] += Scalar::ONE;
        let bad = check_evaluation(&bin, &format!("{what}, aux changed"), compiled, inputs, &changed);
        assert!(bad.is_some_and(|r| r <= mid), "{what}: row {mid} reads the changed value, first bad {bad:?}");

        let bad = check_evaluation(&bin, &format!("{what}, perturbed"), &compiled.perturbed(), inputs, aux);
        assert!(bad.is_some(), "{what}: a * a = c fails somewhere");
    }

    // Malformed input is refused, not read out of bounds: short, and columns past z.
    let (witness, compiled) = &circuits[0].1;
    let z: Vec<Scalar> = witness.input_assignment.iter().chain(&witness.aux_assignment).copied().collect();
    let input = eval_input(compiled, &z);
    let short = run_eval_check(&bin, &input[..input.len() - 1]);
    assert!(short.as_ref().is_err_and(|e| e.contains("short input")), "{short:?}");
    let outside = run_eval_check(&bin, &eval_input(compiled, &z[..1]));
    assert!(outside.as_ref().is_err_and(|e| e.contains("reads column")), "{outside:?}");
}

/// msm_check's multiples and result for `bases` and `scalars` at c-bit windows, `per`
/// windows per bucket set.
fn kernel_msm(bin: &Path, bases: &[G1Affine], scalars: &[Scalar], c: u32, per: u32, per_set: bool, derived: bool) -> (Vec<u8>, Vec<u8>) {
    let n = bases.len() as u64;
    let mut input: Vec<u8> =
        [n, c as u64, per as u64, per_set as u64, derived as u64].iter().flat_map(|x| x.to_le_bytes()).collect();
    input.extend_from_slice(bytes(bases));
    input.extend_from_slice(scalar_bytes(scalars));
    let mut child = Command::new(bin).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "msm_check failed: {}", String::from_utf8_lossy(&out.stderr));
    let m = (per as usize - 1) * bases.len() * 96;
    assert_eq!(out.stdout.len(), m + 96, "msm_check's output length");
    (out.stdout[..m].to_vec(), out.stdout[m..].to_vec())
}

/// The MSM kernels on the host equal blstrs, with and without precomputed multiples: widths
/// that do not divide 255 (and 4, 8 and 16, which do divide 256), bucket sets of one window,
/// of some and of all of them, the scatter in one pass and a pass per set, derived and stored
/// keys; scalars random with 0, 1 and -1 among them, all zero and all one; identity bases
/// among random ones. The multiples themselves equal 2^(c j) P.
#[test]
fn msm_with_shared_bucket_sets_matches_blstrs_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build("msm_check", dir.path());
    let n = 700;
    let mut bases = random_points::<G1Projective>(n, 5, 3);
    for i in [0, 17, 18, 399] {
        bases[i] = G1Affine::identity();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(35);
    let mut mixed: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    for (i, v) in mixed.iter_mut().enumerate() {
        match i % 7 {
            0 => *v = Scalar::ZERO,
            1 => *v = Scalar::ONE,
            2 => *v = -Scalar::ONE,
            3 => *v = Scalar::from(rng.gen::<u32>() as u64),
            _ => {}
        }
    }
    let zeros = vec![Scalar::ZERO; n];
    let ones = vec![Scalar::ONE; n];
    let want = |s: &[Scalar]| -> G1Affine {
        bases.iter().zip(s).map(|(p, k)| G1Projective::from(p) * k).sum::<G1Projective>().to_affine()
    };
    let (w_mixed, w_zeros, w_ones) = (want(&mixed), want(&zeros), want(&ones));
    assert!(bool::from(w_zeros.is_identity()));
    // (c, per, one set per pass, derived keys)
    let configs = [
        (4u32, 1u32, false, true),
        (5, 3, false, true),
        (7, 2, true, true),
        (7, 37, false, false),
        (8, 16, true, true),
        (11, 4, false, false),
        (13, 20, true, true),
        (13, 2, true, false),
        (16, 1, false, true),
        (16, 5, true, true),
    ];
    for (c, per, per_set, derived) in configs {
        for (what, s, w) in [("mixed", &mixed, w_mixed), ("zero", &zeros, w_zeros), ("one", &ones, w_ones)] {
            let (mults, got) = kernel_msm(&bin, &bases, s, c, per, per_set, derived);
            assert!(got == bytes(&[w]), "c {c}, per {per}, per_set {per_set}, derived {derived}, {what} scalars: the MSM differs from blstrs");
            if what != "mixed" {
                continue;
            }
            // Copy j = 2^c * copy j - 1, by doublings in blstrs.
            let mut copy: Vec<G1Projective> = bases.iter().map(G1Projective::from).collect();
            for j in 1..per as usize {
                for p in copy.iter_mut() {
                    for _ in 0..c {
                        *p = p.double();
                    }
                }
                let aff: Vec<G1Affine> = copy.iter().map(|p| p.to_affine()).collect();
                let got = &mults[(j - 1) * n * 96..j * n * 96];
                if let Some(i) = (0..n).find(|&i| got[i * 96..(i + 1) * 96] != bytes(&aff)[i * 96..(i + 1) * 96]) {
                    panic!("c {c}, per {per}: multiple {j} of base {i} differs from blstrs");
                }
            }
        }
    }
}
