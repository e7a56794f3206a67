//! The proof API of cuzkd: the `cuzk.v1.ProvingEngine` gRPC service that Curio's client
//! speaks (see `proto/cuzk/v1/proving.proto`), generated with tonic, plus the addressing both
//! ends share (`unix:///run/cuzk/cuzk.sock` or `host:port`).
//!
//! Architecture invariant: field numbers and names in the .proto are Curio's wire contract;
//! this crate is the only place they are written down.

use std::path::{Path, PathBuf};

/// Generated messages, client and server of package `cuzk.v1`.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

pub use v1::proving_engine_client::ProvingEngineClient;
pub use v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};

/// Default limit on one gRPC message, both ways: Curio sends up to 256 MiB (a 32 GiB PoRep
/// C1 output is about 50 MB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Where a daemon listens or a client connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A unix socket path (`unix:///run/cuzk/cuzk.sock`, or a bare absolute path).
    Unix(PathBuf),
    /// `host:port` (an `http://` prefix is accepted and dropped).
    Tcp(String),
}

#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("address {0:?}: expected unix:///path/to.sock, /path/to.sock or host:port")]
    Malformed(String),
}

impl std::str::FromStr for Address {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some(path) = t.strip_prefix("unix://") {
            if path.starts_with('/') {
                return Ok(Address::Unix(PathBuf::from(path)));
            }
            return Err(AddressError::Malformed(s.to_string()));
        }
        if t.starts_with('/') {
            return Ok(Address::Unix(PathBuf::from(t)));
        }
        let hostport = t.strip_prefix("http://").unwrap_or(t);
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Address::Tcp(hostport.to_string()))
            }
            _ => Err(AddressError::Malformed(s.to_string())),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(p) => write!(f, "unix://{}", p.display()),
            Address::Tcp(h) => write!(f, "{h}"),
        }
    }
}

/// Connects a client to a daemon, with the message size limit raised to `max_message_bytes`.
pub async fn connect(
    addr: &Address,
    max_message_bytes: usize,
) -> Result<ProvingEngineClient<tonic::transport::Channel>, tonic::transport::Error> {
    Ok(ProvingEngineClient::new(channel(addr, None).await?)
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes))
}

/// What a client shows a TCP listener that asks for it (cuzkd's `[daemon.tcp]`): a bearer
/// token, TLS checked against the daemon's CA, and a client certificate where the daemon
/// requires one. The default shows nothing, which is all a unix socket needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientAuth {
    /// A file holding the bearer token sent with every call (see [`read_token_file`]).
    pub token_file: Option<PathBuf>,
    /// PEM CA certificate the daemon's certificate must be signed by; set: TLS.
    pub tls_ca: Option<PathBuf>,
    /// PEM certificate and private key this client presents in the TLS handshake.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{what} {}: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file {0}")]
    Token(#[from] TokenFileError),
    #[error("{0}")]
    Usage(&'static str),
    #[error("{0}")]
    Transport(#[from] tonic::transport::Error),
}

/// A bearer token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is empty", path.display())]
    Empty { path: PathBuf },
    #[error("{}: the token must be one word of printable ASCII (e.g. `openssl rand -hex 32`)", path.display())]
    NotAToken { path: PathBuf },
}

/// The bearer token in `path`: the file's content less surrounding whitespace (a trailing
/// newline is fine), one word of printable ASCII, as an HTTP header value must be.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read { path: path.into(), source })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenFileError::Empty { path: path.into() });
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenFileError::NotAToken { path: path.into() });
    }
    Ok(token.to_string())
}

/// Adds `authorization: Bearer <token>` to every call, when there is a token.
#[derive(Clone, Debug)]
pub struct BearerToken(Option<tonic::metadata::AsciiMetadataValue>);

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The channel of a client made by [`connect_with`].
pub type AuthChannel = tonic::service::interceptor::InterceptedService<tonic::transport::Channel, BearerToken>;

/// [`connect`], showing the daemon what `auth` names (files read here, once).
pub async fn connect_with(
    addr: &Address,
    max_message_bytes: usize,
    auth: &ClientAuth,
) -> Result<ProvingEngineClient<AuthChannel>, ConnectError> {
    let read = |what: &'static str, path: &PathBuf| {
        std::fs::read(path).map_err(|source| ConnectError::Read { what, path: path.clone(), source })
    };
    let tls = match (&auth.tls_ca, &auth.tls_cert, &auth.tls_key) {
        (None, None, None) => None,
        (None, _, _) => return Err(ConnectError::Usage("a TLS client certificate needs the daemon's CA certificate as well")),
        (Some(_), Some(_), None) | (Some(_), None, Some(_)) => {
            return Err(ConnectError::Usage("a TLS client certificate needs both its certificate and its key"))
        }
        (Some(ca), cert, key) => {
            if matches!(addr, Address::Unix(_)) {
                return Err(ConnectError::Usage("TLS is for host:port addresses; a unix socket is not encrypted"));
            }
            let mut tls = tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(read("TLS CA", ca)?));
            if let (Some(cert), Some(key)) = (cert, key) {
                tls = tls.identity(tonic::transport::Identity::from_pem(read("TLS certificate", cert)?, read("TLS key", key)?));
            }
            Some(tls)
        }
    };
    let token = match &auth.token_file {
        None => None,
        Some(path) => {
            let token = read_token_file(path)?;
            let value = format!("Bearer {token}").parse().map_err(|_| TokenFileError::NotAToken { path: path.clone() })?;
            Some(value)
        }
    };
    Ok(ProvingEngineClient::with_interceptor(channel(addr, tls).await?, BearerToken(token))
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes))
}

async fn channel(
    addr: &Address,
    tls: Option<tonic::transport::ClientTlsConfig>,
) -> Result<tonic::transport::Channel, tonic::transport::Error> {
    Ok(match addr {
        Address::Tcp(hostport) => match tls {
            None => tonic::transport::Endpoint::from_shared(format!("http://{hostport}"))?.connect().await?,
            Some(tls) => {
                tonic::transport::Endpoint::from_shared(format!("https://{hostport}"))?
                    .tls_config(tls)?
                    .connect()
                    .await?
            }
        },
        Address::Unix(path) => {
            let path = path.clone();
            // The URI is required by the API but unused: the connector opens the socket.
            tonic::transport::Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await?
        }
    })
}

/// An error and its causes on one line, as the binaries print them: each cause once. The
/// project's errors often name their source in their own message as well (so that a plain
/// `{}` says everything); a cause whose text is already in the line is not repeated.
pub fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let t = cause.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod error_text_tests {
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    #[error("parameter file x: {source}")]
    struct Named {
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading parameters")]
    struct Context(#[source] Named);

    #[test]
    fn each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory /nonexistent");
        assert_eq!(error_text(&Named { source: io() }), "parameter file x: no such directory /nonexistent");
        assert_eq!(
            error_text(&Context(Named { source: io() })),
            "loading parameters: parameter file x: no such directory /nonexistent"
        );
    }
}
