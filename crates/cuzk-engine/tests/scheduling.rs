//! The engine driven by a scripted runner (tests/common): priorities, idempotent ids,
//! cancel, await timeouts, failing requests, result expiry, the memory budget, drain and
//! restart, events and metrics.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::*;

fn quick() -> Script {
    Script {
        prove_ms: 20,
        ..Script::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn higher_priority_first_and_fifo_within_one() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(config(dir.path()));
    e.pause();
    let s = quick();
    let jobs = [
        ("n1", ProofKind::PoRepSealCommit, None),
        ("l1", ProofKind::PoRepSealCommit, Some(Priority::Low)),
        ("w1", ProofKind::WindowPostPartition, None), // High by default
        ("n2", ProofKind::SnapDealsUpdate, None),     // Normal by default
        ("win", ProofKind::WinningPost, None),        // Critical by default
        ("h1", ProofKind::PoRepSealCommit, Some(Priority::High)),
        ("c1", ProofKind::PoRepSealCommit, Some(Priority::Critical)),
        ("n3", ProofKind::PoRepSealCommit, Some(Priority::Normal)),
    ];
    for (id, kind, p) in jobs {
        e.submit(request(id, kind, p, &s)).unwrap();
    }
    assert_eq!(e.status().queue_depth(), 8);
    assert_eq!(
        e.submit(request(
            "x",
            ProofKind::PoRepSealCommit,
            Some(Priority::Low),
            &s
        ))
        .unwrap()
        .queue_position,
        9
    );
    e.cancel("x").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        log.synthesized.lock().unwrap().is_empty(),
        "paused: nothing may start"
    );
    e.resume();
    for (id, ..) in jobs {
        assert_eq!(done(&e, id).await.status, JobStatus::Completed);
    }
    let order = log.proved.lock().unwrap().clone();
    assert_eq!(order, ["win", "c1", "w1", "h1", "n1", "n2", "n3", "l1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_request_id_never_makes_a_second_job() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(config(dir.path()));
    let s = Script {
        prove_ms: 200,
        ..Script::default()
    };
    let first = e.submit(porep("porep-1000-7", &s)).unwrap();
    assert!(!first.existing);
    let again = e.submit(porep("porep-1000-7", &s)).unwrap();
    assert!(again.existing);
    assert_eq!(again.job_id, "porep-1000-7");
    let r = done(&e, "porep-1000-7").await;
    assert_eq!(r.proof, b"porep-1000-7");
    // After the result: a retry gets the stored result, still no new job.
    let late = e.submit(porep("porep-1000-7", &s)).unwrap();
    assert!(late.existing);
    assert_eq!(late.state, JobState::Completed);
    assert_eq!(done(&e, "porep-1000-7").await, r);
    assert_eq!(log.synthesized.lock().unwrap().as_slice(), ["porep-1000-7"]);
    // Empty ids get fresh, distinct ids.
    let a = e.submit(porep("", &quick())).unwrap();
    let b = e.submit(porep("", &quick())).unwrap();
    assert!(!a.job_id.is_empty() && a.job_id != b.job_id);
    let long = "x".repeat(MAX_ID + 1);
    let err = e.submit(porep(&long, &quick())).unwrap_err().to_string();
    assert!(err.contains("request_id is 121 bytes"), "{err}");
}

const MAX_ID: usize = cuzk_engine::job::MAX_REQUEST_ID_BYTES;

/// The request id is bound to a digest of its content: the same content attaches, other
/// content is refused while the job runs (never answered with the other content's proof)
/// and replaces the job once it has ended (a sector sealed again after a failure). The
/// binding survives a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_id_is_bound_to_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(config(dir.path()));
    let sector1 = Script { prove_ms: 300, ..Script::default() };
    let sector2 = Script { prove_ms: 10, footprint: 7, ..Script::default() };
    let (r1, r2) = (porep("porep-1000-7", &sector1), porep("porep-1000-7", &sector2));
    assert_ne!(r1.content_digest(), r2.content_digest());
    e.submit(r1.clone()).unwrap();
    // Another priority is still the same request.
    let mut urgent = r1.clone();
    urgent.priority = Some(Priority::Critical);
    assert!(e.submit(urgent).unwrap().existing);
    let err = e.submit(r2.clone()).unwrap_err();
    assert!(matches!(err, EngineError::Conflict { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("\"porep-1000-7\"") && msg.contains("different content"), "{msg}");
    let first = done(&e, "porep-1000-7").await;
    assert_eq!(first.digest.as_deref(), Some(r1.content_digest().as_str()));

    // Ended: the new content replaces it with a job of its own.
    let again = e.submit(r2.clone()).unwrap();
    assert!(!again.existing, "{again:?}");
    let second = done(&e, "porep-1000-7").await;
    assert_eq!(second.status, JobStatus::Completed);
    assert_eq!(second.digest.as_deref(), Some(r2.content_digest().as_str()));
    assert_eq!(log.synthesized.lock().unwrap().len(), 2);
    assert!(e.submit(r2.clone()).unwrap().existing, "the same content attaches to the new result");
    assert!(e.drain(Duration::from_secs(5)).threads_stopped);

    // After a restart the stored result is still bound to its content.
    let (e, log) = start(config(dir.path()));
    assert!(e.submit(r2.clone()).unwrap().existing);
    assert_eq!(done(&e, "porep-1000-7").await.digest, second.digest);
    assert!(!e.submit(r1.clone()).unwrap().existing, "old content again: a new job");
    assert_eq!(done(&e, "porep-1000-7").await.digest.as_deref(), Some(r1.content_digest().as_str()));
    assert_eq!(log.synthesized.lock().unwrap().len(), 1);
}

/// Beyond `max_queued_jobs` or `max_spool_bytes` nothing is accepted, and the error names
/// the limit; the accepted jobs are untouched and, once they drain, admission resumes.
#[tokio::test(flavor = "multi_thread")]
async fn admission_limits_refuse_with_the_limit_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_queued_jobs = 3;
    c.max_spool_bytes = 10_000;
    c.start_paused = true;
    let (e, _) = start(c);
    for i in 0..3 {
        e.submit(porep(&format!("q{i}"), &quick())).unwrap();
    }
    let err = e.submit(porep("q3", &quick())).unwrap_err();
    assert!(matches!(err, EngineError::ResourceExhausted { limit: "max_queued_jobs", .. }), "{err:?}");
    assert!(err.to_string().contains("max_queued_jobs = 3"), "{err}");
    // A known id still attaches at the limit.
    assert!(e.submit(porep("q1", &quick())).unwrap().existing);
    assert!(matches!(e.job("q3"), Err(EngineError::NotFound(_))));
    e.resume();
    for i in 0..3 {
        assert_eq!(done(&e, &format!("q{i}")).await.status, JobStatus::Completed);
    }
    let mut big = porep("big", &quick());
    big.vanilla_proofs = vec![vec![0; 10_001]];
    let err = e.submit(big).unwrap_err();
    assert!(err.to_string().contains("max_spool_bytes = 10000"), "{err}");
    e.submit(porep("after", &quick())).unwrap();
    assert_eq!(done(&e, "after").await.status, JobStatus::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_queued_and_running_jobs_and_memory_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.host_memory_budget_bytes = 100; // one job at a time: the second stays queued
    let (e, log) = start(c);
    let long = Script {
        prove_ms: 30_000,
        footprint: 100,
        ..Script::default()
    };
    e.submit(porep("running", &long)).unwrap();
    e.submit(porep("queued", &long)).unwrap();
    wait_state(&e, "running", JobState::Proving);
    assert_eq!(e.job("queued").unwrap().state, JobState::Queued);

    assert_eq!(e.cancel("queued").unwrap(), CancelOutcome::Dequeued);
    let r = done(&e, "queued").await;
    assert_eq!(r.status, JobStatus::Cancelled);

    let t = Instant::now();
    let c = e.cancel("running").unwrap();
    assert!(c.was_running());
    let r = done(&e, "running").await;
    assert_eq!(r.status, JobStatus::Cancelled);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "a running job stops at its next boundary"
    );
    assert_eq!(log.cancelled_in_prove.load(Ordering::SeqCst), 1);
    assert_eq!(
        log.held.load(Ordering::SeqCst),
        0,
        "synthesized data dropped"
    );
    assert_eq!(e.status().memory.in_use_bytes, 0);
    assert_eq!(e.status().cancelled, 2);
    assert_eq!(
        e.cancel("running").unwrap(),
        CancelOutcome::AlreadyFinished(JobStatus::Cancelled)
    );
    assert!(matches!(e.cancel("nope"), Err(EngineError::NotFound(_))));
    assert_eq!(
        log.synthesized.lock().unwrap().as_slice(),
        ["running"],
        "the cancelled queued job never ran"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn await_timeout_is_honoured_and_the_job_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _) = start(config(dir.path()));
    e.submit(porep(
        "slow",
        &Script {
            prove_ms: 1500,
            ..Script::default()
        },
    ))
    .unwrap();
    let t = Instant::now();
    let out = e
        .await_job("slow", Some(Duration::from_millis(100)))
        .await
        .unwrap();
    assert!(matches!(out, AwaitOutcome::Timeout { .. }), "{out:?}");
    assert!(
        t.elapsed() < Duration::from_millis(700),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(done(&e, "slow").await.status, JobStatus::Completed);
    assert!(matches!(
        e.await_job("unknown", None).await,
        Err(EngineError::NotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_request_fails_alone_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _) = start(config(dir.path()));
    let mut garbled = porep("garbled", &quick());
    garbled.vanilla_proof = b"{\"registered_proof\": [garbage".to_vec();
    e.submit(garbled).unwrap();
    e.submit(porep(
        "bad-plan",
        &Script {
            plan_fail: Some("sector_size: 7 is not a sector size".into()),
            ..quick()
        },
    ))
    .unwrap();
    e.submit(porep(
        "bad-prove",
        &Script {
            prove_fail: Some("partition 3 unsatisfied".into()),
            ..quick()
        },
    ))
    .unwrap();
    e.submit(porep("good", &quick())).unwrap();

    let r = done(&e, "garbled").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(
        r.error.as_deref().unwrap().contains("vanilla_proof"),
        "{r:?}"
    );
    let r = done(&e, "bad-plan").await;
    assert!(
        r.error.as_deref().unwrap().contains("sector_size: 7"),
        "{r:?}"
    );
    let r = done(&e, "bad-prove").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("partition 3 unsatisfied"),
        "{r:?}"
    );
    assert!(r.proof.is_empty());
    assert_eq!(done(&e, "good").await.status, JobStatus::Completed);
    let st = e.status();
    assert_eq!((st.completed, st.failed), (1, 3));
    assert_eq!(st.memory.in_use_bytes, 0);
    // An unknown wire proof kind is refused before it becomes a job.
    assert!(ProofKind::from_wire(7)
        .unwrap_err()
        .to_string()
        .contains("proof_kind 7 is unknown"));
}

/// One synthesis thread and one worker: if a panic killed either, the good jobs behind the
/// panicking ones would never finish.
#[tokio::test(flavor = "multi_thread")]
async fn a_panic_in_any_stage_fails_its_job_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.synthesis_workers = 1;
    c.gpu_workers_per_device = 1;
    let (e, log) = start(c);
    const STAGES: [&str; 5] = ["plan", "prepare", "synthesize", "prove", "finish"];
    for stage in STAGES {
        let s = Script { panic_in: Some(stage.into()), footprint: 1000, ..quick() };
        e.submit(porep(&format!("panics-in-{stage}"), &s)).unwrap();
    }
    e.submit(porep("good", &Script { footprint: 1000, ..quick() })).unwrap();
    for stage in STAGES {
        let r = done(&e, &format!("panics-in-{stage}")).await;
        assert_eq!(r.status, JobStatus::Failed, "{r:?}");
        let msg = r.error.as_deref().unwrap();
        assert!(
            msg.contains(&format!("the {stage} stage panicked: scripted panic in {stage}")),
            "{msg}"
        );
        assert!(r.proof.is_empty());
    }
    let r = done(&e, "good").await;
    assert_eq!((r.status, r.proof.as_slice()), (JobStatus::Completed, b"good".as_slice()));
    // The threads are still there for the next job, and nothing is held.
    e.submit(porep("after", &quick())).unwrap();
    assert_eq!(done(&e, "after").await.status, JobStatus::Completed);
    let st = e.status();
    assert_eq!((st.completed, st.failed, st.memory.in_use_bytes), (2, 5, 0));
    assert_eq!(log.held.load(Ordering::SeqCst), 0, "the panicking prove's witness was dropped");
    assert!(e.drain(Duration::from_secs(5)).threads_stopped);
}

#[tokio::test(flavor = "multi_thread")]
async fn results_expire_after_their_ttl_and_sooner_once_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.result_ttl = Duration::from_millis(300);
    c.fetched_result_ttl = Duration::from_secs(3600);
    let (e, _) = start(c);
    e.submit(porep("unfetched", &quick())).unwrap();
    wait_state(&e, "unfetched", JobState::Completed);
    let results = dir.path().join("spool/results");
    let end = Instant::now() + Duration::from_secs(2);
    while std::fs::read_dir(&results).unwrap().count() != 1 {
        assert!(
            Instant::now() < end,
            "the result was never written to the spool"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(800));
    assert!(matches!(e.job("unfetched"), Err(EngineError::NotFound(_))));
    assert_eq!(
        std::fs::read_dir(&results).unwrap().count(),
        0,
        "result file removed"
    );
    drop(e);

    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.result_ttl = Duration::from_secs(3600);
    c.fetched_result_ttl = Duration::from_millis(200);
    let (e, _) = start(c);
    e.submit(porep("fetched", &quick())).unwrap();
    e.submit(porep("kept", &quick())).unwrap();
    done(&e, "fetched").await;
    wait_state(&e, "kept", JobState::Completed);
    std::thread::sleep(Duration::from_millis(700));
    assert!(matches!(e.job("fetched"), Err(EngineError::NotFound(_))));
    assert_eq!(
        e.job("kept").unwrap().state,
        JobState::Completed,
        "unfetched result kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_budget_bounds_synthesis_lookahead() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.host_memory_budget_bytes = 250;
    c.synthesis_workers = 2;
    c.gpu_workers_per_device = 1;
    let (e, log) = start(c);
    let s = Script {
        synth_ms: 10,
        prove_ms: 150,
        footprint: 100,
        ..Script::default()
    };
    for i in 0..6 {
        e.submit(porep(&format!("j{i}"), &s)).unwrap();
    }
    e.submit(porep(
        "huge",
        &Script {
            footprint: 251,
            ..quick()
        },
    ))
    .unwrap();
    let mut seen_ahead = false;
    for i in 0..6 {
        let id = format!("j{i}");
        while e.job(&id).unwrap().state != JobState::Completed {
            let st = e.status();
            assert!(st.memory.in_use_bytes <= 250);
            seen_ahead |= e
                .list_jobs()
                .iter()
                .any(|j| j.state == JobState::Synthesized);
            std::thread::sleep(Duration::from_millis(3));
        }
        assert_eq!(done(&e, &id).await.status, JobStatus::Completed);
    }
    assert_eq!(
        log.max_held.load(Ordering::SeqCst),
        2,
        "one proving, one synthesized ahead, no more"
    );
    assert!(seen_ahead, "synthesis ran ahead of proving");
    assert_eq!(e.status().memory.high_water_bytes, 200);
    let r = done(&e, "huge").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("host_memory_budget_bytes = 250"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn drain_leaves_work_in_the_spool_for_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _) = start(config(dir.path()));
    e.submit(porep("done-before", &quick())).unwrap();
    done(&e, "done-before").await;
    e.submit(porep(
        "long",
        &Script {
            prove_ms: 2_000,
            ..Script::default()
        },
    ))
    .unwrap();
    wait_state(&e, "long", JobState::Proving);
    e.submit(porep("ahead", &quick())).unwrap();
    wait_state(&e, "ahead", JobState::Synthesized); // lookahead, waiting for the worker
    e.pause();
    e.submit(porep("q1", &quick())).unwrap();
    e.submit(porep("q2", &quick())).unwrap();
    assert!(matches!(
        Engine::start(
            config(dir.path()),
            std::sync::Arc::new(ScriptedRunner(Default::default())),
            vec![Device::cpu()]
        ),
        Err(EngineError::StateDirBusy(_))
    ));
    let report = e.drain(Duration::from_millis(300));
    assert!(!report.finished_in_time);
    assert_eq!(report.left_in_spool, 4);
    assert!(report.threads_stopped);
    assert!(matches!(
        e.submit(porep("late", &quick())),
        Err(EngineError::Draining)
    ));
    drop(e);

    let mut c = config(dir.path());
    c.start_paused = true;
    let (e, log) = start(c);
    for id in ["long", "ahead", "q1", "q2"] {
        assert_eq!(e.job(id).unwrap().state, JobState::Queued);
    }
    e.resume();
    for id in ["long", "ahead"] {
        let r = done(&e, id).await;
        assert_eq!(r.status, JobStatus::Completed, "{r:?}");
        assert_eq!(
            r.attempts, 1,
            "{id}: a drained run does not count as an attempt"
        );
    }
    assert_eq!(done(&e, "q1").await.status, JobStatus::Completed);
    assert_eq!(done(&e, "q2").await.status, JobStatus::Completed);
    // The result from before the restart is still there.
    assert_eq!(done(&e, "done-before").await.proof, b"done-before");
    assert_eq!(log.synthesized.lock().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn events_and_metrics_follow_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _) = start(config(dir.path()));
    let mut rx = e.subscribe();
    e.submit(porep("watched", &quick())).unwrap();
    let r = done(&e, "watched").await;
    assert!(r.timings.total >= r.timings.prove);
    assert!(r.timings.prove >= Duration::from_millis(20));
    let mut states = Vec::new();
    while states.last() != Some(&JobState::Completed) {
        let ev = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ev.job_id, "watched");
        states.push(ev.state);
    }
    use JobState::*;
    assert_eq!(
        states,
        [Queued, Synthesizing, Synthesized, Proving, Completed]
    );
    let m = e.metrics_text();
    assert!(m.contains("cuzk_proofs_completed_total{proof_kind=\"porep-c2\"} 1\n"), "{m}");
    assert!(m.contains("cuzk_proofs_completed_total{proof_kind=\"winning-post\"} 0\n"), "{m}");
    assert!(
        m.contains("cuzk_queue_depth{proof_kind=\"porep-c2\",priority=\"normal\"} 0\n"),
        "{m}"
    );
    // The job's partition went through each stage once, and the job's total is in its
    // histogram: the +Inf bucket and the count agree.
    for stage in ["synthesis", "synthesized_wait", "prove", "gpu_compute"] {
        let count = format!("cuzk_partition_stage_seconds_count{{proof_kind=\"porep-c2\",stage=\"{stage}\"}} ");
        let n: u64 = m.lines().find_map(|l| l.strip_prefix(count.as_str())).and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(n >= 1, "{stage}: {m}");
    }
    assert!(m.contains("cuzk_job_stage_seconds_bucket{proof_kind=\"porep-c2\",stage=\"total\",le=\"+Inf\"} 1\n"), "{m}");
    assert!(m.contains("cuzk_job_stage_seconds_count{proof_kind=\"porep-c2\",stage=\"total\"} 1\n"), "{m}");
    assert!(m.contains("# TYPE cuzk_partition_stage_seconds histogram"), "{m}");
    assert!(m.contains("# TYPE cuzk_uptime_seconds gauge"), "{m}");
    let st = e.status();
    assert_eq!(st.workers.len(), 1);
    assert_eq!(st.state, EngineState::Running);
}

#[tokio::test(flavor = "multi_thread")]
async fn large_payloads_wait_in_the_spool_and_a_lost_one_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(config(dir.path()));
    e.pause();
    let big = |id: &str| {
        let mut r = porep(id, &quick());
        r.vanilla_proof.resize(2 << 20, b' '); // still valid JSON, now 2 MiB
        r
    };
    e.submit(big("big")).unwrap();
    e.submit(big("lost")).unwrap();
    // Its request is only on disk now; losing the file must fail the job, not hang it.
    let jobs = dir.path().join("spool/jobs");
    let lost: String = "lost".bytes().map(|b| format!("{b:02x}")).collect();
    std::fs::remove_file(jobs.join(format!("{lost}.req"))).unwrap();
    e.resume();
    let r = done(&e, "big").await;
    assert_eq!(r.status, JobStatus::Completed, "{r:?}");
    assert_eq!(r.proof, b"big");
    let r = done(&e, "lost").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(r.error.as_deref().unwrap().contains("could not be read back"), "{r:?}");
    assert_eq!(log.synthesized.lock().unwrap().as_slice(), ["big"]);
}

/// Each device runs its own number of workers when it sets one; status names every worker's
/// device and reports each device's memory probe.
#[tokio::test(flavor = "multi_thread")]
async fn per_device_worker_counts_and_memory_in_status() {
    let dir = tempfile::tempdir().unwrap();
    let mem = MemoryStatus { budget_bytes: 80 << 30, in_use_bytes: 1 << 30, high_water_bytes: 2 << 30 };
    let pinned = MemoryStatus { budget_bytes: 256 << 20, in_use_bytes: 64 << 20, high_water_bytes: 64 << 20 };
    let devices = vec![
        Device::new("gpu0", std::sync::Arc::new(cuzk_groth16::CpuBackend))
            .with_workers(2)
            .with_memory(std::sync::Arc::new(move || mem))
            .with_gpu(5, std::sync::Arc::new(move || pinned)),
        Device::new("gpu1", std::sync::Arc::new(cuzk_groth16::CpuBackend)).with_workers(0),
        Device::new("gpu2", std::sync::Arc::new(cuzk_groth16::CpuBackend)),
    ];
    let e = Engine::start(config(dir.path()), std::sync::Arc::new(ScriptedRunner(Default::default())), devices)
        .expect("engine starts");
    let st = e.status();
    let names: Vec<&str> = st.workers.iter().map(|w| w.device.as_str()).collect();
    assert_eq!(names, ["gpu0", "gpu0", "gpu2"], "gpu1 has 0 workers, gpu2 the engine default of 1");
    assert_eq!(st.devices.len(), 3);
    assert_eq!(st.devices[0].memory, Some(mem));
    assert_eq!((st.devices[0].ordinal, st.devices[0].pinned), (Some(5), Some(pinned)));
    assert_eq!((st.devices[1].memory, st.devices[1].ordinal, st.devices[1].pinned), (None, None, None));
    // A job being proved shows on its device.
    e.submit(porep("long", &Script { prove_ms: 400, ..Script::default() })).unwrap();
    wait_state(&e, "long", JobState::Proving);
    let st = e.status();
    let on: Vec<_> = st.devices.iter().filter(|d| !d.jobs.is_empty()).collect();
    assert_eq!(on.len(), 1, "{:?}", st.devices);
    assert_eq!(on[0].jobs, [("long".to_string(), ProofKind::PoRepSealCommit)]);
    assert_eq!(e.job("long").unwrap().device.as_deref(), Some(on[0].name.as_str()));
    assert!(e.submit(porep("long", &Script { prove_ms: 400, ..Script::default() })).unwrap().device.is_some());
    done(&e, "long").await;
    assert!(e.metrics_text().contains("cuzk_device_memory_budget_bytes{device=\"gpu0\"} 85899345920"));
    // Jobs still run on the devices that have workers.
    for i in 0..4 {
        e.submit(porep(&format!("j{i}"), &quick())).unwrap();
    }
    for i in 0..4 {
        assert_eq!(done(&e, &format!("j{i}")).await.status, JobStatus::Completed);
    }
    e.drain(Duration::from_secs(5));

    let none = vec![Device::new("idle", std::sync::Arc::new(cuzk_groth16::CpuBackend)).with_workers(0)];
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::start(config(dir.path()), std::sync::Arc::new(ScriptedRunner(Default::default())), none)
        .err()
        .expect("no workers at all is refused");
    assert!(err.to_string().contains("0 workers"), "{err}");
}

/// Live reload: more workers and synthesis threads and a higher queue limit take effect at
/// once, with jobs queued and running; fewer workers retire only once their jobs end;
/// nothing is lost either way; a moved state directory is refused.
#[tokio::test(flavor = "multi_thread")]
async fn reconfigure_changes_workers_and_limits_live_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_queued_jobs = 3;
    c.start_paused = true;
    let (e, _) = start(c.clone());
    let slow = Script { prove_ms: 300, ..Script::default() };
    for i in 0..3 {
        e.submit(porep(&format!("a{i}"), &slow)).unwrap();
    }
    assert!(matches!(e.submit(porep("over", &slow)), Err(EngineError::ResourceExhausted { .. })));
    let mut more = c.clone();
    more.max_queued_jobs = 10;
    more.synthesis_workers = 2;
    more.gpu_workers_per_device = 3;
    let changes = e.reconfigure(more.clone(), &[None]).unwrap();
    for want in ["max_queued_jobs: 3 -> 10", "synthesis_workers: 1 -> 2", "workers on cpu: 1 -> 3"] {
        assert!(changes.iter().any(|c| c == want), "{want} not in {changes:?}");
    }
    assert_eq!(e.status().workers.len(), 3);
    e.resume();
    e.submit(porep("a3", &slow)).unwrap();
    for i in 0..6 {
        e.submit(porep(&format!("b{i}"), &slow)).unwrap();
    }
    // Three proving at once on the one device now.
    let end = Instant::now() + Duration::from_secs(10);
    let mut most = 0;
    while Instant::now() < end && most < 3 {
        most = most.max(e.status().workers.iter().filter(|w| w.job_id.is_some()).count());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(most, 3, "the added workers never proved at once");
    // Down to one worker while jobs run: they finish, the extra workers leave.
    let mut fewer = more.clone();
    fewer.gpu_workers_per_device = 1;
    let changes = e.reconfigure(fewer.clone(), &[None]).unwrap();
    assert!(changes.iter().any(|c| c == "workers on cpu: 3 -> 1"), "{changes:?}");
    for id in (0..4).map(|i| format!("a{i}")).chain((0..6).map(|i| format!("b{i}"))) {
        assert_eq!(done(&e, &id).await.status, JobStatus::Completed, "{id}");
    }
    assert_eq!(e.status().workers.len(), 1);
    e.submit(porep("after", &quick())).unwrap();
    assert_eq!(done(&e, "after").await.status, JobStatus::Completed);
    // Unchanged settings report nothing; a moved state directory is refused.
    assert!(e.reconfigure(fewer.clone(), &[None]).unwrap().is_empty());
    let moved = EngineConfig { state_dir: dir.path().join("elsewhere"), ..fewer };
    let err = e.reconfigure(moved, &[None]).unwrap_err().to_string();
    assert!(err.contains("state_dir cannot change"), "{err}");
}
