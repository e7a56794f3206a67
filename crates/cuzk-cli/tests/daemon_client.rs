//! cuzk-bench as a client of a real cuzkd (run in-process on a unix socket, CPU backend):
//! `batch -t porep -c 2 -j 1` prints the operators' report and both proofs verify;
//! `batch -t winning|wpost|snap --input` proves the 2 KiB kind fixtures;
//! `status`, `metrics`, `preload` and `cancel` talk to the daemon and fail clearly; `status`
//! carries the bearer token a TCP listener wants.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

// cuzkd's tests pick ports the same way (self-connects, see there).
#[path = "../../cuzkd/tests/common/port.rs"]
mod port;

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzkd::config::{BackendChoice, Config};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk-bench")).args(args).output().expect("cuzk-bench runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A daemon for one test: defaults, CPU backend, the fixture's parameters, `state` in `dir`,
/// listening where `listen` says; run in-process on its own runtime until the sender fires.
type Daemon = (tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<anyhow::Result<()>>);

fn daemon(f: &cuzk_filecoin::fixture::Fixture, dir: &Path, listen: &str, change: impl FnOnce(&mut Config)) -> Daemon {
    let mut cfg = Config::default();
    cfg.daemon.listen = listen.to_string();
    cfg.daemon.state_dir = dir.join("state");
    cfg.srs.param_cache = f.param_dir();
    cfg.srs.parent_cache = Some(f.parent_dir());
    cfg.gpus.backend = BackendChoice::Cpu;
    change(&mut cfg);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        rt.block_on(cuzkd::run(cfg, async {
            let _ = stopped.await;
        }))
    });
    (stop, daemon)
}

#[test]
fn batch_status_metrics_preload_cancel_against_a_running_daemon() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = std::env::temp_dir().join(format!("cuzk-bench-daemon-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("cuzk.sock");
    let (stop, daemon) = daemon(&f, &dir, &format!("unix://{}", sock.display()), |_| {});
    let end = Instant::now() + Duration::from_secs(20);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sock.exists(), "cuzkd did not listen on {}", sock.display());
    let addr = format!("unix://{}", sock.display());
    let out_dir = dir.join("proofs");

    let o = bench(&[
        "batch", "-a", &addr, "-t", "porep", "--c1", f.envelope_path().to_str().unwrap(), "-c", "2", "-j", "1",
        "--out-dir", out_dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("=== Batch Benchmark ===\nproof type:  porep\ncount:       2\nconcurrency: 1\n\n  [1/2] COMPLETED — "),
        "{stdout}"
    );
    for want in [
        "\n  [2/2] COMPLETED — ", "(prove=", "\n\n=== Batch Summary ===\ntotal time:    ",
        "\ncompleted:     2\nfailed:        0\nwall time:     avg=", "\nprove time:    avg=", "\nthroughput:    ",
        " proofs/min (",
    ] {
        assert!(stdout.contains(want), "{want:?} missing from:\n{stdout}");
    }
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    for i in 0..2 {
        let proof = std::fs::read(out_dir.join(format!("proof-{i}.bin"))).unwrap();
        assert!(cuzk_filecoin::verify_porep_c2(&c1.output, f.identity(), &proof).unwrap(), "proof {i}");
    }

    let (stdout, _) = text(&bench(&["status", "-a", &addr]));
    assert!(stdout.contains("completed 2, failed 0"), "{stdout}");
    assert!(stdout.contains("no GPU: proving on the CPU"), "{stdout}");
    assert!(stdout.contains("porep-2k"), "resident parameters not listed:\n{stdout}");
    let (stdout, _) = text(&bench(&["metrics", "-a", &addr]));
    assert!(stdout.contains("cuzk"), "{stdout}");
    let o = bench(&["preload", "-a", &addr, "porep-2k"]);
    assert!(o.status.success() && text(&o).0.contains("porep-2k"), "{:?}", text(&o));
    let o = bench(&["preload", "-a", &addr, "porep-3k"]);
    assert!(!o.status.success() && text(&o).1.contains("porep-3k"), "{:?}", text(&o));
    let o = bench(&["cancel", "-a", &addr, "no-such-job"]);
    assert!(!o.status.success() && text(&o).1.contains("no-such-job"), "{:?}", text(&o));
    let o = bench(&["batch", "-a", &addr, "-t", "foo", "--c1", f.c1_path().to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).1.contains("unknown proof type"), "{:?}", text(&o));
    let o = bench(&["status", "-a", &format!("unix://{}", Path::new(&dir).join("none.sock").display())]);
    assert!(!o.status.success() && text(&o).1.contains("is it running"), "{:?}", text(&o));

    // The other kinds from the 2 KiB kind fixtures, `-a` before the subcommand (upstream's
    // place); each batch's request ids distinct, so every proof is proved.
    let k = cuzk_filecoin::fixture::ensure_kind_fixtures(&default_fixture_dir(2048), 2048).expect("2 KiB kind fixtures");
    for (kind, file, count) in [("winning", "winning", 2), ("wpost", "window", 2), ("snap", "snap", 1)] {
        let kind_dir = dir.join(kind);
        let input = k.dir.join(format!("kinds/{file}.json"));
        let o = bench(&[
            "-a", &addr, "batch", "-t", kind, "-c", &count.to_string(), "-j", "2", "--out-dir", kind_dir.to_str().unwrap(),
            "--input", input.to_str().unwrap(),
        ]);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "-t {kind}: {stdout}\n{stderr}");
        assert!(stdout.contains(&format!("proof type:  {kind}\n")), "{stdout}");
        assert!(stdout.contains(&format!("completed:     {count}\nfailed:        0\n")), "{stdout}");
        for i in 0..count {
            assert!(stdout.contains(&format!("  [{}/{count}] COMPLETED — ", i + 1)), "{stdout}");
            let proof = std::fs::read(kind_dir.join(format!("proof-{i}.bin"))).unwrap();
            assert!(!proof.is_empty() && proof.len() % 192 == 0, "-t {kind} proof {i}: {} bytes", proof.len());
        }
    }
    let (stdout, _) = text(&bench(&["-a", &addr, "status"]));
    assert!(stdout.contains("completed 7, failed 0"), "{stdout}");

    stop.send(()).unwrap();
    daemon.join().unwrap().expect("cuzkd drained and stopped cleanly");
}

/// `status` against a TCP listener that wants a bearer token (`[daemon.tcp] token_file`):
/// refused without it, answered with it from `CUZK_TOKEN_FILE` or `--token-file`.
#[test]
fn status_over_tcp_carries_the_token() {
    use std::os::unix::fs::PermissionsExt;
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = std::env::temp_dir().join(format!("cuzk-bench-tcp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "9a7e5c3b1d\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let addr = format!("127.0.0.1:{}", port::free_port());
    let (stop, daemon) = daemon(&f, &dir, &addr, |cfg| cfg.daemon.tcp.token_file = Some(token.clone()));
    let end = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(&addr).is_err() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }

    let o = bench(&["status", "-a", &addr]);
    assert!(!o.status.success() && text(&o).1.contains("Bearer"), "{:?}", text(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_cuzk-bench"))
        .args(["status", "-a", &addr])
        .env("CUZK_TOKEN_FILE", &token)
        .output()
        .unwrap();
    assert!(o.status.success() && text(&o).0.contains("uptime"), "{:?}", text(&o));
    let o = bench(&["status", "-a", &addr, "--token-file", token.to_str().unwrap()]);
    assert!(o.status.success() && text(&o).0.contains("uptime"), "{:?}", text(&o));

    stop.send(()).unwrap();
    daemon.join().unwrap().expect("cuzkd stopped cleanly");
    let _ = std::fs::remove_dir_all(&dir);
}
