//! `synth-bench --deferred`: partition synthesis with a, b and c evaluated in it (today's
//! path) against deferred evaluation (the assignment only; the backend evaluates them,
//! issue #41), alternating in one run: times, the host bytes each witness holds, and the
//! ratios. The deferred witness's assignment is checked equal to the evaluated one's, and the
//! deferred circuit's evaluation equal to its a, b and c once.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use cuzk_filecoin::synthesis::SynthesisPath;
use cuzk_filecoin::PoRepJob;

pub fn run(job: &PoRepJob, shape_only: bool, rounds: usize) -> Result<()> {
    // Shape-only inputs never satisfy their circuit: both paths unchecked (bench only).
    let (evaluated, deferred) = if shape_only {
        (SynthesisPath::CompiledUnchecked, SynthesisPath::CompiledDeferredUnchecked)
    } else {
        (SynthesisPath::Compiled, SynthesisPath::CompiledDeferred)
    };
    let synth = |p: SynthesisPath| -> Result<(cuzk_groth16::PartitionWitness, Duration)> {
        let t = Instant::now();
        let (w, _, bad) = job.synthesize_unchecked(0, p)?;
        let took = t.elapsed();
        if let (Some(row), false) = (bad, shape_only) {
            bail!("the witness does not satisfy constraint {row}");
        }
        Ok((w, took))
    };
    // The recording (and, on a real input, the satisfied witness that lets later ones defer).
    let (first, took) = synth(evaluated)?;
    println!("  recording (first use): {:.3} s", took.as_secs_f64());
    let (mut evals, mut defs) = (Vec::new(), Vec::new());
    let (mut bytes_eval, mut bytes_def) = (0, 0);
    for round in 1..=rounds {
        let (w, te) = synth(evaluated)?;
        bytes_eval = w.host_bytes();
        drop(w);
        let (d, td) = synth(deferred)?;
        let Some(def) = d.deferred.as_ref() else { bail!("round {round}: the deferred path evaluated a, b and c") };
        if d.input_assignment != first.input_assignment || d.aux_assignment != first.aux_assignment {
            bail!("round {round}: the deferred assignment differs from the evaluated one");
        }
        if round == 1 {
            let ([a, b, c], _) = def.circuit.evaluate_checked(&d.input_assignment, &d.aux_assignment);
            if a != first.a || b != first.b || c != first.c {
                bail!("the deferred circuit's a, b, c differ from synthesis's");
            }
        }
        bytes_def = d.host_bytes();
        drop(d);
        println!("  round {round}: evaluated {:.3} s, deferred {:.3} s", te.as_secs_f64(), td.as_secs_f64());
        evals.push(te);
        defs.push(td);
    }
    // Median and spread (min-max) of the rounds; every round is warm (the recording ran first).
    let summary = |v: &mut Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let ((me, lo_e, hi_e), (md, lo_d, hi_d)) = (summary(&mut evals), summary(&mut defs));
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    println!(
        "=== synth-bench --deferred, {rounds} rounds: evaluated median {:.3} s ({:.3}-{:.3}; {:.3} GiB held), deferred \
         median {:.3} s ({:.3}-{:.3}; {:.3} GiB held): {:.2}x time, {:.2}x bytes (evaluated / deferred) ===",
        me.as_secs_f64(),
        lo_e.as_secs_f64(),
        hi_e.as_secs_f64(),
        gib(bytes_eval),
        md.as_secs_f64(),
        lo_d.as_secs_f64(),
        hi_d.as_secs_f64(),
        gib(bytes_def),
        me.as_secs_f64() / md.as_secs_f64(),
        bytes_eval as f64 / bytes_def.max(1) as f64
    );
    Ok(())
}
