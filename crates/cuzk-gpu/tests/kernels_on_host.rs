//! Kernels built for the host with the system's C++ compiler (`CUZK_HOST_BUILD`,
//! kernels/host/README.md) and run against host references, so that their logic is checked on
//! every change, on machines without a GPU too:
//! - the batch-affine kernels (kernels/msm_affine.cuh) against sequential sums (the GPU test
//!   `gpu_equivalence::batch_affine_levels_match_cpu` checks them on the device);
//! - the random parameter points (kernels/random.cuh) against
//!   `cuzk_groth16::shape::random_points` (on the device:
//!   `gpu_equivalence::random_points_on_the_device_equal_the_hosts`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use blstrs::{G1Projective, G2Projective};
use cuzk_groth16::points::{point_bytes as bytes, PlainPoint};
use cuzk_groth16::shape::{random_points, run_seeds, RUN_LOG};

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
