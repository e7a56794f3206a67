//! Thread pools of their own, for CPU work that must not queue behind rayon's global pool.
//!
//! rayon runs tasks from one queue per pool: work that sits on a critical path (the host
//! copies that feed the GPU, [`crate::prover`]'s scalar split beside the H step) waits
//! there behind whatever else was queued first (the other of the two; synthesis has pools
//! of its own, cuzk-filecoin's synthesis.rs). On the
//! H200 (2026-12-03, bench/history/2026-12-03.md), a 2^27 H step's 12 GiB upload took 0.78 s with the
//! split beside it on the global pool, and 0.27 s with the split on a pool of its own.

use std::sync::Mutex;

/// Rayon pools of their own for one purpose, by thread count: `0` is rayon's global pool, a
/// count is a pool of that many threads of its own (built at its first use and kept: each
/// count once, so a bench may compare counts in one run). The count comes from the caller's
/// tuning (`ProverTuning::split_threads`, cuzk-gpu's copy threads), never from the
/// environment.
pub struct SidePool {
    name: &'static str,
    /// The pools built so far, by thread count (leaked: they live as long as the process).
    pools: Mutex<Vec<&'static rayon::ThreadPool>>,
}

impl SidePool {
    pub const fn new(name: &'static str) -> SidePool {
        SidePool { name, pools: Mutex::new(Vec::new()) }
    }

    /// Runs `f` in this purpose's pool of `threads` threads (its parallel iterators use the
    /// pool's threads), or in the global pool when `threads` is 0 or no pool could be built.
    pub fn install<R: Send>(&self, threads: usize, f: impl FnOnce() -> R + Send) -> R {
        match self.get(threads) {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    fn get(&self, threads: usize) -> Option<&'static rayon::ThreadPool> {
        if threads == 0 {
            return None;
        }
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pools.iter().find(|p| p.current_num_threads() == threads) {
            return Some(p);
        }
        let name = self.name;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{name}-{threads}-{i}"))
            .build()
            .ok()?;
        let pool: &'static rayon::ThreadPool = Box::leak(Box::new(pool));
        pools.push(pool);
        Some(pool)
    }
}

/// The machine's logical cores (4 when it cannot be read).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    static POOL: SidePool = SidePool::new("cuzk-test-side");

    /// Work installed in the pool runs on its own threads (named after it and the count),
    /// a changed count takes effect at the next call, and 0 runs on the global pool.
    #[test]
    fn installed_work_runs_on_the_pools_own_threads() {
        use rayon::prelude::*;
        let names = |threads| -> Vec<String> {
            POOL.install(threads, || {
                (0..64)
                    .into_par_iter()
                    .map(|_| std::thread::current().name().unwrap_or("").to_string())
                    .collect()
            })
        };
        let first = names(3);
        assert!(first.iter().all(|n| n.starts_with("cuzk-test-side-3-")), "{first:?}");
        let second = names(2);
        assert!(second.iter().all(|n| n.starts_with("cuzk-test-side-2-")), "{second:?}");
        let inside = POOL.install(0, rayon::current_thread_index);
        assert_eq!(inside, None, "with 0 threads, the work ran inside a pool of its own");
    }
}
