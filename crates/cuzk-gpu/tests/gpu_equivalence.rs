//! The GPU backend against the CPU backend (the reference) on fresh random inputs: every
//! result must be exactly equal. Without a GPU (or driver, or kernels) each test prints
//! `SKIPPED: ...` and passes (with `CUZK_REQUIRE_GPU=1`, set by device-run.sh, it fails);
//! with one, a wrong result fails.
//!
//! Inputs are fresh each run; set CUZK_TEST_SEED to replay one.

mod common;

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine, Scalar};
use common::*;
use cuzk_gpu::{GpuBackend, GpuTuning, HStep, NttPasses, VramBudget};
use cuzk_groth16::{Backend, BackendError, CpuBackend, NttDirection, Selection};
use ff::Field;
use group::prime::PrimeCurveAffine;

const DIRECTIONS: [NttDirection; 4] = [
    NttDirection::Forward,
    NttDirection::Inverse,
    NttDirection::CosetForward,
    NttDirection::CosetInverse,
];

fn max_log_ntt() -> u32 {
    std::env::var("CUZK_TEST_MAX_LOG_NTT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
}

fn max_log_msm() -> u32 {
    std::env::var("CUZK_TEST_MAX_LOG_MSM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(22)
}

/// After a call the arena holds only the resident base arrays (the baseline).
fn assert_arena_empty(gpu: &GpuBackend) {
    let c = gpu.arena_counters();
    let (bytes, arrays) = gpu.resident();
    assert_eq!(
        (c.in_use, c.buffers),
        (bytes, arrays),
        "arena not back at baseline: {c:?}, resident {bytes} bytes in {arrays} arrays"
    );
}

#[test]
fn ntt_all_directions_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    for log_n in 1..=max_log_ntt() {
        let n = 1usize << log_n;
        let input = random_scalars(n, log_n as u64);
        for dir in DIRECTIONS {
            let mut want = input.clone();
            let t = Instant::now();
            CpuBackend.ntt(&mut want, dir).unwrap();
            let cpu = t.elapsed();
            let mut got = input.clone();
            let t = Instant::now();
            gpu.ntt(&mut got, dir).unwrap();
            let gpu_t = t.elapsed();
            assert!(
                got == want,
                "NTT {dir:?} 2^{log_n} differs from the CPU backend"
            );
            if log_n >= 16 {
                say(&format!(
                    "ntt {dir:?} 2^{log_n}: gpu {:.2} ms, cpu {:.2} ms",
                    ms(gpu_t),
                    ms(cpu)
                ));
            }
        }
        assert_arena_empty(gpu);
    }
    say(&format!(
        "ntt: 4 directions x 2^1..2^{} equal to the CPU backend",
        max_log_ntt()
    ));
    let mut one = vec![Scalar::from(5u64)];
    gpu.ntt(&mut one, NttDirection::CosetInverse).unwrap();
    assert_eq!(one, vec![Scalar::from(5u64)]);
    assert!(matches!(
        gpu.ntt(&mut [Scalar::ONE; 3], NttDirection::Forward),
        Err(BackendError::BadNttSize(3))
    ));
}

/// Every NTT kernel variant of the tuning (radix passes of 1 to 4 stages, fused passes
/// uncapped) equals the CPU backend, the H step's transforms included; the default
/// (capped fused passes) is `ntt_all_directions_match_cpu`'s.
#[test]
fn ntt_pass_variants_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let top = max_log_ntt().min(20);
    let variants = [
        variant(|t| t.ntt_passes = NttPasses::Fused),
        variant(|t| (t.ntt_passes, t.ntt_max_log_radix) = (NttPasses::Radix, 1)),
        variant(|t| (t.ntt_passes, t.ntt_max_log_radix) = (NttPasses::Radix, 2)),
        variant(|t| (t.ntt_passes, t.ntt_max_log_radix) = (NttPasses::Radix, 3)),
        variant(|t| (t.ntt_passes, t.ntt_max_log_radix) = (NttPasses::Radix, 4)),
    ];
    let len = (1usize << 12) - 5;
    let (a, b, c) = h_inputs(len, 300);
    let bases = random_bases(1 << 12, 301);
    let hb = &bases[..(1 << 12) - 1];
    let (h_want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
    for v in variants {
        gpu.retune(v.clone());
        let mut failed = None;
        for log_n in [1, 2, 5, 10, 11, top] {
            let input = random_scalars(1 << log_n, 310 + log_n as u64);
            for dir in DIRECTIONS {
                let (mut want, mut got) = (input.clone(), input.clone());
                CpuBackend.ntt(&mut want, dir).unwrap();
                gpu.ntt(&mut got, dir).unwrap();
                if got != want && failed.is_none() {
                    failed = Some(format!("NTT {dir:?} 2^{log_n}"));
                }
            }
        }
        let h_got = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb);
        gpu.retune(GpuTuning::default());
        assert_eq!(failed, None, "{v:?} differs from the CPU backend");
        assert_eq!(h_got.unwrap().0, h_want, "H step under {v:?}");
        assert_arena_empty(gpu);
    }
    say(&format!("ntt pass variants (fused uncapped, radix 2 to 16): 4 directions to 2^{top} and the H step equal to the CPU backend"));
}

#[test]
fn coset_quotient_matches_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    for log_n in [0u32, 1, 2, 5, 10, 16, 20] {
        let n = 1usize << log_n;
        let (a, b, c) = (
            random_scalars(n, 1),
            random_scalars(n, 2),
            random_scalars(n, 3),
        );
        let mut want = a.clone();
        CpuBackend.coset_quotient(&mut want, &b, &c).unwrap();
        let mut got = a.clone();
        gpu.coset_quotient(&mut got, &b, &c).unwrap();
        assert!(got == want, "coset quotient 2^{log_n} differs");
    }
    assert_arena_empty(gpu);
    say("coset_quotient: equal to the CPU backend");
}

/// Fr products on edge-case operands, through the quotient kernel: with c = 0 it computes
/// a * b * z_inv pointwise, so every pair of the edge set (and random partners) goes through
/// the device Montgomery product. The set holds values whose canonical form is extreme (0, 1,
/// p - 1, (p +- 1) / 2, powers of two up to 2^255 mod p, R mod p, R^2 mod p) and values whose
/// stored Montgomery limbs are extreme (v / R for the same v: limbs 1, p - 1, 2^255 - ...).
#[test]
fn fr_product_edge_cases_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let two = Scalar::from(2u64);
    let r_mod_p = two.pow_vartime([256u64]);
    let r_inv = r_mod_p.invert().unwrap();
    let mut canon = vec![
        Scalar::ZERO,
        Scalar::ONE,
        two,
        Scalar::from(3u64),
        -Scalar::ONE,
        -two,
        two.invert().unwrap(),
        -two.invert().unwrap(),
        Scalar::from(u32::MAX as u64),
        Scalar::from(u64::MAX),
        -Scalar::from(1u64 << 32),
        r_mod_p,
        r_mod_p.square(),
        r_inv,
    ];
    for k in [31u64, 63, 64, 128, 192, 224, 253, 254, 255] {
        canon.push(two.pow_vartime([k]));
        canon.push(two.pow_vartime([k]) - Scalar::ONE);
    }
    let mut edge: Vec<Scalar> = canon.clone();
    edge.extend(canon.iter().map(|v| v * r_inv)); // stored limbs = v
    edge.extend(random_scalars(16, 7));
    let m = edge.len();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for x in &edge {
        for y in &edge {
            a.push(*x);
            b.push(*y);
        }
    }
    let n = (m * m).next_power_of_two();
    a.extend(random_scalars(n - m * m, 8));
    b.extend(random_scalars(n - m * m, 9));
    let c = vec![Scalar::ZERO; n];
    let mut want = a.clone();
    CpuBackend.coset_quotient(&mut want, &b, &c).unwrap();
    let mut got = a.clone();
    gpu.coset_quotient(&mut got, &b, &c).unwrap();
    let bad = (0..n).filter(|&i| got[i] != want[i]).count();
    assert!(bad == 0, "{bad} of {n} edge-case Fr products differ");
    assert_arena_empty(gpu);
    say(&format!(
        "fr products: {n} edge-case pairs equal to the CPU backend"
    ));
}

fn check_msm(gpu: &GpuBackend, label: &str, bases: &[G1Affine], scalars: &[Scalar]) {
    let t = Instant::now();
    let want = CpuBackend.msm_g1(bases, Selection::All, scalars).unwrap();
    let cpu = t.elapsed();
    let t = Instant::now();
    let got = gpu.msm_g1(bases, Selection::All, scalars).unwrap();
    let gpu_t = t.elapsed();
    assert_eq!(
        got,
        want,
        "MSM {label}, n = {} differs from the CPU backend",
        scalars.len()
    );
    assert_arena_empty(gpu);
    if scalars.len() >= 1 << 16 {
        say(&format!(
            "msm {label} n = {}: gpu {:.1} ms, cpu {:.1} ms",
            scalars.len(),
            ms(gpu_t),
            ms(cpu)
        ));
    }
}

#[test]
fn msm_g1_random_scalars_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let mut sizes = vec![1usize, 2, 3, 1000];
    sizes.extend((10..=max_log_msm()).map(|k| 1usize << k));
    let bases = random_bases(*sizes.last().unwrap(), 11);
    for &n in &sizes {
        check_msm(gpu, "random", &bases[..n], &random_scalars(n, n as u64));
    }
    // a size that is not a power of two, above the small ones
    let n = 100_003.min(bases.len());
    check_msm(gpu, "random", &bases[..n], &random_scalars(n, 7));
    say(&format!(
        "msm random: n = 1, 2, 3, 1000, 2^10..2^{} equal to the CPU backend",
        max_log_msm()
    ));
}

#[test]
fn msm_g1_special_scalars_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let top = 1usize << max_log_msm().min(20);
    let bases = random_bases(top, 12);
    let mut sizes = vec![1usize, 2, 3, 1000, 1 << 10, 1 << 16, top];
    sizes.dedup();
    for &n in &sizes {
        let b = &bases[..n];
        check_msm(gpu, "all-zero", b, &vec![Scalar::ZERO; n]);
        check_msm(gpu, "all-one", b, &vec![Scalar::ONE; n]);
        check_msm(gpu, "porep-like", b, &porep_scalars(n, n as u64));
        check_msm(gpu, "minus-one", b, &vec![-Scalar::ONE; n]);
        let with_id = with_identities(b.to_vec(), 7);
        check_msm(
            gpu,
            "identity-bases random",
            &with_id,
            &random_scalars(n, 5),
        );
        check_msm(
            gpu,
            "identity-bases porep-like",
            &with_id,
            &porep_scalars(n, 6),
        );
    }
    // The same base everywhere: bucket sums add a point to itself (the doubling path).
    let same = vec![bases[0]; 5000];
    check_msm(gpu, "same-base random", &same, &random_scalars(5000, 8));
    check_msm(
        gpu,
        "same-base small",
        &same,
        &(0..5000u64)
            .map(|i| Scalar::from(i % 5))
            .collect::<Vec<_>>(),
    );
    // Selection by indices (reversed, with repeats) against the CPU backend.
    let idx: Vec<u32> = (0..4000u32).rev().map(|i| i * 7 % 3000).collect();
    let s = porep_scalars(idx.len(), 9);
    let want = CpuBackend
        .msm_g1(&bases, Selection::Indices(&idx), &s)
        .unwrap();
    assert_eq!(
        gpu.msm_g1(&bases, Selection::Indices(&idx), &s).unwrap(),
        want,
        "msm with indices"
    );
    assert!(matches!(
        gpu.msm_g1(
            &bases[..2],
            Selection::Indices(&[0, 5]),
            &[Scalar::ONE, Scalar::ONE]
        ),
        Err(BackendError::IndexOutOfRange { index: 5, bases: 2 })
    ));
    assert_arena_empty(gpu);
    say("msm special scalars (zero, one, -1, porep-like, identity bases, repeated base, indices): equal to the CPU backend");
}

#[test]
fn sum_g1_matches_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let top = 1usize << max_log_msm().min(20);
    let bases = with_identities(random_bases(top, 13), 11);
    for n in [0usize, 1, 2, 3, 1000, 1 << 16, top] {
        let b = &bases[..n];
        assert_eq!(
            gpu.sum_g1(b, Selection::All).unwrap(),
            CpuBackend.sum_g1(b, Selection::All).unwrap(),
            "sum n = {n}"
        );
    }
    let idx: Vec<u32> = (0..top as u32).step_by(3).rev().collect();
    assert_eq!(
        gpu.sum_g1(&bases, Selection::Indices(&idx)).unwrap(),
        CpuBackend.sum_g1(&bases, Selection::Indices(&idx)).unwrap(),
        "sum with indices"
    );
    let same = vec![bases[1]; 3000];
    assert_eq!(
        gpu.sum_g1(&same, Selection::All).unwrap(),
        CpuBackend.sum_g1(&same, Selection::All).unwrap()
    );
    let id = vec![G1Affine::identity(); 100];
    assert_eq!(
        gpu.sum_g1(&id, Selection::All).unwrap(),
        CpuBackend.sum_g1(&id, Selection::All).unwrap()
    );
    assert_arena_empty(gpu);
    say("sum_g1: equal to the CPU backend");
}

#[test]
fn over_budget_is_an_error_and_leaves_the_arena_empty() {
    let Some((_, _serial)) = gpu() else { return };
    let small =
        GpuBackend::open(0, VramBudget::Bytes(1 << 20)).expect("second handle on the device");
    let n = 1 << 16;
    let bases = random_bases(n, 14);
    let err = small
        .msm_g1(&bases, Selection::All, &random_scalars(n, 15))
        .unwrap_err();
    assert!(
        err.to_string().contains("VRAM budget"),
        "unexpected error: {err}"
    );
    let c = small.arena_counters();
    assert_eq!((c.in_use, c.buffers), (0, 0), "{c:?}");
    assert!(c.high_water <= c.budget);
    // and it still works for what fits
    let mut v = random_scalars(1024, 16);
    let mut w = v.clone();
    small.ntt(&mut v, NttDirection::Forward).unwrap();
    CpuBackend.ntt(&mut w, NttDirection::Forward).unwrap();
    assert_eq!(v, w);
    say(&format!(
        "over-budget: refused cleanly ({err}); arena {:?}",
        small.arena_counters()
    ));
}

#[test]
fn driver_free_memory_returns_to_its_start() {
    let Some((gpu, _serial)) = gpu() else { return };
    gpu.release_caches().unwrap();
    let (free0, _) = gpu.mem_info().unwrap();
    let n = 1 << 16;
    let bases = random_bases(n, 20);
    for round in 0..10 {
        let mut v = random_scalars(n, round);
        gpu.ntt(&mut v, NttDirection::CosetForward).unwrap();
        gpu.msm_g1(&bases, Selection::All, &porep_scalars(n, round))
            .unwrap();
        gpu.sum_g1(&bases, Selection::All).unwrap();
        // a bad request in between fails alone
        assert!(gpu.msm_g1(&bases, Selection::All, &v[..10]).is_err());
    }
    assert_arena_empty(gpu);
    assert!(
        gpu.resident().1 > 0,
        "2^16 bases should have stayed resident"
    );
    gpu.release_caches().unwrap();
    let (free1, _) = gpu.mem_info().unwrap();
    let c = gpu.arena_counters();
    assert_eq!((c.in_use, c.buffers), (0, 0), "{c:?}");
    let drift = free0.abs_diff(free1);
    assert!(
        drift <= 1 << 20,
        "driver free memory moved by {drift} bytes ({free0} -> {free1})"
    );
    say(&format!(
        "memory: 40 calls + 10 refused; driver free memory {free0} -> {free1} bytes, arena {:?}",
        gpu.arena_counters()
    ));
}

fn check_msm_g2(gpu: &GpuBackend, label: &str, bases: &[G2Affine], scalars: &[Scalar]) {
    let want = CpuBackend.msm_g2(bases, Selection::All, scalars).unwrap();
    let got = gpu.msm_g2(bases, Selection::All, scalars).unwrap();
    assert_eq!(
        got,
        want,
        "G2 MSM {label}, n = {} differs from the CPU backend",
        scalars.len()
    );
    assert_arena_empty(gpu);
}

#[test]
fn msm_g2_and_sum_g2_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let top = 1usize << 16;
    let bases = random_bases_g2(top, 31);
    for n in [1usize, 2, 3, 1000, 1 << 12, top] {
        let b = &bases[..n];
        check_msm_g2(gpu, "random", b, &random_scalars(n, 32 + n as u64));
        check_msm_g2(gpu, "porep-like", b, &porep_scalars(n, 33));
        check_msm_g2(gpu, "all-one", b, &vec![Scalar::ONE; n]);
        check_msm_g2(gpu, "minus-one", b, &vec![-Scalar::ONE; n]);
        assert_eq!(
            gpu.sum_g2(b, Selection::All).unwrap(),
            CpuBackend.sum_g2(b, Selection::All).unwrap(),
            "G2 sum n = {n}"
        );
    }
    let mut with_id = bases[..5000].to_vec();
    for b in with_id.iter_mut().step_by(5) {
        *b = G2Affine::identity();
    }
    check_msm_g2(gpu, "identity-bases", &with_id, &random_scalars(5000, 34));
    let idx: Vec<u32> = (0..30000u32).rev().map(|i| i * 13 % top as u32).collect();
    let s = porep_scalars(idx.len(), 35);
    assert_eq!(
        gpu.msm_g2(&bases, Selection::Indices(&idx), &s).unwrap(),
        CpuBackend
            .msm_g2(&bases, Selection::Indices(&idx), &s)
            .unwrap(),
        "G2 msm with indices"
    );
    assert_eq!(
        gpu.sum_g2(&bases, Selection::Indices(&idx)).unwrap(),
        CpuBackend.sum_g2(&bases, Selection::Indices(&idx)).unwrap(),
        "G2 sum with indices"
    );
    assert_arena_empty(gpu);
    say("msm_g2 / sum_g2 (random, porep-like, one, -1, identity bases, indices; n = 1..2^16): equal to the CPU backend");
}

/// With a budget that cannot hold a whole MSM, the plan cuts it into chunks (and resident
/// bases are refused or evicted), and the result is still equal to the CPU backend's.
#[test]
fn chunked_msm_under_a_small_budget_matches_cpu() {
    let Some((_, _serial)) = gpu() else { return };
    let small = GpuBackend::open(0, VramBudget::Bytes(96 << 20)).expect("second handle");
    let n = 1 << 20;
    let plan = small.plan_msm_g1(n).unwrap();
    assert!(plan.chunks > 1, "{plan:?}");
    let bases = random_bases(n, 40);
    for (label, scalars) in [
        ("random", random_scalars(n, 41)),
        ("porep-like", porep_scalars(n, 42)),
    ] {
        let want = CpuBackend.msm_g1(&bases, Selection::All, &scalars).unwrap();
        assert_eq!(
            small.msm_g1(&bases, Selection::All, &scalars).unwrap(),
            want,
            "chunked {label}"
        );
    }
    let idx: Vec<u32> = (0..n as u32).step_by(2).collect();
    let s = porep_scalars(idx.len(), 43);
    assert_eq!(
        small.msm_g1(&bases, Selection::Indices(&idx), &s).unwrap(),
        CpuBackend
            .msm_g1(&bases, Selection::Indices(&idx), &s)
            .unwrap(),
        "chunked with indices"
    );
    let c = small.arena_counters();
    let (bytes, arrays) = small.resident();
    assert_eq!((c.in_use, c.buffers), (bytes, arrays), "{c:?}");
    assert!(c.high_water <= c.budget);
    say(&format!(
        "chunked MSM 2^20 in a 96 MiB arena: {} chunks of {} points, equal to the CPU backend; high water {} MiB",
        plan.chunks,
        plan.chunk,
        c.high_water >> 20
    ));
}

/// Bases used twice stay resident: the second call uploads only scalars and is equal too.
#[test]
fn resident_bases_are_reused_and_equal() {
    let Some((gpu, _serial)) = gpu() else { return };
    let n = 1 << 18;
    let bases = random_bases(n, 50);
    let s1 = porep_scalars(n, 51);
    let s2 = random_scalars(n, 52);
    let want1 = CpuBackend.msm_g1(&bases, Selection::All, &s1).unwrap();
    let want2 = CpuBackend.msm_g1(&bases, Selection::All, &s2).unwrap();
    let t = Instant::now();
    assert_eq!(gpu.msm_g1(&bases, Selection::All, &s1).unwrap(), want1);
    let first = t.elapsed();
    let resident = gpu.resident();
    assert!(resident.1 > 0, "bases not resident");
    let t = Instant::now();
    assert_eq!(gpu.msm_g1(&bases, Selection::All, &s2).unwrap(), want2);
    let second = t.elapsed();
    assert_eq!(gpu.resident(), resident, "second call added an array");
    // A different array of the same length is a different key.
    let other = random_bases(n, 53);
    assert_eq!(
        gpu.msm_g1(&other, Selection::All, &s1).unwrap(),
        CpuBackend.msm_g1(&other, Selection::All, &s1).unwrap()
    );
    assert_arena_empty(gpu);
    say(&format!(
        "resident bases 2^18: first call {:.1} ms (upload), second {:.1} ms, {} arrays resident ({} MiB)",
        ms(first),
        ms(second),
        gpu.resident().1,
        gpu.resident().0 >> 20
    ));
}

/// Parameters spilled to a file and their host copy released once the GPU holds them all
/// (the daemon's `[srs] host_release_dir`): proofs stay equal to the CPU backend's, before
/// the release, after it (nothing uploaded again), and after an eviction (the sections come
/// back from the file and go up again).
#[test]
fn released_host_parameters_prove_the_same() {
    use cuzk_groth16::shape::{random_srs, shape_witness, PartitionShape, ScalarMix, WitnessMix};
    let Some((gpu, _serial)) = gpu() else { return };
    let shape = PartitionShape::porep_scaled(18);
    let mix = WitnessMix {
        a: ScalarMix { zero: 0.4, one: 0.45 },
        b: ScalarMix { zero: 0.5, one: 0.4 },
        c: ScalarMix { zero: 0.6, one: 0.2 },
        aux: ScalarMix { zero: 0.4, one: 0.45 },
    };
    let w = shape_witness(&shape, &mix, 61);
    let mut srs = random_srs(&cuzk_groth16::prover::required_shape(&w), 62);
    srs.spill_to(&std::env::temp_dir()).unwrap();
    let (r, s) = (Scalar::from(3u64), Scalar::from(4u64));
    let want = cuzk_groth16::prove(&CpuBackend, &srs, w.clone(), r, s).unwrap().0;
    gpu.release_caches().unwrap();
    assert!(!gpu.holds_params(&srs), "nothing resident yet");
    assert_eq!(cuzk_groth16::prove(gpu, &srs, w.clone(), r, s).unwrap().0, want);
    assert!(gpu.holds_params(&srs), "every section resident after a proof");
    let bytes = srs.release_if_held(gpu).expect("the host copy goes once the GPU holds it");
    assert!(srs.host_released() && bytes >= srs.shape_of().point_bytes() / 2);
    let resident = gpu.resident();
    assert_eq!(cuzk_groth16::prove(gpu, &srs, w.clone(), r, s).unwrap().0, want, "after the release");
    assert_eq!(gpu.resident(), resident, "nothing uploaded again");
    gpu.release_caches().unwrap();
    assert!(!gpu.holds_params(&srs));
    assert_eq!(cuzk_groth16::prove(gpu, &srs, w, r, s).unwrap().0, want, "re-uploaded from the file");
    assert!(gpu.holds_params(&srs));
    gpu.release_caches().unwrap();
    assert_arena_empty(gpu);
    say(&format!("released host parameters: {} MiB given back, proofs equal before and after", bytes >> 20));
}

/// The H step and its MSM with a, b, c and h kept on the device equal the CPU backend's,
/// at witness lengths that are and are not powers of two (zero-padded to the domain on
/// the device), from 2^10 to 2^22; the lean path (a budget that cannot hold a, b and c
/// at once) and the host path (switched to) equal it too.
#[test]
fn h_step_on_device_matches_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let top = max_log_msm().min(22);
    let mut lens = vec![(1usize << 10) - 3, 1 << 10, 1000 * 5, (1 << 16) + 1];
    lens.extend([(1usize << 20) - 7, (1 << top) - 330]);
    lens.retain(|&l| l <= 1 << top);
    let bases = random_bases(1 << top, 60);
    for (k, &len) in lens.iter().enumerate() {
        let n = len.next_power_of_two();
        let (a, b) = (random_scalars(len, 61 + k as u64), random_scalars(len, 71 + k as u64));
        // c = a * b except at a few places, so that h is not a polynomial quotient only.
        let mut c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        for i in (0..len).step_by(97) {
            c[i] += Scalar::ONE;
        }
        let hb = &bases[..n - 1];
        let (want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
        let (got, _) = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
        assert_eq!(gpu.last_report().h_step, HStep::Device, "len {len}: the budget holds it");
        assert_eq!(got, want, "h step on the device, len {len} (domain {n}), differs from the CPU backend");
        assert_eq!(gpu.last_report().h_split.step.pin, Duration::ZERO, "len {len}: staged by default");
        assert_arena_empty(gpu);
        // Page-locked in place (GpuTuning::pin_host): a, b and c of 64 MiB and more move by DMA
        // straight from host memory; smaller ones still go through the staging buffers.
        let pins = len * 32 >= 64 << 20;
        gpu.retune(variant(|t| t.pin_host = true));
        let pinned = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb);
        let pin = gpu.last_report().h_split.step.pin;
        gpu.retune(GpuTuning::default());
        assert_eq!(pinned.unwrap().0, want, "device path pinned in place, len {len}");
        assert_eq!(pin > Duration::ZERO, pins, "len {len}: pinned in place");
        assert_arena_empty(gpu);
        if k == 2 {
            gpu.retune(variant(|t| t.device_h = false));
            let (host, _) = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
            gpu.retune(GpuTuning::default());
            assert_eq!(gpu.last_report().h_step, HStep::Host);
            assert_eq!(host, want, "host path, len {len}");
        }
        if len == (1 << 20) - 7 || pins {
            // A budget that holds one NTT but not a, b, c and h at once: the lean path,
            // pinned in place at the top length, and through the staging buffers.
            let small = GpuBackend::open(0, VramBudget::Bytes(3 * n * 32)).expect("second handle");
            assert!(!small.plan_footprint(&cuzk_groth16::SrsShape { ic: 1, h: n - 1, l: 0, a: 0, b_g1: 0, b_g2: 0 }).h_on_device);
            for pin in if pins { vec![false, true] } else { vec![false] } {
                small.retune(variant(|t| t.pin_host = pin));
                let (chunked, _) = small.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
                assert_eq!(small.last_report().h_step, HStep::Lean, "3n elements cannot hold the device path's 4n");
                assert_eq!(small.last_report().h_split.step.pin > Duration::ZERO, pin && pins, "len {len}: lean path pinned");
                assert_eq!(chunked, want, "lean path under a small budget, len {len}, pinned {pin}");
                assert_eq!(small.arena_counters().in_use, 0);
            }
        }
    }
    // Mismatched lengths are refused, not run.
    let err = gpu.h_msm(vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], vec![Scalar::ONE; 7], &bases[..7]);
    assert!(matches!(err, Err(BackendError::LengthMismatch { .. })), "{err:?}");
    let err = gpu.h_msm(vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], &bases[..8]);
    assert!(matches!(err, Err(BackendError::LengthMismatch { .. })), "{err:?}");
    say(&format!(
        "h step on the device: {} lengths equal to the CPU backend, lean and host paths too; those of 64 MiB and more pinned in place and staged",
        lens.len()
    ));
}

/// Windows wider than the 16 bits a chunk of 2^22 takes, up to the 22 bits of the H MSM at
/// 2^27 (one pass over the H step's device scalars), equal the CPU backend: from host
/// scalars and from the device, at a length that is not a power of two.
#[test]
fn wide_windows_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let n = 1usize << 16;
    let bases = random_bases(n, 90);
    let scalars = random_scalars(n - 3, 91);
    let want = CpuBackend.msm_g1(&bases[..n - 3], Selection::All, &scalars).unwrap();
    let len = n - 5;
    let (a, b) = (random_scalars(len, 92), random_scalars(len, 93));
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y + Scalar::ONE).collect();
    let hb = &bases[..n - 1];
    let (h_want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
    for w in 17..=22u32 {
        gpu.retune(variant(|t| t.msm_window = Some(w)));
        let got = gpu.msm_g1(&bases[..n - 3], Selection::All, &scalars);
        let h_got = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb);
        gpu.retune(GpuTuning::default());
        assert_eq!(got.unwrap(), want, "MSM at window {w} differs from the CPU backend");
        assert_eq!(gpu.last_report().h_step, HStep::Device);
        assert_eq!(h_got.unwrap().0, h_want, "H MSM from the device at window {w} differs");
        assert_arena_empty(gpu);
    }
    say("wide windows 17..22: MSM and H MSM equal to the CPU backend");
}

/// The default tuning with `f` applied: one variant for [`GpuBackend::retune`].
fn variant(f: impl FnOnce(&mut GpuTuning)) -> GpuTuning {
    let mut t = GpuTuning::default();
    f(&mut t);
    t
}

/// a, b, c of `len` rows for an H MSM, random with c = a b − 1 (h not an exact quotient);
/// a from `seed`, b from `seed + 1`.
fn h_inputs(len: usize, seed: u64) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>) {
    let (a, b) = (random_scalars(len, seed), random_scalars(len, seed + 1));
    let c = a.iter().zip(&b).map(|(x, y)| x * y - Scalar::ONE).collect();
    (a, b, c)
}

/// The batch-affine bucket phase (kernels/msm_affine.cuh; by default only in H MSMs of 2^24
/// points or more, forced here at 2^16 with 1 to 12 levels) equals the CPU backend on the H
/// MSM from the device: over random bases, and over 7 distinct bases with infinity among
/// them under narrow windows, where most pairs are equal points (doubled), opposite points
/// (cancelled) or infinity.
#[test]
fn batch_affine_levels_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let n = 1usize << 16;
    let random = random_bases(n, 100);
    let few: Vec<G1Affine> =
        (0..n).map(|i| if i % 97 == 5 { G1Affine::identity() } else { random[i % 7] }).collect();
    let len = n - 9;
    let (a, b, c) = h_inputs(len, 101);
    for (label, bases) in [("random bases", &random), ("7 distinct bases and infinity", &few)] {
        let hb = &bases[..n - 1];
        let (want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
        for (levels, window) in [(1, None), (2, Some(4)), (6, None), (6, Some(4)), (12, Some(5)), (0, None)] {
            // At this size too: levels go only to chunks of 2^msm_batch_min_log and more.
            gpu.retune(variant(|t| (t.msm_batch_levels, t.msm_batch_min_log, t.msm_window) = (levels, 0, window)));
            let got = gpu.h_msm(a.clone(), b.clone(), c.clone(), hb);
            gpu.retune(GpuTuning::default());
            assert_eq!(gpu.last_report().h_step, HStep::Device);
            assert_eq!(gpu.last_report().msm.unwrap().batch_levels, levels, "{label}: the H MSM took the levels forced");
            assert_eq!(got.unwrap().0, want, "{label}: {levels} batch-affine levels, window {window:?}");
            assert_arena_empty(gpu);
        }
    }
    say("batch-affine levels 0 to 12, windows 4, 5 and 12 bits: H MSM equal to the CPU backend");
}

/// Bucket keys derived from the scatter's cursors (the default) and stored (a variant) give the CPU
/// backend's results: G1 and G2 MSMs from host scalars (random, PoRep-like, all one bucket,
/// minus one, a size that is not a power of two so that run chunks straddle windows) and the
/// H MSM over device scalars in one pass, at the default width and at 4 bits (many empty
/// buckets).
#[test]
fn bucket_keys_derived_and_stored_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let n = 1usize << 16;
    let bases = random_bases(n, 200);
    let g2 = random_bases_g2(1 << 12, 201);
    let odd = n - 9;
    let same = vec![Scalar::from(12345u64); odd];
    // Derived keys are the default; stored keys remain a switch (and what batch-affine
    // levels read).
    for (derive, keys) in [(true, "derived keys"), (false, "stored keys")] {
        for window in [None, Some(4)] {
            gpu.retune(variant(|t| (t.msm_derived_keys, t.msm_window) = (derive, window)));
            for (label, scalars) in [
                ("random", random_scalars(odd, 202)),
                ("porep-like", porep_scalars(odd, 203)),
                ("one bucket", same.clone()),
                ("minus one", vec![-Scalar::ONE; odd]),
            ] {
                check_msm(gpu, &format!("{label}, {keys}, window {window:?}"), &bases[..odd], &scalars);
                assert_eq!(gpu.last_report().msm.unwrap().derived_keys, derive, "{label}: the call's keys were {keys}");
            }
            let s2 = random_scalars(g2.len() - 3, 204);
            check_msm_g2(gpu, &format!("random, {keys}, window {window:?}"), &g2[..s2.len()], &s2);
            assert_eq!(gpu.last_report().msm.unwrap().derived_keys, derive);
            let (a, b, c) = h_inputs(odd, 205);
            let hb = &bases[..n - 1];
            let (want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
            let got = gpu.h_msm(a, b, c, hb);
            let derived = gpu.last_report().msm.unwrap().derived_keys;
            gpu.retune(GpuTuning::default());
            assert_eq!(gpu.last_report().h_step, HStep::Device);
            assert_eq!(derived, derive, "the H MSM's keys were {keys}");
            assert_eq!(got.unwrap().0, want, "H MSM with {keys}, window {window:?}");
            assert_arena_empty(gpu);
        }
        // Several chunks, the last one shorter: each chunk's keys come from its own cursors
        // and its own length.
        let small = GpuBackend::open(0, VramBudget::Bytes(16 << 20)).expect("second handle");
        small.retune(variant(|t| t.msm_derived_keys = derive));
        let n = (1 << 18) + 5;
        assert!(small.plan_msm_g1(n).unwrap().chunks > 2, "{:?}", small.plan_msm_g1(n));
        let bases = random_bases(n, 207);
        for (label, scalars) in [("random", random_scalars(n, 208)), ("porep-like", porep_scalars(n, 209))] {
            let want = CpuBackend.msm_g1(&bases, Selection::All, &scalars).unwrap();
            assert_eq!(small.msm_g1(&bases, Selection::All, &scalars).unwrap(), want, "chunked {label}, {keys}");
            assert_eq!(small.last_report().msm.unwrap().derived_keys, derive);
        }
    }
    say("bucket keys derived and stored: G1 (4 scalar kinds), G2 and H MSMs at the default width and 4 bits, and G1 in chunks of a 16 MiB arena, equal to the CPU backend");
}

/// Windows sharing bucket sets through precomputed multiples of resident bases (issue #35),
/// and the scatter one set per pass, give the CPU backend's results: every (copies, width)
/// the plan may take here, G1 MSMs from host scalars over resident bases (all of them, and
/// selected by index as L, A and B are), the H MSM over device scalars, scalars random,
/// PoRep-like, all in one bucket and minus one. The multiples are built once and kept (the
/// second call over the same bases builds none), dropped when the tuning forbids them, and
/// the driver's free memory is back at its start once the caches are released.
#[test]
fn multiples_and_bucket_sets_match_cpu() {
    let Some((gpu, _serial)) = gpu() else { return };
    let n = 1usize << 16;
    let bases = random_bases(n, 300);
    let odd = n - 7;
    // The width the plan takes without copies, under the default tuning (before the
    // warm-up's forced width).
    gpu.retune(variant(|_| ()));
    let plain = gpu.plan_msm_g1(odd).unwrap().c;
    // The first build of multiples grows the context's local memory once (the build kernel
    // keeps 16 points a thread; 430 MiB on an H100): the baseline is taken after one.
    gpu.retune(variant(|t| (t.msm_multiples, t.msm_window) = (4, Some(16))));
    check_msm(gpu, "warm-up", &bases, &random_scalars(n, 299));
    gpu.release_caches().unwrap();
    let (free0, _) = gpu.mem_info().unwrap();
    let idx: Vec<u32> = (0..odd as u32).map(|i| (i * 7919) % n as u32).collect();
    // (copies allowed, forced width, a pass per set)
    let variants = [(1u32, None, true), (1, Some(20), true), (4, Some(16), false), (4, Some(13), true)]
        .into_iter()
        .chain([(8, Some(7), false), (16, Some(20), false), (16, Some(22), true), (16, None, false)]);
    for (copies, window, per_set) in variants {
        gpu.release_multiples();
        gpu.retune(variant(|t| (t.msm_multiples, t.msm_window, t.msm_scatter_per_set) = (copies, window, per_set)));
        let label = format!("{copies} copies, window {window:?}, per set {per_set}");
        for (what, scalars) in [
            ("random", random_scalars(odd, 301)),
            ("porep-like", porep_scalars(odd, 302)),
            ("one bucket", vec![Scalar::from(987654321u64); odd]),
            ("minus one", vec![-Scalar::ONE; odd]),
        ] {
            check_msm(gpu, &format!("{what}, {label}"), &bases[..odd], &scalars);
            let p = gpu.last_report().msm.unwrap();
            assert!(copies > 1 || p.per == 1, "{label}: {p:?}");
            assert!(p.per <= copies, "{label}: {p:?}");
            if let Some(c) = window {
                assert_eq!(p.c, c, "{label}: the forced width");
            }
            let want = CpuBackend.msm_g1(&bases, Selection::Indices(&idx), &scalars).unwrap();
            let got = gpu.msm_g1(&bases, Selection::Indices(&idx), &scalars).unwrap();
            assert_eq!(got, want, "indexed MSM {what}, {label}");
        }
        check_msm(gpu, &format!("random, {label}"), &bases[..odd], &random_scalars(odd, 306));
        let built = gpu.last_report().msm.unwrap();
        // What the plan's model takes with the device's room (far more than these copies).
        let want = cuzk_gpu::choose_multiples(odd, odd, odd, 96, copies, usize::MAX, per_set, window, plain);
        assert_eq!((built.c, built.per), (want.c, want.per), "{label}: the plan's choice");
        assert_eq!(built.multiples_bytes > 0, want.per > 1, "{label}: {built:?}");
        let (a, b, c) = h_inputs(n - 1, 303);
        let hb = &bases[..n - 1];
        let (want, _) = CpuBackend.h_msm(a.clone(), b.clone(), c.clone(), hb).unwrap();
        let got = gpu.h_msm(a, b, c, hb).unwrap().0;
        assert_eq!(got, want, "H MSM, {label}");
        let h = gpu.last_report().msm.unwrap();
        assert!(h.per <= copies, "{label}: {h:?}");
        assert_arena_empty(gpu);
        // Again over the same bases: nothing more is built or uploaded.
        let resident = gpu.resident();
        let s = random_scalars(odd, 304);
        check_msm(gpu, &format!("again, {label}"), &bases[..odd], &s);
        assert_eq!(gpu.resident(), resident, "{label}: the second call added to the resident arrays");
        assert_eq!(gpu.last_report().msm.unwrap().per, built.per, "{label}: the second call's copies");
        say(&format!("multiples: {label}: G1 {:?} sets {} copies {} ({} MiB); H MSM c = {} copies {}", built.c, built.sets(), built.per, built.multiples_bytes >> 20, h.c, h.per));
    }
    gpu.retune(GpuTuning::default());
    let s = random_scalars(odd, 305);
    check_msm(gpu, "default after multiples", &bases[..odd], &s);
    assert_eq!(gpu.last_report().msm.unwrap().per, 1, "the default takes no multiples");
    gpu.release_caches().unwrap();
    let (free1, _) = gpu.mem_info().unwrap();
    let c = gpu.arena_counters();
    assert_eq!((c.in_use, c.buffers), (0, 0), "{c:?}");
    let drift = free0.abs_diff(free1);
    assert!(drift <= 1 << 20, "driver free memory moved by {drift} bytes ({free0} -> {free1})");
    say("multiples and bucket sets: 8 variants, G1 (4 scalar kinds, all and indexed) and H MSMs equal to the CPU backend; memory back at its start");
}

/// Random parameter points made on the device equal the host generator's byte for byte: G1
/// over more than one launch slice (2^22 points) with a partial last run, G2 a partial run;
/// and a whole random parameter set made on the device equals the host's.
#[test]
fn random_points_on_the_device_equal_the_hosts() {
    use blstrs::{G1Projective, G2Projective};
    use cuzk_groth16::shape::{random_points, random_srs, random_srs_with, RandomPoints};
    let Some((gpu, _serial)) = gpu() else { return };
    let n = (1 << 22) + 5000;
    let t = Instant::now();
    let want = random_points::<G1Projective>(n, 5, 2);
    let host = t.elapsed();
    let t = Instant::now();
    let got = gpu.g1(n, 5, 2).unwrap();
    let device = t.elapsed();
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!("G1 point {i} of {n} made on the device differs from the host's");
    }
    eprintln!("random G1 points, {n}: host {host:?}, device (with the download) {device:?}");
    let want = random_points::<G2Projective>(3000, 5, 6);
    assert!(gpu.g2(3000, 5, 6).unwrap() == want, "G2 points made on the device differ from the host's");
    let shape = cuzk_groth16::SrsShape { h: 8191, l: 6000, a: 7000, b_g1: 3000, b_g2: 3000, ic: 9 };
    let (a, b) = (random_srs(&shape, 8), random_srs_with(&shape, 8, gpu).unwrap());
    assert!(
        *a.h == *b.h && *a.l == *b.l && *a.a == *b.a && *a.b_g1 == *b.b_g1 && *a.b_g2 == *b.b_g2 && a.vk.ic == b.vk.ic,
        "a parameter set made on the device differs from the host's"
    );
    // Written into a spill file slice by slice from the device: the same parameters.
    let dir = tempfile::tempdir().unwrap();
    let c = cuzk_groth16::shape::random_srs_spilled(&shape, 8, gpu, dir.path()).unwrap();
    assert!(c.h.is_spilled() && *a.h == *c.h && *a.l == *c.l && *a.a == *c.a && *a.b_g1 == *c.b_g1 && *a.b_g2 == *c.b_g2);
    assert_arena_empty(&gpu);
}
