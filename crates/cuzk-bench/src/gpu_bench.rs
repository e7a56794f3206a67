//! `cuzk-lab gpu-bench`: the GPU backend's table of issue #3.
//!
//! Each row: the whole Backend call ("total": host data in, result out), the kernels alone
//! (events on the compute stream), the floor worked out from the rates measured on the H200
//! (the H200's measured rates, crates/cuzk-gpu/BENCH.md: 9.8e12 32-bit multiply-adds/s, 55.3 GB/s pinned PCIe), time over
//! floor, and sppark's figure on the same H200 where there is one. MSMs run with their bases
//! resident in device memory (the first call over a base array uploads it; that call is
//! reported apart), as sppark's figures are.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::GpuBackend;
use cuzk_groth16::{Backend, CpuBackend, NttDirection, Selection};
use ff::Field;
use group::Curve;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// Measured on the H200 (GPU.md).
const MADDS_PER_S: f64 = 9.8e12;
const PCIE_BYTES_PER_S: f64 = 55.3e9;
/// Multiply-adds of one Montgomery product (CIOS, low and high halves apart).
const FR_MUL: f64 = 256.0;
const FQ_MUL: f64 = 576.0;
/// Field products of one mixed XYZZ addition.
const ADD_MULS: f64 = 11.0;

#[derive(clap::Args, Debug)]
pub struct GpuBenchArgs {
    /// Smallest and largest NTT (log2).
    #[arg(long, default_value_t = 20)]
    pub min_log_ntt: u32,
    #[arg(long, default_value_t = 27)]
    pub max_log_ntt: u32,
    /// Largest G1 MSM (log2; from 2^20 in steps of 2).
    #[arg(long, default_value_t = 26)]
    pub max_log_msm: u32,
    /// Largest G2 MSM (log2; 2^16 and this).
    #[arg(long, default_value_t = 20)]
    pub max_log_g2: u32,
    /// 2 KiB PoRep fixture [default: CUZK_FIXTURE_DIR or ~/.cache/cuzk/fixtures, generated
    /// when missing].
    #[arg(long)]
    pub fixture_dir: Option<PathBuf>,
    /// Leave out the whole-proof row.
    #[arg(long)]
    pub no_porep: bool,
    /// Also time G1 MSMs (random scalars, at --sweep-logs) at window widths up to 22 bits, in
    /// chunks of 2^22 points and in one pass, each result checked equal to the default
    /// width's.
    #[arg(long)]
    pub window_sweep: bool,
    /// The sizes (log2) of the window sweep.
    #[arg(long, value_delimiter = ',', default_value = "22,24,26")]
    pub sweep_logs: Vec<u32>,
    /// The narrowest width of the window sweep (up to 22 bits).
    #[arg(long, default_value_t = 14)]
    pub sweep_min_window: u32,
    /// Bytes for the upload-rate rows.
    #[arg(long, default_value_t = 1 << 30)]
    pub upload_bytes: usize,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Row {
    op: String,
    n: String,
    total_ms: f64,
    kern_ms: Option<f64>,
    floor_ms: Option<f64>,
    sppark_ms: Option<f64>,
    note: String,
}

impl Row {
    fn print(&self) {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            self.op,
            self.n,
            self.total_ms,
            opt(self.kern_ms),
            opt(self.floor_ms),
            ratio(self.kern_ms, self.floor_ms),
            ratio(Some(self.total_ms), self.floor_ms),
            opt(self.sppark_ms),
            ratio(self.kern_ms, self.sppark_ms),
            self.note
        );
    }
}

fn header() {
    println!("| op | n | total ms | kernels ms | floor ms | kern/floor | total/floor | sppark ms | kern/sppark | note |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
}

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed.wrapping_mul(0x9e3779b97f4a7c15) ^ 0x5eed)
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 14)
        .flat_map_iter(|idx| {
            let mut r = rng(seed ^ ((idx[0] as u64) << 20));
            idx.into_iter()
                .map(move |_| Scalar::random(&mut r))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// 40% zero, 30% one, the rest random.
fn porep_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let random = random_scalars(n, seed);
    random
        .into_par_iter()
        .enumerate()
        .map(|(i, s)| match rng(seed ^ i as u64).gen_range(0..10) {
            0..=3 => Scalar::ZERO,
            4..=6 => Scalar::ONE,
            _ => s,
        })
        .collect()
}

/// Distinct random points (cuzk_groth16::shape's generator).
fn random_points<P>(n: usize, seed: u64) -> Vec<P::AffineRepr>
where
    P: cuzk_groth16::shape::BatchAffine + Curve<AffineRepr = <P as cuzk_groth16::shape::BatchAffine>::Affine>,
{
    cuzk_groth16::shape::random_points::<P>(n, seed, 0)
}

/// Best of three: (total, kernels of that run).
fn best(gpu: &GpuBackend, mut f: impl FnMut() -> Result<()>) -> Result<(Duration, Duration)> {
    let mut b = (Duration::MAX, Duration::ZERO);
    for _ in 0..3 {
        let t = Instant::now();
        f()?;
        let total = t.elapsed();
        if total < b.0 {
            b = (total, gpu.last_report().timings.kernels);
        }
    }
    Ok(b)
}

fn ntt_floor_ms(log_n: u32) -> f64 {
    let n = (1u64 << log_n) as f64;
    n / 2.0 * log_n as f64 * FR_MUL / MADDS_PER_S * 1e3
}

/// Bucket additions of the general scalars (16 windows) plus one addition per scalar one.
fn msm_floor_ms(general: f64, ones: f64, field_mul: f64) -> f64 {
    (16.0 * general + ones) * ADD_MULS * field_mul / MADDS_PER_S * 1e3
}

pub fn run(args: &GpuBenchArgs) -> Result<()> {
    let gpu = GpuBackend::new().context("GPU backend unavailable")?;
    let d = gpu.device();
    let (free, total) = gpu.mem_info()?;
    println!(
        "GPU bench: {} ({} SMs, sm_{}{}), {:.1} GiB free of {:.1} GiB, arena budget {:.1} GiB",
        d.name,
        d.sm_count,
        d.compute_capability.0,
        d.compute_capability.1,
        free as f64 / (1u64 << 30) as f64,
        total as f64 / (1u64 << 30) as f64,
        gpu.arena_counters().budget as f64 / (1u64 << 30) as f64
    );
    let mut rows: Vec<Row> = Vec::new();
    let emit = |rows: &mut Vec<Row>, r: Row| {
        eprintln!(
            "{} {} total {:.1} ms kern {:?}",
            r.op, r.n, r.total_ms, r.kern_ms
        );
        rows.push(r);
    };

    // Upload rates.
    let u = gpu.upload_rates(args.upload_bytes)?;
    let gb = |r: f64| r / 1e9;
    let bytes_ms = |rate: f64| args.upload_bytes as f64 / rate * 1e3;
    for (label, rate) in [
        ("pageable", u.pageable),
        ("pinned", u.pinned),
        ("staged (pageable via pinned pool)", u.staged),
        ("pageable page-locked in place (pin, DMA, release)", u.pinned_in_place),
    ] {
        emit(
            &mut rows,
            Row {
                op: format!("upload {label}"),
                n: format!("{} MiB", args.upload_bytes >> 20),
                total_ms: bytes_ms(rate),
                kern_ms: None,
                floor_ms: Some(bytes_ms(PCIE_BYTES_PER_S)),
                sppark_ms: None,
                note: format!("{:.1} GB/s", gb(rate)),
            },
        );
    }

    // NTTs.
    for log_n in args.min_log_ntt..=args.max_log_ntt {
        let n = 1usize << log_n;
        let input = random_scalars(n, log_n as u64);
        let dirs: &[NttDirection] = if log_n == args.max_log_ntt || log_n == 24 {
            &[
                NttDirection::Forward,
                NttDirection::Inverse,
                NttDirection::CosetForward,
            ]
        } else {
            &[NttDirection::Forward]
        };
        for &dir in dirs {
            let mut v = input.clone();
            let (t, k) = best(&gpu, || Ok(gpu.ntt(&mut v, dir)?))?;
            let sppark = (log_n == 27).then_some(match dir {
                NttDirection::Forward => 42.0,
                NttDirection::Inverse => 44.0,
                _ => 47.0,
            });
            emit(
                &mut rows,
                Row {
                    op: format!("NTT {dir:?}"),
                    n: format!("2^{log_n}"),
                    total_ms: ms(t),
                    kern_ms: Some(ms(k)),
                    floor_ms: Some(ntt_floor_ms(log_n)),
                    sppark_ms: sppark,
                    note: format!(
                        "transfer floor {:.1} ms",
                        2.0 * 32.0 * n as f64 / PCIE_BYTES_PER_S * 1e3
                    ),
                },
            );
        }
    }

    // G1 MSMs, bases resident.
    let max = args.max_log_msm;
    let t = Instant::now();
    let bases: Vec<G1Affine> = random_points::<G1Projective>(1 << max, 1);
    eprintln!("2^{max} G1 bases in {:.1} s", t.elapsed().as_secs_f64());
    for log_n in (20..=max).step_by(2) {
        let n = 1usize << log_n;
        let b = &bases[..n];
        for (label, scalars, general, ones) in [
            ("random", random_scalars(n, 2 + log_n as u64), n as f64, 0.0),
            (
                "PoRep-like",
                porep_scalars(n, 3 + log_n as u64),
                0.3 * n as f64,
                0.3 * n as f64,
            ),
        ] {
            let t = Instant::now();
            gpu.msm_g1(b, Selection::All, &scalars)?;
            let first = t.elapsed();
            let (total, k) = best(&gpu, || {
                gpu.msm_g1(b, Selection::All, &scalars)?;
                Ok(())
            })?;
            let sppark = match (label, log_n) {
                ("random", 20) => Some(23.0),
                ("random", 22) => Some(58.0),
                ("random", 24) => Some(179.0),
                ("random", 26) => Some(621.0),
                ("PoRep-like", 26) => Some(359.0),
                _ => None,
            };
            emit(
                &mut rows,
                Row {
                    op: format!("MSM G1 {label}"),
                    n: format!("2^{log_n}"),
                    total_ms: ms(total),
                    kern_ms: Some(ms(k)),
                    floor_ms: Some(msm_floor_ms(general, ones, FQ_MUL)),
                    sppark_ms: sppark,
                    note: format!("first call (bases uploaded) {:.1} ms", ms(first)),
                },
            );
        }
    }
    if args.window_sweep {
        // Each width in chunks of 2^22 points (what a call that uploads its scalars takes)
        // and in one pass (what the H MSM takes now that its scalars are on the device).
        for &log_n in &args.sweep_logs {
            anyhow::ensure!(log_n <= max, "--sweep-logs {log_n} above --max-log-msm {max}");
            let n = 1usize << log_n;
            let b = &bases[..n];
            let scalars = random_scalars(n, 7 + log_n as u64);
            let base = gpu.tuning();
            let want = gpu.msm_g1(b, Selection::All, &scalars)?;
            for (mode, chunk_log) in [("2^22 chunks", 22u32), ("one pass", log_n)] {
                for c in args.sweep_min_window..=22u32 {
                    gpu.retune(cuzk_gpu::GpuTuning { msm_max_chunk_log: Some(chunk_log), msm_window: Some(c), ..base.clone() });
                    let (total, k) = best(&gpu, || {
                        anyhow::ensure!(
                            gpu.msm_g1(b, Selection::All, &scalars)? == want,
                            "window {c} differs"
                        );
                        Ok(())
                    })?;
                    let windows = 256u32.div_ceil(c) as f64;
                    emit(
                        &mut rows,
                        Row {
                            op: format!("MSM G1 random, c = {c}, {mode}"),
                            n: format!("2^{log_n}"),
                            total_ms: ms(total),
                            kern_ms: Some(ms(k)),
                            floor_ms: Some(msm_floor_ms(n as f64 * windows / 16.0, 0.0, FQ_MUL)),
                            sppark_ms: None,
                            note: "equal to the default width's result".into(),
                        },
                    );
                }
            }
            gpu.retune(base);
        }
    }
    drop(bases);
    gpu.release_caches()?;

    // G2 MSMs against the CPU backend on this machine's cores.
    let g2_bases: Vec<G2Affine> = random_points::<G2Projective>(1 << args.max_log_g2, 4);
    for log_n in [16, args.max_log_g2] {
        let n = 1usize << log_n;
        let b = &g2_bases[..n];
        for (label, scalars, general, ones) in [
            ("random", random_scalars(n, 5), n as f64, 0.0),
            (
                "PoRep-like",
                porep_scalars(n, 6),
                0.3 * n as f64,
                0.3 * n as f64,
            ),
        ] {
            let (total, k) = best(&gpu, || {
                gpu.msm_g2(b, Selection::All, &scalars)?;
                Ok(())
            })?;
            let t = Instant::now();
            let want = CpuBackend.msm_g2(b, Selection::All, &scalars)?;
            let cpu = t.elapsed();
            anyhow::ensure!(
                gpu.msm_g2(b, Selection::All, &scalars)? == want,
                "G2 MSM differs from the CPU"
            );
            emit(
                &mut rows,
                Row {
                    op: format!("MSM G2 {label}"),
                    n: format!("2^{log_n}"),
                    total_ms: ms(total),
                    kern_ms: Some(ms(k)),
                    floor_ms: Some(msm_floor_ms(general, ones, 3.0 * FQ_MUL)),
                    sppark_ms: None,
                    note: format!("CPU backend {:.1} ms (equal)", ms(cpu)),
                },
            );
        }
    }
    drop(g2_bases);
    gpu.release_caches()?;

    if !args.no_porep {
        porep_rows(&gpu, args, &mut rows)?;
    }

    println!();
    header();
    for r in &rows {
        r.print();
    }
    Ok(())
}

fn porep_rows(gpu: &GpuBackend, args: &GpuBenchArgs, rows: &mut Vec<Row>) -> Result<()> {
    use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
    let dir = args
        .fixture_dir
        .clone()
        .unwrap_or_else(|| default_fixture_dir(2048));
    let t = Instant::now();
    let f = ensure_fixture(&dir, 2048).context("2 KiB fixture")?;
    eprintln!("2 KiB fixture ready in {:.1} s", t.elapsed().as_secs_f64());
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path())?)?;
    let srs = cuzk_groth16::Srs::load(&f.param_dir().join(&f.info.params_file))?;
    let fp = gpu.plan_footprint(&srs.shape_of());
    eprintln!("2 KiB PoRep footprint: {fp:?}");
    let mut first = None;
    let mut best_t = Duration::MAX;
    let mut best_timings = None;
    for _ in 0..3 {
        let t = Instant::now();
        let (proof, timings) = cuzk_filecoin::prove_porep_c2(&c1, f.identity(), &srs, gpu)?;
        let el = t.elapsed();
        anyhow::ensure!(
            cuzk_filecoin::verify_porep_c2(&c1.output, f.identity(), &proof)?,
            "GPU proof does not verify"
        );
        first.get_or_insert(el);
        if el < best_t {
            best_t = el;
            best_timings = Some(timings);
        }
    }
    let t = Instant::now();
    cuzk_filecoin::prove_porep_c2(&c1, f.identity(), &srs, &CpuBackend)?;
    let cpu = t.elapsed();
    let tg = best_timings.unwrap();
    let p = &tg.prove;
    rows.push(Row {
        op: "2 KiB PoRep C2 proof (whole)".into(),
        n: format!("domain 2^{}", (fp.ntt_bytes / 80).max(1).ilog2()),
        total_ms: ms(best_t),
        kern_ms: None,
        floor_ms: None,
        sppark_ms: None,
        note: format!(
            "first {:.0} ms (SRS upload); synthesis {:.0}, ntt/h {:.0}, msm h {:.0} l {:.0} a {:.0} b_g1 {:.0} b_g2 {:.0} ms; CPU backend {:.0} ms; verified; peak plan {} MiB",
            ms(first.unwrap()),
            ms(tg.synthesis),
            ms(p.ntt_h),
            ms(p.msm_h),
            ms(p.msm_l),
            ms(p.msm_a),
            ms(p.msm_b_g1),
            ms(p.msm_b_g2),
            ms(cpu),
            fp.peak_bytes >> 20
        ),
    });
    Ok(())
}
