//! Device failures (issue 15's CI half): two CPU "devices", one or both made to fail as a
//! GPU would (a kernel error, `BackendError::Unavailable`), under the scripted runner
//! (tests/common). A failed device's partitions are proved on the other one and the job
//! completes; the device is reported unhealthy in status and metrics until a reload; with
//! every device failing, the job fails after one try per device, naming each, and new jobs
//! wait queued; a job's own failure is not retried.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::*;

/// An engine on two devices of one worker each, "cpu-a" and "cpu-b", with their backends.
fn two_devices(dir: &std::path::Path, budget: u64) -> (Engine, Arc<Scripted>, [Arc<FailingBackend>; 2], EngineConfig) {
    let mut c = config(dir);
    c.synthesis_workers = 2;
    c.host_memory_budget_bytes = budget;
    let backends = [failing_cpu(), failing_cpu()];
    let devices = vec![Device::new("cpu-a", backends[0].clone()), Device::new("cpu-b", backends[1].clone())];
    let log = Arc::new(Scripted::default());
    let e = Engine::start(c.clone(), Arc::new(ScriptedRunner(log.clone())), devices).unwrap();
    (e, log, backends, c)
}

fn device<'a>(st: &'a EngineStatus, name: &str) -> &'a DeviceStatus {
    st.devices.iter().find(|d| d.name == name).unwrap()
}

/// Awaits every listed job, polling status meanwhile: the budget is never exceeded.
async fn done_within_budget(e: &Engine, ids: &[&str], budget: u64) -> Vec<Arc<JobResult>> {
    for id in ids {
        while !e.job(id).unwrap().state.is_terminal() {
            let m = e.status().memory;
            assert!(m.in_use_bytes <= budget, "{m:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut out = Vec::new();
    for id in ids {
        out.push(done(e, id).await);
    }
    out
}

/// cpu-a proves one partition, then fails mid-run: the partition it failed is synthesized
/// again and proved on cpu-b, the job completes with every partition proved once, cpu-a is
/// unhealthy in status and metrics (and takes nothing more), memory returns to 0. A reload
/// makes cpu-a healthy again.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_that_fails_mid_run_costs_no_job() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log, [a, b], c) = two_devices(dir.path(), 300);
    a.fail_after(1);
    let s = Script { partitions: 6, synth_ms: 5, prove_ms: 40, footprint: 100, ..Script::default() };
    e.submit(porep("six", &s)).unwrap();
    let r = done_within_budget(&e, &["six"], 300).await;
    assert_eq!((r[0].status, r[0].proof.as_slice()), (JobStatus::Completed, b"six".as_slice()), "{:?}", r[0].error);
    assert_eq!((a.ran.load(Ordering::SeqCst), a.failed.load(Ordering::SeqCst)), (1, 1), "one proof on cpu-a, then one failure");
    assert_eq!(b.ran.load(Ordering::SeqCst), 5, "the other five, the failed one among them, on cpu-b");
    let mut tries: Vec<usize> = log.proved_partitions.lock().unwrap().iter().map(|(_, k)| *k).collect();
    assert_eq!(tries.len(), 7, "six partitions and one retry: {tries:?}");
    tries.sort();
    tries.dedup();
    assert_eq!(tries, [0, 1, 2, 3, 4, 5]);

    let st = e.status();
    let (da, db) = (device(&st, "cpu-a"), device(&st, "cpu-b"));
    assert!(!da.healthy && db.healthy, "{:?}", st.devices);
    assert_eq!((da.failures, db.failures), (1, 0));
    let why = da.last_error.as_deref().unwrap();
    assert!(why.contains("device failed: cpu backend unavailable: injected failure"), "{why}");
    assert!(!st.no_healthy_device());
    assert_eq!((st.memory.in_use_bytes, st.completed, st.failed), (0, 1, 0), "{:?}", st.memory);
    assert_eq!(log.held.load(Ordering::SeqCst), 0, "no witness left behind");
    let m = e.metrics_text();
    for line in [
        "cuzk_device_healthy{device=\"cpu-a\"} 0",
        "cuzk_device_healthy{device=\"cpu-b\"} 1",
        "cuzk_device_failures_total{device=\"cpu-a\"} 1",
        "cuzk_device_failures_total{device=\"cpu-b\"} 0",
    ] {
        assert!(m.lines().any(|l| l == line), "no {line:?} in\n{m}");
    }

    // Unhealthy: the next job's partitions all go to cpu-b.
    e.submit(porep("next", &Script { partitions: 3, ..s.clone() })).unwrap();
    assert_eq!(done(&e, "next").await.status, JobStatus::Completed);
    assert_eq!((a.ran.load(Ordering::SeqCst), a.failed.load(Ordering::SeqCst)), (1, 1), "cpu-a took nothing");

    // A reload gives it workers: healthy again, and it proves again.
    a.recover();
    let changes = e.reconfigure(c, &[None, None]).unwrap();
    assert!(changes.iter().any(|l| l.starts_with("cpu-a: healthy again (it had failed: device failed:")), "{changes:?}");
    let st = e.status();
    assert!(device(&st, "cpu-a").healthy);
    assert!(e.metrics_text().lines().any(|l| l == "cuzk_device_healthy{device=\"cpu-a\"} 1"));
    e.submit(porep("after", &Script { partitions: 4, prove_ms: 60, ..s })).unwrap();
    assert_eq!(done(&e, "after").await.status, JobStatus::Completed);
    assert!(a.ran.load(Ordering::SeqCst) > 1, "cpu-a proves again");
    assert_eq!(e.status().memory.in_use_bytes, 0);
}

/// Both devices fail: the partition is tried once on each, then its job fails naming both
/// devices and why. With no healthy device, a new job waits queued (not failed) and status
/// says so; a reload makes them healthy and the job runs.
#[tokio::test(flavor = "multi_thread")]
async fn with_every_device_failing_the_job_fails_naming_each_and_new_jobs_wait_for_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log, [a, b], c) = two_devices(dir.path(), 1 << 30);
    a.fail_after(0);
    b.fail_after(0);
    e.submit(porep("one", &Script { partitions: 1, prove_ms: 10, footprint: 100, ..Script::default() })).unwrap();
    let r = done(&e, "one").await;
    assert_eq!(r.status, JobStatus::Failed);
    let msg = r.error.as_deref().unwrap();
    assert!(msg.starts_with("its device failed on each of its 2 tries, the most for 2 device(s): on cpu-"), "{msg}");
    for d in ["cpu-a", "cpu-b"] {
        assert!(msg.contains(&format!("on {d}: device failed: cpu backend unavailable: injected failure")), "{msg}");
    }
    assert_eq!(log.proved_partitions.lock().unwrap().len(), 2, "one try per device");
    let st = e.status();
    assert!(st.no_healthy_device(), "{:?}", st.devices);
    assert_eq!((st.memory.in_use_bytes, st.failed), (0, 1));

    e.submit(porep("waits", &Script { partitions: 2, footprint: 100, ..Script::default() })).unwrap();
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        assert_eq!(e.job("waits").unwrap().state, JobState::Queued, "no job starts without a healthy device");
        std::thread::sleep(Duration::from_millis(10));
    }
    let st = e.status();
    assert_eq!((st.queue_depth(), st.memory.in_use_bytes), (1, 0));
    assert_eq!(log.proved_partitions.lock().unwrap().len(), 2, "nothing was tried meanwhile");

    a.recover();
    b.recover();
    e.reconfigure(c, &[None, None]).unwrap();
    assert!(!e.status().no_healthy_device());
    let r = done(&e, "waits").await;
    assert_eq!(r.status, JobStatus::Completed, "{:?}", r.error);
    assert_eq!(e.status().memory.in_use_bytes, 0);
}

/// A job's own failure (the scripted prover's error, as bad input or an unsatisfied
/// witness would be) fails it at once on two healthy devices: not retried, no device
/// marked.
#[tokio::test(flavor = "multi_thread")]
async fn a_jobs_own_failure_is_not_retried_on_another_device() {
    let dir = tempfile::tempdir().unwrap();
    let (e, log, _, _) = two_devices(dir.path(), 1 << 30);
    let s = Script {
        partitions: 3,
        prove_ms: 20,
        footprint: 100,
        prove_fail: Some("scripted failure".into()),
        fail_partition: Some(1),
        ..Script::default()
    };
    e.submit(porep("bad", &s)).unwrap();
    let r = done(&e, "bad").await;
    assert_eq!(r.status, JobStatus::Failed);
    assert!(r.error.as_deref().unwrap().contains("partition 1 of 3: proving failed: scripted failure"), "{r:?}");
    let tries = log.proved_partitions.lock().unwrap().iter().filter(|(_, k)| *k == 1).count();
    assert_eq!(tries, 1, "partition 1 was not tried again");
    let st = e.status();
    assert!(st.devices.iter().all(|d| d.healthy && d.failures == 0), "{:?}", st.devices);
    assert_eq!(st.memory.in_use_bytes, 0);
}
