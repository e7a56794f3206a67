//! supraseal-c2-bench: stock supraseal-c2 0.1.2 in a process of its own (issue #36), proving
//! N partitions in one `generate_groth16_proofs` call as it is built to, from a bellperson
//! `.params` file it reads itself. A bench only; cuzk-peers runs it and compares its proofs
//! with the CPU backend's (the referee) before its time counts.
//!
//! The witnesses are made here, outside the timer, by the same library calls cuzk-peers
//! makes: a PoRep shape's (`--shape`, `--mix-c1`, `--seed`; shape-only, cannot verify) or the
//! partitions of a real C1 output (`--c1`). Their densities are converted to supraseal-c2's
//! words before the timer starts. The blinding (r, s per partition) comes from `--blinding`,
//! a file of 64 bytes per partition (r then s, little-endian canonical), so that both sides
//! use the same. `--out` receives the first call's proofs, 192 bytes each, in bellperson's
//! layout; every later call's proofs are compared with them.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blstrs::{G1Affine, G2Affine, Scalar};
use clap::Parser;
use cuzk_groth16::{PartitionWitness, Proof};
use ff::PrimeField;

#[derive(Parser, Debug)]
#[command(about = "stock supraseal-c2 proving N partitions in one call, in its own process: a bench only")]
struct Args {
    /// The parameter file (bellperson's .params layout), read by supraseal-c2 itself.
    #[arg(long)]
    params: PathBuf,
    /// A PoRep partition shape (`32GiB`, or `2^N` for its proportions): shape-only witnesses.
    #[arg(long, conflicts_with = "c1")]
    shape: Option<String>,
    /// The C1 output whose partition 0 gives --shape its scalar mix.
    #[arg(long, requires = "shape")]
    mix_c1: Option<PathBuf>,
    /// The shape witness's seed (cuzk_groth16::shape::shape_witness); every partition of the
    /// call gets the same witness, as supraseal-c2 takes the densities of its first circuit
    /// for all of them (a sector's partitions share theirs).
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// A C1 output: its partitions are synthesized (cuzk-filecoin) and proved; a shape-only
    /// one's (`gen-fixture --shape-only`) without the satisfaction check (they cannot verify).
    #[arg(long)]
    c1: Option<PathBuf>,
    /// Partitions in one call (a --shape's are copies of one witness; a --c1's are its first N).
    #[arg(long, default_value_t = 1)]
    partitions: usize,
    /// r and s for each partition: 64 bytes each (r, then s; little-endian canonical).
    #[arg(long)]
    blinding: PathBuf,
    /// Timed calls after one warm-up call.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Where the warm-up call's proofs go (192 bytes each).
    #[arg(long)]
    out: PathBuf,
}

/// supraseal-c2's proof as its C++ side writes it: affine A, B, C in blst's layout.
#[repr(C)]
#[derive(Clone, Copy)]
struct SupraProof {
    a: G1Affine,
    b: G2Affine,
    c: G1Affine,
}

/// supraseal-c2's view of one witness. Its densities are read in place: supraseal-c2's words
/// (bit i of word i / 64 at i % 64) are cuzk's own layout, so nothing is converted.
fn assignment(w: &PartitionWitness) -> supraseal_c2::Assignment<Scalar> {
    // A density of no bits still needs a readable word.
    static ZERO: [u64; 1] = [0];
    let ptr = |d: &cuzk_groth16::Density| {
        let words = d.words();
        (if words.is_empty() { ZERO.as_ptr() } else { words.as_ptr() }) as *const usize
    };
    supraseal_c2::Assignment::<Scalar> {
        a_aux_density: ptr(&w.a_aux_density),
        a_aux_bit_len: w.a_aux_density.len(),
        a_aux_popcount: w.a_aux_density.total(),
        b_inp_density: ptr(&w.b_input_density),
        b_inp_bit_len: w.b_input_density.len(),
        b_inp_popcount: w.b_input_density.total(),
        b_aux_density: ptr(&w.b_aux_density),
        b_aux_bit_len: w.b_aux_density.len(),
        b_aux_popcount: w.b_aux_density.total(),
        a: w.a.as_ptr(),
        b: w.b.as_ptr(),
        c: w.c.as_ptr(),
        abc_size: w.a.len(),
        inp_assignment_data: w.input_assignment.as_ptr(),
        inp_assignment_size: w.input_assignment.len(),
        aux_assignment_data: w.aux_assignment.as_ptr(),
        aux_assignment_size: w.aux_assignment.len(),
    }
}

fn read_blinding(path: &PathBuf, n: usize) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() != 64 * n {
        bail!("{}: {} bytes, want 64 per partition for {n} partition(s)", path.display(), bytes.len());
    }
    let scalar = |b: &[u8], what: &str, k: usize| -> Result<Scalar> {
        let repr: [u8; 32] = b.try_into().expect("32 bytes");
        Option::from(Scalar::from_repr(repr)).with_context(|| format!("{}: partition {k}'s {what} is not a canonical scalar", path.display()))
    };
    let mut r = Vec::with_capacity(n);
    let mut s = Vec::with_capacity(n);
    for (k, c) in bytes.chunks(64).enumerate() {
        r.push(scalar(&c[..32], "r", k)?);
        s.push(scalar(&c[32..], "s", k)?);
    }
    Ok((r, s))
}

fn witnesses(args: &Args) -> Result<Vec<PartitionWitness>> {
    if let Some(name) = &args.shape {
        use cuzk_groth16::shape::{shape_witness, PartitionShape};
        let shape = PartitionShape::parse(name).map_err(anyhow::Error::msg)?;
        let c1_path = args.mix_c1.as_ref().context("--shape needs --mix-c1 (the C1 output that gives the scalar mix)")?;
        let mix = cuzk_filecoin::shape_c1::witness_mix(c1_path)?;
        let w = shape_witness(&shape, &mix, args.seed);
        return Ok((0..args.partitions).map(|_| w.clone()).collect());
    }
    let Some(path) = &args.c1 else { bail!("give --shape (with --mix-c1) or --c1") };
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let shape_only = cuzk_filecoin::shape_c1::is_shape_only(&raw);
    let job = cuzk_filecoin::PoRepJob::new(&cuzk_filecoin::parse_c1(&raw)?)?;
    if args.partitions > job.partitions() {
        bail!("{}: {} partition(s), --partitions {}", path.display(), job.partitions(), args.partitions);
    }
    if shape_only {
        // The circuit's own witnesses, unsatisfied: shape-only, they cannot verify (a bench).
        println!("{}: SHAPE-ONLY C1 output: the proofs cannot verify", path.display());
        let path = cuzk_filecoin::synthesis::SynthesisPath::CompiledUnchecked;
        return (0..args.partitions).map(|k| Ok(job.synthesize_unchecked(k, path)?.0)).collect();
    }
    (0..args.partitions).map(|k| Ok(job.synthesize(k)?.0)).collect()
}

fn peak_rss_gib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / (1u64 << 20) as f64)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.partitions == 0 {
        bail!("--partitions must be at least 1");
    }
    let t = Instant::now();
    let ws = witnesses(&args)?;
    let (r, s) = read_blinding(&args.blinding, ws.len())?;
    println!(
        "supraseal-c2-bench: {} partition(s) of {} constraints in one call; witnesses made in {:.1} s (outside the timer)",
        ws.len(),
        ws[0].num_constraints(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let srs = supraseal_c2::SRS::try_new(args.params.clone(), true)
        .map_err(|e| anyhow::anyhow!("supraseal-c2 could not read the parameters {}: {e}", args.params.display()))?;
    println!("parameters {} read by supraseal-c2 in {:.1} s", args.params.display(), t.elapsed().as_secs_f64());
    let assignments: Vec<_> = ws.iter().map(assignment).collect();

    let blank = SupraProof { a: G1Affine::default(), b: G2Affine::default(), c: G1Affine::default() };
    let call = || -> (Vec<u8>, Duration) {
        let mut out = vec![blank; ws.len()];
        let t = Instant::now();
        // Panics with the CUDA error on failure (supraseal-c2's own behaviour).
        supraseal_c2::generate_groth16_proofs(&assignments, &r, &s, &mut out, &srs);
        let took = t.elapsed();
        let bytes = out.iter().flat_map(|p| Proof { a: p.a, b: p.b, c: p.c }.to_bytes()).collect();
        (bytes, took)
    };
    let (first, cold) = call();
    std::fs::write(&args.out, &first).with_context(|| format!("writing {}", args.out.display()))?;
    println!("call 0 (warm-up, cold): {:.1} ms; its proofs in {}", ms(cold), args.out.display());
    let mut times = Vec::new();
    let mut same = true;
    for k in 1..=args.rounds {
        let (bytes, took) = call();
        let equal = bytes == first;
        same &= equal;
        println!("call {k}: {:.1} ms{}", ms(took), if equal { "" } else { "; ITS PROOFS DIFFER FROM CALL 0'S" });
        times.push(ms(took));
    }
    if !times.is_empty() {
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "supraseal-c2: {} partition(s) per call, median {median:.1} ms ({:.1}-{:.1}) over {} warm calls: {:.1} ms per partition",
            ws.len(),
            times[0],
            times[times.len() - 1],
            times.len(),
            median / ws.len() as f64
        );
    }
    println!("every call gave the warm-up call's proofs: {same}; peak host RSS {:.1} GiB (whole run)", peak_rss_gib());
    if !same {
        bail!("supraseal-c2 gave different proofs for the same inputs in different calls");
    }
    Ok(())
}
