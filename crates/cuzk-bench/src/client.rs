//! cuzk-bench as a client of a running cuzkd: single and batch proofs, status, cancel,
//! preload, metrics. The batch output is the format operators already use.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect_with, Address, AuthChannel, ClientAuth, ProvingEngineClient, DEFAULT_MAX_MESSAGE_BYTES};

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

/// What a PoRep request carries besides its C1 file.
#[derive(Clone, Debug)]
pub struct PoRepTarget {
    pub c1: PathBuf,
    pub miner_id: u64,
    pub sector_id: Option<u64>,
}

impl PoRepTarget {
    fn request(&self, request_id: String, payload: Vec<u8>) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id,
            proof_kind: ProofKind::PorepSealCommit as i32,
            miner_id: self.miner_id,
            sector_number: self.sector_id.unwrap_or(0),
            vanilla_proof: payload,
            ..Default::default()
        }
    }
}

/// Proof kinds `-t` accepts.
pub fn check_kind(kind: &str) -> Result<()> {
    match kind {
        "porep" => Ok(()),
        "snap" | "wpost" | "winning" => bail!("-t {kind}: only porep is proved by cuzkd today"),
        other => bail!("-t {other}: unknown proof type (porep, snap, wpost, winning)"),
    }
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

fn read_c1(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

pub async fn single(daemon: &Daemon, target: &PoRepTarget, request_id: Option<String>, out: Option<&Path>) -> Result<()> {
    let mut c = client(daemon).await?;
    let id = request_id.unwrap_or_else(|| format!("bench-{}-single", std::process::id()));
    let start = Instant::now();
    let r = c
        .prove(ProveRequest { submit: Some(target.request(id, read_c1(&target.c1)?)) })
        .await?
        .into_inner()
        .result
        .context("ProveResponse without a result")?;
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

struct Outcome {
    ok: bool,
    wall: Duration,
    prove_ms: u64,
}

/// `count` proofs of the same C1, `concurrency` in flight at once, each its own job.
pub async fn batch(
    daemon: &Daemon,
    kind: &str,
    target: &PoRepTarget,
    count: usize,
    concurrency: usize,
    out_dir: Option<&Path>,
) -> Result<bool> {
    check_kind(kind)?;
    if count == 0 || concurrency == 0 {
        bail!("-c and -j must be at least 1");
    }
    let c = client(daemon).await?;
    let payload = Arc::new(read_c1(&target.c1)?);
    if let Some(d) = out_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    println!("=== Batch Benchmark ===");
    println!("Proof type:   {kind}");
    println!("Count:        {count}");
    println!("Concurrency:  {concurrency}");
    let tty = std::io::stdout().is_terminal();
    let run_id = format!("bench-{}-{}", std::process::id(), epoch_seconds());
    let sem = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        let (mut c, sem, payload, target) = (c.clone(), sem.clone(), payload.clone(), target.clone());
        let req = target.request(format!("{run_id}-{i}"), payload.to_vec());
        tasks.push(tokio::spawn(async move {
            let _permit = sem.acquire_owned().await;
            let t = Instant::now();
            let r = c.prove(ProveRequest { submit: Some(req) }).await;
            (i, t.elapsed(), r)
        }));
    }
    let mut outcomes = Vec::with_capacity(count);
    for (done, task) in tasks.into_iter().enumerate() {
        let (i, wall, r) = task.await?;
        let line = match r.map(|r| r.into_inner().result) {
            Ok(Some(r)) if r.status == Status::Completed as i32 => {
                if let Some(d) = out_dir {
                    std::fs::write(d.join(format!("proof-{i}.bin")), &r.proof)?;
                }
                let prove_ms = r.total_ms.saturating_sub(r.queue_wait_ms);
                outcomes.push(Outcome { ok: true, wall, prove_ms });
                format!(
                    "  [{}/{count}] COMPLETED — {:.1}s (prove={prove_ms} ms, queue={} ms)",
                    i + 1,
                    wall.as_secs_f64(),
                    r.queue_wait_ms
                )
            }
            Ok(Some(r)) => {
                outcomes.push(Outcome { ok: false, wall, prove_ms: 0 });
                format!("  [{}/{count}] {} — {:.1}s: {}", i + 1, status_name(r.status), wall.as_secs_f64(), r.error_message)
            }
            Ok(None) => {
                outcomes.push(Outcome { ok: false, wall, prove_ms: 0 });
                format!("  [{}/{count}] FAILED — no result in the response", i + 1)
            }
            Err(e) => {
                outcomes.push(Outcome { ok: false, wall, prove_ms: 0 });
                format!("  [{}/{count}] FAILED — {:.1}s: {}", i + 1, wall.as_secs_f64(), e.message())
            }
        };
        if tty {
            print!("\r\x1b[2K");
        }
        println!("{line}");
        if tty && done + 1 < count {
            let filled = (done + 1) * 30 / count;
            print!("[{}{}] {}/{count}", "#".repeat(filled), " ".repeat(30 - filled), done + 1);
            let _ = std::io::stdout().flush();
        }
    }
    let total = start.elapsed();
    let ok: Vec<&Outcome> = outcomes.iter().filter(|o| o.ok).collect();
    println!("=== Batch Summary ===");
    println!("Total time:   {:.1}s", total.as_secs_f64());
    println!("Completed:    {}", ok.len());
    println!("Failed:       {}", outcomes.len() - ok.len());
    if !ok.is_empty() {
        let walls: Vec<f64> = ok.iter().map(|o| o.wall.as_secs_f64()).collect();
        let proves: Vec<f64> = ok.iter().map(|o| o.prove_ms as f64 / 1000.0).collect();
        let stats = |v: &[f64]| {
            let avg = v.iter().sum::<f64>() / v.len() as f64;
            let min = v.iter().cloned().fold(f64::MAX, f64::min);
            let max = v.iter().cloned().fold(f64::MIN, f64::max);
            format!("avg {avg:.1}s, min {min:.1}s, max {max:.1}s")
        };
        println!("Wall time:    {}", stats(&walls));
        println!("Prove time:   {}", stats(&proves));
        let per_min = ok.len() as f64 / total.as_secs_f64() * 60.0;
        println!(
            "Throughput:   {per_min:.2} proofs/min, {:.1} s/proof",
            total.as_secs_f64() / ok.len() as f64
        );
    }
    Ok(ok.len() == outcomes.len())
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
