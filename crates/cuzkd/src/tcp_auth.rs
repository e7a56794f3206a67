//! Who may use cuzkd's TCP listeners (`[daemon.tcp]`). A proof request costs GPU time; the
//! unix socket admits whom its file mode and group admit (cuzk.socket: 0660, group cuzk),
//! but a TCP port admits anyone who can reach it. So TCP takes TLS with client certificates
//! (`tls_client_ca`), a bearer token (`token_file`), or both, and a TCP listener with
//! neither serves only when `insecure = true` says so, with a warning. Unix sockets are not
//! affected. The files are read once, at start ([`TcpAuthConfig::load`]); a token or key file
//! that everyone may read is refused.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

/// `[daemon.tcp]`: authentication of the TCP listeners.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpAuthConfig {
    /// PEM certificate chain the TCP listeners present; with `tls_key`, they speak TLS.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert` (not readable by everyone).
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificate(s): a client must present a certificate signed by one.
    pub tls_client_ca: Option<PathBuf>,
    /// File holding the bearer token every call over TCP must carry as
    /// `authorization: Bearer <token>` (not readable by everyone).
    pub token_file: Option<PathBuf>,
    /// Serve TCP without client authentication: for a network where everyone who can reach
    /// the port may submit proofs.
    pub insecure: bool,
}

/// Why the TCP listeners cannot be served as configured. Each names its key.
#[derive(Debug, thiserror::Error)]
pub enum TcpAuthError {
    #[error("[daemon.tcp] {key} = {}: {source}", path.display())]
    Read {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("[daemon.tcp] {key} = {} is readable by everyone (mode {mode:04o}): chmod o-rwx it (0600, or 0640 with the daemon's group)", path.display())]
    ReadableByEveryone { key: &'static str, path: PathBuf, mode: u32 },
    #[error("[daemon.tcp] {key} = {} holds no PEM {expected}", path.display())]
    NotPem { key: &'static str, path: PathBuf, expected: &'static str },
    #[error("[daemon.tcp] token_file: {0}")]
    Token(#[from] cuzk_proto::TokenFileError),
    #[error("[daemon.tcp] tls_cert, tls_key, tls_client_ca: {0}")]
    Tls(String),
    #[error("{}", unauthenticated(listener))]
    Unauthenticated { listener: String },
}

fn unauthenticated(listener: &str) -> String {
    format!(
        "TCP listener {listener} would serve anyone who can reach it: set [daemon.tcp] token_file, or \
         tls_cert, tls_key and tls_client_ca (client certificates), or insecure = true on a trusted network"
    )
}

impl TcpAuthConfig {
    /// Whether a client must prove who it is: a client certificate or the token. TLS without
    /// `tls_client_ca` encrypts but admits anyone.
    fn authenticates(&self) -> bool {
        self.tls_client_ca.is_some() || self.token_file.is_some()
    }

    /// The checks that need no file, for `Config::parse`. `listen` is `[daemon] listen`: a
    /// TCP address there needs authentication (or `insecure`) before anything starts.
    pub fn validate(&self, listen: &cuzk_proto::Address) -> Result<(), String> {
        for (key, path) in [
            ("tls_cert", &self.tls_cert),
            ("tls_key", &self.tls_key),
            ("tls_client_ca", &self.tls_client_ca),
            ("token_file", &self.token_file),
        ] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(format!("[daemon.tcp] {key} is empty: a file path"));
            }
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => return Err("[daemon.tcp] tls_cert is set without tls_key".into()),
            (None, Some(_)) => return Err("[daemon.tcp] tls_key is set without tls_cert".into()),
            _ => {}
        }
        if self.tls_client_ca.is_some() && self.tls_cert.is_none() {
            return Err("[daemon.tcp] tls_client_ca needs tls_cert and tls_key: client certificates are checked in the TLS handshake".into());
        }
        if self.insecure && self.authenticates() {
            return Err("[daemon.tcp] insecure = true contradicts tls_client_ca or token_file, which authenticate every client: remove one".into());
        }
        if let cuzk_proto::Address::Tcp(hostport) = listen {
            if !self.authenticates() && !self.insecure {
                return Err(format!("[daemon] listen = {hostport:?}: {}", unauthenticated(hostport)));
            }
        }
        Ok(())
    }

    /// Reads the certificate, key, CA and token files, once, and checks them: what the TCP
    /// servers then apply.
    pub fn load(&self) -> Result<TcpAuth, TcpAuthError> {
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                let cert_pem = read_pem_certificates("tls_cert", cert)?;
                let key_pem = read_secret("tls_key", key)?;
                if PrivateKeyDer::from_pem_slice(&key_pem).is_err() {
                    return Err(TcpAuthError::NotPem { key: "tls_key", path: key.clone(), expected: "private key (PKCS#8, PKCS#1 or SEC1)" });
                }
                // A client that never finishes its handshake must not hold a connection.
                let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem)).timeout(Duration::from_secs(10));
                if let Some(ca) = &self.tls_client_ca {
                    tls = tls.client_ca_root(Certificate::from_pem(read_pem_certificates("tls_client_ca", ca)?));
                }
                // Builds the rustls configuration now, so that a key that does not match its
                // certificate stops the start rather than every handshake.
                Server::builder().tls_config(tls.clone()).map_err(|e| TcpAuthError::Tls(error_chain(&e)))?;
                Some(tls)
            }
            _ => None,
        };
        let token = match &self.token_file {
            None => None,
            Some(path) => {
                check_not_readable_by_everyone("token_file", path)?;
                Some(Arc::from(cuzk_proto::read_token_file(path)?.into_bytes()))
            }
        };
        Ok(TcpAuth { tls, client_certificates: self.tls_client_ca.is_some(), token, insecure: self.insecure })
    }
}

/// `[daemon.tcp]` with its files read.
#[derive(Clone)]
pub struct TcpAuth {
    tls: Option<ServerTlsConfig>,
    client_certificates: bool,
    token: Option<Arc<[u8]>>,
    insecure: bool,
}

/// Says whether there is a token, never what it is.
impl std::fmt::Debug for TcpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpAuth")
            .field("tls", &self.tls.is_some())
            .field("client_certificates", &self.client_certificates)
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl TcpAuth {
    /// Whether TCP listener `listener` may serve: refused when nobody is authenticated and
    /// `insecure` is not set; allowed with a warning when it is.
    pub fn admit(&self, listener: &str) -> Result<(), TcpAuthError> {
        if self.client_certificates || self.token.is_some() {
            return Ok(());
        }
        if !self.insecure {
            return Err(TcpAuthError::Unauthenticated { listener: listener.into() });
        }
        log::warn!(
            "TCP listener {listener} serves without client authentication ([daemon.tcp] insecure = true): \
             anyone who can reach it may submit proofs"
        );
        Ok(())
    }

    /// `server`, the builder of one TCP listener's server, with TLS when `tls_cert` is set.
    pub fn with_tls(&self, server: Server) -> Result<Server, TcpAuthError> {
        match &self.tls {
            None => Ok(server),
            Some(tls) => server.tls_config(tls.clone()).map_err(|e| TcpAuthError::Tls(error_chain(&e))),
        }
    }

    /// The check every call over TCP passes: the bearer token when `token_file` is set.
    pub fn bearer_check(&self) -> BearerCheck {
        BearerCheck { token: self.token.clone() }
    }
}

/// Requires `authorization: Bearer <token>` on every call (when there is a token); a call
/// without it, or with another token, is UNAUTHENTICATED. The comparison takes the same time
/// wherever the tokens differ (only the length can be told apart).
#[derive(Clone)]
pub struct BearerCheck {
    token: Option<Arc<[u8]>>,
}

impl tonic::service::Interceptor for BearerCheck {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let Some(token) = &self.token else { return Ok(request) };
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        match presented {
            Some(t) if bool::from(t.as_bytes().ct_eq(token)) => Ok(request),
            Some(_) => Err(tonic::Status::unauthenticated("wrong bearer token")),
            None => Err(tonic::Status::unauthenticated(
                "this TCP listener requires `authorization: Bearer <token>` ([daemon.tcp] token_file)",
            )),
        }
    }
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TcpAuthError> {
    std::fs::read(path).map_err(|source| TcpAuthError::Read { key, path: path.into(), source })
}

fn read_pem_certificates(key: &'static str, path: &Path) -> Result<Vec<u8>, TcpAuthError> {
    let pem = read(key, path)?;
    let certificates: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem).collect();
    match certificates {
        Ok(c) if !c.is_empty() => Ok(pem),
        _ => Err(TcpAuthError::NotPem { key, path: path.into(), expected: "certificate" }),
    }
}

fn check_not_readable_by_everyone(key: &'static str, path: &Path) -> Result<(), TcpAuthError> {
    let mode = std::fs::metadata(path)
        .map_err(|source| TcpAuthError::Read { key, path: path.into(), source })?
        .permissions()
        .mode();
    if mode & 0o004 != 0 {
        return Err(TcpAuthError::ReadableByEveryone { key, path: path.into(), mode: mode & 0o7777 });
    }
    Ok(())
}

fn read_secret(key: &'static str, path: &Path) -> Result<Vec<u8>, TcpAuthError> {
    check_not_readable_by_everyone(key, path)?;
    read(key, path)
}

/// tonic's transport error says "transport error"; the cause is in its sources.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<crate::config::Config, String> {
        crate::config::Config::parse(text, "t.toml").map_err(|e| e.to_string())
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cuzkd-tcp-auth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn keys_are_read_and_contradictions_named() {
        let c = parse(
            "[daemon]\nlisten = \"127.0.0.1:9820\"\n[daemon.tcp]\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n\
             tls_client_ca = \"/ca.pem\"\ntoken_file = \"/t\"\n",
        )
        .unwrap();
        let t = &c.daemon.tcp;
        assert_eq!(
            (t.tls_cert.as_deref(), t.tls_key.as_deref(), t.tls_client_ca.as_deref(), t.token_file.as_deref(), t.insecure),
            (Some(Path::new("/c.pem")), Some(Path::new("/k.pem")), Some(Path::new("/ca.pem")), Some(Path::new("/t")), false)
        );
        assert_eq!(parse("").unwrap().daemon.tcp, TcpAuthConfig::default());
        assert!(parse("[daemon]\nlisten = \"127.0.0.1:9820\"\n[daemon.tcp]\ninsecure = true\n").unwrap().daemon.tcp.insecure);

        for (text, needle) in [
            ("[daemon.tcp]\ntoken = \"/t\"\n", "token"),
            ("[daemon.tcp]\ninsecure = \"yes\"\n", "insecure"),
            ("[daemon.tcp]\ntls_cert = \"/c.pem\"\n", "[daemon.tcp] tls_cert is set without tls_key"),
            ("[daemon.tcp]\ntls_key = \"/k.pem\"\n", "[daemon.tcp] tls_key is set without tls_cert"),
            ("[daemon.tcp]\ntls_client_ca = \"/ca.pem\"\n", "[daemon.tcp] tls_client_ca needs tls_cert and tls_key"),
            ("[daemon.tcp]\ntoken_file = \"\"\n", "[daemon.tcp] token_file is empty"),
            ("[daemon.tcp]\ntls_cert = \"\"\ntls_key = \"/k\"\n", "[daemon.tcp] tls_cert is empty"),
            ("[daemon.tcp]\ntoken_file = \"/t\"\ninsecure = true\n", "insecure = true contradicts"),
            ("[daemon]\nlisten = \"127.0.0.1:9820\"\n", "[daemon] listen = \"127.0.0.1:9820\": TCP listener 127.0.0.1:9820 would serve anyone"),
            (
                "[daemon]\nlisten = \"127.0.0.1:9820\"\n[daemon.tcp]\ntls_cert = \"/c\"\ntls_key = \"/k\"\n",
                "set [daemon.tcp] token_file, or tls_cert, tls_key and tls_client_ca",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle) && e.contains("t.toml"), "{text:?}: {e}");
        }
    }

    #[test]
    fn files_are_checked_at_load() {
        let dir = scratch("load");
        let token = dir.join("token");
        let with_token = |path: &Path| TcpAuthConfig { token_file: Some(path.into()), ..Default::default() };

        write(&token, "s3cret\n", 0o600);
        let auth = with_token(&token).load().unwrap();
        assert_eq!(auth.token.as_deref(), Some(&b"s3cret"[..]), "read once, the newline dropped");
        auth.admit("127.0.0.1:1").unwrap();

        write(&token, "s3cret\n", 0o644);
        let e = with_token(&token).load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] token_file") && e.contains("readable by everyone (mode 0644)"), "{e}");
        write(&token, " \n", 0o600);
        let e = with_token(&token).load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] token_file") && e.contains("is empty"), "{e}");
        write(&token, "two words\n", 0o600);
        let e = with_token(&token).load().unwrap_err().to_string();
        assert!(e.contains("one word of printable ASCII"), "{e}");
        let e = with_token(&dir.join("missing")).load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] token_file") && e.contains("missing"), "{e}");

        let (cert, key, ca) = (dir.join("cert.pem"), dir.join("key.pem"), dir.join("ca.pem"));
        let tls = TcpAuthConfig { tls_cert: Some(cert.clone()), tls_key: Some(key.clone()), tls_client_ca: Some(ca.clone()), ..Default::default() };
        write(&cert, "not a certificate", 0o644);
        write(&key, "not a key", 0o600);
        let e = tls.load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] tls_cert") && e.contains("holds no PEM certificate"), "{e}");
        let issued = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        write(&cert, &issued.cert.pem(), 0o644);
        let e = tls.load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] tls_key") && e.contains("holds no PEM private key"), "{e}");
        write(&key, &issued.signing_key.serialize_pem(), 0o640);
        let e = tls.load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] tls_client_ca") && e.contains("No such file"), "{e}");
        write(&ca, &issued.cert.pem(), 0o644);
        tls.load().unwrap().admit("127.0.0.1:1").unwrap();
        write(&key, &issued.signing_key.serialize_pem(), 0o604);
        let e = tls.load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] tls_key") && e.contains("readable by everyone"), "{e}");
        // A key that is not the certificate's.
        write(&key, &rcgen::KeyPair::generate().unwrap().serialize_pem(), 0o600);
        let e = tls.load().unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp] tls_cert, tls_key"), "{e}");

        // TLS without client certificates authenticates nobody.
        write(&key, &issued.signing_key.serialize_pem(), 0o600);
        let server_only = TcpAuthConfig { tls_client_ca: None, ..tls.clone() };
        let e = server_only.load().unwrap().admit("127.0.0.1:1").unwrap_err().to_string();
        assert!(e.contains("TCP listener 127.0.0.1:1 would serve anyone"), "{e}");
        TcpAuthConfig { insecure: true, ..server_only }.load().unwrap().admit("127.0.0.1:1").unwrap();
        let e = TcpAuthConfig::default().load().unwrap().admit("[::1]:2").unwrap_err().to_string();
        assert!(e.contains("[daemon.tcp]") && e.contains("insecure = true"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_bearer_check_wants_the_token() {
        use tonic::service::Interceptor;
        let call = |header: Option<&str>| {
            let mut r = tonic::Request::new(());
            if let Some(h) = header {
                r.metadata_mut().insert("authorization", h.parse().unwrap());
            }
            BearerCheck { token: Some(Arc::from(&b"s3cret"[..])) }.call(r).map_err(|s| (s.code(), s.message().to_string()))
        };
        assert!(call(Some("Bearer s3cret")).is_ok());
        assert!(call(Some("bearer s3cret")).is_ok());
        let (code, message) = call(None).unwrap_err();
        assert_eq!(code, tonic::Code::Unauthenticated);
        assert!(message.contains("token_file"), "{message}");
        for wrong in ["Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret"] {
            assert_eq!(call(Some(wrong)).unwrap_err().0, tonic::Code::Unauthenticated, "{wrong}");
        }
        assert!(BearerCheck { token: None }.call(tonic::Request::new(())).is_ok(), "no token configured: no check");
    }
}
