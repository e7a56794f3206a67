//! Base arrays (SRS points) kept in device memory across calls.
//!
//! An MSM or sum over a large base array uploads the whole array once and keeps it in the
//! arena, keyed by the host slice (address, length, group) and checked by a fingerprint of
//! 256 points spread over it, so that later calls over the same parameters upload only their
//! scalars and indices. Entries live inside the arena's budget: they are admitted only while
//! they take at most half of it, and evicted (least recently used first) whenever an
//! allocation would not fit otherwise. An entry in use by a running call is never evicted.
//!
//! Compiled circuits (eval.rs) are entries too, and rank above base arrays: a circuit that
//! does not fit the half evicts idle base arrays, least recently used first, to make its room
//! ([`ResidentCache::make_room_for_circuit`]), where a base array waits for room.
//!
//! Precomputed multiples of a base array (msm/multiples.rs) are entries too, under the
//! bases' key with their width and copies: they are evicted before any base array or
//! circuit, and the half of the budget counts only those.
//!
//! Every decision is logged (info): an entry kept, an entry evicted and for what, and, once
//! per key, a base array not kept because the resident half of the budget is full.
//!
//! The fingerprint assumes what parameters are: immutable while loaded. A caller that
//! rewrites a base array in place between calls (same address and length) and leaves the
//! 256 sampled points unchanged would read stale points; `Gpu::release_caches` drops every
//! entry.

use std::sync::Arc;

use crate::arena::DeviceBuffer;

/// Base arrays shorter than this are streamed each call (the upload is cheap).
pub(crate) const MIN_RESIDENT_POINTS: usize = 1 << 15;
const SAMPLES: usize = 256;
/// The resident cache's group of compiled circuits (the MSM bases' groups are 1 and 2).
pub(crate) const CIRCUIT_GROUP: u8 = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ResidentKey {
    addr: usize,
    len: usize,
    group: u8,
    fingerprint: u64,
    /// 0: the bases themselves; else the precomputed multiples of them (msm/multiples.rs),
    /// `c << 8 | per`. Multiples are evicted before any base array.
    multiples: u32,
}

impl ResidentKey {
    pub(crate) fn of<T: Copy>(bases: &[T], group: u8) -> ResidentKey {
        let len = bases.len();
        let elem = std::mem::size_of::<T>();
        let mut h: u64 = 0xcbf29ce484222325 ^ (len as u64) ^ ((group as u64) << 56);
        let mut mix = |bytes: &[u8]| {
            for chunk in bytes.chunks(8) {
                let mut w = [0u8; 8];
                w[..chunk.len()].copy_from_slice(chunk);
                h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x100000001b3);
                h ^= h >> 29;
            }
        };
        let stride = (len / SAMPLES).max(1);
        for i in 0..SAMPLES.min(len) {
            // A pseudo-random position inside each stride, and the last element.
            let j = (i * stride + (i.wrapping_mul(7919) % stride)).min(len - 1);
            // SAFETY: plain-old-data points; reading their bytes.
            let bytes =
                unsafe { std::slice::from_raw_parts((&bases[j] as *const T).cast::<u8>(), elem) };
            mix(bytes);
        }
        if len > 0 {
            // SAFETY: as above.
            mix(unsafe {
                std::slice::from_raw_parts((&bases[len - 1] as *const T).cast::<u8>(), elem)
            });
        }
        ResidentKey {
            addr: bases.as_ptr() as usize,
            len,
            group,
            fingerprint: h,
            multiples: 0,
        }
    }

    /// Whether this key names multiples (of any width) of the bases `key` names.
    pub(crate) fn is_multiples_of(&self, key: &ResidentKey) -> bool {
        self.multiples != 0 && ResidentKey { multiples: 0, ..*self } == *key
    }

    /// The key of the multiples 2^(c j) P, j = 1 .. per - 1, of the bases this key names.
    pub(crate) fn multiples(self, c: u32, per: u32) -> ResidentKey {
        ResidentKey { multiples: c << 8 | per, ..self }
    }

    /// What the entry holds, for the log: "G1 bases (130169893 points)", "the multiples
    /// (c = 16, 4 per point) of G1 bases (...)", "a compiled circuit (309405051 A terms)".
    pub(crate) fn describe(&self) -> String {
        let what = match self.group {
            1 => format!("G1 bases ({} points)", self.len),
            2 => format!("G2 bases ({} points)", self.len),
            CIRCUIT_GROUP => format!("a compiled circuit ({} A terms)", self.len),
            g => format!("an array of group {g} ({} elements)", self.len),
        };
        match self.multiples {
            0 => what,
            m => format!("the multiples (c = {}, {} per point) of {what}", m >> 8, m & 0xff),
        }
    }
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

struct Entry {
    key: ResidentKey,
    buf: Arc<DeviceBuffer>,
    last_use: u64,
}

#[derive(Default)]
pub(crate) struct ResidentCache {
    entries: Vec<Entry>,
    tick: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// Keys whose "not kept" was logged (the decision is said once per key).
    refused: Vec<ResidentKey>,
}

impl ResidentCache {
    pub(crate) fn get(&mut self, key: &ResidentKey) -> Option<Arc<DeviceBuffer>> {
        self.tick += 1;
        let tick = self.tick;
        // An entry at the same address and length but another fingerprint is stale (its
        // multiples with it).
        self.entries.retain(|e| {
            !(e.key.addr == key.addr && e.key.len == key.len && e.key.fingerprint != key.fingerprint)
                || Arc::strong_count(&e.buf) > 1
        });
        match self.entries.iter_mut().find(|e| e.key == *key) {
            Some(e) => {
                e.last_use = tick;
                self.hits += 1;
                Some(e.buf.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Whether `key` is cached, without counting a use.
    pub(crate) fn contains(&self, key: &ResidentKey) -> bool {
        self.entries.iter().any(|e| e.key == *key)
    }

    pub(crate) fn insert(&mut self, key: ResidentKey, buf: Arc<DeviceBuffer>) {
        log::info!(
            "GPU residency: keeping {} ({:.2} GiB); resident now {:.2} GiB in {} entries",
            key.describe(),
            gib(buf.reserved_bytes()),
            gib(self.all_bytes() + buf.reserved_bytes()),
            self.entries.len() + 1
        );
        self.tick += 1;
        self.entries.push(Entry {
            key,
            buf,
            last_use: self.tick,
        });
    }

    /// Evicts the least recently used entry not in use, multiples before any base array,
    /// for an allocation of `wanted` bytes; false when there is none.
    pub(crate) fn evict_one(&mut self, wanted: usize) -> bool {
        let victim = victim(self.entries.iter().map(|e| (Arc::strong_count(&e.buf) > 1, e.key.multiples != 0, e.last_use)));
        match victim {
            Some(i) => {
                let e = self.entries.swap_remove(i);
                log::info!(
                    "GPU residency: evicting {} ({:.2} GiB; {}, not in use) for an allocation of {:.2} GiB",
                    e.key.describe(),
                    gib(e.buf.reserved_bytes()),
                    if e.key.multiples != 0 { "multiples go first" } else { "least recently used" },
                    gib(wanted)
                );
                true
            }
            None => false,
        }
    }

    /// Makes room in the resident half (`half` bytes, as [`ResidentCache::bytes`] counts) for
    /// a compiled circuit of `size` bytes: evicts the least recently used base arrays not in
    /// use, with their multiples, until it fits beside the rest. A circuit ranks above base
    /// arrays: without it a, b and c are evaluated on the host, 12 GiB per 32 GiB partition of
    /// host memory the engine did not reserve (it reserved the assignment only), where a base
    /// array not kept costs its upload each call. Evicts nothing and returns false when even
    /// every idle base array would not make the room (other circuits are never evicted here).
    pub(crate) fn make_room_for_circuit(&mut self, size: usize, half: usize) -> bool {
        let picked = circuit_room(
            self.entries.iter().map(|e| {
                let base = e.key.multiples == 0 && e.key.group != CIRCUIT_GROUP && Arc::strong_count(&e.buf) == 1;
                (base, e.last_use, if e.key.multiples == 0 { e.buf.reserved_bytes() } else { 0 })
            }),
            size,
            half,
        );
        let Some(picked) = picked else { return false };
        let keys: Vec<ResidentKey> = picked.iter().map(|&i| self.entries[i].key).collect();
        for key in &keys {
            let bytes = self.entries.iter().find(|e| e.key == *key).map_or(0, |e| e.buf.reserved_bytes());
            let multiples: usize = self
                .entries
                .iter()
                .filter(|e| e.key.is_multiples_of(key))
                .map(|e| e.buf.reserved_bytes())
                .sum();
            log::info!(
                "GPU residency: evicting {} ({:.2} GiB, and {:.2} GiB of its multiples; least recently used base array, not in \
                 use) for a compiled circuit of {:.2} GiB: without it a, b and c would go through host memory",
                key.describe(),
                gib(bytes),
                gib(multiples),
                gib(size)
            );
            self.drop_multiples_of(key);
            self.entries.retain(|e| e.key != *key);
        }
        true
    }

    /// Logs, once per key, that an array is streamed rather than kept, and why.
    pub(crate) fn note_not_kept(&mut self, key: &ResidentKey, bytes: usize, why: &str) {
        if self.refused.contains(key) {
            return;
        }
        if self.refused.len() >= 64 {
            self.refused.remove(0);
        }
        self.refused.push(*key);
        log::info!("GPU residency: not keeping {} ({:.2} GiB): {why}; streamed each call", key.describe(), gib(bytes));
    }

    pub(crate) fn evictable_bytes(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| Arc::strong_count(&e.buf) == 1)
            .map(|e| e.buf.reserved_bytes())
            .sum()
    }

    /// Bytes of the resident base arrays and circuits, the half of the budget they may take;
    /// multiples are not counted: they give way (evicted first).
    pub(crate) fn bytes(&self) -> usize {
        self.entries.iter().filter(|e| e.key.multiples == 0).map(|e| e.buf.reserved_bytes()).sum()
    }

    /// The length of the longest resident base array (0: none).
    pub(crate) fn longest(&self) -> usize {
        self.entries.iter().filter(|e| e.key.multiples == 0).map(|e| e.key.len).max().unwrap_or(0)
    }

    /// Drops every entry of multiples (those in use by a running call stay until it ends).
    pub(crate) fn drop_all_multiples(&mut self) {
        self.entries.retain(|e| e.key.multiples == 0);
    }

    /// Bytes of every resident entry, multiples included.
    pub(crate) fn all_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.buf.reserved_bytes()).sum()
    }

    /// Drops the multiples of the bases `key` names (those in use by a running call stay
    /// until it ends: its buffer is shared).
    pub(crate) fn drop_multiples_of(&mut self, key: &ResidentKey) {
        self.entries.retain(|e| !e.key.is_multiples_of(key));
    }

    /// The resident multiples of the bases `key` names, whatever their width: (c, per, buffer).
    pub(crate) fn multiples_of(&mut self, key: &ResidentKey) -> Option<(u32, u32, Arc<DeviceBuffer>)> {
        self.tick += 1;
        let tick = self.tick;
        let e = self.entries.iter_mut().find(|e| e.key.is_multiples_of(key))?;
        e.last_use = tick;
        Some((e.key.multiples >> 8, e.key.multiples & 0xff, e.buf.clone()))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        if !self.entries.is_empty() {
            log::info!("GPU residency: dropping all {} entries ({:.2} GiB)", self.entries.len(), gib(self.all_bytes()));
        }
        self.entries.clear();
    }
}

/// Which entries to evict, among (an idle base array, last use, bytes counted in the resident
/// half), so that `size` more bytes fit within `half`: the least recently used idle base
/// arrays, as few as needed; empty when it fits already, None when evicting every idle base
/// array would not make the room.
fn circuit_room(entries: impl Iterator<Item = (bool, u64, usize)>, size: usize, half: usize) -> Option<Vec<usize>> {
    let entries: Vec<(bool, u64, usize)> = entries.collect();
    let mut cached: usize = entries.iter().map(|e| e.2).sum();
    let mut idle: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].0).collect();
    idle.sort_by_key(|&i| entries[i].1);
    let mut picked = Vec::new();
    let mut idle = idle.into_iter();
    while cached + size > half {
        let i = idle.next()?;
        cached -= entries[i].2;
        picked.push(i);
    }
    Some(picked)
}

/// The entry to evict among (in use, multiples, last use): none in use; multiples before
/// any base array or circuit; the least recently used of those.
fn victim(entries: impl Iterator<Item = (bool, bool, u64)>) -> Option<usize> {
    entries
        .enumerate()
        .filter(|(_, (in_use, _, _))| !in_use)
        .min_by_key(|(_, (_, multiples, last_use))| (!multiples, *last_use))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::{circuit_room, victim, ResidentKey, CIRCUIT_GROUP};

    /// A compiled circuit takes room in the resident half from the least recently used idle
    /// base arrays, as few as needed; never from an array in use or another circuit (not
    /// offered as idle), and nothing is evicted when even all of them would not make room.
    #[test]
    fn a_circuit_evicts_the_least_recently_used_idle_base_arrays() {
        // (idle base array, last use, bytes in the half)
        let entries = [(true, 5, 30), (false, 1, 40), (true, 2, 20), (true, 9, 10)];
        // 100 cached; 30 more within 100: 30 must go, the oldest idle first (20 at use 2,
        // then 30 at use 5).
        assert_eq!(circuit_room(entries.into_iter(), 30, 100), Some(vec![2, 0]));
        assert_eq!(circuit_room(entries.into_iter(), 20, 100), Some(vec![2]), "as few as needed");
        assert_eq!(circuit_room(entries.into_iter(), 0, 100), Some(vec![]), "it fits already");
        assert_eq!(circuit_room(entries.into_iter(), 50, 150), Some(vec![]));
        // Every idle array (60) frees room for 60 at most: 61 does not fit, and nothing goes.
        assert_eq!(circuit_room(entries.into_iter(), 60, 100), Some(vec![2, 0, 3]));
        assert_eq!(circuit_room(entries.into_iter(), 61, 100), None);
        assert_eq!(circuit_room([(false, 1, 40)].into_iter(), 70, 100), None, "an array in use never goes");
        assert_eq!(circuit_room(std::iter::empty(), 100, 100), Some(vec![]));
    }

    /// The log names what an entry holds.
    #[test]
    fn entries_are_described_by_group_length_and_multiples() {
        let points = [0u64; 40];
        let g1 = ResidentKey::of(&points, 1);
        assert_eq!(g1.describe(), "G1 bases (40 points)");
        assert_eq!(ResidentKey::of(&points, 2).describe(), "G2 bases (40 points)");
        assert_eq!(ResidentKey::of(&points, CIRCUIT_GROUP).describe(), "a compiled circuit (40 A terms)");
        assert_eq!(g1.multiples(16, 4).describe(), "the multiples (c = 16, 4 per point) of G1 bases (40 points)");
    }

    /// Multiples go first, however recently used; then the least recently used base array;
    /// nothing in use, ever.
    #[test]
    fn multiples_are_evicted_before_parameters() {
        // (in use, multiples, last use)
        let entries = [(false, false, 1), (false, true, 9), (false, true, 5), (true, true, 2), (false, false, 3)];
        assert_eq!(victim(entries.into_iter()), Some(2), "the least recently used multiples not in use");
        let no_multiples = [(false, false, 4), (true, true, 1), (false, false, 2)];
        assert_eq!(victim(no_multiples.into_iter()), Some(2), "then the least recently used base array");
        assert_eq!(victim([(true, false, 1), (true, true, 0)].into_iter()), None, "nothing in use");
        assert_eq!(victim(std::iter::empty()), None);
    }
}
