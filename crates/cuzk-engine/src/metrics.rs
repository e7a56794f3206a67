//! Prometheus text exposition (format 0.0.4) of the engine's status: what `GetMetrics`
//! returns and what a scraper reads (cuzkd's `[metrics] listen`). Rendered from
//! [`EngineStatus`] so that status and metrics never disagree. Names and labels follow
//! Prometheus' conventions: a `cuzk_` prefix, base units (seconds, bytes), `_total` on
//! counters, `proof_kind` as the queue names it (`porep-c2`, `snap-update`, `window-post`,
//! `winning-post`).

use std::fmt::Write;

use crate::engine::{EngineState, EngineStatus};
use crate::job::Priority;
use crate::stats::{Histogram, JobStage, PartitionStage};

/// Appends one histogram family: `_bucket` lines per label set (cumulative, then `+Inf`),
/// `_sum` and `_count`.
fn histogram(out: &mut String, name: &str, help: &str, series: &[(String, &Histogram)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for (labels, h) in series {
        for (bound, count) in h.cumulative() {
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
    }
}

pub fn render(st: &EngineStatus) -> String {
    let mut out = String::new();
    let mut hist = String::new();
    let kind_label = |k: crate::job::ProofKind| format!("proof_kind=\"{}\"", k.queue_name());
    // Each kind's histograms, labelled with the kind and their stage's name.
    let by_stage = |stages: &[&'static str], of: &dyn Fn(&crate::stats::KindStats) -> &[Histogram]| {
        let mut series: Vec<(String, &Histogram)> = Vec::new();
        for k in &st.stats.kinds {
            for (stage, h) in stages.iter().zip(of(k)) {
                series.push((format!("{},stage=\"{stage}\"", kind_label(k.kind)), h));
            }
        }
        series
    };
    let partition_stages = PartitionStage::ALL.map(PartitionStage::name);
    histogram(
        &mut hist,
        "cuzk_partition_stage_seconds",
        "Seconds each partition spent in a stage (synthesis, synthesized_wait, prove, gpu_compute), by proof kind.",
        &by_stage(&partition_stages, &|k| &k.partition),
    );
    let job_stages = JobStage::ALL.map(JobStage::name);
    histogram(
        &mut hist,
        "cuzk_job_stage_seconds",
        "Seconds each completed job spent in a stage (queue_wait, srs_load, verify, total), by proof kind.",
        &by_stage(&job_stages, &|k| &k.job),
    );
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    let per_queue = |f: &dyn Fn(&crate::engine::QueueStatus) -> u32| -> Vec<(String, f64)> {
        st.queues
            .iter()
            .map(|q| {
                (
                    format!("{{proof_kind=\"{}\"}}", q.kind.queue_name()),
                    f64::from(f(q)),
                )
            })
            .collect()
    };
    let per_priority: Vec<(String, f64)> = st
        .queues
        .iter()
        .flat_map(|q| {
            Priority::ALL.iter().zip(q.pending_by_priority).map(move |(p, n)| {
                (format!("{{proof_kind=\"{}\",priority=\"{}\"}}", q.kind.queue_name(), p.name()), f64::from(n))
            })
        })
        .collect();
    metric("cuzk_queue_depth", "gauge", "Jobs waiting to start, by proof kind and priority.", &per_priority);
    metric(
        "cuzk_jobs_in_progress",
        "gauge",
        "Jobs synthesizing or proving, by proof kind.",
        &per_queue(&|q| q.in_progress),
    );
    metric(
        "cuzk_jobs_running",
        "gauge",
        "Jobs synthesizing or proving.",
        &one(f64::from(st.running)),
    );
    let per_kind = |f: &dyn Fn(&crate::stats::KindStats) -> u64| -> Vec<(String, f64)> {
        st.stats.kinds.iter().map(|k| (format!("{{{}}}", kind_label(k.kind)), f(k) as f64)).collect()
    };
    metric(
        "cuzk_proofs_completed_total",
        "counter",
        "Jobs that ended with a verified proof, by proof kind.",
        &per_kind(&|k| k.completed),
    );
    metric("cuzk_proofs_failed_total", "counter", "Jobs that ended failed, by proof kind.", &per_kind(&|k| k.failed));
    metric(
        "cuzk_proofs_cancelled_total",
        "counter",
        "Jobs that were cancelled, by proof kind.",
        &per_kind(&|k| k.cancelled),
    );
    metric(
        "cuzk_uptime_seconds",
        "gauge",
        "Seconds since the engine started.",
        &one(st.uptime.as_secs_f64()),
    );
    metric(
        "cuzk_paused",
        "gauge",
        "1 while no new job starts (paused or draining).",
        &one(if st.state == EngineState::Running {
            0.0
        } else {
            1.0
        }),
    );
    metric(
        "cuzk_host_memory_budget_bytes",
        "gauge",
        "Host memory budget for synthesized and proving jobs.",
        &one(st.memory.budget_bytes as f64),
    );
    metric(
        "cuzk_host_memory_in_use_bytes",
        "gauge",
        "Host memory reserved by jobs now.",
        &one(st.memory.in_use_bytes as f64),
    );
    metric(
        "cuzk_host_memory_high_water_bytes",
        "gauge",
        "Most host memory reserved at once.",
        &one(st.memory.high_water_bytes as f64),
    );
    let srs: Vec<_> = st
        .srs
        .iter()
        .map(|r| {
            (
                format!("{{circuit_id=\"{}\"}}", r.circuit_id),
                r.size_bytes as f64,
            )
        })
        .collect();
    metric(
        "cuzk_srs_resident_bytes",
        "gauge",
        "Resident parameters, by circuit.",
        &srs,
    );
    let busy: Vec<_> = st
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            (
                format!("{{device=\"{}\",worker=\"{i}\"}}", w.device),
                if w.job_id.is_some() { 1.0 } else { 0.0 },
            )
        })
        .collect();
    metric(
        "cuzk_worker_busy",
        "gauge",
        "1 while the worker proves a job.",
        &busy,
    );
    let per_device = |f: &dyn Fn(&crate::engine::MemoryStatus) -> u64| -> Vec<(String, f64)> {
        st.devices
            .iter()
            .filter_map(|d| d.memory.as_ref().map(|m| (format!("{{device=\"{}\"}}", d.name), f(m) as f64)))
            .collect()
    };
    let per_device_health = |f: &dyn Fn(&crate::engine::DeviceStatus) -> f64| -> Vec<(String, f64)> {
        st.devices.iter().map(|d| (format!("{{device=\"{}\"}}", d.name), f(d))).collect()
    };
    metric(
        "cuzk_device_healthy",
        "gauge",
        "1 while the device takes partitions; 0 after a device failure, until a reload.",
        &per_device_health(&|d| if d.healthy { 1.0 } else { 0.0 }),
    );
    metric(
        "cuzk_device_failures_total",
        "counter",
        "Device failures under a partition's proof (each partition was proved again elsewhere or its job failed).",
        &per_device_health(&|d| d.failures as f64),
    );
    metric(
        "cuzk_device_memory_budget_bytes",
        "gauge",
        "Device memory budget of each GPU's arena.",
        &per_device(&|m| m.budget_bytes),
    );
    metric(
        "cuzk_device_memory_in_use_bytes",
        "gauge",
        "Device memory held by each GPU's arena now.",
        &per_device(&|m| m.in_use_bytes),
    );
    metric(
        "cuzk_device_memory_high_water_bytes",
        "gauge",
        "Most device memory each GPU's arena held at once.",
        &per_device(&|m| m.high_water_bytes),
    );
    out.push_str(&hist);
    out
}
