//! Admission over the wire, against a daemon run in-process (`cuzkd::run_with`) whose runner
//! takes 1.5 s to plan each job (so jobs stay queued): a submit past `max_queued_jobs` is
//! RESOURCE_EXHAUSTED naming the limit while a known id still attaches, and one connection
//! gets at most `max_concurrent_streams` calls in flight (the next waits for a free stream).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::{
    CancelToken, JobPlan, JobRequest, PartitionProof, PartitionWork, PreparedJob, ProofOutput, ProofRunner, ProveContext,
    RunError, SrsRef,
};
use cuzk_proto::v1::*;
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};

/// Not a prover: plans slowly, then answers the request id's bytes.
struct SlowPlan;

struct IdJob(String);

impl ProofRunner for SlowPlan {
    fn plan(&self, _: &JobRequest) -> Result<JobPlan, RunError> {
        std::thread::sleep(Duration::from_millis(1500));
        Ok(JobPlan::new(1, 1))
    }
    fn prepare(&self, r: &JobRequest, _: &JobPlan, _: &CancelToken) -> Result<Box<dyn PreparedJob>, RunError> {
        Ok(Box::new(IdJob(r.request_id.clone())))
    }
    fn srs_for_circuit(&self, c: &str) -> Result<SrsRef, RunError> {
        Err(RunError::BadRequest(format!("no circuit {c}").into()))
    }
}

impl PreparedJob for IdJob {
    fn partitions(&self) -> usize {
        1
    }
    fn synthesize(&self, _: usize, _: &CancelToken) -> Result<PartitionWork, RunError> {
        Ok(PartitionWork::default())
    }
    fn prove(&self, _: usize, _: PartitionWork, _: ProveContext<'_>) -> Result<PartitionProof, RunError> {
        Ok(PartitionProof::placeholder())
    }
    fn finish(&self, _: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
        Ok(ProofOutput { proof: self.0.clone().into_bytes(), ..Default::default() })
    }
}

fn winpost(id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::WinningPost as i32,
        vanilla_proof: b"x".to_vec(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn queue_and_stream_limits_hold_over_the_wire() {
    let dir = scratch("admission");
    let sock = dir.join("cuzk.sock");
    let cfg = cuzkd::config::Config::parse(
        &format!(
            "[daemon]\nstate_dir = {:?}\nlisten = \"unix://{}\"\nmax_concurrent_streams = 2\n\
             [gpus]\nbackend = \"cpu\"\n[engine]\nsynthesis_workers = 1\nmax_queued_jobs = 2\n\
             [dbus]\nbus = \"none\"\n[log]\ntarget = \"stderr\"\nlevel = \"warn\"\n",
            dir.join("state"),
            sock.display()
        ),
        "admission.toml",
    )
    .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(cuzkd::run_with(cfg, Arc::new(SlowPlan), async move {
        let _ = stopped.await;
    }));
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let mut client = loop {
        match connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await {
            Ok(c) => break c,
            Err(e) => {
                assert!(Instant::now() < end, "daemon did not come up: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };

    // Two queued (one of them being planned), the third refused, a known id attaches.
    client.submit_proof(winpost("winpost-a")).await.unwrap();
    client.submit_proof(winpost("winpost-b")).await.unwrap();
    let err = client.submit_proof(winpost("winpost-c")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err}");
    assert!(err.message().contains("max_queued_jobs = 2"), "{err}");
    client.submit_proof(winpost("winpost-b")).await.expect("a known id attaches at the limit");

    // Three awaits of 1 s on one connection with 2 streams: the third starts when one ends.
    let started = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..3 {
        let mut c = client.clone();
        calls.push(tokio::spawn(async move {
            c.await_proof(AwaitProofRequest { job_id: "winpost-b".into(), timeout_ms: 1000 }).await.unwrap();
            started.elapsed()
        }));
    }
    let mut took = Vec::new();
    for c in calls {
        took.push(c.await.unwrap());
    }
    took.sort();
    assert!(took[2] >= Duration::from_millis(1900), "the third call did not wait for a stream: {took:?}");
    assert!(took[1] < took[2], "{took:?}");

    // The queue drains; the refused id was never accepted.
    let r = client.await_proof(AwaitProofRequest { job_id: "winpost-b".into(), timeout_ms: 20_000 }).await.unwrap().into_inner();
    assert_eq!(r.proof, b"winpost-b");
    let err = client.await_proof(AwaitProofRequest { job_id: "winpost-c".into(), timeout_ms: 10 }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err}");
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
