//! Test double: a `ProofRunner` scripted by its request payload, so that scheduling, cancel,
//! budgets and recovery are tested in milliseconds. It is not a prover: its "proof" is the
//! request id's bytes. The real runner is tested in `porep_2kib.rs`.

#![allow(dead_code)]

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_engine::*;
use serde::Deserialize;

/// What a scripted job does, as its `vanilla_proof` JSON.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct Script {
    pub synth_ms: u64,
    pub prove_ms: u64,
    pub footprint: u64,
    /// Fail at plan with this message.
    pub plan_fail: Option<String>,
    /// Fail at prove with this message.
    pub prove_fail: Option<String>,
    /// Panic in this stage ("plan", "synthesize" or "prove"), as a library bug would.
    pub panic_in: Option<String>,
}

fn maybe_panic(s: &Script, stage: &str) {
    if s.panic_in.as_deref() == Some(stage) {
        panic!("scripted panic in {stage}");
    }
}

#[derive(Default)]
pub struct Scripted {
    /// Job ids in the order proving started.
    pub proved: Mutex<Vec<String>>,
    pub synthesized: Mutex<Vec<String>>,
    /// Jobs holding synthesized data now, and the most at once.
    pub held: AtomicI64,
    pub max_held: AtomicI64,
    pub cancelled_in_prove: AtomicUsize,
}

/// Synthesized data; counts itself out when dropped (that is the memory being released).
struct Work {
    id: String,
    script: Script,
    runner: Arc<Scripted>,
}

impl Drop for Work {
    fn drop(&mut self) {
        self.runner.held.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct ScriptedRunner(pub Arc<Scripted>);

fn script(r: &JobRequest) -> Result<Script, RunError> {
    serde_json::from_slice(&r.vanilla_proof)
        .map_err(|e| RunError::BadRequest(format!("vanilla_proof: {e}")))
}

/// Sleeps `ms` in small steps, stopping when cancelled (a stage boundary every 5 ms).
fn work_for(ms: u64, cancel: &CancelToken) -> Result<(), RunError> {
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        cancel.check()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    cancel.check()
}

impl ProofRunner for ScriptedRunner {
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError> {
        let s = script(request)?;
        maybe_panic(&s, "plan");
        if let Some(m) = s.plan_fail {
            return Err(RunError::BadRequest(m));
        }
        Ok(JobPlan {
            srs: None,
            footprint_bytes: s.footprint,
        })
    }

    fn synthesize(
        &self,
        request: &JobRequest,
        _plan: &JobPlan,
        cancel: &CancelToken,
    ) -> Result<Synthesized, RunError> {
        let s = script(request)?;
        maybe_panic(&s, "synthesize");
        let now = self.0.held.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.max_held.fetch_max(now, Ordering::SeqCst);
        let work = Work {
            id: request.request_id.clone(),
            script: s.clone(),
            runner: self.0.clone(),
        };
        self.0
            .synthesized
            .lock()
            .unwrap()
            .push(request.request_id.clone());
        work_for(s.synth_ms, cancel)?;
        Ok(Synthesized(Box::new(work)))
    }

    fn prove(&self, work: Synthesized, ctx: ProveContext<'_>) -> Result<ProofOutput, RunError> {
        let work = work
            .0
            .downcast::<Work>()
            .map_err(|_| RunError::Prove("wrong work".into()))?;
        self.0.proved.lock().unwrap().push(work.id.clone());
        // After the witness is taken: a panic here must still drop (release) it.
        maybe_panic(&work.script, "prove");
        if let Err(e) = work_for(work.script.prove_ms, ctx.cancel) {
            self.0.cancelled_in_prove.fetch_add(1, Ordering::SeqCst);
            return Err(e);
        }
        if let Some(m) = &work.script.prove_fail {
            return Err(RunError::Prove(m.clone()));
        }
        Ok(ProofOutput {
            proof: work.id.clone().into_bytes(),
            ..Default::default()
        })
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        Err(RunError::BadRequest(format!(
            "no circuit {circuit_id} in the test runner"
        )))
    }
}

pub fn request(id: &str, kind: ProofKind, priority: Option<Priority>, s: &Script) -> JobRequest {
    JobRequest {
        request_id: id.into(),
        priority,
        vanilla_proof: serde_json::to_vec(s).unwrap(),
        ..JobRequest::new(kind)
    }
}

pub fn porep(id: &str, s: &Script) -> JobRequest {
    request(id, ProofKind::PoRepSealCommit, None, s)
}

pub fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.host_memory_budget_bytes = 1 << 30;
    c
}

pub fn start(c: EngineConfig) -> (Engine, Arc<Scripted>) {
    let log = Arc::new(Scripted::default());
    let e = Engine::start(
        c,
        Arc::new(ScriptedRunner(log.clone())),
        vec![Device::cpu()],
    )
    .expect("engine starts");
    (e, log)
}

/// Awaits a job's end (10 s at most) and returns its result.
pub async fn done(e: &Engine, id: &str) -> Arc<JobResult> {
    match e
        .await_job(id, Some(Duration::from_secs(10)))
        .await
        .expect("known job")
    {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::Timeout { state } => panic!("job {id} still {state:?} after 10 s"),
    }
}

/// Polls until the job is in `state` (5 s at most).
pub fn wait_state(e: &Engine, id: &str, state: JobState) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let now = e.job(id).map(|j| j.state);
        if now.as_ref().ok() == Some(&state) {
            return;
        }
        assert!(
            Instant::now() < end,
            "job {id} never reached {state:?} (is {now:?})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
