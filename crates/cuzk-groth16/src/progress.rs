//! Progress of long work (a parameter setup, a fixture's sealing), reported to whoever
//! shows it: the libraries name their stages and count their units, a binary draws them
//! (cuzk-lab: a bar on a terminal, plain lines in a pipe). Nothing here prints.

/// A receiver of progress. Stages come one after another: `stage` starts one (with the
/// units it will take, 0 when unknown), `advance` counts units done, `finish` ends it.
/// Implementations must be cheap to call from many threads.
pub trait Progress: Sync {
    fn stage(&self, name: &str, units: u64);
    fn advance(&self, units: u64);
    fn finish(&self);
    /// The stage ended in an error (the caller reports the error itself).
    fn failed(&self) {
        self.finish()
    }
}

/// Progress that nobody sees (tests, library callers without a display).
pub struct Silent;

impl Progress for Silent {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Another receiver's stages, their names prefixed (`"PoRep 2KiB parameters: "` before a
/// setup's own stage names).
pub struct Prefixed<'a> {
    pub inner: &'a dyn Progress,
    pub prefix: String,
}

impl Progress for Prefixed<'_> {
    fn stage(&self, name: &str, units: u64) {
        self.inner.stage(&format!("{}{name}", self.prefix), units)
    }
    fn advance(&self, units: u64) {
        self.inner.advance(units)
    }
    fn finish(&self) {
        self.inner.finish()
    }
    fn failed(&self) {
        self.inner.failed()
    }
}

/// Runs `f` as one stage of `progress` without units (a step that reports nothing of its
/// own, such as a call into filecoin-proofs): finished when it succeeds, failed when not.
pub fn step<T, E>(progress: &dyn Progress, name: &str, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    progress.stage(name, 0);
    let out = f();
    match out {
        Ok(_) => progress.finish(),
        Err(_) => progress.failed(),
    }
    out
}
