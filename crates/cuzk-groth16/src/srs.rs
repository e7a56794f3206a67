//! The structured reference string: Groth16 proving parameters in bellperson's `.params`
//! format, read memory-mapped.
//!
//! Layout (all integers big-endian u32, all points uncompressed, G1 = 96 bytes,
//! G2 = 192 bytes):
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2  len(ic) ic[..]
//! then: len(h) h[..]  len(l) l[..]  len(a) a[..]  len(b_g1) b_g1[..]  len(b_g2) b_g2[..]
//! ```
//!
//! Every section length is checked against the file size before any point is decoded, so a
//! truncated or corrupt file is refused with the section that is wrong, not a panic or a
//! half-read key.

use std::fs::File;
use std::path::{Path, PathBuf};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use crate::points::{Points, SpillView, SpilledSet};

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// Fixed part of the verifying key: 3 G1 points and 3 G2 points.
const VK_FIXED_BYTES: usize = 3 * G1_BYTES + 3 * G2_BYTES;

/// Why a parameter file could not be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum SrsError {
    #[error("parameter file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "parameter file {path} is truncated: section {section} needs {needed} bytes at offset \
         {offset}, the file has {file_len} bytes (re-download or regenerate it)"
    )]
    Truncated {
        path: PathBuf,
        section: &'static str,
        offset: usize,
        needed: usize,
        file_len: usize,
    },
    #[error(
        "parameter file {path} has {extra} unexpected bytes after the last section (corrupt, or \
         not a Groth16 .params file)"
    )]
    TrailingBytes { path: PathBuf, extra: usize },
    #[error("parameter file {path}: point {index} of section {section} is {problem}")]
    BadPoint {
        path: PathBuf,
        section: &'static str,
        index: usize,
        problem: &'static str,
    },
}

/// The Groth16 verifying key, as stored at the head of a `.params` file.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyingKey {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    /// One point per public input, the constant ONE first.
    pub ic: Vec<G1Affine>,
}

/// Groth16 proving parameters for one circuit.
///
/// `a`, `b_g1` and `b_g2` are stored compacted: the points of inputs come first, then the
/// points of the aux variables whose density bit is set (bellperson drops the others when it
/// generates parameters). The prover walks the densities to pair scalars with these points.
#[derive(Debug)]
pub struct Srs {
    pub path: PathBuf,
    pub vk: VerifyingKey,
    /// Powers of tau times Z(tau)/delta: one per coefficient of h (domain size - 1).
    pub h: Points<G1Affine>,
    /// One per aux variable.
    pub l: Points<G1Affine>,
    pub a: Points<G1Affine>,
    pub b_g1: Points<G1Affine>,
    pub b_g2: Points<G2Affine>,
}

/// Section lengths of a parameter file, from its header alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrsShape {
    pub ic: usize,
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl SrsShape {
    /// Bytes of decoded points this shape occupies in memory.
    pub fn point_bytes(&self) -> usize {
        (self.ic + self.h + self.l + self.a + self.b_g1) * std::mem::size_of::<G1Affine>()
            + self.b_g2 * std::mem::size_of::<G2Affine>()
    }
}

/// A cursor over the mapped file that turns every overrun into [`SrsError::Truncated`].
struct Sections<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Sections<'a> {
    fn take(&mut self, section: &'static str, needed: usize) -> Result<&'a [u8], SrsError> {
        let end = self.offset.checked_add(needed).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.offset..end];
                self.offset = end;
                Ok(s)
            }
            None => Err(SrsError::Truncated {
                path: self.path.to_path_buf(),
                section,
                offset: self.offset,
                needed,
                file_len: self.bytes.len(),
            }),
        }
    }

    /// A length-prefixed section of `point_size`-byte points.
    fn points(&mut self, section: &'static str, point_size: usize) -> Result<&'a [u8], SrsError> {
        let len = self.take(section, 4)?;
        let count = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        self.take(section, count * point_size)
    }
}

pub(crate) trait UncompressedPoint: Sized + Send + Sync {
    const SIZE: usize;
    fn decode(bytes: &[u8]) -> Option<Self>;
    fn encode(&self, out: &mut [u8]);
    fn is_identity_point(&self) -> bool;
}

impl UncompressedPoint for G1Affine {
    const SIZE: usize = G1_BYTES;
    fn decode(bytes: &[u8]) -> Option<Self> {
        let repr: &[u8; G1_BYTES] = bytes.try_into().ok()?;
        // On-curve is checked here; the subgroup check is skipped as bellperson does for
        // cached parameters (it costs a scalar multiplication per point).
        Option::from(G1Affine::from_uncompressed_unchecked(repr))
    }
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
    fn is_identity_point(&self) -> bool {
        bool::from(self.is_identity())
    }
}

impl UncompressedPoint for G2Affine {
    const SIZE: usize = G2_BYTES;
    fn decode(bytes: &[u8]) -> Option<Self> {
        let repr: &[u8; G2_BYTES] = bytes.try_into().ok()?;
        Option::from(G2Affine::from_uncompressed_unchecked(repr))
    }
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
    fn is_identity_point(&self) -> bool {
        bool::from(self.is_identity())
    }
}

fn decode_points<P: UncompressedPoint>(
    path: &Path,
    section: &'static str,
    bytes: &[u8],
) -> Result<Vec<P>, SrsError> {
    bytes
        .par_chunks_exact(P::SIZE)
        .enumerate()
        .map(|(index, raw)| {
            let bad = |problem| SrsError::BadPoint {
                path: path.to_path_buf(),
                section,
                index,
                problem,
            };
            let p = P::decode(raw).ok_or_else(|| bad("not on the curve"))?;
            if p.is_identity_point() {
                return Err(bad("the point at infinity"));
            }
            Ok(p)
        })
        .collect()
}

fn single<P: UncompressedPoint>(
    path: &Path,
    s: &mut Sections<'_>,
    section: &'static str,
) -> Result<P, SrsError> {
    let raw = s.take(section, P::SIZE)?;
    Ok(decode_points::<P>(path, section, raw)?.remove(0))
}

struct RawSections<'a> {
    vk_fixed: &'a [u8],
    ic: &'a [u8],
    h: &'a [u8],
    l: &'a [u8],
    a: &'a [u8],
    b_g1: &'a [u8],
    b_g2: &'a [u8],
}

impl RawSections<'_> {
    fn shape(&self) -> SrsShape {
        SrsShape {
            ic: self.ic.len() / G1_BYTES,
            h: self.h.len() / G1_BYTES,
            l: self.l.len() / G1_BYTES,
            a: self.a.len() / G1_BYTES,
            b_g1: self.b_g1.len() / G1_BYTES,
            b_g2: self.b_g2.len() / G2_BYTES,
        }
    }
}

/// Splits the file into its sections, checking every length against the file size.
fn split<'a>(path: &'a Path, bytes: &'a [u8]) -> Result<RawSections<'a>, SrsError> {
    let mut s = Sections {
        path,
        bytes,
        offset: 0,
    };
    let raw = RawSections {
        vk_fixed: s.take("verifying key", VK_FIXED_BYTES)?,
        ic: s.points("vk.ic", G1_BYTES)?,
        h: s.points("h", G1_BYTES)?,
        l: s.points("l", G1_BYTES)?,
        a: s.points("a", G1_BYTES)?,
        b_g1: s.points("b_g1", G1_BYTES)?,
        b_g2: s.points("b_g2", G2_BYTES)?,
    };
    if s.offset != bytes.len() {
        return Err(SrsError::TrailingBytes {
            path: path.to_path_buf(),
            extra: bytes.len() - s.offset,
        });
    }
    Ok(raw)
}

fn map_file(path: &Path) -> Result<memmap2::Mmap, SrsError> {
    let io = |source| SrsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the mapping is read-only and private to this reader; parameter files are not
    // modified while a daemon uses them (they are written once, atomically, by fetchers).
    unsafe { memmap2::Mmap::map(&file) }.map_err(io)
}

/// Points encoded per parallel batch of [`write_section`].
const WRITE_BATCH: usize = 1 << 20;

/// A length-prefixed section: the count as a big-endian u32, then the points, encoded in
/// parallel a batch at a time.
pub(crate) fn write_section<P: UncompressedPoint>(
    w: &mut impl std::io::Write,
    section: &'static str,
    points: &[P],
) -> std::io::Result<u64> {
    let count = u32::try_from(points.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("section {section} has {} points, more than a u32 counts", points.len()),
        )
    })?;
    w.write_all(&count.to_be_bytes())?;
    let mut buf = vec![0u8; WRITE_BATCH.min(points.len()) * P::SIZE];
    for batch in points.chunks(WRITE_BATCH) {
        let out = &mut buf[..batch.len() * P::SIZE];
        out.par_chunks_exact_mut(P::SIZE).zip(batch).for_each(|(o, p)| p.encode(o));
        w.write_all(out)?;
    }
    Ok(4 + (points.len() * P::SIZE) as u64)
}

impl VerifyingKey {
    /// Writes the key as bellperson's `.vk` file holds it (and a `.params` file begins
    /// with it): the fixed points in the order `Srs::load` reads them, then ic as a
    /// length-prefixed section. Returns the bytes written.
    pub fn write(&self, w: &mut impl std::io::Write) -> std::io::Result<u64> {
        w.write_all(&self.alpha_g1.to_uncompressed())?;
        w.write_all(&self.beta_g1.to_uncompressed())?;
        w.write_all(&self.beta_g2.to_uncompressed())?;
        w.write_all(&self.gamma_g2.to_uncompressed())?;
        w.write_all(&self.delta_g1.to_uncompressed())?;
        w.write_all(&self.delta_g2.to_uncompressed())?;
        Ok(VK_FIXED_BYTES as u64 + write_section(w, "vk.ic", &self.ic)?)
    }
}

impl Srs {
    /// Writes the parameters in bellperson's `.params` format (the layout at the top of this
    /// module): the inverse of [`Srs::load`], byte for byte. For benchmarks that hand
    /// parameters made here (shape-only, random) to another prover; returns the bytes
    /// written. Every error names the file.
    pub fn write_params(&self, path: &Path) -> Result<u64, SrsError> {
        let io = |source| SrsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut w = std::io::BufWriter::with_capacity(1 << 24, File::create(path).map_err(io)?);
        let mut body = || -> std::io::Result<u64> {
            use std::io::Write;
            let mut written = self.vk.write(&mut w)?;
            for (section, points) in [("h", &self.h), ("l", &self.l), ("a", &self.a), ("b_g1", &self.b_g1)] {
                written += write_section(&mut w, section, points)?;
            }
            written += write_section(&mut w, "b_g2", &self.b_g2)?;
            w.flush()?;
            Ok(written)
        };
        body().map_err(io)
    }

    /// Reads only the header and section lengths: cheap, used to plan memory and to check
    /// that a file matches a circuit before loading it.
    pub fn shape(path: &Path) -> Result<SrsShape, SrsError> {
        let map = map_file(path)?;
        Ok(split(path, &map)?.shape())
    }

    /// Maps the file, validates the layout, and decodes all points in parallel.
    pub fn load(path: &Path) -> Result<Srs, SrsError> {
        let map = map_file(path)?;
        let raw = split(path, &map)?;
        let mut vk = Sections {
            path,
            bytes: raw.vk_fixed,
            offset: 0,
        };
        let alpha_g1 = single(path, &mut vk, "vk.alpha_g1")?;
        let beta_g1 = single(path, &mut vk, "vk.beta_g1")?;
        let beta_g2 = single(path, &mut vk, "vk.beta_g2")?;
        let gamma_g2 = single(path, &mut vk, "vk.gamma_g2")?;
        let delta_g1 = single(path, &mut vk, "vk.delta_g1")?;
        let delta_g2 = single(path, &mut vk, "vk.delta_g2")?;
        Ok(Srs {
            path: path.to_path_buf(),
            vk: VerifyingKey {
                alpha_g1,
                beta_g1,
                beta_g2,
                gamma_g2,
                delta_g1,
                delta_g2,
                ic: decode_points(path, "vk.ic", raw.ic)?,
            },
            h: decode_points(path, "h", raw.h)?.into(),
            l: decode_points(path, "l", raw.l)?.into(),
            a: decode_points(path, "a", raw.a)?.into(),
            b_g1: decode_points(path, "b_g1", raw.b_g1)?.into(),
            b_g2: decode_points(path, "b_g2", raw.b_g2)?.into(),
        })
    }

    /// Moves the point sections (h, l, a, b_g1, b_g2) into a spill file in `dir` (see
    /// [`crate::points`]): same points, same addresses for the whole process from here on,
    /// and a host copy that [`Srs::release_host`] can give back once a device holds them.
    /// The file is unlinked at once; `dir` needs room for [`SrsShape::point_bytes`].
    pub fn spill_to(&mut self, dir: &Path) -> Result<usize, SrsError> {
        SpilledSet::spill(dir, &mut [&mut self.h, &mut self.l, &mut self.a, &mut self.b_g1, &mut self.b_g2])
            .map_err(|source| SrsError::Io { path: self.path.clone(), source })
    }

    fn sections(&self) -> [&dyn SpillView; 5] {
        [&self.h, &self.l, &self.a, &self.b_g1, &self.b_g2]
    }

    /// Gives the host pages of spilled sections back: the bytes released (0 when nothing
    /// is spilled). Reads afterwards still see every point (they come back from the file).
    pub fn release_host(&self) -> usize {
        crate::points::release(self.sections())
    }

    /// Whether the sections are spilled and their host copy was given back.
    pub fn host_released(&self) -> bool {
        self.sections().iter().all(|s| s.released())
    }

    /// Host memory the points count for: the decoded size, less the sections released.
    pub fn host_bytes(&self) -> usize {
        self.vk.ic.len() * std::mem::size_of::<G1Affine>()
            + self.sections().iter().map(|s| s.host_bytes()).sum::<usize>()
    }

    /// Releases the host copy when the parameters are spilled, not yet released, and
    /// `backend` holds every section in its own memory ([`crate::Backend::holds_params`]):
    /// the bytes released by this call.
    pub fn release_if_held(&self, backend: &dyn crate::Backend) -> Option<usize> {
        if !self.release_due(backend) {
            return None;
        }
        self.release_logged(backend.name())
    }

    /// Spilled, not yet released, and every section held by `backend`.
    fn release_due(&self, backend: &dyn crate::Backend) -> bool {
        self.h.is_spilled() && !self.host_released() && backend.holds_params(self)
    }

    fn release_logged(&self, holder: &str) -> Option<usize> {
        let bytes = self.release_host();
        if bytes == 0 {
            return None; // another caller released it in the meantime
        }
        log::info!(
            "parameters {}: host copy released ({:.1} GiB), the {holder} backend holds them",
            self.path.display(),
            bytes as f64 / (1u64 << 30) as f64,
        );
        Some(bytes)
    }

    /// [`Srs::release_if_held`], with the release itself (`madvise` and `fadvise` over the
    /// whole set: seconds at 44 GiB) on a thread of its own, so that a device worker goes on
    /// to its next partition at once. Whether `backend` holds them is asked here, on the
    /// caller's thread; `then` gets the bytes released, on the releasing thread. True when a
    /// release was started.
    pub fn release_in_background_if_held(
        self: &std::sync::Arc<Self>,
        backend: &dyn crate::Backend,
        then: impl FnOnce(usize) + Send + 'static,
    ) -> bool {
        if !self.release_due(backend) {
            return false;
        }
        let (srs, holder) = (std::sync::Arc::clone(self), backend.name());
        std::thread::Builder::new()
            .name("cuzk-srs-release".into())
            .spawn(move || {
                if let Some(bytes) = srs.release_logged(holder) {
                    then(bytes);
                }
            })
            .is_ok()
    }

    pub fn shape_of(&self) -> SrsShape {
        SrsShape {
            ic: self.vk.ic.len(),
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }
}
