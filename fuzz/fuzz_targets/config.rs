//! cuzkd's TOML configuration: `Config::parse`, and for an accepted configuration everything
//! the daemon derives from it (`engine_config` for 0 and 1 GPUs, `drain_timeout`,
//! `gpus.plan()`, and the log filter `logging::filter` builds from `[log] level`).
//!
//! Checked: no panic and no hang; an accepted configuration gives settings the engine accepts
//! (at least one worker and synthesis thread, a non-zero memory budget and attempt count,
//! deadlines that do not overflow), a plan with one entry per listed GPU and no GPU twice.
//!
//! Found by this target (reproducers in `artifacts-for-review/`, bench/fuzzing.md):
//! tracing-subscriber's `EnvFilter` parser panics on `" \u{e9}="` and compiles field filters
//! (`[{f=.*_................}]`) into regexes that take minutes; `Config::parse` now refuses
//! every `[log] level` but `level` and `module=level` directives before that parser sees it.
//! `RUST_LOG` is not fuzzed here: it keeps the full syntax, and is the operator's.

#![no_main]

use std::time::Instant;

use cuzkd::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: { std::env::remove_var("RUST_LOG") }, |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(c) = Config::parse(text, "fuzz.toml") else {
        return;
    };
    for gpus in [0, 1] {
        let ec = c.engine_config(gpus);
        assert!(
            ec.gpu_workers_per_device >= 1 && ec.synthesis_workers >= 1,
            "{ec:?}"
        );
        assert!(
            ec.host_memory_budget_bytes > 0 && ec.max_attempts >= 1 && ec.max_queued_jobs >= 1,
            "{ec:?}"
        );
        assert!(
            Instant::now().checked_add(ec.result_ttl).is_some(),
            "{ec:?}"
        );
    }
    assert!(Instant::now().checked_add(c.drain_timeout()).is_some());
    let plan = c.gpus.plan();
    assert_eq!(plan.len(), c.gpus.devices.len().max(1));
    let mut ordinals: Vec<_> = plan.iter().map(|p| p.ordinal).collect();
    ordinals.sort_unstable();
    ordinals.dedup();
    assert_eq!(ordinals.len(), plan.len(), "a GPU planned twice: {plan:?}");
    // What cuzkd's logging builds from the level (RUST_LOG is unset, see `fuzz_target!`).
    let _ = cuzkd::logging::filter(&c.log.level);
});
