//! What the benches report besides their own rows: peak memory, the spread of rounds, a
//! compiled synthesis's stages, and when the process started. One place for every bench.

use std::time::Instant;

/// Where a compiled synthesis's time went.
pub fn stages(t: &cuzk_filecoin::SynthesisTimings) -> String {
    match t.compiled {
        Some(c) if c.in_place => format!(
            "circuit {:.3} s, parts in place {:.3} s ({} part(s) in parallel: gadgets, copy, products and check), rest {:.3} s",
            t.circuit.as_secs_f64(),
            c.assign.as_secs_f64(),
            c.parts,
            (c.join + c.products).as_secs_f64()
        ),
        Some(c) => format!(
            "circuit {:.3} s, gadgets {:.3} s ({} part(s) in parallel), join {:.3} s, products and check {:.3} s",
            t.circuit.as_secs_f64(),
            c.assign.as_secs_f64(),
            c.parts,
            c.join.as_secs_f64(),
            c.products.as_secs_f64()
        ),
        None => format!("circuit {:.3} s", t.circuit.as_secs_f64()),
    }
}

/// This process's peak resident memory (VmHWM), for the bench line.
pub fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.trim_start_matches("VmHWM:").trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}

/// Median, min and max of `v` (sorted in place; not empty): the benches' spread of rounds.
pub fn median_spread(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// When the process started (main's first line): engine-bench's cold start counts from here.
pub static PROCESS_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
