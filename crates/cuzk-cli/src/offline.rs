//! Proving and verifying in this process, without a daemon: `prove` (a PoRep C1 output to a
//! proof file, verified before it is written) and `verify` (filecoin-proofs' `verify_seal`
//! on a proof file). The lab (cuzk-lab: demo, bench-c2, kinds-bench, referee) proves
//! through the same functions.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::params::{seal_params_path, use_proof_dirs};
use cuzk_filecoin::{parse_c1, prove_porep_c2, prover_id_from_miner, JobTimings, SectorIdentity};
use cuzk_groth16::{Backend, CpuBackend, Srs};

/// The miner actor id when none is given: upstream cuzk-bench's default (`--miner-id 1000`).
pub const DEFAULT_MINER_ID: u64 = 1000;

/// The backend to prove with. `auto` takes the GPU when one is usable and says why not
/// otherwise; `gpu` insists and fails with the reason.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum BackendKind {
    Cpu,
    Gpu,
    /// The GPU when one is usable, otherwise the CPU.
    Auto,
}

/// The backend `kind` names, with a line on stdout saying which one it is.
pub fn select_backend(kind: BackendKind) -> Result<Box<dyn Backend>> {
    match kind {
        BackendKind::Cpu => Ok(Box::new(CpuBackend)),
        BackendKind::Gpu => {
            let gpu = cuzk_gpu::GpuBackend::new().context("GPU backend unavailable")?;
            println!("backend: gpu ({})", gpu.device().name);
            Ok(Box::new(gpu))
        }
        BackendKind::Auto => match cuzk_gpu::GpuBackend::new() {
            Ok(gpu) => {
                println!("backend: gpu ({})", gpu.device().name);
                Ok(Box::new(gpu))
            }
            Err(e) => {
                println!("backend: cpu (GPU backend unavailable: {e})");
                Ok(Box::new(CpuBackend))
            }
        },
    }
}

/// A duration as the stage table prints it.
pub fn secs(d: Duration) -> String {
    format!("{:>9.3} s", d.as_secs_f64())
}

/// Where a proof's time went, one stage a line.
pub fn print_timings(srs_load: Duration, t: &JobTimings) {
    let p = &t.prove;
    let rows = [
        ("srs load", srs_load),
        ("circuits", t.circuits),
        ("synthesis", t.synthesis),
        ("ntt / h", p.ntt_h),
        ("msm h", p.msm_h),
        ("scalar split", p.split),
        ("msm l", p.msm_l),
        ("msm a", p.msm_a),
        ("msm b_g1", p.msm_b_g1),
        ("msm b_g2", p.msm_b_g2),
        ("assembly", p.assembly),
        ("aggregation", t.aggregate),
        ("verification", t.verify),
    ];
    for (name, d) in rows {
        println!("  {name:<14}{}", secs(d));
    }
}

/// The sector number of a proof: `--sector-id`, else the envelope's SectorNum.
fn sector_number(given: Option<u64>, c1: &cuzk_filecoin::C1Input, path: &Path) -> Result<u64> {
    given.or(c1.sector_num).with_context(|| {
        format!(
            "{}: no sector number: the C1 output is bare JSON (no lotus-bench envelope with SectorNum); pass --sector-id",
            path.display()
        )
    })
}

/// A proof made by cuzk, with where the time went.
pub struct Proved {
    pub bytes: Vec<u8>,
    pub srs_load: Duration,
    pub timings: JobTimings,
    pub total: Duration,
}

/// Proves the PoRep C1 output at `c1_path` with the parameters in `param_dir`; the proof is
/// verified (filecoin-proofs) before it is returned.
pub fn prove_file(
    c1_path: &Path,
    param_dir: &Path,
    miner_id: u64,
    sector_id: Option<u64>,
    backend: &dyn Backend,
) -> Result<Proved> {
    let start = Instant::now();
    let raw = std::fs::read(c1_path).with_context(|| format!("reading {}", c1_path.display()))?;
    let c1 = parse_c1(&raw).with_context(|| format!("C1 input {}", c1_path.display()))?;
    use_proof_dirs(param_dir, None)?;
    let params = seal_params_path(param_dir, c1.registered_proof())?;
    let t = Instant::now();
    let srs = Srs::load(&params)?;
    let srs_load = t.elapsed();
    let id = SectorIdentity {
        prover_id: prover_id_from_miner(miner_id),
        sector_id: sector_number(sector_id, &c1, c1_path)?,
    };
    let (bytes, timings) = prove_porep_c2(&c1, id, &srs, backend)?;
    Ok(Proved {
        bytes,
        srs_load,
        timings,
        total: start.elapsed(),
    })
}

/// `verify`'s options.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The C1 output the proof was made from (bare or lotus-bench envelope).
    #[arg(long)]
    pub c1: PathBuf,
    /// The proof bytes (as seal_commit_phase2 writes them).
    #[arg(long)]
    pub proof: PathBuf,
    /// Directory with the verifying key (Filecoin naming).
    #[arg(long)]
    pub param_cache: PathBuf,
    /// Miner actor id (gives the prover id).
    #[arg(long, default_value_t = DEFAULT_MINER_ID)]
    pub miner_id: u64,
    /// Sector number [default: the envelope's SectorNum].
    #[arg(long)]
    pub sector_id: Option<u64>,
}

/// filecoin-proofs' `verify_seal` on a proof file; fails unless it verifies.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let c1 = parse_c1(&read(&args.c1)?).with_context(|| format!("C1 input {}", args.c1.display()))?;
    let proof = read(&args.proof)?;
    use_proof_dirs(&args.param_cache, None)?;
    let id = SectorIdentity {
        prover_id: prover_id_from_miner(args.miner_id),
        sector_id: sector_number(args.sector_id, &c1, &args.c1)?,
    };
    let t = Instant::now();
    if !cuzk_filecoin::verify_porep_c2(&c1.output, id, &proof)? {
        bail!("{}: the proof does not verify (filecoin-proofs verify_seal returned false)", args.proof.display());
    }
    println!(
        "verify_seal: OK ({:?}, {} bytes, miner {}, sector {}, {:.2} s)",
        c1.registered_proof(),
        proof.len(),
        args.miner_id,
        id.sector_id,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
