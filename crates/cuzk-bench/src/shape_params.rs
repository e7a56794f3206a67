//! `cuzk-lab shape-params`: random parameters of a shape-only input's exact circuit (a C1
//! output, or a WinningPoSt, WindowPoSt or SnapDeals kind input),
//! written under the names filecoin-proofs gives the real ones (`.params`, `.vk`, `.meta`), for
//! provers that read their parameters from disk: the comparison of issue #36, where cuzk,
//! upstream cuzk and supraseal-c2 each load this one file. RANDOM PARAMETERS: nothing proved
//! with them verifies; a benchmark input only, never a parameter cache to prove with.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_engine::ProofKind;
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::parse_c1;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shape-only input (`gen-fixture --shape-only`: its C1 output, or a kind input
    /// `kinds/{winning,window,snap}.shape-only.json`) whose circuit fixes the shape.
    #[arg(long, alias = "input")]
    pub c1: PathBuf,
    /// The directory the three files go to (made if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// The random points' seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the points are made [default: the GPU when there is one, else the host].
    #[arg(long, value_enum)]
    pub params_on: Option<crate::shape_bench::ParamsOn>,
}

pub fn run(args: &Args) -> Result<()> {
    let raw = std::fs::read(&args.c1).with_context(|| format!("reading {}", args.c1.display()))?;
    if !cuzk_filecoin::shape_marker::is_shape_only(&raw) {
        bail!(
            "{}: shape-params takes a shape-only input (gen-fixture --shape-only: a C1 output or kinds/*.shape-only.json): \
             random parameters are for benches",
            args.c1.display()
        );
    }
    let kind = crate::shape_input::input_kind(&raw)?;
    let job = crate::shape_input::shape_only_job(kind, &raw)?;
    let sector_size = crate::shape_input::sector_size_of(kind, &raw)?;
    let t = Instant::now();
    let shape = cuzk_filecoin::shape_c1::srs_shape(job.as_ref())?;
    println!("{kind:?} ({}): the circuit's parameter shape {shape:?}, from its synthesis in {:.1} s", job.circuit_key(), t.elapsed().as_secs_f64());
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    // Under the name filecoin-proofs gives the proof type's parameters.
    let params = match kind {
        ProofKind::PoRepSealCommit => cuzk_filecoin::params::seal_params_path(&args.out, parse_c1(&raw)?.registered_proof())?,
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let input: KindInput = serde_json::from_slice(&raw)?;
            cuzk_filecoin::params::post_params_path(&args.out, cuzk_filecoin::post::post_proof_from_wire(input.registered_proof)?)?
        }
        ProofKind::SnapDealsUpdate => {
            let input: KindInput = serde_json::from_slice(&raw)?;
            cuzk_filecoin::params::update_params_path(&args.out, cuzk_filecoin::snap::update_proof_from_wire(input.registered_proof)?)?
        }
    };
    // A run cut short leaves its partial files (47 GB at 32 GiB): gone before this one.
    for stale in [params.with_extension("params.partial"), params.with_extension("partial")] {
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing the stale {}", stale.display()))
            }
            _ => {}
        }
    }
    let gpu = cuzk_gpu::devices().is_ok_and(|d| !d.is_empty());
    let backend = if args.params_on == Some(crate::shape_bench::ParamsOn::Host) || !gpu {
        crate::shape_bench::ShapeBackend::Cpu
    } else {
        crate::shape_bench::ShapeBackend::Gpu
    };
    let srs = crate::shape_bench::make_random_srs(&shape, args.seed, args.params_on, backend, None)?;

    // Each file whole under its final name or not at all, the .params last: a reader that
    // takes the .params file as the set's presence (bench/device/compare.sh) finds its .vk
    // and .meta beside it.
    let vk = params.with_extension("vk");
    let mut vk_bytes = Vec::new();
    srs.vk.write(&mut vk_bytes)?;
    write_whole(&vk, &vk_bytes)?;
    let meta = params.with_extension("meta");
    write_whole(&meta, format!("{{\"sector_size\":{sector_size}}}").as_bytes())?;
    let t = Instant::now();
    let tmp = params.with_extension("params.partial");
    let bytes = srs.write_params(&tmp)?;
    std::fs::rename(&tmp, &params)?;
    println!(
        "RANDOM PARAMETERS (nothing proved with them verifies; for benches): {} ({:.1} GB in {:.1} s), {} and {}",
        params.display(),
        bytes as f64 / 1e9,
        t.elapsed().as_secs_f64(),
        vk.file_name().unwrap_or_default().to_string_lossy(),
        meta.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok(())
}

fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}
