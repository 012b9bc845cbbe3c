//! Benchmark server: serves `join.API/IssueJoinTicket` over h2c with a fixed, realistic response (three 32-byte
//! keys, a ≈1 KB kubelet certificate, a bootstrap token, a CA hash), so that the gRPC layer can be measured
//! alone with h2load (benches/grpc/run.sh). Binds 127.0.0.1 only.
//!
//! Usage: `grpc-bench-server [PORT]` (default 50051; 0 picks a free port). Prints `listening on ADDR` and
//! serves until Ctrl-C (then shuts down gracefully).

use std::sync::Arc;
use std::time::Duration;

use attest_grpc::{Response, Router, Server, ServerConfig};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;

/// The fixed ticket: sizes as a real join service returns them.
fn ticket() -> IssueJoinTicketResponse {
    // A DER certificate is ≈1 KB; the content does not matter to the framing layer.
    let kubelet_cert: Vec<u8> = (0..1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    IssueJoinTicketResponse {
        state_disk_key: vec![0x11; 32],
        measurement_salt: vec![0x22; 32],
        measurement_secret: vec![0x33; 32],
        kubelet_cert,
        api_server_endpoint: "10.9.0.1:6443".into(),
        token: "abcdef.0123456789abcdef".into(),
        discovery_token_ca_cert_hash: format!("sha256:{}", "ab".repeat(32)),
        kubernetes_version: "v1.31.1".into(),
        ..Default::default()
    }
}

fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "PORT"))?,
        None => 50051,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let ticket = Arc::new(ticket());
        let mut router = Router::new();
        router.unary(paths::JOIN_ISSUE_JOIN_TICKET, move |_req: attest_grpc::Request<IssueJoinTicketRequest>| {
            let ticket = Arc::clone(&ticket);
            async move { Ok(Response::new((*ticket).clone())) }
        });
        let server = Server::new(router, ServerConfig::default());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = server.serve(listener)?;
        println!("listening on {addr}");
        tokio::signal::ctrl_c().await?;
        server.shutdown(Duration::from_secs(5)).await;
        Ok(())
    })
}
