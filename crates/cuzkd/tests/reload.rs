//! Live reload for real: cuzkd started with a NOTIFY_SOCKET the test owns, its configuration
//! file changed while a WinningPoSt proof runs, then SIGHUP (what `systemctl reload` sends).
//! The daemon sends RELOADING=1 with MONOTONIC_USEC=, then READY=1 with the outcome in
//! STATUS=; the new host memory budget, worker count and log level are in force (metrics),
//! the restart-only key is named, the running proof completes and verifies; a broken file
//! changes nothing and the daemon goes on.

mod common;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, ensure_kind_fixtures};
use cuzk_proto::v1::{await_proof_response::Status, *};
use cuzk_proto::{connect, Address, DEFAULT_MAX_MESSAGE_BYTES};


/// The READY=1 message after a RELOADING=1 (a reload's whole story).
fn reload_story(sock: &UnixDatagram) -> String {
    let mut seen = String::new();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        seen.push_str(&notifications(sock, "READY=1", Duration::from_secs(1)));
        if let Some(at) = seen.find("RELOADING=1") {
            if seen[at..].contains("READY=1") {
                return seen[at..].to_string();
            }
        }
    }
    panic!("no RELOADING=1 then READY=1 in {seen:?}")
}

async fn metrics(addr: &Address) -> String {
    let mut c = connect(addr, DEFAULT_MAX_MESSAGE_BYTES).await.expect("connects");
    c.get_metrics(GetMetricsRequest {}).await.expect("GetMetrics answers").into_inner().prometheus_text
}

fn sighup(pid: u32) {
    assert!(Command::new("kill").args(["-HUP", &pid.to_string()]).status().unwrap().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_live_settings_while_a_proof_runs() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let k = ensure_kind_fixtures(&f.dir, 2048).expect("2 KiB kind fixtures");
    let dir = scratch("reload");
    let sock = dir.join("cuzk.sock");
    let cfg = dir.join("cuzk.toml");
    let base = format!(
        "[daemon]\nstate_dir = {:?}\nlisten = \"unix://{}\"\n[srs]\nparam_cache = {:?}\nparent_cache = {:?}\n\
         [dbus]\nbus = \"none\"\n[log]\ntarget = \"stderr\"\n",
        dir.join("state"),
        sock.display(),
        f.param_dir(),
        f.parent_dir()
    );
    std::fs::write(&cfg, format!("{base}level = \"info\"\n[gpus]\nbackend = \"cpu\"\n[engine]\nhost_memory_budget_bytes = 8589934592\n")).unwrap();
    let notify_path = dir.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    let log = dir.join("cuzkd.log");
    let child = Command::new(env!("CARGO_BIN_EXE_cuzkd"))
        .arg("--config")
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &notify_path)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("cuzkd starts");
    let pid = child.id();
    let _daemon = Killed(child);
    let got = notifications(&notify, "READY=1", Duration::from_secs(30));
    assert!(got.contains("READY=1"), "no READY=1: {got:?}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    let addr: Address = format!("unix://{}", sock.display()).parse().unwrap();
    let m = metrics(&addr).await;
    assert!(m.contains("cuzk_host_memory_budget_bytes 8589934592"), "{m}");
    assert_eq!(m.lines().filter(|l| l.starts_with("cuzk_worker_busy{")).count(), 1, "{m}");

    // A proof in flight across the reload.
    let submit = SubmitProofRequest {
        request_id: "winpost-across-reload".into(),
        proof_kind: ProofKind::WinningPost as i32,
        registered_proof: k.winning.registered_proof,
        vanilla_proofs: k.winning.vanilla_proofs.clone(),
        miner_id: k.winning.miner_id,
        randomness: k.winning.randomness.clone(),
        ..Default::default()
    };
    let a = addr.clone();
    let proof = tokio::spawn(async move {
        let mut c = connect(&a, DEFAULT_MAX_MESSAGE_BYTES).await.unwrap();
        c.prove(ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap()
    });

    // Live keys and one restart-only key (the listen address).
    std::fs::write(
        &cfg,
        format!(
            "{}level = \"debug\"\n[gpus]\nbackend = \"cpu\"\ngpu_workers_per_device = 2\n[engine]\nhost_memory_budget_bytes = 6442450944\n",
            base.replace("cuzk.sock", "moved.sock")
        ),
    )
    .unwrap();
    sighup(pid);
    let story = reload_story(&notify);
    assert!(story.contains("MONOTONIC_USEC="), "{story}");
    for want in [
        "host_memory_budget_bytes: 8589934592 -> 6442450944",
        "workers on cpu: 1 -> 2",
        "log.level: \"info\" -> \"debug\"",
        "needs a restart to change: daemon.listen",
    ] {
        assert!(story.contains(want), "{want} not in {story}");
    }
    let m = metrics(&addr).await;
    assert!(m.contains("cuzk_host_memory_budget_bytes 6442450944"), "{m}");
    assert_eq!(m.lines().filter(|l| l.starts_with("cuzk_worker_busy{")).count(), 2, "{m}");
    assert!(!dir.join("moved.sock").exists(), "a restart-only key was applied");

    let r = proof.await.unwrap();
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert_eq!(r.proof.len(), 192);

    // A file that does not parse: nothing changes, the reason is in STATUS=, cuzkd serves on.
    std::fs::write(&cfg, format!("{base}[engine]\nhost_memory_budget_bytes = -1\n")).unwrap();
    sighup(pid);
    let story = reload_story(&notify);
    assert!(story.contains("reload failed") && story.contains("host_memory_budget_bytes"), "{story}");
    let m = metrics(&addr).await;
    assert!(m.contains("cuzk_host_memory_budget_bytes 6442450944"), "{m}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("SIGHUP: reloaded:") && text.contains("keeps its running value until a restart: daemon.listen"), "{text}");
}
