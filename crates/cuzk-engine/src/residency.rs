//! Parameter residency: each circuit's SRS is loaded once, shared by `Arc` among the jobs
//! that use it, and kept after they finish, because loading a 32 GiB PoRep parameter set
//! costs tens of seconds and the next job almost always needs the same one.
//!
//! Eviction is least-recently-used and only touches entries that are idle and unreferenced
//! (`Arc::strong_count == 1`: only the cache holds them; a started job holds its parameters
//! until it ends), when the resident total would pass the configured limit, or when the
//! engine needs room in the host memory budget, which parameters share with partitions. An explicit evict removes an idle entry at once and is refused
//! while a job holds it (the job would keep the memory anyway, and the next job of that
//! circuit would load a second copy beside it).
//!
//! Pinned entries (`[srs] pinned`, WinningPoSt's by default) are kept when idle: never
//! evicted for the limit, and for room in the host budget only when no other idle entry can
//! make it (a job never waits on them): a WinningPoSt has seconds to answer, and reloading
//! its parameters beside a loaded machine costs about a second (bench/history/2026-12-06.md).
//! An explicit evict removes them too.
//!
//! Every decision is logged: a load (pinned or not), an eviction and its reason.
//!
//! Generic over the value so that the policy is tested without gigabytes of parameters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One resident entry, for status (`cuzk.v1.SRSStatus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResidentStatus {
    pub circuit_id: String,
    pub size_bytes: u64,
    /// Jobs holding it now.
    pub ref_count: u32,
    pub load_time: Duration,
    pub idle_for: Duration,
}

struct Resident<T> {
    value: Arc<T>,
    bytes: u64,
    last_used: Instant,
    load_time: Duration,
}

/// Host memory a resident value counts for now. Parameters whose host copy was given back
/// (`cuzk_groth16::Srs::release_host`) count for less than they did when loaded.
pub trait HostBytes {
    /// `None`: the size given at load.
    fn host_bytes_now(&self) -> Option<u64> {
        None
    }
}

impl HostBytes for cuzk_groth16::Srs {
    fn host_bytes_now(&self) -> Option<u64> {
        Some(self.host_bytes() as u64)
    }
}

impl HostBytes for u64 {}

impl<T: HostBytes> Resident<T> {
    fn host_bytes(&self) -> u64 {
        self.value.host_bytes_now().unwrap_or(self.bytes)
    }
}

pub struct Residency<T> {
    entries: Mutex<HashMap<String, Resident<T>>>,
    /// Serializes loads, so two jobs needing the same parameters load them once.
    load_lock: Mutex<()>,
    /// 0: no limit.
    limit_bytes: std::sync::atomic::AtomicU64,
    /// Kinds ("winning") or circuit ids ("winning-32g") never evicted as least recently used.
    pinned: Mutex<Vec<String>>,
}

/// Whether `key` (a circuit id, "winning-32g") is named by `pinned`: the id itself or its
/// kind, the id less its size ("winning").
pub fn is_pinned(pinned: &[String], key: &str) -> bool {
    pinned.iter().any(|p| key == p || key.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with('-') && !rest[1..].contains('-')))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<T: HostBytes> Residency<T> {
    pub fn new(limit_bytes: u64) -> Residency<T> {
        Residency {
            entries: Mutex::new(HashMap::new()),
            load_lock: Mutex::new(()),
            limit_bytes: limit_bytes.into(),
            pinned: Mutex::new(Vec::new()),
        }
    }

    /// The kinds or circuit ids kept when idle (`[srs] pinned`; live reload).
    pub fn set_pinned(&self, pinned: Vec<String>) {
        *lock(&self.pinned) = pinned;
    }

    fn pinned(&self) -> Vec<String> {
        lock(&self.pinned).clone()
    }

    fn limit(&self) -> u64 {
        self.limit_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A new limit (live reload); idle entries above it are evicted now.
    pub fn set_limit(&self, limit_bytes: u64) {
        self.limit_bytes.store(limit_bytes, std::sync::atomic::Ordering::Relaxed);
        Self::evict_idle(&mut lock(&self.entries), &self.pinned(), limit_bytes, 0);
    }

    /// The resident value of `key`, loading it with `load` (which returns the value and its
    /// size in bytes) when absent. The second element is the load time when it was loaded
    /// by this call, `None` when it was resident.
    pub fn get_or_load<E>(
        &self,
        key: &str,
        expected_bytes: u64,
        load: impl FnOnce() -> Result<(T, u64), E>,
    ) -> Result<(Arc<T>, Option<Duration>), E> {
        if let Some(v) = self.touch(key) {
            return Ok((v, None));
        }
        let _loading = lock(&self.load_lock);
        if let Some(v) = self.touch(key) {
            return Ok((v, None));
        }
        self.make_room(expected_bytes);
        let start = Instant::now();
        let (value, bytes) = load()?;
        let load_time = start.elapsed();
        let value = Arc::new(value);
        let pinned = self.pinned();
        log::info!(
            "parameters {key} loaded in {:.1} s ({:.2} GB){}",
            load_time.as_secs_f64(),
            bytes as f64 / 1e9,
            if is_pinned(&pinned, key) { "; pinned ([srs] pinned): kept when idle" } else { "; evicted when idle and least recently used" }
        );
        let mut entries = lock(&self.entries);
        entries.insert(
            key.to_string(),
            Resident {
                value: value.clone(),
                bytes,
                last_used: Instant::now(),
                load_time,
            },
        );
        Self::evict_idle(&mut entries, &pinned, self.limit(), 0);
        Ok((value, Some(load_time)))
    }

    /// The resident value of `key`, marked used now; `None` when not resident.
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        self.touch(key)
    }

    /// Drops idle, unreferenced entries other than `keep`, least recently used first, until
    /// `wanted` bytes are freed or nothing idle is left; the bytes freed. Pinned entries go
    /// last, only when the others cannot free `wanted`: a job must not wait on them. For room
    /// in the host memory budget, which parameters share with witnesses.
    pub fn evict_idle_bytes(&self, wanted: u64, keep: Option<&str>) -> u64 {
        let pinned = self.pinned();
        let mut entries = lock(&self.entries);
        let mut freed = 0;
        for (pins, why) in [(pinned.as_slice(), "least recently used, not pinned"), (&[][..], "pinned, but nothing else idle could make the room")] {
            while freed < wanted {
                let Some(k) = victim(&entries, pins, keep) else { break };
                let bytes = entries.remove(&k).map_or(0, |r| r.host_bytes());
                log::info!(
                    "evicting idle parameters {k} ({:.2} GB; {why}) for room in the host memory budget",
                    bytes as f64 / 1e9
                );
                freed += bytes;
            }
        }
        freed
    }

    fn touch(&self, key: &str) -> Option<Arc<T>> {
        let mut entries = lock(&self.entries);
        let r = entries.get_mut(key)?;
        r.last_used = Instant::now();
        Some(r.value.clone())
    }

    pub fn is_loaded(&self, key: &str) -> bool {
        lock(&self.entries).contains_key(key)
    }

    fn make_room(&self, incoming: u64) {
        let pinned = self.pinned();
        let mut entries = lock(&self.entries);
        Self::evict_idle(&mut entries, &pinned, self.limit(), incoming);
    }

    /// Drops idle, unreferenced, unpinned entries, least recently used first, until the
    /// total plus `incoming` fits the limit (or nothing idle is left, said in the log).
    fn evict_idle(entries: &mut HashMap<String, Resident<T>>, pinned: &[String], limit: u64, incoming: u64) {
        if limit == 0 {
            return;
        }
        loop {
            let total: u64 = entries.values().map(|r| r.host_bytes()).sum();
            if total.saturating_add(incoming) <= limit {
                return;
            }
            match victim(entries, pinned, None) {
                Some(k) => {
                    let bytes = entries.remove(&k).map_or(0, |r| r.host_bytes());
                    log::info!(
                        "evicting idle parameters {k} ({:.2} GB; least recently used, not pinned): resident {:.2} GB would pass the limit of {:.2} GB",
                        bytes as f64 / 1e9,
                        (total + incoming) as f64 / 1e9,
                        limit as f64 / 1e9
                    );
                }
                None => {
                    log::info!(
                        "resident parameters {:.2} GB stay above the limit of {:.2} GB: the rest are in use or pinned",
                        (total + incoming) as f64 / 1e9,
                        limit as f64 / 1e9
                    );
                    return;
                }
            }
        }
    }

    /// Removes `key` if idle: Ok((was_loaded, freed_bytes)), or Err(jobs holding it), the
    /// entry left in place.
    pub fn evict(&self, key: &str) -> Result<(bool, u64), u32> {
        let mut entries = lock(&self.entries);
        match entries.get(key) {
            None => Ok((false, 0)),
            Some(r) if Arc::strong_count(&r.value) > 1 => Err((Arc::strong_count(&r.value) - 1) as u32),
            Some(_) => Ok((true, entries.remove(key).map_or(0, |r| r.host_bytes()))),
        }
    }

    pub fn status(&self) -> Vec<ResidentStatus> {
        let mut v: Vec<_> = lock(&self.entries)
            .iter()
            .map(|(k, r)| ResidentStatus {
                circuit_id: k.clone(),
                size_bytes: r.bytes,
                ref_count: (Arc::strong_count(&r.value) - 1) as u32,
                load_time: r.load_time,
                idle_for: r.last_used.elapsed(),
            })
            .collect();
        v.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        v
    }

    /// Host bytes of the resident entries now (released host copies not counted).
    pub fn resident_bytes(&self) -> u64 {
        lock(&self.entries).values().map(|r| r.host_bytes()).sum()
    }
}

/// The least recently used entry that is idle (only the cache holds it), not pinned and not
/// `keep`.
fn victim<T>(entries: &HashMap<String, Resident<T>>, pinned: &[String], keep: Option<&str>) -> Option<String> {
    entries
        .iter()
        .filter(|(k, r)| Arc::strong_count(&r.value) == 1 && Some(k.as_str()) != keep && !is_pinned(pinned, k))
        .min_by_key(|(_, r)| r.last_used)
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(n: u64) -> impl FnOnce() -> Result<(u64, u64), String> {
        move || Ok((n, n))
    }

    #[test]
    fn loads_once_and_evicts_least_recently_used_idle_entry() {
        let r = Residency::<u64>::new(250);
        let (a, t) = r.get_or_load("a", 100, load(100)).unwrap();
        assert!(t.is_some());
        let (_, t) = r
            .get_or_load("a", 100, || Err::<(u64, u64), _>("must not load again"))
            .unwrap();
        assert!(t.is_none());
        drop(a);
        let (b, _) = r.get_or_load("b", 100, load(100)).unwrap();
        drop(b);
        r.get_or_load("a", 100, load(100)).unwrap(); // a is now more recent than b
        let (c, _) = r.get_or_load("c", 100, load(100)).unwrap();
        assert!(r.is_loaded("a") && r.is_loaded("c") && !r.is_loaded("b"));
        // c is referenced: loading d must evict a (idle), never c.
        let (_d, _) = r.get_or_load("d", 100, load(100)).unwrap();
        assert!(r.is_loaded("c") && r.is_loaded("d") && !r.is_loaded("a"));
        assert_eq!(r.evict("c"), Err(1), "c is still held by a job");
        assert!(r.is_loaded("c"), "a refused evict leaves the entry");
        drop(c);
        assert_eq!(r.evict("c"), Ok((true, 100)), "idle once its job ended");
        assert_eq!(r.evict("zz"), Ok((false, 0)));
        let (d2, _) = r.get_or_load("d", 100, load(100)).unwrap();
        drop(d2);
        drop(_d);
        assert_eq!(r.evict("d"), Ok((true, 100)));
        assert_eq!(r.resident_bytes(), 0);
    }

    #[test]
    fn room_for_the_budget_comes_from_idle_entries_least_recently_used_first() {
        let r = Residency::<u64>::new(0);
        for k in ["old", "kept", "held", "new"] {
            r.get_or_load(k, 100, load(100)).unwrap();
        }
        let held = r.get("held").unwrap();
        // old is the least recently used, kept is spared by name, held is referenced.
        assert_eq!(r.evict_idle_bytes(150, Some("kept")), 200);
        assert!(!r.is_loaded("old") && !r.is_loaded("new"));
        assert!(r.is_loaded("kept") && r.is_loaded("held"));
        assert_eq!(r.evict_idle_bytes(1000, Some("kept")), 0, "nothing idle left to evict");
        drop(held);
        assert_eq!(r.evict_idle_bytes(1, None), 100);
        assert_eq!(r.resident_bytes(), 100);
    }

    #[test]
    fn pinned_kinds_are_kept_when_idle_and_give_way_only_when_nothing_else_can() {
        let pinned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_pinned(&pinned(&["winning"]), "winning-32g"));
        assert!(is_pinned(&pinned(&["winning-32g"]), "winning-32g"));
        assert!(!is_pinned(&pinned(&["winning-2k"]), "winning-32g"));
        assert!(!is_pinned(&pinned(&["porep"]), "ni-porep-32g"), "a kind names its own ids only");
        assert!(is_pinned(&pinned(&["ni-porep"]), "ni-porep-32g"));
        assert!(!is_pinned(&pinned(&["ni"]), "ni-porep-32g"));
        assert!(!is_pinned(&[], "winning-32g"));

        let r = Residency::<u64>::new(250);
        r.set_pinned(pinned(&["winning"]));
        r.get_or_load("winning-32g", 100, load(100)).unwrap();
        r.get_or_load("porep-32g", 100, load(100)).unwrap();
        // winning is the least recently used and idle: the limit takes porep instead.
        r.get_or_load("snap-32g", 100, load(100)).unwrap();
        assert!(r.is_loaded("winning-32g") && r.is_loaded("snap-32g") && !r.is_loaded("porep-32g"));
        // Room in the budget: snap goes first, winning stays while snap suffices.
        assert_eq!(r.evict_idle_bytes(100, None), 100);
        assert!(r.is_loaded("winning-32g") && !r.is_loaded("snap-32g"));
        // Nothing else idle is left: a job must not wait on the pin, so winning goes.
        assert_eq!(r.evict_idle_bytes(1, Some("porep-32g")), 100);
        assert_eq!(r.resident_bytes(), 0);
        // Unpinned by a reload: an ordinary entry for the limit again.
        r.set_pinned(Vec::new());
        r.get_or_load("winning-32g", 100, load(100)).unwrap();
        r.get_or_load("porep-32g", 100, load(100)).unwrap();
        r.get_or_load("snap-32g", 100, load(100)).unwrap();
        assert!(!r.is_loaded("winning-32g"), "the least recently used, no longer pinned");
        assert_eq!(r.evict_idle_bytes(1000, None), 200);
        // An explicit evict removes a pinned entry.
        r.set_pinned(pinned(&["winning"]));
        r.get_or_load("winning-32g", 100, load(100)).unwrap();
        assert_eq!(r.evict("winning-32g"), Ok((true, 100)));
    }

    /// A value whose host copy shrinks (released parameters) counts for what it holds now.
    struct Shrinking(std::sync::atomic::AtomicU64);
    impl HostBytes for Shrinking {
        fn host_bytes_now(&self) -> Option<u64> {
            Some(self.0.load(std::sync::atomic::Ordering::Relaxed))
        }
    }

    #[test]
    fn released_host_copies_leave_the_total_and_the_limit() {
        let r = Residency::<Shrinking>::new(150);
        let (a, _) = r.get_or_load("a", 100, || Ok::<_, ()>((Shrinking(100.into()), 100))).unwrap();
        assert_eq!(r.resident_bytes(), 100);
        a.0.store(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(r.resident_bytes(), 0, "a released host copy counts for nothing");
        // b fits beside a now (0 + 100 <= 150): a, held or not, stays.
        drop(a);
        r.get_or_load("b", 100, || Ok::<_, ()>((Shrinking(100.into()), 100))).unwrap();
        assert!(r.is_loaded("a") && r.is_loaded("b"));
        assert_eq!(r.resident_bytes(), 100);
        let st = r.status();
        assert_eq!(st[0].size_bytes, 100, "status keeps the decoded size");
    }

    #[test]
    fn a_failed_load_leaves_nothing_behind() {
        let r = Residency::<u64>::new(0);
        let e = r
            .get_or_load("x", 1, || Err::<(u64, u64), _>("no file"))
            .unwrap_err();
        assert_eq!(e, "no file");
        assert!(!r.is_loaded("x"));
    }
}
