//! GPU timings against the CPU backend in the same run and against sppark's figures measured
//! on the H200 (../shared/GPU.md). Run explicitly: `cargo test --release -p cuzk-gpu --test
//! gpu_bench -- --ignored --nocapture`. Each GPU row gives the whole call (upload included)
//! and the kernel part alone ("kern", compute-stream events), the best of three runs.
//! `cuzk-bench gpu-bench` is the full table of issue #3 (floors, sppark, upload rates,
//! G2, a whole proof); this test is the quick comparison with the CPU backend.

mod common;

use std::time::{Duration, Instant};

use common::*;
use cuzk_gpu::GpuBackend;
use cuzk_groth16::{Backend, CpuBackend, NttDirection, Selection};

fn best<F: FnMut()>(gpu: &GpuBackend, mut f: F) -> (Duration, Duration) {
    let mut best = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        f();
        let total = t.elapsed();
        if total < best.0 {
            best = (total, gpu.last_timings().kernels);
        }
    }
    best
}

#[test]
#[ignore = "benchmark: run with --ignored on a GPU machine"]
fn gpu_bench() {
    let Some((gpu, _serial)) = gpu() else { return };
    say("| op | n | gpu total ms | gpu kern ms | cpu ms | cpu/gpu kern | sppark ms |");
    say("|---|---|---|---|---|---|---|");
    for log_n in 20..=24u32 {
        let n = 1usize << log_n;
        let input = random_scalars(n, log_n as u64);
        for dir in [
            NttDirection::Forward,
            NttDirection::Inverse,
            NttDirection::CosetForward,
            NttDirection::CosetInverse,
        ] {
            let mut v = input.clone();
            let (total, kern) = best(gpu, || gpu.ntt(&mut v, dir).unwrap());
            let mut w = input.clone();
            let t = Instant::now();
            CpuBackend.ntt(&mut w, dir).unwrap();
            let cpu = t.elapsed();
            say(&format!(
                "| ntt {dir:?} | 2^{log_n} | {:.2} | {:.2} | {:.1} | {:.1} | (2^27: 42 fwd / 44 inv / 47 coset) |",
                ms(total),
                ms(kern),
                ms(cpu),
                ms(cpu) / ms(kern)
            ));
        }
    }
    let ntt_only = std::env::var("CUZK_BENCH_NTT_ONLY").is_ok();
    let max = std::env::var("CUZK_BENCH_MAX_LOG_MSM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(22u32);
    let bases = random_bases(if ntt_only { 1 } else { 1 << max }, 1);
    for log_n in (20..=max).filter(|_| !ntt_only) {
        let n = 1usize << log_n;
        let sppark = match log_n {
            20 => "23",
            22 => "58",
            24 => "179",
            _ => "-",
        };
        for (label, scalars) in [
            ("random", random_scalars(n, 2)),
            ("porep-like", porep_scalars(n, 3)),
        ] {
            let b = &bases[..n];
            let (total, kern) = best(gpu, || {
                gpu.msm_g1(b, Selection::All, &scalars).unwrap();
            });
            let t = Instant::now();
            CpuBackend.msm_g1(b, Selection::All, &scalars).unwrap();
            let cpu = t.elapsed();
            say(&format!(
                "| msm g1 {label} | 2^{log_n} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                ms(total),
                ms(kern),
                ms(cpu),
                ms(cpu) / ms(kern),
                if label == "random" { sppark } else { "-" }
            ));
        }
    }
    // Larger sizes, GPU only (the CPU reference would take too long here).
    for log_n in 25..=27u32 {
        let mut v = random_scalars(1 << log_n, log_n as u64);
        for dir in [
            NttDirection::Forward,
            NttDirection::Inverse,
            NttDirection::CosetForward,
            NttDirection::CosetInverse,
        ] {
            let (total, kern) = best(gpu, || gpu.ntt(&mut v, dir).unwrap());
            let sppark = if log_n == 27 {
                ["42", "44", "47", "47"][dir as usize]
            } else {
                "-"
            };
            say(&format!(
                "| ntt {dir:?} | 2^{log_n} | {:.1} | {:.1} | - | - | {sppark} |",
                ms(total),
                ms(kern)
            ));
        }
    }
    let big = std::env::var("CUZK_BENCH_BIG_LOG_MSM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24u32);
    if big > max && !ntt_only {
        let bases = random_bases(1 << big, 4);
        for log_n in max + 1..=big {
            let n = 1usize << log_n;
            for (label, scalars) in [
                ("random", random_scalars(n, 5)),
                ("porep-like", porep_scalars(n, 6)),
            ] {
                let (total, kern) = best(gpu, || {
                    gpu.msm_g1(&bases[..n], Selection::All, &scalars).unwrap();
                });
                let sppark = match (log_n, label) {
                    (24, "random") => "179",
                    _ => "-",
                };
                say(&format!(
                    "| msm g1 {label} | 2^{log_n} | {:.1} | {:.1} | - | - | {sppark} |",
                    ms(total),
                    ms(kern)
                ));
            }
        }
    }
    let c = gpu.arena_counters();
    say(&format!(
        "arena after bench: in use {} B, high water {:.2} GiB, budget {:.1} GiB",
        c.in_use,
        c.high_water as f64 / (1u64 << 30) as f64,
        c.budget as f64 / (1u64 << 30) as f64
    ));
}
