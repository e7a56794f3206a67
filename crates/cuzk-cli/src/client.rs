//! cuzk-bench as a client of a running cuzkd: single and batch proofs of every kind, status,
//! cancel, preload, metrics. The batch report on stdout is the format operators' scripts
//! already parse (upstream cuzk-bench's); the live progress goes to stderr.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect_with, Address, AuthChannel, ClientAuth, ProvingEngineClient, DEFAULT_MAX_MESSAGE_BYTES};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

type Client = ProvingEngineClient<AuthChannel>;

/// Where cuzkd listens and what its TCP listener wants to see (`[daemon.tcp]`).
pub struct Daemon {
    pub addr: String,
    pub auth: ClientAuth,
}

pub async fn client(daemon: &Daemon) -> Result<Client> {
    let a: Address = daemon.addr.parse()?;
    connect_with(&a, DEFAULT_MAX_MESSAGE_BYTES, &daemon.auth)
        .await
        .with_context(|| format!("connecting to cuzkd at {a} (is it running? see -a/--addr, and --token-file, --tls-* for TCP)"))
}

/// The proof types of `-t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofType {
    PoRep,
    Snap,
    WindowPost,
    WinningPost,
}

impl ProofType {
    /// `-t`'s value: porep, snap, wpost or winning (and the longer names upstream's
    /// cuzk-bench also takes, e.g. window-post), in any case.
    pub fn parse(s: &str) -> Result<ProofType, String> {
        match s.to_ascii_lowercase().as_str() {
            "porep" | "porep-c2" | "seal-commit" => Ok(ProofType::PoRep),
            "snap" | "snap-deals" | "update" => Ok(ProofType::Snap),
            "wpost" | "window-post" | "windowpost" => Ok(ProofType::WindowPost),
            "winning" | "winning-post" | "winningpost" => Ok(ProofType::WinningPost),
            _ => Err(format!("unknown proof type {s:?}; the proof types are porep, snap, wpost and winning")),
        }
    }

    /// The name `-t` takes and the batch report shows.
    pub fn name(self) -> &'static str {
        match self {
            ProofType::PoRep => "porep",
            ProofType::Snap => "snap",
            ProofType::WindowPost => "wpost",
            ProofType::WinningPost => "winning",
        }
    }

    fn wire(self) -> ProofKind {
        match self {
            ProofType::PoRep => ProofKind::PorepSealCommit,
            ProofType::Snap => ProofKind::SnapDealsUpdate,
            ProofType::WindowPost => ProofKind::WindowPostPartition,
            ProofType::WinningPost => ProofKind::WinningPost,
        }
    }

    /// The daemon's queue of this kind, as GetStatus names it.
    fn queue_name(self) -> &'static str {
        match self {
            ProofType::PoRep => "porep-c2",
            ProofType::Snap => "snap-update",
            ProofType::WindowPost => "window-post",
            ProofType::WinningPost => "winning-post",
        }
    }

    /// The `kind` of its input file (gen-fixture's `kinds/<kind>.json`); PoRep has none.
    pub fn input_kind(self) -> Option<&'static str> {
        match self {
            ProofType::PoRep => None,
            ProofType::Snap => Some("snap"),
            ProofType::WindowPost => Some("window"),
            ProofType::WinningPost => Some("winning"),
        }
    }

}

impl std::fmt::Display for ProofType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One proof's request (a batch sends it again and again, each time under a new id).
#[derive(Clone, Debug)]
pub struct ProofInput {
    pub kind: ProofType,
    /// Everything but the request id.
    template: SubmitProofRequest,
    /// The id Curio gives this proof; None for PoRep, whose ids are the bench's own.
    curio_id: Option<String>,
}

impl ProofInput {
    /// PoRep: the C1 file goes to the daemon as it is (bare C1 JSON or a lotus-bench envelope).
    pub fn porep(c1: &Path, miner_id: u64, sector_id: Option<u64>) -> Result<ProofInput> {
        let payload = std::fs::read(c1).with_context(|| format!("reading the C1 output {}", c1.display()))?;
        Ok(ProofInput {
            kind: ProofType::PoRep,
            template: SubmitProofRequest {
                proof_kind: ProofKind::PorepSealCommit as i32,
                miner_id,
                sector_number: sector_id.unwrap_or(0),
                vanilla_proof: payload,
                ..Default::default()
            },
            curio_id: None,
        })
    }

    /// SnapDeals, WindowPoSt, WinningPoSt: the request's fields from a JSON input file (the
    /// format of gen-fixture's `kinds/*.json`); `miner_id` and `sector_id` replace the file's.
    pub fn load(kind: ProofType, path: &Path, miner_id: Option<u64>, sector_id: Option<u64>) -> Result<ProofInput> {
        let Some(want) = kind.input_kind() else {
            bail!("-t porep takes --c1 PATH, not --input");
        };
        let raw = std::fs::read(path).with_context(|| {
            format!(
                "reading the -t {kind} input {} (--input PATH; `cuzk-lab gen-fixture` makes the 2 KiB test ones)",
                path.display()
            )
        })?;
        let mut input: KindInput = serde_json::from_slice(&raw).with_context(|| {
            format!(
                "{}: not a proof input (JSON with kind, registered_proof, sector_size, miner_id, sector_id, \
                 randomness, partition_index, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new; base64 bytes)",
                path.display()
            )
        })?;
        if input.kind != want {
            bail!("{} is a {:?} input; -t {kind} needs a {want:?} one", path.display(), input.kind);
        }
        if let Some(m) = miner_id {
            input.miner_id = m;
        }
        if let Some(n) = sector_id {
            input.sector_id = n;
        }
        ProofInput::from_kind(kind, &input)
    }

    /// The request Curio sends for the kind, with the request id it gives it; the priority
    /// left to the daemon's default for the kind.
    pub fn from_kind(kind: ProofType, k: &KindInput) -> Result<ProofInput> {
        let mut r = SubmitProofRequest {
            proof_kind: kind.wire() as i32,
            registered_proof: k.registered_proof,
            sector_size: k.sector_size,
            vanilla_proofs: k.vanilla_proofs.clone(),
            miner_id: k.miner_id,
            ..Default::default()
        };
        let head = &k.randomness[..k.randomness.len().min(8)];
        let id = match kind {
            ProofType::PoRep => bail!("PoRep has no kind input; it is proved from a C1 output (--c1)"),
            ProofType::Snap => {
                r.sector_number = k.sector_id;
                r.comm_r_old = k.comm_r_old.clone();
                r.comm_r_new = k.comm_r_new.clone();
                r.comm_d_new = k.comm_d_new.clone();
                format!("snap-{}-{}", k.miner_id, k.sector_id)
            }
            ProofType::WindowPost => {
                r.randomness = k.randomness.clone();
                r.partition_index = k.partition_index;
                format!("wdpost-{}-{}-{}", k.miner_id, k.partition_index, go_byte_slice(head))
            }
            ProofType::WinningPost => {
                r.randomness = k.randomness.clone();
                let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
                format!("winpost-{}-{hex}", k.miner_id)
            }
        };
        Ok(ProofInput { kind, template: r, curio_id: Some(id) })
    }

    /// The request under `request_id`.
    pub fn request(&self, request_id: String) -> SubmitProofRequest {
        SubmitProofRequest { request_id, ..self.template.clone() }
    }

    /// A single proof's id: Curio's for the kind (PoRep: the bench's own, new each run).
    pub fn single_id(&self) -> String {
        self.curio_id.clone().unwrap_or_else(|| format!("bench-{}-single", std::process::id()))
    }

    /// Proof `i` of a batch: unique in the run (`nonce`) and in it, so that the daemon does
    /// not take it for a resubmission of another.
    pub fn batch_id(&self, nonce: &str, i: usize) -> String {
        match &self.curio_id {
            Some(id) => format!("{id}-{nonce}-{i}"),
            None => format!("bench-{nonce}-{i}"),
        }
    }
}

/// Bytes as Go's `%d` prints a byte slice: `[12 34 56]`.
fn go_byte_slice(b: &[u8]) -> String {
    let items: Vec<String> = b.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(" "))
}

fn status_name(s: i32) -> &'static str {
    match Status::try_from(s) {
        Ok(Status::Completed) => "COMPLETED",
        Ok(Status::Failed) => "FAILED",
        Ok(Status::Cancelled) => "CANCELLED",
        Ok(Status::Timeout) => "TIMEOUT",
        _ => "UNKNOWN",
    }
}

/// Where the bench's own jobs in flight are, as the daemon's GetStatus shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    /// Waiting for a synthesis slot (or not yet accepted).
    pub queued: usize,
    /// Being synthesized, or synthesized and waiting for a GPU; without GPUs (the CPU
    /// backend) also proving, which GetStatus does not tell apart there.
    pub synthesizing: usize,
    /// On a GPU worker.
    pub proving: usize,
    /// Whether the daemon lists GPUs.
    pub gpus: bool,
}

impl Stages {
    fn total(&self) -> usize {
        self.queued + self.synthesizing + self.proving
    }
}

impl std::fmt::Display for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.gpus {
            write!(f, "{} queued, {} synthesizing, {} proving", self.queued, self.synthesizing, self.proving)
        } else {
            write!(f, "{} queued, {} synthesizing/proving", self.queued, self.synthesizing)
        }
    }
}

/// The stages of `ours` (the ids in flight, of the queue `queue`): on a GPU worker
/// (GPUStatus.current_job_id, comma-separated), proving; of the rest, as many as the queue
/// has in progress but not on a GPU are synthesizing, the others queued. GetStatus counts
/// other clients' jobs too, so these are the best split the counts allow.
pub fn stages(ours: &[String], queue: &str, s: &GetStatusResponse) -> Stages {
    let (mut proving, mut kind_on_gpu) = (0, 0);
    for g in &s.gpus {
        let mut kinds = g.current_proof_kind.split(',');
        for id in g.current_job_id.split(',') {
            let kind = kinds.next().unwrap_or("");
            if id.is_empty() {
                continue;
            }
            if ours.iter().any(|o| o == id) {
                proving += 1;
            }
            if kind == queue {
                kind_on_gpu += 1;
            }
        }
    }
    let in_progress = s.queues.iter().find(|q| q.proof_kind == queue).map_or(0, |q| q.in_progress as usize);
    let rest = ours.len().saturating_sub(proving);
    let synthesizing = rest.min(in_progress.saturating_sub(kind_on_gpu));
    Stages { queued: rest - synthesizing, synthesizing, proving, gpus: !s.gpus.is_empty() }
}

/// Time left at the pace so far: `elapsed` per `done` proofs, `total` in all; None before the
/// first proof.
pub fn eta(elapsed: Duration, done: usize, total: usize) -> Option<Duration> {
    if done == 0 {
        return None;
    }
    Some(elapsed.mul_f64(total.saturating_sub(done) as f64 / done as f64))
}

/// 45s, 3m07s, 2h05m.
fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The progress line's message: the time left (`?` before the first proof), the jobs in
/// flight and where they are. Stages that no longer add up to the jobs in flight (one came
/// back since the last poll) are left out until the next poll.
pub fn progress_message(in_flight: usize, stages: Option<Stages>, eta: Option<Duration>) -> String {
    let eta = eta.map_or_else(|| "?".to_string(), short_duration);
    match stages.filter(|s| s.total() == in_flight && in_flight > 0) {
        Some(s) => format!("ETA {eta} · {in_flight} in flight: {s}"),
        None => format!("ETA {eta} · {in_flight} in flight"),
    }
}

/// The live display on stderr (hidden when stderr is not a terminal): elapsed time, proofs
/// done, those in flight and their stage, the time left. Polls GetStatus every second.
struct Progress {
    bar: ProgressBar,
    count: usize,
    start: Instant,
    in_flight: Mutex<Vec<String>>,
    last: Mutex<Option<Stages>>,
}

/// Stops the poller and clears the display, also when a batch ends early on an error.
struct ProgressGuard {
    progress: Arc<Progress>,
    poller: tokio::task::JoinHandle<()>,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.poller.abort();
        self.progress.bar.finish_and_clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Progress {
    fn start(count: usize, client: Client, kind: ProofType) -> (Arc<Progress>, ProgressGuard) {
        let bar = ProgressBar::with_draw_target(Some(count as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:20}] {pos}/{len} done · {wide_msg}")
                .expect("the progress template is valid")
                .progress_chars("=> "),
        );
        let progress = Arc::new(Progress {
            bar,
            count,
            start: Instant::now(),
            in_flight: Mutex::new(Vec::new()),
            last: Mutex::new(None),
        });
        progress.refresh();
        progress.bar.enable_steady_tick(Duration::from_millis(250));
        let poller = tokio::spawn(progress.clone().poll(client, kind));
        (progress.clone(), ProgressGuard { progress, poller })
    }

    async fn poll(self: Arc<Self>, mut client: Client, kind: ProofType) {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            let ours = lock(&self.in_flight).clone();
            if !ours.is_empty() {
                let status = tokio::time::timeout(Duration::from_secs(2), client.get_status(GetStatusRequest {})).await;
                *lock(&self.last) = match status {
                    Ok(Ok(s)) => Some(stages(&ours, kind.queue_name(), &s.into_inner())),
                    _ => None,
                };
            }
            self.refresh();
        }
    }

    fn refresh(&self) {
        let in_flight = lock(&self.in_flight).len();
        let done = self.bar.position() as usize;
        let eta = eta(self.start.elapsed(), done, self.count);
        self.bar.set_message(progress_message(in_flight, *lock(&self.last), eta));
    }

    fn started(&self, id: &str) {
        lock(&self.in_flight).push(id.to_string());
        self.refresh();
    }

    fn finished(&self, id: &str) {
        lock(&self.in_flight).retain(|x| x != id);
        self.bar.inc(1);
        self.refresh();
    }

    /// Text on stdout, the display moved out of its way.
    fn print(&self, text: &str) {
        self.bar.suspend(|| {
            print!("{text}");
            let _ = std::io::stdout().flush();
        });
    }
}

pub async fn single(daemon: &Daemon, input: &ProofInput, request_id: Option<String>, out: Option<&Path>) -> Result<()> {
    let c = client(daemon).await?;
    let id = request_id.unwrap_or_else(|| input.single_id());
    let (progress, guard) = Progress::start(1, c.clone(), input.kind);
    progress.started(&id);
    let start = Instant::now();
    let r = c.clone().prove(ProveRequest { submit: Some(input.request(id.clone())) }).await;
    progress.finished(&id);
    drop(guard);
    let r = r?.into_inner().result.context("the daemon's ProveResponse has no result")?;
    println!(
        "{} {} — {:.1}s (queue={} ms, srs={} ms, synthesis={} ms, gpu={} ms, total={} ms)",
        r.job_id,
        status_name(r.status),
        start.elapsed().as_secs_f64(),
        r.queue_wait_ms,
        r.srs_load_ms,
        r.synthesis_ms,
        r.gpu_compute_ms,
        r.total_ms
    );
    if r.status != Status::Completed as i32 {
        bail!("{}: {}", status_name(r.status), r.error_message);
    }
    if let Some(out) = out {
        std::fs::write(out, &r.proof).with_context(|| format!("writing {}", out.display()))?;
        println!("proof: {} bytes -> {}", r.proof.len(), out.display());
    }
    Ok(())
}

/// One proof of a batch as the report shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// COMPLETED, FAILED, CANCELLED, TIMEOUT or UNKNOWN.
    pub status: &'static str,
    /// From the Prove call to its answer.
    pub wall: Duration,
    /// The daemon's proving time (gpu_compute_ms, as upstream reports it).
    pub prove_ms: u64,
    pub queue_ms: u64,
    /// Why it did not complete (empty when it did).
    pub error: String,
}

impl Outcome {
    pub fn completed(&self) -> bool {
        self.status == "COMPLETED"
    }

    /// The answer to a Prove call (or the call's error), with its proof bytes.
    fn of(answer: std::result::Result<Option<AwaitProofResponse>, String>, wall: Duration) -> (Outcome, Vec<u8>) {
        match answer {
            Ok(Some(r)) => (
                Outcome {
                    status: status_name(r.status),
                    wall,
                    prove_ms: r.gpu_compute_ms,
                    queue_ms: r.queue_wait_ms,
                    error: if r.status == Status::Completed as i32 { String::new() } else { r.error_message },
                },
                r.proof,
            ),
            Ok(None) => (
                Outcome { status: "FAILED", wall, prove_ms: 0, queue_ms: 0, error: "the daemon's ProveResponse has no result".into() },
                Vec::new(),
            ),
            Err(e) => (Outcome { status: "FAILED", wall, prove_ms: 0, queue_ms: 0, error: e }, Vec::new()),
        }
    }
}

/// The report's opening, a blank line after it.
pub fn batch_header(kind: ProofType, count: usize, concurrency: usize) -> String {
    format!("=== Batch Benchmark ===\nproof type:  {kind}\ncount:       {count}\nconcurrency: {concurrency}\n\n")
}

/// Proof `i` (from 0) of `count`: its status line and, when it did not complete, its error
/// under it, indented four spaces.
pub fn result_lines(i: usize, count: usize, o: &Outcome) -> String {
    let mut s = format!(
        "  [{}/{count}] {} — {:.1}s (prove={} ms, queue={} ms)\n",
        i + 1,
        o.status,
        o.wall.as_secs_f64(),
        o.prove_ms,
        o.queue_ms
    );
    for line in o.error.lines() {
        s.push_str(&format!("    {line}\n"));
    }
    s
}

/// avg, min and max.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let avg = v.iter().sum::<f64>() / v.len() as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (avg, min, max)
}

/// The summary after the proofs (a blank line before it); wall, prove time and throughput
/// when some completed. `total`: the batch's whole time.
pub fn batch_summary(outcomes: &[Outcome], total: Duration) -> String {
    let done: Vec<&Outcome> = outcomes.iter().filter(|o| o.completed()).collect();
    let t = total.as_secs_f64();
    let mut s = format!(
        "\n=== Batch Summary ===\ntotal time:    {t:.1}s\ncompleted:     {}\nfailed:        {}\n",
        done.len(),
        outcomes.len() - done.len()
    );
    if !done.is_empty() {
        let walls: Vec<f64> = done.iter().map(|o| o.wall.as_secs_f64()).collect();
        let proves: Vec<f64> = done.iter().map(|o| o.prove_ms as f64 / 1000.0).collect();
        for (name, v) in [("wall time:", walls), ("prove time:", proves)] {
            let (avg, min, max) = spread(&v);
            s.push_str(&format!("{name:<15}avg={avg:.1}s min={min:.1}s max={max:.1}s\n"));
        }
        let n = done.len() as f64;
        s.push_str(&format!("throughput:    {:.3} proofs/min ({:.1}s/proof)\n", n / t * 60.0, t / n));
    }
    s
}

/// `count` proofs of `input`, `concurrency` in flight at once, each its own job. Prints the
/// report on stdout as the proofs come back (in their order); true when all completed.
pub async fn batch(
    daemon: &Daemon,
    input: ProofInput,
    count: usize,
    concurrency: usize,
    out_dir: Option<&Path>,
) -> Result<bool> {
    if count == 0 || concurrency == 0 {
        bail!("-c/--count and -j/--concurrency must be at least 1");
    }
    let c = client(daemon).await?;
    if let Some(d) = out_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    print!("{}", batch_header(input.kind, count, concurrency));
    let _ = std::io::stdout().flush();
    let (progress, guard) = Progress::start(count, c.clone(), input.kind);
    let input = Arc::new(input);
    let nonce = format!("{}-{}", std::process::id(), epoch_seconds());
    let sem = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        let (mut c, sem, input, progress) = (c.clone(), sem.clone(), input.clone(), progress.clone());
        let id = input.batch_id(&nonce, i);
        tasks.push(tokio::spawn(async move {
            let _permit = sem.acquire_owned().await;
            progress.started(&id);
            let t = Instant::now();
            let r = c.prove(ProveRequest { submit: Some(input.request(id.clone())) }).await;
            let wall = t.elapsed();
            progress.finished(&id);
            let answer = r.map(|r| r.into_inner().result).map_err(|e| {
                if e.message().is_empty() {
                    e.to_string()
                } else {
                    e.message().to_string()
                }
            });
            (wall, answer)
        }));
    }
    let mut outcomes = Vec::with_capacity(count);
    for (i, task) in tasks.into_iter().enumerate() {
        let (wall, answer) = task.await?;
        let (outcome, proof) = Outcome::of(answer, wall);
        if let (true, Some(d)) = (outcome.completed(), out_dir) {
            let path = d.join(format!("proof-{i}.bin"));
            std::fs::write(&path, &proof).with_context(|| format!("writing {}", path.display()))?;
        }
        progress.print(&result_lines(i, count, &outcome));
        outcomes.push(outcome);
    }
    let total = start.elapsed();
    drop(guard);
    print!("{}", batch_summary(&outcomes, total));
    Ok(outcomes.iter().all(Outcome::completed))
}

/// Seconds since the epoch: distinct request ids for every batch run.
fn epoch_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub async fn status(daemon: &Daemon) -> Result<()> {
    let s = client(daemon).await?.get_status(GetStatusRequest {}).await?.into_inner();
    println!("uptime {} s; completed {}, failed {}", s.uptime_seconds, s.total_proofs_completed, s.total_proofs_failed);
    for q in &s.queues {
        println!("  queue {:<13} pending {:>3}  in progress {:>3}", q.proof_kind, q.pending, q.in_progress);
    }
    if s.gpus.is_empty() {
        println!("  no GPU: proving on the CPU");
    }
    for g in &s.gpus {
        let job = if g.current_job_id.is_empty() { "idle".to_string() } else { format!("{} ({})", g.current_job_id, g.current_proof_kind) };
        println!(
            "  gpu {} {}: VRAM budget {:.1} GB, {:.1} GB free; {job}",
            g.ordinal,
            g.name,
            g.vram_total_bytes as f64 / 1e9,
            g.vram_free_bytes as f64 / 1e9
        );
    }
    if s.pinned_memory_limit_bytes > 0 {
        println!(
            "  pinned host memory {:.2} of {:.2} GB",
            s.pinned_memory_bytes as f64 / 1e9,
            s.pinned_memory_limit_bytes as f64 / 1e9
        );
    }
    for r in &s.loaded_srs {
        println!("  srs {} {:.2} GB, {} job(s)", r.circuit_id, r.size_bytes as f64 / 1e9, r.ref_count);
    }
    Ok(())
}

pub async fn cancel(daemon: &Daemon, job_id: &str) -> Result<()> {
    let r = client(daemon).await?.cancel_proof(CancelProofRequest { job_id: job_id.into() }).await?.into_inner();
    println!("{job_id}: cancelled ({})", if r.was_running { "was running; stops at its next stage" } else { "was not running" });
    Ok(())
}

pub async fn preload(daemon: &Daemon, circuit_id: &str) -> Result<()> {
    let r = client(daemon).await?.preload_srs(PreloadSrsRequest { circuit_id: circuit_id.into() }).await?.into_inner();
    if r.already_loaded {
        println!("{circuit_id}: already resident");
    } else {
        println!("{circuit_id}: loaded in {} ms", r.load_time_ms);
    }
    Ok(())
}

pub async fn metrics(daemon: &Daemon) -> Result<()> {
    let r = client(daemon).await?.get_metrics(GetMetricsRequest {}).await?.into_inner();
    print!("{}", r.prometheus_text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: &'static str, wall_ms: u64, prove_ms: u64, queue_ms: u64, error: &str) -> Outcome {
        Outcome { status, wall: Duration::from_millis(wall_ms), prove_ms, queue_ms, error: error.into() }
    }

    /// The report byte for byte: header, a completed and a failed proof (its error under it),
    /// the summary with and without completed proofs.
    #[test]
    fn batch_report_is_upstreams_format_byte_for_byte() {
        assert_eq!(
            batch_header(ProofType::PoRep, 3, 1),
            "=== Batch Benchmark ===\nproof type:  porep\ncount:       3\nconcurrency: 1\n\n"
        );
        assert_eq!(
            batch_header(ProofType::WindowPost, 12, 4),
            "=== Batch Benchmark ===\nproof type:  wpost\ncount:       12\nconcurrency: 4\n\n"
        );
        assert_eq!(
            result_lines(0, 3, &outcome("COMPLETED", 40_712, 38_125, 12, "")),
            "  [1/3] COMPLETED — 40.7s (prove=38125 ms, queue=12 ms)\n"
        );
        assert_eq!(
            result_lines(1, 3, &outcome("FAILED", 1_234, 0, 3, "vanilla proof 0 is truncated\nat byte 12")),
            "  [2/3] FAILED — 1.2s (prove=0 ms, queue=3 ms)\n    vanilla proof 0 is truncated\n    at byte 12\n"
        );
        let mixed = [
            outcome("COMPLETED", 2_510, 2_000, 5, ""),
            outcome("FAILED", 1_234, 0, 3, "boom"),
            outcome("COMPLETED", 3_370, 2_437, 7, ""),
        ];
        assert_eq!(
            batch_summary(&mixed, Duration::from_millis(6_260)),
            "\n=== Batch Summary ===\n\
             total time:    6.3s\n\
             completed:     2\n\
             failed:        1\n\
             wall time:     avg=2.9s min=2.5s max=3.4s\n\
             prove time:    avg=2.2s min=2.0s max=2.4s\n\
             throughput:    19.169 proofs/min (3.1s/proof)\n"
        );
        let failed = [outcome("FAILED", 1_200, 0, 0, "a"), outcome("TIMEOUT", 900, 0, 0, ""), outcome("CANCELLED", 10, 0, 0, "")];
        assert_eq!(
            batch_summary(&failed, Duration::from_millis(125_300)),
            "\n=== Batch Summary ===\ntotal time:    125.3s\ncompleted:     0\nfailed:        3\n"
        );
    }

    /// A whole report as a batch prints it, pieces in order.
    #[test]
    fn a_whole_report_reads_as_upstreams() {
        let results = [outcome("COMPLETED", 40_712, 38_140, 12, ""), outcome("FAILED", 1_234, 0, 3, "no parameters for porep-2k")];
        let mut report = batch_header(ProofType::PoRep, 2, 1);
        for (i, o) in results.iter().enumerate() {
            report.push_str(&result_lines(i, 2, o));
        }
        report.push_str(&batch_summary(&results, Duration::from_millis(41_950)));
        assert_eq!(
            report,
            "=== Batch Benchmark ===\n\
             proof type:  porep\n\
             count:       2\n\
             concurrency: 1\n\
             \n  [1/2] COMPLETED — 40.7s (prove=38140 ms, queue=12 ms)\n\
             \x20 [2/2] FAILED — 1.2s (prove=0 ms, queue=3 ms)\n\
             \x20   no parameters for porep-2k\n\
             \n=== Batch Summary ===\n\
             total time:    42.0s\n\
             completed:     1\n\
             failed:        1\n\
             wall time:     avg=40.7s min=40.7s max=40.7s\n\
             prove time:    avg=38.1s min=38.1s max=38.1s\n\
             throughput:    1.430 proofs/min (42.0s/proof)\n"
        );
    }

    #[test]
    fn outcomes_of_answers_and_rpc_errors() {
        let wall = Duration::from_millis(1500);
        let done = AwaitProofResponse {
            status: Status::Completed as i32,
            proof: vec![7; 192],
            gpu_compute_ms: 900,
            queue_wait_ms: 40,
            total_ms: 1400,
            ..Default::default()
        };
        let (o, proof) = Outcome::of(Ok(Some(done)), wall);
        assert_eq!(o, outcome("COMPLETED", 1500, 900, 40, ""));
        assert_eq!(proof.len(), 192);
        let failed = AwaitProofResponse { status: Status::Failed as i32, error_message: "bad vanilla proof".into(), queue_wait_ms: 2, ..Default::default() };
        assert_eq!(Outcome::of(Ok(Some(failed)), wall).0, outcome("FAILED", 1500, 0, 2, "bad vanilla proof"));
        assert_eq!(Outcome::of(Err("transport error".into()), wall).0, outcome("FAILED", 1500, 0, 0, "transport error"));
        let none = Outcome::of(Ok(None), wall).0;
        assert!(!none.completed() && none.error.contains("no result"), "{none:?}");
    }

    fn kind_input(kind: &str) -> KindInput {
        KindInput {
            kind: kind.into(),
            registered_proof: 10,
            sector_size: 2048,
            miner_id: 1000,
            sector_id: 7,
            randomness: (1..=32).collect(),
            partition_index: 3,
            vanilla_proofs: vec![vec![1, 2], vec![3]],
            comm_r_old: vec![0xa; 32],
            comm_r_new: vec![0xb; 32],
            comm_d_new: vec![0xc; 32],
            comm_r: vec![0xd; 32],
        }
    }

    /// Each kind's request carries the fields Curio fills for it, and no others; ids as
    /// Curio makes them, a batch's unique per proof.
    #[test]
    fn requests_and_ids_are_curios() {
        let snap = ProofInput::from_kind(ProofType::Snap, &kind_input("snap")).unwrap();
        let r = snap.request("x".into());
        assert_eq!(r.proof_kind, ProofKind::SnapDealsUpdate as i32);
        assert_eq!((r.registered_proof, r.sector_size, r.miner_id, r.sector_number), (10, 2048, 1000, 7));
        assert_eq!(r.vanilla_proofs, vec![vec![1, 2], vec![3]]);
        assert_eq!((r.comm_r_old[0], r.comm_r_new[0], r.comm_d_new[0]), (0xa, 0xb, 0xc));
        assert!(r.randomness.is_empty() && r.vanilla_proof.is_empty() && r.partition_index == 0 && r.priority == 0);
        assert_eq!(r.request_id, "x");
        assert_eq!(snap.single_id(), "snap-1000-7");

        let w = ProofInput::from_kind(ProofType::WindowPost, &kind_input("window")).unwrap();
        let r = w.request("y".into());
        assert_eq!(r.proof_kind, ProofKind::WindowPostPartition as i32);
        assert_eq!((r.partition_index, r.miner_id, r.sector_size, r.randomness.len()), (3, 1000, 2048, 32));
        assert!(r.comm_r_old.is_empty() && r.sector_number == 0 && r.priority == 0);
        assert_eq!(w.single_id(), "wdpost-1000-3-[1 2 3 4 5 6 7 8]");

        let win = ProofInput::from_kind(ProofType::WinningPost, &kind_input("winning")).unwrap();
        let r = win.request("z".into());
        assert_eq!(r.proof_kind, ProofKind::WinningPost as i32);
        assert_eq!((r.randomness.len(), r.vanilla_proofs.len()), (32, 2));
        assert!(r.partition_index == 0 && r.sector_number == 0 && r.comm_d_new.is_empty());
        assert_eq!(win.single_id(), "winpost-1000-0102030405060708");

        let ids: std::collections::HashSet<String> = (0..5).map(|i| win.batch_id("42-1700000000", i)).collect();
        assert_eq!(ids.len(), 5);
        assert_eq!(win.batch_id("42-1700000000", 3), "winpost-1000-0102030405060708-42-1700000000-3");
        let e = ProofInput::from_kind(ProofType::PoRep, &kind_input("window")).unwrap_err();
        assert!(e.to_string().contains("--c1"), "{e}");
    }

    #[test]
    fn an_input_file_of_another_kind_or_not_json_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("cuzk-bench-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("winning.json");
        std::fs::write(&path, serde_json::to_vec(&kind_input("winning")).unwrap()).unwrap();
        let e = ProofInput::load(ProofType::WindowPost, &path, None, None).unwrap_err().to_string();
        assert!(e.contains("winning.json") && e.contains("\"winning\"") && e.contains("-t wpost"), "{e}");
        let ok = ProofInput::load(ProofType::WinningPost, &path, Some(1234), None).unwrap();
        assert_eq!(ok.single_id(), "winpost-1234-0102030405060708");
        let junk = dir.join("junk.json");
        std::fs::write(&junk, b"{\"kind\": 3}").unwrap();
        let e = format!("{:#}", ProofInput::load(ProofType::Snap, &junk, None, None).unwrap_err());
        assert!(e.contains("junk.json") && e.contains("not a proof input"), "{e}");
        let e = format!("{:#}", ProofInput::load(ProofType::Snap, &dir.join("none.json"), None, None).unwrap_err());
        assert!(e.contains("none.json") && e.contains("--input"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn status(gpus: &[(&str, &str)], queue: &str, pending: u32, in_progress: u32) -> GetStatusResponse {
        GetStatusResponse {
            gpus: gpus
                .iter()
                .enumerate()
                .map(|(i, (ids, kinds))| GpuStatus {
                    ordinal: i as u32,
                    current_job_id: ids.to_string(),
                    current_proof_kind: kinds.to_string(),
                    ..Default::default()
                })
                .collect(),
            queues: vec![QueueStatus { proof_kind: queue.into(), pending, in_progress }],
            ..Default::default()
        }
    }

    #[test]
    fn stages_of_the_jobs_in_flight() {
        let ours: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        // a on GPU 0, another client's job on GPU 1; 3 of the queue in progress (2 on GPUs).
        let s = status(&[("a", "window-post"), ("x", "window-post")], "window-post", 5, 3);
        let st = stages(&ours, "window-post", &s);
        assert_eq!(st, Stages { queued: 2, synthesizing: 1, proving: 1, gpus: true });
        assert_eq!(st.to_string(), "2 queued, 1 synthesizing, 1 proving");
        // Two jobs on one GPU (comma-separated), nothing else in progress.
        let s = status(&[("a,b", "window-post,window-post")], "window-post", 2, 2);
        assert_eq!(stages(&ours, "window-post", &s), Stages { queued: 2, synthesizing: 0, proving: 2, gpus: true });
        // The CPU backend lists no GPU: in progress is synthesizing or proving.
        let s = status(&[], "porep-c2", 1, 3);
        let st = stages(&ours, "porep-c2", &s);
        assert_eq!(st, Stages { queued: 1, synthesizing: 3, proving: 0, gpus: false });
        assert_eq!(st.to_string(), "1 queued, 3 synthesizing/proving");
    }

    #[test]
    fn progress_message_and_eta() {
        assert_eq!(eta(Duration::from_secs(60), 0, 10), None);
        assert_eq!(eta(Duration::from_secs(60), 2, 10), Some(Duration::from_secs(240)));
        assert_eq!(eta(Duration::from_secs(60), 10, 10), Some(Duration::ZERO));
        let st = Stages { queued: 1, synthesizing: 1, proving: 1, gpus: true };
        assert_eq!(progress_message(3, Some(st), None), "ETA ? · 3 in flight: 1 queued, 1 synthesizing, 1 proving");
        assert_eq!(progress_message(3, Some(st), Some(Duration::from_secs(187))), "ETA 3m07s · 3 in flight: 1 queued, 1 synthesizing, 1 proving");
        // Stages from before a proof came back no longer add up: left out until the next poll.
        assert_eq!(progress_message(2, Some(st), Some(Duration::from_secs(45))), "ETA 45s · 2 in flight");
        assert_eq!(progress_message(0, None, Some(Duration::ZERO)), "ETA 0s · 0 in flight");
        assert_eq!(short_duration(Duration::from_secs(7500)), "2h05m");
    }

    #[test]
    fn proof_types_by_name() {
        for (name, t) in [("porep", ProofType::PoRep), ("snap", ProofType::Snap), ("wpost", ProofType::WindowPost), ("winning", ProofType::WinningPost)] {
            assert_eq!(ProofType::parse(name), Ok(t));
            assert_eq!(t.to_string(), name);
        }
        assert_eq!(ProofType::parse("Window-Post"), Ok(ProofType::WindowPost));
        let e = ProofType::parse("bogus").unwrap_err();
        assert!(e.contains("\"bogus\"") && e.contains("porep, snap, wpost and winning"), "{e}");
    }
}
