//! Test doubles: a `ProofRunner` scripted by its request payload, so that scheduling, cancel,
//! budgets and recovery are tested in milliseconds, and a backend that fails on command
//! (`FailingBackend`), as a GPU whose kernel or allocation fails. The runner is not a
//! prover: its "proof" is the request id's bytes, and each partition's proof runs one
//! kernel through the device's backend at its end. The real runner is tested in
//! `porep_2kib.rs`.

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
    /// Partitions (0 counts as 1).
    pub partitions: usize,
    /// Per partition.
    pub synth_ms: u64,
    /// Per partition.
    pub prove_ms: u64,
    /// Host bytes per partition.
    pub footprint: u64,
    /// Host bytes of the prepared job.
    pub job_bytes: u64,
    /// Fail at plan with this message.
    pub plan_fail: Option<String>,
    /// Fail at prove with this message (only partition `fail_partition`, when given).
    pub prove_fail: Option<String>,
    pub fail_partition: Option<usize>,
    /// Panic in this stage ("plan", "prepare", "synthesize", "prove" or "finish"), as a
    /// library bug would.
    pub panic_in: Option<String>,
    /// Real parameters the job names (circuit id, `.params` path, decoded bytes); its
    /// partitions then refuse to prove without them.
    pub srs: Option<(String, std::path::PathBuf, u64)>,
}

impl Script {
    fn partitions(&self) -> usize {
        self.partitions.max(1)
    }
}

fn maybe_panic(s: &Script, stage: &str) {
    if s.panic_in.as_deref() == Some(stage) {
        panic!("scripted panic in {stage}");
    }
}

/// What the scripted jobs did.
#[derive(Default)]
pub struct Scripted {
    /// Job ids in the order proving of their partitions started (one entry per partition).
    pub proved: Mutex<Vec<String>>,
    /// (job id, partition) in the order proving started.
    pub proved_partitions: Mutex<Vec<(String, usize)>>,
    /// Job ids in the order their first partition's synthesis started.
    pub synthesized: Mutex<Vec<String>>,
    /// (job id, partition) synthesized on the urgent lane (`cuzk_engine::on_urgent_lane`).
    pub urgent: Mutex<Vec<(String, usize)>>,
    /// Witnesses in memory now (from the start of a partition's synthesis to the end of its
    /// proof), and the most at once.
    pub held: AtomicI64,
    pub max_held: AtomicI64,
    /// Partitions being proved now, and the most at once.
    pub proving: AtomicI64,
    pub max_proving: AtomicI64,
    pub cancelled_in_prove: AtomicUsize,
    /// What the runner says it holds outside the jobs (`ProofRunner::held_bytes`: compiled
    /// circuits in cuzk-filecoin).
    pub runner_held: std::sync::atomic::AtomicU64,
}

/// Counts one up in `now` (and `max`) until dropped.
struct Live<'a> {
    now: &'a AtomicI64,
}

impl<'a> Live<'a> {
    fn new(now: &'a AtomicI64, max: &AtomicI64) -> Live<'a> {
        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(n, Ordering::SeqCst);
        Live { now }
    }
}

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct ScriptedRunner(pub Arc<Scripted>);

/// A scripted job, prepared.
struct ScriptedJob {
    id: String,
    script: Script,
    log: Arc<Scripted>,
}

fn script(r: &JobRequest) -> Result<Script, RunError> {
    serde_json::from_slice(&r.vanilla_proof)
        .map_err(|e| RunError::BadRequest(format!("vanilla_proof: {e}").into()))
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
            return Err(RunError::BadRequest(m.into()));
        }
        let plan = JobPlan { job_bytes: s.job_bytes, ..JobPlan::new(s.partitions(), s.footprint) };
        let srs = s.srs.map(|(circuit_id, path, bytes)| SrsRef { circuit_id, path, bytes });
        Ok(JobPlan { srs, ..plan })
    }

    fn prepare(&self, request: &JobRequest, _: &JobPlan, _: &CancelToken) -> Result<Box<dyn PreparedJob>, RunError> {
        let script = script(request)?;
        maybe_panic(&script, "prepare");
        Ok(Box::new(ScriptedJob { id: request.request_id.clone(), script, log: self.0.clone() }))
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        Err(RunError::BadRequest(format!(
            "no circuit {circuit_id} in the test runner"
        ).into()))
    }

    fn held_bytes(&self) -> u64 {
        self.0.runner_held.load(Ordering::SeqCst)
    }
}

impl PreparedJob for ScriptedJob {
    fn partitions(&self) -> usize {
        self.script.partitions()
    }

    fn synthesize(&self, k: usize, cancel: &CancelToken) -> Result<PartitionWork, RunError> {
        maybe_panic(&self.script, "synthesize");
        if k == 0 {
            self.log.synthesized.lock().unwrap().push(self.id.clone());
        }
        if on_urgent_lane() {
            self.log.urgent.lock().unwrap().push((self.id.clone(), k));
        }
        // Counted from here to the end of its proof; a synthesis that stops counts itself
        // out at once.
        let live = Live::new(&self.log.held, &self.log.max_held);
        work_for(self.script.synth_ms, cancel)?;
        std::mem::forget(live);
        Ok(PartitionWork::default())
    }

    fn prove(&self, k: usize, _work: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError> {
        // The witness synthesize counted in: out when this returns, on every path.
        let _witness = Live { now: &self.log.held };
        let _proving = Live::new(&self.log.proving, &self.log.max_proving);
        self.log.proved.lock().unwrap().push(self.id.clone());
        self.log.proved_partitions.lock().unwrap().push((self.id.clone(), k));
        maybe_panic(&self.script, "prove");
        if self.script.srs.is_some() && ctx.srs.is_none() {
            return Err(RunError::Prove("the job's parameters are not there".into()));
        }
        if let Err(e) = work_for(self.script.prove_ms, ctx.cancel) {
            self.log.cancelled_in_prove.fetch_add(1, Ordering::SeqCst);
            return Err(e);
        }
        if let Some(m) = &self.script.prove_fail {
            if self.script.fail_partition.is_none_or(|f| f == k) {
                return Err(RunError::Prove(m.clone().into()));
            }
        }
        // The proof's last kernel, on the device's backend (which may fail, as a GPU's would).
        ctx.backend
            .sum_g1(&[], cuzk_groth16::Selection::All)
            .map_err(|e| RunError::from_backend(&e, e.to_string(), ctx.cancel.is_cancelled()))?;
        Ok(PartitionProof::placeholder())
    }

    fn finish(&self, proofs: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
        maybe_panic(&self.script, "finish");
        if proofs.len() != self.script.partitions() {
            return Err(RunError::Prove(format!("{} proofs for {} partitions", proofs.len(), self.script.partitions()).into()));
        }
        Ok(ProofOutput { proof: self.id.clone().into_bytes(), ..Default::default() })
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

/// The test configuration: a 1 GiB budget and no urgent lane, so that the order tests see
/// exactly the synthesis threads they set (the lane's own test turns it on).
pub fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.host_memory_budget_bytes = 1 << 30;
    c.urgent_synthesis_workers = 0;
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

/// The CPU backend, failing on command as a GPU would (cuzk_groth16::testing::FailingBackend).
pub fn failing_cpu() -> Arc<FailingBackend> {
    FailingBackend::new(Arc::new(cuzk_groth16::CpuBackend))
}

pub use cuzk_groth16::testing::FailingBackend;
