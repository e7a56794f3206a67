//! `cuzk-bench shape-params`: random parameters of a shape-only C1 output's exact circuit,
//! written under the names filecoin-proofs gives the real ones (`.params`, `.vk`, `.meta`), for
//! provers that read their parameters from disk: the comparison of issue #36, where cuzk,
//! upstream cuzk and supraseal-c2 each load this one file. RANDOM PARAMETERS: nothing proved
//! with them verifies; a benchmark input only, never a parameter cache to prove with.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{parse_c1, PoRepJob};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shape-only C1 output (`gen-fixture --shape-only`) whose circuit fixes the shape.
    #[arg(long)]
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
    if !cuzk_filecoin::shape_c1::is_shape_only(&raw) {
        bail!("{}: shape-params takes a shape-only C1 output (gen-fixture --shape-only): random parameters are for benches", args.c1.display());
    }
    let input = parse_c1(&raw)?;
    let proof = input.registered_proof();
    let job = PoRepJob::new(&input)?;
    let t = Instant::now();
    let shape = cuzk_filecoin::shape_c1::srs_shape(&job)?;
    println!("{proof:?}: the circuit's parameter shape {shape:?}, from its synthesis in {:.1} s", t.elapsed().as_secs_f64());

    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let params = cuzk_filecoin::params::seal_params_path(&args.out, proof)?;
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
    let sector_size = u64::from(proof.sector_size());
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
