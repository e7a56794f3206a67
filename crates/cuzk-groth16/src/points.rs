//! Parameter point arrays whose host copy can be given back once a device holds them.
//!
//! A 32 GiB PoRep parameter set is 47 GB of decoded points. When a GPU keeps all of them
//! resident, a second copy in host memory only costs RSS. [`Points`] is either an owned
//! vector (as read) or a view into a *spill file*: [`SpilledSet::spill`] writes the decoded
//! points, as they are in memory, to a file in a directory the operator chooses, maps it
//! read-only and unlinks it at once (nothing is left on disk after the process ends, and
//! no other process can read or change it). The mapping derefs to the same `&[T]`, so
//! every reader, and the GPU's resident cache keyed by the slice's address, is unchanged.
//!
//! [`SpilledSet::release`] then gives the mapped pages back (`madvise(MADV_DONTNEED)`, and
//! `posix_fadvise(POSIX_FADV_DONTNEED)` for the clean page cache). Nothing is lost: a later
//! read (a CPU fallback, a re-upload after the device evicted its copy, the resident
//! cache's fingerprint of 257 points per call) faults the pages back from the file, clean
//! and reclaimable. Results never depend on whether a copy was released.

use std::fmt;
use std::fs::File;
use std::marker::PhantomData;
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use rayon::prelude::*;

/// Point types whose in-memory bytes can be written and mapped back within one process:
/// plain data (blst's affine coordinates), no pointers, no destructors.
///
/// # Safety
/// Implementors must be `Copy` types that are valid for any bytes a value of the type
/// had in memory, with alignment at most 8.
pub unsafe trait PlainPoint: Copy + Send + Sync + 'static {}
// SAFETY: blstrs' affine points are repr(transparent) over blst's repr(C) coordinate arrays
// of u64 limbs (alignment 8); the bytes written are copies of valid values.
unsafe impl PlainPoint for G1Affine {}
// SAFETY: as above.
unsafe impl PlainPoint for G2Affine {}

/// The bytes of plain points, as they are in memory (what a spill file holds).
pub fn point_bytes<T: PlainPoint>(points: &[T]) -> &[u8] {
    // SAFETY: T is plain data (PlainPoint); reading its bytes.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast::<u8>(), std::mem::size_of_val(points)) }
}

/// Sections start on this boundary in the spill file (a multiple of every page size).
const SECTION_ALIGN: usize = 2 << 20;
/// Bytes per write call.
const WRITE_CHUNK: usize = 64 << 20;

/// A spill file: mapped, already unlinked.
pub struct SpillFile {
    map: memmap2::Mmap,
    file: File,
    /// Where it was created (for messages; the name no longer exists).
    path: PathBuf,
    released: AtomicBool,
}

/// An array of parameter points: owned, or a view of a spill file.
pub struct Points<T: PlainPoint> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    Spilled {
        file: Arc<SpillFile>,
        offset: usize,
        len: usize,
        _t: PhantomData<T>,
    },
}

impl<T: PlainPoint> From<Vec<T>> for Points<T> {
    fn from(v: Vec<T>) -> Self {
        Points { repr: Repr::Owned(v) }
    }
}

impl<T: PlainPoint> Deref for Points<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            Repr::Spilled { file, offset, len, .. } => {
                // SAFETY: the mapping is read-only, lives as long as the Arc this view holds,
                // and [offset, offset + len * size_of::<T>()) was written from a &[T] of this
                // length (SpilledSet::spill; offset is 2 MiB aligned, so T is aligned).
                unsafe { std::slice::from_raw_parts(file.map.as_ptr().add(*offset).cast::<T>(), *len) }
            }
        }
    }
}

impl<T: PlainPoint> fmt::Debug for Points<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Owned(v) => write!(f, "Points({} owned)", v.len()),
            Repr::Spilled { file, len, .. } => write!(f, "Points({len} in spill file {})", file.path.display()),
        }
    }
}

impl<T: PlainPoint> Points<T> {
    /// Whether the points live in a spill file.
    pub fn is_spilled(&self) -> bool {
        matches!(self.repr, Repr::Spilled { .. })
    }

    fn bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    fn spill_file(&self) -> Option<&Arc<SpillFile>> {
        match &self.repr {
            Repr::Spilled { file, .. } => Some(file),
            Repr::Owned(_) => None,
        }
    }
}

/// Builds one spill file for several point arrays (a parameter set's sections).
pub struct SpilledSet {
    file: Arc<SpillFile>,
    next: usize,
}

/// A point array as a `SpilledSet` needs it: its bytes and where its view goes.
pub trait Spillable {
    fn byte_len(&self) -> usize;
    /// Writes its points at `offset` of `file`, then becomes a view of them there; the
    /// owned vector is dropped.
    fn spill_into(&mut self, set: &SpilledSet, offset: usize) -> std::io::Result<()>;
}

impl<T: PlainPoint> Spillable for Points<T> {
    fn byte_len(&self) -> usize {
        self.bytes()
    }

    fn spill_into(&mut self, set: &SpilledSet, offset: usize) -> std::io::Result<()> {
        let len = self.len();
        point_bytes(self)
            .par_chunks(WRITE_CHUNK)
            .enumerate()
            .try_for_each(|(i, c)| set.file.file.write_all_at(c, (offset + i * WRITE_CHUNK) as u64))?;
        self.repr = Repr::Spilled { file: set.file.clone(), offset, len, _t: PhantomData };
        Ok(())
    }
}

impl SpilledSet {
    /// Writes `arrays` (already owned, or spilled elsewhere: then they are copied) into one
    /// new file in `dir`, maps it read-only, unlinks it, and makes each array a view of it.
    /// The file is sized first, so a full disk fails here, naming the directory, before any
    /// array changes. Each array's vector is dropped as soon as it is written.
    pub fn spill(dir: &Path, arrays: &mut [&mut dyn Spillable]) -> std::io::Result<usize> {
        let sizes: Vec<usize> = arrays.iter().map(|a| a.byte_len()).collect();
        let (offsets, total) = Self::layout(&sizes);
        let (set, named) = Self::create(dir, total)?;
        for (a, &offset) in arrays.iter_mut().zip(&offsets) {
            a.spill_into(&set, offset).map_err(&named)?;
        }
        set.start_writeback();
        Ok(set.next)
    }

    /// Each section's offset (2 MiB aligned) and the file's size.
    fn layout(sizes: &[usize]) -> (Vec<usize>, usize) {
        let mut total = 0usize;
        let mut offsets = Vec::with_capacity(sizes.len());
        for &b in sizes {
            offsets.push(total);
            total = (total + b).next_multiple_of(SECTION_ALIGN);
        }
        (offsets, total)
    }

    /// A new spill file of sections of `sizes` bytes in `dir`, written by `fill` before any
    /// view of it exists: `fill` gets a writer `(section, byte offset in it, bytes)`, so
    /// that points made slice by slice (on a device, say) go to the file without ever
    /// being whole in host memory. Returns the set and each section's file offset, for
    /// [`SpilledSet::view`]. Sized first, as [`SpilledSet::spill`].
    pub fn build(
        dir: &Path,
        sizes: &[usize],
        fill: impl FnOnce(&dyn Fn(usize, usize, &[u8]) -> std::io::Result<()>) -> std::io::Result<()>,
    ) -> std::io::Result<(SpilledSet, Vec<usize>)> {
        let (offsets, total) = Self::layout(sizes);
        let (set, named) = Self::create(dir, total)?;
        let write = |section: usize, at: usize, bytes: &[u8]| -> std::io::Result<()> {
            if at + bytes.len() > sizes[section] {
                return Err(std::io::Error::other(format!(
                    "{} bytes at {at} of a section of {} bytes",
                    bytes.len(),
                    sizes[section]
                )));
            }
            bytes
                .par_chunks(WRITE_CHUNK)
                .enumerate()
                .try_for_each(|(i, c)| set.file.file.write_all_at(c, (offsets[section] + at + i * WRITE_CHUNK) as u64))
        };
        fill(&write).map_err(&named)?;
        set.start_writeback();
        Ok((set, offsets))
    }

    /// `len` points of type T at byte `offset` of the file (an offset [`SpilledSet::build`]
    /// returned, whose section holds at least `len` of them). Several views may share a
    /// section (prefixes of one array): [`release`] gives the file back once.
    pub fn view<T: PlainPoint>(&self, offset: usize, len: usize) -> Points<T> {
        assert!(offset % SECTION_ALIGN == 0 && offset + len * std::mem::size_of::<T>() <= self.next, "a view inside the file");
        Points { repr: Repr::Spilled { file: self.file.clone(), offset, len, _t: PhantomData } }
    }

    /// Creates the file (sized, mapped, unlinked), and the function that names it in errors.
    #[allow(clippy::type_complexity)]
    fn create(dir: &Path, total: usize) -> std::io::Result<(SpilledSet, Box<dyn Fn(std::io::Error) -> std::io::Error>)> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let path = dir.join(format!(
            ".cuzk-params-{}-{}.points",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let shown = path.display().to_string();
        let named = move |e: std::io::Error| std::io::Error::new(e.kind(), format!("spill file {shown} ({total} bytes): {e}"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(&named)?;
        let made = (|| {
            // Reserve the blocks now: a disk without room fails here, not in a later fault.
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: fallocate on a file descriptor this function owns.
                let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, total.max(1) as libc::off_t) };
                if r != 0 {
                    return Err(std::io::Error::from_raw_os_error(r));
                }
            }
            file.set_len(total.max(1) as u64)?;
            // SAFETY: the file is this process's own (created new, unlinked below); nothing
            // else writes it while mapped, and this module writes it only through
            // write_all_at, each range once, before any view of that range exists.
            unsafe { memmap2::MmapOptions::new().len(total.max(1)).map(&file) }
        })();
        let _ = std::fs::remove_file(&path);
        let map = made.map_err(&named)?;
        let set = SpilledSet {
            file: Arc::new(SpillFile { map, file, path: path.clone(), released: AtomicBool::new(false) }),
            next: total,
        };
        Ok((set, Box::new(named)))
    }

    fn start_writeback(&self) {
        // Start writing the file back now, on a thread of its own (submitting 44 GB of
        // writes can block): by the time the host copy is released its pages are clean,
        // so the release drops them at once instead of leaving them for the writeback
        // beside the first proofs.
        #[cfg(target_os = "linux")]
        {
            let file = Arc::clone(&self.file);
            let _ = std::thread::Builder::new().name("cuzk-spill-writeback".into()).spawn(move || {
                use std::os::fd::AsRawFd;
                // SAFETY: a plain syscall on a descriptor the Arc keeps open.
                unsafe { libc::sync_file_range(file.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
            });
        }
    }
}

/// Gives the pages of the spill files behind `arrays` back (each file once); the bytes of
/// those files. Arrays that are not spilled are left alone.
pub fn release<'a>(arrays: impl IntoIterator<Item = &'a dyn SpillView>) -> usize {
    let mut seen: Vec<*const SpillFile> = Vec::new();
    let mut bytes = 0;
    for a in arrays {
        let Some(f) = a.view_file() else { continue };
        if seen.contains(&Arc::as_ptr(f)) {
            continue;
        }
        seen.push(Arc::as_ptr(f));
        // Once per file, whoever calls first (two workers may find the set held at once).
        if f.released.swap(true, Ordering::AcqRel) {
            continue;
        }
        bytes += f.map.len();
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: the range is this mapping, whole; it is read-only and file-backed, so
            // the pages come back from the file on the next read (MADV_DONTNEED drops only
            // this process's page table entries). fadvise drops clean page cache.
            unsafe {
                libc::madvise(f.map.as_ptr() as *mut libc::c_void, f.map.len(), libc::MADV_DONTNEED);
                libc::posix_fadvise(f.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
    bytes
}

/// The spill file behind a point array, whatever its point type.
pub trait SpillView {
    #[doc(hidden)]
    fn view_file(&self) -> Option<&Arc<SpillFile>>;
    /// Whether its host copy was given back ([`release`]); false when not spilled.
    fn released(&self) -> bool {
        self.view_file().is_some_and(|f| f.released.load(Ordering::Relaxed))
    }
    /// Bytes of it counted as host memory: 0 once released (what a later read brings
    /// back is clean file-backed page cache, reclaimable), its size otherwise.
    fn host_bytes(&self) -> usize;
}

impl<T: PlainPoint> SpillView for Points<T> {
    fn view_file(&self) -> Option<&Arc<SpillFile>> {
        self.spill_file()
    }
    fn host_bytes(&self) -> usize {
        if self.released() {
            0
        } else {
            self.bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use crate::shape::random_points;

    fn rss_file_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find(|l| l.starts_with("RssFile:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap()
    }

    /// Spilled arrays read the same points; a release drops their mapped pages from the
    /// resident set, and a read afterwards still gets every point back.
    #[test]
    fn spill_keeps_points_and_release_gives_pages_back() {
        let dir = tempfile::tempdir().unwrap();
        let g1: Vec<G1Affine> = random_points::<G1Projective>(400_000, 1, 1);
        let g2: Vec<G2Affine> = random_points::<G2Projective>(3000, 1, 2);
        let mut p1 = Points::from(g1.clone());
        let mut p2 = Points::from(g2.clone());
        assert!(!p1.is_spilled() && p1.host_bytes() == g1.len() * 96);
        let total = SpilledSet::spill(dir.path(), &mut [&mut p1, &mut p2]).unwrap();
        assert!(total >= g1.len() * 96 + g2.len() * 192);
        assert!(p1.is_spilled() && p2.is_spilled());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the spill file is unlinked at once");
        assert!(p1[..] == g1[..] && p2[..] == g2[..]);
        let before = rss_file_kib();
        let freed = release([&p1 as &dyn SpillView, &p2]);
        assert_eq!(freed, total, "one file, released once");
        let after = rss_file_kib();
        assert!(p1.released() && p1.host_bytes() == 0 && p2.host_bytes() == 0);
        // 38 MB of points were mapped and read: the resident file pages drop by most of it.
        assert!(before >= after + 30_000, "RssFile {before} KiB -> {after} KiB");
        assert!(p1[..] == g1[..] && p2[..] == g2[..], "points read back from the file after a release");
    }

    #[test]
    fn a_missing_directory_is_refused_by_name() {
        let mut p = Points::from(random_points::<G1Projective>(10, 1, 1));
        let e = SpilledSet::spill(Path::new("/nonexistent/cuzk"), &mut [&mut p]).unwrap_err();
        assert!(e.to_string().contains("spill file /nonexistent/cuzk/"), "{e}");
        assert!(!p.is_spilled() && p.len() == 10, "left as it was");
    }
}
