//! Parameters share the host memory budget with witnesses, on real (small) parameter files:
//! the 2 KiB WinningPoSt and WindowPoSt test parameters of the cached fixture, named by
//! scripted jobs (tests/common) that prove nothing but refuse to run without them. A budget
//! that holds one parameter set and a partition, not both sets: the second job's start
//! evicts the first set once it is idle, and an explicit evict is refused, naming the job,
//! while a job holds them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use cuzk_engine::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, ensure_kind_fixtures};
use cuzk_filecoin::FilecoinRunner;

#[tokio::test(flavor = "multi_thread")]
async fn idle_parameters_make_room_and_held_ones_are_never_evicted() {
    let fixture = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    ensure_kind_fixtures(&fixture.dir, 2048).expect("2 KiB PoSt fixtures");
    let real = FilecoinRunner::new(&fixture.param_dir(), Some(&fixture.parent_dir())).unwrap();
    let (winning, wpost) = (real.srs_for_circuit("winning-2k").unwrap(), real.srs_for_circuit("wpost-2k").unwrap());
    assert!(winning.bytes > 1 << 20 && wpost.bytes > 1 << 20, "{winning:?} {wpost:?}");
    let job = |srs: &SrsRef| Script {
        prove_ms: 400,
        footprint: 1000,
        srs: Some((srs.circuit_id.clone(), srs.path.clone(), srs.bytes)),
        ..Script::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    // One parameter set and a partition fit; the two sets do not.
    c.host_memory_budget_bytes = winning.bytes.max(wpost.bytes) + 10_000;
    let log = Arc::new(Scripted::default());
    let e = Engine::start(c, Arc::new(ScriptedRunner(log.clone())), vec![Device::cpu()]).unwrap();

    e.submit(porep("a", &job(&winning))).unwrap();
    wait_state(&e, "a", JobState::Proving);
    let refused = e.evict_srs("winning-2k").unwrap_err().to_string();
    assert!(refused.contains("in use by 1 running job(s) (a)"), "{refused}");
    let r = done(&e, "a").await;
    assert_eq!(r.status, JobStatus::Completed, "{r:?}");
    let st = e.status();
    assert_eq!(st.srs.len(), 1);
    assert_eq!((st.srs[0].circuit_id.as_str(), st.srs[0].ref_count), ("winning-2k", 0), "resident, idle");

    // b's parameters and partition do not fit beside a's idle ones: those go, although
    // WinningPoSt's are pinned by default, because nothing else idle could make the room.
    e.submit(porep("b", &job(&wpost))).unwrap();
    let r = done(&e, "b").await;
    assert_eq!(r.status, JobStatus::Completed, "{r:?}");
    assert!(r.timings.srs_load > Duration::ZERO, "b loaded its parameters");
    let resident: Vec<String> = e.status().srs.iter().map(|s| s.circuit_id.clone()).collect();
    assert_eq!(resident, ["wpost-2k"], "winning-2k was evicted for room");
    assert_eq!(e.status().memory.in_use_bytes, 0);
    assert_eq!(e.evict_srs("wpost-2k").unwrap(), (true, wpost.bytes), "idle once b ended");

    // A job whose parameters alone pass the budget fails, naming them.
    let mut small = config(dir.path().join("small").as_path());
    small.host_memory_budget_bytes = wpost.bytes;
    let e = Engine::start(small, Arc::new(ScriptedRunner(log.clone())), vec![Device::cpu()]).unwrap();
    e.submit(porep("too-big", &job(&wpost))).unwrap();
    let r = done(&e, "too-big").await;
    assert_eq!(r.status, JobStatus::Failed);
    let msg = r.error.as_deref().unwrap();
    assert!(msg.contains(&format!("{} for its parameters", wpost.bytes)), "{msg}");
}
