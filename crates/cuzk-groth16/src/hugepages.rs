//! Large vectors on transparent huge pages.
//!
//! A 32 GiB partition's compiled synthesis writes about 21 GB of memory it has just
//! allocated: each part's aux, the joined aux, then a, b and c. On 4 KiB pages that is some
//! 5 million page faults per partition; the H200 machine's run of 2026-12-02 spent 28% of
//! its CPU time in the kernel (bench/history/2026-12-02.md). [`vec_with_capacity`] asks the kernel to back
//! a large vector with transparent huge pages (Linux `madvise(MADV_HUGEPAGE)`) before its
//! first write: one fault per 2 MiB. Whether the kernel grants them is its setting
//! ([`kernel_setting`]: `always` and `madvise` do, `never` ignores the advice); nothing
//! depends on it but speed.
//!
//! On by default. The process's owner sets it once ([`set_enabled`]: cuzkd from its
//! `[synthesis] huge_pages` key; benches that compare both settings in one run).

use std::sync::atomic::{AtomicBool, Ordering};

static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// The size of a transparent huge page on x86-64 and most arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Whether large vectors are advised onto huge pages.
pub fn enabled() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed)
}

/// Turns the advice on or off for vectors allocated from now on.
pub fn set_enabled(on: bool) {
    HUGE_PAGES.store(on, Ordering::Relaxed)
}

/// The kernel's transparent huge page mode (the bracketed word of
/// /sys/kernel/mm/transparent_hugepage/enabled), for logs and benches.
pub fn kernel_setting() -> String {
    match std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled") {
        Ok(s) => s
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or("unknown")
            .to_string(),
        Err(_) => "unavailable".to_string(),
    }
}

/// `Vec::with_capacity(n)`, its memory advised onto huge pages when that is on and the
/// vector spans at least two of them.
pub fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise(&mut v);
    v
}

/// The capacity to give a vector of `len` elements that the H step pads with zeros to the
/// domain (the next power of two): the pad then stays within the allocation. Growing past
/// the capacity would move the vector, and one advised onto huge pages cannot be moved by
/// `mremap` (the advice splits its mapping at the advised range's edges, and mremap refuses
/// a range over several mappings: `EFAULT`), so the allocator copies it on one thread
/// instead. On the 2-core build machine (2026-12-04, `cargo run --release -p cuzk-groth16
/// --example grow_bench`), padding a 32 GiB partition's a that way took 2.9 s (19.5 s with
/// tests running beside it), against 14 ms within the capacity (bench/history/2026-12-04.md).
pub fn domain_capacity(len: usize) -> usize {
    crate::domain::domain_size(len)
}

/// `v` extended with `zero` to `n` elements. Within its capacity in place; past it, into a
/// new vector (advised onto huge pages) that the rayon threads fill, and the old one freed
/// on a thread of its own ([`crate::release::drop_in_background`]): never the allocator's
/// single-threaded move (see [`domain_capacity`]). Shorter targets leave `v` as it is.
pub fn grow_zeroed<T: Copy + Send + Sync + 'static>(v: &mut Vec<T>, n: usize, zero: T) {
    use rayon::prelude::*;
    if n <= v.len() {
        return;
    }
    if n <= v.capacity() {
        v.resize(n, zero);
        return;
    }
    let mut grown = par_copy(v, n);
    grown.par_extend(rayon::iter::repeat_n(zero, n - v.len()));
    crate::release::drop_in_background(std::mem::replace(v, grown));
}

/// A copy of `v` made by the rayon threads into a vector advised onto huge pages, with room
/// for at least `room` elements (as synthesis allocates a witness's vectors).
pub fn par_copy<T: Copy + Send + Sync>(v: &[T], room: usize) -> Vec<T> {
    use rayon::prelude::*;
    let mut out = vec_with_capacity(room.max(v.len()));
    out.par_extend(v.par_iter().copied());
    out
}

/// Advises the whole 2 MiB pages inside `v`'s spare capacity onto huge pages (before they
/// are written: pages already touched stay as they are until the kernel collapses them).
pub fn advise<T>(v: &mut Vec<T>) {
    if !enabled() {
        return;
    }
    let spare = v.spare_capacity_mut();
    let Some((start, end)) = huge_range(spare.as_mut_ptr() as usize, std::mem::size_of_val(spare)) else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: [start, end) lies within the vector's own allocation (huge_range); MADV_HUGEPAGE
    // changes only how the kernel backs it, never its contents. A refusal (a kernel without
    // THP) is harmless and ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}

/// The whole huge pages inside `bytes` bytes at `at`, when there are at least two of them
/// worth of bytes (a smaller vector is not worth a system call).
fn huge_range(at: usize, bytes: usize) -> Option<(usize, usize)> {
    if bytes < 2 * HUGE_PAGE {
        return None;
    }
    let (start, end) = (at.next_multiple_of(HUGE_PAGE), (at + bytes) / HUGE_PAGE * HUGE_PAGE);
    (end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// grow_zeroed keeps the values and pads with the given value: in place within the
    /// capacity (the allocation does not move), into a new vector past it, and not at all
    /// for a target at or below the length; the domain capacity is the next power of two.
    #[test]
    fn grow_zeroed_keeps_the_values_and_pads() {
        assert_eq!((domain_capacity(0), domain_capacity(1), domain_capacity(5), domain_capacity(8)), (1, 1, 8, 8));
        for len in [0usize, 3, 1000, 3 * HUGE_PAGE / 8 + 5] {
            let n = domain_capacity(len + 1) * 2;
            let values = |v: &Vec<u64>| v.iter().copied().collect::<Vec<_>>();
            let want: Vec<u64> = (0..n as u64).map(|i| if (i as usize) < len { i * 3 + 1 } else { 7 }).collect();
            // Past the capacity: a new vector.
            let mut v: Vec<u64> = vec_with_capacity(len);
            v.extend((0..len as u64).map(|i| i * 3 + 1));
            v.shrink_to_fit();
            grow_zeroed(&mut v, n, 7);
            assert_eq!(values(&v), want, "len {len}, grown past its capacity");
            // Within it: in place.
            let mut w: Vec<u64> = vec_with_capacity(n);
            w.extend((0..len as u64).map(|i| i * 3 + 1));
            let at = w.as_ptr();
            grow_zeroed(&mut w, n, 7);
            assert_eq!((values(&w), w.as_ptr()), (want.clone(), at), "len {len}, within its capacity");
            grow_zeroed(&mut w, n / 2, 9);
            assert_eq!(values(&w), want, "a shorter target changes nothing");
        }
    }

    #[test]
    fn the_advised_range_is_whole_huge_pages_inside_the_allocation() {
        let h = HUGE_PAGE;
        assert_eq!(huge_range(h, 2 * h), Some((h, 3 * h)));
        assert_eq!(huge_range(h + 16, 3 * h), Some((2 * h, 4 * h)));
        assert_eq!(huge_range(h + 16, 2 * h), Some((2 * h, 3 * h)));
        assert_eq!(huge_range(h + 16, 2 * h - 1), None);
        for (at, bytes) in [(4096usize, 5 * h + 12), (h - 8, 2 * h), (7 * h + 1, 9 * h)] {
            let (s, e) = huge_range(at, bytes).expect("at least one whole page");
            assert!(at <= s && e <= at + bytes && s % h == 0 && e % h == 0 && e > s, "{at} {bytes}: {s} {e}");
        }
    }

    /// The kernel takes the advice: the mapping that holds a large vector carries the
    /// huge-page flag ("hg" in /proc/self/smaps' VmFlags), and the vector holds what is
    /// written to it. With the advice off, a fresh mapping does not carry it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_vector_is_advised_onto_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        // Whether the mapping holding `addr` carries VM_HUGEPAGE.
        fn flagged(addr: usize) -> bool {
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
            let mut inside = false;
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-') && !r.ends_with(':')) {
                    let (lo, hi) = range.split_once('-').expect("a range");
                    let (lo, hi) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16));
                    inside = matches!((lo, hi), (Ok(lo), Ok(hi)) if lo <= addr && addr < hi);
                } else if inside && line.starts_with("VmFlags:") {
                    return line.split_whitespace().any(|f| f == "hg");
                }
            }
            panic!("no mapping holds {addr:#x}");
        }
        let n = 64 * HUGE_PAGE / 8;
        set_enabled(true);
        let mut v: Vec<u64> = vec_with_capacity(n);
        let (start, _) = huge_range(v.as_ptr() as usize, n * 8).expect("whole pages");
        assert!(flagged(start), "the advised vector's mapping has no hg flag");
        v.extend((0..n as u64).map(|i| i * 7));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 7));
        set_enabled(false);
        let w: Vec<u64> = vec_with_capacity(n);
        let (start, _) = huge_range(w.as_ptr() as usize, n * 8).expect("whole pages");
        assert!(!flagged(start), "a vector allocated with the advice off has the hg flag");
        set_enabled(true);
    }

    #[test]
    fn the_kernel_setting_is_one_word() {
        let s = kernel_setting();
        assert!(!s.is_empty() && !s.contains(char::is_whitespace), "{s:?}");
    }
}
