//! `key-service`: serves `kms.API/GetDataKey` (`docs/ARCHITECTURE.md`, "Keys") over h2c.
//!
//! ```text
//! key-service --listen 127.0.0.1:9010 --master-secret FILE [--log-level info] [--shutdown-grace 5]
//! ```
//!
//! The master-secret file holds a KMS URI, Constellation-style JSON or raw bytes (see
//! `crate::secret`). Once listening, the address is printed to stdout as `listening on ADDR`
//! (useful with port 0); logs go to stderr. SIGTERM or Ctrl-C stops accepting connections and lets in-flight
//! calls finish for the grace period.
//!
//! Exit codes: 0 after a graceful shutdown, 1 when the service cannot run (bind failure, signal setup), 2 for a
//! usage error, 3 when the master secret cannot be loaded (unreadable, malformed, shorter than 16 bytes).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::{KeyService, MasterSecret};
use attest_grpc::{Router, Server, ServerConfig};
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

/// Exit code: the service could not run.
const EXIT_RUNTIME: u8 = 1;
/// Exit code: the master secret could not be loaded.
const EXIT_MASTER_SECRET: u8 = 3;

/// The key service: derives data keys from a master secret (HKDF-SHA256) and serves them over gRPC.
#[derive(Parser, Debug)]
#[command(name = "key-service", version)]
struct Args {
    /// Address to listen on (h2c gRPC).
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
}

/// Runs the command with this process's arguments and returns its exit status: the binary's `main`.
pub fn main() -> ExitCode {
    let args = Args::parse();
    attest_util::init_service_logging(args.log_level);

    let secret = match MasterSecret::from_file(&args.master_secret) {
        Ok(secret) => secret,
        Err(e) => {
            // The error names the file and what is wrong, never any byte of the secret.
            tracing::error!(error = %e, "key service: cannot load the master secret");
            return ExitCode::from(EXIT_MASTER_SECRET);
        }
    };
    tracing::info!(master_secret_file = %args.master_secret.display(), "key service: master secret loaded");

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "key service: cannot start the runtime");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    match runtime.block_on(serve(&args, secret)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "key service: stopped with an error");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

async fn serve(args: &Args, secret: MasterSecret) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(secret)));
    let server = Server::new(router, ServerConfig::default());
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = server.serve(listener)?;
    tracing::info!(%addr, "key service: listening");
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {addr}")?;
        stdout.flush()?;
    }

    let signal_name = tokio::select! {
        r = tokio::signal::ctrl_c() => { r?; "SIGINT" }
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!(signal = signal_name, in_flight = server.in_flight_calls(), "key service: shutting down");
    let drained = server.shutdown(Duration::from_secs(args.shutdown_grace)).await;
    if drained {
        tracing::info!("key service: stopped");
    } else {
        tracing::warn!(grace_seconds = args.shutdown_grace, "key service: calls cancelled after the grace period");
    }
    Ok(())
}
