//! How a partition circuit becomes a [`PartitionWitness`]: through its compiled circuit
//! (cuzk_groth16::compiled; the default) or the reference path
//! (`PartitionWitness::synthesize`).
//!
//! The first partition of a proof type is synthesized with recording (its parts in
//! parallel where the kind gives them), which gives the compiled circuit and, through it,
//! the witness; the compiled circuit is kept in memory for the process's life, keyed by the
//! proof type, and every later partition of that type runs witness-only synthesis and
//! sparse products. A later circuit whose counts differ from the recording, or whose
//! compiled witness does not satisfy its constraints, is recorded anew, and that recording's
//! own witness is what is checked: a compiled circuit can cost time, never a correct input.
//!
//! With [`set_compiled_dir`], a recording is also saved to a file (format version, circuit
//! key and content hash checked on load) and found there after a restart; a file of another
//! version or circuit, truncated or corrupt, is reported and recorded over.
//!
//! A PoRep partition's witness-only synthesis runs `crate::porep_circuit` (storage-proofs'
//! circuit with the labels' and tree D's SHA-256 computed natively, the same witness);
//! `LabelHashing::Gadget` runs storage-proofs' circuit instead (tests and synth-bench).
//!
//! [`SynthesisPath::Reference`] selects the reference path (tests, benches and
//! comparisons). How synthesis uses the host ([`SynthesisTuning`]: its threads' priority,
//! huge pages) is set once per process by its owner ([`configure`]: cuzkd from its
//! `[synthesis]` section), never read from the environment.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use cuzk_groth16::compiled::{
    compile_pieces, synthesize_compiled, synthesize_compiled_deferred, synthesize_compiled_pieces,
    synthesize_compiled_pieces_deferred, CompiledCircuit, CompiledTimings, CompiledWitness,
};
use cuzk_groth16::PartitionWitness;

/// Which synthesis path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthesisPath {
    Compiled,
    Reference,
    /// The compiled path, keeping a compiled witness that does not satisfy its constraints
    /// instead of recording again: **benches on shape-only inputs only** (they can never
    /// satisfy; `crate::shape_c1`). Its `first_unsatisfied` is reported, never acted on; no
    /// proving path uses it.
    CompiledUnchecked,
    /// The compiled path with a, b and c left to the prover's backend
    /// (`PartitionWitness::deferred`): a GPU evaluates them on the device from the compiled
    /// circuit, so that only the assignment is held and crosses PCIe, and checks a * b = c
    /// there (the job fails naming the row, as here). Until one witness of a compiled
    /// circuit has satisfied it in this process, its witnesses are evaluated and checked
    /// here as on `Compiled`, so that a stale recording is still recorded again rather than
    /// refusing a correct input.
    CompiledDeferred,
    /// `CompiledDeferred` for **shape-only bench inputs only**: always deferred, and the
    /// witness marked unchecked (`Deferred::unchecked`: the backend evaluates and goes on),
    /// as `CompiledUnchecked` keeps an unsatisfied witness. No proving path uses it.
    CompiledDeferredUnchecked,
}

/// How synthesis uses the host: one setting per process, made by its owner before the
/// first synthesis ([`configure`]; cuzkd's `[synthesis]` section). `Default` is what was
/// measured best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthesisTuning {
    /// How much lower than the process the bulk synthesis threads run (a nice increment,
    /// 0 to 19; default 10). The prover's CPU stages (the scalar split, the staging copies
    /// to the GPU) are on the GPU's critical path and go first: a 32 GiB partition proved in
    /// 11-12 s with synthesis at the same priority beside it, 3.4-3.8 s alone
    /// (bench/history/2026-12-01.md). 0 keeps the process's priority.
    pub nice: i32,
    /// Large vectors (parts' aux, a, b, c) advised onto transparent huge pages
    /// (`cuzk_groth16::hugepages`; default on: 28% of a 32 GiB partition's synthesis CPU
    /// time was page faults on 4 KiB pages, the H200 run of 2026-12-02).
    pub huge_pages: bool,
    /// Each synthesis thread runs its partition in a pool of its own instead of sharing one
    /// pool (a bench variant, default off: `examples/concurrent_synthesis.rs` compares them).
    pub per_thread_pools: bool,
}

impl Default for SynthesisTuning {
    fn default() -> Self {
        SynthesisTuning { nice: 10, huge_pages: true, per_thread_pools: false }
    }
}

static TUNING: OnceLock<SynthesisTuning> = OnceLock::new();

/// Sets this process's [`SynthesisTuning`], once, before the first synthesis (its pools are
/// built then, at the priority it gives). Refused, naming the setting in force, when it was
/// set already or a synthesis ran first; the same setting again is accepted.
pub fn configure(tuning: SynthesisTuning) -> Result<(), String> {
    if !(0..=19).contains(&tuning.nice) {
        return Err(format!("synthesis nice {} is out of range; expected 0 to 19", tuning.nice));
    }
    let now = *TUNING.get_or_init(|| tuning);
    if now != tuning {
        return Err(format!("synthesis is already set up as {now:?}; a change takes a restart"));
    }
    cuzk_groth16::hugepages::set_enabled(tuning.huge_pages);
    Ok(())
}

/// The setting in force (the default when nobody configured one before the first use).
fn tuning() -> SynthesisTuning {
    *TUNING.get_or_init(SynthesisTuning::default)
}

/// What one synthesis did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthesisRun {
    /// The reference path, as asked.
    Reference,
    /// Recorded: the first partition of its type (no valid saved file either).
    Recorded,
    /// The compiled circuit came from its saved file, then witness-only.
    Loaded,
    /// Witness-only through the compiled circuit.
    Compiled,
    /// The compiled circuit did not fit this circuit; recorded again.
    Rebuilt,
}

fn cache() -> &'static Mutex<HashMap<String, Arc<CompiledCircuit>>> {
    static C: OnceLock<Mutex<HashMap<String, Arc<CompiledCircuit>>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The compiled circuits (key, and which one: its address) one witness has satisfied in
/// this process: their witnesses may be deferred.
fn proven() -> &'static Mutex<HashMap<String, usize>> {
    static P: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    P.get_or_init(Default::default)
}

fn is_proven(key: &str, c: &Arc<CompiledCircuit>) -> bool {
    proven().lock().unwrap_or_else(|p| p.into_inner()).get(key) == Some(&(Arc::as_ptr(c) as usize))
}

/// Notes that a witness of the compiled circuit now kept under `key` satisfied it.
fn mark_proven(key: &str) {
    if let Some(c) = compiled_for(key) {
        proven().lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), Arc::as_ptr(&c) as usize);
    }
}

fn dir() -> &'static Mutex<Option<PathBuf>> {
    static D: Mutex<Option<PathBuf>> = Mutex::new(None);
    &D
}

/// Where compiled circuits are saved and found across restarts (`<dir>/<key>.pce`; the
/// daemon uses `<state_dir>/compiled`), or None to keep them in memory only (default).
pub fn set_compiled_dir(path: Option<PathBuf>) {
    *dir().lock().unwrap_or_else(|p| p.into_inner()) = path;
}

fn file_of(key: &str) -> Option<PathBuf> {
    let d = dir().lock().unwrap_or_else(|p| p.into_inner()).clone()?;
    let name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    Some(d.join(format!("{name}.pce")))
}

/// The compiled circuit of `key` from its saved file, when there is a valid one (put in
/// memory too); an invalid one is reported and left to be overwritten.
fn load_saved(key: &str) -> Option<Arc<CompiledCircuit>> {
    let path = file_of(key)?;
    if !path.exists() {
        return None;
    }
    let t = Instant::now();
    match CompiledCircuit::load(key, &path) {
        Ok(c) => {
            log::info!(
                "compiled circuit {key} loaded from {} in {:.2} s ({:.1} MiB)",
                path.display(),
                t.elapsed().as_secs_f64(),
                c.bytes() as f64 / (1u64 << 20) as f64
            );
            let c = Arc::new(c);
            cache().lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), c.clone());
            Some(c)
        }
        Err(e) => {
            log::warn!("compiled circuit {key}: {e}; recording it again");
            None
        }
    }
}

/// The compiled circuit kept for `key`, if any.
pub fn compiled_for(key: &str) -> Option<Arc<CompiledCircuit>> {
    cache().lock().unwrap_or_else(|p| p.into_inner()).get(key).cloned()
}

/// Host bytes of the compiled circuits kept (`CompiledCircuit::bytes`, summed): what the
/// engine's host memory budget counts beside partitions ([`crate::FilecoinRunner`]'s
/// `held_bytes`). A circuit still used by a partition after it was replaced is not counted.
pub fn compiled_bytes() -> u64 {
    cache().lock().unwrap_or_else(|p| p.into_inner()).values().map(|c| c.bytes() as u64).sum()
}

/// Drops every compiled circuit (tests; memory pressure).
pub fn clear_compiled() {
    // Freed after the lock: the engine's scheduler reads the cache (`compiled_bytes`).
    let old = std::mem::take(&mut *cache().lock().unwrap_or_else(|p| p.into_inner()));
    drop(old);
}

/// Records the circuit (its parts in parallel, when given; the whole circuit if the parts
/// fail to join) and keeps the compiled circuit under `key`, saved to its file when a
/// directory is set.
fn record<C: Circuit<Scalar> + Send, E>(
    key: &str,
    make: &dyn Fn() -> Result<C, E>,
    pieces: Option<&Pieces<'_, C, E>>,
    synth_err: &dyn Fn(SynthesisError) -> E,
) -> Result<CompiledWitness, E> {
    let t = Instant::now();
    let recorded = match pieces {
        Some(p) => match compile_pieces((p.parts)()?, Some(p.marker)) {
            Ok(r) => Ok(r),
            Err(e) => {
                log::warn!("compiled circuit {key}: recording its parts failed ({e}); recording it whole");
                compile_pieces(vec![make()?], None)
            }
        },
        None => compile_pieces(vec![make()?], None),
    };
    let (w, compiled) = recorded.map_err(synth_err)?;
    log::info!("compiled circuit {key}: {compiled}, recorded in {:.2} s ({:?})", t.elapsed().as_secs_f64(), w.timings);
    if let Some(path) = file_of(key) {
        let saved = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| compiled.save(key, &path));
        match saved {
            Ok(()) => log::info!("compiled circuit {key} saved to {}", path.display()),
            // Not fatal: the next start records it again.
            Err(e) => log::warn!("compiled circuit {key}: saving to {} failed: {e}", path.display()),
        }
    }
    // A replaced circuit (GiB) is freed after the lock, as in `clear_compiled`.
    let old = cache().lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), Arc::new(compiled));
    drop(old);
    Ok(w)
}

/// A circuit that can also be built as parts for parallel witness generation (see
/// `cuzk_groth16::compiled::synthesize_compiled_pieces`): the namespace marker of its
/// pieces, and a builder of the parts.
pub struct Pieces<'a, C, E> {
    pub marker: &'static str,
    pub parts: &'a (dyn Fn() -> Result<Vec<C>, E> + Sync),
}

/// The threads synthesis runs on: one per core, at a lower CPU priority than the rest of
/// the process ([`SynthesisTuning::nice`]).
/// Synthesis runs ahead of proving, and the prover's CPU stages (the scalar split, staging
/// copies to the GPU) share the machine with it: those are on the GPU's critical path, so
/// they go first, and synthesis takes every cycle they leave. Without it, the prover's
/// parallel work queued behind synthesis in one pool and the GPU waited (a 32 GiB partition
/// proved in 11-12 s with synthesis running beside it, against 3.4-3.8 s alone; bench notes).
pub fn synthesis_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| bulk_pool("cuzk-synth"))
}

/// The threads urgent synthesis runs on ([`urgent`]): one per core at the process's own
/// CPU priority, above bulk synthesis ([`synthesis_pool`]) and beside the prover's stages.
fn urgent_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| build_pool("cuzk-urgent", 0))
}

thread_local! {
    static URGENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `op` (a job's synthesis) with every [`synthesize`] inside it on the urgent pool: for
/// jobs that must not queue behind bulk synthesis (a WinningPoSt beside 32 GiB PoReps). A
/// pool of its own rather than the shared one, because work injected into a busy rayon pool
/// waits until its threads run out of their own tasks; and at normal priority, so the OS
/// gives its threads the cores ahead of the niced bulk threads.
pub fn urgent<R>(op: impl FnOnce() -> R) -> R {
    /// Restores the flag also when `op` panics (the engine contains panics and goes on).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            URGENT.with(|u| u.set(self.0));
        }
    }
    let _restore = Restore(URGENT.with(|u| u.replace(true)));
    op()
}

/// One thread per core at the synthesis priority, named `<name>-<i>`.
fn bulk_pool(name: &'static str) -> rayon::ThreadPool {
    build_pool(name, tuning().nice)
}

/// One thread per core, `nice` above the process's priority, named `<name>-<i>`.
fn build_pool(name: &'static str, nice: i32) -> rayon::ThreadPool {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let build = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(move |_| lower_priority(nice))
        .build();
    match build {
        Ok(p) => p,
        Err(e) => {
            // Not fatal: one thread of our own still keeps synthesis apart.
            log::warn!("synthesis thread pool: {e}; synthesizing on one thread");
            rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap_or_else(|e| panic!("a one-thread pool: {e}"))
        }
    }
}

/// Runs `op` where synthesis runs. [`SynthesisTuning::per_thread_pools`] (a bench variant;
/// the default is one shared pool, [`synthesis_pool`]) gives each calling thread, such as each of
/// the engine's synthesis threads, a pool of its own of one thread per core: partitions
/// synthesized at once then share the cores through the OS scheduler rather than one pool's
/// work stealing, where a thread waiting for its own stolen task may run another
/// partition's long one meanwhile (bench/history/2026-12-01.md, the uneven pairs of the engine run).
/// A caller already on a rayon thread runs `op` where it is.
fn in_synthesis_pool<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    thread_local! {
        static OWN: std::cell::OnceCell<rayon::ThreadPool> = const { std::cell::OnceCell::new() };
    }
    let per_thread = tuning().per_thread_pools;
    if URGENT.with(|u| u.get()) || urgent_pool().current_thread_index().is_some() {
        urgent_pool().install(op)
    } else if !per_thread {
        synthesis_pool().install(op)
    } else if rayon::current_thread_index().is_some() {
        op()
    } else {
        OWN.with(|p| p.get_or_init(|| bulk_pool("cuzk-synth-own")).install(op))
    }
}

/// Raises this thread's nice value by `nice` (Linux: the nice value is per thread).
fn lower_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    // SAFETY: plain syscalls on the calling thread's own id; no memory is passed.
    let r = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + nice).min(19))
    };
    if r != 0 {
        log::debug!("synthesis thread: setpriority failed: {}", std::io::Error::last_os_error());
    }
}

/// A partition's witness, how it was made, and its first constraint with a * b != c (None:
/// it satisfies its circuit). Every path checks it once: the compiled paths while
/// evaluating a, b, c, the reference path after synthesis.
pub struct Synthesized {
    pub witness: PartitionWitness,
    pub run: SynthesisRun,
    pub first_unsatisfied: Option<usize>,
    /// The compiled paths' stages (None on the reference path).
    pub timings: Option<CompiledTimings>,
}

impl Synthesized {
    fn compiled(w: CompiledWitness, run: SynthesisRun) -> Synthesized {
        Synthesized { witness: w.witness, run, first_unsatisfied: w.first_unsatisfied, timings: Some(w.timings) }
    }
}

/// The witness of the circuit `make()` builds (it may be called twice), by `path`; circuits
/// of one `key` must have one structure (a proof type's partitions do). With `pieces`, a
/// compiled run (recording included) synthesizes the parts in parallel.
pub fn synthesize<C: Circuit<Scalar> + Send, E: Send>(
    key: &str,
    path: SynthesisPath,
    make: impl Fn() -> Result<C, E> + Sync,
    pieces: Option<Pieces<'_, C, E>>,
    synth_err: impl Fn(SynthesisError) -> E + Sync,
) -> Result<Synthesized, E> {
    in_synthesis_pool(|| synthesize_here(key, path, &make, pieces, &synth_err))
}

fn synthesize_here<C: Circuit<Scalar> + Send, E>(
    key: &str,
    path: SynthesisPath,
    make: &(dyn Fn() -> Result<C, E> + Sync),
    pieces: Option<Pieces<'_, C, E>>,
    synth_err: &(dyn Fn(SynthesisError) -> E + Sync),
) -> Result<Synthesized, E> {
    if path == SynthesisPath::Reference {
        let witness = PartitionWitness::synthesize(make()?).map_err(synth_err)?;
        let first_unsatisfied = witness.first_unsatisfied();
        return Ok(Synthesized { witness, run: SynthesisRun::Reference, first_unsatisfied, timings: None });
    }
    let (compiled, from_file) = match compiled_for(key) {
        Some(c) => (c, false),
        None => match load_saved(key) {
            Some(c) => (c, true),
            None => {
                let w = record(key, make, pieces.as_ref(), synth_err)?;
                if w.first_unsatisfied.is_none() {
                    mark_proven(key);
                }
                return Ok(Synthesized::compiled(deferred_after_check(key, path, w), SynthesisRun::Recorded));
            }
        },
    };
    let unchecked = matches!(path, SynthesisPath::CompiledUnchecked | SynthesisPath::CompiledDeferredUnchecked);
    let defer = path == SynthesisPath::CompiledDeferredUnchecked
        || (path == SynthesisPath::CompiledDeferred && is_proven(key, &compiled));
    let whole = |c: C| if defer { synthesize_compiled_deferred(c, &compiled) } else { synthesize_compiled(c, &compiled) };
    let fast = match &pieces {
        Some(p) => {
            let parts = (p.parts)()?;
            let joined = if defer {
                synthesize_compiled_pieces_deferred(parts, p.marker, &compiled)
            } else {
                synthesize_compiled_pieces(parts, p.marker, &compiled)
            };
            match joined {
                Ok(r) => Ok(r),
                Err(e) => {
                    log::warn!("{key}: the parts' witnesses failed to join ({e}); synthesizing the whole circuit");
                    whole(make()?)
                }
            }
        }
        None => whole(make()?),
    };
    let run = if from_file { SynthesisRun::Loaded } else { SynthesisRun::Compiled };
    match fast.map_err(synth_err)? {
        Ok(mut w) if w.first_unsatisfied.is_none() || unchecked => {
            if w.first_unsatisfied.is_none() && !defer {
                mark_proven(key);
            }
            if let Some(d) = w.witness.deferred.as_mut() {
                d.unchecked = path == SynthesisPath::CompiledDeferredUnchecked;
            }
            Ok(Synthesized::compiled(deferred_after_check(key, path, w), run))
        }
        outcome => {
            match outcome {
                Err(mismatch) => log::warn!("{key}: {mismatch}; recording it again"),
                Ok(_) => log::warn!(
                    "{key}: the compiled circuit's witness does not satisfy its constraints; \
                     recording the circuit again"
                ),
            }
            let w = record(key, make, pieces.as_ref(), synth_err)?;
            if w.first_unsatisfied.is_none() {
                mark_proven(key);
            }
            Ok(Synthesized::compiled(deferred_after_check(key, path, w), SynthesisRun::Rebuilt))
        }
    }
}

/// On `CompiledDeferred`, a witness that was evaluated here (the first of a compiled circuit
/// not yet proven, or one recorded now) and satisfied leaves as a deferred one: a, b and c
/// are given back at once, so that it holds what the engine budgeted for it while it waits
/// for its device (the assignment), not the full witness.
fn deferred_after_check(key: &str, path: SynthesisPath, mut w: CompiledWitness) -> CompiledWitness {
    if path != SynthesisPath::CompiledDeferred || w.witness.deferred.is_some() || w.first_unsatisfied.is_some() {
        return w;
    }
    // The circuit kept for the key now (another thread may have recorded it again; a
    // circuit of other counts is never put in place of this witness's).
    let Some(compiled) = compiled_for(key) else { return w };
    let (inputs, aux) = (w.witness.input_assignment.len(), w.witness.aux_assignment.len());
    if (compiled.num_inputs, compiled.num_aux, compiled.num_constraints()) != (inputs, aux, w.witness.num_constraints()) {
        return w;
    }
    let full = std::mem::take(&mut w.witness);
    let PartitionWitness { a, b, c, input_assignment, aux_assignment, .. } = full;
    cuzk_groth16::release::drop_in_background((a, b, c));
    w.witness = compiled.deferred_witness(input_assignment, aux_assignment);
    w
}

/// Puts `compiled` in the cache under `key` (tests: a stale or foreign entry).
pub fn install_compiled(key: &str, compiled: CompiledCircuit) {
    cache().lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), Arc::new(compiled));
}
