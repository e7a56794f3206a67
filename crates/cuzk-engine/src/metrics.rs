//! Prometheus text exposition (format 0.0.4) of the engine's status: what `GetMetrics`
//! returns and what a scraper reads. Rendered from [`EngineStatus`] so that status and
//! metrics never disagree.

use std::fmt::Write;

use crate::engine::{EngineState, EngineStatus};

pub fn render(st: &EngineStatus) -> String {
    let mut out = String::new();
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
    metric(
        "cuzk_queue_depth",
        "gauge",
        "Jobs waiting to start, by proof kind.",
        &per_queue(&|q| q.pending),
    );
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
    metric(
        "cuzk_proofs_completed_total",
        "counter",
        "Jobs that ended with a verified proof.",
        &one(st.completed as f64),
    );
    metric(
        "cuzk_proofs_failed_total",
        "counter",
        "Jobs that ended failed.",
        &one(st.failed as f64),
    );
    metric(
        "cuzk_proofs_cancelled_total",
        "counter",
        "Jobs that were cancelled.",
        &one(st.cancelled as f64),
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
    out
}
