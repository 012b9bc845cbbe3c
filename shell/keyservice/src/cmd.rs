//! `key-service`: serves `kms.API/GetDataKey` (`docs/ARCHITECTURE.md`, "Keys") over mutual TLS only
//! ([`crate::tls`]): callers present a client certificate of the cluster's key-service CA for an allowed name.
//!
//! ```text
//! key-service --listen 127.0.0.1:9010 --master-secret FILE --tls-ca FILE --tls-cert FILE --tls-key FILE
//!     [--allowed-client attest-join-service …] [--health-listen ADDR] [--metrics-listen ADDR] [--log-level info]
//!     [--shutdown-grace 5]
//! ```
//!
//! Connections are admitted fairly (`attest_grpc::admission`, the server defaults: per-address limits, a
//! cap on pending handshakes that sheds idle sockets first, a reserve for connections that completed their
//! mutual-TLS handshake); `--metrics-listen` serves those limits and decisions as Prometheus `/metrics`
//! (`attest_admission_*`, `server="key-service"` and `"metrics"`), its address printed as `metrics on ADDR`.
//!
//! There is no plaintext mode: a plaintext HTTP/2 (h2c) client fails in the TLS handshake. The only plaintext
//! listeners are the optional health check (`--health-listen`, [`crate::health`]: `grpc.health.v1.Health/Check`
//! for the kubelet's gRPC probes), which serves nothing else, its address printed as `health on ADDR`, and the
//! optional `/metrics` endpoint.
//!
//! The master-secret file holds a KMS URI, Constellation-style JSON or raw bytes (see
//! `crate::secret`). Once listening, the address is printed to stdout as `listening on ADDR`
//! (useful with port 0); logs go to stderr. SIGTERM or Ctrl-C stops accepting connections and lets in-flight
//! calls finish for the grace period.
//!
//! Exit statuses: the table in [`crate::exit`] (0 stopped, 1 runtime, 2 usage, 3 master secret or TLS files),
//! printed by `--help`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::tls::{KmsAcceptor, TlsFiles};
use crate::{KeyService, MasterSecret};
use attest_grpc::http1::{HttpEndpoint, metrics_handler, metrics_limits};
use attest_grpc::{Router, Server, ServerConfig};
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

use crate::exit;

/// The key service: derives data keys from a master secret (HKDF-SHA256) and serves them over gRPC.
#[derive(Parser, Debug)]
#[command(name = "key-service", version, after_help = attest_util::exit::help(exit::TABLE))]
struct Args {
    /// Address to listen on (gRPC over mutual TLS).
    #[arg(long, default_value = "127.0.0.1:9010")]
    listen: SocketAddr,
    /// Master-secret file: a kms://cluster-kms?key=…&salt=… URI, JSON {"key": base64, "salt": base64}, or raw
    /// bytes (the whole file is the key, empty salt).
    #[arg(long, value_name = "FILE")]
    master_secret: PathBuf,
    /// Log level: error, warn, info, debug or trace.
    #[arg(long, default_value = "info")]
    log_level: tracing::Level,
    /// Seconds in-flight calls are given to finish on shutdown.
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    shutdown_grace: u64,
    /// The cluster's key-service CA certificate (PEM): the only issuer of accepted client certificates.
    #[arg(long, value_name = "FILE")]
    tls_ca: PathBuf,
    /// The key service's certificate (PEM), issued by --tls-ca.
    #[arg(long, value_name = "FILE")]
    tls_cert: PathBuf,
    /// The key service's private key (PEM).
    #[arg(long, value_name = "FILE")]
    tls_key: PathBuf,
    /// CommonName of a client certificate that may call (repeatable; default: attest-join-service only).
    #[arg(long = "allowed-client", value_name = "NAME")]
    allowed_clients: Vec<String>,
    /// Address of a Prometheus /metrics endpoint (plain HTTP: admission limits and decisions); off unless given.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Address of the plaintext gRPC health check (grpc.health.v1.Health/Check, for Kubernetes probes); off
    /// without it.
    #[arg(long, value_name = "ADDR")]
    health_listen: Option<SocketAddr>,
}

/// Runs the command with this process's arguments and returns its exit status: the binary's `main`.
pub fn main() -> ExitCode {
    let args = Args::parse();
    attest_util::init_service_logging(args.log_level);
    // Fault injection for the crash matrix: only builds with the feature arm it (attest_util::fault).
    #[cfg(feature = "fault-injection")]
    attest_util::fault::arm_from_env("key-service");
    #[cfg(not(feature = "fault-injection"))]
    attest_util::fault::warn_if_requested("key-service");

    let secret = match MasterSecret::from_file(&args.master_secret) {
        Ok(secret) => secret,
        Err(e) => {
            // The error names the file and what is wrong, never any byte of the secret.
            tracing::error!(error = %e, "key service: cannot load the master secret");
            return ExitCode::from(exit::MASTER_SECRET.code);
        }
    };
    tracing::info!(master_secret_file = %args.master_secret.display(), "key service: master secret loaded");
    let files = TlsFiles { ca: args.tls_ca.clone(), cert: args.tls_cert.clone(), key: args.tls_key.clone() };
    let acceptor = match KmsAcceptor::new(&files, &args.allowed_clients) {
        Ok(a) => Arc::new(a),
        Err(e) => {
            tracing::error!(error = %e, "key service: cannot load the TLS files");
            return ExitCode::from(exit::MASTER_SECRET.code);
        }
    };
    tracing::info!(allowed_clients = ?acceptor.allowed(), "key service: mutual TLS configured");

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "key service: cannot start the runtime");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    match runtime.block_on(serve(&args, secret, acceptor)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "key service: stopped with an error");
            ExitCode::from(exit::RUNTIME.code)
        }
    }
}

async fn serve(args: &Args, secret: MasterSecret, acceptor: Arc<KmsAcceptor>) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(secret)));
    let server = Server::new(router, ServerConfig::default());
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = crate::tls::serve(&server, listener, acceptor)?;
    tracing::info!(%addr, "key service: listening (mutual TLS)");
    let health = crate::health::Health::default();
    let health_server = match args.health_listen {
        Some(a) => {
            let s = Server::new(health.router(), ServerConfig::default());
            let health_addr = s.serve(tokio::net::TcpListener::bind(a).await?)?;
            tracing::info!(addr = %health_addr, "key service: health check listening (plaintext, health only)");
            Some((s, health_addr))
        }
        None => None,
    };
    let metrics = match args.metrics_listen {
        Some(listen) => {
            let endpoint = serve_metrics(tokio::net::TcpListener::bind(listen).await?, &server)?;
            tracing::info!(addr = %endpoint.local_addr(), "key service: metrics listening");
            Some(endpoint)
        }
        None => None,
    };
    health.set_serving(true);
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {addr}")?;
        if let Some((_, a)) = &health_server {
            writeln!(stdout, "health on {a}")?;
        }
        if let Some(m) = &metrics {
            writeln!(stdout, "metrics on {}", m.local_addr())?;
        }
        stdout.flush()?;
    }

    let signal_name = tokio::select! {
        r = tokio::signal::ctrl_c() => { r?; "SIGINT" }
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!(signal = signal_name, in_flight = server.in_flight_calls(), "key service: shutting down");
    health.set_serving(false);
    let drained = server.shutdown(Duration::from_secs(args.shutdown_grace)).await;
    if let Some((s, _)) = health_server {
        s.shutdown(Duration::from_secs(1)).await;
    }
    if let Some(m) = metrics {
        m.shutdown().await;
    }
    if drained {
        tracing::info!("key service: stopped");
    } else {
        tracing::warn!(grace_seconds = args.shutdown_grace, "key service: calls cancelled after the grace period");
    }
    Ok(())
}

/// `/metrics` of the key service: the admission tables of its listener and of the endpoint itself.
fn serve_metrics(listener: tokio::net::TcpListener, server: &Server) -> std::io::Result<HttpEndpoint> {
    let kms = server.clone();
    let own: Arc<std::sync::OnceLock<Arc<attest_grpc::Admission>>> = Arc::default();
    let own_reader = Arc::clone(&own);
    let render = Arc::new(move || {
        let mut tables = vec![("key-service", kms.admission_stats())];
        tables.extend(own_reader.get().map(|a| ("metrics", a.stats())));
        let mut out = String::with_capacity(2048);
        attest_grpc::admission::render_metrics(&mut out, &tables);
        out
    });
    let endpoint = HttpEndpoint::serve(listener, metrics_limits(), metrics_handler(render))?;
    let _ = own.set(endpoint.admission());
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn help_prints_the_exit_status_table() {
        let help = Args::command().render_long_help().to_string();
        for status in exit::TABLE {
            assert!(help.contains(&format!("  {}  {}", status.code, status.meaning)), "{}: {help}", status.code);
        }
    }
}
