//! `cuzk-lab engine-bench`: N proofs of one shape-only input through cuzk's engine (its
//! queue, memory budget, synthesis threads and device workers), never the daemon. The input
//! is a PoRep C1 output (cuzk_filecoin::shape_c1) or a WinningPoSt, WindowPoSt or SnapDeals
//! kind input (cuzk_filecoin::shape_kinds), as `gen-fixture --shape-only` writes them.
//!
//! Its runner is the engine's flow for that kind with two bench-only differences, because a
//! shape-only input can never satisfy its circuit or verify: partitions are synthesized
//! with `ProofJob::synthesize_unchecked`, and the proofs are not verified. The parameters are random with the exact section sizes of the circuit
//! (cuzk_groth16::shape::random_srs_with, made on GPU 0 or the host), held by the runner rather than the engine's residency.
//! Everything else (compiled synthesis, `cuzk_groth16::prove` on the device, the engine's
//! scheduling) is the production code. The output says all of this.
//!
//! It prints each proof's wall time, the steady-state time per proof, the GPU busy
//! fraction, a timeline of synthesis and GPU stages, peak host RSS and peak VRAM.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_engine::{
    CancelToken, Device, Engine, EngineConfig, JobPlan, JobRequest, PartitionProof, PartitionWork,
    PreparedJob, ProofKind, ProofOutput, ProofRunner, ProveContext, RunError, SrsRef,
};
use cuzk_filecoin::synthesis::SynthesisPath;
use cuzk_filecoin::{partition_footprint, ProofJob};
use cuzk_groth16::Srs;

use crate::engine_report::{
    print_beside, print_device_health, print_h_steps, print_report, print_throughput, print_urgent, secs, HStepSample, Span,
    BESIDE_INDEX, BESIDE_MOST,
};

#[derive(clap::Args)]
pub struct EngineBenchArgs {
    /// A shape-only input (`cuzk-lab gen-fixture --sector-size 32GiB --shape-only`): its
    /// C1 output (PoRep) or one of its kind inputs, `kinds/{winning,window,snap}.shape-only.json`.
    #[arg(long, alias = "input")]
    pub c1: PathBuf,
    /// Proofs submitted at once.
    #[arg(long, default_value_t = 3)]
    pub proofs: usize,
    #[arg(long, value_enum, default_value = "gpu")]
    pub backend: crate::shape_bench::ShapeBackend,
    /// The engine's synthesis threads (partitions synthesized at once); several values run
    /// one after the other in this process, on the same parameters (e.g. 1,2,3).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub synthesis_workers: Vec<usize>,
    /// Proving workers on each device.
    #[arg(long, default_value_t = 1)]
    pub gpu_workers: usize,
    /// Each GPU's memory budget: `full` (90% of free memory) or a size such as 14GiB (a
    /// 16 GB card's) or 22GiB (a 24 GB card's). The run ends with each GPU's arena checked
    /// back at its baseline (empty) once its caches are released.
    #[arg(long, default_value = "full")]
    pub vram_budget: String,
    /// Devices the engine proves on (GPU ordinals 0..N, or N CPU backends); several values
    /// run one after the other in this process, on the same parameters (e.g. 1,2: the
    /// throughput of two GPUs against one, in the same run).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub devices: Vec<usize>,
    /// Host memory budget in GiB [default: the engine's, 3/4 of the machine's memory]. It
    /// covers the parameters as the daemon's does: those the bench holds (until their host
    /// copy is released) are taken off it, and partitions get the rest.
    #[arg(long)]
    pub memory_budget_gib: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A second shape-only C1 output (e.g. 2 KiB) proved as CRITICAL jobs while the main
    /// proofs run: the latency of an urgent proof behind bulk work.
    /// Any shape-only input as --c1 takes, e.g. the 32 GiB WinningPoSt beside PoRep or
    /// SnapDeals proofs; it must differ from --c1 in kind or sector size.
    #[arg(long, alias = "urgent-input")]
    pub urgent_c1: Option<PathBuf>,
    /// Other shape-only inputs proved beside the main proofs, as `N:PATH` (N jobs of it,
    /// submitted right after the main ones at its kind's own priority), e.g.
    /// `--beside 3:kinds/window.shape-only.json`: a mixed load, each input's request to
    /// proof and prove() per partition printed apart. Repeatable; each must differ from the
    /// others, --c1 and --urgent-input in kind or sector size.
    #[arg(long, value_name = "N:PATH")]
    pub beside: Vec<String>,
    /// How many urgent jobs, submitted one at a time while the main proofs run.
    #[arg(long, default_value_t = 4)]
    pub urgent: usize,
    /// Seconds after the main proofs' submission that the first urgent job is submitted, and
    /// between one urgent job's end and the next one's submission.
    #[arg(long, default_value_t = 20.0)]
    pub urgent_every: f64,
    /// The urgent lane's threads (`urgent_synthesis_workers`) for each urgent job in turn;
    /// the engine is reconfigured between them (the same run measures the lane on and off).
    #[arg(long, value_delimiter = ',', default_value = "1,0")]
    pub urgent_lanes: Vec<usize>,
    /// Write the random parameters into an unlinked file in this directory as they are
    /// made, and give their host pages back once the device holds them all (the daemon's
    /// `[srs] host_release_dir`); the RSS is printed at the release.
    #[arg(long)]
    pub host_release_dir: Option<PathBuf>,
    /// In the runs with more devices than this index, this device fails mid-run: after
    /// `--fail-after` backend calls on it, every call fails as a lost GPU's does
    /// (`BackendError::Unavailable`, "injected failure"; cuzk_groth16::testing::
    /// FailingBackend around the real backend). Its partitions must be proved again on the
    /// other devices, every job must complete, and the device must be reported unhealthy in
    /// the engine's status and metrics: the bench fails otherwise.
    #[arg(long)]
    pub fail_device: Option<usize>,
    /// Synthesis pools: `shared` (one pool, the default) or `per-thread` (a pool per
    /// synthesis thread: `SynthesisTuning::per_thread_pools`, a bench variant).
    #[arg(long, default_value = "shared", value_parser = ["shared", "per-thread"])]
    pub synthesis_pools: String,
    /// Backend calls the failing device runs before it fails (a partition's prove() makes
    /// 7 to 9).
    #[arg(long, default_value_t = 20)]
    pub fail_after: u64,
    /// Where the random parameters are made [default: device with the GPU backend, host
    /// with the CPU one]; the same points either way.
    #[arg(long, value_enum)]
    pub params_on: Option<crate::shape_bench::ParamsOn>,
    /// The main C1's parameters read from this .params file (`shape-params` writes one of the
    /// circuit's exact shape under its real name) instead of made in memory: the load is
    /// timed, and the cold start is the process's start to the first proof. A file of
    /// another shape is refused, naming both.
    /// With --host-release-dir the points read are spilled there, as the daemon's engine
    /// spills parameters it loads.
    #[arg(long)]
    pub params_file: Option<PathBuf>,
    /// Deferred evaluation, as cuzkd runs it on GPUs: synthesis keeps the assignment only
    /// and the backend evaluates a, b and c from the compiled circuit (on the device for a
    /// GPU), and the engine budgets the lighter witness (`partition_footprint(_, true)`).
    /// Shape-only inputs cannot satisfy their circuit, so the evaluation is not checked here
    /// (`SynthesisPath::CompiledDeferredUnchecked`).
    #[arg(long)]
    pub deferred: bool,
}

/// The engine's budget for partitions: the whole budget `total` less the `held` bytes of
/// parameters the bench holds outside the engine; an error when not even one partition of
/// `footprint` bytes fits beside them.
fn partition_budget(total: u64, held: u64, footprint: u64) -> Result<u64> {
    let left = total.saturating_sub(held);
    if left < footprint {
        bail!(
            "host memory budget {:.1} GiB: the parameters take {:.1} GiB of it, which leaves {:.1} GiB, less than one \
             partition's {:.1} GiB (raise --memory-budget-gib, or release the host copy with --host-release-dir)",
            gib(total),
            gib(held),
            gib(left),
            gib(footprint)
        );
    }
    Ok(left)
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

struct Timeline {
    t0: Instant,
    spans: Mutex<Vec<Span>>,
    /// Every partition's prove() stages, summed, and how many.
    stages: Mutex<(cuzk_groth16::ProveTimings, u32)>,
    /// With one GPU and one worker on it (so that the GPU's last H step is this
    /// partition's): that GPU, and each partition's H step as the backend split it.
    h_gpu: Option<Arc<cuzk_gpu::GpuBackend>>,
    h_steps: Mutex<Vec<HStepSample>>,
}

impl Timeline {
    fn record<R>(&self, job: usize, partition: usize, gpu: bool, f: impl FnOnce() -> R) -> R {
        let start = self.t0.elapsed();
        let r = f();
        let end = self.t0.elapsed();
        let worker = std::thread::current().name().and_then(|n| n.strip_prefix("cuzk-worker-")?.parse().ok());
        self.spans.lock().unwrap_or_else(|p| p.into_inner()).push(Span { job, partition, gpu, worker, start, end });
        r
    }
}

/// The engine's PoRep flow for shape-only inputs (see the module doc).
struct ShapeRunner {
    /// The bench's C1 outputs (the main one, and the urgent jobs' one), each parsed once.
    shapes: Vec<Shape>,
    timeline: Arc<Timeline>,
    path: SynthesisPath,
}

/// One shape-only input the bench proves, found by its kind and sector size.
#[derive(Clone)]
struct Shape {
    kind: ProofKind,
    sector_size: u64,
    srs: Arc<Srs>,
    partitions: usize,
    footprint: u64,
}

impl ShapeRunner {
    fn shape(&self, request: &JobRequest) -> Result<&Shape, RunError> {
        self.shapes
            .iter()
            .find(|s| s.kind == request.kind && s.sector_size == request.sector_size)
            .ok_or_else(|| {
                RunError::BadRequest(format!("engine-bench has no {:?} shape of sector size {}", request.kind, request.sector_size).into())
            })
    }
}

/// One job of it: the checked input, and where its spans go.
struct ShapeJob {
    index: usize,
    job: Box<dyn ProofJob>,
    srs: Arc<Srs>,
    timeline: Arc<Timeline>,
    path: SynthesisPath,
}

/// `--beside N:PATH`: the count and the path.
fn parse_beside(arg: &str) -> Result<(usize, PathBuf)> {
    let (n, path) = arg
        .split_once(':')
        .with_context(|| format!("--beside {arg:?}: give N:PATH, e.g. 3:kinds/window.shape-only.json"))?;
    let n: usize = n.parse().with_context(|| format!("--beside {arg:?}: {n:?} is not a job count"))?;
    if n == 0 || n > 99 {
        bail!("--beside {arg:?}: between 1 and 99 jobs of an input");
    }
    Ok((n, PathBuf::from(path)))
}

fn job_index(request: &JobRequest) -> usize {
    request.request_id.rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn run_error(e: impl std::fmt::Display) -> RunError {
    RunError::Prove(e.to_string().into())
}

impl ProofRunner for ShapeRunner {
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError> {
        let shape = self.shape(request)?;
        Ok(JobPlan::new(shape.partitions, shape.footprint))
    }

    fn prepare(&self, request: &JobRequest, _: &JobPlan, cancel: &CancelToken) -> Result<Box<dyn PreparedJob>, RunError> {
        cancel.check()?;
        let shape = self.shape(request)?;
        // The input is parsed and checked here, as the daemon's runner does it.
        let job = crate::shape_input::shape_only_job(shape.kind, &request.vanilla_proof).map_err(|e| RunError::BadRequest(format!("{e:#}").into()))?;
        let srs = shape.srs.clone();
        Ok(Box::new(ShapeJob { index: job_index(request), job, srs, timeline: self.timeline.clone(), path: self.path }))
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        Err(RunError::BadRequest(format!("engine-bench holds its own random parameters, not {circuit_id:?}").into()))
    }

    /// The compiled circuits, as the daemon's runner counts them.
    fn held_bytes(&self) -> u64 {
        cuzk_filecoin::synthesis::compiled_bytes()
    }
}

impl PreparedJob for ShapeJob {
    fn partitions(&self) -> usize {
        self.job.partitions()
    }

    fn synthesize(&self, k: usize, cancel: &CancelToken) -> Result<PartitionWork, RunError> {
        cancel.check()?;
        let synthesize = || self.job.synthesize_unchecked(k, self.path);
        let witness = self.timeline.record(self.index, k, false, || {
            // As the daemon's runner: the urgent lane synthesizes on its own pool.
            if cuzk_engine::on_urgent_lane() {
                cuzk_filecoin::synthesis::urgent(synthesize)
            } else {
                synthesize()
            }
            .map(|(w, _, _)| w)
            .map_err(run_error)
        })?;
        Ok(PartitionWork { witness })
    }

    fn prove(&self, k: usize, work: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError> {
        ctx.cancel.check()?;
        let (r, s) = cuzk_groth16::prover::random_blinding(&mut rand::rngs::OsRng);
        let (proof, t) = self
            .timeline
            .record(self.index, k, true, || cuzk_groth16::prove_with(ctx.backend, &self.srs, work.witness, r, s, ctx.tuning))
            .map_err(|e| match &e {
                // A failing device: the engine proves the partition again on another one.
                cuzk_groth16::ProveError::Backend(b) => RunError::from_backend(b, e.to_string(), ctx.cancel.is_cancelled()),
                _ => run_error(e),
            })?;
        let index = self.index;
        // As the engine's workers do: the release on a thread of its own.
        // The peak is never reset: the one printed at the end is the whole run's, as
        // /usr/bin/time's is (a reset here once made a peak after the release read as one
        // over the whole run: bench/history/2026-12-06.md).
        self.srs.release_in_background_if_held(ctx.backend, move |bytes| {
            println!(
                "  host copy of the parameters released ({:.1} GiB) after job {index} partition {k}: host RSS {:.1} GiB, \
                 peak so far {:.1} GiB",
                bytes as f64 / (1u64 << 30) as f64,
                vm_rss_gib(),
                vm_hwm_gib(),
            );
        });
        if let Some(g) = &self.timeline.h_gpu {
            let last = g.last_report();
            let sample = HStepSample { path: last.h_step, wall: t.ntt_h, split: last.h_split, eval: last.eval };
            self.timeline.h_steps.lock().unwrap_or_else(|p| p.into_inner()).push(sample);
        }
        let mut st = self.timeline.stages.lock().unwrap_or_else(|p| p.into_inner());
        st.0.accumulate(&t);
        st.1 += 1;
        Ok(PartitionProof(proof))
    }

    fn finish(&self, proofs: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
        // Shape-only: the proofs cannot verify, so none is attempted (bench only).
        let mut bytes = Vec::new();
        for p in &proofs {
            bytes.extend_from_slice(&p.0.to_bytes());
        }
        Ok(ProofOutput { proof: bytes, verify: Duration::ZERO })
    }
}

fn status_gib(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / (1u64 << 20) as f64)
}

fn vm_hwm_gib() -> f64 {
    status_gib("VmHWM:")
}

fn vm_rss_gib() -> f64 {
    status_gib("VmRSS:")
}

/// A shape-only input read, its compiled circuit recorded, and random parameters of its
/// shape made (or read from `params_file`).
fn load_shape(
    path: &std::path::Path,
    seed: u64,
    spill: Option<&std::path::Path>,
    params_on: Option<crate::shape_bench::ParamsOn>,
    backend: crate::shape_bench::ShapeBackend,
    deferred: bool,
    params_file: Option<&std::path::Path>,
) -> Result<(Vec<u8>, Shape, cuzk_groth16::SrsShape)> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if !cuzk_filecoin::shape_marker::is_shape_only(&raw) {
        // cuzk-filecoin's C1 parser knows lotus-bench's envelope (only its form has a sector
        // number).
        if cuzk_filecoin::parse_c1(&raw).is_ok_and(|c| c.sector_num.is_some()) {
            bail!(
                "{}: a lotus-bench envelope; engine-bench takes a bare shape-only C1 (gen-fixture --shape-only \
                 writes c1.shape-only.json beside its envelope); real inputs go through cuzkd (cuzk-bench batch)",
                path.display()
            );
        }
        bail!(
            "{}: engine-bench takes shape-only inputs (gen-fixture --shape-only); real inputs go through \
             cuzkd (cuzk-bench batch), where every proof is verified",
            path.display()
        );
    }
    let kind = crate::shape_input::input_kind(&raw).with_context(|| path.display().to_string())?;
    let job = crate::shape_input::shape_only_job(kind, &raw).with_context(|| path.display().to_string())?;
    // The compiled circuit is recorded once per proof type and process, as the daemon does
    // on its first proof of a type; its witness gives the parameters' shape.
    let t = Instant::now();
    let shape = cuzk_filecoin::shape_c1::srs_shape(job.as_ref())?;
    println!(
        "  {kind:?} ({}, {} partition(s)): compiled circuit recorded in {:.1} s (before the run); parameter shape {shape:?}",
        job.circuit_key(),
        job.partitions(),
        t.elapsed().as_secs_f64()
    );
    let srs = match params_file {
        Some(file) => {
            let on_disk = cuzk_groth16::Srs::shape(file)?;
            if on_disk != shape {
                bail!("{}: parameters of shape {on_disk:?}, the circuit needs {shape:?}", file.display());
            }
            let t = Instant::now();
            let mut srs = cuzk_groth16::Srs::load(file)?;
            println!(
                "  parameters read from {} in {:.1} s ({:.1} GB; shape-only inputs: random parameters, nothing verifies)",
                file.display(),
                t.elapsed().as_secs_f64(),
                shape.point_bytes() as f64 / 1e9
            );
            if let Some(dir) = spill {
                let t = Instant::now();
                let bytes = srs.spill_to(dir)?;
                println!(
                    "  parameters spilled to {} in {:.1} s ({:.1} GiB); their host copy goes once the device holds them",
                    dir.display(),
                    t.elapsed().as_secs_f64(),
                    gib(bytes as u64)
                );
            }
            srs
        }
        None => crate::shape_bench::make_random_srs(&shape, seed, params_on, backend, spill)?,
    };
    let srs = Arc::new(srs);
    let entry = Shape {
        kind,
        sector_size: crate::shape_input::sector_size_of(kind, &raw)?,
        srs,
        partitions: job.partitions(),
        footprint: partition_footprint(&shape, deferred),
    };
    Ok((raw, entry, shape))
}

pub fn run(args: &EngineBenchArgs) -> Result<()> {
    let per_thread_pools = args.synthesis_pools == "per-thread";
    cuzk_filecoin::synthesis::configure(cuzk_filecoin::synthesis::SynthesisTuning {
        per_thread_pools,
        ..Default::default()
    })
    .map_err(anyhow::Error::msg)?;
    println!("synthesis pools: {}; evaluation of a, b, c: {}", args.synthesis_pools, if args.deferred { "deferred to the backend" } else { "in synthesis" });
    let (vram, vram_label) = crate::shape_bench::parse_budget(&args.vram_budget)?.vram();
    println!(
        "engine-bench: {} proofs of {} through the engine, {:?} synthesis worker(s), {} device worker(s), backend \
         {:?} (GPU memory budget {}), {} cores",
        args.proofs,
        args.c1.display(),
        args.synthesis_workers,
        args.gpu_workers,
        args.backend,
        args.vram_budget,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "SHAPE-ONLY INPUT AND RANDOM PARAMETERS: these proofs cannot verify and are not verified (a benchmark, \
         never a proof); the daemon verifies every proof"
    );
    // The arguments first: a 32 GiB input's circuit and parameters take a minute.
    if args.proofs >= BESIDE_INDEX {
        bail!("--proofs {}: at most {} in one run", args.proofs, BESIDE_INDEX - 1);
    }
    if args.beside.len() > BESIDE_MOST {
        bail!("--beside: at most {BESIDE_MOST} inputs");
    }
    let beside_args = args.beside.iter().map(|a| parse_beside(a)).collect::<Result<Vec<_>>>()?;
    let spill = args.host_release_dir.as_deref();
    let (raw, main, shape) = load_shape(&args.c1, args.seed, spill, args.params_on, args.backend, args.deferred, args.params_file.as_deref())?;
    let partitions = main.partitions;
    let mut shapes = vec![main.clone()];
    let urgent = match &args.urgent_c1 {
        Some(path) if args.urgent > 0 => {
            let (raw, entry, _) = load_shape(path, args.seed + 1, spill, args.params_on, args.backend, args.deferred, None)?;
            if (entry.kind, entry.sector_size) == (main.kind, main.sector_size) {
                bail!("--urgent-c1 must differ from --c1 in kind or sector size");
            }
            shapes.push(entry.clone());
            Some((raw, entry))
        }
        _ => None,
    };
    let mut beside: Vec<(usize, PathBuf, Vec<u8>, Shape)> = Vec::new();
    for (b, (n, path)) in beside_args.into_iter().enumerate() {
        let (raw, entry, _) = load_shape(&path, args.seed + 2 + b as u64, spill, args.params_on, args.backend, args.deferred, None)?;
        if shapes.iter().any(|s| (s.kind, s.sector_size) == (entry.kind, entry.sector_size)) {
            bail!("--beside {:?}: its kind and sector size are --c1's, --urgent-input's or another --beside's", args.beside[b]);
        }
        shapes.push(entry.clone());
        beside.push((n, path, raw, entry));
    }
    // The largest partition of any input must fit beside the parameters.
    let footprint = shapes.iter().map(|s| s.footprint).max().unwrap_or(main.footprint);

    let most = args.devices.iter().copied().max().unwrap_or(1);
    if args.devices.contains(&0) {
        bail!("--devices: 0 devices cannot prove");
    }
    // Each GPU opened once: its arena and resident parameters serve every run that uses it.
    let gpus: Vec<Arc<cuzk_gpu::GpuBackend>> = match args.backend {
        crate::shape_bench::ShapeBackend::Gpu => (0..most)
            .map(|i| {
                cuzk_gpu::GpuBackend::open(i, vram)
                    .map(Arc::new)
                    .with_context(|| format!("GPU {i} unavailable (--devices asks for {most})"))
            })
            .collect::<Result<_>>()?,
        crate::shape_bench::ShapeBackend::Cpu => Vec::new(),
    };
    let mut steady_by_run: Vec<(usize, usize, (Option<Duration>, Option<Duration>))> = Vec::new();
    for &ndev in &args.devices {
    for &workers in &args.synthesis_workers {
        // The device made to fail in this run, if any.
        let failing = args.fail_device.filter(|&f| f < ndev);
        let devices: Vec<Device> = (0..ndev)
            .map(|i| {
                let (name, backend): (String, Arc<dyn cuzk_groth16::Backend>) = match gpus.get(i) {
                    Some(g) => (format!("gpu{i} {}", g.device().name), g.clone()),
                    None if ndev == 1 => return Device::cpu().with_workers(args.gpu_workers),
                    None => (format!("cpu{i}"), Arc::new(cuzk_groth16::CpuBackend)),
                };
                let backend: Arc<dyn cuzk_groth16::Backend> = if failing == Some(i) {
                    let f = cuzk_groth16::testing::FailingBackend::new(backend);
                    f.fail_after(args.fail_after);
                    println!("  {name}: made to fail after {} backend calls (injected failure)", args.fail_after);
                    f
                } else {
                    backend
                };
                Device::new(name, backend).with_workers(args.gpu_workers)
            })
            .collect();
        let state = std::env::temp_dir().join(format!("cuzk-engine-bench-{}-{ndev}-{workers}", std::process::id()));
        let mut config = EngineConfig::new(&state);
        config.synthesis_workers = workers.max(1);
        config.gpu_workers_per_device = args.gpu_workers;
        let total = args.memory_budget_gib.map_or(config.host_memory_budget_bytes, |g| g << 30);
        // The bench holds its parameters itself, outside the engine's residency, so the
        // engine cannot count them as it counts the daemon's: what they take is taken off
        // its budget here (a 32 GiB run once let synthesis fill 94 GiB beside a 47 GB host
        // copy and was killed out of memory: bench/runs/2026-12-06-h200-compare-first).
        let held: u64 = shapes.iter().map(|s| s.srs.host_bytes() as u64).sum();
        config.host_memory_budget_bytes = partition_budget(total, held, footprint)?;
        config.max_spool_bytes = (raw.len() as u64 + (1 << 20)) * (args.proofs as u64 + 1)
            + beside.iter().map(|(n, _, raw, _)| (raw.len() as u64 + (1 << 20)) * *n as u64).sum::<u64>();
        // The compiled circuits (recorded above) the engine takes off itself, as the daemon's.
        let circuits = cuzk_filecoin::synthesis::compiled_bytes();
        let left = config.host_memory_budget_bytes.saturating_sub(circuits);
        println!(
            "--- {ndev} device(s), {workers} synthesis worker(s): host memory budget {:.1} GiB less {:.1} GiB of parameters the bench \
             holds and {:.1} GiB of compiled circuits = {:.1} GiB for partitions; each partition reserves {:.1} GiB (the engine's \
             formula), so at most {} partitions in memory at once (one at the least)",
            gib(total),
            gib(held),
            gib(circuits),
            gib(left),
            gib(footprint),
            (left / footprint.max(1)).max(1)
        );
        let h_gpu = (ndev == 1 && args.gpu_workers == 1).then(|| gpus.first().cloned()).flatten();
        let timeline = Arc::new(Timeline {
            t0: Instant::now(),
            spans: Mutex::new(Vec::new()),
            stages: Default::default(),
            h_gpu,
            h_steps: Mutex::new(Vec::new()),
        });
        let path = if args.deferred { SynthesisPath::CompiledDeferredUnchecked } else { SynthesisPath::CompiledUnchecked };
        let runner = Arc::new(ShapeRunner { shapes: shapes.clone(), timeline: timeline.clone(), path });
        config.urgent_synthesis_workers = args.urgent_lanes.first().copied().unwrap_or(1);
        let engine = Engine::start(config.clone(), runner, devices)?;
        // Worker w's device, for each device's share of the timeline.
        let worker_devices: Vec<String> = engine.status().workers.iter().map(|w| w.device.clone()).collect();
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let t0 = timeline.t0;
        // The urgent job alone, before the main proofs: its standalone time.
        let standalone = match &urgent {
            Some((raw, entry)) => {
                let mut best = Duration::MAX;
                for i in 0..3 {
                    let id = format!("urgent-{}-{workers}-{}", std::process::id(), 900 + i);
                    best = best.min(urgent_job(&engine, &rt, &id, raw, entry)?);
                }
                println!("  urgent job ({} partition(s)) alone on the idle engine: {:.2} s (best of 3)", entry.partitions, secs(best));
                Some(best)
            }
            None => None,
        };
        let mut ids = Vec::new();
        for i in 0..args.proofs {
            let request = shape_request(format!("engine-bench-{}-{ndev}-{workers}-{i}", std::process::id()), &raw, &main);
            ids.push(engine.submit(request)?.job_id);
        }
        // The --beside jobs, each awaited on a task of its own: its end is taken as it
        // happens, whatever the main proofs do.
        let mut beside_waits = Vec::new();
        for (b, (n, _, raw, entry)) in beside.iter().enumerate() {
            for i in 0..*n {
                let id = format!("engine-bench-beside-{}-{ndev}-{workers}-{}", std::process::id(), BESIDE_INDEX + 100 * b + i);
                let request = shape_request(id, raw, entry);
                let submitted = t0.elapsed();
                let id = engine.submit(request)?.job_id;
                let engine = engine.clone();
                beside_waits.push((b, rt.spawn(async move {
                    let outcome = engine.await_job(&id, None).await;
                    (id, outcome, t0.elapsed().saturating_sub(submitted))
                })));
            }
        }

        // Urgent jobs while they run, from a thread of their own (the main proofs' end times
        // are taken as they happen).
        let urgent_thread = urgent.as_ref().map(|(raw, entry)| {
            let (engine, config, raw, entry) = (engine.clone(), config.clone(), raw.clone(), entry.clone());
            let (lanes, n, every) = (args.urgent_lanes.clone(), args.urgent, args.urgent_every);
            let handle = rt.handle().clone();
            std::thread::spawn(move || -> Result<Vec<(usize, Duration, Duration)>> {
                let mut runs = Vec::new();
                let mut lane = config.urgent_synthesis_workers;
                for i in 0..n {
                    std::thread::sleep(Duration::from_secs_f64(every));
                    let want = lanes.get(i * lanes.len() / n.max(1)).copied().unwrap_or(lane);
                    if want != lane {
                        let new = EngineConfig { urgent_synthesis_workers: want, ..config.clone() };
                        engine.reconfigure(new, &[None])?;
                        lane = want;
                    }
                    let id = format!("urgent-{}-{workers}-{}", std::process::id(), 1000 + i);
                    let at = t0.elapsed();
                    let took = handle.block_on(async { urgent_job_async(&engine, &id, &raw, &entry).await })?;
                    runs.push((lane, at, took));
                }
                Ok(runs)
            })
        });
        let mut done = Vec::new();
        for id in &ids {
            let outcome = rt.block_on(engine.await_job(id, None))?;
            let r = completed(id, outcome)?;
            done.push((id.clone(), t0.elapsed(), r.proof.len(), r.timings.gpu_compute));
        }
        let mut beside_done: Vec<Vec<Duration>> = vec![Vec::new(); beside.len()];
        for (b, wait) in beside_waits {
            let (id, outcome, took) = rt.block_on(wait)?;
            completed(&id, outcome?)?;
            beside_done[b].push(took);
        }
        let urgent_runs = match urgent_thread {
            Some(h) => Some(h.join().map_err(|_| anyhow::anyhow!("the urgent jobs' thread panicked"))??),
            None => None,
        };
        let health = print_device_health(&engine, failing)?;
        let _ = engine.drain(Duration::from_secs(5));
        drop(engine);
        let _ = std::fs::remove_dir_all(&state);

        let all = timeline.spans.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let spans: Vec<Span> = all.iter().filter(|s| s.job < BESIDE_INDEX).cloned().collect();
        let steady = print_report(&spans, &done, partitions, workers, ndev, &worker_devices);
        // The cold start: from the process's start (the C1 read, the circuit recorded, the
        // parameters read or made, the devices opened) to the first proof, in the first run.
        if let (Some(start), Some((_, first, _, _))) = (crate::report::PROCESS_START.get(), done.first()) {
            let before = timeline.t0.saturating_duration_since(*start);
            println!(
                "  cold start: the first proof {:.1} s after the process started ({:.1} s before the submission: C1, circuit, \
                 parameters, devices; then {:.1} s to the proof){}",
                secs(before + *first),
                secs(before),
                secs(*first),
                if workers != args.synthesis_workers[0] || ndev != args.devices[0] { "; a later run: from the process start, so the runs before it included" } else { "" }
            );
        }
        let tries = spans.iter().filter(|s| s.gpu).count();
        println!(
            "  {} prove() attempts for {} partitions ({} proved again after a device failure); {}",
            tries,
            partitions * args.proofs,
            tries.saturating_sub(partitions * args.proofs),
            health
        );
        steady_by_run.push((ndev, workers, steady));
        if !beside.is_empty() {
            let inputs: Vec<(String, usize)> =
                beside.iter().map(|(_, path, _, entry)| (format!("{:?} ({})", entry.kind, path.display()), entry.partitions)).collect();
            print_beside(&all, &inputs, &beside_done);
        }
        if let (Some(runs), Some(alone)) = (&urgent_runs, standalone) {
            print_urgent(&all, runs, alone);
        }
        print_h_steps(&timeline.h_steps.lock().unwrap_or_else(|p| p.into_inner()));
        let (st, n) = *timeline.stages.lock().unwrap_or_else(|p| p.into_inner());
        if n > 0 {
            let avg = |d: Duration| d.as_secs_f64() / n as f64;
            println!(
                "  prove() stages, average of {n} partitions: H step {:.2} s, H MSM {:.2} s, split after H {:.2} s \
                 (beside H {:.2} s), L {:.2} s, A {:.2} s, B_G1 {:.2} s, B_G2 {:.2} s, assembly {:.3} s; sum {:.2} s",
                avg(st.ntt_h),
                avg(st.msm_h),
                avg(st.split),
                avg(st.split_beside_h),
                avg(st.msm_l),
                avg(st.msm_a),
                avg(st.msm_b_g1),
                avg(st.msm_b_g2),
                avg(st.assembly),
                avg(st.total())
            );
        }
        if main.srs.host_released() {
            println!(
                "  peak host RSS over the whole run {:.1} GiB (now {:.1} GiB, after the parameters' host copy was \
                 released: {:.1} GB resident on the device only)",
                vm_hwm_gib(),
                vm_rss_gib(),
                shape.point_bytes() as f64 / 1e9
            );
        } else {
            println!(
                "  peak host RSS over the whole run {:.1} GiB (the random parameters' host copy included: {:.1} GB)",
                vm_hwm_gib(),
                shape.point_bytes() as f64 / 1e9
            );
        }
        for (i, g) in gpus.iter().take(ndev).enumerate() {
            let c = g.arena_counters();
            println!(
                "  gpu{i}: peak VRAM so far (arena high water) {:.1} GiB of a {:.1} GiB budget",
                c.high_water as f64 / (1u64 << 30) as f64,
                c.budget as f64 / (1u64 << 30) as f64
            );
        }
    }
    }
    print_throughput(&steady_by_run);
    for (i, g) in gpus.iter().enumerate() {
        g.release_caches()?;
        let c = g.arena_counters();
        println!("gpu{i} (budget {vram_label}) after release: arena {} bytes in {} buffers (baseline 0)", c.in_use, c.buffers);
        if c.in_use != 0 {
            bail!("gpu{i}: the arena is not back at its baseline: {} bytes held", c.in_use);
        }
    }
    Ok(())
}

/// A request for one job of a shape-only input, at its kind's own priority.
fn shape_request(request_id: String, raw: &[u8], shape: &Shape) -> JobRequest {
    JobRequest { request_id, vanilla_proof: raw.to_vec(), sector_size: shape.sector_size, ..JobRequest::new(shape.kind) }
}

/// A job's result once it has ended; an error unless it completed.
fn completed(id: &str, outcome: cuzk_engine::AwaitOutcome) -> Result<Arc<cuzk_engine::JobResult>> {
    let cuzk_engine::AwaitOutcome::Done(r) = outcome else { bail!("job {id} did not finish") };
    if r.status != cuzk_engine::JobStatus::Completed {
        bail!("job {id}: {:?}: {}", r.status, r.error.clone().unwrap_or_default());
    }
    Ok(r)
}

/// One CRITICAL job of the urgent shape: submitted, awaited, its latency.
fn urgent_job(engine: &Engine, rt: &tokio::runtime::Runtime, id: &str, raw: &[u8], shape: &Shape) -> Result<Duration> {
    rt.block_on(urgent_job_async(engine, id, raw, shape))
}

async fn urgent_job_async(engine: &Engine, id: &str, raw: &[u8], shape: &Shape) -> Result<Duration> {
    let t = Instant::now();
    let request = JobRequest { priority: Some(cuzk_engine::Priority::Critical), ..shape_request(id.to_string(), raw, shape) };
    let job = engine.submit(request)?.job_id;
    completed(id, engine.await_job(&job, None).await?).context("an urgent job")?;
    Ok(t.elapsed())
}

#[cfg(test)]
mod tests {
    use super::partition_budget;

    /// The parameters the bench holds leave the rest of the budget to partitions, and a
    /// budget they fill is refused with the sizes named.
    #[test]
    fn held_parameters_come_off_the_budget() {
        const G: u64 = 1 << 30;
        assert_eq!(partition_budget(94 * G, 44 * G, 4 * G).unwrap(), 50 * G);
        assert_eq!(partition_budget(16 * G, 0, 4 * G).unwrap(), 16 * G);
        let e = partition_budget(46 * G, 44 * G, 4 * G).unwrap_err().to_string();
        assert!(e.contains("46.0 GiB") && e.contains("44.0 GiB") && e.contains("2.0 GiB") && e.contains("4.0 GiB"), "{e}");
    }
}
