//! The file format of a saved compiled circuit (`.pce`): magic, version, circuit key,
//! content hash, then the matrices, dictionary and layout.

use super::*;

/// The file format of a saved compiled circuit: bump when the layout or the recording
/// changes, so that files of another version are rebuilt, never used.
pub(super) const FILE_MAGIC: &[u8; 8] = b"CUZKPCE\0";
pub(super) const FILE_VERSION: u32 = 2;

/// Why a saved compiled circuit was not used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a compiled circuit, or of another format version ({reason})")]
    Format { path: String, reason: String },
    #[error("{path}: holds circuit {found:?}, not {want:?}")]
    OtherCircuit { path: String, want: String, found: String },
    #[error("{path}: truncated or corrupt (content hash mismatch or {reason})")]
    Corrupt { path: String, reason: String },
}

/// A writer that hashes what it writes.
pub(super) struct Hashing<W: std::io::Write> {
    pub(super) inner: W,
    pub(super) hash: sha2::Sha256,
}

impl<W: std::io::Write> std::io::Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Fixed-width little-endian words of the file format.
pub(super) trait Word: Copy {
    const BYTES: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

impl Word for u32 {
    const BYTES: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn get(bytes: &[u8]) -> Self {
        let mut b = [0u8; 4];
        b.copy_from_slice(bytes);
        u32::from_le_bytes(b)
    }
}

impl Word for u64 {
    const BYTES: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn get(bytes: &[u8]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        u64::from_le_bytes(b)
    }
}

/// A length (u64) then the words.
pub(super) fn put_words<T: Word>(w: &mut impl std::io::Write, v: &[T]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u64).to_le_bytes())?;
    for chunk in v.chunks(1 << 16) {
        let mut bytes = Vec::with_capacity(chunk.len() * T::BYTES);
        chunk.iter().for_each(|x| x.put(&mut bytes));
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// A cursor over a file's bytes; every overrun is an error naming the part.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("{what} runs past the end"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(super) fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::get(self.take(8, what)?))
    }
    pub(super) fn len(&mut self, elem: usize, what: &str) -> Result<usize, String> {
        let n = self.u64(what)?;
        let n = usize::try_from(n).map_err(|_| format!("{what}: length {n}"))?;
        if n.checked_mul(elem).is_none_or(|b| b > self.bytes.len() - self.at) {
            return Err(format!("{what}: length {n} runs past the end"));
        }
        Ok(n)
    }
    /// A length then that many words (as [`put_words`] writes them).
    pub(super) fn words<T: Word>(&mut self, what: &str) -> Result<Vec<T>, String> {
        let n = self.len(T::BYTES, what)?;
        Ok(self.take(n * T::BYTES, what)?.chunks_exact(T::BYTES).map(T::get).collect())
    }
}

impl CompiledCircuit {
    /// Writes this compiled circuit for circuit `key` to `path` (through a temporary file
    /// renamed into place, so a crash leaves the old file or none): magic, format version,
    /// key, counts, dictionary, matrices, densities, the parts' layout, then the SHA-256 of all of it.
    pub fn save(&self, key: &str, path: &std::path::Path) -> std::io::Result<()> {
        use sha2::Digest;
        use std::io::Write;
        let tmp = path.with_extension("tmp");
        let file = std::fs::File::create(&tmp)?;
        let mut w = Hashing { inner: std::io::BufWriter::with_capacity(1 << 20, file), hash: sha2::Sha256::new() };
        w.write_all(FILE_MAGIC)?;
        w.write_all(&FILE_VERSION.to_le_bytes())?;
        w.write_all(&(key.len() as u64).to_le_bytes())?;
        w.write_all(key.as_bytes())?;
        w.write_all(&(self.num_inputs as u64).to_le_bytes())?;
        w.write_all(&(self.num_aux as u64).to_le_bytes())?;
        w.write_all(&(self.dictionary.len() as u64).to_le_bytes())?;
        for v in &self.dictionary {
            w.write_all(v.to_repr().as_ref())?;
        }
        for m in [&self.a, &self.b, &self.c] {
            put_words(&mut w, &m.start)?;
            put_words(&mut w, &m.cols)?;
            put_words(&mut w, &m.coeffs)?;
        }
        for d in [&self.a_aux_density, &self.b_input_density, &self.b_aux_density] {
            w.write_all(&(d.len() as u64).to_le_bytes())?;
            put_words(&mut w, d.words())?;
        }
        // The parts' layout: prefix, then each part's share (inputs, aux, constraints); no
        // words at all when it was recorded whole.
        let counts = |c: &Counts| [c.inputs as u64, c.aux as u64, c.constraints as u64];
        let layout: Vec<u64> = match &self.layout {
            Some(l) => std::iter::once(&l.prefix).chain(&l.parts).flat_map(counts).collect(),
            None => Vec::new(),
        };
        put_words(&mut w, &layout)?;
        let digest = w.hash.finalize();
        let mut inner = w.inner;
        inner.write_all(&digest)?;
        inner.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    }

    /// Reads a compiled circuit saved by [`CompiledCircuit::save`] for `key`, checking its
    /// format version, its key, its content hash and every index in it. Any failure says
    /// why; the caller records the circuit again.
    pub fn load(key: &str, path: &std::path::Path) -> Result<CompiledCircuit, LoadError> {
        use sha2::Digest;
        let p = path.display().to_string();
        let io = |source| LoadError::Io { path: p.clone(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: read-only mapping of a file only cuzk writes (through a rename).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let format = |reason: String| LoadError::Format { path: p.clone(), reason };
        let corrupt = |reason: String| LoadError::Corrupt { path: p.clone(), reason };
        if map.len() < FILE_MAGIC.len() + 4 + 32 || &map[..8] != FILE_MAGIC {
            return Err(format("no compiled-circuit header".into()));
        }
        let version = u32::get(&map[8..12]);
        if version != FILE_VERSION {
            return Err(format(format!("format version {version}, this build reads {FILE_VERSION}")));
        }
        let (body, digest) = map.split_at(map.len() - 32);
        let mut r = Reader { bytes: body, at: 12 };
        let key_len = r.len(1, "key").map_err(&corrupt)?;
        let found = String::from_utf8_lossy(r.take(key_len, "key").map_err(&corrupt)?).into_owned();
        if found != key {
            return Err(LoadError::OtherCircuit { path: p.clone(), want: key.into(), found });
        }
        if sha2::Sha256::digest(body).as_slice() != digest {
            return Err(corrupt("the hash differs".into()));
        }
        let parse = |r: &mut Reader<'_>| -> Result<CompiledCircuit, String> {
            let num_inputs = r.u64("inputs")? as usize;
            let num_aux = r.u64("aux")? as usize;
            let n = r.len(32, "dictionary")?;
            let mut dictionary = Vec::with_capacity(n);
            for _ in 0..n {
                let mut repr = <Scalar as PrimeField>::Repr::default();
                repr.as_mut().copy_from_slice(r.take(32, "dictionary")?);
                dictionary.push(Option::from(Scalar::from_repr(repr)).ok_or("a coefficient is not a field element")?);
            }
            if dictionary.first() != Some(&Scalar::ONE) || dictionary.get(1) != Some(&-Scalar::ONE) {
                return Err("the dictionary does not start with 1 and -1".into());
            }
            let vars = num_inputs + num_aux;
            let mut matrix = |name: &str| -> Result<Matrix, String> {
                let m = Matrix { start: r.words(name)?, cols: r.words(name)?, coeffs: r.words(name)? };
                let ok = m.cols.len() == m.coeffs.len()
                    && m.start.first() == Some(&0)
                    && m.start.last() == Some(&(m.cols.len() as u64))
                    && m.start.windows(2).all(|w| w[0] <= w[1])
                    && m.cols.iter().all(|&c| (c as usize) < vars)
                    && m.coeffs.iter().all(|&c| (c as usize) < dictionary.len());
                ok.then_some(m).ok_or_else(|| format!("matrix {name} has an index out of range"))
            };
            let (a, b, c) = (matrix("A")?, matrix("B")?, matrix("C")?);
            if b.start.len() != a.start.len() || c.start.len() != a.start.len() {
                return Err("the matrices have different row counts".into());
            }
            let mut density = |name: &str, want: usize| -> Result<Density, String> {
                let len = r.u64(name)? as usize;
                let words = r.words(name)?;
                (len == want).then_some(()).ok_or_else(|| format!("density {name} has {len} bits, not {want}"))?;
                Density::from_words(words, len).ok_or_else(|| format!("density {name} is malformed"))
            };
            let a_aux_density = density("A aux", num_aux)?;
            let b_input_density = density("B inputs", num_inputs)?;
            let b_aux_density = density("B aux", num_aux)?;
            let words: Vec<u64> = r.words("layout")?;
            let layout = if words.is_empty() {
                None
            } else {
                if words.len() % 3 != 0 || words.len() < 6 {
                    return Err(format!("the layout has {} words", words.len()));
                }
                let mut counts = words.chunks_exact(3).map(|w| Counts { inputs: w[0] as usize, aux: w[1] as usize, constraints: w[2] as usize });
                let prefix = counts.next().expect("a prefix");
                let l = PartLayout { prefix, parts: counts.collect() };
                let own_constraints = (a.start.len() - 1).checked_sub(num_inputs).ok_or("fewer rows than inputs")?;
                l.fits(num_inputs, num_aux, own_constraints).then_some(l).map(Some).ok_or("the layout does not add up to the counts")?
            };
            if r.at != r.bytes.len() {
                return Err(format!("{} bytes after the last part", r.bytes.len() - r.at));
            }
            Ok(CompiledCircuit { num_inputs, num_aux, a, b, c, dictionary, a_aux_density, b_input_density, b_aux_density, layout })
        };
        parse(&mut r).map_err(corrupt)
    }
}

