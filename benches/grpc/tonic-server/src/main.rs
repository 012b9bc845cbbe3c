//! tonic server with the same `join.API/IssueJoinTicket` response as attest's `grpc-bench-server`, for the
//! side-by-side h2load comparison in benches/grpc/run.sh. The service is written out the way tonic-build
//! generates it (a `tower::Service` dispatching on the path into `tonic::server::Grpc::unary` with the prost
//! codec), so no protoc or build script is needed. Binds 127.0.0.1 only. Usage: `attest-tonic-bench-server
//! [PORT]` (default 50052).

use std::sync::Arc;

use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use tonic::codegen::{Body, BoxFuture, Context, Poll, Service, StdError, http};

/// Identical to `benches/src/bin/grpc-bench-server.rs`.
fn ticket() -> IssueJoinTicketResponse {
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

#[derive(Clone)]
struct JoinServer {
    ticket: Arc<IssueJoinTicketResponse>,
}

impl tonic::server::NamedService for JoinServer {
    const NAME: &'static str = "join.API";
}

struct IssueJoinTicket(Arc<IssueJoinTicketResponse>);

impl tonic::server::UnaryService<IssueJoinTicketRequest> for IssueJoinTicket {
    type Response = IssueJoinTicketResponse;
    type Future = BoxFuture<tonic::Response<IssueJoinTicketResponse>, tonic::Status>;
    fn call(&mut self, _request: tonic::Request<IssueJoinTicketRequest>) -> Self::Future {
        let ticket = Arc::clone(&self.0);
        Box::pin(async move { Ok(tonic::Response::new((*ticket).clone())) })
    }
}

impl<B> Service<http::Request<B>> for JoinServer
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        match request.uri().path() {
            "/join.API/IssueJoinTicket" => {
                let svc = IssueJoinTicket(Arc::clone(&self.ticket));
                Box::pin(async move {
                    let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                    Ok(grpc.unary(svc, request).await)
                })
            }
            _ => Box::pin(async { Ok(tonic::Status::unimplemented("").into_http()) }),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args().nth(1).map_or(Ok(50052), |p| p.parse())?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    println!("listening on {addr}");
    tonic::transport::Server::builder()
        .add_service(JoinServer { ticket: Arc::new(ticket()) })
        .serve_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
