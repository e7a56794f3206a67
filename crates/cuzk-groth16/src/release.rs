//! Giving large buffers back to the system without stalling the rest of the process.
//!
//! Freeing a vector of gigabytes unmaps it in one system call that runs until every page is
//! gone (hundreds of milliseconds for 4 GiB on 4 KiB pages) and holds the process's
//! address-space lock meanwhile. On the H200 (2026-12-03, bench/history/2026-12-03.md), device memory
//! allocations made while a, b and c were being freed this way waited for it: an H MSM's
//! workspace took 0.36-0.63 s to allocate instead of 1-5 ms. [`drop_in_background`] frees
//! on a thread of its own, and first gives the pages of large vectors back in slices
//! (`madvise(MADV_DONTNEED)`, [`SLICE`] bytes per call), so that no one call holds the lock
//! for long; the unmap that follows finds no pages left.
//! Both won their measurement (the H200, 2026-12-03; bench/history/2026-12-03.md), so freeing on the
//! caller's thread and in one piece are gone.

/// Bytes given back per system call.
pub const SLICE: usize = 64 << 20;

/// A value that [`drop_in_background`] frees: its large buffers' pages can be given back
/// before it is dropped.
pub trait Garbage: Send + 'static {
    /// Gives the pages of the large buffers inside back to the system, in slices. The
    /// contents are lost (vectors are left empty); the allocations themselves stay until
    /// the value is dropped.
    fn release_pages(&mut self);
}

/// Vectors of plain values (no destructors to run): their whole pages, when the vector
/// holds at least two slices' worth.
impl<T: Copy + Send + 'static> Garbage for Vec<T> {
    fn release_pages(&mut self) {
        let bytes = self.capacity() * std::mem::size_of::<T>();
        if bytes < 2 * SLICE {
            return;
        }
        let page = page_size();
        let at = self.as_mut_ptr() as usize;
        let (start, end) = (at.next_multiple_of(page), (at + bytes) / page * page);
        // SAFETY: T is Copy (nothing to drop); the elements are never read again.
        unsafe { self.set_len(0) };
        // Slices end on multiples of SLICE (so of 2 MiB): a huge page is never split.
        #[cfg(target_os = "linux")]
        let mut lo = start;
        #[cfg(target_os = "linux")]
        while lo < end {
            let hi = end.min((lo / SLICE + 1) * SLICE);
            // SAFETY: [lo, hi) lies within this vector's own allocation, in whole pages,
            // and its contents are not read again (the length is 0): the allocator's own
            // bookkeeping lies outside it. A refusal leaves the pages to the unmap.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED);
            }
            lo = hi;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, end);
    }
}

macro_rules! garbage_tuple {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Garbage),+> Garbage for ($($name,)+) {
            fn release_pages(&mut self) {
                $(self.$idx.release_pages();)+
            }
        }
    };
}
garbage_tuple!(A 0, B 1);
garbage_tuple!(A 0, B 1, C 2);
garbage_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);

fn page_size() -> usize {
    #[cfg(target_os = "linux")]
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    #[cfg(not(target_os = "linux"))]
    let p = 4096;
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Frees large buffers on a thread of their own (their pages first, in slices): returning
/// gigabytes to the system takes a noticeable fraction of a second that the proof need not
/// wait for.
pub fn drop_in_background<T: Garbage>(mut value: T) {
    let free = move || {
        value.release_pages();
        drop(value)
    };
    if std::thread::Builder::new().name("cuzk-free".into()).spawn(free).is_err() {
        // No thread to be had: freed here (the value was moved into the failed closure and
        // dropped with it, in one piece).
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident pages among the whole pages of [at, at + bytes) (`mincore`).
    #[cfg(target_os = "linux")]
    fn resident_pages(at: usize, bytes: usize) -> usize {
        let page = page_size();
        let (start, end) = (at.next_multiple_of(page), (at + bytes) / page * page);
        let mut vec = vec![0u8; (end - start) / page];
        // SAFETY: the range is whole pages of a live allocation; `vec` has one byte per page.
        let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore failed");
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }

    /// A large vector's pages leave the resident set before it is dropped, it is left
    /// empty, and dropping it afterwards is sound; a small one is left as it is.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_vector_gives_its_pages_back_before_it_is_dropped() {
        let n = 4 * SLICE / 8;
        let mut v: Vec<u64> = (0..n as u64).collect();
        let (at, bytes) = (v.as_ptr() as usize, n * 8);
        let before = resident_pages(at, bytes);
        assert!(before >= bytes / page_size() * 9 / 10, "the filled vector is resident: {before} pages");
        v.release_pages();
        assert!(v.is_empty() && v.capacity() >= n);
        let after = resident_pages(at, bytes);
        assert!(after < before / 10, "pages still resident after release: {after} of {before}");
        drop(v);

        let mut small: Vec<u64> = vec![7; 1024];
        small.release_pages();
        assert_eq!(small, vec![7; 1024]);

        let mut pair = ((0..n as u64).collect::<Vec<u64>>(), vec![1u8; 16]);
        pair.release_pages();
        assert!(pair.0.is_empty() && pair.1 == vec![1u8; 16]);
    }
}
