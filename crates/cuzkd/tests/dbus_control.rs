//! The D-Bus control interface for real: a private `dbus-daemon` started by the test, the
//! `cuzkd` binary on it (`[dbus] bus = "session"`), and `busctl --address=...` as the
//! operator's client. Introspection, properties, Pause/Resume, CancelJob on a queued job,
//! JobStateChanged signals seen by `busctl monitor`, errors named for unknown jobs. And a
//! daemon killed with SIGKILL in the middle of a proof: after a restart on the same state
//! directory the job runs again and its proof verifies.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, Fixture};
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};

/// A private session bus; its address for `busctl --address` and DBUS_SESSION_BUS_ADDRESS.
fn private_bus(dir: &Path) -> (Killed, String) {
    assert!(which("dbus-daemon"), "dbus-daemon is missing: apt-get install dbus-daemon");
    assert!(which("busctl"), "busctl is missing: apt-get install systemd");
    let address = format!("unix:path={}", dir.join("bus").display());
    let conf = dir.join("bus.conf");
    std::fs::write(
        &conf,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>{address}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#
        ),
    )
    .unwrap();
    let child = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", conf.display()))
        .arg("--nofork")
        .spawn()
        .expect("dbus-daemon starts");
    let sock = dir.join("bus");
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(sock.exists(), "dbus-daemon did not create {}", sock.display());
    (Killed(child), address)
}

fn busctl(address: &str, args: &[&str]) -> Output {
    Command::new("busctl").arg(format!("--address={address}")).args(args).output().expect("busctl runs")
}

/// `busctl` that must succeed; its stdout.
fn busctl_ok(address: &str, args: &[&str]) -> String {
    let o = busctl(address, args);
    assert!(o.status.success(), "busctl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

const OBJ: [&str; 3] = ["org.cuzk.Prover1", "/org/cuzk/Prover1", "org.cuzk.Prover1"];

fn property(address: &str, name: &str) -> String {
    busctl_ok(address, &["get-property", OBJ[0], OBJ[1], OBJ[2], name])
}

fn call(address: &str, method: &str, args: &[&str]) -> Output {
    let mut a = vec!["call", OBJ[0], OBJ[1], OBJ[2], method];
    a.extend_from_slice(args);
    busctl(address, &a)
}

fn config(dir: &Path, f: &Fixture, sock: &Path, bus: &str) -> PathBuf {
    let path = dir.join("cuzk.toml");
    std::fs::write(
        &path,
        format!(
            "[daemon]\nstate_dir = {:?}\nlisten = \"unix://{}\"\n[srs]\nparam_cache = {:?}\nparent_cache = {:?}\n\
             [gpus]\nbackend = \"cpu\"\n[dbus]\nbus = \"{bus}\"\n[log]\ntarget = \"stderr\"\n",
            dir.join("state"),
            sock.display(),
            f.param_dir(),
            f.parent_dir()
        ),
    )
    .unwrap();
    path
}

fn start_cuzkd(config: &Path, bus_address: Option<&str>, log: &Path) -> Killed {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzkd"));
    cmd.arg("--config").arg(config).stdout(Stdio::null()).stderr(std::fs::File::create(log).unwrap());
    if let Some(a) = bus_address {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", a);
    }
    Killed(cmd.spawn().expect("cuzkd starts"))
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn busctl_controls_the_daemon_and_receives_job_signals() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = scratch("dbus");
    let (_bus, bus) = private_bus(&dir);
    let sock = dir.join("cuzk.sock");
    let log = dir.join("cuzkd.log");
    let _daemon = start_cuzkd(&config(&dir, &f, &sock, "session"), Some(&bus), &log);
    let daemon_log = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("cuzkd's socket", Duration::from_secs(30), || sock.exists());
    wait_for("State = ready", Duration::from_secs(10), || {
        busctl(&bus, &["get-property", OBJ[0], OBJ[1], OBJ[2], "State"]).stdout.starts_with(b"s \"ready\"")
    });

    // Introspection shows the whole interface.
    let intro = busctl_ok(&bus, &["introspect", OBJ[0], OBJ[1], OBJ[2]]);
    for member in [
        ".Version", ".State", ".QueueDepth", ".RunningJobs", ".ProofsCompleted", ".ProofsFailed", ".Gpus", ".Devices",
        ".ListJobs", ".GetJob", ".CancelJob", ".PreloadSrs", ".EvictSrs", ".Pause", ".Resume", ".Reload",
        ".JobStateChanged",
    ] {
        assert!(intro.lines().any(|l| l.starts_with(&format!("{member} "))), "{member} missing from:\n{intro}");
    }
    assert_eq!(property(&bus, "Version"), format!("s \"{}\"", env!("CARGO_PKG_VERSION")));
    assert_eq!(property(&bus, "QueueDepth"), "u 0");
    assert_eq!(property(&bus, "Gpus"), "a(sttt) 0", "the CPU backend has no GPU memory to report");
    assert_eq!(property(&bus, "Devices"), "a(sbts) 1 \"cpu\" true 0 \"\"", "the CPU device, healthy");

    // Signals, as an operator's `busctl monitor` sees them.
    let monitor = Killed(
        Command::new("busctl")
            .arg(format!("--address={bus}"))
            .args(["monitor", "--json=short", "--match=type='signal',interface='org.cuzk.Prover1'"])
            .stdout(std::fs::File::create(dir.join("monitor.json")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("busctl monitor starts"),
    );
    std::thread::sleep(Duration::from_millis(500));

    // Paused: a submitted job stays queued; CancelJob over D-Bus removes it.
    assert!(call(&bus, "Pause", &[]).status.success());
    assert_eq!(property(&bus, "State"), "s \"paused\"");
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let mut client = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects");
    client.submit_proof(porep_request(&f, "queued-then-cancelled")).await.expect("SubmitProof");
    assert_eq!(property(&bus, "QueueDepth"), "u 1");
    let jobs = busctl_ok(&bus, &["call", OBJ[0], OBJ[1], OBJ[2], "ListJobs"]);
    assert_eq!(jobs, r#"a(sss) 1 "queued-then-cancelled" "porep-c2" "queued""#);
    let job = busctl_ok(&bus, &["call", OBJ[0], OBJ[1], OBJ[2], "GetJob", "s", "queued-then-cancelled"]);
    assert!(job.contains(r#""state" s "queued""#) && job.contains(r#""kind" s "porep-c2""#), "{job}");
    let cancelled = busctl_ok(&bus, &["call", OBJ[0], OBJ[1], OBJ[2], "CancelJob", "s", "queued-then-cancelled"]);
    assert_eq!(cancelled, r#"s "cancelled""#);
    let r = client
        .await_proof(AwaitProofRequest { job_id: "queued-then-cancelled".into(), timeout_ms: 10_000 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status, Status::Cancelled as i32, "{r:?}");

    // Unknown jobs and circuits are refused with named errors; the daemon stays up.
    let o = call(&bus, "CancelJob", &["s", "no-such-job"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no-such-job"), "{err}");
    let o = busctl(&bus, &["--json=short", "call", OBJ[0], OBJ[1], OBJ[2], "GetJob", "s", "no-such-job"]);
    assert!(!o.status.success(), "GetJob of an unknown id succeeded");
    let o = call(&bus, "PreloadSrs", &["s", "not-a-circuit"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("not-a-circuit"), "{err}");

    // Resumed: a real proof, with its state changes signalled, counted and verified.
    assert!(call(&bus, "Resume", &[]).status.success());
    assert_eq!(property(&bus, "State"), "s \"ready\"");
    let r = client
        .prove(ProveRequest { submit: Some(porep_request(&f, "proved")) })
        .await
        .expect("Prove answers")
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(verifies(&f, &r.proof), "the daemon's proof does not verify");
    assert_eq!(property(&bus, "ProofsCompleted"), "t 1");
    assert_eq!(property(&bus, "RunningJobs"), "u 0");

    std::thread::sleep(Duration::from_millis(500));
    drop(monitor);
    let signals: Vec<(String, String)> = std::fs::read_to_string(dir.join("monitor.json"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["member"] == "JobStateChanged")
        .map(|m| {
            let d = &m["payload"]["data"];
            (d[0].as_str().unwrap().to_string(), d[1].as_str().unwrap().to_string())
        })
        .collect();
    let of = |id: &str| signals.iter().filter(|s| s.0 == id).map(|s| s.1.as_str()).collect::<Vec<_>>();
    assert_eq!(of("queued-then-cancelled"), ["queued", "cancelled"], "{signals:?}");
    let proved = of("proved");
    assert_eq!(proved.first(), Some(&"queued"), "{signals:?}");
    assert_eq!(proved.last(), Some(&"completed"), "{signals:?}");
    assert!(proved.contains(&"proving"), "{signals:?}");

    // Reload(): a live key applied, a restart-only key named, both in the answer.
    let cfg_path = dir.join("cuzk.toml");
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    let changed = text.replace("[gpus]\n", "[gpus]\ngpu_workers_per_device = 2\n").replace("[daemon]\n", "[daemon]\nmax_message_bytes = 8388608\n");
    std::fs::write(&cfg_path, changed).unwrap();
    let answer = busctl_ok(&bus, &["call", OBJ[0], OBJ[1], OBJ[2], "Reload"]);
    assert!(answer.contains("workers on cpu: 1 -> 2"), "{answer}");
    assert!(answer.contains("daemon.max_message_bytes"), "{answer}");
    std::fs::write(&cfg_path, text + "[engine]\nno_such_key = 1\n").unwrap();
    let o = call(&bus, "Reload", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no_such_key") && err.contains("nothing changed"), "{err}");
    assert_eq!(property(&bus, "State"), "s \"ready\"");

    // The log carries the structured fields (journald gets them as JOB_ID=, STAGE=, ...).
    let text = daemon_log();
    assert!(text.contains("JOB_ID=proved") && text.contains("STAGE=\"completed\""), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_proof_then_restart_completes_the_job() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let dir = scratch("kill9");
    let (_bus, bus) = private_bus(&dir);
    let sock = dir.join("cuzk.sock");
    let cfg = config(&dir, &f, &sock, "session");
    let mut daemon = start_cuzkd(&cfg, Some(&bus), &dir.join("first.log"));
    wait_for("cuzkd's socket", Duration::from_secs(30), || sock.exists());
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let mut client = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects");
    let submitted = client.submit_proof(porep_request(&f, "survives-sigkill")).await.expect("SubmitProof").into_inner();
    assert_eq!(submitted.job_id, "survives-sigkill");

    // Wait until it is on the worker, then SIGKILL: no drain, no goodbye.
    wait_for("the job to be proving", Duration::from_secs(120), || {
        let o = call(&bus, "GetJob", &["s", "survives-sigkill"]);
        String::from_utf8_lossy(&o.stdout).contains(r#""state" s "proving""#)
    });
    daemon.0.kill().unwrap();
    daemon.0.wait().unwrap();
    drop(client);

    // Restarted on the same state directory, the job is there and runs to a verified proof.
    let _daemon = start_cuzkd(&cfg, Some(&bus), &dir.join("second.log"));
    let end = Instant::now() + Duration::from_secs(30);
    let mut client = loop {
        if let Ok(c) = connect(&addr, DEFAULT_MAX_MESSAGE_BYTES).await {
            if c.clone().get_status(GetStatusRequest {}).await.is_ok() {
                break c;
            }
        }
        assert!(Instant::now() < end, "restarted cuzkd does not answer");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let r = client
        .await_proof(AwaitProofRequest { job_id: "survives-sigkill".into(), timeout_ms: 600_000 })
        .await
        .expect("the job is known after the restart")
        .into_inner();
    assert_eq!(r.status, Status::Completed as i32, "{r:?}");
    assert!(verifies(&f, &r.proof), "the proof after restart does not verify");
    // Resubmitting the same id after the restart attaches to the stored result: one job.
    let again = client
        .prove(ProveRequest { submit: Some(porep_request(&f, "survives-sigkill")) })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(again.proof, r.proof);
    let status = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(status.total_proofs_completed, 1, "a duplicate id made a second job");
}
