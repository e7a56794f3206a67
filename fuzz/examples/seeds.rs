//! Writes the seed inputs of every target into `corpus/<target>/seed-*` (run from fuzz/:
//! `cargo run --release --example seeds`). Seeds are real records made by the code that
//! writes them (parameters by bellperson, spool records by `Spool`, messages by prost), the
//! 2 KiB C1 fixture when it exists ($CUZK_FIXTURE_DIR/2KiB, else ~/.cache/cuzk/fixtures/2KiB),
//! and small hand-made variants. Each seed starts with the byte that picks its mode.

use std::path::{Path, PathBuf};

use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use cuzk_engine::spool::{Spool, SpooledJobRef};
use cuzk_engine::{JobRequest, JobResult, JobStatus, Priority, ProofKind, StageTimings};
use cuzk_groth16::testing::SyntheticCircuit;
use cuzk_proto::v1;
use prost::Message;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn put(target: &str, name: &str, mode: Option<u8>, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend(mode);
    v.extend_from_slice(bytes);
    std::fs::write(dir.join(format!("seed-{name}")), v).unwrap();
}

fn fixture_dir() -> PathBuf {
    let base = std::env::var_os("CUZK_FIXTURE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/cuzk/fixtures")
        });
    base.join("2KiB")
}

fn c1_seeds() {
    let dir = fixture_dir();
    match (
        std::fs::read(dir.join("c1.json")),
        std::fs::read(dir.join("c1.envelope.json")),
    ) {
        (Ok(bare), Ok(envelope)) => {
            // The fuzzer starts from inputs that pass every check (the shape check included).
            for c1 in [&bare, &envelope] {
                let parsed = cuzk_filecoin::parse_c1(c1).expect("the fixture parses");
                cuzk_filecoin::PoRepJob::new(&parsed).expect("the fixture passes the shape check");
            }
            put("c1", "fixture-bare", Some(0), &bare);
            put("c1", "fixture-envelope", Some(0), &envelope);
            // Odd mode: wrapped by the target, SectorSize 2048 (index 0).
            put("c1", "fixture-wrapped", Some(1), &bare);
            // Small but complete C1 outputs of every proof type (the fixture's commitments, one
            // partition of no challenges): each parses and reaches its sector shape's checks,
            // from an input 100 times smaller than the fixture.
            let fixture: serde_json::Value = serde_json::from_slice(&bare).unwrap();
            for proof in cuzk_filecoin::c1::REGISTERED_SEAL_PROOFS {
                let name = serde_json::to_value(proof)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string();
                let variant = format!("{}V1", &name[..name.find("V1").unwrap()]);
                let mut small = fixture.clone();
                small["registered_proof"] = name.clone().into();
                small["vanilla_proofs"] = serde_json::json!({ variant: [[]] });
                let bytes = serde_json::to_vec(&small).unwrap();
                let parsed = cuzk_filecoin::parse_c1(&bytes).expect("a small C1 parses");
                assert!(
                    cuzk_filecoin::PoRepJob::new(&parsed).is_err(),
                    "{name}: no challenges accepted"
                );
                put("c1", &format!("small-{name}"), Some(0), &bytes);
            }
        }
        _ => eprintln!(
            "no 2 KiB C1 fixture in {}: c1 seeds are the hand-made ones only",
            dir.display()
        ),
    }
    let hand: [(&str, u8, &str); 8] = [
        ("empty-object", 0, "{}"),
        (
            "proof-only",
            0,
            r#"{"registered_proof":"StackedDrg2KiBV1_1"}"#,
        ),
        (
            "unknown-proof",
            0,
            r#"{"registered_proof":"StackedDrg3KiBV1"}"#,
        ),
        ("array", 0, "[1,2,3]"),
        (
            "envelope-bad-b64",
            0,
            r#"{"SectorNum":1,"Phase1Out":"!!!","SectorSize":2048}"#,
        ),
        (
            "envelope-not-json",
            0,
            r#"{"SectorNum":1,"Phase1Out":"aGVsbG8=","SectorSize":2048}"#,
        ),
        (
            "wrapped-proof-only",
            1,
            r#"{"registered_proof":"StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"}"#,
        ),
        (
            "wrapped-32g",
            7,
            r#"{"registered_proof":"StackedDrg32GiBV1_1"}"#,
        ),
    ];
    for (name, mode, text) in hand {
        put("c1", name, Some(mode), text.as_bytes());
    }
}

fn params_seeds() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for (constraints, inputs) in [(8usize, 1usize), (16, 2)] {
        let c = SyntheticCircuit {
            constraints,
            inputs: (0..inputs).map(|i| Fr::from(i as u64 + 2)).collect(),
            seed: constraints as u64,
        };
        let params = groth16::generate_random_parameters::<Bls12, _, _>(c, &mut rng).unwrap();
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        put("params", &format!("synthetic-{constraints}"), None, &bytes);
        let check =
            std::env::temp_dir().join(format!("cuzk-fuzz-seed-{}.params", std::process::id()));
        std::fs::write(&check, &bytes).unwrap();
        cuzk_groth16::Srs::load(&check).expect("the seed loads");
        let _ = std::fs::remove_file(&check);
        if constraints == 8 {
            put("params", "truncated", None, &bytes[..bytes.len() - 50]);
            put("params", "header-only", None, &bytes[..900]);
            put("params", "trailing", None, &[&bytes[..], b"junk"].concat());
            let mut flipped = bytes.clone();
            flipped[1000] ^= 0x40;
            put("params", "bad-point", None, &flipped);
        }
    }
}

fn spool_seeds() {
    let dir = std::env::temp_dir().join(format!("cuzk-fuzz-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let spool = Spool::open(&dir).unwrap();
    let request = JobRequest::porep(
        "fuzz",
        b"{\"registered_proof\":\"StackedDrg2KiBV1_1\"}".to_vec(),
        1000,
        1,
    );
    spool
        .put_job(&SpooledJobRef {
            job_id: "fuzz",
            seq: 3,
            priority: Priority::High,
            accepted_unix_ms: 1_700_000_000_000,
            digest: &request.content_digest(),
            payload_bytes: request.payload_bytes(),
            request: &request,
        })
        .unwrap();
    let req = std::fs::read(dir.join("spool/jobs/66757a7a.req")).unwrap();
    put("spool", "req", Some(0), &req);
    // A record from before digests (recovery reads it whole).
    let mut old: serde_json::Value = serde_json::from_slice(&req).unwrap();
    old.as_object_mut().unwrap().remove("digest");
    old.as_object_mut().unwrap().remove("payload_bytes");
    put(
        "spool",
        "req-no-digest",
        Some(0),
        &serde_json::to_vec(&old).unwrap(),
    );
    put("spool", "req-truncated", Some(0), &req[..req.len() / 2]);
    let mut result = JobResult {
        job_id: "fuzz".into(),
        kind: ProofKind::PoRepSealCommit,
        priority: Priority::Normal,
        status: JobStatus::Completed,
        proof: vec![7; 192],
        error: None,
        timings: StageTimings::default(),
        // Far in the future, so that the engine keeps it.
        finished_unix_ms: 4_000_000_000_000,
        attempts: 1,
        digest: Some(request.content_digest()),
    };
    spool.put_result(&result).unwrap();
    let json = std::fs::read(dir.join("spool/results/66757a7a.json")).unwrap();
    put("spool", "result", Some(1), &json);
    put("spool", "both", Some(3), &json);
    result.status = JobStatus::Failed;
    result.error = Some("bad request".into());
    result.proof.clear();
    result.finished_unix_ms = u64::MAX;
    put(
        "spool",
        "result-failed-late",
        Some(1),
        &serde_json::to_vec(&result).unwrap(),
    );
    for (name, attempts) in [
        ("attempts-1", "1"),
        ("attempts-3", "3\n"),
        ("attempts-junk", "x"),
    ] {
        put("spool", name, Some(2), attempts.as_bytes());
    }
    let recovered = Spool::open(&dir).unwrap().recover().unwrap();
    assert_eq!(
        (recovered.results.len(), recovered.unreadable.len()),
        (1, 0),
        "the seeds are readable"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn grpc_seeds() {
    let submit = v1::SubmitProofRequest {
        request_id: "porep-1000-1".into(),
        proof_kind: 1,
        sector_size: 2048,
        priority: 3,
        vanilla_proof: br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#.to_vec(),
        sector_number: 1,
        miner_id: 1000,
        ..Default::default()
    };
    let snap = v1::SubmitProofRequest {
        request_id: "snap-1".into(),
        proof_kind: 2,
        vanilla_proofs: vec![vec![1, 2, 3]],
        comm_r_old: vec![0; 32],
        ..Default::default()
    };
    accepted_by_the_service(&submit);
    put("grpc", "submit", Some(0), &submit.encode_to_vec());
    put("grpc", "submit-snap", Some(0), &snap.encode_to_vec());
    let wait = v1::AwaitProofRequest {
        job_id: "porep-1000-1".into(),
        timeout_ms: 5,
    };
    put("grpc", "await", Some(1), &wait.encode_to_vec());
    let prove = v1::ProveRequest {
        submit: Some(v1::SubmitProofRequest {
            request_id: "prove-1".into(),
            ..submit.clone()
        }),
    };
    put("grpc", "prove", Some(2), &prove.encode_to_vec());
    put(
        "grpc",
        "cancel",
        Some(3),
        &v1::CancelProofRequest {
            job_id: "porep-1000-1".into(),
        }
        .encode_to_vec(),
    );
    put(
        "grpc",
        "status",
        Some(4),
        &v1::GetStatusRequest {}.encode_to_vec(),
    );
    put(
        "grpc",
        "metrics",
        Some(5),
        &v1::GetMetricsRequest {}.encode_to_vec(),
    );
    put(
        "grpc",
        "preload",
        Some(6),
        &v1::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        }
        .encode_to_vec(),
    );
    put(
        "grpc",
        "evict",
        Some(7),
        &v1::EvictSrsRequest {
            circuit_id: "ni-porep-32g".into(),
        }
        .encode_to_vec(),
    );
}

/// The submit seed reaches the engine: the service accepts it (its job then fails at
/// planning, for want of parameters).
fn accepted_by_the_service(submit: &v1::SubmitProofRequest) {
    use cuzk_engine::{Device, Engine, EngineConfig};
    use cuzk_filecoin::FilecoinRunner;
    use cuzk_proto::ProvingEngine;
    let dir = std::env::temp_dir().join(format!("cuzk-fuzz-seeds-grpc-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("params")).unwrap();
    let runner = FilecoinRunner::new(&dir.join("params"), None).unwrap();
    let engine = Engine::start(
        EngineConfig::new(dir.join("state")),
        std::sync::Arc::new(runner),
        vec![Device::cpu()],
    )
    .unwrap();
    let service = cuzkd::service::ProvingService {
        engine: engine.clone(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let r = rt.block_on(service.submit_proof(tonic::Request::new(submit.clone())));
    assert!(r.is_ok(), "the submit seed is refused: {r:?}");
    engine.drain(std::time::Duration::ZERO);
    let _ = std::fs::remove_dir_all(&dir);
}

fn config_seeds() {
    let readme = include_str!("../../README.md");
    let from = readme
        .find("### Configuration")
        .expect("README has a Configuration section");
    let start = readme[from..]
        .find("```toml\n")
        .expect("with a toml example")
        + from
        + 8;
    let end = readme[start..].find("```").unwrap() + start;
    put("config", "readme", None, readme[start..end].as_bytes());
    // The shapes of crates/cuzkd/src/config.rs's tests.
    let texts = [
        "[daemon]\nlisten = \"127.0.0.1:9820\"\nstate_dir = \"/tmp/s\"\n[daemon.tcp]\ninsecure = true\n[srs]\nparam_cache = \"/p\"\n[gpus]\ndevices = [0, 1]\ngpu_workers_per_device = 2\nbackend = \"cpu\"\n",
        "[gpus]\nvram_budget_bytes = 1000\ndevices = [0, { ordinal = 1, vram_budget_bytes = 500, workers = 2 }]\n",
        "[dbus]\nbus = \"none\"\n[log]\ntarget = \"stderr\"\nlevel = \"info,cuzk_engine=debug\"\n",
        "[engine]\nmax_queued_jobs = 5\nmax_spool_bytes = 1048576\nsynthesis_workers = 2\nhost_memory_budget_bytes = 1073741824\nresult_ttl_secs = 60\nmax_attempts = 3\n",
        "[daemon]\ndrain_timeout_secs = 604800\nmax_message_bytes = 4194304\nmax_concurrent_streams = 1\n",
        "[gpus]\npinned_memory_budget_bytes = 134217728\nbackend = \"gpu\"\ndevices = [{ ordinal = 1023, workers = 0 }, { ordinal = 0 }]\n",
        "[daemon]\nlisten = \"10.0.0.1:9820\"\n[daemon.tcp]\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\ntls_client_ca = \"/ca.pem\"\ntoken_file = \"/t\"\n",
        "[daemon]\nlisten = \"unix:///run/cuzk/cuzk.sock\"\n",
    ];
    for (i, t) in texts.iter().enumerate() {
        put("config", &format!("test-{i}"), None, t.as_bytes());
    }
}

fn main() {
    c1_seeds();
    params_seeds();
    spool_seeds();
    grpc_seeds();
    config_seeds();
}
