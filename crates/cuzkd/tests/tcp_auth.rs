//! cuzkd's TCP listeners under `[daemon.tcp]`, with the real binary on the CPU backend (no
//! proofs): a bearer token refuses calls without it or with another one and admits the right
//! one, while the unix socket of the same daemon needs none; TLS with client certificates
//! refuses a client without a certificate or with one from another CA and admits one signed
//! by the configured CA; a TCP listener with neither does not start unless `insecure = true`,
//! which starts it with a warning.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::*;
use cuzk_proto::v1::GetStatusRequest;
use cuzk_proto::{connect, connect_with, Address, ClientAuth, DEFAULT_MAX_MESSAGE_BYTES};
use std::os::unix::fs::PermissionsExt;

/// A CPU-only, D-Bus-less configuration listening on `listen`, with `[daemon.tcp]` `tcp`.
fn config(dir: &Path, listen: &str, tcp: &str) -> PathBuf {
    let path = dir.join("cuzk.toml");
    std::fs::write(
        &path,
        format!(
            "[daemon]\nstate_dir = {:?}\nlisten = {listen:?}\n[daemon.tcp]\n{tcp}\n[srs]\nparam_cache = {:?}\n\
             [gpus]\nbackend = \"cpu\"\n[dbus]\nbus = \"none\"\n[log]\ntarget = \"stderr\"\n",
            dir.join("state"),
            dir.join("params"),
        ),
    )
    .unwrap();
    path
}

fn secret(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_path_buf()
}

/// `cuzkd --config config`, its stderr in `log`.
fn cuzkd(config: &Path, log: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzkd"));
    cmd.arg("--config").arg(config).stdout(Stdio::null()).stderr(std::fs::File::create(log).unwrap());
    cmd
}

/// GetStatus over `addr` as `auth`: its uptime, or what went wrong. Bounded: a connection the
/// daemon neither answers nor closes is an error of its own (`timed out`), never a hang.
async fn status(addr: &Address, auth: &ClientAuth) -> Result<u64, String> {
    let call = async {
        let mut client = connect_with(addr, DEFAULT_MAX_MESSAGE_BYTES, auth).await.map_err(|e| format!("connect: {e:?}"))?;
        let s = client.get_status(GetStatusRequest {}).await.map_err(|s| format!("{:?}: {}", s.code(), s.message()))?;
        Ok(s.into_inner().uptime_seconds)
    };
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .unwrap_or_else(|_| Err(format!("timed out: no answer and no close from {addr} within 20 s")))
}

/// Waits until the daemon answers GetStatus as `auth` over `addr`.
async fn until_answers(addr: &Address, auth: &ClientAuth, log: &Path) {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        match status(addr, auth).await {
            Ok(_) => return,
            Err(e) if Instant::now() > end => {
                panic!("cuzkd never answered at {addr}: {e}\n{}", std::fs::read_to_string(log).unwrap_or_default())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bearer_token_guards_tcp_and_the_unix_socket_needs_none() {
    assert!(which("systemd-socket-activate"), "systemd-socket-activate is missing: apt-get install systemd");
    let dir = scratch("tcp-token");
    let token = secret(&dir.join("token"), "3f1c0ffee\n");
    let config = config(&dir, &format!("unix://{}/unused.sock", dir.display()), &format!("token_file = {token:?}"));
    let sock = dir.join("cuzk.sock");
    let port = free_port();
    let log = dir.join("cuzkd.log");
    // A unix and a TCP socket from LISTEN_FDS, as cuzk.socket with services.cuzk.tcp passes.
    let _daemon = Killed(
        Command::new("systemd-socket-activate")
            .args(["-l", sock.to_str().unwrap(), "-l", &format!("127.0.0.1:{port}")])
            .arg(env!("CARGO_BIN_EXE_cuzkd"))
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let unix: Address = format!("unix://{}", sock.display()).parse().unwrap();
    until_answers(&unix, &ClientAuth::default(), &log).await;

    let tcp: Address = format!("127.0.0.1:{port}").parse().unwrap();
    let mut plain = connect(&tcp, DEFAULT_MAX_MESSAGE_BYTES).await.expect("TCP connects");
    let refused = plain.get_status(GetStatusRequest {}).await.expect_err("no token, no answer");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(refused.message().contains("Bearer"), "{refused:?}");

    let wrong = ClientAuth { token_file: Some(secret(&dir.join("wrong"), "3f1c0ffef\n")), ..Default::default() };
    let e = status(&tcp, &wrong).await.expect_err("another token, no answer");
    assert!(e.starts_with("Unauthenticated: wrong bearer token"), "{e}");

    let right = ClientAuth { token_file: Some(token), ..Default::default() };
    status(&tcp, &right).await.expect("the token admits GetStatus over TCP");
    status(&unix, &ClientAuth::default()).await.expect("the unix socket needs no token");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CA, and a certificate it signed for `names` (server) or for a client.
struct Issued {
    cert: String,
    key: String,
}

fn ca(name: &str) -> (rcgen::Issuer<'static, rcgen::KeyPair>, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (rcgen::Issuer::new(params, key), cert.pem())
}

fn issue(issuer: &rcgen::Issuer<'static, rcgen::KeyPair>, names: &[&str], usage: rcgen::ExtendedKeyUsagePurpose) -> Issued {
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.extended_key_usages = vec![usage];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    Issued { cert: cert.pem(), key: key.serialize_pem() }
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_with_client_certificates_admits_only_certified_clients() {
    use rcgen::ExtendedKeyUsagePurpose::{ClientAuth as Client, ServerAuth as Server};
    let dir = scratch("tcp-tls");
    let (issuer, ca_pem) = ca("cuzk test CA");
    let (stranger, stranger_pem) = ca("someone else's CA");
    let server = issue(&issuer, &["localhost", "127.0.0.1"], Server);
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let ca_file = write("ca.pem", &ca_pem);
    let cert = write("server.pem", &server.cert);
    let key = secret(&dir.join("server.key"), &server.key);
    let port = free_port();
    let config = config(
        &dir,
        &format!("127.0.0.1:{port}"),
        &format!("tls_cert = {cert:?}\ntls_key = {key:?}\ntls_client_ca = {ca_file:?}"),
    );
    let log = dir.join("cuzkd.log");
    let _daemon = Killed(cuzkd(&config, &log).spawn().unwrap());

    let tcp: Address = format!("127.0.0.1:{port}").parse().unwrap();
    let client = issue(&issuer, &["curio"], Client);
    let certified = ClientAuth {
        tls_ca: Some(ca_file.clone()),
        tls_cert: Some(write("client.pem", &client.cert)),
        tls_key: Some(secret(&dir.join("client.key"), &client.key)),
        ..Default::default()
    };
    until_answers(&tcp, &certified, &log).await;
    let daemon_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let ok = status(&tcp, &certified).await;
    assert!(ok.is_ok(), "a certificate from the configured CA admits GetStatus: {ok:?}\n{}", daemon_log());

    // Refused in the handshake: the connection is dropped, and the client learns it at connect
    // or (TLS 1.3) at its first call, as a transport error whose kind depends on timing
    // (cancelled, reset, h2 error); never a status from the service.
    // A connection left open is not a refusal.
    let dropped = |e: &str| !e.starts_with("Unauthenticated") && !e.starts_with("NotFound") && !e.starts_with("timed out");
    let anonymous = ClientAuth { tls_ca: Some(ca_file.clone()), ..Default::default() };
    let e = status(&tcp, &anonymous).await.expect_err("no client certificate, no answer");
    assert!(dropped(&e), "{e}\n{}", daemon_log());
    let outsider = issue(&stranger, &["mallory"], Client);
    let foreign = ClientAuth {
        tls_cert: Some(write("outsider.pem", &outsider.cert)),
        tls_key: Some(secret(&dir.join("outsider.key"), &outsider.key)),
        ..anonymous.clone()
    };
    let e = status(&tcp, &foreign).await.expect_err("a certificate from another CA, no answer");
    assert!(dropped(&e), "{e}\n{}", daemon_log());
    let e = status(&tcp, &ClientAuth::default()).await.expect_err("plain text to a TLS listener, no answer");
    assert!(dropped(&e), "{e}\n{}", daemon_log());
    // The client checks the daemon too: a CA that did not sign the daemon's certificate.
    let doubting = ClientAuth { tls_ca: Some(write("stranger.pem", &stranger_pem)), ..certified.clone() };
    let e = status(&tcp, &doubting).await.expect_err("a daemon certificate from another CA is refused by the client");
    assert!(e.contains("UnknownIssuer"), "{e}\n{}", daemon_log());
    let ok = status(&tcp, &certified).await;
    assert!(ok.is_ok(), "still serving after the refused handshakes: {ok:?}\n{}", daemon_log());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_without_credentials_starts_only_when_insecure() {
    let dir = scratch("tcp-insecure");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let log = dir.join("cuzkd.log");

    // [daemon] listen on TCP: refused with the config, before anything starts.
    let o = cuzkd(&config(&dir, &listen, ""), &log).status().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(o.code(), Some(2), "{err}");
    assert!(err.contains(&format!("TCP listener {listen} would serve anyone")) && err.contains("[daemon.tcp] token_file"), "{err}");

    // A TCP socket from systemd: refused when it is passed.
    assert!(which("systemd-socket-activate"), "systemd-socket-activate is missing: apt-get install systemd");
    let unused = format!("unix://{}/unused.sock", dir.display());
    let mut activated = Command::new("systemd-socket-activate")
        .args(["-l", &listen])
        .arg(env!("CARGO_BIN_EXE_cuzkd"))
        .arg("--config")
        .arg(config(&dir, &unused, ""))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&listen).is_err() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let exited = loop {
        if let Some(s) = activated.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end + Duration::from_secs(20), "cuzkd kept running with an unauthenticated TCP socket");
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(!exited.success(), "{err}");
    assert!(err.contains(&format!("TCP listener {listen} would serve anyone")) && err.contains("insecure = true"), "{err}");

    // insecure = true: it starts, says so, and answers anyone.
    let _daemon = Killed(cuzkd(&config(&dir, &listen, "insecure = true"), &log).spawn().unwrap());
    let tcp: Address = listen.parse().unwrap();
    until_answers(&tcp, &ClientAuth::default(), &log).await;
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(err.contains("WARN") && err.contains("without client authentication ([daemon.tcp] insecure = true)"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
