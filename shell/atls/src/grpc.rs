//! gRPC over aTLS: the glue the services use.
//!
//! [`serve`] accepts aTLS connections and serves a [`Server`]'s routes on them; each call sees the
//! peer's verified attestation as [`Request::peer`](attest_grpc::Request::peer)`::<PeerAttestation>()`
//! when the acceptor verified the client. [`connect`] opens an aTLS connection and speaks gRPC on it,
//! returning what the server proved.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use super::{AtlsAcceptor, AtlsConnector, Error, PeerAttestation};
use attest_grpc::{Channel, ChannelConfig, Counted, PeerInfo, Server, Status};

/// Serves `server`'s routes over aTLS connections accepted from `listener` by `acceptor` until the
/// server shuts down. A failed handshake closes that connection only; it is counted and logged with the
/// reason and the peer's address by the acceptor ([`crate::refusal`]; the aTLS error has already been sent
/// to the peer as a TLS alert). Returns the local address.
///
/// Every connection goes through the server's admission table first (`attest_grpc::admission`: per-peer
/// limits, pending-handshake limits with shedding, the handshake deadline from accept): the aTLS handshake,
/// including the attestation this side issues and the peer's it verifies, is the pending phase.
pub fn serve(server: &Server, listener: TcpListener, acceptor: Arc<AtlsAcceptor>) -> std::io::Result<SocketAddr> {
    server.serve_with(listener, move |tcp: Counted<TcpStream>| {
        let acceptor = Arc::clone(&acceptor);
        async move {
            let peer = tcp.peer_addr().ok();
            let tls = acceptor.accept_from(tcp, peer).await?;
            let peer = tls.peer_attestation().cloned().map(|p| Arc::new(p) as PeerInfo);
            Ok::<_, Error>((tls, peer))
        }
    })
}

/// Why [`connect`] failed.
#[derive(Debug)]
pub enum ConnectError {
    /// TCP connect failed or timed out.
    Tcp(std::io::Error),
    /// The aTLS handshake failed (the server's attestation was refused, or ours was).
    Atls(Error),
    /// HTTP/2 could not be established on the aTLS stream.
    Http2(Status),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Tcp(e) => write!(f, "TCP connect: {e}"),
            ConnectError::Atls(e) => write!(f, "aTLS handshake: {e}"),
            ConnectError::Http2(s) => write!(f, "HTTP/2 over aTLS: {s}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Tcp(e) => Some(e),
            ConnectError::Atls(e) => Some(e),
            ConnectError::Http2(s) => Some(s),
        }
    }
}

/// Connects to `addr`, runs the aTLS client handshake with `connector` and speaks gRPC on the result.
/// Returns the channel and the server's verified attestation (when `connector` verifies the server).
pub async fn connect(
    addr: SocketAddr,
    connector: &AtlsConnector,
    config: ChannelConfig,
) -> Result<(Channel, Option<PeerAttestation>), ConnectError> {
    let tcp = tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| ConnectError::Tcp(std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")))?
        .map_err(ConnectError::Tcp)?;
    connect_over(tcp, connector, config).await
}

/// [`connect`] on a TCP connection already open (e.g. from a chosen local address) to the server.
pub async fn connect_over(
    tcp: TcpStream,
    connector: &AtlsConnector,
    config: ChannelConfig,
) -> Result<(Channel, Option<PeerAttestation>), ConnectError> {
    let addr = tcp.peer_addr().map_err(ConnectError::Tcp)?;
    let _ = tcp.set_nodelay(true);
    let tls = tokio::time::timeout(config.connect_timeout, connector.connect_to(tcp, Some(addr)))
        .await
        .map_err(|_| ConnectError::Tcp(std::io::Error::new(std::io::ErrorKind::TimedOut, "aTLS handshake timed out")))?
        .map_err(ConnectError::Atls)?;
    let peer = tls.peer_attestation().cloned();
    let channel = Channel::handshake(tls, &addr.to_string(), config).await.map_err(ConnectError::Http2)?;
    Ok((channel, peer))
}
