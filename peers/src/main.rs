//! cuzk-peers: cuzk's GPU MSM and NTT against sppark's in one process, on the same inputs
//! (issue #9), and cuzk's partition proofs against supraseal-c2's, each prover in its own
//! process (issue #36). A bench only.
//!
//! - MSM (BLS12-381 G1): random affine bases, scalars random or "PoRep-like" (51% zero, 47%
//!   one, 2% random). Both sides keep the bases in device memory (cuzk's resident base
//!   arrays; an sppark `msm_t` built over them) and take the scalars from host memory. The
//!   two results must be the same point.
//! - NTT (Fr): random input, natural order in and out. cuzk's `Backend::ntt` goes host to
//!   host; sppark is timed both host to host (`NTT::Base`) and on device-resident data
//!   (`NTT::Base_dev_ptr`, kernels only, against cuzk's kernel time). Both use the same
//!   2^32-th root of unity and coset shift 7, so their outputs must be equal element for
//!   element; a 2^12 check against cuzk's CPU backend in all four directions says so first.
//! - Proofs (proofs.rs): the 2 KiB PoRep and PoRep shapes (2^16 to 2^22, and --shape), the
//!   CPU backend as referee, cuzk on the GPU, supraseal-c2 as `supraseal-c2-bench` in a
//!   process of its own from the same `.params` file with the same r and s. A peer's time
//!   counts only where its proofs equal the referee's or verify.
//!
//! Every row is the median (min-max) of --rounds timed calls after a warm-up call.

use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blstrs::{G1Affine, G1Projective, Scalar};
use clap::Parser;
use cuzk_gpu::{GpuBackend, VramBudget};
use cuzk_groth16::{Backend, CpuBackend, NttDirection, Selection};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

mod proofs;

// sppark's crate builds its GPU selection (util/all_gpus.cpp: select_gpu, which cuda/peers.cu
// calls) into a static library that is linked only with a crate the binary names.
use sppark as _;

#[derive(Parser, Debug)]
#[command(about = "cuzk against sppark (MSM, NTT; one process) and supraseal-c2 (proofs; its own process), same data: a bench only")]
struct Args {
    /// NTT sizes (log2), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "20,24,26,27")]
    ntt_logs: Vec<u32>,
    /// MSM sizes (log2), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "20,24,26")]
    msm_logs: Vec<u32>,
    /// Timed rounds per row (median and min-max printed), after one warm-up call.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Sizes 2^20 and 2^24 only, 2 rounds.
    #[arg(long)]
    quick: bool,
    /// Also time the inverse and both coset NTTs (at every size; forward only otherwise,
    /// the four directions being checked at 2^12 regardless).
    #[arg(long)]
    all_directions: bool,
    /// The 2 KiB fixture (`cuzk-lab gen-fixture --sector-size 2KiB --out DIR`); made
    /// there if missing (minutes).
    #[arg(long, default_value = "/tmp/fx/2KiB")]
    fixture_dir: PathBuf,
    /// Leave out the MSM and NTT rows.
    #[arg(long)]
    no_sppark: bool,
    /// Leave out the 2 KiB PoRep proof against supraseal-c2.
    #[arg(long)]
    no_porep: bool,
    /// cuzk's device memory budget in GiB for the sppark rows (the rest is left to sppark).
    #[arg(long, default_value_t = 48)]
    cuzk_vram_gib: usize,
    /// Also one PoRep partition of this shape (`32GiB`, or `2^N` for its proportions at
    /// 2^N) proved by cuzk and by supraseal-c2 from the same random parameters, written to
    /// a .params file in --shape-dir (about 47 GB at 32GiB), with a witness drawn with the
    /// 2 KiB witness's scalar mix. Shape-only inputs: the proofs cannot verify; they must
    /// be byte-identical.
    #[arg(long)]
    shape: Option<String>,
    /// The C1 output whose partition 0 gives --shape its scalar mix (default: the 2 KiB
    /// fixture's, made in --fixture-dir when missing).
    #[arg(long)]
    mix_c1: Option<PathBuf>,
    /// Where --shape writes its parameter file (removed afterwards).
    #[arg(long, default_value = "/tmp/cuzk-peers-shape")]
    shape_dir: PathBuf,
    /// PoRep partition shapes proved by the CPU backend (referee), cuzk and supraseal-c2
    /// (`2^N`, comma-separated; empty for none). Shape-only: their proofs cannot verify and
    /// must be equal.
    #[arg(long, value_delimiter = ',', default_value = "2^16,2^18,2^20,2^22")]
    proof_shapes: Vec<String>,
    /// Partitions supraseal-c2 proves in one call for a shape (a 32 GiB partition's witness
    /// is 16.7 GB of host memory beside the 47.4 GB of parameters it pins).
    #[arg(long, default_value_t = 1)]
    shape_partitions: usize,
    /// A shape-only C1 output (`cuzk-lab gen-fixture --shape-only`) whose first
    /// --shape-partitions partitions both provers prove from --shape-params: the real
    /// circuit's witnesses (unsatisfied), parameters from one file.
    #[arg(long, requires = "shape_params")]
    shape_c1: Option<PathBuf>,
    /// The parameter file for --shape-c1 (`cuzk-lab shape-params` writes it; kept).
    #[arg(long, requires = "shape_c1")]
    shape_params: Option<PathBuf>,
    /// The CPU backend as referee at the 32 GiB shape too (minutes on 16 cores); otherwise
    /// cuzk's GPU proof is the reference there, and the row says so.
    #[arg(long)]
    referee_cpu_32gib: bool,
    /// supraseal-c2-bench (peers/supraseal) [default: beside this binary].
    #[arg(long)]
    supraseal_bin: Option<PathBuf>,
}

// ---- our CUDA wrapper (cuda/peers.cu) ----

#[repr(C)]
struct CError {
    code: i32,
    message: *mut c_char,
}

extern "C" {
    fn peers_gpu_info(name: *mut c_char, len: usize, sm_count: *mut i32) -> CError;
    fn peers_mem_info(free_bytes: *mut usize, total_bytes: *mut usize) -> CError;
    fn peers_msm_open(ctx: *mut *mut c_void, points: *const G1Affine, n: usize) -> CError;
    fn peers_msm_run(ctx: *mut c_void, scalars: *const Scalar, n: usize, out: *mut blst::blst_p1) -> CError;
    fn peers_msm_close(ctx: *mut c_void);
    fn peers_ntt_host(inout: *mut Scalar, lg_n: u32, inverse: i32, coset: i32) -> CError;
    fn peers_ntt_resident(inout: *mut Scalar, lg_n: u32, inverse: i32, coset: i32, rounds: u32, each_ms: *mut f32) -> CError;
    fn free(p: *mut c_void);
}

/// The device's free memory as the driver reports it, printed before supraseal-c2's calls:
/// its MSMs do not report a failed allocation (they would give a partial sum).
pub(crate) fn print_free_memory(when: &str) {
    let (mut free_b, mut total) = (0usize, 0usize);
    match check(unsafe { peers_mem_info(&mut free_b, &mut total) }, "cudaMemGetInfo") {
        Ok(()) => println!("device memory {when}: {:.1} GiB free of {:.1} GiB", free_b as f64 / (1u64 << 30) as f64, total as f64 / (1u64 << 30) as f64),
        Err(e) => println!("device memory {when}: unknown ({e:#})"),
    }
}

fn check(e: CError, what: &str) -> Result<()> {
    if e.code == 0 {
        return Ok(());
    }
    let msg = if e.message.is_null() {
        format!("CUDA error {}", e.code)
    } else {
        let s = unsafe { CStr::from_ptr(e.message) }.to_string_lossy().into_owned();
        unsafe { free(e.message as *mut c_void) };
        s
    };
    bail!("sppark {what}: {msg}")
}

/// sppark's MSM over bases copied to device memory once.
struct SpparkMsm {
    ctx: *mut c_void,
    n: usize,
}

impl SpparkMsm {
    fn new(bases: &[G1Affine]) -> Result<Self> {
        let mut ctx = std::ptr::null_mut();
        check(unsafe { peers_msm_open(&mut ctx, bases.as_ptr(), bases.len()) }, "msm_t")?;
        Ok(SpparkMsm { ctx, n: bases.len() })
    }

    fn run(&self, scalars: &[Scalar]) -> Result<G1Projective> {
        assert_eq!(scalars.len(), self.n);
        let mut out = blst::blst_p1::default();
        check(unsafe { peers_msm_run(self.ctx, scalars.as_ptr(), scalars.len(), &mut out) }, "msm")?;
        // G1Projective is a transparent wrapper of blst_p1 (Jacobian, Montgomery), which is
        // also sppark's jacobian_t<fp_t> on the host.
        Ok(unsafe { std::mem::transmute::<blst::blst_p1, G1Projective>(out) })
    }
}

impl Drop for SpparkMsm {
    fn drop(&mut self) {
        unsafe { peers_msm_close(self.ctx) }
    }
}

fn flags(dir: NttDirection) -> (i32, i32) {
    match dir {
        NttDirection::Forward => (0, 0),
        NttDirection::Inverse => (1, 0),
        NttDirection::CosetForward => (0, 1),
        NttDirection::CosetInverse => (1, 1),
    }
}

fn sppark_ntt_host(v: &mut [Scalar], dir: NttDirection) -> Result<()> {
    let (inv, coset) = flags(dir);
    check(unsafe { peers_ntt_host(v.as_mut_ptr(), v.len().trailing_zeros(), inv, coset) }, "NTT::Base")
}

/// Transforms `v` once on the device (result left in `v`), then times `rounds` more
/// transforms of the resident buffer, kernels only: each one's time.
fn sppark_ntt_resident(v: &mut [Scalar], dir: NttDirection, rounds: usize) -> Result<Stats> {
    let (inv, coset) = flags(dir);
    let mut each = vec![-1.0f32; rounds];
    check(
        unsafe { peers_ntt_resident(v.as_mut_ptr(), v.len().trailing_zeros(), inv, coset, rounds as u32, each.as_mut_ptr()) },
        "NTT::Base_dev_ptr",
    )?;
    Ok(Stats::of(each.iter().map(|&ms| Duration::from_secs_f64(ms.max(0.0) as f64 / 1e3)).collect()))
}

// ---- inputs ----

pub(crate) fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7065_6572)
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 14).enumerate().for_each(|(k, c)| {
        let mut r = rng(seed ^ (k as u64) << 24);
        c.iter_mut().for_each(|s| *s = Scalar::random(&mut r));
    });
    out
}

/// 51% zero, 47% one, 2% random.
fn porep_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 14).enumerate().for_each(|(k, c)| {
        let mut r = rng(seed ^ (k as u64) << 24 ^ 0x51);
        c.iter_mut().for_each(|s| {
            *s = match r.gen_range(0..100u32) {
                0..=50 => Scalar::ZERO,
                51..=97 => Scalar::ONE,
                _ => Scalar::random(&mut r),
            }
        });
    });
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median and spread of a row's timed calls.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    median: Duration,
    min: Duration,
    max: Duration,
    n: usize,
}

impl Stats {
    pub(crate) fn of(mut v: Vec<Duration>) -> Stats {
        v.sort();
        let n = v.len();
        if n == 0 {
            return Stats { median: Duration::ZERO, min: Duration::ZERO, max: Duration::ZERO, n };
        }
        Stats { median: v[n / 2], min: v[0], max: v[n - 1], n }
    }

    /// supraseal-c2-bench's summary line ("median M ms (LO-HI) over R warm calls ...", the
    /// call proving `partitions`), per partition.
    pub(crate) fn of_printed(stdout: &str, partitions: usize) -> Option<Stats> {
        let line = stdout.lines().find(|l| l.starts_with("supraseal-c2: "))?;
        // "... median M ms (LO-HI) over R warm calls ...": read from "median " on (the line's
        // start has parentheses of its own).
        let tail = line.split_once("median ")?.1;
        let median: f64 = tail.split(' ').next()?.parse().ok()?;
        let spread = tail.split_once('(')?.1.split(')').next()?;
        let (lo, hi) = spread.split_once('-')?;
        let n: usize = tail.split_once(" over ")?.1.split(' ').next()?.parse().ok()?;
        let d = |ms: f64| Duration::from_secs_f64(ms / 1e3 / partitions.max(1) as f64);
        Some(Stats { median: d(median), min: d(lo.parse().ok()?), max: d(hi.parse().ok()?), n })
    }

    fn cell(&self) -> String {
        format!("{:.2} ({:.2}-{:.2}; {})", ms(self.median), ms(self.min), ms(self.max), self.n)
    }
}

/// One call to warm up (its result returned), then `rounds` timed calls.
fn timed<T>(rounds: usize, mut f: impl FnMut() -> Result<T>) -> Result<(T, Stats)> {
    let first = f()?;
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok((first, Stats::of(times)))
}

pub(crate) struct Row {
    op: String,
    n: String,
    /// None: cuzk's result was not confirmed (see the note): not counted either.
    cuzk: Option<Stats>,
    /// None: the peer's result did not equal the referee's (or failed): its time is not
    /// counted, and the note says why.
    peer: Option<Stats>,
    note: String,
}

impl Row {
    fn print(&self) {
        let cell = |s: &Option<Stats>| s.as_ref().map_or("not counted".to_string(), Stats::cell);
        let ratio = match (&self.cuzk, &self.peer) {
            (Some(c), Some(p)) => format!("{:.2}", c.median.as_secs_f64() / p.median.as_secs_f64().max(1e-12)),
            _ => "-".to_string(),
        };
        println!("| {} | {} | {} | {} | {ratio} | {} |", self.op, self.n, cell(&self.cuzk), cell(&self.peer), self.note);
    }
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.quick {
        args.ntt_logs = vec![20, 24];
        args.msm_logs = vec![20, 24];
        args.rounds = 2;
    }
    args.rounds = args.rounds.max(1);
    // A --shape that cannot be made is refused now, not after the other rows.
    if let Some(name) = &args.shape {
        cuzk_groth16::shape::PartitionShape::parse(name).map_err(anyhow::Error::msg)?;
    }
    println!("cuzk-peers: a BENCH, not a test of record: the sppark rows run on RANDOM data (random affine G1 bases,");
    println!("  random or PoRep-like scalars, random NTT inputs), cuzk and sppark in this process; the proof rows prove the");
    println!("  2 KiB fixture and shape-only witnesses (random parameters: they cannot verify), supraseal-c2 in its own");
    println!("  process, the CPU backend as referee. Each row: median (min-max) of {} calls after one warm-up.", args.rounds);
    let start = Instant::now();

    let gpu = GpuBackend::open(0, VramBudget::Bytes(args.cuzk_vram_gib << 30)).context("cuzk's GPU backend did not open")?;
    let d = gpu.device();
    let mut name = [0 as c_char; 256];
    let mut sms = 0i32;
    check(unsafe { peers_gpu_info(name.as_mut_ptr(), name.len(), &mut sms) }, "device")?;
    println!(
        "device: cuzk sees {} ({} SMs, sm_{}{}), sppark sees {} ({} SMs); {} host threads",
        d.name,
        d.sm_count,
        d.compute_capability.0,
        d.compute_capability.1,
        unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy(),
        sms,
        rayon::current_num_threads()
    );

    let mut rows = Vec::new();
    let mut failures = Vec::new();
    if !args.no_sppark {
        conventions(&mut failures)?;
        ntt_rows(&gpu, &args, &mut rows, &mut failures)?;
        msm_rows(&gpu, &args, &mut rows, &mut failures)?;
        // Printed now too, in case a proof row dies in a peer's C++ code.
        println!("\nsppark rows so far:");
        table(&rows);
    }
    // The proof rows open the device anew for cuzk and give it back before supraseal-c2.
    drop(gpu);
    proofs::rows(&args, &mut rows, &mut failures)?;

    println!();
    table(&rows);
    println!();
    println!("(ratio < 1: cuzk faster. Whole run {:.1} s.)", start.elapsed().as_secs_f64());
    if failures.is_empty() {
        println!("ALL RESULTS EQUAL");
        Ok(())
    } else {
        for f in &failures {
            println!("MISMATCH: {f}");
        }
        bail!("{} mismatch(es)", failures.len())
    }
}

/// Runs one part that calls into a peer's C++ code, turning its error or panic into a
/// failure line so that the rows so far are still printed.
pub(crate) fn guarded(what: &str, failures: &mut Vec<String>, part: impl FnOnce(&mut Vec<String>) -> Result<()>) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| part(&mut *failures))) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => failures.push(format!("{what}: {e:#}")),
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("{what} panicked: {}", msg.unwrap_or_default()))
        }
    }
}

fn table(rows: &[Row]) {
    println!("| op | n | cuzk ms, median (min-max; calls) | peer ms, median (min-max; calls) | cuzk/peer (medians) | note |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        r.print();
    }
}

/// At 2^12, sppark's NN transforms in all four directions against cuzk's CPU backend, and a
/// 2^12 MSM against the CPU: whether the conventions (root, coset shift, scaling, layouts)
/// agree, so that a difference in the large rows can be told from a convention.
fn conventions(failures: &mut Vec<String>) -> Result<()> {
    let before = failures.len();
    let n = 1 << 12;
    let input = random_scalars(n, 99);
    for dir in [NttDirection::Forward, NttDirection::Inverse, NttDirection::CosetForward, NttDirection::CosetInverse] {
        let mut want = input.clone();
        CpuBackend.ntt(&mut want, dir)?;
        let mut got = input.clone();
        sppark_ntt_host(&mut got, dir)?;
        if got != want {
            failures.push(format!("convention: sppark's NN {dir:?} NTT at 2^12 differs from cuzk's CPU backend"));
        }
    }
    let bases = cuzk_groth16::shape::random_points::<G1Projective>(n, 98, 0);
    let scalars = random_scalars(n, 97);
    let want = CpuBackend.msm_g1(&bases, Selection::All, &scalars)?;
    let got = SpparkMsm::new(&bases)?.run(&scalars)?;
    if got != want {
        failures.push("convention: sppark's MSM at 2^12 differs from cuzk's CPU backend".into());
    }
    if failures.len() == before {
        println!("conventions: at 2^12 sppark's natural-order NTT (forward, inverse, coset forward, coset inverse) and MSM equal cuzk's CPU backend");
    } else {
        for f in &failures[before..] {
            println!("MISMATCH: {f}");
        }
    }
    Ok(())
}

fn ntt_rows(gpu: &GpuBackend, args: &Args, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    for &log_n in &args.ntt_logs {
        let n = 1usize << log_n;
        let input = random_scalars(n, log_n as u64);
        let dirs: &[NttDirection] = if args.all_directions {
            &[NttDirection::Forward, NttDirection::Inverse, NttDirection::CosetForward, NttDirection::CosetInverse]
        } else {
            &[NttDirection::Forward]
        };
        for &dir in dirs {
            // cuzk: the warm-up call transforms the input; the timed calls transform its output
            // again (an NTT's cost does not depend on the values).
            let mut cz = input.clone();
            let mut kernels = Vec::new();
            let mut first = true;
            let mut cuzk_out = Vec::new();
            let (_, cuzk_t) = timed(args.rounds, || {
                gpu.ntt(&mut cz, dir)?;
                if first {
                    cuzk_out = cz.clone();
                    first = false;
                } else {
                    kernels.push(gpu.last_report().timings.kernels);
                }
                Ok(())
            })?;
            let kern = Stats::of(kernels);
            drop(cz);
            let mut sp = input.clone();
            let mut first = true;
            let mut equal = true;
            let (_, sp_t) = timed(args.rounds, || {
                sppark_ntt_host(&mut sp, dir)?;
                if first {
                    equal = sp == cuzk_out;
                    first = false;
                }
                Ok(())
            })?;
            drop(sp);
            let mut res = input.clone();
            let sp_kern = sppark_ntt_resident(&mut res, dir, args.rounds)?;
            let equal_res = res == cuzk_out;
            drop(res);
            let verdict = if equal && equal_res { "equal" } else { "DIFFER (the peer's time not counted)" };
            if !(equal && equal_res) {
                failures.push(format!("NTT {dir:?} 2^{log_n}: host {equal}, resident {equal_res}"));
            }
            eprintln!(
                "NTT {dir:?} 2^{log_n}: cuzk {} ms (kernels {}), sppark {} ms (resident kernels {}), {verdict}",
                cuzk_t.cell(),
                kern.cell(),
                sp_t.cell(),
                sp_kern.cell()
            );
            rows.push(Row {
                op: format!("NTT {dir:?}, host to host"),
                n: format!("2^{log_n}"),
                cuzk: Some(cuzk_t),
                peer: (equal && equal_res).then_some(sp_t),
                note: format!("sppark NTT::Base (NN); outputs {verdict}"),
            });
            rows.push(Row {
                op: format!("NTT {dir:?}, kernels"),
                n: format!("2^{log_n}"),
                cuzk: Some(kern),
                peer: (equal && equal_res).then_some(sp_kern),
                note: format!(
                    "cuzk: kernel events of its host-to-host call; sppark: Base_dev_ptr on resident data (NN); outputs {verdict}"
                ),
            });
        }
    }
    Ok(())
}

fn msm_rows(gpu: &GpuBackend, args: &Args, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    let Some(&max) = args.msm_logs.iter().max() else { return Ok(()) };
    let t = Instant::now();
    let bases: Vec<G1Affine> = cuzk_groth16::shape::random_points::<G1Projective>(1 << max, 1, 0);
    eprintln!("2^{max} random G1 bases in {:.1} s", t.elapsed().as_secs_f64());
    for &log_n in &args.msm_logs {
        let n = 1usize << log_n;
        let b = &bases[..n];
        let t = Instant::now();
        let sp = SpparkMsm::new(b)?;
        let sp_upload = t.elapsed();
        for (label, scalars) in [
            ("random", random_scalars(n, 2 + log_n as u64)),
            ("PoRep-like", porep_scalars(n, 3 + log_n as u64)),
        ] {
            // cuzk's warm-up call uploads the bases (resident afterwards).
            let t = Instant::now();
            let want = gpu.msm_g1(b, Selection::All, &scalars)?;
            let first = t.elapsed();
            let (_, cuzk_t) = timed(args.rounds, || Ok(gpu.msm_g1(b, Selection::All, &scalars)?))?;
            let (got, sp_t) = timed(args.rounds, || sp.run(&scalars))?;
            let equal = got == want;
            let verdict = if equal { "equal" } else { "DIFFER (the peer's time not counted)" };
            if !equal {
                failures.push(format!("MSM G1 {label} 2^{log_n}"));
            }
            eprintln!("MSM G1 {label} 2^{log_n}: cuzk {} ms, sppark {} ms, {verdict}", cuzk_t.cell(), sp_t.cell());
            rows.push(Row {
                op: format!("MSM G1 {label}"),
                n: format!("2^{log_n}"),
                cuzk: Some(cuzk_t),
                peer: equal.then_some(sp_t),
                note: format!(
                    "bases resident, scalars from host; points {verdict}; first calls (bases up): cuzk {:.0} ms, sppark msm_t {:.0} ms",
                    ms(first),
                    ms(sp_upload)
                ),
            });
        }
        drop(sp);
    }
    Ok(())
}

/// Removes a file when dropped (the --shape parameter file: tens of GB of the device's disk).
pub(crate) struct RemoveOnDrop(pub(crate) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_summary_line_is_read_per_partition() {
        let out = "call 1: 230.0 ms\nsupraseal-c2: 2 partition(s) per call, median 426.6 ms (416.6-457.6) over 5 warm calls: 213.3 ms per partition\n";
        let s = Stats::of_printed(out, 2).expect("parsed");
        let tenths = |d: Duration| (ms(d) * 10.0).round() as u64;
        assert_eq!((tenths(s.median), tenths(s.min), tenths(s.max), s.n), (2133, 2083, 2288, 5));
        assert!(Stats::of_printed("no summary here", 1).is_none());
    }
}
