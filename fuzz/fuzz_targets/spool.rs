//! Spool recovery from corrupt files: the input becomes a record in a fresh spool directory
//! (tmpfs), then `Spool::open` + `recover`, and, when everything was read, `Engine::start`
//! on that directory (CPU device, the real PoRep runner with an empty parameter directory:
//! a recovered job fails at planning) and a drain. The first byte picks where the rest goes
//! (the file names are those of job id "fuzz"):
//! - 0: `jobs/<hex>.req` (an accepted request);
//! - 1: `results/<hex>.json` (a stored result);
//! - 2: `jobs/<hex>.attempts`, next to a valid request for the same id;
//! - 3: both `jobs/<hex>.req` and `results/<hex>.json` (a crash between storing the result
//!   and removing the request).
//!
//! Checked: no panic; recovery never fails on a readable directory; every unreadable record
//! is moved to `corrupt/`; a second recovery finds nothing unreadable and the same jobs and
//! results (recovery is idempotent); an engine starts on what recovery accepted.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cuzk_engine::spool::{Recovered, Spool};
use cuzk_engine::{Device, Engine, EngineConfig, ProofRunner};
use libfuzzer_sys::fuzz_target;

/// Hex of the job id "fuzz", the spool's file name for it.
const ID_HEX: &str = "66757a7a";

/// A request record as `Spool::put_job` writes it (for mode 2).
const VALID_REQ: &str = r#"{"job_id":"fuzz","seq":1,"priority":"Normal","accepted_unix_ms":1,"digest":"00","payload_bytes":2,"request":{"request_id":"fuzz","kind":"PoRepSealCommit","priority":null,"sector_size":0,"registered_proof":0,"vanilla_proof":"e30=","vanilla_proofs":[],"sector_number":1,"miner_id":1000,"randomness":"","partition_index":0,"comm_r_old":"","comm_r_new":"","comm_d_new":""}}"#;

struct Harness {
    state: PathBuf,
    runner: Arc<dyn ProofRunner>,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = cuzk_fuzz::scratch_dir("spool");
        let runner = Arc::new(cuzk_fuzz::porep_runner_without_params(&dir));
        Harness {
            state: dir.join("state"),
            runner,
        }
    })
}

fn write(path: PathBuf, bytes: &[u8]) {
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// What a recovery found, comparable.
fn summary(r: &Recovered) -> (Vec<(String, u64, u32)>, Vec<String>) {
    (
        r.jobs
            .iter()
            .map(|(h, a)| (h.job_id.clone(), h.seq, *a))
            .collect(),
        r.results.iter().map(|r| r.job_id.clone()).collect(),
    )
}

fn recover(state: &Path) -> Recovered {
    Spool::open(state)
        .and_then(|s| s.recover())
        .unwrap_or_else(|e| panic!("recovery failed on a readable directory: {e}"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let h = harness();
    let state = &h.state;
    cuzk_fuzz::clear_dir(state);
    let spool = state.join("spool");
    for sub in ["jobs", "results"] {
        std::fs::create_dir_all(spool.join(sub)).unwrap();
    }
    let req = spool.join("jobs").join(format!("{ID_HEX}.req"));
    let result = spool.join("results").join(format!("{ID_HEX}.json"));
    match mode % 4 {
        0 => write(req, rest),
        1 => write(result, rest),
        2 => {
            write(req, VALID_REQ.as_bytes());
            write(spool.join("jobs").join(format!("{ID_HEX}.attempts")), rest);
        }
        _ => {
            write(req, rest);
            write(result, rest);
        }
    }

    let first = recover(state);
    for u in &first.unreadable {
        assert!(
            u.contains("corrupt"),
            "an unreadable record was not moved aside: {u}"
        );
    }
    let corrupt = std::fs::read_dir(spool.join("corrupt"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        corrupt,
        first.unreadable.len(),
        "corrupt/ does not hold the unreadable records"
    );
    let second = recover(state);
    assert!(
        second.unreadable.is_empty(),
        "a second recovery found {:?}",
        second.unreadable
    );
    assert_eq!(
        summary(&first),
        summary(&second),
        "recovery is not idempotent"
    );

    if first.jobs.is_empty() && first.results.is_empty() {
        return;
    }
    let mut config = EngineConfig::new(state);
    config.result_ttl = Duration::from_secs(60);
    let engine = Engine::start(config, h.runner.clone(), vec![Device::cpu()])
        .unwrap_or_else(|e| panic!("the engine refused a spool that recovery accepted: {e}"));
    let _ = engine.status();
    let report = engine.drain(Duration::ZERO);
    assert!(report.threads_stopped, "the engine's threads did not stop");
});
