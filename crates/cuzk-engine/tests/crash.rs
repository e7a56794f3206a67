//! A real crash: a child process (this test binary, re-run as `crash_child`) runs an engine
//! and is killed with SIGKILL in the middle of a job; a new engine on the same state
//! directory must then run the job again, or fail it explicitly once it has been
//! interrupted `max_attempts` times. Never silently gone. A job's partitions proved before
//! the kill are redone.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::*;

const CHILD_ENV: &str = "CUZK_ENGINE_CRASH_CHILD";
/// Set (to anything) for the child of `partitions_proved_before_a_kill_are_redone`.
const PARTITIONS_ENV: &str = "CUZK_ENGINE_CRASH_PARTITIONS";

/// Not a test on its own: does nothing unless run by `kill_mid_job` with the env set.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    if std::env::var_os(PARTITIONS_ENV).is_some() {
        let (e, log) = start(config(dir));
        e.submit(porep("porep-1000-2", &four_partitions())).unwrap();
        // Partitions 0 and 1 proved, 2 proving: the kill comes mid-job.
        let end = Instant::now() + Duration::from_secs(20);
        while log.proved_partitions.lock().unwrap().len() < 3 {
            assert!(Instant::now() < end, "partition 2 never started proving");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::fs::write(dir.join("child-proving"), b"").unwrap();
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let mut c = config(dir);
    c.host_memory_budget_bytes = 100; // the second job stays queued: it never started
    let (e, _) = start(c);
    e.submit(porep("porep-1000-1", &long_job())).unwrap();
    e.submit(porep(
        "queued-behind",
        &Script {
            prove_ms: 10,
            footprint: 100,
            ..Script::default()
        },
    ))
    .unwrap();
    wait_state(&e, "porep-1000-1", JobState::Proving);
    std::fs::write(dir.join("child-proving"), b"").unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

/// The child's job that is killed mid-proof.
fn long_job() -> Script {
    Script { prove_ms: 60_000, footprint: 100, ..Script::default() }
}

/// The job of `partitions_proved_before_a_kill_are_redone`: four partitions of 150 ms.
fn four_partitions() -> Script {
    Script { partitions: 4, prove_ms: 150, footprint: 10, ..Script::default() }
}

/// Runs the child until its job is proving, then SIGKILLs it.
fn kill_mid_job(dir: &Path) {
    kill_child_mid_job(dir, false)
}

fn kill_child_mid_job(dir: &Path, partitions: bool) {
    let _ = std::fs::remove_file(dir.join("child-proving"));
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdout(std::process::Stdio::null());
    if partitions {
        command.env(PARTITIONS_ENV, "1");
    }
    let mut child = command.spawn().unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    while !dir.join("child-proving").exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("child exited early: {status}");
        }
        assert!(Instant::now() < end, "child never started proving");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL: no drain, no destructor
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_killed_mid_proof_runs_again_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    kill_mid_job(dir.path());

    let mut c = config(dir.path());
    c.start_paused = true;
    let (e, log) = start(c);
    let info = e.job("porep-1000-1").unwrap();
    assert_eq!(
        info.state,
        JobState::Queued,
        "the interrupted job is back in the queue"
    );
    assert_eq!(info.attempts, 1);
    assert_eq!(e.job("queued-behind").unwrap().attempts, 0);
    e.resume();
    // Its script still says 60 s; the point is that it runs: cancel once it proves.
    wait_state(&e, "porep-1000-1", JobState::Proving);
    assert_eq!(
        log.proved.lock().unwrap().first().map(String::as_str),
        Some("porep-1000-1")
    );
    e.cancel("porep-1000-1").unwrap();
    let r = done(&e, "porep-1000-1").await;
    assert_eq!((r.status, r.attempts), (JobStatus::Cancelled, 2));
    // The job queued behind it survived too, and completes.
    assert_eq!(done(&e, "queued-behind").await.status, JobStatus::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_interrupted_too_often_fails_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    kill_mid_job(dir.path());

    let mut c = config(dir.path());
    c.max_attempts = 1;
    let (e, log) = start(c);
    let r = done(&e, "porep-1000-1").await;
    assert_eq!(r.status, JobStatus::Failed);
    let msg = r.error.as_deref().unwrap();
    assert!(
        msg.contains("interrupted 1 times") && msg.contains("max_attempts = 1"),
        "{msg}"
    );
    assert_eq!(done(&e, "queued-behind").await.status, JobStatus::Completed);
    assert!(!log
        .proved
        .lock()
        .unwrap()
        .iter()
        .any(|id| id == "porep-1000-1"));
    // A retry with the same id and content gets the stored failure, not a new run (the
    // digest survived the kill in the spooled request).
    let again = e.submit(porep("porep-1000-1", &long_job())).unwrap();
    assert!(again.existing);
    assert_eq!(again.state, JobState::Failed);
}

/// Killed while partition 2 of 4 proves (0 and 1 done): after the restart the job runs again
/// from its request, all four partitions (the spool keeps requests, never partial proofs),
/// and completes.
#[tokio::test(flavor = "multi_thread")]
async fn partitions_proved_before_a_kill_are_redone() {
    let dir = tempfile::tempdir().unwrap();
    kill_child_mid_job(dir.path(), true);

    let (e, log) = start(config(dir.path()));
    let r = done(&e, "porep-1000-2").await;
    assert_eq!((r.status, r.attempts), (JobStatus::Completed, 2), "{r:?}");
    assert_eq!(r.proof, b"porep-1000-2");
    let mut proved: Vec<usize> = log.proved_partitions.lock().unwrap().iter().map(|(_, k)| *k).collect();
    proved.sort();
    assert_eq!(proved, [0, 1, 2, 3], "every partition proved again after the restart");
}
