//! Padding a witness vector to the H step's domain, the ways the prover could do it: what a
//! `Vec::resize` past the capacity costs for a vector advised onto huge pages (the
//! allocator cannot `mremap` it and copies it on one thread), against
//! `hugepages::grow_zeroed` past the capacity (a new vector filled by the rayon threads) and
//! within it (synthesis now leaves room: `hugepages::domain_capacity`), and a plain
//! vector's `resize` (moved by mremap). Each result is checked (values kept, zeros after).
//!
//!     cargo run --release -p cuzk-groth16 --example grow_bench -- [LEN] [ROUNDS]
//!
//! LEN defaults to a 32 GiB partition's constraints (130,278,869: 4 GiB of scalars, padded
//! to 2^27); use a smaller one on a small machine.

use std::time::{Duration, Instant};

use cuzk_groth16::hugepages::{domain_capacity, grow_zeroed, kernel_setting, set_enabled, vec_with_capacity};

type S = [u64; 4];

fn filled(len: usize, capacity: usize, advised: bool) -> Vec<S> {
    set_enabled(advised);
    let mut v: Vec<S> = vec_with_capacity(capacity);
    set_enabled(true);
    use rayon::prelude::*;
    v.par_extend((0..len as u64).into_par_iter().map(|i| [i, 1, 2, 3]));
    v
}

fn check(v: &[S], len: usize, n: usize) {
    assert_eq!(v.len(), n);
    assert!(v[..len].iter().enumerate().all(|(i, x)| *x == [i as u64, 1, 2, 3]), "values lost");
    assert!(v[len..].iter().all(|x| *x == [0; 4]), "tail not zero");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let len: usize = args.next().map_or(130_278_869, |a| a.parse().expect("LEN"));
    let rounds: usize = args.next().map_or(2, |a| a.parse().expect("ROUNDS"));
    let n = domain_capacity(len);
    println!(
        "grow_bench: {len} scalars ({:.2} GiB) padded to {n}; {} cores; transparent huge pages [{}]; best of {rounds}",
        (len * 32) as f64 / (1u64 << 30) as f64,
        std::thread::available_parallelism().map_or(1, |c| c.get()),
        kernel_setting()
    );
    let ways: [(&str, usize, bool, bool); 4] = [
        ("advised, capacity = len, Vec::resize (synthesis before this change)", len, true, false),
        ("advised, capacity = len, grow_zeroed", len, true, true),
        ("advised, capacity = domain, grow_zeroed (synthesis now)", n, true, true),
        ("not advised, capacity = len, Vec::resize (a clone, as shape-bench's)", len, false, false),
    ];
    for (name, capacity, advised, grow) in ways {
        let mut best = Duration::MAX;
        for _ in 0..rounds {
            let mut v = filled(len, capacity, advised);
            let t = Instant::now();
            if grow {
                grow_zeroed(&mut v, n, [0; 4]);
            } else {
                v.resize(n, [0; 4]);
            }
            best = best.min(t.elapsed());
            check(&v, len, n);
        }
        println!("  {name}: {:.1} ms", best.as_secs_f64() * 1e3);
    }
}
