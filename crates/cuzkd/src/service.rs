//! The `cuzk.v1.ProvingEngine` gRPC service: each method maps onto one [`Engine`] call. Bad
//! requests are INVALID_ARGUMENT, unknown jobs NOT_FOUND; a proof that fails is a FAILED
//! result with its message, never a transport error.

use std::time::Duration;

use cuzk_engine::{
    AwaitOutcome, Engine, EngineError, JobRequest, JobResult, JobStatus, Priority, ProofKind,
};
use cuzk_proto::v1::{self, await_proof_response::Status as WireStatus};
use tonic::{Request, Response, Status};

pub struct ProvingService {
    pub engine: Engine,
}

/// The gRPC status of an engine error.
pub fn status_of(e: EngineError) -> Status {
    match e {
        EngineError::InvalidRequest(_) | EngineError::Srs { .. } => Status::invalid_argument(e.to_string()),
        EngineError::NotFound(_) => Status::not_found(e.to_string()),
        EngineError::Conflict { .. } => Status::already_exists(e.to_string()),
        EngineError::ResourceExhausted { .. } => Status::resource_exhausted(e.to_string()),
        EngineError::Draining => Status::unavailable(e.to_string()),
        EngineError::SrsInUse { .. } => Status::failed_precondition(e.to_string()),
        _ => Status::internal(e.to_string()),
    }
}

fn job_request(r: v1::SubmitProofRequest) -> Result<JobRequest, Status> {
    let kind = ProofKind::from_wire(r.proof_kind).map_err(status_of)?;
    let priority = Priority::from_wire(r.priority).map_err(status_of)?;
    let mut j = JobRequest::new(kind);
    j.request_id = r.request_id;
    j.priority = priority;
    j.sector_size = r.sector_size;
    j.registered_proof = r.registered_proof;
    j.vanilla_proof = r.vanilla_proof;
    j.vanilla_proofs = r.vanilla_proofs;
    j.sector_number = r.sector_number;
    j.miner_id = r.miner_id;
    j.randomness = r.randomness;
    j.partition_index = r.partition_index;
    j.comm_r_old = r.comm_r_old;
    j.comm_r_new = r.comm_r_new;
    j.comm_d_new = r.comm_d_new;
    Ok(j)
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn await_response(job_id: &str, outcome: AwaitOutcome) -> v1::AwaitProofResponse {
    match outcome {
        AwaitOutcome::Timeout { .. } => v1::AwaitProofResponse {
            job_id: job_id.to_string(),
            status: WireStatus::Timeout as i32,
            ..Default::default()
        },
        AwaitOutcome::Done(r) => result_response(&r),
    }
}

fn result_response(r: &JobResult) -> v1::AwaitProofResponse {
    let t = &r.timings;
    v1::AwaitProofResponse {
        job_id: r.job_id.clone(),
        status: match r.status {
            JobStatus::Completed => WireStatus::Completed,
            JobStatus::Failed => WireStatus::Failed,
            JobStatus::Cancelled => WireStatus::Cancelled,
        } as i32,
        proof: r.proof.clone(),
        error_message: r.error.clone().unwrap_or_default(),
        queue_wait_ms: ms(t.queue_wait),
        srs_load_ms: ms(t.srs_load),
        synthesis_ms: ms(t.synthesis),
        gpu_compute_ms: ms(t.gpu_compute),
        total_ms: ms(t.total),
    }
}

/// `timeout_ms` 0 means no limit.
fn timeout(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

impl ProvingService {
    /// `submit` writes to the spool (fsync): off the async executor.
    async fn submit(&self, r: v1::SubmitProofRequest) -> Result<cuzk_engine::Submitted, Status> {
        let req = job_request(r)?;
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || engine.submit(req))
            .await
            .map_err(|e| Status::internal(format!("submit task: {e}")))?
            .map_err(status_of)
    }
}

#[tonic::async_trait]
impl cuzk_proto::ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<v1::SubmitProofRequest>,
    ) -> Result<Response<v1::SubmitProofResponse>, Status> {
        let s = self.submit(request.into_inner()).await?;
        Ok(Response::new(v1::SubmitProofResponse {
            job_id: s.job_id,
            queue_position: s.queue_position,
            // Known only when the id is already on a device; a new job is assigned later.
            assigned_gpu: s.device.unwrap_or_default(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<v1::AwaitProofRequest>,
    ) -> Result<Response<v1::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let outcome = self.engine.await_job(&r.job_id, timeout(r.timeout_ms)).await.map_err(status_of)?;
        Ok(Response::new(await_response(&r.job_id, outcome)))
    }

    async fn prove(&self, request: Request<v1::ProveRequest>) -> Result<Response<v1::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let s = self.submit(submit).await?;
        let outcome = self.engine.await_job(&s.job_id, None).await.map_err(status_of)?;
        Ok(Response::new(v1::ProveResponse { result: Some(await_response(&s.job_id, outcome)) }))
    }

    async fn cancel_proof(
        &self,
        request: Request<v1::CancelProofRequest>,
    ) -> Result<Response<v1::CancelProofResponse>, Status> {
        let outcome = self.engine.cancel(&request.into_inner().job_id).map_err(status_of)?;
        Ok(Response::new(v1::CancelProofResponse { was_running: outcome.was_running() }))
    }

    async fn get_status(
        &self,
        _: Request<v1::GetStatusRequest>,
    ) -> Result<Response<v1::GetStatusResponse>, Status> {
        let s = self.engine.status();
        Ok(Response::new(v1::GetStatusResponse {
            // One entry per GPU, by its driver ordinal; its "VRAM" is its arena: the budget
            // cuzk may use, and what of it is free now. The CPU backend lists no GPU.
            gpus: s
                .devices
                .iter()
                .filter_map(|d| {
                    let ordinal = d.ordinal?;
                    let mem = d.memory;
                    Some(v1::GpuStatus {
                        ordinal,
                        name: d.name.clone(),
                        vram_total_bytes: mem.map_or(0, |m| m.budget_bytes),
                        vram_free_bytes: mem.map_or(0, |m| m.budget_bytes.saturating_sub(m.in_use_bytes)),
                        current_job_id: d.jobs.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>().join(","),
                        current_proof_kind: d
                            .jobs
                            .iter()
                            .map(|(_, k)| k.queue_name())
                            .collect::<Vec<_>>()
                            .join(","),
                    })
                })
                .collect(),
            loaded_srs: s
                .srs
                .iter()
                .map(|r| v1::SrsStatus {
                    circuit_id: r.circuit_id.clone(),
                    tier: v1::srs_status::Tier::Warm as i32,
                    size_bytes: r.size_bytes,
                    ref_count: r.ref_count,
                })
                .collect(),
            queues: s
                .queues
                .iter()
                .map(|q| v1::QueueStatus {
                    proof_kind: q.kind.queue_name().to_string(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            total_proofs_completed: s.completed,
            total_proofs_failed: s.failed,
            uptime_seconds: s.uptime.as_secs(),
            pinned_memory_bytes: s.devices.iter().filter_map(|d| d.pinned).map(|p| p.in_use_bytes).sum(),
            pinned_memory_limit_bytes: s.devices.iter().filter_map(|d| d.pinned).map(|p| p.budget_bytes).sum(),
        }))
    }

    async fn get_metrics(
        &self,
        _: Request<v1::GetMetricsRequest>,
    ) -> Result<Response<v1::GetMetricsResponse>, Status> {
        Ok(Response::new(v1::GetMetricsResponse { prometheus_text: crate::metrics::text(&self.engine) }))
    }

    async fn preload_srs(
        &self,
        request: Request<v1::PreloadSrsRequest>,
    ) -> Result<Response<v1::PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let engine = self.engine.clone();
        let (already_loaded, t) = tokio::task::spawn_blocking(move || engine.preload_srs(&id))
            .await
            .map_err(|e| Status::internal(format!("preload task: {e}")))?
            .map_err(status_of)?;
        Ok(Response::new(v1::PreloadSrsResponse { already_loaded, load_time_ms: ms(t) }))
    }

    async fn evict_srs(
        &self,
        request: Request<v1::EvictSrsRequest>,
    ) -> Result<Response<v1::EvictSrsResponse>, Status> {
        let (was_loaded, freed_bytes) =
            self.engine.evict_srs(&request.into_inner().circuit_id).map_err(status_of)?;
        Ok(Response::new(v1::EvictSrsResponse { was_loaded, freed_bytes }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use cuzk_engine::*;
    use cuzk_proto::ProvingEngine as _;

    use super::*;

    /// Proves nothing: holds each job in `prove` until `open`, then answers its id's bytes.
    struct Gate(Arc<AtomicBool>);

    struct GateJob {
        id: String,
        open: Arc<AtomicBool>,
    }

    impl ProofRunner for Gate {
        fn plan(&self, _: &JobRequest) -> Result<JobPlan, RunError> {
            Ok(JobPlan::new(1, 1))
        }
        fn prepare(&self, r: &JobRequest, _: &JobPlan, _: &CancelToken) -> Result<Box<dyn PreparedJob>, RunError> {
            Ok(Box::new(GateJob { id: r.request_id.clone(), open: self.0.clone() }))
        }
        fn srs_for_circuit(&self, c: &str) -> Result<SrsRef, RunError> {
            Err(RunError::BadRequest(format!("no circuit {c}").into()))
        }
    }

    impl PreparedJob for GateJob {
        fn partitions(&self) -> usize {
            1
        }
        fn synthesize(&self, _: usize, _: &CancelToken) -> Result<PartitionWork, RunError> {
            Ok(PartitionWork::default())
        }
        fn prove(&self, _: usize, _: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError> {
            while !self.open.load(Ordering::SeqCst) {
                ctx.cancel.check()?;
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(PartitionProof::placeholder())
        }
        fn finish(&self, _: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
            Ok(ProofOutput { proof: self.id.clone().into_bytes(), ..Default::default() })
        }
    }

    fn winpost(id: &str, payload: &[u8]) -> v1::SubmitProofRequest {
        v1::SubmitProofRequest {
            request_id: id.into(),
            proof_kind: v1::ProofKind::WinningPost as i32,
            vanilla_proof: payload.to_vec(),
            ..Default::default()
        }
    }

    /// GetStatus lists GPUs by their driver ordinal with arena and pinned pool, and the job
    /// a GPU proves; a known id answers with its GPU; the same id with other content is
    /// ALREADY_EXISTS; admission limits are RESOURCE_EXHAUSTED.
    #[tokio::test(flavor = "multi_thread")]
    async fn status_is_true_to_the_devices_and_conflicts_are_already_exists() {
        let dir = std::env::temp_dir().join(format!("cuzkd-service-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = Arc::new(AtomicBool::new(false));
        let arena = MemoryStatus { budget_bytes: 100 << 30, in_use_bytes: 30 << 30, high_water_bytes: 40 << 30 };
        let pinned = MemoryStatus { budget_bytes: 256 << 20, in_use_bytes: 64 << 20, high_water_bytes: 64 << 20 };
        let devices = vec![
            Device::new("gpu3 H200", Arc::new(cuzk_groth16::CpuBackend))
                .with_memory(Arc::new(move || arena))
                .with_gpu(3, Arc::new(move || pinned)),
            Device::cpu().with_workers(0),
        ];
        let engine = Engine::start(EngineConfig::new(&dir), Arc::new(Gate(open.clone())), devices).unwrap();
        let svc = ProvingService { engine: engine.clone() };
        svc.submit_proof(Request::new(winpost("winpost-1000-aa", b"sector 1"))).await.unwrap();
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while engine.job("winpost-1000-aa").unwrap().state != JobState::Proving {
            assert!(std::time::Instant::now() < end, "never proving");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let st = svc.get_status(Request::new(v1::GetStatusRequest {})).await.unwrap().into_inner();
        assert_eq!(st.gpus.len(), 1, "the CPU is not a GPU: {:?}", st.gpus);
        let g = &st.gpus[0];
        assert_eq!((g.ordinal, g.name.as_str()), (3, "gpu3 H200"));
        assert_eq!((g.vram_total_bytes, g.vram_free_bytes), (100 << 30, 70 << 30));
        assert_eq!((g.current_job_id.as_str(), g.current_proof_kind.as_str()), ("winpost-1000-aa", "winning-post"));
        assert_eq!((st.pinned_memory_bytes, st.pinned_memory_limit_bytes), (64 << 20, 256 << 20));

        let again = svc.submit_proof(Request::new(winpost("winpost-1000-aa", b"sector 1"))).await.unwrap();
        assert_eq!(again.into_inner().assigned_gpu, "gpu3 H200");
        let err = svc.submit_proof(Request::new(winpost("winpost-1000-aa", b"sector 2"))).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::AlreadyExists, "{err}");
        assert!(err.message().contains("winpost-1000-aa"), "{err}");

        open.store(true, Ordering::SeqCst);
        let r = svc
            .await_proof(Request::new(v1::AwaitProofRequest { job_id: "winpost-1000-aa".into(), timeout_ms: 5000 }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((r.status, r.proof.as_slice()), (WireStatus::Completed as i32, b"winpost-1000-aa".as_slice()));
        let full = EngineError::ResourceExhausted { limit: "max_queued_jobs", value: 3, detail: "3 jobs are queued".into() };
        let st = status_of(full);
        assert_eq!(st.code(), tonic::Code::ResourceExhausted);
        assert!(st.message().contains("max_queued_jobs = 3"), "{}", st.message());
        assert!(engine.drain(Duration::from_secs(5)).threads_stopped);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
