//! The attacker of `join-load run --attack-*`: sockets that hold the services' connection limits
//! while the genuine load runs, from many loopback peers, each re-opened a while after the server closes it.
//!
//! | kind | what each socket does | against |
//! |---|---|---|
//! | idle | connects and never sends a byte (the "1,100 idle TCP connections") | the join service, the key service |
//! | slow | sends the first bytes of a TLS record one byte at a time, one every [`AttackConfig::trickle`] (slow loris) | the join service |
//!
//! Attackers connect from `127.66.x.y` ([`attacker_peer`]), genuine clients from `127.77.x.y`
//! ([`genuine_source`]) or 127.0.0.1, so that per-peer limits see them as distinct machines. Everything is
//! bounded: a fixed number of sockets, stopped by [`Attack::stop`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The loopback address of attacker peer `n` (< 62,500): `127.66.x.y`.
pub fn attacker_peer(n: u32) -> IpAddr {
    loopback(66, n)
}

/// The loopback address of genuine client `n` (< 62,500): `127.77.x.y`.
pub fn genuine_source(n: u32) -> IpAddr {
    loopback(77, n)
}

fn loopback(b: u8, n: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, b, (n / 250) as u8, (n % 250) as u8 + 1))
}

/// A TCP connection to `addr` from the local address `source`.
pub async fn connect_from(source: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = if source.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.bind(SocketAddr::new(source, 0))?;
    let tcp = socket.connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// What the attacker holds.
#[derive(Clone, Debug)]
pub struct AttackConfig {
    /// Idle sockets per target.
    pub idle: Vec<(SocketAddr, usize)>,
    /// Slow-loris sockets per target.
    pub slow: Vec<(SocketAddr, usize)>,
    /// Distinct attacker peers the sockets are spread over (round robin).
    pub peers: u32,
    /// How long an attacker waits after the server closed a socket before it opens it again.
    pub reopen_after: Duration,
    /// Interval between the bytes of a slow-loris socket.
    pub trickle: Duration,
}

/// What the attack did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttackReport {
    /// Sockets opened (connects that succeeded), re-opens included.
    pub opened: u64,
    /// Sockets the servers closed while held (each was then opened again).
    pub closed_by_server: u64,
    /// Connects that failed (the server's backlog, refusals).
    pub connect_failures: u64,
}

impl AttackReport {
    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"opened": self.opened, "closed_by_server": self.closed_by_server,
            "connect_failures": self.connect_failures})
    }
}

#[derive(Debug, Default)]
struct Counts {
    opened: AtomicU64,
    closed: AtomicU64,
    failed: AtomicU64,
}

/// A running attack.
#[derive(Debug)]
pub struct Attack {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    counts: Arc<Counts>,
}

impl Attack {
    /// Starts holding the sockets of `config` (returns at once; the sockets connect in the background).
    pub fn start(config: &AttackConfig) -> Attack {
        let (stop, stopped) = watch::channel(false);
        let counts = Arc::new(Counts::default());
        let mut tasks = Vec::new();
        let mut n = 0u32;
        let kinds = config.idle.iter().map(|t| (t, false)).chain(config.slow.iter().map(|t| (t, true)));
        for (&(target, count), slow) in kinds {
            for _ in 0..count {
                let peer = attacker_peer(n % config.peers.max(1));
                n += 1;
                let (stopped, counts) = (stopped.clone(), Arc::clone(&counts));
                let (reopen, trickle) = (config.reopen_after, config.trickle);
                tasks.push(tokio::spawn(hold(peer, target, slow, reopen, trickle, stopped, counts)));
            }
        }
        Attack { stop, tasks, counts }
    }

    /// Closes every socket and reports.
    pub async fn stop(self) -> AttackReport {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        let c = &self.counts;
        AttackReport {
            opened: c.opened.load(Ordering::Relaxed),
            closed_by_server: c.closed.load(Ordering::Relaxed),
            connect_failures: c.failed.load(Ordering::Relaxed),
        }
    }
}

/// The first bytes of a TLS handshake record (ContentType handshake, TLS 1.0 record version, a length the
/// server will wait for), sent one at a time by a slow-loris socket.
const TLS_RECORD_START: [u8; 5] = [0x16, 0x03, 0x01, 0x02, 0x00];

async fn hold(
    peer: IpAddr,
    target: SocketAddr,
    slow: bool,
    reopen_after: Duration,
    trickle: Duration,
    mut stopped: watch::Receiver<bool>,
    counts: Arc<Counts>,
) {
    loop {
        match connect_from(peer, target).await {
            Ok(mut socket) => {
                counts.opened.fetch_add(1, Ordering::Relaxed);
                let (mut r, mut w) = socket.split();
                let held = async {
                    let mut buf = [0u8; 256];
                    let reader = async { while matches!(r.read(&mut buf).await, Ok(n) if n > 0) {} };
                    let writer = async {
                        if !slow {
                            return std::future::pending().await;
                        }
                        for b in TLS_RECORD_START.iter().cycle() {
                            tokio::time::sleep(trickle).await;
                            if w.write_all(&[*b]).await.is_err() {
                                return;
                            }
                        }
                    };
                    tokio::select! {
                        () = reader => {}
                        () = writer => {}
                    }
                };
                tokio::select! {
                    () = held => { counts.closed.fetch_add(1, Ordering::Relaxed); }
                    _ = stopped.wait_for(|stop| *stop) => return,
                }
            }
            Err(_) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(reopen_after) => {}
            _ = stopped.wait_for(|s| *s) => return,
        }
    }
}
