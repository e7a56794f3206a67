//! cuzk-lab (crate cuzk-bench): the lab, never shipped. Test fixtures (real, satisfying,
//! shape-only), the benches against filecoin-proofs and the peers, the in-process demo and
//! the GPU referee. The client that ships (cuzk-bench) is crate cuzk-cli; the lab proves
//! through its `offline` functions.
//!
//! Thin on purpose: the work lives in cuzk-filecoin and cuzk-groth16.

mod gpu_bench;
mod kinds_bench;
mod msm_plan;
mod progress;
mod report;
mod satisfying;
mod setup_bench;
mod engine_bench;
mod engine_report;
mod shape_bench;
mod shape_params;
mod shape_input;
mod synth_deferred;
mod synth_kinds;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use cuzk_cli::offline::{print_timings, prove_file, select_backend, BackendKind};
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture_with, parse_sector_size, Fixture};
use cuzk_filecoin::{parse_c1, prove_porep_c2};
use cuzk_groth16::{Backend, Srs};
use report::{peak_rss, stages};

#[derive(Parser)]
#[command(name = "cuzk-lab", version, about = "cuzk's lab: test fixtures, benches, the in-process demo (not shipped)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate (or reuse) test parameters and a sealed sector's C1 output.
    GenFixture {
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Fixture directory [default: ~/.cache/cuzk/fixtures/<size>]
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write only DIR/c1.shape-only.json: a C1 output with the proof type's exact
        /// structure and random contents (any size, 32GiB and 64GiB included; shape-only:
        /// cannot verify, for benches only). No parameters, no sealing.
        #[arg(long)]
        shape_only: bool,
        #[command(flatten)]
        satisfying: satisfying::SatisfyingArgs,
    },
    /// One partition on the GPU and on the CPU backend with the same r and s: equal bytes.
    Referee(satisfying::RefereeArgs),
    /// Fixture (cached) + prove + verify + a short summary.
    Demo {
        #[arg(long)]
        fixture_dir: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
    },
    /// GPU micro-benchmarks and a whole 2 KiB PoRep proof against floors and sppark (a GPU machine).
    GpuBench(gpu_bench::GpuBenchArgs),
    /// Partition synthesis, the reference path against the compiled circuit, in the same
    /// run: times, ratio, the compiled circuit's size; witnesses checked equal.
    SynthBench {
        /// C1 output [default: the 2 KiB fixture's].
        #[arg(long, conflicts_with = "input")]
        c1: Option<PathBuf>,
        /// A WinningPoSt, WindowPoSt or SnapDeals input (`kinds/*.json`, real or shape-only)
        /// instead of a C1 output: partition 0 on the compiled path in every core against
        /// one thread, alternating, witnesses compared (medians of the rounds).
        #[arg(long, conflicts_with = "compiled_only")]
        input: Option<PathBuf>,
        /// With --input: the reference path once too, its assignment compared.
        #[arg(long, requires = "input")]
        reference: bool,
        /// Rounds of each, alternating; the best of each is compared.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Only the compiled path, no reference: each round on 4 KiB pages with the parts
        /// joined, on huge pages, and on huge pages with the parts in place (the default),
        /// witnesses compared.
        #[arg(long)]
        compiled_only: bool,
        /// Only the compiled path, a, b and c evaluated in synthesis (today's) against
        /// deferred evaluation (the assignment only, issue #41), alternating: times and bytes
        /// held.
        #[arg(long, conflicts_with = "compiled_only")]
        deferred: bool,
    },
    /// The prover at a partition's shape (e.g. 32 GiB) on shape-only inputs: stage times,
    /// VRAM and host memory, ratio to the goal (a benchmark; its proofs cannot verify).
    ShapeBench(shape_bench::ShapeBenchArgs),
    /// N proofs of a shape-only C1 output (e.g. 32 GiB) through the engine, never the daemon:
    /// per-proof time, GPU busy fraction, timeline, peak RSS and VRAM (a benchmark on random
    /// parameters; its proofs cannot verify).
    EngineBench(engine_bench::EngineBenchArgs),
    /// Random parameters of a shape-only C1 output's exact circuit, written as filecoin-proofs
    /// names the real ones (.params, .vk, .meta), for provers that read them from disk (the
    /// comparison with upstream cuzk and supraseal-c2). Nothing proved with them verifies.
    ShapeParams(shape_params::Args),
    /// cuzk's parameter setup against bellperson's generator on the fixtures' circuits, in
    /// the same run with the same toxic waste: times, their ratio, and the bytes compared.
    SetupBench(setup_bench::Args),
    /// The H MSM's levers on paper (issue #35): additions, bucket memory, write fronts and
    /// VRAM per window width, and the plan's width and precomputed multiples per budget, from
    /// the plan's own model (no GPU; the model's times are estimates).
    MsmPlan(msm_plan::Args),
    /// WinningPoSt, a WindowPoSt partition and SnapDeals on the 2 KiB fixtures, cuzk against
    /// filecoin-proofs' own provers in the same run (real inputs: the proofs verify).
    KindsBench {
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        /// Rounds of each side; the best of each is compared.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// cuzk's prover against filecoin-proofs' seal_commit_phase2 on the same fixture, in the
    /// same run; prints the ratio.
    BenchC2 {
        #[arg(long)]
        fixture_dir: Option<PathBuf>,
        /// Rounds of each (alternating), best time kept.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: BackendKind,
    },
}

fn fixture(dir: Option<PathBuf>, size: u64) -> Result<Fixture> {
    let dir = dir.unwrap_or_else(|| default_fixture_dir(size));
    println!("fixture: {}", dir.display());
    let f = ensure_fixture_with(&dir, size, &progress::Stderr::new())?;
    if f.cached {
        println!("  cached: parameters and C1 output present and valid");
    } else {
        println!(
            "  generated: parameters {:.1} s, sealing {:.1} s",
            f.param_time.as_secs_f64(),
            f.seal_time.as_secs_f64()
        );
    }
    Ok(f)
}

/// `gen-fixture --shape-only`: DIR/c1.shape-only.json, checked by `PoRepJob::new` (the
/// shape check from filecoin-proofs' public parameters) before it is written.
fn shape_only_fixture(dir: Option<PathBuf>, size: u64) -> Result<()> {
    use cuzk_filecoin::shape_c1::{shape_only_c1, shape_only_json, shape_only_proof, SHAPE_ONLY_FILE, SHAPE_ONLY_NOTE};
    const SEED: u64 = 1;
    let dir = dir.unwrap_or_else(|| default_fixture_dir(size));
    let proof = shape_only_proof(size)?;
    println!("shape-only fixture ({SHAPE_ONLY_NOTE}): {}", dir.display());
    let t = Instant::now();
    let c1 = shape_only_c1(proof, SEED)?;
    let json = shape_only_json(&c1, SEED)?;
    let generated = t.elapsed();
    let t = Instant::now();
    let job = cuzk_filecoin::PoRepJob::new(&parse_c1(&json)?)
        .context("the shape-only C1 output fails the shape check (a cuzk bug)")?;
    let checked = t.elapsed();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(SHAPE_ONLY_FILE);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &json).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    let e = cuzk_filecoin::vanilla_shape::ExpectedShape::of(proof)?;
    println!("  proof type  {proof:?} (random contents, seed {SEED}; {SHAPE_ONLY_NOTE})");
    println!(
        "  structure   {} partition(s) x {} challenges, {} layers, {} DRG + {} expansion parents; tree D: {}; trees R and C: {}",
        job.partitions(),
        e.challenges_per_partition,
        e.layers,
        e.drg_parents,
        e.exp_parents,
        e.tree_d,
        e.tree_r
    );
    println!(
        "  checked     against filecoin-proofs' public parameters (PoRepJob::new) in {:.2} s; generated in {:.2} s",
        checked.as_secs_f64(),
        generated.as_secs_f64()
    );
    println!(
        "  c1          {} ({:.1} MiB; {SHAPE_ONLY_NOTE}: its partitions do not satisfy their circuit, the daemon refuses them)",
        path.display(),
        json.len() as f64 / (1u64 << 20) as f64
    );
    // The same in lotus-bench's envelope, for provers that take that (upstream cuzk).
    let envelope = dir.join(SHAPE_ONLY_FILE.replace(".json", ".envelope.json"));
    let tmp = envelope.with_extension("tmp");
    std::fs::write(&tmp, cuzk_filecoin::c1::to_envelope(&json, 1, size)).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &envelope).with_context(|| format!("renaming to {}", envelope.display()))?;
    println!("  envelope    {} (the same in lotus-bench's envelope, sector number 1)", envelope.display());
    println!("  params      none generated (32 GiB parameters are 47 GB; shape-bench and engine-bench make random ones, shape-params writes them to disk)");
    shape_only_kinds(&dir, size, SEED)
}

/// `gen-fixture --shape-only`'s PoSt and SnapDeals inputs:
/// DIR/kinds/{winning,window,snap}.shape-only.json (a WinningPoSt, a full WindowPoSt partition,
/// every partition of an update proof), each checked by the bench-only job constructor (the
/// job's shape checks) before it is written.
fn shape_only_kinds(dir: &Path, size: u64, seed: u64) -> Result<()> {
    use cuzk_filecoin::shape_kinds::{
        shape_only_kind_json, shape_only_post, shape_only_post_job, shape_only_post_proof, shape_only_snap, shape_only_snap_job,
        shape_only_update_proof,
    };
    use cuzk_filecoin::shape_marker::SHAPE_ONLY_NOTE;
    let kinds = dir.join("kinds");
    std::fs::create_dir_all(&kinds).with_context(|| format!("creating {}", kinds.display()))?;
    for winning in [true, false] {
        let proof = shape_only_post_proof(winning, size)?;
        let t = Instant::now();
        let input = shape_only_post(proof, None, seed)?;
        let generated = t.elapsed();
        let t = Instant::now();
        shape_only_post_job(&input).context("the shape-only PoSt input fails the job's shape checks (a cuzk bug)")?;
        let checked = t.elapsed();
        let json = shape_only_kind_json(&input, seed)?;
        let path = kinds.join(format!("{}.shape-only.json", input.kind));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &json).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
        let config = proof.as_v1_config();
        println!(
            "  {:<11} {} ({:.1} MiB; {SHAPE_ONLY_NOTE}: every comm_c is the shape-only tag, the daemon refuses it)",
            input.kind,
            path.display(),
            json.len() as f64 / (1u64 << 20) as f64
        );
        println!(
            "              {proof:?}: {} sector proof(s) x {} challenge(s); generated in {:.2} s, checked (shape, no verifier) in {:.2} s",
            input.vanilla_proofs.len(),
            config.challenge_count,
            generated.as_secs_f64(),
            checked.as_secs_f64()
        );
    }
    let proof = shape_only_update_proof(size)?;
    let t = Instant::now();
    let input = shape_only_snap(proof, seed)?;
    let generated = t.elapsed();
    let t = Instant::now();
    let job = shape_only_snap_job(&input).context("the shape-only SnapDeals input fails the job's shape checks (a cuzk bug)")?;
    let checked = t.elapsed();
    let json = shape_only_kind_json(&input, seed)?;
    let path = kinds.join("snap.shape-only.json");
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &json).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    println!(
        "  snap        {} ({:.1} MiB; {SHAPE_ONLY_NOTE}: every comm_c is the shape-only tag, the daemon refuses it)",
        path.display(),
        json.len() as f64 / (1u64 << 20) as f64
    );
    println!(
        "              {proof:?}: {} partition proof(s); generated in {:.2} s, checked (shape, no verifier) in {:.2} s",
        cuzk_filecoin::ProofJob::partitions(&job),
        generated.as_secs_f64(),
        checked.as_secs_f64()
    );
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::GenFixture { sector_size, out, shape_only: true, .. } => {
            shape_only_fixture(out, parse_sector_size(&sector_size)?)?
        }
        Cmd::GenFixture { sector_size, out, satisfying, .. } if satisfying.satisfying => {
            satisfying::run(out, parse_sector_size(&sector_size)?, &satisfying)?
        }
        Cmd::Referee(args) => satisfying::referee(&args)?,
        Cmd::GenFixture { sector_size, out, .. } => {
            let size = parse_sector_size(&sector_size)?;
            let f = fixture(out, size)?;
            println!("  proof type  {:?}", f.info.registered_proof);
            println!("  params      {}", f.param_dir().join(&f.info.params_file).display());
            println!("  c1          {}", f.c1_path().display());
            println!("  envelope    {}", f.envelope_path().display());
            println!("  miner id    {}   sector id {}", f.info.miner_id, f.info.sector_id);
            let k = cuzk_filecoin::fixture::ensure_kind_fixtures_with(&f.dir, size, &progress::Stderr::new())?;
            if k.cached {
                println!("  PoSt and SnapDeals: cached, parameters and vanilla proofs present and valid");
            } else {
                println!(
                    "  PoSt and SnapDeals: generated, parameters {:.1} s, sealing and update {:.1} s",
                    k.param_time.as_secs_f64(),
                    k.seal_time.as_secs_f64()
                );
            }
            println!("  kinds       {}", k.dir.join("kinds").display());
        }
        Cmd::Demo {
            fixture_dir,
            backend,
        } => {
            let f = fixture(fixture_dir, 2048)?;
            let be = select_backend(backend)?;
            let p = cuzk_groth16::progress::step(&progress::Stderr::new(), &format!("proving on {}", be.name()), || {
                prove_file(&f.c1_path(), &f.param_dir(), f.info.miner_id, Some(f.info.sector_id), be.as_ref())
            })?;
            print_timings(p.srs_load, &p.timings);
            let ok = cuzk_filecoin::verify_porep_c2(&parse_c1(&std::fs::read(f.c1_path())?)?.output, f.identity(), &p.bytes)?;
            if !ok {
                bail!("the demo proof does not verify");
            }
            println!(
                "demo: {:?} sector proved on {} in {:.2} s; {} bytes; verify_seal: OK",
                f.info.registered_proof,
                be.name(),
                p.total.as_secs_f64(),
                p.bytes.len()
            );
        }
        Cmd::GpuBench(args) => gpu_bench::run(&args)?,
        Cmd::ShapeBench(args) => shape_bench::run(&args)?,
        Cmd::EngineBench(args) => engine_bench::run(&args)?,
        Cmd::ShapeParams(args) => shape_params::run(&args)?,
        Cmd::SetupBench(args) => setup_bench::run(&args, &progress::Stderr::new())?,
        Cmd::MsmPlan(args) => msm_plan::run(&args)?,
        Cmd::KindsBench { backend, rounds } => {
            let be = select_backend(backend)?;
            kinds_bench::run(be.as_ref(), rounds)?
        }
        Cmd::SynthBench { input: Some(input), rounds, deferred, reference, .. } => {
            synth_kinds::run(&input, rounds.max(1), deferred, reference)?
        }
        Cmd::SynthBench { c1, rounds, compiled_only, deferred, .. } => synth_bench(c1, rounds.max(1), compiled_only, deferred)?,
        Cmd::BenchC2 {
            fixture_dir,
            rounds,
            backend,
        } => bench_c2(fixture(fixture_dir, 2048)?, rounds.max(1), select_backend(backend)?.as_ref())?,
    }
    Ok(())
}

/// cuzk against filecoin-proofs on the same C1, same process, same parameter files, rounds
/// alternating. Cold: filecoin-proofs' first call (it loads its parameters) against cuzk's
/// parameter load plus first proof. Warm (rounds >= 2): both with parameters in memory.
fn bench_c2(f: Fixture, rounds: usize, be: &dyn Backend) -> Result<()> {
    let raw = std::fs::read(f.c1_path())?;
    let c1 = parse_c1(&raw)?;
    let id = f.identity();
    println!("bench-c2: {:?}, {} round(s), cuzk backend {}", f.info.registered_proof, rounds, be.name());
    let t = Instant::now();
    let srs = Srs::load(&f.param_dir().join(&f.info.params_file))?;
    let srs_load = t.elapsed();
    let (mut ref_times, mut our_times) = (vec![], vec![]);
    for round in 1..=rounds {
        let t = Instant::now();
        let reference = filecoin_proofs_api::seal::seal_commit_phase2(
            c1.output.clone(),
            id.prover_id,
            id.sector_id.into(),
        )
        .map_err(|e| anyhow::anyhow!("filecoin-proofs seal_commit_phase2: {e:#}"))?;
        ref_times.push(t.elapsed());
        let t = Instant::now();
        let (ours, timings) = prove_porep_c2(&c1, id, &srs, be)?;
        our_times.push(t.elapsed());
        println!(
            "  round {round}: filecoin-proofs {:.3} s ({} bytes), cuzk {:.3} s ({} bytes)",
            ref_times[round - 1].as_secs_f64(),
            reference.proof.len(),
            our_times[round - 1].as_secs_f64(),
            ours.len()
        );
        if round == rounds {
            println!("  cuzk stages (last round):");
            print_timings(srs_load, &timings);
        }
    }
    let s = |d: Duration| d.as_secs_f64();
    println!("=== bench-c2 summary ===");
    let cold_ours = srs_load + our_times[0];
    println!(
        "  cold: filecoin-proofs {:.3} s (parameter load included), cuzk {:.3} s (srs load {:.3} s + prove {:.3} s): {:.2}x",
        s(ref_times[0]),
        s(cold_ours),
        s(srs_load),
        s(our_times[0]),
        s(ref_times[0]) / s(cold_ours)
    );
    if rounds >= 2 {
        let best_ref = ref_times[1..].iter().min().copied().unwrap_or_default();
        let best_ours = our_times.iter().min().copied().unwrap_or_default();
        println!(
            "  warm: filecoin-proofs best {:.3} s, cuzk best {:.3} s (parameters resident on both sides): {:.2}x",
            s(best_ref),
            s(best_ours),
            s(best_ref) / s(best_ours)
        );
    }
    println!("  (ratio = filecoin-proofs time / cuzk time; > 1 means cuzk is faster; both verify)");
    Ok(())
}

/// Reference and compiled synthesis of partition 0, alternating, in one process; the
/// compiled path twice per round, its labels hashed by storage-proofs' gadget and natively.
fn synth_bench(c1: Option<PathBuf>, rounds: usize, compiled_only: bool, deferred: bool) -> Result<()> {
    use cuzk_filecoin::synthesis::{clear_compiled, compiled_for, SynthesisPath};
    use cuzk_filecoin::LabelHashing;
    let path = c1.unwrap_or_else(|| default_fixture_dir(2048).join("c1.json"));
    let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let shape_only = cuzk_filecoin::shape_c1::is_shape_only(&raw);
    let input = parse_c1(&raw)?;
    drop(raw);
    let job = cuzk_filecoin::PoRepJob::new(&input)?;
    println!(
        "synth-bench: {:?}, partition 0 of {}, {} cores, {} round(s) of each{}",
        input.registered_proof(),
        job.partitions(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rounds,
        if shape_only { "; shape-only input: cannot verify, satisfaction not checked (bench only)" } else { "" }
    );
    if deferred {
        clear_compiled();
        synth_deferred::run(&job, shape_only, rounds)?;
        println!("  peak RSS {}", peak_rss());
        return Ok(());
    }
    // A shape-only witness never satisfies its constraints: time it without the check that
    // would refuse it (or record its circuit again).
    let (compiled_path, reference_path) = if shape_only {
        (SynthesisPath::CompiledUnchecked, SynthesisPath::Reference)
    } else {
        (SynthesisPath::Compiled, SynthesisPath::Reference)
    };
    let synth_with = |p: SynthesisPath, labels: LabelHashing| -> Result<(cuzk_groth16::PartitionWitness, cuzk_filecoin::SynthesisTimings)> {
        let (w, t, bad) = job.synthesize_unchecked_with(0, p, labels)?;
        match bad {
            Some(row) if !shape_only => bail!("the witness does not satisfy constraint {row}"),
            _ => Ok((w, t)),
        }
    };
    let synth = |p: SynthesisPath| synth_with(p, LabelHashing::default());
    clear_compiled();
    let t = Instant::now();
    let (recorded, rt) = synth(compiled_path)?;
    let record = t.elapsed();
    let compiled = compiled_for(&job.circuit_key()).context("no compiled circuit after recording")?;
    println!("  recording (first use): {:.3} s ({}); compiled circuit: {compiled}", record.as_secs_f64(), stages(&rt));
    if compiled_only {
        // Each round: the compiled path three ways, witnesses compared with the first: its
        // large vectors on 4 KiB pages and the parts joined before the products (what it
        // was before huge pages and in-place parts), on huge pages (cuzk_groth16::hugepages),
        // then on huge pages with the parts written in place (compiled::set_in_place; both are
        // the default). The time stops before the witness is freed; freeing is timed apart.
        use cuzk_groth16::{compiled::set_in_place, hugepages};
        drop(recorded);
        println!(
            "  transparent huge pages: kernel setting [{}]; recorded in {} part(s)",
            hugepages::kernel_setting(),
            compiled.recorded_parts().unwrap_or(1)
        );
        let variants = [("4 KiB pages, joined", false, false), ("huge pages, joined", true, false), ("huge pages, in place", true, true)];
        let mut best = [Duration::MAX; 3];
        for round in 1..=rounds {
            let mut first: Option<cuzk_groth16::PartitionWitness> = None;
            for (i, &(name, huge, in_place)) in variants.iter().enumerate() {
                hugepages::set_enabled(huge);
                set_in_place(in_place);
                let t = Instant::now();
                let (w, ft) = synth(compiled_path)?;
                let took = t.elapsed();
                best[i] = best[i].min(took);
                let compared = match &first {
                    None => {
                        first = Some(w);
                        String::new()
                    }
                    Some(f) => {
                        if *f != w {
                            bail!("round {round}: the witness ({name}) differs from the first one");
                        }
                        let t = Instant::now();
                        drop(w);
                        format!("; witness equal to the first; freeing it {:.3} s", t.elapsed().as_secs_f64())
                    }
                };
                println!("  round {round}: compiled, {name}, {:.3} s ({}){compared}", took.as_secs_f64(), stages(&ft));
            }
        }
        hugepages::set_enabled(true);
        set_in_place(true);
        println!(
            "=== compiled, best of {rounds}: {} {:.3} s, {} {:.3} s, {} {:.3} s: {:.2}x and {:.2}x against the first ===",
            variants[0].0,
            best[0].as_secs_f64(),
            variants[1].0,
            best[1].as_secs_f64(),
            variants[2].0,
            best[2].as_secs_f64(),
            best[0].as_secs_f64() / best[1].as_secs_f64(),
            best[0].as_secs_f64() / best[2].as_secs_f64()
        );
        println!("  peak RSS {}", peak_rss());
        return Ok(());
    }
    let (mut best_ref, mut best_fast) = (Duration::MAX, Duration::MAX);
    // Best compiled total and gadget stage, labels by the gadget [0] and natively [1].
    let mut best_labels = [(Duration::MAX, Duration::MAX); 2];
    for round in 1..=rounds {
        let t = Instant::now();
        let (reference, rt) = synth(reference_path)?;
        let r = t.elapsed();
        println!("  round {round}: reference {:.3} s ({})", r.as_secs_f64(), stages(&rt));
        for (i, labels) in [LabelHashing::Gadget, LabelHashing::Native].into_iter().enumerate() {
            let t = Instant::now();
            let (fast, ft) = synth_with(compiled_path, labels)?;
            let f = t.elapsed();
            if fast != reference || recorded != reference {
                bail!("round {round}: the compiled path's witness ({labels:?} labels) differs from the reference");
            }
            println!("  round {round}: compiled, {labels:?} labels, {:.3} s ({}); witness equal", f.as_secs_f64(), stages(&ft));
            let gadgets = ft.compiled.map_or(Duration::MAX, |c| c.assign);
            best_labels[i] = (best_labels[i].0.min(f), best_labels[i].1.min(gadgets));
            if labels == LabelHashing::default() {
                best_fast = best_fast.min(f);
            }
        }
        best_ref = best_ref.min(r);
    }
    let [(gadget_total, gadget_stage), (native_total, native_stage)] = best_labels;
    println!(
        "=== labels: gadget best {:.3} s (gadgets stage {:.3} s), native best {:.3} s (gadgets stage {:.3} s): \
         {:.2}x total, {:.2}x gadgets stage (gadget / native) ===",
        gadget_total.as_secs_f64(),
        gadget_stage.as_secs_f64(),
        native_total.as_secs_f64(),
        native_stage.as_secs_f64(),
        gadget_total.as_secs_f64() / native_total.as_secs_f64(),
        gadget_stage.as_secs_f64() / native_stage.as_secs_f64()
    );
    let witness_bytes = |w: &cuzk_groth16::PartitionWitness| {
        (w.a.len() + w.b.len() + w.c.len() + w.input_assignment.len() + w.aux_assignment.len()) * 32
    };
    println!(
        "=== synth-bench: reference best {:.3} s, compiled best {:.3} s: {:.2}x (reference / compiled); witness {:.1} MiB ===",
        best_ref.as_secs_f64(),
        best_fast.as_secs_f64(),
        best_ref.as_secs_f64() / best_fast.as_secs_f64(),
        witness_bytes(&recorded) as f64 / (1u64 << 20) as f64
    );
    println!("  peak RSS {}", peak_rss());
    Ok(())
}

fn main() -> ExitCode {
    report::PROCESS_START.get_or_init(Instant::now);
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cuzk_proto::error_text(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
