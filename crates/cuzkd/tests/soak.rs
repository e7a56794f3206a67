//! The kill -9 soak: a daemon under load (36 jobs, 3 in flight from Curio-like clients, mixed
//! priorities LOW to CRITICAL, duplicate ids submitted at once, two real 2 KiB PoRep proofs among cheap
//! synthetic ones) is SIGKILLed at 20 random moments and restarted on the same state
//! directory each time. At the end every accepted job has exactly one result, every proof
//! verifies, none is lost and none is done twice. It prints the table.
//!
//! The daemon is `cuzkd::run_with` in a child process (this test binary, re-executed), so
//! that the soak can put a test-only runner beside the real PoRep one. The synthetic kind
//! (WinningPoSt requests here) is NOT a prover: its "proof" is SHA-256 over the request id
//! and payload, which the test recomputes; it verifies only in that sense, and exists to push
//! many jobs through the same gRPC, engine, spool and recovery paths as real proofs. The two
//! PoRep jobs are real and are verified with filecoin-proofs.
//!
//! `CUZK_SOAK_KILLS` and `CUZK_SOAK_JOBS` scale it for long runs (bench/history/2026-12-01.md).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cuzk_engine::{
    CancelToken, JobPlan, JobRequest, PartitionProof, PartitionWork, PreparedJob, ProofKind as EngineKind,
    ProofOutput, ProofRunner, ProveContext, RunError, SrsRef,
};
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzk_filecoin::FilecoinRunner;
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

const CHILD_ENV: &str = "CUZK_SOAK_CHILD";

/// The synthetic kind's "proof" (see the module doc: a checksum, not a proof).
fn synthetic_proof(request_id: &str, payload: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(b"cuzk-soak-synthetic-v1");
    h.update((request_id.len() as u64).to_le_bytes());
    h.update(request_id.as_bytes());
    h.update(payload);
    h.finalize().to_vec()
}

/// Real PoRep through `FilecoinRunner`; WinningPoSt requests are synthetic work of
/// `payload = work_ms as decimal` milliseconds, half in synthesis, half in proving, each
/// completed proof appended to `proved.log` (to count work done twice).
struct SoakRunner {
    porep: FilecoinRunner,
    log: PathBuf,
}

/// A synthetic job, prepared.
struct SyntheticJob {
    id: String,
    payload: Vec<u8>,
    ms: u64,
    log: PathBuf,
}

fn work_for(ms: u64, cancel: &CancelToken) -> Result<(), RunError> {
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        cancel.check()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn synthetic_ms(r: &JobRequest) -> Result<u64, RunError> {
    std::str::from_utf8(&r.vanilla_proof)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| RunError::BadRequest("synthetic payload is not a number of milliseconds".into()))
}

impl ProofRunner for SoakRunner {
    fn plan(&self, r: &JobRequest) -> Result<JobPlan, RunError> {
        if r.kind != EngineKind::WinningPost {
            return self.porep.plan(r);
        }
        synthetic_ms(r)?;
        Ok(JobPlan::new(1, 1 << 20))
    }

    fn prepare(&self, r: &JobRequest, plan: &JobPlan, cancel: &CancelToken) -> Result<Box<dyn PreparedJob>, RunError> {
        if r.kind != EngineKind::WinningPost {
            return self.porep.prepare(r, plan, cancel);
        }
        let ms = synthetic_ms(r)?;
        Ok(Box::new(SyntheticJob { id: r.request_id.clone(), payload: r.vanilla_proof.clone(), ms, log: self.log.clone() }))
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        self.porep.srs_for_circuit(circuit_id)
    }
}

impl PreparedJob for SyntheticJob {
    fn partitions(&self) -> usize {
        1
    }

    fn synthesize(&self, _: usize, cancel: &CancelToken) -> Result<PartitionWork, RunError> {
        work_for(self.ms / 2, cancel)?;
        Ok(PartitionWork::default())
    }

    fn prove(&self, _: usize, _: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError> {
        work_for(self.ms - self.ms / 2, ctx.cancel)?;
        Ok(PartitionProof::placeholder())
    }

    fn finish(&self, _: Vec<PartitionProof>, _: &CancelToken) -> Result<ProofOutput, RunError> {
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        // One write of the whole line: `writeln!` writes the id and the newline apart, and a
        // kill -9 between the two left an id without its newline, run together with the next
        // one (a soak run failed on such a line, 2026-12-08).
        log.write_all(format!("{}\n", self.id).as_bytes()).unwrap();
        Ok(ProofOutput { proof: synthetic_proof(&self.id, &self.payload), ..Default::default() })
    }
}

/// The daemon, when this binary is started as the soak's child.
#[test]
fn soak_daemon_child() {
    let Some(config) = std::env::var_os(CHILD_ENV) else { return };
    let cfg = cuzkd::config::Config::load(Path::new(&config)).expect("soak config");
    let porep = FilecoinRunner::new(&cfg.srs.param_cache, cfg.srs.parent_cache.as_deref()).unwrap();
    let runner = SoakRunner { porep, log: cfg.daemon.state_dir.join("proved.log") };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(cuzkd::run_with(cfg, Arc::new(runner), cuzkd::shutdown_signal())).unwrap();
}

struct PlannedJob {
    request: SubmitProofRequest,
    /// Submitted by two clients at once.
    duplicate: bool,
}

/// What one client saw of one job.
#[derive(Debug, Default)]
struct Seen {
    proof: Vec<u8>,
    /// Submissions, counting resubmissions after a connection broke.
    submits: u32,
    transport_errors: u32,
}

/// A Curio-like client: submit, await; on any transport error, reconnect and submit the same
/// id and content again, until the job has a result.
async fn run_client(addr: Address, request: SubmitProofRequest, deadline: Instant) -> Result<Seen, String> {
    let mut seen = Seen::default();
    let id = request.request_id.clone();
    loop {
        if Instant::now() > deadline {
            return Err(format!("{id}: no result before the deadline ({seen:?})"));
        }
        let Ok(mut client) = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        seen.submits += 1;
        if let Err(e) = client.submit_proof(request.clone()).await {
            seen.transport_errors += 1;
            // A refusal is an answer; anything else is the kill (a broken connection).
            use tonic::Code::*;
            if matches!(e.code(), InvalidArgument | AlreadyExists | ResourceExhausted | NotFound | FailedPrecondition) {
                return Err(format!("{id}: submit refused: {e}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        loop {
            match client.await_proof(AwaitProofRequest { job_id: id.clone(), timeout_ms: 2000 }).await {
                Ok(r) => {
                    let r = r.into_inner();
                    match Status::try_from(r.status) {
                        Ok(Status::Timeout) => continue,
                        Ok(Status::Completed) => {
                            seen.proof = r.proof;
                            return Ok(seen);
                        }
                        other => return Err(format!("{id}: ended {other:?}: {}", r.error_message)),
                    }
                }
                Err(e) => {
                    // NOT_FOUND right after a restart cannot happen for an accepted job: the
                    // spool brought it back. Anything else is the kill.
                    if e.code() == tonic::Code::NotFound {
                        return Err(format!("{id}: lost after a restart: {e}"));
                    }
                    seen.transport_errors += 1;
                    break;
                }
            }
        }
    }
}

fn spawn_daemon(config: &Path, log: &Path) -> Killed {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "soak_daemon_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("soak daemon starts");
    Killed(child)
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_soak_loses_nothing_and_does_nothing_twice() {
    let kills = env_or("CUZK_SOAK_KILLS", 20);
    let jobs = env_or("CUZK_SOAK_JOBS", 36).max(4);
    let seed: u64 = rand::random();
    eprintln!("soak seed {seed} (set nothing to replay: the kill moments are random by design)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = scratch("soak");
    let state = dir.join("state");
    let sock = dir.join("cuzk.sock");
    let config = dir.join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_dir = {state:?}\nlisten = \"unix://{}\"\ndrain_timeout_secs = 1\n\
             [srs]\nparam_cache = {:?}\nparent_cache = {:?}\n[gpus]\nbackend = \"cpu\"\ngpu_workers_per_device = 3\n\
             [engine]\nsynthesis_workers = 3\nmax_attempts = 1000\n[dbus]\nbus = \"none\"\n\
             [log]\ntarget = \"stderr\"\nlevel = \"warn\"\n",
            sock.display(),
            f.param_dir(),
            f.parent_dir()
        ),
    )
    .unwrap();

    // Synthetic jobs of 100-600 ms at NORMAL to CRITICAL, every fifth submitted twice at
    // once; two real PoRep proofs at LOW, a third and two thirds of the way in (so that the
    // synthetic jobs, not the long PoRep synthesis, hold the threads while the kills come).
    let mut planned = Vec::new();
    for i in 0..jobs - 2 {
        if i == (jobs - 2) / 3 || i == 2 * (jobs - 2) / 3 {
            let mut r = porep_request(&f, &format!("porep-1000-{i}"));
            r.priority = Priority::Low as i32;
            planned.push(PlannedJob { request: r, duplicate: false });
        }
        let request = SubmitProofRequest {
            request_id: format!("winpost-1000-{i:03}"),
            proof_kind: ProofKind::WinningPost as i32,
            priority: rng.gen_range(2..=4),
            vanilla_proof: rng.gen_range(100..600u64).to_string().into_bytes(),
            miner_id: 1000,
            ..Default::default()
        };
        planned.push(PlannedJob { request, duplicate: i % 5 == 0 });
    }
    let duplicates = planned.iter().filter(|p| p.duplicate).count();

    let daemon_log = dir.join("daemon.log");
    let mut daemon = spawn_daemon(&config, &daemon_log);
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);

    // Clients: 3 jobs in flight at a time (a duplicate's second client rides along).
    let clients = {
        let addr = addr.clone();
        let mut submissions = Vec::new();
        for p in &planned {
            submissions.push((p.request.clone(), false));
            if p.duplicate {
                submissions.push((p.request.clone(), true));
            }
        }
        tokio::spawn(async move {
            let gate = Arc::new(tokio::sync::Semaphore::new(3));
            let mut tasks = Vec::new();
            for (request, is_second) in submissions {
                let permit = if is_second { None } else { Some(gate.clone().acquire_owned().await.unwrap()) };
                let addr = addr.clone();
                tasks.push(tokio::spawn(async move {
                    let id = request.request_id.clone();
                    let r = run_client(addr, request, deadline).await;
                    drop(permit);
                    (id, r)
                }));
            }
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap());
            }
            out
        })
    };

    // The killer: SIGKILL at random moments, restart on the same state directory.
    let mut restarts = 0;
    for _ in 0..kills {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(150..900))).await;
        let _ = daemon.0.kill(); // SIGKILL
        let _ = daemon.0.wait();
        daemon = spawn_daemon(&config, &daemon_log);
        restarts += 1;
    }
    let kills_done = Instant::now();
    let results = clients.await.unwrap();
    let wall = started.elapsed();

    // Every client got a result, and each id's clients got the same one.
    let mut by_id: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    let mut failures = Vec::new();
    for (id, r) in results {
        match r {
            Ok(seen) => by_id.entry(id).or_default().push(seen),
            Err(e) => failures.push(e),
        }
    }
    let log = std::fs::read_to_string(&daemon_log).unwrap_or_default();
    assert!(failures.is_empty(), "{failures:#?}\n--- daemon log (tail) ---\n{}", tail(&log, 60));
    assert_eq!(by_id.len(), planned.len(), "jobs lost");
    let mut verified_real = 0;
    let mut verified_synthetic = 0;
    for p in &planned {
        let seen = &by_id[&p.request.request_id];
        assert!(seen.iter().all(|s| s.proof == seen[0].proof), "{}: clients got different proofs", p.request.request_id);
        if p.request.proof_kind == ProofKind::PorepSealCommit as i32 {
            assert!(verifies(&f, &seen[0].proof), "{}: the PoRep proof does not verify", p.request.request_id);
            verified_real += 1;
        } else {
            assert_eq!(seen[0].proof, synthetic_proof(&p.request.request_id, &p.request.vanilla_proof));
            verified_synthetic += 1;
        }
    }

    // The spool: one result per job, no request left; the daemon still answers each id with
    // the same result (one more await per id, after all the kills).
    let mut client = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("the daemon is up after the last restart");
    for p in &planned {
        let r = client
            .await_proof(AwaitProofRequest { job_id: p.request.request_id.clone(), timeout_ms: 1000 })
            .await
            .expect("known after the soak")
            .into_inner();
        assert_eq!(r.proof, by_id[&p.request.request_id][0].proof);
    }
    let spool = state.join("spool");
    let results_on_disk = std::fs::read_dir(spool.join("results")).unwrap().count();
    let left = std::fs::read_dir(spool.join("jobs")).unwrap().filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "req")).count();
    assert_eq!((results_on_disk, left), (planned.len(), 0), "one result per job, no request left");
    let mut attempts = BTreeMap::new();
    for e in std::fs::read_dir(spool.join("results")).unwrap() {
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap();
        attempts.insert(r["job_id"].as_str().unwrap().to_string(), r["attempts"].as_u64().unwrap());
    }
    // Work done twice: a synthetic proof finished again only if a kill fell between its
    // proof and its durable result, so never more often than the job was started.
    let proved = std::fs::read_to_string(state.join("proved.log")).unwrap_or_default();
    let mut proved_count: BTreeMap<&str, u64> = BTreeMap::new();
    for id in proved.lines() {
        *proved_count.entry(id).or_default() += 1;
    }
    let mut reproved = 0;
    for (id, n) in &proved_count {
        assert!(*n <= attempts[*id], "{id} proved {n} times in {} attempts", attempts[*id]);
        reproved += n - 1;
    }
    assert!(reproved as usize <= kills, "more re-proofs ({reproved}) than kills ({kills})");
    let restarted_jobs = attempts.values().filter(|&&a| a > 1).count();
    let submits: u32 = by_id.values().flatten().map(|s| s.submits).sum();
    let errors: u32 = by_id.values().flatten().map(|s| s.transport_errors).sum();

    eprintln!("kill -9 soak (CPU backend; synthetic kind = checksum stand-in, see the test's doc)");
    eprintln!("| what | value |\n|---|---|");
    eprintln!("| SIGKILLs / restarts | {kills} / {restarts} |");
    eprintln!("| jobs accepted (2 real 2 KiB PoRep) | {} |", planned.len());
    eprintln!("| ids submitted twice at once | {duplicates} |");
    eprintln!("| submissions (with retries after kills) | {submits} |");
    eprintln!("| transport errors seen by clients | {errors} |");
    eprintln!("| results, one per job | {results_on_disk} |");
    eprintln!("| lost | 0 |");
    eprintln!("| duplicated results | 0 |");
    eprintln!("| verified: filecoin-proofs / synthetic checksum | {verified_real} / {verified_synthetic} |");
    eprintln!("| jobs started more than once (interrupted) | {restarted_jobs} |");
    eprintln!("| synthetic proofs finished again (kill between proof and result) | {reproved} |");
    eprintln!("| most attempts of one job | {} |", attempts.values().max().unwrap());
    eprintln!("| wall: kills / all | {:.1} s / {:.1} s |", (kills_done - started).as_secs_f64(), wall.as_secs_f64());
    drop(daemon);
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
