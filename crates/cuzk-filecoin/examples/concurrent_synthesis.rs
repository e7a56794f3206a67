//! Two threads synthesizing partitions at once, as two of the engine's synthesis threads do:
//! each synthesis's wall time, to compare one shared synthesis pool (the default) with a
//! pool per thread (`per-thread`; `SynthesisTuning::per_thread_pools`, bench/history/2026-12-01.md). Input: the 2 KiB NI-PoRep shape-only C1 (13 partitions;
//! shape-only: cannot verify, its witnesses are only timed), its circuit recorded first.
//!
//!   cargo run --release -p cuzk-filecoin --example concurrent_synthesis -- per-thread
use cuzk_filecoin::shape_c1::{shape_only_c1, shape_only_json};
use cuzk_filecoin::synthesis::{configure, SynthesisPath, SynthesisTuning};
use cuzk_filecoin::{parse_c1, PoRepJob};
use filecoin_proofs_api::RegisteredSealProof;
use std::time::Instant;
fn main() {
    let pools = std::env::args().nth(1).unwrap_or_else(|| "shared".into());
    let per_thread_pools = match pools.as_str() {
        "shared" => false,
        "per-thread" => true,
        other => panic!("{other:?}: expected shared or per-thread"),
    };
    configure(SynthesisTuning { per_thread_pools, ..SynthesisTuning::default() }).unwrap();
    let proof = RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;
    let c1 = shape_only_c1(proof, 1).unwrap();
    let json = shape_only_json(&c1, 1).unwrap();
    let input = parse_c1(&json).unwrap();
    let job = PoRepJob::new(&input).unwrap();
    job.synthesize_unchecked(0, SynthesisPath::CompiledUnchecked).unwrap();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..2 {
            let job = &job;
            s.spawn(move || {
                let mut times = Vec::new();
                for k in (1 + t * 6)..(7 + t * 6) {
                    let t = Instant::now();
                    job.synthesize_unchecked(k, SynthesisPath::CompiledUnchecked).unwrap();
                    times.push(format!("{:.2}", t.elapsed().as_secs_f64()));
                }
                println!("thread {t}: {}", times.join(" "));
            });
        }
    });
    println!(
        "total {:.2} s ({pools} pools; shape-only input: cannot verify)",
        t0.elapsed().as_secs_f64()
    );
}
