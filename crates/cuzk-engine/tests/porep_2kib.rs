//! The engine with the real runner on the cached 2 KiB fixture (generated on first use by
//! cuzk-filecoin's `ensure_fixture`): a PoRep C2 job end to end, its proof verified with
//! filecoin-proofs; bad payloads and empty SnapDeals and WinningPoSt requests failing alone
//! beside it; parameter
//! preload and evict; a running real proof cancelled at a kernel boundary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_engine::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, ensure_kind_fixtures};
use cuzk_filecoin::{parse_c1, verify_porep_c2, FilecoinRunner};

/// The two tests of this file prove real PoRep jobs on the CPU backend and share the
/// process's compiled-circuit cache; run side by side on CI's 2 cores each doubled the
/// other's kernel times, and a cancelled job's wait for its kernel boundary ran past its
/// bound (19.1 s against 15 s, 2026-12-05). They take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn result(e: &Engine, id: &str) -> Arc<JobResult> {
    match e
        .await_job(id, Some(Duration::from_secs(900)))
        .await
        .unwrap()
    {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::Timeout { state } => panic!("{id} still {state:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn porep_2kib_through_the_engine_verifies_and_bad_jobs_fail_alone() {
    let _turn = take_turn();
    let fixture = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    ensure_kind_fixtures(&fixture.dir, 2048).expect("2 KiB PoSt and SnapDeals fixtures");
    let runner = FilecoinRunner::new(&fixture.param_dir(), Some(&fixture.parent_dir())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(
        EngineConfig::new(dir.path()),
        Arc::new(runner),
        vec![Device::cpu()],
    )
    .unwrap();

    let (already, load) = engine.preload_srs("porep-2k").unwrap();
    assert!(!already && load > Duration::ZERO);
    assert_eq!(
        engine.preload_srs("porep-2k").unwrap(),
        (true, Duration::ZERO)
    );
    let err = engine.preload_srs("porep-3k").unwrap_err().to_string();
    assert!(err.contains("circuit_id \"porep-3k\" is unknown"), "{err}");

    let envelope = std::fs::read(fixture.envelope_path()).unwrap();
    let id = fixture.identity();
    let real = JobRequest::porep(
        "porep-1000-1",
        envelope.clone(),
        fixture.info.miner_id,
        id.sector_id,
    );
    let mut garbled =
        JobRequest::porep("garbled", envelope[..envelope.len() / 2].to_vec(), 1000, 1);
    garbled.sector_size = 2048;
    let mut wrong_size = JobRequest::porep("wrong-size", envelope.clone(), 1000, 1);
    wrong_size.sector_size = 8 << 20;
    let snap = JobRequest {
        request_id: "snap".into(),
        ..JobRequest::new(ProofKind::SnapDealsUpdate)
    };
    let winning = JobRequest {
        request_id: "winning".into(),
        ..JobRequest::new(ProofKind::WinningPost)
    };
    for r in [garbled, real, wrong_size, snap, winning] {
        engine.submit(r).unwrap();
    }

    let r = result(&engine, "garbled").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("vanilla_proof: C1 input is not JSON"),
        "{r:?}"
    );
    let r = result(&engine, "wrong-size").await;
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("sector_size: sector size 8388608 bytes contradicts"),
        "{r:?}"
    );
    let r = result(&engine, "snap").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("comm_r_old: 0 bytes; expected 32"),
        "{r:?}"
    );
    let r = result(&engine, "winning").await;
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("miner_id is 0; expected the miner actor id"),
        "{r:?}"
    );

    let r = result(&engine, "porep-1000-1").await;
    assert_eq!(r.status, JobStatus::Completed, "{r:?}");
    assert_eq!(r.proof.len(), 192);
    let c1 = parse_c1(&envelope).unwrap();
    assert!(
        verify_porep_c2(&c1.output, id, &r.proof).unwrap(),
        "the engine's proof verifies"
    );
    let t = r.timings;
    eprintln!("stage timings: {t:?}");
    assert_eq!(t.srs_load, Duration::ZERO, "parameters were preloaded");
    assert!(
        t.synthesis > Duration::ZERO && t.gpu_compute > Duration::ZERO && t.verify > Duration::ZERO
    );
    assert!(t.prove >= t.gpu_compute && t.total >= t.prove);
    let st = engine.status();
    assert_eq!((st.completed, st.failed), (1, 4));
    assert_eq!(st.srs.len(), 1);
    assert_eq!(
        (st.srs[0].circuit_id.as_str(), st.srs[0].ref_count),
        ("porep-2k", 0)
    );
    assert_eq!(st.memory.in_use_bytes, 0);

    // A running real proof stops at its next kernel when cancelled.
    let again = JobRequest::porep(
        "cancel-me",
        envelope.clone(),
        fixture.info.miner_id,
        id.sector_id,
    );
    engine.submit(again).unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while engine.job("cancel-me").unwrap().state != JobState::Proving {
        assert!(Instant::now() < end);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its parameters cannot be evicted under it.
    let refused = engine.evict_srs("porep-2k").unwrap_err();
    assert!(refused.to_string().contains("in use by 1 running job(s) (cancel-me)"), "{refused}");
    assert_eq!(engine.status().srs.len(), 1, "a refused evict leaves them resident");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let t = Instant::now();
    assert!(engine.cancel("cancel-me").unwrap().was_running());
    let r = result(&engine, "cancel-me").await;
    eprintln!("cancel took {:?}", t.elapsed());
    assert_eq!(r.status, JobStatus::Cancelled, "{r:?}");
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "stopped at a kernel boundary, not at the end: cancel took {:?}",
        t.elapsed()
    );
    assert_eq!(engine.status().memory.in_use_bytes, 0);

    let (was, freed) = engine.evict_srs("porep-2k").unwrap();
    assert!(was && freed > 100 << 20, "freed {freed}");
    assert_eq!(engine.evict_srs("porep-2k").unwrap(), (false, 0));
    let report = engine.drain(Duration::from_secs(10));
    assert!(report.finished_in_time && report.threads_stopped && report.left_in_spool == 0);
}


/// Deferred evaluation through the engine (as cuzkd runs it on GPUs; here the CPU backend
/// evaluates a, b and c when it proves): the plan budgets the lighter witness, a quarter or
/// less of the full one's bytes and never less than its assignment, and two PoRep jobs
/// (the second deferred: the first proves the compiled circuit) complete with proofs that
/// verify.
#[tokio::test(flavor = "multi_thread")]
async fn deferred_evaluation_through_the_engine_budgets_less_and_verifies() {
    let _turn = take_turn();
    let fixture = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let envelope = std::fs::read(fixture.envelope_path()).unwrap();
    let id = fixture.identity();
    let request = |n: &str| JobRequest::porep(n, envelope.clone(), fixture.info.miner_id, id.sector_id);
    let full = FilecoinRunner::new(&fixture.param_dir(), Some(&fixture.parent_dir())).unwrap();
    let deferred = FilecoinRunner::new(&fixture.param_dir(), Some(&fixture.parent_dir())).unwrap().defer_evaluation(true);
    let (pf, pd) = (full.plan(&request("x")).unwrap().partition_bytes, deferred.plan(&request("x")).unwrap().partition_bytes);
    let shape = cuzk_groth16::Srs::shape(&cuzk_filecoin::params::seal_params_path(&fixture.param_dir(), parse_c1(&envelope).unwrap().registered_proof()).unwrap()).unwrap();
    assert!(pd * 4 <= pf, "deferred {pd} bytes against {pf}");
    assert!(pd >= ((shape.ic + shape.l) * 32) as u64, "the assignment itself is counted: {pd}");

    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(EngineConfig::new(dir.path()), Arc::new(deferred), vec![Device::cpu()]).unwrap();
    let c1 = parse_c1(&envelope).unwrap();
    for n in ["deferred-1", "deferred-2"] {
        engine.submit(request(n)).unwrap();
        let r = result(&engine, n).await;
        assert_eq!(r.status, JobStatus::Completed, "{r:?}");
        assert!(verify_porep_c2(&c1.output, id, &r.proof).unwrap(), "{n}: the proof verifies");
    }
}
