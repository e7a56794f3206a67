//! The wire contract with Curio's client: field numbers and service path, checked against
//! hand-encoded protobuf bytes; and a real client/server round trip over a unix socket with
//! a message far above gRPC's 4 MiB default.

use cuzk_proto::v1::*;
use cuzk_proto::{connect, Address, ProvingEngine, ProvingEngineServer, DEFAULT_MAX_MESSAGE_BYTES};
use prost::Message;
use tonic::{Request, Response, Status};

#[test]
fn field_numbers_match_the_protocol() {
    let req = SubmitProofRequest {
        request_id: "a".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        priority: Priority::Critical as i32,
        vanilla_proof: b"xy".to_vec(),
        miner_id: 1000,
        partition_index: 3,
        comm_d_new: vec![9],
        ..Default::default()
    };
    // tag = field << 3 | wire type; 1000 = 0xe8 0x07 as a varint
    let expected: Vec<u8> = vec![
        0x0a, 1, b'a', // 1 request_id
        0x10, 1, // 2 proof_kind = POREP_SEAL_COMMIT
        0x28, 4, // 5 priority = CRITICAL
        0x52, 2, b'x', b'y', // 10 vanilla_proof
        0xa8, 0x01, 0xe8, 0x07, // 21 miner_id
        0xb8, 0x01, 3, // 23 partition_index
        0x82, 0x02, 1, 9, // 32 comm_d_new
    ];
    assert_eq!(req.encode_to_vec(), expected);

    let resp = AwaitProofResponse {
        job_id: "j".into(),
        status: await_proof_response::Status::Timeout as i32,
        total_ms: 5,
        ..Default::default()
    };
    assert_eq!(resp.encode_to_vec(), vec![0x0a, 1, b'j', 0x10, 4, 0x70, 5]);
    let srs = SrsStatus { circuit_id: "porep-32g".into(), tier: srs_status::Tier::Cold as i32, ..Default::default() };
    assert_eq!(srs.encode_to_vec()[..2], [0x0a, 9]);
    assert_eq!(
        <ProvingEngineServer<Echo> as tonic::server::NamedService>::NAME,
        "cuzk.v1.ProvingEngine"
    );
}

#[test]
fn addresses_parse_or_are_refused() {
    assert_eq!("unix:///run/cuzk/cuzk.sock".parse::<Address>().unwrap(), Address::Unix("/run/cuzk/cuzk.sock".into()));
    assert_eq!("/tmp/x.sock".parse::<Address>().unwrap(), Address::Unix("/tmp/x.sock".into()));
    assert_eq!("127.0.0.1:9820".parse::<Address>().unwrap(), Address::Tcp("127.0.0.1:9820".into()));
    assert_eq!("http://host:1".parse::<Address>().unwrap(), Address::Tcp("host:1".into()));
    for bad in ["", "unix://relative.sock", "host", "host:port", ":80"] {
        let e = bad.parse::<Address>().unwrap_err();
        assert!(e.to_string().contains("expected unix://"), "{bad}: {e}");
    }
}

/// A test double of the daemon: answers Prove with the request id and the payload size.
struct Echo;

#[tonic::async_trait]
impl ProvingEngine for Echo {
    async fn submit_proof(&self, r: Request<SubmitProofRequest>) -> Result<Response<SubmitProofResponse>, Status> {
        Ok(Response::new(SubmitProofResponse { job_id: r.into_inner().request_id, ..Default::default() }))
    }
    async fn await_proof(&self, r: Request<AwaitProofRequest>) -> Result<Response<AwaitProofResponse>, Status> {
        Err(Status::not_found(format!("no job {}", r.into_inner().job_id)))
    }
    async fn prove(&self, r: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        let submit = r.into_inner().submit.ok_or_else(|| Status::invalid_argument("submit: missing"))?;
        Ok(Response::new(ProveResponse {
            result: Some(AwaitProofResponse {
                job_id: submit.request_id,
                status: await_proof_response::Status::Completed as i32,
                proof: (submit.vanilla_proof.len() as u64).to_le_bytes().to_vec(),
                ..Default::default()
            }),
        }))
    }
    async fn cancel_proof(&self, _: Request<CancelProofRequest>) -> Result<Response<CancelProofResponse>, Status> {
        Ok(Response::new(CancelProofResponse { was_running: false }))
    }
    async fn get_status(&self, _: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(GetStatusResponse { uptime_seconds: 7, ..Default::default() }))
    }
    async fn get_metrics(&self, _: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse::default()))
    }
    async fn preload_srs(&self, _: Request<PreloadSrsRequest>) -> Result<Response<PreloadSrsResponse>, Status> {
        Ok(Response::new(PreloadSrsResponse::default()))
    }
    async fn evict_srs(&self, _: Request<EvictSrsRequest>) -> Result<Response<EvictSrsResponse>, Status> {
        Ok(Response::new(EvictSrsResponse::default()))
    }
}

#[tokio::test]
async fn client_and_server_talk_over_a_unix_socket_with_large_messages() {
    let dir = std::env::temp_dir().join(format!("cuzk-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cuzk.sock");
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = tonic::transport::Server::builder()
        .add_service(
            ProvingEngineServer::new(Echo)
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
        )
        .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(listener));
    let handle = tokio::spawn(server);

    let addr: Address = format!("unix://{}", path.display()).parse().unwrap();
    let mut client = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await.unwrap();
    let big = vec![7u8; 60 << 20]; // a 32 GiB C1 output is about 50 MB
    let resp = client
        .prove(ProveRequest {
            submit: Some(SubmitProofRequest { request_id: "porep-1000-1".into(), vanilla_proof: big, ..Default::default() }),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(resp.job_id, "porep-1000-1");
    assert_eq!(resp.proof, (60u64 << 20).to_le_bytes().to_vec());

    let e = client.await_proof(AwaitProofRequest { job_id: "nope".into(), timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let e = client.prove(ProveRequest { submit: None }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert_eq!(client.get_status(GetStatusRequest {}).await.unwrap().into_inner().uptime_seconds, 7);

    // A client with gRPC's default 4 MiB limit cannot send 5 MiB: the limit is real.
    let mut small = connect(&addr, 4 << 20).await.unwrap();
    let e = small
        .prove(ProveRequest { submit: Some(SubmitProofRequest { vanilla_proof: vec![0; 5 << 20], ..Default::default() }) })
        .await
        .unwrap_err();
    // tonic reports an over-limit encode as OutOfRange, or as the stream reset it causes.
    assert!(matches!(e.code(), tonic::Code::OutOfRange | tonic::Code::Internal), "{e}");
    handle.abort();
}
