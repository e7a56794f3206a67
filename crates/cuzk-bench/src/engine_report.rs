//! engine-bench's report: the timeline of every partition's synthesis and prove(), the
//! steady state, the GPU's H steps, the devices' health and the urgent jobs against their
//! goal, printed from what the bench's runner recorded (`engine_bench`).

use std::time::Duration;

use anyhow::{bail, Result};
use cuzk_engine::Engine;

/// One span of the timeline, from the bench's start.
#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub(crate) job: usize,
    pub(crate) partition: usize,
    pub(crate) gpu: bool,
    /// The engine worker that ran it (`cuzk-worker-N`), for the device's share.
    pub(crate) worker: Option<usize>,
    pub(crate) start: Duration,
    pub(crate) end: Duration,
}

/// One partition's H step: its path, its wall inside prove(), and the backend's split.
pub(crate) struct HStepSample {
    pub(crate) path: cuzk_gpu::HStep,
    pub(crate) wall: Duration,
    pub(crate) split: cuzk_gpu::HSplit,
    /// Where a, b and c were evaluated (`--deferred`: on the device, with the kernel's time).
    pub(crate) eval: cuzk_gpu::backend::EvalPath,
}

/// Each device's health as the engine reports it (status and metrics), and, with a device
/// made to fail, the check that it is unhealthy and the others are not. Returns a summary.
pub(crate) fn print_device_health(engine: &Engine, failing: Option<usize>) -> Result<String> {
    let st = engine.status();
    let metrics = engine.metrics_text();
    for (i, d) in st.devices.iter().enumerate() {
        println!(
            "  device {}: healthy {}, {} device failure(s){}",
            d.name,
            d.healthy,
            d.failures,
            d.last_error.as_deref().map(|e| format!(", last: {e}")).unwrap_or_default()
        );
        let metric = format!("cuzk_device_healthy{{device=\"{}\"}} {}", d.name, u8::from(d.healthy));
        if !metrics.lines().any(|l| l == metric) {
            bail!("the metrics do not report {metric:?}");
        }
        let expect_healthy = failing != Some(i);
        if failing.is_some() && (d.healthy != expect_healthy || (d.failures > 0) == expect_healthy) {
            bail!("device {}: healthy {} after {} failure(s), but the injected failure was on device {failing:?}", d.name, d.healthy, d.failures);
        }
    }
    Ok(match failing {
        Some(f) => format!("device {} marked unhealthy in status and metrics, every job completed", st.devices[f].name),
        None => "no device failed".into(),
    })
}

/// The H step of each partition as the GPU backend split it (one GPU, one worker): its wall
/// inside prove(), the host time handing a, b, c (and the lean path's b and c again) to the
/// upload stream, the lean path's downloads, and the kernels from the first to the last
/// (events, waits for uploads included); then their averages.
pub(crate) fn print_h_steps(samples: &[HStepSample]) {
    if samples.is_empty() {
        return;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  H step of each partition on the GPU (path: wall in prove() = upload + download + pin + the rest; kernels):");
    let mut sum = [0.0f64; 5];
    for (i, h) in samples.iter().enumerate() {
        let st = &h.split.step;
        let row = [ms(h.wall), ms(st.upload), ms(st.download), ms(st.pin), ms(st.kernels)];
        for (s, v) in sum.iter_mut().zip(row) {
            *s += v;
        }
        let eval = match h.eval {
            cuzk_gpu::backend::EvalPath::Device { kernel, uploaded } => {
                format!(" (a, b, c evaluated on the device: kernel {:.1} ms{})", ms(kernel), if uploaded { ", circuit uploaded" } else { "" })
            }
            cuzk_gpu::backend::EvalPath::Host(why) => format!(" (a, b, c evaluated on the host: {why})"),
            cuzk_gpu::backend::EvalPath::None => String::new(),
        };
        println!(
            "    {i:>3} {:?}: wall {:.1} ms = upload {:.1} + download {:.1} + pin {:.1} + rest {:.1} ms; kernels {:.1} ms{eval}",
            h.path,
            row[0],
            row[1],
            row[2],
            row[3],
            (row[0] - row[1] - row[2] - row[3]).max(0.0),
            row[4]
        );
    }
    let mut kernels: Vec<f64> = samples
        .iter()
        .filter_map(|h| match h.eval {
            cuzk_gpu::backend::EvalPath::Device { kernel, .. } => Some(ms(kernel)),
            _ => None,
        })
        .collect();
    if !kernels.is_empty() {
        let (median, min, max) = crate::report::median_spread(&mut kernels);
        println!(
            "    evaluation kernel of {} partitions: median {median:.1} ms (min {min:.1}, max {max:.1})",
            kernels.len()
        );
    }
    let n = samples.len() as f64;
    println!(
        "    average of {}: wall {:.1} ms, upload {:.1}, download {:.1}, pin {:.1}, kernels {:.1} ms",
        samples.len(),
        sum[0] / n,
        sum[1] / n,
        sum[2] / n,
        sum[3] / n,
        sum[4] / n
    );
}

/// Throughput of each device count against the first one's, per synthesis worker count
/// (same process, same parameters): by the steady state per proof and by the time to the
/// last proof's end.
pub(crate) fn print_throughput(runs: &[(usize, usize, (Option<Duration>, Option<Duration>))]) {
    let Some(&(base_dev, _, _)) = runs.first() else { return };
    let ratio = |b: Option<Duration>, x: Option<Duration>| match (b, x) {
        (Some(b), Some(x)) if !x.is_zero() => format!("{:.2}x ({:.1} s against {:.1} s)", b.as_secs_f64() / x.as_secs_f64(), secs(x), secs(b)),
        _ => "n/a (needs 2 proofs or more, --proofs)".to_string(),
    };
    for &(ndev, workers, (steady, all)) in runs.iter().filter(|r| r.0 != base_dev) {
        let Some(&(_, _, (b_steady, b_all))) = runs.iter().find(|r| r.0 == base_dev && r.1 == workers) else { continue };
        println!(
            "=== throughput, {workers} synthesis worker(s), {ndev} device(s) against {base_dev}: steady state per proof {}; \
             all proofs done {} ===",
            ratio(b_steady, steady),
            ratio(b_all, all)
        );
    }
}

/// Timeline job indices from here on are urgent jobs (their request ids end in 900 + i for
/// the standalone runs, 1000 + i during the main proofs).
pub(crate) const URGENT_INDEX: usize = 900;

/// Timeline job indices of the `--beside` jobs: input b's job i is `BESIDE_INDEX + 100 b + i`
/// (the main proofs are 0..BESIDE_INDEX).
pub(crate) const BESIDE_INDEX: usize = 500;

/// How many `--beside` inputs fit their blocks of 100 indices below the urgent jobs'.
pub(crate) const BESIDE_MOST: usize = (URGENT_INDEX - BESIDE_INDEX) / 100;

/// The urgent jobs' standalone runs, before the main proofs (900 + i).
fn standalone(s: &Span) -> bool {
    (URGENT_INDEX..1000).contains(&s.job)
}

/// The urgent jobs against the goal: standalone time plus one main partition's GPU time.
pub(crate) fn print_urgent(spans: &[Span], runs: &[(usize, Duration, Duration)], alone: Duration) {
    let main_gpu: Vec<Duration> = spans.iter().filter(|s| s.gpu && s.job < BESIDE_INDEX).map(|s| s.end - s.start).collect();
    let partition_gpu = main_gpu.iter().sum::<Duration>() / main_gpu.len().max(1) as u32;
    let goal = alone + partition_gpu;
    println!(
        "  urgent CRITICAL jobs while the main proofs ran (goal: standalone {:.2} s + one main partition's prove() {:.2} \
         s = {:.2} s):",
        secs(alone),
        secs(partition_gpu),
        secs(goal)
    );
    for (i, (lane, at, took)) in runs.iter().enumerate() {
        let own = |gpu: bool| {
            spans
                .iter()
                .filter(|s| s.job == 1000 + i && s.gpu == gpu)
                .map(|s| format!("{:.2}..{:.2}", secs(s.start), secs(s.end)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "    urgent {i}: urgent_synthesis_workers {lane}, submitted at {:.1} s, done in {:.2} s ({:.2}x the goal, \
             {:.2}x its standalone time; S {}, G {})",
            secs(*at),
            secs(*took),
            secs(*took) / secs(goal).max(1e-9),
            secs(*took) / secs(alone).max(1e-9),
            own(false),
            own(true)
        );
    }
    for lane in runs.iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>() {
        let mine: Vec<f64> = runs.iter().filter(|r| r.0 == lane).map(|r| secs(r.2)).collect();
        let worst = mine.iter().cloned().fold(0.0, f64::max);
        println!(
            "=== urgent jobs, urgent_synthesis_workers {lane}: worst {worst:.2} s, mean {:.2} s; worst against the goal \
             {:.2} s: {:.2}x; against the job alone on the idle engine {:.2} s: {:.2}x ===",
            mine.iter().sum::<f64>() / mine.len() as f64,
            secs(goal),
            worst / secs(goal).max(1e-9),
            secs(alone),
            worst / secs(alone).max(1e-9)
        );
    }
}

/// The `--beside` inputs of a mixed load: each one's jobs, request to proof (`done`: from
/// each job's submission, right after the main proofs'), and its partitions' prove(); then the
/// GPU's busy share over every job's partitions. Input b's jobs are timeline indices
/// `BESIDE_INDEX + 100 b + i`.
pub(crate) fn print_beside(spans: &[Span], inputs: &[(String, usize)], done: &[Vec<Duration>]) {
    let first = BESIDE_INDEX;
    for (b, ((name, partitions), ends)) in inputs.iter().zip(done).enumerate() {
        let mine = |s: &&Span| s.job >= first + 100 * b && s.job < first + 100 * (b + 1);
        let mut own: Vec<&Span> = spans.iter().filter(mine).collect();
        own.sort_by_key(|s| s.start);
        for s in &own {
            println!(
                "    {} beside {b} job {} partition {:>2}  {:>8.2} .. {:>8.2}  ({:.2} s)",
                if s.gpu { "G" } else { "S" },
                s.job - first - 100 * b,
                s.partition,
                secs(s.start),
                secs(s.end),
                secs(s.end - s.start)
            );
        }
        let mut gpu: Vec<f64> = own.iter().filter(|s| s.gpu).map(|s| secs(s.end - s.start)).collect();
        let mut synth: Vec<f64> = own.iter().filter(|s| !s.gpu).map(|s| secs(s.end - s.start)).collect();
        let mut ends: Vec<f64> = ends.iter().map(|d| secs(*d)).collect();
        ends.sort_by(f64::total_cmp);
        let list = ends.iter().map(|e| format!("{e:.1}")).collect::<Vec<_>>().join(", ");
        let stat = |v: &mut Vec<f64>| {
            if v.is_empty() {
                return "none".to_string();
            }
            let n = v.len();
            let (median, min, max) = crate::report::median_spread(v);
            format!("median {median:.2} s ({min:.2}-{max:.2}; {n})")
        };
        println!(
            "=== beside: {name}, {} job(s) of {partitions} partition(s): request to proof {list} s; prove() per partition {}; \
             synthesis per partition {} ===",
            ends.len(),
            stat(&mut gpu),
            stat(&mut synth)
        );
    }
    // The urgent jobs' standalone runs came before the submission, on an idle engine.
    let gpu: Vec<&Span> = spans.iter().filter(|s| s.gpu && !standalone(s)).collect();
    if let (Some(start), Some(end)) = (gpu.iter().map(|s| s.start).min(), gpu.iter().map(|s| s.end).max()) {
        let busy: Duration = gpu.iter().map(|s| s.end - s.start).sum();
        println!(
            "  every job (main, beside, urgent): a device worker in prove() {:.1}% of {:.1} s, from the first partition's start \
             to the last's end ({} partitions)",
            100.0 * secs(busy) / secs(end - start).max(1e-9),
            secs(end - start),
            gpu.len()
        );
    }
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Per proof: its id, when it was done, its bytes, and its time inside backend calls.
pub(crate) type Done = (String, Duration, usize, Duration);

/// The run's timeline and summary; returns the steady-state time per proof (2 proofs or
/// more) and the time to the last proof's end.
pub(crate) fn print_report(
    spans: &[Span],
    done: &[Done],
    partitions: usize,
    workers: usize,
    ndev: usize,
    worker_devices: &[String],
) -> (Option<Duration>, Option<Duration>) {
    let mut spans = spans.to_vec();
    spans.sort_by_key(|s| s.start);
    println!(
        "  timeline (s from submission; S = synthesis of a partition on the CPU, G = its prove() on a device worker, \
         CPU stages included):"
    );
    let device_of = |s: &Span| s.worker.and_then(|w| worker_devices.get(w)).map_or("?", |d| d.as_str());
    for s in &spans {
        println!(
            "    {} job {} partition {:>2}  {:>8.2} .. {:>8.2}  ({:.2} s){}",
            if s.gpu { "G" } else { "S" },
            s.job,
            s.partition,
            secs(s.start),
            secs(s.end),
            secs(s.end - s.start),
            if s.gpu && ndev > 1 { format!("  on {}", device_of(s)) } else { String::new() }
        );
    }
    let mut prev = Duration::ZERO;
    for (i, (id, at, bytes, inside)) in done.iter().enumerate() {
        println!(
            "  proof {i} ({id}): done at {:.1} s, {:.1} s after the previous, {bytes} bytes, {:.1} s inside backend calls",
            secs(*at),
            secs(*at - prev),
            secs(*inside)
        );
        prev = *at;
    }
    let gpu: Vec<&Span> = spans.iter().filter(|s| s.gpu).collect();
    let synth: Vec<&Span> = spans.iter().filter(|s| !s.gpu).collect();
    let busy: Duration = gpu.iter().map(|s| s.end - s.start).sum();
    if let (Some(first), Some(last)) = (gpu.first(), gpu.iter().map(|s| s.end).max()) {
        let window = secs(last - first.start).max(1e-9);
        let inside: Duration = done.iter().map(|d| d.3).sum();
        println!(
            "  GPU busy {:.1}% from its first to its last partition{}: {:.1} s inside backend calls (NTT, MSM, their \
             transfers) of {:.1} s",
            100.0 * secs(inside) / window,
            if ndev > 1 { format!(" (summed over {ndev} devices)") } else { String::new() },
            secs(inside),
            window
        );
        println!(
            "  a device worker in prove() {:.1}% of that time ({} partitions, {:.2} s each on average)",
            100.0 * secs(busy) / window,
            gpu.len(),
            secs(busy) / gpu.len() as f64
        );
        if ndev > 1 {
            let mut names: Vec<&str> = gpu.iter().map(|s| device_of(s)).collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                let mine: Vec<&&Span> = gpu.iter().filter(|s| device_of(s) == name).collect();
                let busy: Duration = mine.iter().map(|s| s.end - s.start).sum();
                println!(
                    "  device {name}: {} partitions, a worker in prove() {:.1}% of that time",
                    mine.len(),
                    100.0 * secs(busy) / window
                );
            }
        }
    }
    if !synth.is_empty() {
        let total: Duration = synth.iter().map(|s| s.end - s.start).sum();
        println!("  synthesis: {} partitions, {:.2} s each on average", synth.len(), secs(total) / synth.len() as f64);
    }
    let steady = (done.len() >= 2).then(|| (done[done.len() - 1].1 - done[0].1) / (done.len() as u32 - 1));
    if let Some(steady) = steady {
        println!(
            "=== engine-bench, {ndev} device(s), {workers} synthesis worker(s): steady state {:.1} s per proof ({} partitions each; from \
             the first proof's end to the last's), first proof {:.1} s ===",
            secs(steady),
            partitions,
            secs(done[0].1)
        );
    } else if let Some((_, at, _, _)) = done.first() {
        println!("=== engine-bench, {ndev} device(s), {workers} synthesis worker(s): one proof in {:.1} s ===", secs(*at));
    }
    (steady, done.iter().map(|d| d.1).max())
}
