//! What cuzkd's integration tests share: child processes that die with the test, scratch
//! directories, the 2 KiB fixture's request, and verification with filecoin-proofs.
#![allow(dead_code)] // each test binary uses its own part

use std::path::PathBuf;
use std::process::{Child, Command};

use cuzk_filecoin::fixture::Fixture;
use cuzk_proto::v1::{ProofKind, SubmitProofRequest};

mod port;
#[allow(unused_imports)] // not every test binary listens on TCP
pub use port::free_port;

/// A child process killed when the test ends, however it ends.
pub struct Killed(pub Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn which(program: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {program}")).output().is_ok_and(|o| o.status.success())
}

/// A fresh directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuzkd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture's sector as a PoRep request with id `id`.
pub fn porep_request(f: &Fixture, id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        miner_id: f.info.miner_id,
        sector_number: f.info.sector_id,
        sector_size: 2048,
        vanilla_proof: std::fs::read(f.envelope_path()).unwrap(),
        ..Default::default()
    }
}

/// Whether filecoin-proofs' verify_seal accepts `proof` for the fixture's sector.
pub fn verifies(f: &Fixture, proof: &[u8]) -> bool {
    let c1 = cuzk_filecoin::parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    cuzk_filecoin::verify_porep_c2(&c1.output, f.identity(), proof).unwrap()
}

/// Everything the daemon sent to the notify socket within `within`, until `until` is seen.
pub fn notifications(sock: &std::os::unix::net::UnixDatagram, until: &str, within: std::time::Duration) -> String {
    let end = std::time::Instant::now() + within;
    let mut all = String::new();
    let mut buf = [0u8; 4096];
    while std::time::Instant::now() < end && !all.contains(until) {
        sock.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
        if let Ok(n) = sock.recv(&mut buf) {
            all.push_str(&String::from_utf8_lossy(&buf[..n]));
            all.push('\n');
        }
    }
    all
}
