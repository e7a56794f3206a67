//! The proof API of cuzkd: the `cuzk.v1.ProvingEngine` gRPC service that Curio's client
//! speaks (see `proto/cuzk/v1/proving.proto`), generated with tonic, plus the addressing both
//! ends share (`unix:///run/cuzk/cuzk.sock` or `host:port`).
//!
//! Architecture invariant: field numbers and names in the .proto are Curio's wire contract;
//! this crate is the only place they are written down.

use std::path::PathBuf;

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
    let channel = match addr {
        Address::Tcp(hostport) => {
            tonic::transport::Endpoint::from_shared(format!("http://{hostport}"))?
                .connect()
                .await?
        }
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
    };
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes))
}
