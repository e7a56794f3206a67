//! The proof rows (issue #36): cuzk and supraseal-c2 prove the same witnesses with the same
//! r and s, each in its own process, and the CPU backend is the referee. A peer's time is
//! printed only where its proofs equal the referee's (or, for a real PoRep, verify with
//! filecoin-proofs); otherwise the row says "not counted" and why.
//!
//! supraseal-c2 runs as `supraseal-c2-bench` (peers/supraseal), which reads the parameter
//! file itself, makes the same witnesses by the same library calls, proves `partitions` of
//! them in one call, and writes its warm-up call's proofs to a file.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk_gpu::{GpuBackend, VramBudget};
use cuzk_groth16::{CpuBackend, PartitionWitness, Proof, Srs};
use ff::{Field, PrimeField};

use crate::{hex, print_free_memory, rng, Args, RemoveOnDrop, Row, Stats};

/// What both provers prove: the witnesses, the parameters (in memory for cuzk, in `params`
/// for the peer) and the peer's arguments that make the same witnesses.
struct Case {
    label: String,
    witnesses: Vec<PartitionWitness>,
    srs: Srs,
    params: PathBuf,
    peer_args: Vec<String>,
    /// A real PoRep (the 2 KiB fixture): proofs are verified with filecoin-proofs.
    porep: Option<(cuzk_filecoin::PoRepJob, cuzk_filecoin::SectorIdentity)>,
}

/// The 2 KiB PoRep and each of `args.proof_shapes` (and `--shape`), each with the CPU
/// referee, cuzk on the GPU, and supraseal-c2 in its own process.
pub fn rows(args: &Args, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    // Each case is made and run inside `guarded`: one that cannot be made (a missing
    // fixture, a full disk) is a failure line, and the rows of the others still print.
    let bin = peer_binary(args);
    let bin = &bin;
    std::fs::create_dir_all(&args.shape_dir).with_context(|| format!("creating {}", args.shape_dir.display()))?;
    if !args.no_porep {
        crate::guarded("2 KiB PoRep", failures, |f| run_case(args, bin.as_ref().map_err(clone_err)?, porep_case(args)?, true, rows, f));
    }
    if let (Some(c1), Some(params)) = (&args.shape_c1, &args.shape_params) {
        crate::guarded("the shape-only C1", failures, |f| {
            run_case(args, bin.as_ref().map_err(clone_err)?, shape_c1_case(args, c1, params)?, args.referee_cpu_32gib, rows, f)
        });
    }
    // `--proof-shapes ""` gives one empty name: none.
    let mut shapes: Vec<String> = args.proof_shapes.iter().filter(|s| !s.is_empty()).cloned().collect();
    shapes.extend(args.shape.iter().cloned());
    for name in shapes {
        // The CPU referee at the 32 GiB shape takes minutes on 16 cores (204 s, 2026-12-04):
        // there, --referee-cpu-32gib decides; cuzk's GPU proof stands in for it otherwise,
        // and the row says so.
        let cpu = name != "32GiB" || args.referee_cpu_32gib;
        crate::guarded(&format!("{name} shape"), failures, |f| {
            let (case, _remove) = shape_case(args, &name)?;
            run_case(args, bin.as_ref().map_err(clone_err)?, case, cpu, rows, f)
        });
    }
    Ok(())
}

fn clone_err(e: &anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!("{e:#}")
}

fn peer_binary(args: &Args) -> Result<PathBuf> {
    let path = match &args.supraseal_bin {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("supraseal-c2-bench"),
    };
    if !path.is_file() {
        bail!("supraseal-c2-bench not found at {} (build peers/supraseal, or give --supraseal-bin)", path.display());
    }
    Ok(path)
}

fn porep_case(args: &Args) -> Result<Case> {
    use cuzk_filecoin::fixture::ensure_fixture;
    let f = ensure_fixture(&args.fixture_dir, 2048).with_context(|| format!("2 KiB fixture in {}", args.fixture_dir.display()))?;
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path())?)?;
    let job = cuzk_filecoin::PoRepJob::new(&c1)?;
    let params = f.param_dir().join(&f.info.params_file);
    let srs = Srs::load(&params)?;
    let witnesses = (0..job.partitions()).map(|k| Ok(job.synthesize(k)?.0)).collect::<Result<Vec<_>>>()?;
    let peer_args = vec!["--c1".into(), f.c1_path().display().to_string(), "--partitions".into(), witnesses.len().to_string()];
    Ok(Case { label: "2 KiB PoRep".into(), witnesses, srs, params, peer_args, porep: Some((job, f.identity())) })
}

fn shape_case(args: &Args, name: &str) -> Result<(Case, RemoveOnDrop)> {
    use cuzk_groth16::shape::{random_srs, shape_witness, PartitionShape};
    let shape = PartitionShape::parse(name).map_err(anyhow::Error::msg)?;
    let c1_path = match &args.mix_c1 {
        Some(p) => p.clone(),
        None => cuzk_filecoin::fixture::ensure_fixture(&args.fixture_dir, 2048)
            .with_context(|| format!("2 KiB fixture in {} (for the scalar mix)", args.fixture_dir.display()))?
            .c1_path(),
    };
    let t = Instant::now();
    let mix = cuzk_filecoin::shape_c1::witness_mix(&c1_path)?;
    let seed = 0x5eed;
    let w = shape_witness(&shape, &mix, seed);
    let srs = random_srs(&cuzk_groth16::prover::required_shape(&w), seed);
    let params = args.shape_dir.join(format!("porep-shape-{}.params", name.replace('^', "p")));
    // Removed on every exit, a failed write (a full disk) included.
    let remove = RemoveOnDrop(params.clone());
    let bytes = srs.write_params(&params)?;
    println!(
        "\n{name} PoRep partition shape: SHAPE-ONLY (random parameters, a drawn witness; these proofs cannot verify): \
         {} constraints, {:.1} GB parameter file, made in {:.1} s",
        w.num_constraints(),
        bytes as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    let n = args.shape_partitions.max(1);
    let peer_args = vec![
        "--shape".into(),
        name.into(),
        "--mix-c1".into(),
        c1_path.display().to_string(),
        "--seed".into(),
        seed.to_string(),
        "--partitions".into(),
        n.to_string(),
    ];
    // The peer proves n copies of the witness in one call (a sector's partitions share their
    // densities); cuzk proves the same witness with each partition's r and s.
    let witnesses = (0..n).map(|_| w.clone()).collect();
    Ok((Case { label: format!("{name} shape"), witnesses, srs, params, peer_args, porep: None }, remove))
}

/// A shape-only C1 output's first partitions (the circuit's own witnesses, unsatisfied) and
/// a parameter file of its shape, which both provers read.
fn shape_c1_case(args: &Args, c1: &Path, params: &Path) -> Result<Case> {
    let raw = std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
    if !cuzk_filecoin::shape_c1::is_shape_only(&raw) {
        bail!("{}: --shape-c1 takes a shape-only C1 output (gen-fixture --shape-only)", c1.display());
    }
    let input = cuzk_filecoin::parse_c1(&raw)?;
    let job = cuzk_filecoin::PoRepJob::new(&input)?;
    let n = args.shape_partitions.clamp(1, job.partitions());
    let t = Instant::now();
    let path = cuzk_filecoin::synthesis::SynthesisPath::CompiledUnchecked;
    let witnesses = (0..n).map(|k| Ok(job.synthesize_unchecked(k, path)?.0)).collect::<Result<Vec<_>>>()?;
    let synth = t.elapsed();
    let want = cuzk_groth16::prover::required_shape(&witnesses[0]);
    let on_disk = Srs::shape(params)?;
    if on_disk != want {
        bail!("{}: parameters of shape {on_disk:?}, the circuit needs {want:?}", params.display());
    }
    let t = Instant::now();
    let srs = Srs::load(params)?;
    println!(
        "\n{:?} shape-only C1 ({}): SHAPE-ONLY (random contents and parameters; these proofs cannot verify): {n} partition(s) \
         synthesized in {:.1} s, {} read in {:.1} s",
        input.registered_proof(),
        c1.display(),
        synth.as_secs_f64(),
        params.display(),
        t.elapsed().as_secs_f64()
    );
    let peer_args = vec!["--c1".into(), c1.display().to_string(), "--partitions".into(), n.to_string()];
    Ok(Case { label: format!("{:?} shape-only C1", input.registered_proof()), witnesses, srs, params: params.to_path_buf(), peer_args, porep: None })
}

fn run_case(args: &Args, bin: &Path, case: Case, cpu_referee: bool, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    let Case { label, witnesses, srs, params, peer_args, porep } = case;
    let n = witnesses.len();
    let constraints = witnesses[0].num_constraints();
    let mut r = rng(0x2c2 ^ n as u64);
    let blinding: Vec<(Scalar, Scalar)> = (0..n).map(|_| (Scalar::random(&mut r), Scalar::random(&mut r))).collect();

    // The referee.
    let t = Instant::now();
    let referee: Option<Vec<Proof>> = if cpu_referee {
        Some(witnesses.iter().zip(&blinding).map(|(w, &(r, s))| Ok(cuzk_groth16::prove(&CpuBackend, &srs, w.clone(), r, s)?.0)).collect::<Result<_>>()?)
    } else {
        None
    };
    if cpu_referee {
        println!("{}: the CPU backend's proofs (the referee) in {:.1} s", label, t.elapsed().as_secs_f64());
    }

    // cuzk on the GPU, every partition, then the device is given back.
    let gpu = GpuBackend::open(0, VramBudget::FractionOfFree(0.9)).context("cuzk's GPU backend did not open")?;
    let mut cuzk_proofs = Vec::new();
    for (w, &(r, s)) in witnesses.iter().zip(&blinding) {
        cuzk_proofs.push(cuzk_groth16::prove(&gpu, &srs, w.clone(), r, s)?.0);
    }
    // Timed rounds of partition 0 after that warm-up (its parameters resident).
    let (w0, (r0, s0)) = (&witnesses[0], blinding[0]);
    let mut times = Vec::new();
    let mut stable = true;
    for _ in 0..args.rounds {
        let copy = w0.clone();
        let t = Instant::now();
        let p = cuzk_groth16::prove(&gpu, &srs, copy, r0, s0)?.0;
        times.push(t.elapsed());
        stable &= p == cuzk_proofs[0];
    }
    drop(gpu);
    // The peer's process needs the host memory: at 32 GiB the parameters are 47 GB and each
    // witness 16.7 GB.
    drop(witnesses);
    drop(srs);
    let reference = referee.clone().unwrap_or_else(|| cuzk_proofs.clone());
    let mut cuzk_ok = referee.as_ref().is_none_or(|want| *want == cuzk_proofs) && stable;
    if !cuzk_ok {
        failures.push(format!("{}: cuzk's GPU proofs differ from the CPU backend's or between calls", label));
    }
    let cuzk_stats = Stats::of(times);

    // The peer, in its own process.
    let blinding_path = args.shape_dir.join("blinding.bin");
    let proofs_path = args.shape_dir.join("peer-proofs.bin");
    let _remove = (RemoveOnDrop(blinding_path.clone()), RemoveOnDrop(proofs_path.clone()));
    let bytes: Vec<u8> = blinding.iter().flat_map(|(r, s)| r.to_repr().into_iter().chain(s.to_repr())).collect();
    std::fs::write(&blinding_path, bytes)?;
    print_free_memory(&format!("before supraseal-c2-bench ({})", label));
    let out = Command::new(bin)
        .arg("--params")
        .arg(&params)
        .args(&peer_args)
        .arg("--blinding")
        .arg(&blinding_path)
        .arg("--rounds")
        .arg(args.rounds.to_string())
        .arg("--out")
        .arg(&proofs_path)
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines().chain(String::from_utf8_lossy(&out.stderr).lines()) {
        println!("  [supraseal-c2-bench] {line}");
    }
    let peer: Result<(Vec<Proof>, Stats)> = (|| {
        if !out.status.success() {
            bail!("supraseal-c2-bench failed ({})", out.status);
        }
        let raw = std::fs::read(&proofs_path)?;
        if raw.len() != n * cuzk_groth16::PROOF_BYTES {
            bail!("its proof file holds {} bytes, want {}", raw.len(), n * cuzk_groth16::PROOF_BYTES);
        }
        let proofs = raw.chunks(cuzk_groth16::PROOF_BYTES).map(|c| Proof::from_bytes(c.try_into().expect("proof bytes")).context("its proof is not a valid encoding")).collect::<Result<Vec<_>>>()?;
        Ok((proofs, Stats::of_printed(&stdout, n).context("its timing line is missing")?))
    })();

    let (note, peer_stats) = match peer {
        Err(e) => {
            failures.push(format!("{}: supraseal-c2: {e:#}", label));
            (format!("supraseal-c2: {e:#}; not counted"), None)
        }
        Ok((proofs, stats)) => {
            let equal = proofs == reference;
            let verified = porep.as_ref().map(|(job, id)| job.finish(&proofs, id.clone()).map(|_| ()));
            let referee_name = if cpu_referee { "the CPU backend's" } else { "cuzk's GPU proofs (the CPU referee is off at this size: --referee-cpu-32gib)" };
            let mut note = format!("{n} partition(s) per peer call; peer's proofs {} {referee_name}", if equal { "equal" } else { "DIFFER from" });
            if let Some(v) = &verified {
                note += &format!("; filecoin-proofs verify_seal: {}", if v.is_ok() { "verifies".into() } else { format!("DOES NOT VERIFY ({})", v.as_ref().unwrap_err()) });
            }
            let counted = equal || verified.as_ref().is_some_and(|v| v.is_ok());
            if !equal {
                failures.push(format!("{}: supraseal-c2's proofs differ ({})", label, hex(&proofs[0].to_bytes())));
                // Without the CPU referee the reference is cuzk's own proof: when the two
                // disagree, neither is known right, and neither time counts.
                if !cpu_referee {
                    cuzk_ok = false;
                }
            }
            if counted {
                (note, Some(stats))
            } else {
                (note + "; not counted", None)
            }
        }
    };
    rows.push(Row {
        op: format!("{} partition proof, after synthesis", label),
        n: format!("{constraints} constraints"),
        cuzk: cuzk_ok.then_some(cuzk_stats),
        peer: peer_stats,
        note: if cuzk_ok { note } else { note + "; cuzk's proof not confirmed (it differs from the referee, between calls, or from the peer's with no CPU referee): cuzk not counted" },
    });
    Ok(())
}
