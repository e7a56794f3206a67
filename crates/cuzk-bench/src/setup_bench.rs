//! `setup-bench`: cuzk's parameter setup against bellperson's generator on the circuits the
//! fixtures make parameters for, in the same process, with the same toxic waste: each
//! round's `.params` and `.vk` bytes are compared with the reference's, and the table
//! prints the reference's time over ours. Timed: recording the circuit and making every
//! point (each generator's own), not writing the files.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::fixture::{fixture_circuits, CircuitSink, FixtureCircuit};
use cuzk_groth16::progress::{step, Prefixed, Progress};
use cuzk_groth16::setup::{setup_circuit, ToxicWaste};
use rand::SeedableRng;

#[derive(clap::Args)]
pub struct Args {
    /// The PoRep proof's sector size (its fixture's circuits).
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// The NI-PoRep circuit instead of the interactive PoRep's.
    #[arg(long)]
    pub ni_porep: bool,
    /// Also the WinningPoSt, WindowPoSt and SnapDeals circuits of that size.
    #[arg(long)]
    pub kinds: bool,
    /// Rounds of cuzk's setup per circuit.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Rounds of bellperson's generator per circuit (0: none; each is minutes at 2 KiB).
    #[arg(long, default_value_t = 1)]
    pub reference_rounds: usize,
    /// Only the circuits whose label (the registered proof, e.g. StackedDrgWindow2KiBV1_2)
    /// contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Where the parameter files of each round are written and compared (removed after).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

struct Row {
    label: String,
    constraints: usize,
    ours: Vec<Duration>,
    theirs: Vec<Duration>,
    equal: Option<bool>,
}

struct Bench<'a> {
    args: &'a Args,
    dir: PathBuf,
    progress: &'a dyn Progress,
    rows: Vec<Row>,
}

fn secs(d: &[Duration]) -> String {
    let mut v: Vec<f64> = d.iter().map(Duration::as_secs_f64).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => "-".into(),
        1 => format!("{:.1} s (1 round)", v[0]),
        n => format!("{:.1} s (min {:.1}, max {:.1}, {n} rounds)", v[n / 2], v[0], v[n - 1]),
    }
}

fn median(d: &[Duration]) -> Option<f64> {
    let mut v: Vec<f64> = d.iter().map(Duration::as_secs_f64).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl CircuitSink for Bench<'_> {
    fn circuit<C: bellperson::Circuit<blstrs::Scalar>>(&mut self, c: FixtureCircuit<'_, C>) -> Result<()> {
        if self.args.only.as_ref().is_some_and(|o| !c.label.contains(o.as_str())) {
            return Ok(());
        }
        let (params, vk) = (self.dir.join("round.params"), self.dir.join("round.vk"));
        let mut row = Row { label: c.label.clone(), constraints: 0, ours: Vec::new(), theirs: Vec::new(), equal: None };
        for round in 0..self.args.rounds.max(self.args.reference_rounds).max(1) {
            // The same waste for both generators in a round, another in each round.
            let waste = ToxicWaste::random(&mut rand_chacha::ChaCha20Rng::seed_from_u64(round as u64));
            let labelled = Prefixed { inner: self.progress, prefix: format!("{} round {}: ", c.label, round + 1) };
            let s = setup_circuit((c.blank)(), &waste, &params, &vk, &labelled)?;
            if round < self.args.rounds {
                row.ours.push(s.record + s.points);
            }
            row.constraints = s.constraints;
            println!(
                "{} round {}: cuzk {:.2} s (recording {:.2} s, points {:.2} s); {} constraints, {} inputs, {} aux",
                c.label,
                round + 1,
                (s.record + s.points).as_secs_f64(),
                s.record.as_secs_f64(),
                s.points.as_secs_f64(),
                s.constraints,
                s.inputs,
                s.aux
            );
            if round < self.args.reference_rounds {
                let t = Instant::now();
                let name = format!("{} round {}: bellperson's generator (no progress of its own)", c.label, round + 1);
                let reference = step(self.progress, &name, || {
                    bellperson::groth16::generate_parameters::<blstrs::Bls12, _>(
                        (c.blank)(), waste.g1, waste.g2, waste.alpha, waste.beta, waste.gamma, waste.delta, waste.tau,
                    )
                })
                .context("bellperson's generator")?;
                let took = t.elapsed();
                row.theirs.push(took);
                let (mut p, mut v) = (Vec::new(), Vec::new());
                reference.write(&mut p)?;
                reference.vk.write(&mut v)?;
                let equal = std::fs::read(&params)? == p && std::fs::read(&vk)? == v;
                row.equal = Some(row.equal.unwrap_or(true) && equal);
                println!(
                    "{} round {}: bellperson {:.2} s; .params and .vk bytes {}",
                    c.label,
                    round + 1,
                    took.as_secs_f64(),
                    if equal { "equal" } else { "DIFFER" }
                );
                if !equal {
                    bail!("{}: cuzk's parameters differ from bellperson's for the same toxic waste", c.label);
                }
            }
        }
        let _ = std::fs::remove_file(&params);
        let _ = std::fs::remove_file(&vk);
        self.rows.push(row);
        Ok(())
    }
}

/// Peak resident memory of this process so far (VmHWM).
fn peak_rss_gib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb / (1 << 20) as f64)
}

pub fn run(args: &Args, progress: &dyn Progress) -> Result<()> {
    let size = cuzk_filecoin::fixture::parse_sector_size(&args.sector_size)?;
    let proof = if args.ni_porep {
        match size {
            2048 => cuzk_filecoin::fixture::NI_POREP_2KIB,
            _ => bail!("the NI-PoRep circuit is benched at 2KiB only"),
        }
    } else {
        cuzk_filecoin::fixture::fixture_proof(size)?
    };
    let dir = match &args.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("cuzk-setup-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    println!(
        "setup-bench: {proof:?}{}, cuzk {} round(s), bellperson {} round(s) per circuit, {} threads",
        if args.kinds { " and its PoSt and SnapDeals circuits" } else { "" },
        args.rounds,
        args.reference_rounds,
        rayon::current_num_threads()
    );
    let mut bench = Bench { args, dir: dir.clone(), progress, rows: Vec::new() };
    let done = fixture_circuits(proof, args.kinds, &mut bench);
    if args.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    done?;
    if bench.rows.is_empty() {
        bail!("no circuit's label contains {:?}", args.only.as_deref().unwrap_or(""));
    }
    println!();
    println!("| circuit | constraints | cuzk setup (median) | bellperson | bellperson / cuzk | bytes equal |");
    println!("|---|---|---|---|---|---|");
    for r in &bench.rows {
        let ratio = match (median(&r.theirs), median(&r.ours)) {
            (Some(t), Some(o)) => format!("{:.1}x", t / o),
            _ => "-".into(),
        };
        let equal = r.equal.map_or("not compared", |e| if e { "yes" } else { "NO" });
        println!("| {} | {} | {} | {} | {ratio} | {equal} |", r.label, r.constraints, secs(&r.ours), secs(&r.theirs));
    }
    let total = |f: fn(&Row) -> Option<f64>| bench.rows.iter().map(f).sum::<Option<f64>>();
    if let (Some(o), Some(t)) = (total(|r| median(&r.ours)), total(|r| median(&r.theirs))) {
        println!("| all | | {o:.1} s | {t:.1} s | {:.1}x | |", t / o);
    } else if let Some(o) = total(|r| median(&r.ours)) {
        println!("| all | | {o:.1} s | | | |");
    }
    if let Some(gib) = peak_rss_gib() {
        println!("peak host RSS over the whole run (both generators): {gib:.2} GiB");
    }
    Ok(())
}
