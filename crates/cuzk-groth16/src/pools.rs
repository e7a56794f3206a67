//! Thread pools of their own, for CPU work that must not queue behind rayon's global pool.
//!
//! rayon runs tasks from one queue per pool: work that sits on a critical path (the host
//! copies that feed the GPU, [`crate::prover`]'s scalar split beside the H step) waits
//! there behind whatever else was queued first (the other of the two; synthesis has pools
//! of its own, cuzk-filecoin's synthesis.rs). On the
//! H200 (2026-12-03, bench/NOTES.md), a 2^27 H step's 12 GiB upload took 0.78 s with the
//! split beside it on the global pool, and 0.27 s with the split on a pool of its own.

use std::sync::Mutex;

/// A rayon pool sized by an environment variable, read at each call (a measurement switch
/// that a bench may change between calls): `0` is rayon's global pool, a count is a pool of
/// that many threads of its own (built at its first use and kept: each count once), unset
/// is the machine's default (0 again meaning the global pool).
pub struct SidePool {
    var: &'static str,
    name: &'static str,
    /// Threads for a machine of this many cores, when the variable is unset (0: the
    /// global pool).
    default_threads: fn(usize) -> usize,
    /// The pools built so far, by thread count (leaked: they live as long as the process).
    pools: Mutex<Vec<&'static rayon::ThreadPool>>,
    /// The thread count of the last call (0: the global pool).
    last: std::sync::atomic::AtomicUsize,
}

impl SidePool {
    pub const fn new(var: &'static str, name: &'static str, default_threads: fn(usize) -> usize) -> SidePool {
        SidePool {
            var,
            name,
            default_threads,
            pools: Mutex::new(Vec::new()),
            last: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Runs `f` in this pool (its parallel iterators use the pool's threads), or in the
    /// global pool when switched off or when no pool could be built.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self.get() {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    fn get(&self) -> Option<&'static rayon::ThreadPool> {
        let threads = match std::env::var(self.var).ok().and_then(|v| v.trim().parse::<usize>().ok()) {
            Some(t) => t,
            None => (self.default_threads)(std::thread::available_parallelism().map_or(4, |n| n.get())),
        };
        self.last.store(threads, std::sync::atomic::Ordering::Relaxed);
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

    /// Threads of the pool the last call ran in (None: the global pool, or no call yet).
    pub fn threads(&self) -> Option<usize> {
        match self.last.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            t => Some(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static POOL: SidePool = SidePool::new("CUZK_TEST_SIDE_POOL_THREADS", "cuzk-test-side", |_| 3);

    /// Work installed in the pool runs on its own threads (named after it), 3 of them
    /// unless the variable says otherwise, and a changed count takes effect at the next
    /// call; switched off, it runs on the global pool.
    #[test]
    fn installed_work_runs_on_the_pools_own_threads() {
        use rayon::prelude::*;
        let names = || -> Vec<String> {
            POOL.install(|| {
                (0..64)
                    .into_par_iter()
                    .map(|_| std::thread::current().name().unwrap_or("").to_string())
                    .collect()
            })
        };
        let first = names();
        assert!(first.iter().all(|n| n.starts_with("cuzk-test-side-3-")), "{first:?}");
        assert_eq!(POOL.threads(), Some(3));
        std::env::set_var("CUZK_TEST_SIDE_POOL_THREADS", "2");
        let second = names();
        assert!(second.iter().all(|n| n.starts_with("cuzk-test-side-2-")), "{second:?}");
        assert_eq!(POOL.threads(), Some(2));
        std::env::set_var("CUZK_TEST_SIDE_POOL_THREADS", "0");
        let inside = POOL.install(rayon::current_thread_index);
        std::env::remove_var("CUZK_TEST_SIDE_POOL_THREADS");
        assert_eq!(inside, None, "switched off, the work ran inside a pool");
        assert_eq!(POOL.threads(), None);
    }
}
