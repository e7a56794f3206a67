#![allow(dead_code)]
//! Shared by the GPU test binaries: one backend per process, visible skips, fast inputs.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::GpuBackend;
use ff::Field;
use group::prime::PrimeCurveAffine;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// Written straight to stderr, past the test harness's capture, so CI logs show it.
pub fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The process's GPU backend and a guard that keeps the GPU tests of this process one at a
/// time (timings and the driver's free-memory figure stay meaningful), or None after
/// printing why the test is skipped.
pub fn gpu() -> Option<(&'static GpuBackend, MutexGuard<'static, ()>)> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let b = backend()?;
    Some((b, SERIAL.lock().unwrap_or_else(|p| p.into_inner())))
}

fn backend() -> Option<&'static GpuBackend> {
    static GPU: OnceLock<Option<GpuBackend>> = OnceLock::new();
    GPU.get_or_init(|| {
        cuzk_gpu::backend_or_skip("GPU test", GpuBackend::new()).inspect(|b| {
            let d = b.device();
            say(&format!(
                "GPU {}: {} ({} SMs, {:.1} GiB, sm_{}{}), arena budget {:.1} GiB",
                d.ordinal,
                d.name,
                d.sm_count,
                d.total_memory as f64 / (1u64 << 30) as f64,
                d.compute_capability.0,
                d.compute_capability.1,
                b.arena_counters().budget as f64 / (1u64 << 30) as f64
            ))
        })
    })
    .as_ref()
}

pub fn rng(seed: u64) -> ChaCha20Rng {
    // Fresh inputs each run, reproducible from the printed seed.
    let base = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    ChaCha20Rng::seed_from_u64(base ^ seed.wrapping_mul(0x9e3779b97f4a7c15))
}

pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 14)
        .flat_map_iter(|idx| {
            let mut r = rng(seed ^ (idx[0] as u64) << 20);
            idx.into_iter()
                .map(move |_| Scalar::random(&mut r))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Distinct random G1 points (cuzk_groth16::shape's generator).
pub fn random_bases(n: usize, seed: u64) -> Vec<G1Affine> {
    cuzk_groth16::shape::random_points::<G1Projective>(n, rng(seed).gen(), 0)
}

/// As [`random_bases`] over G2.
pub fn random_bases_g2(n: usize, seed: u64) -> Vec<G2Affine> {
    cuzk_groth16::shape::random_points::<G2Projective>(n, rng(seed).gen(), 0)
}

/// PoRep-like scalars: 40% zero, 30% one, the rest random.
pub fn porep_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut r = rng(seed);
    let random = random_scalars(n, seed + 1);
    random
        .into_iter()
        .map(|s| match r.gen_range(0..10) {
            0..=3 => Scalar::ZERO,
            4..=6 => Scalar::ONE,
            _ => s,
        })
        .collect()
}

pub fn with_identities(mut bases: Vec<G1Affine>, every: usize) -> Vec<G1Affine> {
    for b in bases.iter_mut().step_by(every) {
        *b = G1Affine::identity();
    }
    bases
}

pub fn ms(t: std::time::Duration) -> f64 {
    t.as_secs_f64() * 1e3
}
