//! Compiles cuda/peers.cu (our wrapper over sppark's MSM and NTT headers) with nvcc for sm_90
//! (the H200) only, and links the CUDA runtime statically.
//!
//! nvcc: `NVCC`, else `nvcc` on PATH. Headers: sppark's root (DEP_SPPARK_ROOT, from the sppark
//! crate this package depends on) and blst's C sources (DEP_BLST_C_SRC, for sppark's host
//! field type). The static runtime, libcudart_static.a, is looked for in `CUDA_LIB_DIR`, else
//! beside nvcc in ../lib, ../lib64 and ../targets/x86_64-linux/lib.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=cuda/peers.cu");
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_LIB_DIR");

    let nvcc = env::var("NVCC").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "nvcc".into());
    let sppark = env::var("DEP_SPPARK_ROOT").expect("DEP_SPPARK_ROOT: sppark must be a dependency");
    let blst = env::var("DEP_BLST_C_SRC").expect("DEP_BLST_C_SRC: blst must be a dependency");

    // cc takes nvcc from NVCC (setting it with .compiler() would lose cc's nvcc mode).
    let mut b = cc::Build::new();
    b.cuda(true)
        .cudart("static")
        .include(&sppark)
        .include(&blst)
        .define("FEATURE_BLS12_381", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        .flag("-gencode")
        .flag("arch=compute_90,code=sm_90")
        .flag("-std=c++17")
        .flag("-Xcompiler")
        .flag("-Wno-unused-function")
        .warnings(false)
        .file("cuda/peers.cu");
    // sppark's host field code calls blst's assembly, which the blst crate builds with ADX
    // instructions (and their function names) when the build machine has them: match it.
    #[cfg(target_arch = "x86_64")]
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") && std::is_x86_feature_detected!("adx") {
        b.define("__ADX__", None);
    }
    b.compile("cuzk_peers_cuda");

    // cc names cudart_static but finds its directory only in a toolkit's layout; the pip
    // wheels keep it in ../lib.
    let dir = match env::var("CUDA_LIB_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let nvcc_path = which(&nvcc).unwrap_or_else(|| PathBuf::from(&nvcc));
            let root = nvcc_path.parent().and_then(|p| p.parent()).map(PathBuf::from).unwrap_or_default();
            ["lib", "lib64", "targets/x86_64-linux/lib"]
                .iter()
                .map(|s| root.join(s))
                .find(|d| d.join("libcudart_static.a").exists())
                .unwrap_or_else(|| panic!("libcudart_static.a not found under {} (set CUDA_LIB_DIR)", root.display()))
        }
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    // What libcudart_static.a needs from the system.
    for lib in ["dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib={lib}");
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(name);
    if p.components().count() > 1 {
        return Some(p);
    }
    env::var_os("PATH").and_then(|paths| env::split_paths(&paths).map(|d| d.join(name)).find(|f| f.is_file()))
}
