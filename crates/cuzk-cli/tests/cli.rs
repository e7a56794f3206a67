//! The `cuzk-bench` binary (the shipped client), run for real on the 2 KiB fixture (generated
//! on first use and cached, see cuzk-filecoin's fixture module): prove, its failures, and the
//! client's command line before a daemon is reached (tests/daemon_client.rs has the daemon).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, Fixture};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk-bench"))
        .args(args)
        .output()
        .expect("cuzk-bench runs")
}

fn fixture() -> Fixture {
    ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cuzk-bench-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn prove_writes_a_verified_proof_and_prints_stage_timings() {
    let f = fixture();
    let out = scratch("prove").join("proof.bin");
    let o = bench(&[
        "prove", "--c1", s(&f.envelope_path()), "--param-cache", s(&f.param_dir()),
        "--backend", "cpu", "--out", s(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for stage in ["synthesis", "ntt / h", "msm h", "msm l", "msm a", "msm b_g1", "msm b_g2", "assembly", "verification"] {
        assert!(stdout.contains(stage), "no {stage} timing in:\n{stdout}");
    }
    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192);
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    assert!(cuzk_filecoin::verify_porep_c2(&c1.output, f.identity(), &proof).unwrap());
}

#[test]
fn missing_and_truncated_parameter_files_fail_clearly() {
    let f = fixture();
    let empty = scratch("no-params");
    let out = empty.join("proof.bin");
    let o = bench(&["prove", "--c1", s(&f.c1_path()), "--param-cache", s(&empty), "--out", s(&out)]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("parameter file") && e.contains(".params") && e.contains("No such file"), "{e}");
    assert!(!out.exists(), "a proof file was written on failure");

    let trunc = scratch("truncated-params");
    let real = f.param_dir().join(&f.info.params_file);
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(trunc.join(&f.info.params_file), &bytes[..bytes.len() / 3]).unwrap();
    let o = bench(&["prove", "--c1", s(&f.c1_path()), "--param-cache", s(&trunc), "--out", s(&out)]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("is truncated") && e.contains(&f.info.params_file), "{e}");
}

#[test]
fn bad_c1_and_unavailable_backend_fail_clearly() {
    let f = fixture();
    let dir = scratch("bad-c1");
    let empty = dir.join("empty.json");
    std::fs::write(&empty, b"").unwrap();
    let out = dir.join("proof.bin");
    let o = bench(&["prove", "--c1", s(&empty), "--param-cache", s(&f.param_dir()), "--out", s(&out)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("C1 input is empty"), "{}", stderr(&o));

    let o = bench(&["prove", "--c1", s(&dir.join("nope.json")), "--param-cache", s(&f.param_dir()), "--out", s(&out)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope.json"), "{}", stderr(&o));

    let o = bench(&[
        "prove", "--c1", s(&f.envelope_path()), "--param-cache", s(&f.param_dir()), "--backend", "gpu", "--out", s(&out),
    ]);
    // On a machine without a GPU (CI) the reason is named; with one, the GPU proves.
    if o.status.success() {
        println!("a GPU is present: --backend gpu proved");
    } else {
        let e = stderr(&o);
        assert!(e.contains("GPU backend unavailable") && (e.contains("no CUDA") || e.contains("built without GPU kernels")), "{e}");
    }
}

/// The client's command line before any daemon is reached: `-t` refuses an unknown kind
/// naming the four; `-a` before the subcommand is taken, the `--input` read (the run then
/// fails only at connecting); a missing `--input` and an input of another kind are refused by
/// name (no test fixture is ever a default for a real request).
#[test]
fn batch_command_line_kinds_inputs_and_address() {
    let o = bench(&["batch", "-t", "bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bogus") && e.contains("porep, snap, wpost and winning"), "{e}");

    let k = cuzk_filecoin::fixture::ensure_kind_fixtures(&default_fixture_dir(2048), 2048).expect("2 KiB kind fixtures");
    let none = scratch("no-daemon").join("none.sock");
    let addr = format!("unix://{}", none.display());
    for (kind, file) in [("snap", "snap"), ("wpost", "window"), ("winning", "winning")] {
        let input = k.dir.join(format!("kinds/{file}.json"));
        let o = bench(&["-a", &addr, "batch", "-t", kind, "-c", "1", "--input", s(&input)]);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("is it running") && e.contains("none.sock"), "-t {kind}: {e}");
        let o = bench(&["-a", &addr, "batch", "-t", kind, "-c", "1"]);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains(&format!("-t {kind} needs --input PATH")), "-t {kind}: {e}");
    }
    let winning = k.dir.join("kinds/winning.json");
    let o = bench(&["-a", &addr, "single", "-t", "wpost", "--input", s(&winning)]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("winning.json") && e.contains("\"winning\" input") && e.contains("-t wpost"), "{e}");
    let o = bench(&["-a", &addr, "batch", "-t", "porep"]);
    assert!(!o.status.success() && stderr(&o).contains("needs --c1"), "{}", stderr(&o));
}
