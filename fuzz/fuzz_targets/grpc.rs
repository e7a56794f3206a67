//! Every request message of `cuzk.v1.ProvingEngine`, decoded from bytes with prost (as tonic
//! does) and passed to cuzkd's `ProvingService` over a real `Engine` (CPU device, the real
//! PoRep runner with an empty parameter directory, so a job fails at planning in
//! milliseconds). The first byte picks the method, the rest is the message.
//!
//! Checked: no panic; no call blocks (AwaitProof's `timeout_ms` is forced to 1, and Prove,
//! whose job fails at planning, must return within `PROVE_LIMIT`); every error is one of the
//! codes the service documents for a bad request (INVALID_ARGUMENT, NOT_FOUND,
//! ALREADY_EXISTS, RESOURCE_EXHAUSTED, UNAVAILABLE), never INTERNAL or another.

#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cuzk_engine::{Device, Engine, EngineConfig};
use cuzk_proto::v1;
use cuzk_proto::ProvingEngine;
use cuzkd::service::ProvingService;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tonic::{Code, Request, Response, Status};

/// A Prove whose job fails at planning takes milliseconds; this much means it hangs.
const PROVE_LIMIT: Duration = Duration::from_secs(30);

struct Harness {
    rt: tokio::runtime::Runtime,
    service: ProvingService,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = cuzk_fuzz::scratch_dir("grpc");
        let mut config = EngineConfig::new(dir.join("state"));
        // Small, so that admission limits are reached and results do not pile up.
        config.max_queued_jobs = 8;
        config.max_spool_bytes = 1 << 20;
        config.result_ttl = Duration::from_millis(500);
        config.fetched_result_ttl = Duration::from_millis(100);
        let runner = cuzk_fuzz::porep_runner_without_params(&dir);
        let engine = Engine::start(config, Arc::new(runner), vec![Device::cpu()]).expect("engine");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        Harness {
            rt,
            service: ProvingService { engine },
        }
    })
}

/// Errors a request can earn by its content or the engine's load; anything else (INTERNAL,
/// UNKNOWN, ...) for a request is a bug.
fn check<T>(method: &str, r: Result<Response<T>, Status>) {
    if let Err(s) = r {
        let allowed = [
            Code::InvalidArgument,
            Code::NotFound,
            Code::AlreadyExists,
            Code::ResourceExhausted,
            Code::Unavailable,
            // EvictSRS while a job holds the parameters.
            Code::FailedPrecondition,
        ];
        assert!(
            allowed.contains(&s.code()),
            "{method}: unexpected status {:?}: {}",
            s.code(),
            s.message()
        );
    }
}

fn decode<M: Message + Default>(bytes: &[u8]) -> Option<Request<M>> {
    M::decode(bytes).ok().map(Request::new)
}

fuzz_target!(|data: &[u8]| {
    let Some((&method, msg)) = data.split_first() else {
        return;
    };
    let h = harness();
    let s = &h.service;
    h.rt.block_on(async {
        match method % 8 {
            0 => {
                if let Some(r) = decode::<v1::SubmitProofRequest>(msg) {
                    check("SubmitProof", s.submit_proof(r).await);
                }
            }
            1 => {
                if let Some(mut r) = decode::<v1::AwaitProofRequest>(msg) {
                    // 0 would wait for ever; the shortest real wait instead.
                    r.get_mut().timeout_ms = 1;
                    check("AwaitProof", s.await_proof(r).await);
                }
            }
            2 => {
                if let Some(r) = decode::<v1::ProveRequest>(msg) {
                    match tokio::time::timeout(PROVE_LIMIT, s.prove(r)).await {
                        Ok(r) => check("Prove", r),
                        Err(_) => panic!("Prove did not return within {PROVE_LIMIT:?}"),
                    }
                }
            }
            3 => {
                if let Some(r) = decode::<v1::CancelProofRequest>(msg) {
                    check("CancelProof", s.cancel_proof(r).await);
                }
            }
            4 => {
                if let Some(r) = decode::<v1::GetStatusRequest>(msg) {
                    check("GetStatus", s.get_status(r).await);
                }
            }
            5 => {
                if let Some(r) = decode::<v1::GetMetricsRequest>(msg) {
                    check("GetMetrics", s.get_metrics(r).await);
                }
            }
            6 => {
                if let Some(r) = decode::<v1::PreloadSrsRequest>(msg) {
                    check("PreloadSRS", s.preload_srs(r).await);
                }
            }
            _ => {
                if let Some(r) = decode::<v1::EvictSrsRequest>(msg) {
                    check("EvictSRS", s.evict_srs(r).await);
                }
            }
        }
    });
});
