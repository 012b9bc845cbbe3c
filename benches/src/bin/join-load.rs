//! `join-load`: load generator for the join service.
//!
//! ```text
//! join-load setup --dir DIR [--aks 8] [--ak-kind ecc-p256|rsa-2048]
//! join-load run --fixture DIR --addr 127.0.0.1:PORT [--concurrency 16] [--joins N] [--duration SECONDS]
//!     [--rate JOINS_PER_S] [--warmup SECONDS] [--aks N] [--nodes 16] [--timeout SECONDS]
//!     [--verify-certs] [--progress SECONDS] [--worker-threads N] [--json] [--sources N]
//!     [--attack-idle N] [--attack-slow N] [--attack-kms ADDR --attack-kms-idle N] [--attack-peers P]
//!     [--attack-reopen SECONDS] [--attack-trickle SECONDS]
//! join-load validate --fixture DIR [--threads 1,2] [--per-thread 2000] [--rounds 3] [--json]
//! join-load mtls --fixture DIR --addr KEY_SERVICE [--connections 5000] [--concurrency 16] [--json]
//! join-load attack --addr JOIN_SERVICE [--attack-idle N] [--attack-slow N] [--attack-kms ADDR --attack-kms-idle N]
//!     [--attack-peers P] [--attack-reopen SECONDS] [--attack-trickle SECONDS] [--duration SECONDS] [--json]
//! ```
//!
//! `setup` writes the files of `attest_benches::joinload::fixture` (AKs, an AK registry pinning
//! them, measurements, salt, master secret, Kubernetes settings, PKI) for `key-service` and `join-service`.
//! `run` joins over aTLS as real nodes do (fresh TCP + aTLS handshake in which the client attests with a
//! software-AK quote, then `IssueJoinTicket` with a kubelet CSR) from `--concurrency` clients until
//! `--joins` joins or `--duration` seconds (default bound 300 s), after `--warmup` seconds (default 2). It
//! prints latency percentiles, throughput and failures by kind (text, or one JSON object with `--json`).
//! Each client connects from a loopback address of its own (`--sources`, default one per client when the
//! service is on loopback: a node per address, as the services' per-peer limits expect). The `--attack-*`
//! options hold the services' limits for the whole run, warm-up included (`attest_benches::joinload::attack`): idle and slow-loris sockets on the join service and idle sockets on the key service, spread
//! over `--attack-peers` loopback addresses, each re-opened `--attack-reopen` seconds after the server closes
//! it; the report then has an `attack` section. `attack` holds the same sockets in a process of its own (so
//! that the attacker does not share the genuine clients' runtime) until SIGTERM/SIGINT or `--duration`, and
//! prints what it did.
//! `validate` runs the join service's handshake validation path on 1, 2, … threads in-process. `mtls` opens
//! fresh mutual-TLS connections to the key service, one gRPC call each: the transport floor of a join
//! (`attest_benches::joinload::mtls`).
//!
//! Exit codes: 0 when every join succeeded, 1 when any failed (or setup/validate failed), 2 for a usage
//! error.

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use attest_benches::joinload::attack::{Attack, AttackConfig, genuine_source};
use attest_benches::joinload::{self, LoadConfig, ServerCheck, fixture};
use attest_registration::EkCaBundle;
use clap::{Parser, Subcommand};
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(name = "join-load", version, about = "Load generator for the join service")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

// Parsed once: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Write a fixture directory: software AKs, the AK registry pinning them, measurements, salt, master
    /// secret, Kubernetes settings and a kubeadm PKI.
    Setup {
        /// The directory (created if missing).
        #[arg(long)]
        dir: PathBuf,
        /// Number of software AKs.
        #[arg(long, default_value_t = 8)]
        aks: usize,
        /// AK key type: ecc-p256 or rsa-2048.
        #[arg(long, default_value = "ecc-p256")]
        ak_kind: String,
    },
    /// Run joins against a join service started with the fixture.
    Run {
        /// The fixture directory (`setup`).
        #[arg(long)]
        fixture: PathBuf,
        /// The join service's aTLS address.
        #[arg(long)]
        addr: SocketAddr,
        /// Concurrent clients.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Measured joins (the run ends at this count or at --duration, whichever comes first).
        #[arg(long)]
        joins: Option<u64>,
        /// Time bound of the measured phase, in seconds.
        #[arg(long, default_value_t = 300.0)]
        duration: f64,
        /// Target joins per second over all clients (default: as fast as the clients go).
        #[arg(long)]
        rate: Option<f64>,
        /// Warm-up seconds before measuring.
        #[arg(long, default_value_t = 2.0)]
        warmup: f64,
        /// Use only the first N AKs of the fixture.
        #[arg(long)]
        aks: Option<usize>,
        /// Distinct joining nodes (names and disks; at least one per AK: the join service binds a node name and
        /// disk to the attested identity that first joined with them, so each AK joins as its own node).
        #[arg(long, default_value_t = 16)]
        nodes: usize,
        /// Seconds allowed for each step of a join.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Also verify each kubelet certificate against the fixture's cluster CA (client CPU).
        #[arg(long)]
        verify_certs: bool,
        /// Print a progress line to stderr every this many seconds.
        #[arg(long)]
        progress: Option<f64>,
        /// Tokio worker threads of the generator (default: one per core).
        #[arg(long)]
        worker_threads: Option<usize>,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
        /// Verify the join service's own attestation in each handshake (mutual aTLS, as a node does; needed
        /// against a join service that attests itself with `--tpm`).
        #[arg(long)]
        verify_server: bool,
        /// CA certificates (PEM) of the join service TPM's EK certificate: each join also activates the
        /// service's AK over the connection, as a `qemu-vtpm` node does (implies --verify-server; repeatable).
        #[arg(long = "server-ek-ca", value_name = "FILE")]
        server_ek_ca: Vec<PathBuf>,
        /// Distinct loopback addresses the clients connect from (127.77.x.y), client i from address i mod N;
        /// 0: the system's choice [default: --concurrency when --addr is a loopback address, else 0].
        #[arg(long)]
        sources: Option<u32>,
        #[command(flatten)]
        attack: AttackArgs,
    },
    /// Open fresh mutual-TLS connections to the key service, one `GetDataKey` call each (the transport floor
    /// of a join: TLS 1.3 with client certificate + one gRPC call, no attestation).
    Mtls {
        /// The fixture directory (`setup`): the join service's key-service client certificate.
        #[arg(long)]
        fixture: PathBuf,
        /// The key service's address.
        #[arg(long)]
        addr: SocketAddr,
        /// Connections in all.
        #[arg(long, default_value_t = 5000)]
        connections: u64,
        /// Concurrent clients.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Seconds allowed for each connection.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Hold the services' limits (idle and slow-loris sockets) until stopped, as `run --attack-*` does but in a
    /// process of its own.
    Attack {
        /// The join service's aTLS address.
        #[arg(long)]
        addr: SocketAddr,
        #[command(flatten)]
        attack: AttackArgs,
        /// Stop after this many seconds (also on SIGTERM or SIGINT).
        #[arg(long, default_value_t = 3600.0)]
        duration: f64,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Measure the join service's handshake validation path on 1, 2, … threads (in-process).
    Validate {
        /// The fixture directory (`setup`).
        #[arg(long)]
        fixture: PathBuf,
        /// Thread counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        threads: Vec<usize>,
        /// Documents each thread validates per point.
        #[arg(long, default_value_t = 2000)]
        per_thread: usize,
        /// Rounds (each runs every thread count once).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Print the points as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The attacker that holds the services' limits during the run (`attest_benches::joinload::attack`).
// The field names are the flags (`--attack-idle`, …).
#[allow(clippy::struct_field_names)]
#[derive(clap::Args, Debug)]
struct AttackArgs {
    /// Idle sockets (nothing sent) held on the join service.
    #[arg(long, default_value_t = 0)]
    attack_idle: usize,
    /// Slow-loris sockets (a TLS record header, one byte every --attack-trickle seconds) held on the join service.
    #[arg(long, default_value_t = 0)]
    attack_slow: usize,
    /// The key service's address, for --attack-kms-idle.
    #[arg(long, value_name = "ADDR", requires = "attack_kms_idle")]
    attack_kms: Option<SocketAddr>,
    /// Idle sockets held on the key service (--attack-kms).
    #[arg(long, default_value_t = 0, requires = "attack_kms")]
    attack_kms_idle: usize,
    /// Distinct attacker loopback addresses (127.66.x.y) the sockets are spread over.
    #[arg(long, default_value_t = 100)]
    attack_peers: u32,
    /// Seconds an attacker waits after the server closed a socket before it opens it again.
    #[arg(long, default_value_t = 1.0)]
    attack_reopen: f64,
    /// Seconds between the bytes of a slow-loris socket.
    #[arg(long, default_value_t = 2.0)]
    attack_trickle: f64,
}

impl AttackArgs {
    fn config(&self, join: SocketAddr) -> Result<Option<AttackConfig>, String> {
        if self.attack_idle + self.attack_slow + self.attack_kms_idle == 0 {
            return Ok(None);
        }
        let mut idle = vec![(join, self.attack_idle)];
        if let Some(kms) = self.attack_kms {
            idle.push((kms, self.attack_kms_idle));
        }
        Ok(Some(AttackConfig {
            idle,
            slow: vec![(join, self.attack_slow)],
            peers: self.attack_peers.max(1),
            reopen_after: seconds("attack-reopen", self.attack_reopen)?,
            trickle: seconds("attack-trickle", self.attack_trickle)?,
        }))
    }
}

fn seconds(name: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("--{name} {s}: not a duration in seconds"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = match args.command {
        Command::Setup { dir, aks, ak_kind } => match fixture::parse_kind(&ak_kind) {
            None => {
                eprintln!("join-load: unknown --ak-kind {ak_kind:?} (ecc-p256, rsa-2048)");
                return ExitCode::from(2);
            }
            Some(kind) => joinload::write_fixture(&dir, aks, kind).map(|()| {
                println!("fixture written to {} ({aks} {ak_kind} AKs)", dir.display());
                true
            }),
        },
        Command::Mtls { fixture, addr, connections, concurrency, timeout, json } => {
            let timeout = match seconds("timeout", timeout) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("join-load: {e}");
                    return ExitCode::from(2);
                }
            };
            match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Err(e) => Err(e.into()),
                Ok(rt) => rt.block_on(joinload::mtls_connections(&fixture, addr, connections, concurrency, timeout)).map(
                    |report| {
                        if json {
                            println!("{}", report.json());
                        } else {
                            println!(
                                "{} connections ok, {} failed in {:.2} s{}",
                                report.ok,
                                report.errors,
                                report.wall.as_secs_f64(),
                                report.first_error.as_deref().map(|e| format!(" (first error: {e})")).unwrap_or_default()
                            );
                        }
                        report.errors == 0
                    },
                ),
            }
        }
        Command::Attack { addr, attack, duration, json } => {
            let config = match (attack.config(addr), seconds("duration", duration)) {
                (Ok(Some(c)), Ok(d)) => (c, d),
                (Ok(None), _) => {
                    eprintln!("join-load: attack: give --attack-idle, --attack-slow or --attack-kms-idle");
                    return ExitCode::from(2);
                }
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("join-load: {e}");
                    return ExitCode::from(2);
                }
            };
            match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Err(e) => Err(e.into()),
                Ok(rt) => rt.block_on(async {
                    let held = Attack::start(&config.0);
                    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                    tokio::select! {
                        () = tokio::time::sleep(config.1) => {}
                        _ = term.recv() => {}
                        _ = tokio::signal::ctrl_c() => {}
                    }
                    let a = held.stop().await;
                    if json {
                        println!("{}", a.json());
                    } else {
                        println!(
                            "attack: {} sockets opened, {} closed by the servers and re-opened, {} connects failed",
                            a.opened, a.closed_by_server, a.connect_failures
                        );
                    }
                    Ok::<_, joinload::BoxError>(true)
                }),
            }
        }
        Command::Validate { fixture, threads, per_thread, rounds, json } => {
            joinload::validation_scaling(&fixture, &threads, per_thread, rounds).map(|points| {
                if json {
                    let all: Vec<_> = points.iter().map(joinload::ScalingPoint::json).collect();
                    println!("{}", serde_json::Value::Array(all));
                } else {
                    for p in &points {
                        println!(
                            "threads {}: {:.0} validations/s ({} in {:.1} ms); on-CPU {:.1} ms, run-queue wait {:.1} ms, blocked {:.1} ms",
                            p.threads,
                            p.per_second(),
                            p.validations,
                            p.wall.as_secs_f64() * 1e3,
                            p.on_cpu.as_secs_f64() * 1e3,
                            p.runqueue.as_secs_f64() * 1e3,
                            p.blocked().as_secs_f64() * 1e3,
                        );
                    }
                }
                true
            })
        }
        Command::Run {
            fixture,
            addr,
            concurrency,
            joins,
            duration,
            rate,
            warmup,
            aks,
            nodes,
            timeout,
            verify_certs,
            progress,
            worker_threads,
            json,
            verify_server,
            server_ek_ca,
            sources,
            attack,
        } => {
            let server = match server_check(verify_server, &server_ek_ca) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("join-load: {e}");
                    return ExitCode::from(2);
                }
            };
            let sources = sources.unwrap_or(if addr.ip().is_loopback() { concurrency as u32 } else { 0 });
            let config = (|| {
                let load = LoadConfig {
                    addr,
                    concurrency,
                    joins,
                    max_duration: seconds("duration", duration)?,
                    rate: rate.filter(|r| *r > 0.0),
                    warmup: seconds("warmup", warmup)?,
                    timeout: seconds("timeout", timeout)?,
                    progress: progress.map(|p| seconds("progress", p)).transpose()?,
                    sources: (0..sources).map(genuine_source).collect(),
                };
                Ok::<_, String>((load, attack.config(addr)?))
            })();
            let (config, attack) = match config {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("join-load: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut runtime = tokio::runtime::Builder::new_multi_thread();
            if let Some(n) = worker_threads {
                runtime.worker_threads(n.max(1));
            }
            match runtime.enable_all().build() {
                Err(e) => Err(e.into()),
                Ok(rt) => rt
                    .block_on(async {
                        let attacker = attack.as_ref().map(Attack::start);
                        let report = run(&fixture, &config, aks, nodes, verify_certs, server).await;
                        let attacked = match attacker {
                            Some(a) => Some(a.stop().await),
                            None => None,
                        };
                        report.map(|r| (r, attacked))
                    })
                    .map(|(report, attacked)| {
                        if json {
                            let mut v = report.json();
                            if let Some(a) = &attacked {
                                v["attack"] = a.json();
                            }
                            println!("{v}");
                        } else {
                            print!("{}", report.text());
                            if let Some(a) = attacked {
                                println!(
                                    "attack: {} sockets opened, {} closed by the servers and re-opened, {} connects failed",
                                    a.opened, a.closed_by_server, a.connect_failures
                                );
                            }
                        }
                        report.error_count() == 0
                    }),
            }
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("join-load: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(
    dir: &std::path::Path,
    config: &LoadConfig,
    aks: Option<usize>,
    nodes: usize,
    verify_certs: bool,
    server: Option<Arc<ServerCheck>>,
) -> Result<joinload::Report, joinload::BoxError> {
    let mut issuers = joinload::load_issuers(dir)?;
    if let Some(n) = aks {
        if n == 0 || n > issuers.len() {
            return Err(format!("--aks {n}: the fixture has {} AKs", issuers.len()).into());
        }
        issuers.truncate(n);
    }
    let ca = if verify_certs {
        let path = dir.join(fixture::PKI_DIR).join("ca.crt");
        let pem = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Some(openssl::x509::X509::from_pem(&pem)?.public_key()?)
    } else {
        None
    };
    let requests = joinload::node_requests(nodes.max(issuers.len()).max(1))?;
    joinload::load::run_checking_server(config, &issuers, requests, ca, server).await
}

/// The check of the join service that `--verify-server` / `--server-ek-ca` ask for.
fn server_check(verify: bool, ek_ca: &[PathBuf]) -> Result<Option<Arc<ServerCheck>>, String> {
    if ek_ca.is_empty() {
        return Ok(verify.then(|| Arc::new(ServerCheck::new(None))));
    }
    let bundle = EkCaBundle::from_files(ek_ca).map_err(|e| format!("--server-ek-ca: {e}"))?;
    Ok(Some(Arc::new(ServerCheck::new(Some(bundle)))))
}
