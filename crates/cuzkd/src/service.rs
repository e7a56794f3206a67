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
        EngineError::Draining => Status::unavailable(e.to_string()),
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
            assigned_gpu: String::new(),
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
            gpus: s
                .workers
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    // A GPU's "VRAM" here is its arena: the budget cuzk may use, and what
                    // of it is free now. The CPU device reports zeros.
                    let mem = s.devices.iter().find(|d| d.name == w.device).and_then(|d| d.memory);
                    v1::GpuStatus {
                        ordinal: i as u32,
                        name: w.device.clone(),
                        vram_total_bytes: mem.map_or(0, |m| m.budget_bytes),
                        vram_free_bytes: mem.map_or(0, |m| m.budget_bytes.saturating_sub(m.in_use_bytes)),
                        current_job_id: w.job_id.clone().unwrap_or_default(),
                        current_proof_kind: w.kind.map(|k| k.queue_name().to_string()).unwrap_or_default(),
                    }
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
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }))
    }

    async fn get_metrics(
        &self,
        _: Request<v1::GetMetricsRequest>,
    ) -> Result<Response<v1::GetMetricsResponse>, Status> {
        Ok(Response::new(v1::GetMetricsResponse { prometheus_text: self.engine.metrics_text() }))
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
        let (was_loaded, freed_bytes) = self.engine.evict_srs(&request.into_inner().circuit_id);
        Ok(Response::new(v1::EvictSrsResponse { was_loaded, freed_bytes }))
    }
}
