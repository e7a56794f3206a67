//! cuzkd for real: started by `systemd-socket-activate` (it takes its sockets, unix and
//! TCP, from LISTEN_FDS), reporting READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 to a NOTIFY_SOCKET
//! owned by the test, proving the 2 KiB PoRep fixture over gRPC (the proof verifies with
//! filecoin-proofs), honouring await timeouts and cancel, refusing bad requests alone, and
//! draining on SIGTERM.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};

/// A plain HTTP/1.1 GET on localhost: the status line and headers, and the body.
fn http_get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connects to the metrics socket");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("an HTTP answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

/// `Prove` of a PoRep C1 input for miner 1000, answered with its result.
async fn prove_c1(
    client: &mut cuzk_proto::ProvingEngineClient<tonic::transport::Channel>,
    id: &str,
    sector: u64,
    c1: Vec<u8>,
) -> AwaitProofResponse {
    let submit = SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        miner_id: 1000,
        sector_number: sector,
        vanilla_proof: c1,
        ..Default::default()
    };
    client.prove(ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn socket_activated_daemon_proves_and_reports_to_systemd() {
    assert!(which("systemd-socket-activate"), "systemd-socket-activate is missing: apt-get install systemd");
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = scratch("sa");
    let config = dir.join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_dir = {:?}\nlisten = \"unix://{}/unused.sock\"\n[daemon.tcp]\ninsecure = true\n[srs]\nparam_cache = {:?}\nparent_cache = {:?}\n[gpus]\nbackend = \"cpu\"\n",
            dir.join("state"),
            dir.display(),
            f.param_dir(),
            f.parent_dir()
        ),
    )
    .unwrap();
    let notify_path = dir.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    let sock = dir.join("cuzk.sock");

    // A second listening socket, TCP, as a socket unit with two ListenStream= lines passes,
    // and a third named "metrics", as cuzk-metrics.socket passes it (FileDescriptorName=).
    let port = free_port();
    let metrics_port = free_port();
    let child = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&sock)
        .arg("-l")
        .arg(format!("127.0.0.1:{port}"))
        .arg("-l")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .arg("--fdname=cuzk.socket:cuzk.socket:metrics")
        .arg(format!("--setenv=NOTIFY_SOCKET={}", notify_path.display()))
        .arg("--setenv=RUST_LOG=info")
        .arg("--setenv=WATCHDOG_USEC=400000")
        .arg(env!("CARGO_BIN_EXE_cuzkd"))
        .arg("--config")
        .arg(&config)
        .spawn()
        .expect("systemd-socket-activate starts");
    let daemon = Killed(child);
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sock.exists(), "systemd-socket-activate did not create {}", sock.display());

    // The first connection starts cuzkd, which takes the listening socket from LISTEN_FDS.
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let mut client = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects");
    let status = client.get_status(GetStatusRequest {}).await.expect("GetStatus answers").into_inner();
    assert_eq!(status.total_proofs_completed, 0);
    assert!(!Path::new(&format!("{}/unused.sock", dir.display())).exists(), "bound its own socket instead of LISTEN_FDS");
    // The TCP socket from LISTEN_FDS is served too.
    let tcp: Address = format!("127.0.0.1:{port}").parse().unwrap();
    let mut over_tcp = connect(&tcp, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects over TCP");
    over_tcp.get_status(GetStatusRequest {}).await.expect("GetStatus answers over the TCP socket from systemd");
    let got = notifications(&notify, "READY=1", Duration::from_secs(10));
    assert!(got.contains("READY=1"), "no READY=1 in {got:?}");
    assert!(got.contains("STATUS="), "no STATUS= in {got:?}");
    let got = notifications(&notify, "WATCHDOG=1", Duration::from_secs(5));
    assert!(got.contains("WATCHDOG=1"), "no WATCHDOG=1 in {got:?}");

    // A real proof through the daemon.
    let envelope = std::fs::read(f.envelope_path()).unwrap();
    let submit = SubmitProofRequest {
        request_id: "porep-1000-1".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        miner_id: f.info.miner_id,
        sector_number: f.info.sector_id,
        sector_size: 2048,
        vanilla_proof: envelope,
        ..Default::default()
    };
    let r = client
        .prove(ProveRequest { submit: Some(submit.clone()) })
        .await
        .expect("Prove answers")
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert_eq!(r.proof.len(), 192);
    assert!(r.total_ms > 0 && r.synthesis_ms > 0, "stage timings missing: {r:?}");
    assert!(verifies(&f, &r.proof), "the daemon's proof does not verify");

    // The same request id again: the stored result, not a second job.
    let again = client.prove(ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(again.proof, r.proof);

    // The socket named "metrics" serves Prometheus' text over HTTP (not gRPC), counting the
    // proof once; the same text as GetMetrics.
    let (head, body) = http_get(metrics_port, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"), "{head}");
    assert!(body.contains("cuzk_proofs_completed_total{proof_kind=\"porep-c2\"} 1\n"), "{body}");
    assert!(body.contains("cuzk_build_info{version=\""), "{body}");
    let grpc = client.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(grpc.contains("cuzk_proofs_completed_total{proof_kind=\"porep-c2\"} 1\n"), "{grpc}");
    assert!(http_get(metrics_port, "/nothing").0.starts_with("HTTP/1.1 404"));

    // Bad requests fail alone, with their problem named.
    let e = client
        .submit_proof(SubmitProofRequest { request_id: "x".into(), proof_kind: 99, ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
    assert!(e.message().contains("proof_kind"), "{e}");
    let bad = prove_c1(&mut client, "porep-1000-2", 2, b"{ not json".to_vec()).await;
    assert_eq!(bad.status, Status::Failed as i32);
    assert!(bad.error_message.contains("not JSON"), "{}", bad.error_message);
    // A C1 output that parses but whose vanilla proof has the wrong shape (a DRG parent
    // column missing: storage-proofs used to panic on it inside synthesis and hang the
    // daemon) fails in well under 5 s with the problem named; the daemon goes on (below).
    let mut c1: serde_json::Value = serde_json::from_slice(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    let by_shape = c1["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap();
    by_shape[0][0]["replica_column_proofs"]["drg_parents"].as_array_mut().unwrap().pop();
    let started = Instant::now();
    let bad = prove_c1(&mut client, "porep-1000-4", f.info.sector_id, serde_json::to_vec(&c1).unwrap()).await;
    assert_eq!(bad.status, Status::Failed as i32);
    assert!(bad.error_message.contains("DRG parent columns"), "{}", bad.error_message);
    assert!(started.elapsed() < Duration::from_secs(5), "refused after {:?}", started.elapsed());
    // Await honours its timeout; cancel stops a job, and awaiting it then says CANCELLED.
    let envelope = std::fs::read(f.envelope_path()).unwrap();
    let job = client
        .submit_proof(SubmitProofRequest {
            request_id: "porep-1000-3".into(),
            proof_kind: ProofKind::PorepSealCommit as i32,
            miner_id: f.info.miner_id,
            sector_number: f.info.sector_id,
            vanilla_proof: envelope,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(job.job_id, "porep-1000-3");
    let t = Instant::now();
    let waited = client
        .await_proof(AwaitProofRequest { job_id: job.job_id.clone(), timeout_ms: 100 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(waited.status, Status::Timeout as i32, "{waited:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "await ignored its timeout: {:?}", t.elapsed());
    client.cancel_proof(CancelProofRequest { job_id: job.job_id.clone() }).await.unwrap();
    let done = client
        .await_proof(AwaitProofRequest { job_id: job.job_id.clone(), timeout_ms: 60_000 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(done.status, Status::Cancelled as i32, "{done:?}");
    assert!(done.proof.is_empty());

    let e = client.await_proof(AwaitProofRequest { job_id: "nope".into(), timeout_ms: 10 }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{e}");
    let status = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (1, 2));
    let metrics = client.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(metrics.contains("cuzk"), "{metrics}");

    // SIGTERM: STOPPING=1, drain, exit 0.
    let pid = daemon.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let got = notifications(&notify, "STOPPING=1", Duration::from_secs(20));
    assert!(got.contains("STOPPING=1"), "no STOPPING=1 in {got:?}");
    let mut daemon = daemon;
    let end = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(s) = daemon.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "cuzkd did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(code.success(), "cuzkd exited with {code}");
}
