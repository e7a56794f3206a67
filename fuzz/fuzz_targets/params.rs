//! The `.params` reader of cuzk-groth16: `Srs::shape` (header and section lengths) and
//! `Srs::load` (every point decoded) on the input written as a file (one path, rewritten per
//! input, on tmpfs).
//!
//! Checked: no panic; the two agree: a file whose shape is refused is not loaded, and a
//! loaded file has the shape `shape` read.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk_groth16::Srs;
use libfuzzer_sys::fuzz_target;

fn path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| cuzk_fuzz::scratch_dir("params").join("fuzz.params"))
}

fuzz_target!(|data: &[u8]| {
    let path = path();
    std::fs::write(path, data).expect("writing the input file");
    let shape = Srs::shape(path);
    match Srs::load(path) {
        Ok(srs) => {
            let shape = shape.expect("loaded, but shape refused the same file");
            assert_eq!(srs.shape_of(), shape, "load and shape disagree");
        }
        Err(e) => {
            // Every refusal names the file.
            assert!(e.to_string().contains("fuzz.params"), "{e}");
        }
    }
});
