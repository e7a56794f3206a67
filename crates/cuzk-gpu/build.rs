//! Compiles `kernels/` with nvcc into one fatbin (SASS for the architectures users run, plus
//! PTX for newer ones) at `$OUT_DIR/cuzk.fatbin`, which `src/kernels.rs` embeds.
//!
//! nvcc is taken from `NVCC`, else from `PATH`. Without nvcc the fatbin is empty, the crate
//! still builds, and the backend answers "built without GPU kernels" at run time. A kernel
//! that does not compile fails the build.
//!
//! `CUZK_GPU_ARCHS` (e.g. `90` or `80,90`) narrows the SASS targets for quicker development
//! builds; release builds use the full list (about 7 minutes of one core). `none` builds no
//! kernels, as if there were no nvcc.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const ARCHS: &[&str] = &["80", "86", "89", "90", "100", "120"];
/// Virtual architecture shipped as PTX, JIT-compiled by the driver on GPUs newer than the list.
const PTX_ARCH: &str = "90";

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("cuzk.fatbin");
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    println!("cargo:rerun-if-changed={}", kernels.display());
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUZK_GPU_ARCHS");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=NUM_JOBS");
    if let Ok(entries) = std::fs::read_dir(&kernels) {
        for e in entries.flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }

    // `CUZK_GPU_ARCHS=none`: no kernels, as without nvcc (CI's check of the peers'
    // workspace, whose cuzk-gpu kernels the main build has compiled already).
    if env::var("CUZK_GPU_ARCHS").is_ok_and(|a| a.trim() == "none") {
        std::fs::write(&out, []).unwrap();
        return;
    }
    let nvcc = env::var("NVCC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "nvcc".into());
    if Command::new(&nvcc)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        println!(
            "cargo:warning=cuzk-gpu: nvcc not found ({nvcc}); building without GPU kernels \
             (set NVCC or put nvcc on PATH)"
        );
        std::fs::write(&out, []).unwrap();
        return;
    }

    let archs: Vec<String> = match env::var("CUZK_GPU_ARCHS") {
        Ok(list) if !list.trim().is_empty() => {
            list.split(',').map(|s| s.trim().to_string()).collect()
        }
        _ => ARCHS.iter().map(|s| s.to_string()).collect(),
    };
    let mut cmd = Command::new(&nvcc);
    // Size-mode compression makes the fatbin about 3x smaller (the driver unpacks it at load;
    // CUDA 13 binaries need a 580+ driver anyway). Architectures compile in parallel on the
    // jobs cargo gives this build script.
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "1".into());
    cmd.args([
        "-fatbin",
        "-std=c++17",
        "-O3",
        "--compress-mode=size",
        "--threads",
        &jobs,
    ]);
    for a in &archs {
        cmd.arg(format!("-gencode=arch=compute_{a},code=sm_{a}"));
    }
    cmd.arg(format!(
        "-gencode=arch=compute_{PTX_ARCH},code=compute_{PTX_ARCH}"
    ));
    cmd.arg(kernels.join("cuzk.cu")).arg("-o").arg(&out);
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {nvcc}: {e}"));
    assert!(
        status.success(),
        "nvcc failed to compile kernels/ ({cmd:?})"
    );
}
