//! The `cuzk-lab` binary (the lab, not shipped), run for real on the 2 KiB fixture (generated
//! on first use and cached, see cuzk-filecoin's fixture module): its benches on the CPU
//! backend at tiny shapes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, Fixture};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk-lab"))
        .args(args)
        .output()
        .expect("cuzk-lab runs")
}

fn fixture() -> Fixture {
    ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cuzk-lab-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// CI's run of the shape bench: a tiny shape on the CPU backend through the prover's own
/// path, the scalar mix measured on the real 2 KiB witness, every stage timed and nothing
/// outside a stage; a shape it cannot make is refused by name.
#[test]
fn shape_bench_runs_a_tiny_shape_on_the_cpu_and_refuses_unknown_shapes() {
    let f = fixture();
    let o = bench(&["shape-bench", "--shape", "2^12", "--backend", "cpu", "--mix-c1", s(&f.c1_path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SHAPE-ONLY INPUTS") && stdout.contains("cannot verify"), "{stdout}");
    assert!(stdout.contains("shape-only: nothing made with them verifies) made on the host in"), "{stdout}");
    for part in ["a ", "b ", "c ", "aux"] {
        assert!(stdout.lines().any(|l| l.trim_start().starts_with(part) && l.contains("% zero")), "no {part} mix in:\n{stdout}");
    }
    for stage in ["h step", "msm h", "scalar split", "msm l", "msm a", "msm b_g1", "msm b_g2", "assembly", "wall of prove()"] {
        assert!(stdout.contains(stage), "no {stage} in:\n{stdout}");
    }
    let uncounted: f64 = stdout
        .lines()
        .find(|l| l.contains("in no stage"))
        .and_then(|l| l.split_whitespace().rev().nth(1)?.parse().ok())
        .expect("an 'in no stage' line");
    assert!(uncounted < 5.0, "{uncounted} ms of prove() in no stage:\n{stdout}");

    // Parameters written into a spill file as they are made: the same proof path.
    let spill = scratch("shape-spill");
    let o = bench(&["shape-bench", "--shape", "2^12", "--backend", "cpu", "--rounds", "1", "--host-release-dir", s(&spill), "--mix-c1", s(&f.c1_path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("made on the host in") && stdout.contains("written slice by slice to an unlinked spill file in"), "{stdout}");
    assert!(stdout.contains("wall of prove()"), "{stdout}");
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "the spill file is unlinked");
    std::fs::remove_dir_all(&spill).ok();

    // The split alone: one row per pool size, the same counts in each.
    let o = bench(&["shape-bench", "--shape", "2^12", "--split-only", "1,2", "--rounds", "1", "--mix-c1", s(&f.c1_path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(rows[0][4..], rows[1][4..], "counts differ between pool sizes:\n{stdout}");
    assert!(!stdout.contains("random parameters of shape"), "--split-only makes no parameters:\n{stdout}");

    let o = bench(&["shape-bench", "--shape", "64GiB", "--backend", "cpu"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("shape \"64GiB\""), "{}", stderr(&o));
    let o = bench(&["shape-bench", "--shape", "2^12", "--budgets", "14 potatoes"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("budget \"14 potatoes\""), "{}", stderr(&o));
}

/// `engine-bench` on the CPU backend: shape-only inputs through the engine on one and two
/// devices, one made to fail; a real C1 is refused (real inputs go through the daemon,
/// verified); each kind's shape-only input, a WinningPoSt as the urgent job beside SnapDeals,
/// and a mixed load.
#[test]
fn engine_bench_runs_a_shape_only_job_through_the_engine_and_refuses_real_inputs() {
    let f = fixture();
    let dir = scratch("engine-bench");
    let o = bench(&["gen-fixture", "--sector-size", "2KiB", "--shape-only", "--out", s(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c1 = dir.join("c1.shape-only.json");
    // A PoRep's report through the engine is checked in the shape-params test (from a
    // parameter file; here it would be the same proof again). The device runs below take the 2 KiB WinningPoSt (one partition, as the PoRep's): the
    // devices' scheduling is the same for every kind, and its proofs take 3 s on 2 cores
    // where the PoRep's took 73 s and 42 s for these two runs.
    let winning = dir.join("kinds/winning.shape-only.json");
    // One device, then two (CPU backends here, GPUs 0 and 1 on a GPU host), in one run: two
    // proofs on two devices go one to each, and the throughput is compared.
    let o = bench(&["engine-bench", "--input", s(&winning), "--proofs", "2", "--backend", "cpu", "--devices", "1,2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let two = stdout.split("--- 2 device(s)").nth(1).unwrap_or_else(|| panic!("no two-device run in:\n{stdout}"));
    for part in ["on cpu0", "on cpu1", "device cpu0: 1 partitions", "device cpu1: 1 partitions", "2 device(s) against 1: steady state per proof"] {
        assert!(two.contains(part), "no {part:?} in the two-device run:\n{stdout}");
    }
    // Device 1 fails at its first call: its partition is proved again on device 0, both
    // jobs complete, and device 1 is reported unhealthy.
    let o = bench(&["engine-bench", "--input", s(&winning), "--proofs", "2", "--backend", "cpu", "--devices", "2", "--fail-device", "1", "--fail-after", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for part in [
        "cpu1: made to fail after 0 backend calls",
        "device cpu1: healthy false, 1 device failure(s), last: ",
        "cpu backend unavailable: injected failure",
        "device cpu0: healthy true, 0 device failure(s)",
        "3 prove() attempts for 2 partitions (1 proved again after a device failure); device cpu1 marked unhealthy",
    ] {
        assert!(stdout.contains(part), "no {part:?} in:\n{stdout}");
    }
    let o = bench(&["engine-bench", "--c1", s(&c1), "--backend", "cpu", "--vram-budget", "14"]);
    assert!(!o.status.success() && stderr(&o).contains("give `full` or a size in GiB or MiB"), "{}", stderr(&o));
    let o = bench(&["engine-bench", "--c1", s(&c1), "--backend", "cpu", "--devices", "0"]);
    assert!(!o.status.success() && stderr(&o).contains("0 devices cannot prove"), "{}", stderr(&o));
    let o = bench(&["engine-bench", "--c1", s(&f.c1_path()), "--backend", "cpu"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("takes shape-only inputs"), "{}", stderr(&o));
    // The shape-only C1 in lotus-bench's envelope (written for upstream cuzk) is named as such.
    let o = bench(&["engine-bench", "--c1", s(&dir.join("c1.shape-only.envelope.json")), "--backend", "cpu"]);
    assert!(!o.status.success() && stderr(&o).contains("a lotus-bench envelope") && stderr(&o).contains("c1.shape-only.json"), "{}", stderr(&o));
    // Every kind's shape-only input through the engine, its parameters' shape from its own
    // circuit; then SnapDeals proofs with a WinningPoSt as the urgent job beside them.
    // (SnapDeals proves in the second run only: a 2 KiB SnapDeals proof takes 30 s on the
    // CPU backend of a 2-core machine.)
    for (kind, name) in [("winning", "WinningPost"), ("window", "WindowPostPartition")] {
        let input = dir.join(format!("kinds/{kind}.shape-only.json"));
        let o = bench(&["engine-bench", "--input", s(&input), "--proofs", "1", "--backend", "cpu"]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        for part in [&format!("{name} ("), "compiled circuit recorded", "G job 0 partition  0", "GiB of parameters the bench holds", "peak host RSS"] {
            assert!(stdout.contains(part), "{kind}: no {part:?} in:\n{stdout}");
        }
    }
    let snap = dir.join("kinds/snap.shape-only.json");
    let o = bench(&[
        "engine-bench", "--input", s(&snap), "--urgent-input", s(&winning), "--urgent", "1", "--urgent-every", "0", "--proofs", "1",
        "--backend", "cpu",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for part in [
        "SnapDealsUpdate (",
        "WinningPost (",
        "urgent job (1 partition(s)) alone on the idle engine",
        "urgent CRITICAL jobs while the main proofs ran",
    ] {
        assert!(stdout.contains(part), "no {part:?} in:\n{stdout}");
    }
    // A mixed load: WinningPoSt proofs with two WindowPoSt jobs beside them, each input's
    // times apart; a count missing or an input given twice is refused.
    let window = dir.join("kinds/window.shape-only.json");
    let beside = format!("2:{}", s(&window));
    let o = bench(&["engine-bench", "--input", s(&winning), "--beside", &beside, "--proofs", "1", "--backend", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for part in [
        "=== beside: WindowPostPartition (",
        "2 job(s) of 1 partition(s): request to proof ",
        "G beside 0 job 1 partition  0",
        "every job (main, beside, urgent): a device worker in prove()",
    ] {
        assert!(stdout.contains(part), "no {part:?} in:\n{stdout}");
    }
    let o = bench(&["engine-bench", "--input", s(&winning), "--beside", s(&window), "--backend", "cpu"]);
    assert!(!o.status.success() && stderr(&o).contains("give N:PATH"), "{}", stderr(&o));
    let twice = format!("1:{}", s(&winning));
    let o = bench(&["engine-bench", "--input", s(&winning), "--beside", &twice, "--backend", "cpu"]);
    assert!(!o.status.success() && stderr(&o).contains("its kind and sector size are"), "{}", stderr(&o));
    // The same input twice has nothing urgent about it.
    let o = bench(&["engine-bench", "--input", s(&snap), "--urgent-input", s(&snap), "--backend", "cpu"]);
    assert!(!o.status.success() && stderr(&o).contains("must differ from --c1 in kind or sector size"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

/// The real WindowPoSt circuit (storage-proofs' PoSt synthesizes another way in an
/// extensible constraint system: our setup must see the path bellperson's generator sees):
/// cuzk's setup and bellperson's, same toxic waste, bytes equal. Progress on stderr as
/// plain lines, since stderr is a pipe here.
#[test]
fn setup_bench_equals_bellperson_on_the_window_post_circuit_and_shows_progress_in_a_pipe() {
    let o = bench(&["setup-bench", "--kinds", "--only", "StackedDrgWindow2KiBV1_2", "--rounds", "1", "--reference-rounds", "1"]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("StackedDrgWindow2KiBV1_2 round 1: bellperson") && out.contains(".params and .vk bytes equal"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("| StackedDrgWindow2KiBV1_2 |") && l.ends_with("| yes |")), "{out}");
    for stage in ["recording the circuit: started", "G1 points: h: started (", "G2 points: b_g2: done in", "syncing to disk: done in"] {
        assert!(err.contains(&format!("StackedDrgWindow2KiBV1_2 round 1: {stage}")), "no {stage:?} in:\n{err}");
    }
    let none = bench(&["setup-bench", "--only", "NoSuchCircuit", "--reference-rounds", "0"]);
    assert!(!none.status.success());
    assert!(stderr(&none).contains("no circuit's label contains \"NoSuchCircuit\""), "{}", stderr(&none));
}

/// `shape-params` on the 2 KiB shape-only C1: random parameters of the circuit's exact shape
/// under filecoin-proofs' names (.params, .vk, .meta), which bellperson reads back, whose key
/// is the file's, and which engine-bench proves from (`--params-file`); a file of another
/// circuit is refused naming both shapes, and a real C1 is refused; a WinningPoSt kind
/// input's parameters take the real WinningPoSt file's name and shape.
#[test]
fn shape_params_writes_the_real_names_and_engine_bench_proves_from_them() {
    let f = fixture();
    let dir = scratch("shape-params");
    let o = bench(&["gen-fixture", "--sector-size", "2KiB", "--shape-only", "--out", s(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c1 = dir.join("c1.shape-only.json");
    // The lotus-bench envelope beside it holds the same C1 output.
    let bare = cuzk_filecoin::parse_c1(&std::fs::read(&c1).unwrap()).unwrap();
    let wrapped = cuzk_filecoin::parse_c1(&std::fs::read(dir.join("c1.shape-only.envelope.json")).unwrap()).expect("the envelope parses");
    assert_eq!(serde_json::to_vec(&bare.output).unwrap(), serde_json::to_vec(&wrapped.output).unwrap());
    let out = dir.join("params");
    let o = bench(&["shape-params", "--c1", s(&c1), "--out", s(&out), "--params-on", "host"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("RANDOM PARAMETERS (nothing proved with them verifies"));
    // The real fixture's parameter file has the same name (the same circuit).
    let params = out.join(f.info.params_file.clone());
    assert!(params.is_file(), "no {} in {:?}", params.display(), std::fs::read_dir(&out).unwrap().collect::<Vec<_>>());
    assert_eq!(cuzk_groth16::Srs::shape(&params).unwrap(), cuzk_groth16::Srs::shape(&f.param_dir().join(&f.info.params_file)).unwrap());
    let vk_bytes = std::fs::read(params.with_extension("vk")).unwrap();
    let vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&vk_bytes[..]).expect("bellperson reads the .vk");
    let file = std::fs::read(&params).unwrap();
    let full = bellperson::groth16::Parameters::<blstrs::Bls12>::read(&file[..], false).expect("bellperson reads the .params");
    assert!(full.vk == vk, "the .vk is not the .params file's key");
    assert_eq!(std::fs::read_to_string(params.with_extension("meta")).unwrap(), "{\"sector_size\":2048}");
    let o = bench(&["engine-bench", "--c1", s(&c1), "--proofs", "1", "--backend", "cpu", "--params-file", s(&params)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for part in [
        &format!("parameters read from {}", params.display())[..], "one proof in", "cold start: the first proof", "SHAPE-ONLY",
        "cannot verify", "S job 0 partition  0", "G job 0 partition  0", "192 bytes", "GPU busy", "prove() stages",
        "peak host RSS",
    ] {
        assert!(stdout.contains(part), "no {part:?} in:\n{stdout}");
    }
    // Another circuit's parameters (the WindowPoSt fixture's) are refused, both shapes named.
    let other = std::fs::read_dir(f.param_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("proof-of-spacetime") && p.extension().is_some_and(|e| e == "params"))
        .expect("a PoSt parameter file in the fixture");
    let o = bench(&["engine-bench", "--c1", s(&c1), "--proofs", "1", "--backend", "cpu", "--params-file", s(&other)]);
    assert!(!o.status.success() && stderr(&o).contains("parameters of shape SrsShape") && stderr(&o).contains("the circuit needs SrsShape"), "{}", stderr(&o));
    let o = bench(&["shape-params", "--c1", s(&f.c1_path()), "--out", s(&out)]);
    assert!(!o.status.success() && stderr(&o).contains("takes a shape-only input"), "{}", stderr(&o));
    // A kind input's parameters go under its proof type's name: the real WinningPoSt
    // fixture's file name, of the same shape; engine-bench proves the WinningPoSt from them.
    let winning = dir.join("kinds/winning.shape-only.json");
    let kout = dir.join("kind-params");
    let o = bench(&["shape-params", "--input", s(&winning), "--out", s(&kout), "--params-on", "host"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written: Vec<std::path::PathBuf> = std::fs::read_dir(&kout)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "params"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let real = f.param_dir().join(written[0].file_name().unwrap());
    assert!(real.is_file() && real.to_string_lossy().contains("proof-of-spacetime"), "{} is no fixture's PoSt parameter file", real.display());
    assert_eq!(cuzk_groth16::Srs::shape(&written[0]).unwrap(), cuzk_groth16::Srs::shape(&real).unwrap());
    let o = bench(&["engine-bench", "--input", s(&winning), "--proofs", "1", "--backend", "cpu", "--params-file", s(&written[0])]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("parameters read from {}", written[0].display())));
    std::fs::remove_dir_all(&dir).ok();
}
