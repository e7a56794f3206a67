//! `cuzk-lab msm-plan`: the floors and costs of the H MSM's levers (issue #35) and the
//! plan's choices, from the plan's own functions (`cuzk_gpu::choose_multiples`,
//! `modeled_ms`, `multiples_room`): no GPU, nothing measured here. Per window width: bucket
//! additions, bucket memory, the scatter's cursors and open write fronts, the VRAM one more
//! copy of the bases takes; then per budget the room beside the resident parameters and an
//! H step, and the width and copies the plan takes there. The model's times are estimates
//! from phase times measured on the H200 (msm/plan.rs names them), for choosing.

use anyhow::{bail, Result};

/// One device budget: its name, its VRAM budget and what stays resident there.
struct Budget {
    name: &'static str,
    budget: usize,
    resident: usize,
}

const GIB: usize = 1 << 30;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// log2 of the MSM's points (27: the 32 GiB partition's H MSM).
    #[arg(long, default_value_t = 27)]
    pub log_n: u32,
    /// The resident parameters' bytes in GiB on budgets that hold them (44.1: the 32 GiB
    /// partition's points, as the H200 runs report).
    #[arg(long, default_value_t = 44.1)]
    pub params_gib: f64,
}

pub fn run(args: &Args) -> Result<()> {
    if !(10..=31).contains(&args.log_n) {
        bail!("--log-n {}: expected 10 to 31", args.log_n);
    }
    let n = (1usize << args.log_n) - 1;
    let bases = 1usize << args.log_n;
    let params = (args.params_gib * GIB as f64) as usize;
    let gib = |b: usize| b as f64 / GIB as f64;
    println!("H MSM of 2^{} - 1 points over resident G1 bases (96 bytes each; a copy {:.1} GiB)", args.log_n, gib(bases * 96));
    println!();
    println!("| c | windows | bucket additions | buckets per set | bucket memory per set | cursors (all sets) | open write fronts (all sets) | model: one pass | model: a pass per set |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in 12..=22u32 {
        let w = 256u32.div_ceil(c);
        let half = 1usize << (c - 1);
        println!(
            "| {c} | {w} | {:.2}e9 | {half} | {:.0} MiB | {:.1} MiB | {:.0} MiB | {:.0} ms | {:.0} ms |",
            n as f64 * w as f64 / 1e9,
            (half * 192) as f64 / (1 << 20) as f64,
            (w as usize * (half + 1) * 4) as f64 / (1 << 20) as f64,
            (w as usize * half * 32) as f64 / (1 << 20) as f64,
            cuzk_gpu::modeled_ms(n, c, 1, w),
            cuzk_gpu::modeled_ms(n, c, 1, 1),
        );
    }
    let budgets = [
        Budget { name: "H200, full budget (125.4 GiB: 90% of free memory)", budget: (125.4 * GIB as f64) as usize, resident: params },
        Budget { name: "H100, full budget (about 71 GiB)", budget: 71 * GIB, resident: params },
        Budget { name: "24 GB card (about 20 GiB; the parameters do not stay)", budget: 20 * GIB, resident: 0 },
        Budget { name: "vram_budget_bytes 14 GiB", budget: 14 * GIB, resident: 0 },
    ];
    println!();
    println!("| budget | resident | room for multiples | choice, one pass | choice, a pass per set |");
    println!("|---|---|---|---|---|");
    for b in budgets {
        let room = cuzk_gpu::multiples_room(b.budget, b.resident, n);
        let pick = |per_set: bool| {
            let p = cuzk_gpu::choose_multiples(n, n, bases, 96, 16, room, per_set, None, 16);
            format!("c = {}, {} copies ({:.1} GiB), model {:.0} ms", p.c, p.per, gib(p.bytes), p.modeled_ms)
        };
        println!("| {} | {:.1} GiB | {:.1} GiB | {} | {} |", b.name, gib(b.resident), gib(room), pick(false), pick(true));
    }
    println!();
    println!("today (c = 16, one set per window, one pass): model {:.0} ms (an estimate; measured 1056 ms of kernels on the H200)", cuzk_gpu::modeled_ms(n, 16, 1, 16));
    Ok(())
}
