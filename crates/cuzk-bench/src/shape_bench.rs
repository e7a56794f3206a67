//! `cuzk-lab shape-bench`: the prover's own code path (`cuzk_groth16::prove`, as every
//! real proof runs it) at a partition's shape, without a sector or its parameter file.
//!
//! The inputs are shape-only (cuzk_groth16::shape): random parameters with the exact
//! section sizes, and a witness with the partition's counts and densities whose values are
//! drawn with the scalar mix measured on a real 2 KiB PoRep witness. They cannot verify,
//! which the output says; for small shapes the GPU proof is checked equal to the CPU
//! backend's from the same inputs and blinding instead.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk_gpu::{GpuBackend, VramBudget};
use cuzk_groth16::prover::required_shape;
use cuzk_groth16::shape::{shape_witness, PartitionShape};
use cuzk_groth16::{Backend, CpuBackend, PartitionWitness, ProveTimings, Srs};

#[derive(clap::Args)]
pub struct ShapeBenchArgs {
    /// The partition: 32GiB, or 2^N for the 32 GiB partition's proportions at domain 2^N.
    #[arg(long, default_value = "32GiB")]
    pub shape: String,
    #[arg(long, value_enum, default_value = "gpu")]
    pub backend: ShapeBackend,
    /// GPU memory budgets to run under, in order: `full` (90% of free memory) or a size
    /// such as 14GiB (a 16 GB card's budget) or 22GiB.
    #[arg(long, value_delimiter = ',', default_value = "full,14GiB")]
    pub budgets: Vec<String>,
    /// Proofs per budget; the first (cold) uploads the parameters, the rest (warm) run with
    /// them resident and give the median and spread; 6 for a median of 5.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// C1 output whose partition-0 witness gives the scalar mix [default: the 2 KiB fixture's].
    #[arg(long)]
    pub mix_c1: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Check the GPU proof equal to the CPU backend's (default: for domains up to 2^22).
    #[arg(long)]
    pub check_cpu: Option<bool>,
    /// After each budget's rounds, one more proof with the H step on the host path (each
    /// NTT up and back, h uploaded again): the reference in the same run.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub host_h_round: bool,
    /// After the rounds, one proof under each variant: tuning fields as
    /// `KEY=VALUE[,KEY=VALUE...]`, each a `cuzk_gpu::GpuTuning` key (such as
    /// msm_max_chunk_log=22, ntt_passes=radix, pin_host=true, copy_threads=8) or the
    /// prover's split_threads=N (0: the global pool); the rest as in the rounds. Repeatable.
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Proofs per variant. With more than one, each round's wall and H MSM kernel time are
    /// printed, the first labelled cold (a variant may build precomputed multiples or upload
    /// there), and the median and spread of the rest.
    #[arg(long, default_value_t = 1)]
    pub variant_rounds: usize,
    /// Write the random parameters into an unlinked file in this directory as they are made
    /// (as the daemon's `[srs] host_release_dir` spills), and give their host pages back
    /// once the GPU holds them all; the rounds after it show what a released host copy
    /// costs.
    #[arg(long)]
    pub host_release_dir: Option<PathBuf>,
    /// Only the scalar split (what `prove()` runs on the CPU beside the H step), `--rounds`
    /// times on a split pool of each of these thread counts; no parameters, no GPU.
    #[arg(long, value_delimiter = ',')]
    pub split_only: Vec<usize>,
    /// Where the random parameters are made [default: device with the GPU backend, host
    /// with the CPU one]; the same points either way.
    #[arg(long, value_enum)]
    pub params_on: Option<ParamsOn>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum ShapeBackend {
    Cpu,
    Gpu,
}

/// Where random parameters are made: the host's cores, or GPU 0 (kernels/random.cuh; the
/// same points, `cuzk_groth16::shape::RandomPoints`), downloaded into the host copy.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum ParamsOn {
    Host,
    Device,
}

/// Random parameters of `shape` (shape-only: they cannot verify), made where `on` says
/// (default: the device with the GPU backend); with `spill`, written slice by slice into
/// an unlinked spill file there (`shape::random_srs_spilled`: never whole in host memory,
/// and their host pages can be given back once a device holds them). Prints where, how
/// long, and the host RSS.
pub(crate) fn make_random_srs(
    shape: &cuzk_groth16::SrsShape,
    seed: u64,
    on: Option<ParamsOn>,
    backend: ShapeBackend,
    spill: Option<&std::path::Path>,
) -> Result<cuzk_groth16::Srs> {
    use cuzk_groth16::shape::{random_srs_spilled, random_srs_with, HostPoints, RandomPoints};
    let on = on.unwrap_or(if backend == ShapeBackend::Gpu { ParamsOn::Device } else { ParamsOn::Host });
    let t = Instant::now();
    // On the device: its own context on GPU 0, closed before the bench opens its backends.
    let gpu = match on {
        ParamsOn::Host => None,
        ParamsOn::Device => Some(cuzk_gpu::GpuBackend::new().context("--params-on device needs GPU 0")?),
    };
    let points: &dyn RandomPoints = match &gpu {
        Some(g) => g,
        None => &HostPoints,
    };
    let srs = match spill {
        Some(dir) => random_srs_spilled(shape, seed, points, dir).with_context(|| format!("random parameters spilled to {}", dir.display()))?,
        None => random_srs_with(shape, seed, points)?,
    };
    println!(
        "random parameters of shape {shape:?} ({:.1} GB, shape-only: nothing made with them verifies) made on {} in \
         {:.1} s{}; host RSS {:.1} GiB",
        shape.point_bytes() as f64 / 1e9,
        points.place(),
        t.elapsed().as_secs_f64(),
        spill.map(|d| format!(", written slice by slice to an unlinked spill file in {} (released once the GPU holds them all)", d.display())).unwrap_or_default(),
        gib(rss().0)
    );
    Ok(srs)
}

/// The goal of issue #9 for the 32 GiB partition, by budget: 1.0 s with the parameters
/// resident, 3 s on a 16 GB card's budget.
fn goal(shape: &str, budget: &Budget) -> Option<f64> {
    (shape == "32GiB").then_some(match budget {
        Budget::Full => 1.0,
        Budget::Bytes(b) if *b <= 16 << 30 => 3.0,
        Budget::Bytes(_) => return None,
    })
}

pub(crate) enum Budget {
    Full,
    Bytes(usize),
}

impl Budget {
    /// The backend's budget and its label.
    pub(crate) fn vram(&self) -> (VramBudget, String) {
        match self {
            Budget::Full => (VramBudget::default(), "full (90% of free memory)".to_string()),
            Budget::Bytes(b) => (VramBudget::Bytes(*b), format!("{:.1} GiB", gib(*b))),
        }
    }
}

/// `full` or a size in GiB or MiB.
pub(crate) fn parse_budget(s: &str) -> Result<Budget> {
    let s = s.trim();
    if s == "full" {
        return Ok(Budget::Full);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix("GiB") {
        (n, 1u64 << 30)
    } else if let Some(n) = s.strip_suffix("MiB") {
        (n, 1 << 20)
    } else {
        bail!("budget {s:?}: give `full` or a size in GiB or MiB (e.g. 14GiB)")
    };
    let v: f64 = num.trim().parse().with_context(|| format!("budget {s:?}"))?;
    Ok(Budget::Bytes((v * mult as f64) as usize))
}

/// VmRSS and VmHWM of this process, bytes.
fn rss() -> (usize, usize) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(0, |kb| kb << 10)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn gib(b: usize) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The last h_msm call's own split: the H step's kernels (events) and host time uploading
/// a, b, c, downloading (the lean path's b and c) and page-locking them; the MSM's kernels,
/// the driver allocation of its workspace, and its uploads.
fn h_msm_split(gpu: &GpuBackend) -> String {
    let t = gpu.last_report().h_split;
    format!(
        "H step kernels {:.1} ms, upload {:.1} ms, download {:.1} ms, pin {:.1} ms; H MSM kernels {:.1} ms, workspace alloc {:.1} ms, upload {:.1} ms",
        ms(t.step.kernels),
        ms(t.step.upload),
        ms(t.step.download),
        ms(t.step.pin),
        ms(t.msm.kernels),
        ms(t.msm.alloc),
        ms(t.msm.upload)
    )
}

fn print_stages(t: &ProveTimings, wall: Duration) {
    let rows = [
        ("h step (ntt, quotient)", t.ntt_h),
        ("msm h", t.msm_h),
        ("scalar split, after h", t.split),
        ("msm l", t.msm_l),
        ("msm a", t.msm_a),
        ("msm b_g1", t.msm_b_g1),
        ("msm b_g2", t.msm_b_g2),
        ("assembly", t.assembly),
    ];
    for (name, d) in rows {
        println!("    {name:<24}{:>9.1} ms", ms(d));
    }
    println!(
        "    {:<24}{:>9.1} ms (on the CPU while the H step and its MSM ran; not in the sum)",
        "scalar split, beside h",
        ms(t.split_beside_h)
    );
    let counted = t.total();
    println!("    {:<24}{:>9.1} ms", "in no stage", ms(wall.saturating_sub(counted)));
    println!("    {:<24}{:>9.1} ms", "wall of prove()", ms(wall));
}

/// `--split-only`: the scalar split's time per pool size, best of `--rounds`.
fn split_rows(args: &ShapeBenchArgs, witness: &PartitionWitness) -> Result<()> {
    println!("scalar split alone ({} aux values), best of {} rounds:", witness.aux_assignment.len(), args.rounds);
    println!("| split threads | best ms | rounds ms | L ones / others | A ones / others | B ones / others |");
    println!("|---|---|---|---|---|---|");
    for &threads in &args.split_only {
        let tuning = cuzk_groth16::ProverTuning { split_threads: Some(threads) };
        let runs: Result<Vec<_>, _> =
            (0..args.rounds.max(1)).map(|_| cuzk_groth16::prover::split_alone(witness, &tuning)).collect();
        let runs = runs?;
        let best = runs.iter().map(|r| r.0).min().unwrap_or_default();
        let all: Vec<String> = runs.iter().map(|r| format!("{:.1}", ms(r.0))).collect();
        let c = runs[0].1;
        println!(
            "| {threads} | {:.1} | {} | {} / {} | {} / {} | {} / {} |",
            ms(best),
            all.join(", "),
            c[0].0, c[0].1, c[1].0, c[1].1, c[2].0, c[2].1
        );
    }
    Ok(())
}

pub fn run(args: &ShapeBenchArgs) -> Result<()> {
    let shape = PartitionShape::parse(&args.shape).map_err(anyhow::Error::msg)?;
    let budgets = args.budgets.iter().map(|b| parse_budget(b)).collect::<Result<Vec<_>>>()?;
    // Every variant checked before the long rounds: a typo fails here, in milliseconds.
    for v in &args.variants {
        variant_tunings(v, &cuzk_gpu::GpuTuning::default())?;
    }
    let log_n = shape.domain().trailing_zeros();
    println!(
        "shape-bench: {} partition shape: {} constraints (domain 2^{log_n}), {} inputs, {} aux, \
         A aux density {:.1}%, B aux density {:.1}%",
        args.shape,
        shape.constraints,
        shape.inputs,
        shape.aux,
        100.0 * shape.a_aux_density,
        100.0 * shape.b_aux_density
    );
    println!(
        "SHAPE-ONLY INPUTS: random parameters and a drawn witness; these proofs cannot verify \
         (a benchmark, never a proof)"
    );
    let mix_c1 = args.mix_c1.clone().unwrap_or_else(|| {
        cuzk_filecoin::fixture::default_fixture_dir(2048).join("c1.json")
    });
    let t = Instant::now();
    let mix = cuzk_filecoin::shape_c1::witness_mix(&mix_c1).with_context(|| {
        format!("measuring the scalar mix on {} (give --mix-c1)", mix_c1.display())
    })?;
    println!(
        "scalar mix measured on the 2 KiB PoRep witness ({}, {:.1} s):",
        mix_c1.display(),
        t.elapsed().as_secs_f64()
    );
    for (part, m) in [("a", mix.a), ("b", mix.b), ("c", mix.c), ("aux", mix.aux)] {
        println!("  {part:<4}{m}");
    }

    let t = Instant::now();
    let witness = shape_witness(&shape, &mix, args.seed);
    let srs_shape = required_shape(&witness);
    println!(
        "witness drawn in {:.1} s (a and b with their mixes, c = a b row by row, so h is an exact quotient); parameters of shape {:?} ({:.1} GB of points)",
        t.elapsed().as_secs_f64(),
        srs_shape,
        srs_shape.point_bytes() as f64 / 1e9
    );
    if !args.split_only.is_empty() {
        return split_rows(args, &witness);
    }
    let srs = make_random_srs(&srs_shape, args.seed, args.params_on, args.backend, args.host_release_dir.as_deref())?;
    let blinding = (Scalar::from(0x5eedu64), Scalar::from(0xb1d5u64));
    let check = args.backend == ShapeBackend::Gpu && args.check_cpu.unwrap_or(log_n <= 22);
    let reference = if check {
        let t = Instant::now();
        let (p, _) = cuzk_groth16::prove(&CpuBackend, &srs, witness.clone(), blinding.0, blinding.1)?;
        println!("CPU backend reference proof in {:.1} s", t.elapsed().as_secs_f64());
        Some(p)
    } else {
        None
    };

    match args.backend {
        ShapeBackend::Cpu => {
            let (wall, t) = one_proof(&CpuBackend, &srs, &witness, blinding, reference.as_ref(), "cpu", &Default::default())?;
            println!("  cpu backend: wall {:.1} ms", ms(wall));
            print_stages(&t, wall);
        }
        ShapeBackend::Gpu => {
            for budget in &budgets {
                gpu_budget(args, budget, &srs, &witness, blinding, reference.as_ref())?;
            }
        }
    }
    let (_, peak) = rss();
    println!("peak host RSS {:.1} GiB", gib(peak));
    Ok(())
}

/// A copy of the witness in the memory synthesis gives a real one: a, b and c advised onto
/// huge pages with room for the domain, aux advised (`cuzk_groth16::hugepages`). A plain
/// clone is neither, and the prover's host copies and pads behave differently on it (the
/// lean H step's 7.6 s in the engine against 1.0 s here: bench/history/2026-12-04.md, fifth
/// session).
fn as_synthesized(w: &PartitionWitness) -> PartitionWitness {
    use cuzk_groth16::hugepages::{domain_capacity, par_copy as copy};
    let n = domain_capacity(w.a.len());
    PartitionWitness {
        a: copy(&w.a, n),
        b: copy(&w.b, n),
        c: copy(&w.c, n),
        input_assignment: w.input_assignment.clone(),
        aux_assignment: copy(&w.aux_assignment, 0),
        a_aux_density: w.a_aux_density.clone(),
        b_input_density: w.b_input_density.clone(),
        b_aux_density: w.b_aux_density.clone(),
        deferred: w.deferred.clone(),
    }
}

/// A `--variant`'s tunings: `gpu` with its GPU keys set, and the default prover tuning with
/// its `split_threads`. An unknown key or a bad value is refused naming both.
pub fn variant_tunings(
    variant: &str,
    gpu: &cuzk_gpu::GpuTuning,
) -> Result<(cuzk_gpu::GpuTuning, cuzk_groth16::ProverTuning)> {
    let mut g = gpu.clone();
    let mut p = cuzk_groth16::ProverTuning::default();
    for kv in variant.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--variant {variant:?}: {kv:?} is not KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        if k == "split_threads" {
            let n = v.parse().map_err(|_| anyhow::anyhow!("--variant {variant:?}: split_threads = {v:?} is not a thread count"))?;
            p.split_threads = Some(n);
        } else {
            g.set(k, v).map_err(|e| anyhow::anyhow!("--variant {variant:?}: {e} (or split_threads, the prover's)"))?;
        }
    }
    Ok((g, p))
}

fn one_proof(
    be: &dyn Backend,
    srs: &Srs,
    witness: &PartitionWitness,
    (r, s): (Scalar, Scalar),
    reference: Option<&cuzk_groth16::Proof>,
    label: &str,
    tuning: &cuzk_groth16::ProverTuning,
) -> Result<(Duration, ProveTimings)> {
    let w = as_synthesized(witness);
    debug_assert!(w == *witness);
    let t = Instant::now();
    let (proof, timings) = cuzk_groth16::prove_with(be, srs, w, r, s, tuning)?;
    let wall = t.elapsed();
    if let Some(want) = reference {
        if proof != *want {
            bail!("{label}: the proof differs from the CPU backend's for the same inputs and blinding");
        }
        println!("  {label}: equal to the CPU backend's proof");
    }
    Ok((wall, timings))
}

fn gpu_budget(
    args: &ShapeBenchArgs,
    budget: &Budget,
    srs: &Srs,
    witness: &PartitionWitness,
    blinding: (Scalar, Scalar),
    reference: Option<&cuzk_groth16::Proof>,
) -> Result<()> {
    let (vb, label) = budget.vram();
    let gpu = GpuBackend::open(0, vb).context("GPU backend unavailable")?;
    let (free0, total) = gpu.mem_info()?;
    let fp = gpu.plan_footprint(&srs.shape_of());
    println!(
        "GPU {} ({:.1} GiB free of {:.1}), budget {label}: plan peak {:.2} GiB, parameters {:.1} GiB, \
         fits {}, unchunked and resident {}; MSM chunk {} points; H step on the device {} ({:.2} GiB)",
        gpu.device().name,
        gib(free0),
        gib(total),
        gib(fp.peak_bytes),
        gib(fp.srs_bytes),
        fp.fits,
        fp.fits_unchunked,
        fp.msm_chunk,
        fp.h_on_device,
        gib(fp.h_step_bytes)
    );
    // Round 1 is cold (uploads, allocations); the report is the warm rounds' median, with
    // their spread, and a lone round is printed as the cold round it is.
    let mut warm: Vec<(Duration, ProveTimings)> = Vec::new();
    let mut cold_wall = Duration::ZERO;
    for round in 1..=args.rounds.max(1) {
        let (wall, t) = one_proof(&gpu, srs, witness, blinding, reference, "gpu", &Default::default())?;
        let c = gpu.arena_counters();
        let (res_bytes, res_arrays) = gpu.resident();
        let cold = if round == 1 { " (cold)" } else { "" };
        println!(
            "  round {round}{cold}: wall {:.1} ms; H step {:?}; VRAM high water {:.2} GiB, resident {:.1} GiB in {res_arrays} arrays; {}; host RSS {:.1} GiB",
            ms(wall),
            gpu.last_report().h_step,
            gib(c.high_water),
            gib(res_bytes),
            h_msm_split(&gpu),
            gib(rss().0)
        );
        if let Some(bytes) = srs.release_if_held(&gpu) {
            println!(
                "  host copy of the parameters released after round {round} ({:.1} GiB; the GPU holds them all): host \
                 RSS {:.1} GiB",
                gib(bytes),
                gib(rss().0)
            );
        }
        if round == 1 {
            cold_wall = wall;
            println!("  cold round, budget {label}:");
            print_stages(&t, wall);
        } else {
            warm.push((wall, t));
        }
    }
    // The reference for the host H step's round below: the median warm round (the cold one
    // when there is no other).
    warm.sort_by_key(|w| w.0);
    let typical = warm.get(warm.len() / 2).map_or(cold_wall, |w| w.0);
    if warm.is_empty() {
        println!("  no warm round, budget {label} (--rounds 1: the cold round above is the only one; --rounds 6 gives a median of 5)");
    } else {
        let (wall, t) = warm[warm.len() / 2];
        let mut walls: Vec<f64> = warm.iter().map(|w| ms(w.0)).collect();
        let (median, lo, hi) = crate::report::median_spread(&mut walls);
        println!(
            "  warm rounds, budget {label}: {} (the cold round left out), wall median {median:.1} ms ({lo:.1}-{hi:.1}); the median round's stages:",
            warm.len()
        );
        print_stages(&t, wall);
        if let Some(g) = goal(&args.shape, budget) {
            println!(
                "  goal {g:.1} s: the median warm wall {:.2} s is {:.2}x the goal",
                wall.as_secs_f64(),
                wall.as_secs_f64() / g
            );
        }
    }
    for variant in &args.variants {
        let base = gpu.tuning();
        let (gpu_tuning, prover_tuning) = variant_tunings(variant, &base)?;
        // Each variant starts without another's precomputed multiples (the parameters stay).
        gpu.release_multiples();
        gpu.retune(gpu_tuning);
        let rounds = args.variant_rounds.max(1);
        let (mut walls, mut h_kernels) = (Vec::new(), Vec::new());
        for round in 1..=rounds {
            let result = one_proof(&gpu, srs, witness, blinding, reference, "gpu variant", &prover_tuning);
            let (w, vt) = match result {
                Ok(r) => r,
                Err(e) => {
                    gpu.retune(base);
                    return Err(e);
                }
            };
            let cold = if rounds > 1 && round == 1 { ", cold" } else { "" };
            let plan = gpu.last_report().msm.map_or(String::new(), |p| {
                format!("; last MSM c = {}, {} bucket sets, {} copies ({} MiB of multiples)", p.c, p.sets(), p.per, p.multiples_bytes >> 20)
            });
            println!(
                "  variant {variant}, round {round}{cold}: wall {:.1} ms (h step {:.1}, msm h {:.1}, split after h {:.1}, L/A/B {:.1} ms; {}{plan})",
                ms(w),
                ms(vt.ntt_h),
                ms(vt.msm_h),
                ms(vt.split),
                ms(vt.msm_l + vt.msm_a + vt.msm_b_g1 + vt.msm_b_g2),
                h_msm_split(&gpu)
            );
            if round > 1 || rounds == 1 {
                walls.push(ms(w));
                h_kernels.push(ms(gpu.last_report().h_split.msm.kernels));
            }
        }
        gpu.retune(base);
        if rounds > 1 {
            let (w, h) = (crate::report::median_spread(&mut walls), crate::report::median_spread(&mut h_kernels));
            println!(
                "  variant {variant}: {} warm rounds, wall median {:.1} ms ({:.1}-{:.1}), H MSM kernels median {:.1} ms ({:.1}-{:.1})",
                walls.len(),
                w.0,
                w.1,
                w.2,
                h.0,
                h.1,
                h.2
            );
        }
    }
    if args.host_h_round {
        let tuning = gpu.tuning();
        gpu.retune(cuzk_gpu::GpuTuning { device_h: false, ..tuning.clone() });
        let (host_wall, ht) = one_proof(&gpu, srs, witness, blinding, reference, "gpu, host H step", &Default::default())?;
        gpu.retune(tuning);
        println!(
            "  reference in the same run, H step on the host path ({:?}), budget {label}: wall {:.1} ms, {:.2}x this \
             path's median warm round ({})",
            gpu.last_report().h_step,
            ms(host_wall),
            host_wall.as_secs_f64() / typical.as_secs_f64(),
            if warm.is_empty() { "no warm round: against the cold one" } else { "one round" }
        );
        println!("    {}", h_msm_split(&gpu));
        print_stages(&ht, host_wall);
    }
    gpu.release_caches()?;
    let c = gpu.arena_counters();
    println!(
        "  after release: arena {} bytes in {} buffers (baseline 0)",
        c.in_use, c.buffers
    );
    if c.in_use != 0 {
        bail!("the arena is not back at its baseline: {} bytes held", c.in_use);
    }
    Ok(())
}
