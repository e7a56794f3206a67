//! Thread pools of their own, for CPU work that must not queue behind rayon's global pool.
//!
//! rayon runs tasks from one queue per pool: work that sits on a critical path (the host
//! copies that feed the GPU, [`crate::prover`]'s scalar split beside the H step) waits
//! there behind whatever else was queued first (synthesis, the other of the two). On the
//! H200 (2026-12-03, bench/NOTES.md), a 2^27 H step's 12 GiB upload took 0.78 s with the
//! split beside it on the global pool, and 0.27 s with the split on a pool of its own.

use std::sync::OnceLock;

/// A lazily built rayon pool sized by an environment variable (read when it is built), or
/// rayon's global pool while that variable is `0` (read at each call: a measurement switch)
/// or while it is unset and the default for the machine is 0 threads.
pub struct SidePool {
    var: &'static str,
    name: &'static str,
    /// Threads for a machine of this many cores, when the variable is unset (0: the
    /// global pool).
    default_threads: fn(usize) -> usize,
    pool: OnceLock<Option<rayon::ThreadPool>>,
}

impl SidePool {
    pub const fn new(var: &'static str, name: &'static str, default_threads: fn(usize) -> usize) -> SidePool {
        SidePool {
            var,
            name,
            default_threads,
            pool: OnceLock::new(),
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

    fn get(&self) -> Option<&rayon::ThreadPool> {
        let var = std::env::var(self.var).ok();
        if var.as_deref().is_some_and(|v| v.trim() == "0") {
            return None;
        }
        self.pool
            .get_or_init(|| {
                let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
                let threads = var
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or_else(|| (self.default_threads)(cores));
                if threads == 0 {
                    return None;
                }
                let name = self.name;
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(move |i| format!("{name}-{i}"))
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Threads of the built pool (None: not built yet, or running on the global pool).
    pub fn threads(&self) -> Option<usize> {
        self.pool.get().and_then(|p| p.as_ref()).map(|p| p.current_num_threads())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static POOL: SidePool = SidePool::new("CUZK_TEST_SIDE_POOL_THREADS", "cuzk-test-side", |_| 3);

    /// Work installed in the pool runs on its own threads (named after it), 3 of them
    /// unless the variable says otherwise; switched off, it runs on the global pool.
    #[test]
    fn installed_work_runs_on_the_pools_own_threads() {
        use rayon::prelude::*;
        let names: Vec<String> = POOL.install(|| {
            (0..64)
                .into_par_iter()
                .map(|_| std::thread::current().name().unwrap_or("").to_string())
                .collect()
        });
        assert!(names.iter().all(|n| n.starts_with("cuzk-test-side-")), "{names:?}");
        assert_eq!(POOL.threads(), Some(3));
        std::env::set_var("CUZK_TEST_SIDE_POOL_THREADS", "0");
        let name = POOL.install(|| rayon::current_thread_index().map(|_| ()).map_or(String::new(), |_| "pool".into()));
        std::env::remove_var("CUZK_TEST_SIDE_POOL_THREADS");
        assert!(name.is_empty(), "switched off, the work ran inside a pool: {name}");
    }
}
