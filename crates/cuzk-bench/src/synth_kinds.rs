//! `synth-bench --input FILE`: the synthesis of a WinningPoSt, WindowPoSt partition or
//! SnapDeals partition 0 from its request fields (`kinds/*.json`, real or shape-only), on the
//! compiled path, in the synthesis pool (every core) against a one-thread pool, alternating in
//! one run, witnesses compared; the reference path (storage-proofs' circuit on bellperson's
//! constraint system) once when asked. Shape-only inputs (random contents, cannot verify) are
//! synthesized without the satisfaction check: benches only.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::synthesis::{clear_compiled, compiled_for, SynthesisPath};
use cuzk_filecoin::{ProofJob, SynthesisTimings};
use cuzk_groth16::PartitionWitness;

use crate::report::{median_spread, peak_rss, stages};

/// The job of a kind input: real inputs through the daemon's constructors (every check,
/// filecoin-proofs' vanilla verifier included), shape-only ones through the bench's.
pub fn kind_job(input: &KindInput, shape_only: bool) -> Result<Box<dyn ProofJob>> {
    use cuzk_filecoin::shape_kinds::{shape_only_post_job, shape_only_snap_job};
    Ok(match (input.kind.as_str(), shape_only) {
        ("winning" | "window", true) => Box::new(shape_only_post_job(input)?),
        ("winning" | "window", false) => Box::new(cuzk_filecoin::PoStJob::new(&input.post_request()?)?),
        ("snap", true) => Box::new(shape_only_snap_job(input)?),
        ("snap", false) => Box::new(cuzk_filecoin::SnapJob::new(&input.snap_request()?)?),
        (k, _) => bail!("kind {k:?}: expected winning, window or snap"),
    })
}

/// (inputs, aux, constraints) and the three densities' set bits of a witness.
pub fn describe(w: &PartitionWitness) -> String {
    format!(
        "{} inputs, {} aux, {} constraints; densities: a aux {}, b input {}, b aux {}",
        w.input_assignment.len(),
        w.aux_assignment.len(),
        w.num_constraints(),
        w.a_aux_density.total(),
        w.b_input_density.total(),
        w.b_aux_density.total()
    )
}

pub fn run(path: &Path, rounds: usize, deferred: bool, reference: bool) -> Result<()> {
    // Each calling thread synthesizes in a pool of its own (a bench variant of the synthesis
    // tuning): the main thread's has a thread per core, and a call made on a one-thread pool
    // runs there, so both sides of the comparison run the same code.
    cuzk_filecoin::synthesis::configure(cuzk_filecoin::synthesis::SynthesisTuning {
        per_thread_pools: true,
        ..Default::default()
    })
    .map_err(anyhow::Error::msg)?;
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let shape_only = cuzk_filecoin::shape_marker::is_shape_only(&raw);
    let input: KindInput =
        serde_json::from_slice(&raw).with_context(|| format!("{}: not a kind input (kinds/*.json)", path.display()))?;
    drop(raw);
    let t = Instant::now();
    let job = kind_job(&input, shape_only)?;
    let checked = t.elapsed();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "synth-bench: {} (registered proof {}), {} vanilla proof(s), partition 0 of {}, {cores} threads against 1, {rounds} round(s){}{}",
        input.kind,
        input.registered_proof,
        input.vanilla_proofs.len(),
        job.partitions(),
        if deferred { ", deferred evaluation (the assignment only)" } else { "" },
        if shape_only { "; shape-only input: cannot verify, satisfaction not checked (bench only)" } else { "" }
    );
    println!("  job checked in {:.3} s{}", checked.as_secs_f64(), if shape_only { " (shape checks; no vanilla verifier)" } else { "" });
    let compiled = match (deferred, shape_only) {
        (false, false) => SynthesisPath::Compiled,
        (false, true) => SynthesisPath::CompiledUnchecked,
        (true, false) => SynthesisPath::CompiledDeferred,
        (true, true) => SynthesisPath::CompiledDeferredUnchecked,
    };
    let synth = |p: SynthesisPath| -> Result<(PartitionWitness, SynthesisTimings, Option<usize>, f64)> {
        let t = Instant::now();
        let (w, st, bad) = job.synthesize_unchecked(0, p)?;
        let took = t.elapsed().as_secs_f64();
        if let (Some(row), false) = (bad, shape_only) {
            bail!("the witness does not satisfy constraint {row}");
        }
        Ok((w, st, bad, took))
    };
    clear_compiled();
    // The recording (on the evaluated path: deferred evaluation needs a recorded circuit).
    let record_path = if shape_only { SynthesisPath::CompiledUnchecked } else { SynthesisPath::Compiled };
    let (first, _, first_bad, took) = synth(record_path)?;
    let circuit = compiled_for(&job.circuit_key()).context("no compiled circuit after recording")?;
    println!("  recording (first use): {took:.3} s; compiled circuit: {circuit}");
    println!("  witness: {}", describe(&first));
    if let Some(row) = first_bad {
        println!("  first unsatisfied constraint: {row} (shape-only)");
    }
    if reference {
        let (r, _, bad, took) = synth(SynthesisPath::Reference)?;
        let equal = r.input_assignment == first.input_assignment && r.aux_assignment == first.aux_assignment;
        println!(
            "  reference (storage-proofs' circuit on bellperson's constraint system): {took:.3} s; assignment {} the compiled one's; first unsatisfied {bad:?}",
            if equal { "equal to" } else { "DIFFERS from" }
        );
        if !equal || bad != first_bad {
            bail!("the reference and compiled paths disagree");
        }
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let (mut ones, mut alls) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (w1, s1, _, t1) = one.install(|| synth(compiled))?;
        drop(w1);
        let (wn, sn, _, tn) = synth(compiled)?;
        let same = wn.input_assignment == first.input_assignment && wn.aux_assignment == first.aux_assignment;
        if !same {
            bail!("round {round}: the witness differs from the recording's");
        }
        drop(wn);
        println!(
            "  round {round}: 1 thread {t1:.3} s ({}), {cores} threads {tn:.3} s ({}): {:.2}x",
            stages(&s1),
            stages(&sn),
            t1 / tn
        );
        ones.push(t1);
        alls.push(tn);
    }
    let (m1, lo1, hi1) = median_spread(&mut ones);
    let (mn, lon, hin) = median_spread(&mut alls);
    println!(
        "  median of {rounds}: 1 thread {m1:.3} s ({lo1:.3}-{hi1:.3}), {cores} threads {mn:.3} s ({lon:.3}-{hin:.3}): speed-up {:.2}x",
        m1 / mn
    );
    println!("  peak RSS {} (the whole run)", peak_rss());
    Ok(())
}
