//! cuzk-peers: cuzk's GPU MSM and NTT against sppark's, and cuzk's 2 KiB PoRep partition proof
//! against supraseal-c2's, in one process, on the same inputs (issue #9). A bench only.
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
//! - PoRep: partition 0 of the fixture's 2 KiB C1 output, synthesized once by cuzk-filecoin,
//!   proved by cuzk (GPU backend) and by supraseal-c2 from the same `.params` file with the
//!   same r and s: the proofs must be byte-identical, and supraseal's must verify.

use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use clap::Parser;
use cuzk_gpu::{GpuBackend, VramBudget};
use cuzk_groth16::{Backend, CpuBackend, NttDirection, PartitionWitness, Proof, Selection};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

#[derive(Parser, Debug)]
#[command(about = "cuzk against sppark (MSM, NTT) and supraseal-c2 (2 KiB PoRep proof), same data, one process: a bench only")]
struct Args {
    /// NTT sizes (log2), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "20,24,26,27")]
    ntt_logs: Vec<u32>,
    /// MSM sizes (log2), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "20,24,26")]
    msm_logs: Vec<u32>,
    /// Timed rounds per row (best taken), after one warm-up call.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Sizes 2^20 and 2^24 only, 2 rounds.
    #[arg(long)]
    quick: bool,
    /// Also time the inverse and both coset NTTs (at every size; forward only otherwise,
    /// the four directions being checked at 2^12 regardless).
    #[arg(long)]
    all_directions: bool,
    /// The 2 KiB fixture (`cuzk-bench gen-fixture --sector-size 2KiB --out DIR`); made
    /// there if missing (minutes).
    #[arg(long, default_value = "/tmp/fx/2KiB")]
    fixture_dir: PathBuf,
    /// Leave out the MSM and NTT rows.
    #[arg(long)]
    no_sppark: bool,
    /// Leave out the PoRep proof against supraseal-c2.
    #[arg(long)]
    no_porep: bool,
    /// cuzk's device memory budget in GiB (the rest is left to sppark and supraseal-c2).
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
    /// cuzk's device memory budget in GiB for --shape (the whole device by default: cuzk
    /// proves first, then gives the device back before supraseal-c2 starts).
    #[arg(long)]
    shape_vram_gib: Option<usize>,
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
    fn peers_ntt_resident(inout: *mut Scalar, lg_n: u32, inverse: i32, coset: i32, rounds: u32, best_ms: *mut f32) -> CError;
    fn free(p: *mut c_void);
}

/// The device's free memory as the driver reports it, printed before supraseal-c2's calls:
/// its MSMs do not report a failed allocation (they would give a partial sum).
fn print_free_memory(when: &str) {
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
/// transforms of the resident buffer; the fastest, kernels only.
fn sppark_ntt_resident(v: &mut [Scalar], dir: NttDirection, rounds: usize) -> Result<Duration> {
    let (inv, coset) = flags(dir);
    let mut ms = -1.0f32;
    check(
        unsafe { peers_ntt_resident(v.as_mut_ptr(), v.len().trailing_zeros(), inv, coset, rounds as u32, &mut ms) },
        "NTT::Base_dev_ptr",
    )?;
    Ok(Duration::from_secs_f64(ms.max(0.0) as f64 / 1e3))
}

// ---- inputs ----

fn rng(seed: u64) -> ChaCha20Rng {
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

/// One call to warm up (its result returned), then the fastest of `rounds` calls.
fn best<T>(rounds: usize, mut f: impl FnMut() -> Result<T>) -> Result<(T, Duration)> {
    let first = f()?;
    let mut b = Duration::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        f()?;
        b = b.min(t.elapsed());
    }
    Ok((first, b))
}

/// cuzk's proof of `w` (the warm-up call's) and its best time over `rounds` more calls; each
/// call consumes a copy of the witness, made outside the timing. `log`: each call's time
/// and its H step and H MSM.
fn cuzk_rounds(
    gpu: &GpuBackend,
    srs: &cuzk_groth16::Srs,
    w: &PartitionWitness,
    r: Scalar,
    s: Scalar,
    rounds: usize,
    log: bool,
) -> Result<(Proof, Duration)> {
    let run = |round: usize| -> Result<(Proof, Duration)> {
        let copy = w.clone();
        let t = Instant::now();
        let (p, timings) = cuzk_groth16::prove(gpu, srs, copy, r, s)?;
        let el = t.elapsed();
        if log {
            println!("  cuzk round {round}: {:.1} ms (H step {:.1}, H MSM {:.1} ms)", ms(el), ms(timings.ntt_h), ms(timings.msm_h));
        }
        Ok((p, el))
    };
    let (proof, _) = run(0)?;
    let mut b = Duration::MAX;
    for round in 1..=rounds {
        b = b.min(run(round)?.1);
    }
    Ok((proof, b))
}

struct Row {
    op: String,
    n: String,
    cuzk: Duration,
    peer: Duration,
    note: String,
}

impl Row {
    fn print(&self) {
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {} |",
            self.op,
            self.n,
            ms(self.cuzk),
            ms(self.peer),
            self.cuzk.as_secs_f64() / self.peer.as_secs_f64().max(1e-9),
            self.note
        );
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
    println!("  random or PoRep-like scalars, random NTT inputs); the PoRep row proves the 2 KiB fixture. cuzk and the peer");
    println!("  get the same inputs in the same process and their results are compared; best of {} after one warm-up.", args.rounds);
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
        gpu.release_caches()?;
        if !args.no_porep {
            // Printed now too, in case the supraseal-c2 part dies in its C++ code.
            println!("\nsppark rows so far:");
            table(&rows);
        }
    }
    if !args.no_porep {
        guarded("PoRep against supraseal-c2", &mut failures, |f| porep_rows(&gpu, &args, &mut rows, f));
    }
    if let Some(name) = &args.shape {
        drop(gpu);
        guarded(&format!("{name} shape against supraseal-c2"), &mut failures, |f| shape_rows(name, &args, &mut rows, f));
    }

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
fn guarded(what: &str, failures: &mut Vec<String>, part: impl FnOnce(&mut Vec<String>) -> Result<()>) {
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
    println!("| op | n | cuzk ms | peer ms | cuzk/peer | note |");
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
            let mut kern = Duration::MAX;
            let mut first = true;
            let mut cuzk_out = Vec::new();
            let (_, cuzk_t) = best(args.rounds, || {
                gpu.ntt(&mut cz, dir)?;
                if first {
                    cuzk_out = cz.clone();
                    first = false;
                } else {
                    kern = kern.min(gpu.last_report().timings.kernels);
                }
                Ok(())
            })?;
            drop(cz);
            let mut sp = input.clone();
            let mut first = true;
            let mut equal = true;
            let (_, sp_t) = best(args.rounds, || {
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
            let verdict = if equal && equal_res { "equal" } else { "DIFFER" };
            if !(equal && equal_res) {
                failures.push(format!("NTT {dir:?} 2^{log_n}: host {equal}, resident {equal_res}"));
            }
            eprintln!("NTT {dir:?} 2^{log_n}: cuzk {:.2} ms (kernels {:.2}), sppark {:.2} ms (resident kernels {:.2}), {verdict}", ms(cuzk_t), ms(kern), ms(sp_t), ms(sp_kern));
            rows.push(Row {
                op: format!("NTT {dir:?}, host to host"),
                n: format!("2^{log_n}"),
                cuzk: cuzk_t,
                peer: sp_t,
                note: format!("sppark NTT::Base (NN); outputs {verdict}"),
            });
            rows.push(Row {
                op: format!("NTT {dir:?}, kernels"),
                n: format!("2^{log_n}"),
                cuzk: kern,
                peer: sp_kern,
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
            let (want, cuzk_t) = best(args.rounds, || Ok(gpu.msm_g1(b, Selection::All, &scalars)?))?;
            let first = t.elapsed().saturating_sub(cuzk_t * args.rounds as u32);
            let (got, sp_t) = best(args.rounds, || sp.run(&scalars))?;
            let equal = got == want;
            let verdict = if equal { "equal" } else { "DIFFER" };
            if !equal {
                failures.push(format!("MSM G1 {label} 2^{log_n}"));
            }
            eprintln!("MSM G1 {label} 2^{log_n}: cuzk {:.2} ms, sppark {:.2} ms, {verdict}", ms(cuzk_t), ms(sp_t));
            rows.push(Row {
                op: format!("MSM G1 {label}"),
                n: format!("2^{log_n}"),
                cuzk: cuzk_t,
                peer: sp_t,
                note: format!(
                    "bases resident, scalars from host; points {verdict}; first calls (bases up): cuzk <= {:.0} ms, sppark msm_t {:.0} ms",
                    ms(first),
                    ms(sp_upload)
                ),
            });
        }
        drop(sp);
    }
    Ok(())
}

/// supraseal-c2's proof as its C++ side writes it: affine A, B, C in blst's layout.
#[repr(C)]
#[derive(Clone, Copy)]
struct SupraProof {
    a: G1Affine,
    b: G2Affine,
    c: G1Affine,
}

/// A density as supraseal-c2 reads it: 64-bit words, bit i in word i / 64 at i % 64.
fn words(d: &cuzk_groth16::Density) -> Vec<u64> {
    let mut w = vec![0u64; d.len().div_ceil(64).max(1)];
    for i in 0..d.len() {
        if d.get(i) {
            w[i / 64] |= 1 << (i % 64);
        }
    }
    w
}

fn supraseal_prove(w: &PartitionWitness, srs: &supraseal_c2::SRS, r: Scalar, s: Scalar) -> Proof {
    let (a_aux, b_inp, b_aux) = (words(&w.a_aux_density), words(&w.b_input_density), words(&w.b_aux_density));
    let assignment = supraseal_c2::Assignment::<Scalar> {
        a_aux_density: a_aux.as_ptr() as *const usize,
        a_aux_bit_len: w.a_aux_density.len(),
        a_aux_popcount: w.a_aux_density.total(),
        b_inp_density: b_inp.as_ptr() as *const usize,
        b_inp_bit_len: w.b_input_density.len(),
        b_inp_popcount: w.b_input_density.total(),
        b_aux_density: b_aux.as_ptr() as *const usize,
        b_aux_bit_len: w.b_aux_density.len(),
        b_aux_popcount: w.b_aux_density.total(),
        a: w.a.as_ptr(),
        b: w.b.as_ptr(),
        c: w.c.as_ptr(),
        abc_size: w.a.len(),
        inp_assignment_data: w.input_assignment.as_ptr(),
        inp_assignment_size: w.input_assignment.len(),
        aux_assignment_data: w.aux_assignment.as_ptr(),
        aux_assignment_size: w.aux_assignment.len(),
    };
    let mut out = [SupraProof { a: G1Affine::default(), b: G2Affine::default(), c: G1Affine::default() }];
    // Panics with the CUDA error on failure.
    supraseal_c2::generate_groth16_proofs(&[assignment], &[r], &[s], &mut out, srs);
    Proof { a: out[0].a, b: out[0].b, c: out[0].c }
}

fn porep_rows(gpu: &GpuBackend, args: &Args, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    use cuzk_filecoin::fixture::ensure_fixture;
    let t = Instant::now();
    let f = ensure_fixture(&args.fixture_dir, 2048).with_context(|| format!("2 KiB fixture in {}", args.fixture_dir.display()))?;
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path())?)?;
    let job = cuzk_filecoin::PoRepJob::new(&c1)?;
    let params = f.param_dir().join(&f.info.params_file);
    let srs = cuzk_groth16::Srs::load(&params)?;
    eprintln!("2 KiB fixture and cuzk's SRS ready in {:.1} s ({} partition(s))", t.elapsed().as_secs_f64(), job.partitions());
    let t = Instant::now();
    let supra_srs = supraseal_c2::SRS::try_new(params.clone(), true).map_err(|e| anyhow::anyhow!("supraseal-c2 SRS {}: {e}", params.display()))?;
    let supra_load = t.elapsed();

    let mut witnesses = Vec::new();
    for k in 0..job.partitions() {
        witnesses.push(job.synthesize(k)?.0);
    }
    let w0 = &witnesses[0];
    println!(
        "PoRep 2 KiB partition 0: {} constraints, {} inputs, {} aux; {} .params; same r, s for both provers",
        w0.num_constraints(),
        w0.input_assignment.len(),
        w0.aux_assignment.len(),
        params.display()
    );
    let mut r = rng(0x2c2);
    let blinding: Vec<(Scalar, Scalar)> = (0..witnesses.len()).map(|_| (Scalar::random(&mut r), Scalar::random(&mut r))).collect();
    let (r0, s0) = blinding[0];

    let (cuzk_proof, cuzk_best) = cuzk_rounds(gpu, &srs, w0, r0, s0, args.rounds, false)?;
    print_free_memory("before supraseal-c2's 2 KiB proofs");
    let (supra_proof, supra_best) = best(args.rounds, || Ok(supraseal_prove(w0, &supra_srs, r0, s0)))?;
    let identical = cuzk_proof.to_bytes() == supra_proof.to_bytes();
    println!(
        "PoRep proofs with the same r, s: cuzk {} supraseal-c2 -> {}",
        hex(&cuzk_proof.to_bytes()[..16]),
        if identical { "BYTE-IDENTICAL" } else { "DIFFERENT" }
    );
    if !identical {
        failures.push(format!(
            "PoRep proof: cuzk {} supraseal {}",
            hex(&cuzk_proof.to_bytes()),
            hex(&supra_proof.to_bytes())
        ));
    }

    // supraseal-c2's proofs, all partitions, through filecoin-proofs' verify_seal.
    let supra_all: Vec<Proof> = witnesses.iter().zip(&blinding).map(|(w, &(r, s))| supraseal_prove(w, &supra_srs, r, s)).collect();
    // What the comparison rests on: supraseal-c2's later call gives its first call's proof,
    // the witness is what synthesis gives after all the provers' calls, and (one partition)
    // cuzk's own proof passes the same verification.
    let repeat_same = supra_all[0].to_bytes() == supra_proof.to_bytes();
    let fresh = job.synthesize(0)?.0;
    let unchanged = fresh.a == w0.a && fresh.b == w0.b && fresh.c == w0.c && fresh.aux_assignment == w0.aux_assignment && fresh.input_assignment == w0.input_assignment;
    println!("supraseal-c2's later call on partition 0 gives its first proof: {repeat_same}; partition 0's witness equal to a fresh synthesis after the calls: {unchanged}");
    if !repeat_same || !unchanged {
        failures.push(format!("supraseal-c2 repeat identical {repeat_same}, witness unchanged {unchanged}"));
    }
    if witnesses.len() == 1 {
        let cuzk_verified = job.finish(std::slice::from_ref(&cuzk_proof), f.identity());
        println!("cuzk's 2 KiB PoRep proof (GPU, the same r, s) through the same verification: {:?}", cuzk_verified.as_ref().map(|_| "verifies"));
        if let Err(e) = cuzk_verified {
            failures.push(format!("cuzk's PoRep proof does not verify: {e}"));
        }
    }
    let verified = match job.finish(&supra_all, f.identity()) {
        Ok(_) => "verifies (filecoin-proofs verify_seal)".to_string(),
        Err(e) => {
            failures.push(format!("supraseal-c2's PoRep proof does not verify: {e}"));
            format!("DOES NOT VERIFY: {e}")
        }
    };
    println!("supraseal-c2's 2 KiB PoRep proof {verified}");
    rows.push(Row {
        op: "2 KiB PoRep partition proof (after synthesis)".into(),
        n: format!("{} constraints", w0.num_constraints()),
        cuzk: cuzk_best,
        peer: supra_best,
        note: format!(
            "supraseal-c2 generate_groth16_proofs, same witness and r, s; proofs {}; supraseal's {verified}; its SRS load {:.0} ms",
            if identical { "byte-identical" } else { "DIFFERENT" },
            ms(supra_load)
        ),
    });
    Ok(())
}

/// `--shape`: one partition of a PoRep shape, cuzk (its own GPU backend, whole device by
/// default) then supraseal-c2 from a .params file written out of the same random parameters,
/// same witness and r, s. Shape-only inputs: the proofs cannot verify, and must be equal.
fn shape_rows(name: &str, args: &Args, rows: &mut Vec<Row>, failures: &mut Vec<String>) -> Result<()> {
    use cuzk_groth16::shape::{random_srs, shape_witness, PartitionShape, WitnessMix};
    let shape = PartitionShape::parse(name).map_err(anyhow::Error::msg)?;
    println!("\n{name} PoRep partition shape: SHAPE-ONLY INPUTS (random parameters, a drawn witness): these proofs cannot verify");
    let t = Instant::now();
    let c1_path = match &args.mix_c1 {
        Some(p) => p.clone(),
        None => cuzk_filecoin::fixture::ensure_fixture(&args.fixture_dir, 2048)
            .with_context(|| format!("2 KiB fixture in {} (for the scalar mix)", args.fixture_dir.display()))?
            .c1_path(),
    };
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(&c1_path).with_context(|| format!("reading {}", c1_path.display()))?)?;
    let mix = WitnessMix::of(&cuzk_filecoin::PoRepJob::new(&c1)?.synthesize(0)?.0);
    let witness = shape_witness(&shape, &mix, 0x5eed);
    let srs_shape = cuzk_groth16::prover::required_shape(&witness);
    let srs = random_srs(&srs_shape, 0x5eed);
    println!(
        "witness ({} constraints) and random parameters {:?} ({:.1} GB of points) in {:.1} s",
        witness.num_constraints(),
        srs_shape,
        srs_shape.point_bytes() as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    std::fs::create_dir_all(&args.shape_dir).with_context(|| format!("creating {}", args.shape_dir.display()))?;
    let path = args.shape_dir.join(format!("porep-shape-{}.params", name.replace('^', "p")));
    // Removed on every exit, a failed write (a full disk) included.
    let _remove = RemoveOnDrop(path.clone());
    let t = Instant::now();
    let bytes = srs.write_params(&path)?;
    println!("parameter file {} ({:.1} GB) written in {:.1} s", path.display(), bytes as f64 / 1e9, t.elapsed().as_secs_f64());
    let (r, s) = (Scalar::from(0x5eedu64), Scalar::from(0xb1d5u64));

    // cuzk first, on the whole device (or --shape-vram-gib), then the device is given back.
    let budget = args.shape_vram_gib.map_or(VramBudget::FractionOfFree(0.9), |g| VramBudget::Bytes(g << 30));
    let gpu = GpuBackend::open(0, budget).context("cuzk's GPU backend did not open")?;
    let (cuzk_proof, cuzk_best) = cuzk_rounds(&gpu, &srs, &witness, r, s, args.rounds, true)?;
    drop(gpu);
    drop(srs);

    let t = Instant::now();
    let supra_srs = supraseal_c2::SRS::try_new(path.clone(), true).map_err(|e| anyhow::anyhow!("supraseal-c2 SRS {}: {e}", path.display()))?;
    let supra_load = t.elapsed();
    println!("supraseal-c2 read the parameter file in {:.1} s", supra_load.as_secs_f64());
    print_free_memory(&format!("before supraseal-c2's {name} proofs (cuzk's backend dropped)"));
    let (supra_proof, supra_best) = best(args.rounds, || Ok(supraseal_prove(&witness, &supra_srs, r, s)))?;
    let identical = cuzk_proof.to_bytes() == supra_proof.to_bytes();
    println!("{name} shape proofs with the same r, s: {}", if identical { "BYTE-IDENTICAL" } else { "DIFFERENT" });
    if !identical {
        failures.push(format!("{name} shape proof: cuzk {} supraseal {}", hex(&cuzk_proof.to_bytes()), hex(&supra_proof.to_bytes())));
    }
    rows.push(Row {
        op: format!("PoRep partition proof, {name} shape (after synthesis; shape-only, cannot verify)"),
        n: format!("{} constraints", witness.num_constraints()),
        cuzk: cuzk_best,
        peer: supra_best,
        note: format!(
            "supraseal-c2 generate_groth16_proofs from the same parameters written to a .params file, same witness and r, s; proofs {}; its parameter read {:.1} s",
            if identical { "byte-identical" } else { "DIFFERENT" },
            supra_load.as_secs_f64()
        ),
    });
    Ok(())
}

/// Removes a file when dropped (the --shape parameter file: tens of GB of the device's disk).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
