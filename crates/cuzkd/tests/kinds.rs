//! cuzkd proving SnapDeals, WindowPoSt and WinningPoSt over gRPC from requests filled as
//! Curio fills them (its request ids included: a wdpost id holds brackets and spaces; the
//! proofshare SnapDeals request leaves sector_size at 0), on the 2 KiB fixtures of a really
//! sealed and updated sector; every proof verified with filecoin-proofs' verifiers, a bad
//! field named in the job's error while the other jobs complete, and a shape-only input of
//! every kind (PoRep C1, WinningPoSt, WindowPoSt, SnapDeals) refused, saying so.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, ensure_kind_fixtures};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::prover_id_from_miner;
use cuzk_filecoin::shape_c1::{shape_only_c1, shape_only_json};
use cuzk_filecoin::shape_kinds::{shape_only_post, shape_only_post_proof};
use cuzk_filecoin::shape_marker::SHAPE_ONLY_TAG;
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredSealProof, SectorId};
use storage_proofs_update::PartitionProof;

/// Curio's rendering of `randomness[:8]` in a wdpost id: a Go byte slice, "[1 2 3 ...]".
fn go_bytes(b: &[u8]) -> String {
    format!("[{}]", b.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn snap(i: &KindInput, id: &str, sector_size: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size,
        registered_proof: i.registered_proof,
        vanilla_proofs: i.vanilla_proofs.clone(),
        sector_number: i.sector_id,
        miner_id: i.miner_id,
        comm_r_old: i.comm_r_old.clone(),
        comm_r_new: i.comm_r_new.clone(),
        comm_d_new: i.comm_d_new.clone(),
        ..Default::default()
    }
}

fn wdpost(i: &KindInput) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("wdpost-{}-{}-{}", i.miner_id, i.partition_index, go_bytes(&i.randomness[..8])),
        proof_kind: ProofKind::WindowPostPartition as i32,
        sector_size: i.sector_size,
        registered_proof: i.registered_proof,
        vanilla_proofs: i.vanilla_proofs.clone(),
        miner_id: i.miner_id,
        randomness: i.randomness.clone(),
        partition_index: i.partition_index,
        ..Default::default()
    }
}

fn winpost(i: &KindInput) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("winpost-{}-{}", i.miner_id, hex(&i.randomness[..8])),
        proof_kind: ProofKind::WinningPost as i32,
        registered_proof: i.registered_proof,
        vanilla_proofs: i.vanilla_proofs.clone(),
        miner_id: i.miner_id,
        randomness: i.randomness.clone(),
        ..Default::default()
    }
}

fn comm(v: &[u8]) -> [u8; 32] {
    v.try_into().unwrap()
}

async fn prove(addr: &Address, submit: SubmitProofRequest) -> AwaitProofResponse {
    let mut client = connect(addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects");
    client.prove(ProveRequest { submit: Some(submit) }).await.expect("Prove answers").into_inner().result.unwrap()
}

fn cuzkd(dir: &Path, params: &Path, parents: &Path, sock: &Path) -> Killed {
    let config = dir.join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_dir = {:?}\nlisten = \"unix://{}\"\n[srs]\nparam_cache = {params:?}\n\
             parent_cache = {parents:?}\n[gpus]\nbackend = \"cpu\"\n[dbus]\nbus = \"none\"\n\
             [log]\ntarget = \"stderr\"\n",
            dir.join("state"),
            sock.display(),
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_cuzkd"))
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("cuzkd.log")).unwrap())
        .spawn()
        .expect("cuzkd starts");
    let end = Instant::now() + Duration::from_secs(30);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sock.exists(), "cuzkd did not listen: {}", std::fs::read_to_string(dir.join("cuzkd.log")).unwrap_or_default());
    Killed(child)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_proof_kind_curio_sends_is_proved_and_verifies() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let k = ensure_kind_fixtures(&f.dir, 2048).expect("2 KiB PoSt and SnapDeals fixtures");
    let dir = scratch("kinds");
    let sock = dir.join("cuzk.sock");
    let _daemon = cuzkd(&dir, &f.param_dir(), &f.parent_dir(), &sock);
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();

    let wd = wdpost(&k.window);
    assert!(wd.request_id.contains(' ') && wd.request_id.contains('['), "{}", wd.request_id);
    let mut short = winpost(&k.winning);
    short.request_id.push_str("-short");
    short.randomness.truncate(31);
    let mut wrong_type = winpost(&k.winning);
    wrong_type.request_id.push_str("-window-type");
    wrong_type.registered_proof = k.window.registered_proof;
    // Shape-only inputs of every kind (random contents, `cuzk-lab gen-fixture --shape-only`):
    // refused, saying so.
    let shape_c1 = shape_only_c1(RegisteredSealProof::StackedDrg2KiBV1_1, 7).unwrap();
    let shape_porep = SubmitProofRequest {
        request_id: "shape-only-porep".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        miner_id: 1000,
        sector_number: 1,
        sector_size: 2048,
        vanilla_proof: shape_only_json(&shape_c1, 7).unwrap(),
        ..Default::default()
    };
    let shape_post = |winning| shape_only_post(shape_only_post_proof(winning, 2048).unwrap(), None, 7).unwrap();
    let mut shape_winning = winpost(&shape_post(true));
    shape_winning.request_id = "shape-only-winning".into();
    let mut shape_window = wdpost(&shape_post(false));
    shape_window.request_id = "shape-only-window".into();
    let mut tagged = snap(&k.snap, "shape-only-snap", 2048);
    let mut p: PartitionProof<filecoin_proofs::SectorShape2KiB> = bincode::deserialize(&tagged.vanilla_proofs[0]).unwrap();
    p.comm_c = filecoin_hashers::Domain::try_from_bytes(&SHAPE_ONLY_TAG).unwrap();
    tagged.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
    let requests = [
        snap(&k.snap, &format!("snap-{}-{}", k.snap.miner_id, k.snap.sector_id), 2048),
        snap(&k.snap, &format!("ps-snap-{}-{}-7", k.snap.miner_id, k.snap.sector_id), 0),
        wd.clone(),
        winpost(&k.winning),
        short,
        wrong_type,
        shape_porep,
        shape_winning,
        shape_window,
        tagged,
    ];
    let answers = futures_join(&addr, requests.to_vec()).await;
    let log = || std::fs::read_to_string(dir.join("cuzkd.log")).unwrap_or_default();

    let prover = prover_id_from_miner(k.winning.miner_id);
    for (req, r) in requests.iter().zip(&answers).take(4) {
        assert_eq!(r.status, Status::Completed as i32, "{}: {}\n{}", req.request_id, r.error_message, log());
        assert_eq!(r.job_id, req.request_id);
    }
    for r in &answers[..2] {
        let ok = filecoin_proofs_api::update::verify_empty_sector_update_proof(
            cuzk_filecoin::snap::update_proof_from_wire(k.snap.registered_proof).unwrap(),
            &r.proof,
            comm(&k.snap.comm_r_old),
            comm(&k.snap.comm_r_new),
            comm(&k.snap.comm_d_new),
        )
        .unwrap();
        assert!(ok, "the daemon's SnapDeals proof does not verify");
    }
    let window = cuzk_filecoin::post::post_proof_from_wire(k.window.registered_proof).unwrap();
    let replicas = [(SectorId::from(k.window.sector_id), PublicReplicaInfo::new(window, comm(&k.window.comm_r)))].into_iter().collect();
    assert_eq!(answers[2].proof.len(), 192);
    assert!(
        filecoin_proofs_api::post::verify_window_post(&comm(&k.window.randomness), &[(window, &answers[2].proof[..])], &replicas, prover).unwrap(),
        "the daemon's WindowPoSt does not verify"
    );
    let winning = cuzk_filecoin::post::post_proof_from_wire(k.winning.registered_proof).unwrap();
    let replicas = [(SectorId::from(k.winning.sector_id), PublicReplicaInfo::new(winning, comm(&k.winning.comm_r)))].into_iter().collect();
    assert!(
        filecoin_proofs_api::post::verify_winning_post(&comm(&k.winning.randomness), &answers[3].proof, &replicas, prover).unwrap(),
        "the daemon's WinningPoSt does not verify"
    );

    // Bad fields: named, and only their own job failed.
    assert_eq!(answers[4].status, Status::Failed as i32);
    assert!(answers[4].error_message.contains("randomness: 31 bytes; expected 32"), "{}", answers[4].error_message);
    assert_eq!(answers[5].status, Status::Failed as i32);
    assert!(answers[5].error_message.contains("not a WinningPoSt proof type"), "{}", answers[5].error_message);
    for (req, r) in requests.iter().zip(&answers).skip(6) {
        assert_eq!(r.status, Status::Failed as i32, "{}", req.request_id);
        let m = &r.error_message;
        assert!(m.contains("is a shape-only input (shape-only: cannot verify)"), "{}: {m}", req.request_id);
    }

    // Curio retries a preempted task with the same id: it attaches to the stored result.
    let again = prove(&addr, wd).await;
    assert_eq!(again.proof, answers[2].proof);
}

/// All requests at once, answers in request order.
async fn futures_join(addr: &Address, requests: Vec<SubmitProofRequest>) -> Vec<AwaitProofResponse> {
    let handles: Vec<_> = requests
        .into_iter()
        .map(|r| {
            let addr = addr.clone();
            tokio::spawn(async move { prove(&addr, r).await })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
