//! `cuzk-lab kinds-bench`: WinningPoSt, a WindowPoSt partition and SnapDeals on the 2 KiB
//! fixtures (a really sealed and updated sector: these proofs verify), cuzk's prover on the
//! chosen backend against filecoin-proofs' own `generate_*_with_vanilla` (bellperson on the
//! CPU) in the same run. Parameters are loaded once for both sides before the rounds (cuzk's
//! resident parameters, filecoin-proofs' in-memory parameter cache). cuzk's time runs from
//! the request's vanilla proofs to verified bytes (its input checks and the filecoin-proofs
//! verification included); filecoin-proofs' call does not verify its output.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, ensure_kind_fixtures};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::params::{post_params_path, update_params_path};
use cuzk_filecoin::post::post_proof_from_wire;
use cuzk_filecoin::snap::update_proof_from_wire;
use cuzk_filecoin::{prove_job, prover_id_from_miner, Blinding, PoStJob, PoStRequest, ProofJob, SnapJob, SnapRequest};
use cuzk_groth16::{Backend, Srs};

fn job_of(i: &KindInput) -> Result<Box<dyn ProofJob>> {
    Ok(if i.kind == "snap" {
        Box::new(SnapJob::new(&SnapRequest {
            registered_proof: update_proof_from_wire(i.registered_proof)?,
            vanilla_proofs: &i.vanilla_proofs,
            comm_r_old: &i.comm_r_old,
            comm_r_new: &i.comm_r_new,
            comm_d_new: &i.comm_d_new,
        })?)
    } else {
        Box::new(PoStJob::new(&PoStRequest {
            registered_proof: post_proof_from_wire(i.registered_proof)?,
            randomness: &i.randomness,
            prover_id: prover_id_from_miner(i.miner_id),
            partition_index: i.partition_index as usize,
            vanilla_proofs: &i.vanilla_proofs,
        })?)
    })
}

fn comm(v: &[u8]) -> Result<[u8; 32]> {
    v.try_into().context("a 32-byte field")
}

/// filecoin-proofs' own proof of the same request (bellperson, CPU); its length.
fn reference(i: &KindInput) -> Result<usize> {
    let prover = prover_id_from_miner(i.miner_id);
    Ok(match i.kind.as_str() {
        "winning" => {
            let p = filecoin_proofs_api::post::generate_winning_post_with_vanilla(
                post_proof_from_wire(i.registered_proof)?,
                &comm(&i.randomness)?,
                prover,
                &i.vanilla_proofs,
            )?;
            p.iter().map(|(_, b)| b.len()).sum()
        }
        "window" => {
            filecoin_proofs_api::post::generate_single_window_post_with_vanilla(
                post_proof_from_wire(i.registered_proof)?,
                &comm(&i.randomness)?,
                prover,
                &i.vanilla_proofs,
                i.partition_index as usize,
            )?
            .0
            .len()
        }
        _ => {
            filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
                update_proof_from_wire(i.registered_proof)?,
                i.vanilla_proofs.iter().cloned().map(filecoin_proofs_api::PartitionProofBytes).collect(),
                comm(&i.comm_r_old)?,
                comm(&i.comm_r_new)?,
                comm(&i.comm_d_new)?,
            )?
            .0
            .len()
        }
    })
}

fn best(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

/// Prints one row per kind: best of `rounds` for cuzk on `backend` and for filecoin-proofs.
pub fn run(backend: &dyn Backend, rounds: usize) -> Result<()> {
    let dir = default_fixture_dir(2048);
    let f = ensure_fixture(&dir, 2048)?;
    let k = ensure_kind_fixtures(&f.dir, 2048)?;
    println!(
        "kinds-bench: 2 KiB fixtures (real sector, proofs verify), cuzk on {} vs filecoin-proofs \
         (bellperson, CPU), best of {rounds}",
        backend.name()
    );
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>9}",
        "kind", "cuzk s", "cuzk verify", "f-proofs s", "speedup"
    );
    for i in [&k.winning, &k.window, &k.snap] {
        let params = if i.kind == "snap" {
            update_params_path(&f.param_dir(), update_proof_from_wire(i.registered_proof)?)?
        } else {
            post_params_path(&f.param_dir(), post_proof_from_wire(i.registered_proof)?)?
        };
        let srs = Srs::load(&params)?;
        // Warm both: compiled circuit recorded, filecoin-proofs' parameters in its cache.
        prove_job(job_of(i)?.as_ref(), &srs, backend, &Blinding::Random)?;
        reference(i)?;
        let (mut ours, mut theirs, mut verify) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            let t = Instant::now();
            let (bytes, timings) = prove_job(job_of(i)?.as_ref(), &srs, backend, &Blinding::Random)?;
            ours.push(t.elapsed());
            verify.push(timings.verify);
            let t = Instant::now();
            let len = reference(i)?;
            theirs.push(t.elapsed());
            anyhow::ensure!(len == bytes.len(), "{}: filecoin-proofs wrote {len} bytes, cuzk {}", i.kind, bytes.len());
        }
        let (o, r) = (best(&ours), best(&theirs));
        println!(
            "{:<8} {:>12.4} {:>12.4} {:>12.4} {:>8.2}x",
            i.kind,
            o.as_secs_f64(),
            best(&verify).as_secs_f64(),
            r.as_secs_f64(),
            r.as_secs_f64() / o.as_secs_f64().max(1e-9)
        );
    }
    Ok(())
}
