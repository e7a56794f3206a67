//! Partition scheduling, driven by the scripted runner (tests/common) with jobs of several
//! partitions: priorities preempt between partitions, the budget bounds the witnesses in
//! memory, a failed partition fails its job and returns what it held, cancel stops a job
//! between partitions, and one job's partitions prove on two devices at once.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::*;

/// The test configuration with `synthesis` synthesis threads and `workers` workers.
fn threads(dir: &std::path::Path, synthesis: usize, workers: usize) -> EngineConfig {
    let mut c = config(dir);
    c.synthesis_workers = synthesis;
    c.gpu_workers_per_device = workers;
    c
}

/// Polls `f` until it is true (10 s at most).
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A WinningPoSt submitted while a low-priority job of six partitions proves waits only for
/// the partition in flight: its two partitions go before the low job's remaining five, which
/// were synthesized long before.
#[tokio::test(flavor = "multi_thread")]
async fn a_higher_job_goes_before_the_remaining_partitions_of_a_lower_one() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(threads(dir.path(), 2, 1));
    let low = Script { partitions: 6, synth_ms: 5, prove_ms: 150, footprint: 10, ..Script::default() };
    e.submit(request("low", ProofKind::PoRepSealCommit, Some(Priority::Low), &low)).unwrap();
    // Partition 0 proves and the rest wait, synthesized.
    until("low's five partitions synthesized behind the one proving", || {
        e.job("low").unwrap().partitions.is_some_and(|p| p.waiting == 5)
    });
    let win = Script { partitions: 2, synth_ms: 5, prove_ms: 20, footprint: 10, ..Script::default() };
    e.submit(request("win", ProofKind::WinningPost, None, &win)).unwrap();
    assert_eq!(done(&e, "win").await.status, JobStatus::Completed);
    assert_eq!(done(&e, "low").await.status, JobStatus::Completed);
    let order: Vec<String> =
        log.proved_partitions.lock().unwrap().iter().map(|(id, k)| format!("{id}{k}")).collect();
    // The partition in flight (whichever of low's was synthesized first), then win's, then
    // low's others.
    assert_eq!(order.len(), 8, "{order:?}");
    assert!(order[0].starts_with("low"), "{order:?}");
    assert_eq!(order[1..3], ["win0", "win1"], "{order:?}");
    let mut rest = order[3..].to_vec();
    rest.push(order[0].clone());
    rest.sort();
    assert_eq!(rest, ["low0", "low1", "low2", "low3", "low4", "low5"]);
}

/// A WinningPoSt submitted behind a PoRep (10 partitions) and a SnapDeals job (16 partitions)
/// whose synthesized witnesses fill the memory budget proves next: after the partition in
/// flight, before the 25 others, although it must wait for a freed reservation to synthesize.
#[tokio::test(flavor = "multi_thread")]
async fn a_winning_post_behind_porep_and_snapdeals_partitions_goes_next() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = threads(dir.path(), 2, 1);
    c.host_memory_budget_bytes = 400;
    let (e, log) = start(c);
    let porep = Script { partitions: 10, synth_ms: 5, prove_ms: 60, footprint: 100, ..Script::default() };
    let snap = Script { partitions: 16, ..porep.clone() };
    e.submit(request("porep", ProofKind::PoRepSealCommit, None, &porep)).unwrap();
    e.submit(request("snap", ProofKind::SnapDealsUpdate, None, &snap)).unwrap();
    until("the budget full of witnesses", || e.status().memory.in_use_bytes == 400);
    let before = log.proved_partitions.lock().unwrap().len();
    let win = Script { partitions: 1, synth_ms: 5, prove_ms: 5, footprint: 100, ..Script::default() };
    e.submit(request("win", ProofKind::WinningPost, None, &win)).unwrap();
    assert_eq!(done(&e, "win").await.status, JobStatus::Completed);
    let order: Vec<String> =
        log.proved_partitions.lock().unwrap().iter().map(|(id, k)| format!("{id}{k}")).collect();
    let at = order.iter().position(|p| p == "win0").expect("win proved");
    // At most the partition in flight when it came, and the one the worker took while its
    // witness was being synthesized in the reservation that partition freed.
    assert!(at <= before + 1, "win0 proved {at}th; {before} had started when it was submitted: {order:?}");
    assert_eq!(done(&e, "porep").await.status, JobStatus::Completed);
    assert_eq!(done(&e, "snap").await.status, JobStatus::Completed);
    assert_eq!(log.proved_partitions.lock().unwrap().len(), 27);
}

/// The urgent lane: a WinningPoSt submitted while the only bulk synthesis thread is inside a
/// long partition is synthesized at once on the urgent lane's thread and proves before that
/// partition; the low job never runs there. Without the lane (0 threads) the same WinningPoSt
/// waits for the bulk thread, and the low job's partition proves first.
#[tokio::test(flavor = "multi_thread")]
async fn an_urgent_job_does_not_wait_for_a_bulk_synthesis_thread() {
    for lane in [1, 0] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = threads(dir.path(), 1, 1);
        c.urgent_synthesis_workers = lane;
        let (e, log) = start(c);
        let low = Script { partitions: 2, synth_ms: 1500, prove_ms: 5, footprint: 10, ..Script::default() };
        e.submit(request("low", ProofKind::PoRepSealCommit, Some(Priority::Low), &low)).unwrap();
        until("the low job synthesizes", || log.synthesized.lock().unwrap().len() == 1);
        let t = Instant::now();
        let win = Script { partitions: 1, synth_ms: 20, prove_ms: 5, footprint: 10, ..Script::default() };
        e.submit(request("win", ProofKind::WinningPost, None, &win)).unwrap();
        let r = done(&e, "win").await;
        assert_eq!(r.status, JobStatus::Completed, "{:?}", r.error);
        let order = log.proved_partitions.lock().unwrap().clone();
        let urgent = log.urgent.lock().unwrap().clone();
        if lane == 1 {
            assert!(t.elapsed() < Duration::from_millis(1000), "urgent job took {:?}", t.elapsed());
            assert_eq!(order.first(), Some(&("win".to_string(), 0)), "{order:?}");
            assert_eq!(urgent, vec![("win".to_string(), 0)], "only the WinningPoSt runs on the urgent lane");
        } else {
            assert_eq!(order.first(), Some(&("low".to_string(), 0)), "{order:?}");
            assert!(urgent.is_empty(), "{urgent:?}");
        }
        assert_eq!(done(&e, "low").await.status, JobStatus::Completed);
        let _ = e.drain(Duration::from_secs(5));
    }
}

/// The urgent lane's only thread is kept for Critical jobs: with two WindowPoSt partitions
/// (High) queued and the one bulk thread inside the first, the lane does not take the
/// second, so a WinningPoSt submitted then is synthesized at once on the lane. (Before, the
/// lane took the second WindowPoSt, and on an H100 a 32 GiB WinningPoSt waited 38 s behind
/// its synthesis (46 s beside the other's): bench/runs/2026-12-06-h100-window-lane/.)
#[tokio::test(flavor = "multi_thread")]
async fn a_window_post_does_not_hold_the_urgent_lane_a_winning_post_needs() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = threads(dir.path(), 1, 1);
    c.urgent_synthesis_workers = 1;
    let (e, log) = start(c);
    let window = Script { partitions: 1, synth_ms: 1500, prove_ms: 5, footprint: 10, ..Script::default() };
    e.submit(request("window-a", ProofKind::WindowPostPartition, None, &window)).unwrap();
    e.submit(request("window-b", ProofKind::WindowPostPartition, None, &window)).unwrap();
    until("the first WindowPoSt synthesizes", || log.synthesized.lock().unwrap().len() == 1);
    // Time for the lane to take the second WindowPoSt, were it allowed to.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    let win = Script { partitions: 1, synth_ms: 20, prove_ms: 5, footprint: 10, ..Script::default() };
    e.submit(request("win", ProofKind::WinningPost, None, &win)).unwrap();
    let r = done(&e, "win").await;
    assert_eq!(r.status, JobStatus::Completed, "{:?}", r.error);
    assert!(t.elapsed() < Duration::from_millis(1000), "the WinningPoSt took {:?}", t.elapsed());
    assert_eq!(log.urgent.lock().unwrap().clone(), vec![("win".to_string(), 0)], "only the WinningPoSt runs on the lane");
    for id in ["window-a", "window-b"] {
        assert_eq!(done(&e, id).await.status, JobStatus::Completed);
    }
    let _ = e.drain(Duration::from_secs(5));
}

/// A budget of exactly three partitions' bytes: three witnesses are in memory at once
/// (synthesis runs ahead of two workers), never four, across two jobs' partitions.
#[tokio::test(flavor = "multi_thread")]
async fn a_budget_of_three_witnesses_never_holds_four() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = threads(dir.path(), 4, 2);
    c.host_memory_budget_bytes = 300;
    let (e, log) = start(c);
    let s = Script { partitions: 8, synth_ms: 15, prove_ms: 30, footprint: 100, ..Script::default() };
    e.submit(porep("a", &s)).unwrap();
    e.submit(porep("b", &Script { partitions: 4, ..s.clone() })).unwrap();
    let mut most = 0;
    for id in ["a", "b"] {
        while !e.job(id).unwrap().state.is_terminal() {
            let st = e.status();
            assert!(st.memory.in_use_bytes <= 300, "{:?}", st.memory);
            most = most.max(st.memory.in_use_bytes);
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(done(&e, id).await.status, JobStatus::Completed);
    }
    assert_eq!(log.max_held.load(Ordering::SeqCst), 3, "three witnesses at once, not four");
    assert_eq!(log.held.load(Ordering::SeqCst), 0);
    assert_eq!(e.status().memory.high_water_bytes, 300);
    assert_eq!(e.status().memory.in_use_bytes, 0);
    assert!(most >= 200, "synthesis ran ahead of proving (at most {most} bytes seen)");
    assert_eq!(log.proved_partitions.lock().unwrap().len(), 12);
}

/// What the runner holds outside the jobs (compiled circuits) shares the budget: 500 bytes
/// with 200 held leave three witnesses of 100 at once, where five would fit without it. And a
/// runner holding more than the whole budget still lets one partition at a time go on.
#[tokio::test(flavor = "multi_thread")]
async fn what_the_runner_holds_is_taken_off_the_budget_but_never_stops_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = threads(dir.path(), 4, 1);
    c.host_memory_budget_bytes = 500;
    let (e, log) = start(c);
    log.runner_held.store(200, Ordering::SeqCst);
    let s = Script { partitions: 8, synth_ms: 5, prove_ms: 30, footprint: 100, ..Script::default() };
    e.submit(porep("a", &s)).unwrap();
    while !e.job("a").unwrap().state.is_terminal() {
        let st = e.status();
        assert!(st.memory.in_use_bytes <= 300, "{:?}: 200 of the 500 bytes are the runner's", st.memory);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(done(&e, "a").await.status, JobStatus::Completed);
    assert_eq!(log.max_held.load(Ordering::SeqCst), 3, "three witnesses at once beside the runner's 200 bytes");

    log.runner_held.store(10_000, Ordering::SeqCst);
    log.max_held.store(0, Ordering::SeqCst);
    e.submit(porep("b", &Script { partitions: 3, ..s })).unwrap();
    assert_eq!(done(&e, "b").await.status, JobStatus::Completed);
    assert_eq!(log.max_held.load(Ordering::SeqCst), 1, "one partition at a time when the runner holds more than the budget");
    let _ = e.drain(Duration::from_secs(5));
}

/// Partition 3 of 5 fails on its worker: the job fails with that partition named, its other
/// partitions stop, every byte it reserved comes back, and the next job runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_partition_fails_its_job_by_name_and_releases_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(threads(dir.path(), 3, 2));
    let s = Script {
        partitions: 5,
        synth_ms: 10,
        prove_ms: 60,
        footprint: 1000,
        job_bytes: 77,
        prove_fail: Some("scripted failure".into()),
        fail_partition: Some(3),
        ..Script::default()
    };
    e.submit(porep("five", &s)).unwrap();
    let r = done(&e, "five").await;
    assert_eq!(r.status, JobStatus::Failed);
    let msg = r.error.as_deref().unwrap();
    assert!(msg.contains("partition 3 of 5: proving failed: scripted failure"), "{msg}");
    assert!(r.proof.is_empty());
    let st = e.status();
    assert_eq!((st.memory.in_use_bytes, st.running, st.failed), (0, 0, 1), "{:?}", st.memory);
    assert!(st.memory.high_water_bytes >= 2077, "partitions were held at once");
    assert!(e.job("five").unwrap().partitions.is_none(), "nothing of the job is left");
    let proved = log.proved_partitions.lock().unwrap().clone();
    assert!(proved.contains(&("five".to_string(), 3)), "{proved:?}");
    e.submit(porep("after", &Script { partitions: 2, ..Script::default() })).unwrap();
    assert_eq!(done(&e, "after").await.status, JobStatus::Completed);
    assert_eq!(e.status().memory.in_use_bytes, 0);
}

/// Cancel while partition 1 of 6 proves: the job stops there (the partitions waiting are
/// dropped, the one proving stops at its next boundary), and everything comes back.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_mid_job_stops_between_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log) = start(threads(dir.path(), 2, 1));
    let s = Script { partitions: 6, synth_ms: 5, prove_ms: 300, footprint: 10, ..Script::default() };
    e.submit(porep("six", &s)).unwrap();
    until("partition 1 proving", || log.proved_partitions.lock().unwrap().len() == 2);
    let p = e.job("six").unwrap().partitions.unwrap();
    assert_eq!((p.total, p.proved), (6, 1), "{p:?}");
    assert!(p.in_flight >= 1, "{p:?}");
    let t = Instant::now();
    assert_eq!(e.cancel("six").unwrap(), CancelOutcome::Stopping);
    let r = done(&e, "six").await;
    assert_eq!(r.status, JobStatus::Cancelled);
    assert!(r.error.as_deref().unwrap().contains("after 1 of 6 partitions"), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
    assert_eq!(log.proved_partitions.lock().unwrap().len(), 2, "no partition started after the cancel");
    assert_eq!(log.cancelled_in_prove.load(Ordering::SeqCst), 1);
    assert_eq!(e.status().memory.in_use_bytes, 0);
    assert_eq!(e.status().cancelled, 1);
}

/// One job of four partitions on two devices of one worker each: two of its partitions
/// prove at the same time, one on each device, and the job's proof comes out once.
#[tokio::test(flavor = "multi_thread")]
async fn one_jobs_partitions_prove_in_parallel_on_two_devices() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.synthesis_workers = 2;
    let devices = vec![
        Device::new("gpu0", std::sync::Arc::new(cuzk_groth16::CpuBackend)),
        Device::new("gpu1", std::sync::Arc::new(cuzk_groth16::CpuBackend)),
    ];
    let log = std::sync::Arc::new(Scripted::default());
    let e = Engine::start(c, std::sync::Arc::new(ScriptedRunner(log.clone())), devices).unwrap();
    let s = Script { partitions: 4, synth_ms: 5, prove_ms: 250, footprint: 10, ..Script::default() };
    e.submit(porep("four", &s)).unwrap();
    until("the job proving on both devices", || {
        let st = e.status();
        st.devices.iter().all(|d| d.jobs.iter().any(|(id, _)| id == "four"))
    });
    let st = e.status();
    let mut partitions: Vec<usize> = st.workers.iter().filter_map(|w| w.partition).collect();
    partitions.sort();
    assert_eq!(partitions.len(), 2, "{:?}", st.workers);
    assert_ne!(partitions[0], partitions[1]);
    let r = done(&e, "four").await;
    assert_eq!((r.status, r.proof.as_slice()), (JobStatus::Completed, b"four".as_slice()));
    assert_eq!(log.max_proving.load(Ordering::SeqCst), 2);
    let mut proved: Vec<usize> = log.proved_partitions.lock().unwrap().iter().map(|(_, k)| *k).collect();
    proved.sort();
    assert_eq!(proved, [0, 1, 2, 3], "each partition proved once");
}
