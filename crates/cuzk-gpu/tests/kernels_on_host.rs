//! The batch-affine kernels (kernels/msm_affine.cuh) built for the host with the system's C++
//! compiler (`CUZK_HOST_BUILD`, kernels/host/README.md) and run against sequential sums, so
//! that their logic is checked on every change, on machines without a GPU too. The GPU test
//! `gpu_equivalence::batch_affine_levels_match_cpu` checks the same kernels on the device.

use std::path::Path;
use std::process::Command;

#[test]
fn batch_affine_kernels_match_sequential_sums_on_the_host() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("batch_affine_check");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let built = Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-DCUZK_HOST_BUILD", "-I"])
        .arg(&kernels)
        .arg(kernels.join("host/batch_affine_check.cpp"))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap_or_else(|e| panic!("{cxx} (set CXX to another C++17 compiler): {e}"));
    assert!(built.status.success(), "{cxx} failed:\n{}", String::from_utf8_lossy(&built.stderr));
    let run = Command::new(&bin).output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the kernels' sums differ from sequential ones:\n{out}");
    assert_eq!(out.matches(": 0 of 48 buckets differ").count(), 6, "{out}");
}
