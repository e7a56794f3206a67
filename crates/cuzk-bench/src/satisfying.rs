//! `gen-fixture --satisfying`: a C1 output that satisfies its circuit at any interactive
//! PoRep size without sealing, with test parameters from cuzk's own setup
//! (`cuzk_filecoin::satisfying_c1`); and `referee`: one partition on the GPU against the CPU
//! backend. Its proofs are checked with the client's `cuzk-bench verify` (crate cuzk-cli), in
//! a process of its own.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::fixture::{human_size, FIXTURE_MINER_ID, FIXTURE_SECTOR_ID};
use cuzk_filecoin::satisfying_c1::{parse_hex32, refusal, write_satisfying_fixture, SatisfyingSpec, FIXTURE_SEED, FIXTURE_TICKET};

/// `gen-fixture`'s options for a satisfying C1 output.
#[derive(clap::Args)]
pub struct SatisfyingArgs {
    /// Write a C1 output whose partitions satisfy their circuit (interactive PoRep, any size:
    /// 2KiB, 8MiB, 512MiB, 32GiB, 64GiB) without sealing a sector, in seconds, and the proof
    /// type's test parameters from cuzk's own setup (32GiB: 47.4 GB, minutes on 16 cores):
    /// its proofs verify with filecoin-proofs. DIR: c1.json, c1.envelope.json,
    /// satisfying.json, params/ [default DIR: ~/.cache/cuzk/fixtures/<size>-satisfying].
    #[arg(long, conflicts_with = "shape_only")]
    pub satisfying: bool,
    /// With --satisfying: the C1 output only, no parameters.
    #[arg(long, requires = "satisfying")]
    pub no_params: bool,
    /// With --satisfying: the miner actor id [default: the fixture's, 1000].
    #[arg(long, requires = "satisfying")]
    pub miner_id: Option<u64>,
    /// With --satisfying: the sector number [default: the fixture's, 1].
    #[arg(long, requires = "satisfying")]
    pub sector_id: Option<u64>,
    /// With --satisfying: the ticket, 64 hex digits [default: a fixed fixture ticket].
    #[arg(long, requires = "satisfying")]
    pub ticket: Option<String>,
    /// With --satisfying: the PoRep seed (interactive randomness), 64 hex digits [default: a
    /// fixed fixture seed].
    #[arg(long, requires = "satisfying")]
    pub seed: Option<String>,
}

/// Where a satisfying fixture of `size` goes when no directory is given: beside the sealed
/// fixtures, `<size>-satisfying`.
fn default_dir(size: u64) -> PathBuf {
    let base = cuzk_filecoin::fixture::default_fixture_dir(size);
    base.with_file_name(format!("{}-satisfying", human_size(size)))
}

pub fn run(out: Option<PathBuf>, size: u64, args: &SatisfyingArgs) -> Result<()> {
    let proof = cuzk_filecoin::shape_c1::shape_only_proof(size)?;
    if let Some(why) = refusal(proof) {
        bail!(why);
    }
    let spec = SatisfyingSpec {
        proof,
        miner_id: args.miner_id.unwrap_or(FIXTURE_MINER_ID),
        sector_id: args.sector_id.unwrap_or(FIXTURE_SECTOR_ID),
        ticket: args.ticket.as_deref().map(parse_hex32).transpose().context("--ticket")?.unwrap_or(FIXTURE_TICKET),
        seed: args.seed.as_deref().map(parse_hex32).transpose().context("--seed")?.unwrap_or(FIXTURE_SEED),
    };
    let dir = out.unwrap_or_else(|| default_dir(size));
    println!("satisfying fixture: {}", dir.display());
    let f = write_satisfying_fixture(&dir, &spec, !args.no_params, &crate::progress::Stderr::new())?;
    let i = &f.info;
    println!("  proof type  {:?} (zero data, no sector sealed; its proofs verify with these parameters)", i.registered_proof);
    println!("  miner id    {}   sector id {}", i.miner_id, i.sector_id);
    println!("  ticket      {}\n  seed        {}", i.ticket, i.seed);
    println!("  comm_d      {}\n  comm_r      {}", i.comm_d, i.comm_r);
    println!(
        "  c1          {} ({:.1} MiB; generated and checked by storage-proofs' vanilla verifier in {:.2} s)",
        f.c1_path().display(),
        std::fs::metadata(f.c1_path()).map_or(0.0, |m| m.len() as f64 / (1u64 << 20) as f64),
        f.generate.as_secs_f64()
    );
    println!("  envelope    {} (sector number {})", f.envelope_path().display(), i.sector_id);
    match &f.params {
        None => println!("  params      none (--no-params)"),
        Some(p) if p.kept => println!("  params      {} kept (its .vk matches it)", p.path.display()),
        Some(p) => println!(
            "  params      {}: partition 0's {} constraints satisfied and recorded in {:.1} s, setup (QAP, points, writing) {:.1} s",
            p.path.display(),
            p.constraints,
            p.record.as_secs_f64(),
            p.setup.as_secs_f64()
        ),
    }
    println!("  peak RSS    {}", crate::report::peak_rss());
    Ok(())
}

/// `referee`'s options.
#[derive(clap::Args)]
pub struct RefereeArgs {
    /// The C1 output (bare or envelope); its partition must satisfy its circuit (a real or
    /// satisfying one, never shape-only).
    #[arg(long)]
    pub c1: PathBuf,
    /// Directory with the parameter files (Filecoin naming).
    #[arg(long)]
    pub param_cache: PathBuf,
    /// The partition proved on both backends.
    #[arg(long, default_value_t = 0)]
    pub partition: usize,
    /// Seed of the blinding values r and s that both backends use.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// One partition proved on the GPU (the daemon's path: a, b and c evaluated on the device)
/// and on the CPU backend, the referee, with the same r and s: the proof bytes must be equal.
pub fn referee(args: &RefereeArgs) -> Result<()> {
    use cuzk_filecoin::synthesis::SynthesisPath;
    use rand::SeedableRng;
    use std::time::Instant;
    let raw = std::fs::read(&args.c1).with_context(|| format!("reading {}", args.c1.display()))?;
    let c1 = cuzk_filecoin::parse_c1(&raw).with_context(|| format!("C1 input {}", args.c1.display()))?;
    cuzk_filecoin::params::use_proof_dirs(&args.param_cache, None)?;
    let job = cuzk_filecoin::PoRepJob::new(&c1)?;
    let k = args.partition;
    if k >= job.partitions() {
        bail!("--partition {k}: the C1 output has {} partitions", job.partitions());
    }
    let t = Instant::now();
    let srs = cuzk_groth16::Srs::load(&cuzk_filecoin::params::seal_params_path(&args.param_cache, c1.registered_proof())?)?;
    println!("referee: {:?} partition {k}; parameters loaded in {:.1} s", c1.registered_proof(), t.elapsed().as_secs_f64());
    let (r, s) = cuzk_groth16::prover::random_blinding(&mut rand_chacha::ChaCha20Rng::seed_from_u64(args.seed));
    let gpu = cuzk_cli::offline::select_backend(cuzk_cli::offline::BackendKind::Gpu)?;
    let mut proofs = Vec::new();
    for (name, backend, path) in
        [("gpu", gpu.as_ref(), SynthesisPath::CompiledDeferred), ("cpu", &cuzk_groth16::CpuBackend as &dyn cuzk_groth16::Backend, SynthesisPath::Compiled)]
    {
        let t = Instant::now();
        let (witness, _) = job.synthesize_with(k, path)?;
        let synthesized = t.elapsed();
        let t = Instant::now();
        let (proof, _) = cuzk_groth16::prove(backend, &srs, witness, r, s).with_context(|| format!("proving on the {name} backend"))?;
        println!(
            "  {name}: synthesized ({path:?}) in {:.1} s, proved in {:.1} s",
            synthesized.as_secs_f64(),
            t.elapsed().as_secs_f64()
        );
        proofs.push(proof.to_bytes());
    }
    if proofs[0] != proofs[1] {
        bail!("partition {k}: the GPU's proof differs from the CPU referee's with the same r and s");
    }
    println!("referee: equal proof bytes (192) for partition {k}, seed {}", args.seed);
    Ok(())
}
