//! Fair admission of connections: no caller starves the others.
//!
//! Every listener of the services (gRPC, aTLS, mutual TLS, and the plain HTTP/1.1 endpoints `/metrics` and
//! the node's verify service) admits a TCP connection through one [`Admission`] table before it reads a
//! byte. A connection is **pending** from accept until it has proved it is a real client — its TLS or aTLS
//! handshake, the HTTP/2 preface and its first complete request headers (HTTP/1.1: the request head) — and
//! **established** after. Pending connections are the cheap ones to hold (an idle socket costs an attacker
//! nothing), so they are the ones the table bounds and sheds:
//!
//! ```text
//!  accept(peer) ──▶ per peer: open ≥ max_connections_per_peer ─┬─ the peer has a pending one → evict it, admit
//!                                                            └─ none → reclaim the peer's oldest idle
//!                                                               established one; none idle → refuse
//!                   all: open ≥ max_connections ─┬─ some pending → evict the victim, admit
//!                                                └─ none (all established) → reclaim the oldest idle
//!                                                   established one, admit; none idle → refuse
//!                   all: pending ≥ max_handshakes ──▶ evict the victim, admit
//!                   per peer: handshaking ≥ max_handshakes_per_peer ─┬─ one of them silent → evict it, admit
//!                                                                    └─ none → admit *queued*: not read
//!                      until one of the peer's handshakes ends (the oldest queued goes first)
//!  pending ── handshake + first request within handshake_timeout of accept ──▶ established (never evicted;
//!     │     when every slot is established, the oldest *idle* one — no call in flight — is reclaimed)
//!     │  no byte at all within first_byte_timeout ──▶ closed
//!     │  handshake_timeout passes (trickled bytes do not extend it) ──▶ closed
//!     └─ chosen as a victim ──▶ closed
//! ```
//!
//! The **victim** is the pending connection that has sent the fewest bytes, the oldest of those — among
//! those the server has already tried to read from: a genuine client sends its whole ClientHello (or
//! preface, or request line) the moment it connects, so it leaves the idle set at once and outlives every
//! idle socket and every slow-loris trickle an attacker holds, and a connection is never judged idle
//! before the server has looked (the accept loop yields to each new connection's task, which reads at
//! once). With no such victim the new connection is refused.
//!
//! Why this shape:
//! - **A reserve for those who finish.** At most `max_handshakes` of the `max_connections` slots can be
//!   pending, so at least `max_connections − max_handshakes` are reachable only by completing a handshake;
//!   and an admitted connection that completes its handshake keeps its slot (promotion frees nothing and
//!   needs nothing). Sockets that never finish — idle, slow-loris, stalled handshakes — can never hold
//!   the established slots.
//! - **Shedding, not refusing, when full.** The old rule closed the *new* connection when the table was
//!   full, so 1,100 idle sockets re-opened every 10 s locked every genuine node out. Evicting the victim
//!   instead means an attacker must out-pace every genuine handshake, from more addresses than the per-peer
//!   limits allow, to keep one genuine node out.
//! - **Per peer.** A peer is a source IPv4 address, or an IPv6 /64 (what one host usually owns). One peer
//!   can hold at most `max_connections_per_peer` connections and `max_handshakes_per_peer` pending ones;
//!   beyond the latter it sheds its *own* silent sockets, and its further connections wait in a queue
//!   (unread, so they cost no handshake work) until one of its handshakes ends, so it can only hurt itself
//!   and a genuine burst from one address (a join service opening many connections at once) is served in
//!   turn instead of shed. Queued connections count as pending for the listener's limits, with no bytes:
//!   they are the first victims, and their deadline runs from accept. A deployment that puts a
//!   source-NAT in front of a service (all clients one address) must raise the per-peer limits.
//! - **Counted bytes.** [`Counted`] counts the bytes a pending connection sends: none within
//!   `first_byte_timeout` closes it (no client waits before its first byte), and the count picks victims
//!   (fewest first). The handshake deadline runs from accept and is never extended by bytes trickling in.
//! - **Idle established connections give way.** A client that completes its handshake and a request and
//!   then holds the connection idle (HTTP/2 keeps it up to `idle_timeout`) would, from enough addresses,
//!   fill every slot with nothing left to shed. A listener whose slots are all established therefore
//!   reclaims, for a new connection, the oldest established connection with no call in flight (the gRPC
//!   server tells the table which are idle: [`Promoter::reclaimable`]); the server sends it GOAWAY, so its
//!   client reconnects for its next call. Connections with a call in flight are never reclaimed.
//!
//! Every decision is counted ([`AdmissionStats`]) and rendered with the limits for `/metrics`
//! ([`render_metrics`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Default bound on open connections of one peer (pending and established): a node opens one or two at a
/// time; 32 leaves room for a few nodes behind one address.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 32;
/// Default bound on pending connections (handshake not finished) of one listener: an eighth of the default
/// `max_connections` (1024), so seven eighths are reserved for connections that completed their handshake. Far above the handshakes a cluster runs at once (the join
/// load benchmark peaks at 64).
pub const DEFAULT_MAX_HANDSHAKES: usize = 128;
/// Default bound on pending connections of one peer: a node runs one handshake at a time.
pub const DEFAULT_MAX_HANDSHAKES_PER_PEER: usize = 8;
/// Default time a new connection has to send its first byte. Clients speak first in TLS, HTTP/2 and
/// HTTP/1.1 and do so the moment they connect; a socket silent this long is idle by intent.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(3);

/// The limits of one listener's [`Admission`] table (the gRPC server takes them from its `ServerConfig`; the
/// default is `ServerConfig::default()`'s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Open connections (pending and established).
    pub max_connections: usize,
    /// Open connections of one peer.
    pub max_connections_per_peer: usize,
    /// Pending connections.
    pub max_handshakes: usize,
    /// Pending connections of one peer.
    pub max_handshakes_per_peer: usize,
    /// Time from accept to the end of the pending phase (handshake and first request).
    pub handshake_timeout: Duration,
    /// Time from accept to the first byte received.
    pub first_byte_timeout: Duration,
}

/// What one peer is, for the per-peer limits: an IPv4 address, or the /64 of an IPv6 address
/// (IPv4-mapped IPv6 addresses count as their IPv4 address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerKey(IpAddr);

impl PeerKey {
    /// The peer `addr` belongs to.
    pub fn of(addr: &SocketAddr) -> PeerKey {
        match addr.ip() {
            IpAddr::V4(v4) => PeerKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                if let Some(v4) = v6.to_ipv4_mapped() {
                    PeerKey(IpAddr::V4(v4))
                } else {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    PeerKey(IpAddr::V6(prefix.into()))
                }
            }
        }
    }
}

impl std::fmt::Display for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}"),
            IpAddr::V6(a) => write!(f, "{a}/64"),
        }
    }
}

/// Why a connection was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The peer holds `max_connections_per_peer` connections, none of them a pending one to shed.
    PeerLimit,
    /// The listener holds `max_connections` connections, none of them a pending one to shed.
    ConnectionLimit,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::PeerLimit => "the peer's connection limit is reached (nothing to shed)",
            Refusal::ConnectionLimit => "the connection limit is reached (nothing to shed)",
        })
    }
}

/// Why a pending connection was closed before it was established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shed {
    /// Chosen as the victim to make room for a new connection.
    Evicted,
    /// No byte within `first_byte_timeout`.
    Silent,
    /// Not established within `handshake_timeout` of accept.
    Deadline,
}

/// Counters of one [`Admission`] table (monotonic, except the two gauges).
#[derive(Debug, Default)]
struct Counters {
    admitted: AtomicU64,
    established: AtomicU64,
    refused_peer: AtomicU64,
    refused_total: AtomicU64,
    evicted: AtomicU64,
    silent: AtomicU64,
    deadline: AtomicU64,
    queued: AtomicU64,
    reclaimed: AtomicU64,
}

/// A snapshot of an [`Admission`] table: its limits, what it holds now and what it decided so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionStats {
    /// The limits.
    pub config: AdmissionConfig,
    /// Connections open now, pending (queued ones included).
    pub pending: usize,
    /// Of those, queued: waiting for one of their peer's handshakes to end.
    pub queued: usize,
    /// Connections open now, established.
    pub established_open: usize,
    /// Connections admitted so far.
    pub admitted: u64,
    /// Connections established so far.
    pub established: u64,
    /// Refused: the peer's established connections filled its limit.
    pub refused_peer_limit: u64,
    /// Refused: established connections filled the listener.
    pub refused_connection_limit: u64,
    /// Pending connections evicted to make room.
    pub evicted: u64,
    /// Pending connections closed for sending nothing within `first_byte_timeout`.
    pub silent: u64,
    /// Pending connections closed at `handshake_timeout`.
    pub deadline: u64,
    /// Connections that waited in their peer's queue.
    pub queued_total: u64,
    /// Idle established connections reclaimed for a new one.
    pub reclaimed: u64,
}

struct PendingEntry {
    peer: PeerKey,
    reads: Arc<Reads>,
    shed: Arc<ShedSignal>,
    /// Not yet handshaking: waits for one of its peer's handshakes to end (fired when it may start).
    queued: Option<Arc<ShedSignal>>,
}

#[derive(Default)]
struct PeerCount {
    open: usize,
    /// Pending and handshaking (not queued).
    pending: usize,
    queued: usize,
}

/// An established connection that may be reclaimed when idle.
struct EstablishedEntry {
    peer: PeerKey,
    idle: Box<dyn Fn() -> bool + Send + Sync>,
    reclaim: Arc<ShedSignal>,
}

#[derive(Default)]
struct Table {
    /// Established connections that said how to tell they are idle ([`Promoter::reclaimable`]), by id.
    established: BTreeMap<u64, EstablishedEntry>,
    next_id: u64,
    /// Pending connections (queued ones too) by admission order (ids grow: the first entry is the oldest).
    pending: BTreeMap<u64, PendingEntry>,
    peers: HashMap<PeerKey, PeerCount>,
    open: usize,
    /// `max_handshakes_per_peer`.
    handshakes_per_peer: usize,
}

impl Table {
    /// The victim among pending entries the server has read from (of `peer` only, when given): the one
    /// that sent the fewest bytes, the oldest of those. Queued entries count as read and silent (nothing was
    /// spent on them yet). With `silent_only`, only a handshaking entry that sent nothing qualifies.
    fn victim(&self, peer: Option<PeerKey>, silent_only: bool) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None;
        for (&id, e) in &self.pending {
            if peer.is_some_and(|p| p != e.peer) {
                continue;
            }
            if e.queued.is_some() {
                if silent_only {
                    continue;
                }
                return Some(id);
            }
            if !e.reads.polled.load(Ordering::Acquire) {
                continue;
            }
            let bytes = e.reads.bytes.load(Ordering::Acquire);
            if silent_only && bytes > 0 {
                continue;
            }
            if bytes == 0 {
                return Some(id); // ids ascend: the oldest silent one
            }
            if best.is_none_or(|(b, _)| bytes < b) {
                best = Some((bytes, id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// Removes a pending entry and its counts (a handshake that ends lets the peer's oldest queued entry
    /// start); returns it.
    fn remove_pending(&mut self, id: u64) -> Option<PendingEntry> {
        let e = self.pending.remove(&id)?;
        self.open -= 1;
        let peer = self.peers.get_mut(&e.peer).expect("counted peer");
        peer.open -= 1;
        if e.queued.is_some() {
            peer.queued -= 1;
        } else {
            peer.pending -= 1;
            self.start_queued(e.peer);
        }
        if self.peers.get(&e.peer).is_some_and(|p| p.open == 0) {
            self.peers.remove(&e.peer);
        }
        Some(e)
    }

    /// Lets the oldest queued entry of `peer` start its handshake, if the peer has room.
    fn start_queued(&mut self, peer: PeerKey) {
        let Some(count) = self.peers.get_mut(&peer) else { return };
        if count.queued == 0 || count.pending >= self.handshakes_per_peer {
            return;
        }
        if let Some(e) = self.pending.values_mut().find(|e| e.peer == peer && e.queued.is_some()) {
            count.queued -= 1;
            count.pending += 1;
            if let Some(go) = e.queued.take() {
                go.fire();
            }
        }
    }

    /// Reclaims the oldest idle established connection (of `peer` only, when given): frees its counts and
    /// tells its server to close it. `false` if none is idle.
    fn reclaim_idle(&mut self, peer: Option<PeerKey>, counters: &Counters) -> bool {
        let Some(id) =
            self.established.iter().find(|(_, e)| peer.is_none_or(|p| p == e.peer) && (e.idle)()).map(|(id, _)| *id)
        else {
            return false;
        };
        let e = self.established.remove(&id).expect("found above");
        e.reclaim.fire();
        self.open -= 1;
        if let Some(p) = self.peers.get_mut(&e.peer) {
            p.open -= 1;
            if p.open == 0 {
                self.peers.remove(&e.peer);
            }
        }
        counters.reclaimed.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn evict(&mut self, id: u64, counters: &Counters) {
        if let Some(e) = self.remove_pending(id) {
            e.shed.fire();
            counters.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The signal a pending connection's supervisor waits on.
#[derive(Default)]
struct ShedSignal {
    fired: AtomicBool,
    notify: Notify,
}

impl ShedSignal {
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    fn is_fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}

/// One listener's admission table. Cheap to share (`Arc`).
pub struct Admission {
    config: AdmissionConfig,
    table: Mutex<Table>,
    counters: Counters,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Admission {
    /// A table with these limits (each at least 1).
    pub fn new(mut config: AdmissionConfig) -> Arc<Admission> {
        config.max_connections = config.max_connections.max(1);
        config.max_handshakes = config.max_handshakes.clamp(1, config.max_connections);
        config.max_connections_per_peer = config.max_connections_per_peer.max(1);
        config.max_handshakes_per_peer = config.max_handshakes_per_peer.clamp(1, config.max_connections_per_peer);
        let table = Table { handshakes_per_peer: config.max_handshakes_per_peer, ..Table::default() };
        Arc::new(Admission { config, table: Mutex::new(table), counters: Counters::default() })
    }

    /// The limits.
    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits a connection from `peer` accepted now, shedding a pending victim where a limit is reached
    /// (module docs), or refuses it.
    pub fn admit(self: &Arc<Self>, peer: SocketAddr) -> Result<Admitted, Refusal> {
        let key = PeerKey::of(&peer);
        let c = &self.config;
        let now = Instant::now();
        let mut t = self.lock();
        let peer_open = t.peers.get(&key).map_or(0, |p| p.open);
        let refuse = |why: Refusal| {
            let counter = match why {
                Refusal::PeerLimit => &self.counters.refused_peer,
                Refusal::ConnectionLimit => &self.counters.refused_total,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            Err(why)
        };
        if peer_open >= c.max_connections_per_peer {
            match t.victim(Some(key), false) {
                Some(id) => t.evict(id, &self.counters),
                None if t.reclaim_idle(Some(key), &self.counters) => {}
                None => return refuse(Refusal::PeerLimit),
            }
        }
        if t.open >= c.max_connections || t.pending.len() >= c.max_handshakes {
            match t.victim(None, false) {
                Some(id) => t.evict(id, &self.counters),
                None if t.open >= c.max_connections && t.reclaim_idle(None, &self.counters) => {}
                None => return refuse(Refusal::ConnectionLimit),
            }
        }
        let mut queued = None;
        if t.peers.get(&key).is_some_and(|p| p.pending >= c.max_handshakes_per_peer) {
            match t.victim(Some(key), true) {
                Some(id) => t.evict(id, &self.counters),
                None => queued = Some(Arc::new(ShedSignal::default())),
            }
        }
        let id = t.next_id;
        t.next_id += 1;
        let reads = Arc::new(Reads::default());
        let shed = Arc::new(ShedSignal::default());
        let start = queued.clone();
        let entry = PendingEntry { peer: key, reads: Arc::clone(&reads), shed: Arc::clone(&shed), queued };
        t.pending.insert(id, entry);
        t.open += 1;
        let p = t.peers.entry(key).or_default();
        p.open += 1;
        if start.is_some() {
            p.queued += 1;
        } else {
            p.pending += 1;
        }
        drop(t);
        self.counters.admitted.fetch_add(1, Ordering::Relaxed);
        if start.is_some() {
            self.counters.queued.fetch_add(1, Ordering::Relaxed);
        }
        let deadline = now + c.handshake_timeout;
        Ok(Admitted {
            slot: Arc::new(Slot {
                admission: Arc::clone(self),
                id,
                peer: key,
                established: AtomicBool::new(false),
                shed,
            }),
            reads,
            deadline,
            start,
        })
    }

    /// What the table holds and has decided so far.
    pub fn stats(&self) -> AdmissionStats {
        let (pending, queued, open) = {
            let t = self.lock();
            (t.pending.len(), t.peers.values().map(|p| p.queued).sum(), t.open)
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        AdmissionStats {
            config: self.config.clone(),
            pending,
            queued,
            established_open: open - pending,
            admitted: load(&self.counters.admitted),
            established: load(&self.counters.established),
            refused_peer_limit: load(&self.counters.refused_peer),
            refused_connection_limit: load(&self.counters.refused_total),
            evicted: load(&self.counters.evicted),
            silent: load(&self.counters.silent),
            deadline: load(&self.counters.deadline),
            queued_total: load(&self.counters.queued),
            reclaimed: load(&self.counters.reclaimed),
        }
    }
}

/// A connection's place in the table; frees it when the last handle goes.
struct Slot {
    admission: Arc<Admission>,
    id: u64,
    peer: PeerKey,
    established: AtomicBool,
    shed: Arc<ShedSignal>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut t = self.admission.lock();
        if self.established.load(Ordering::Acquire) {
            t.established.remove(&self.id);
            if self.shed.is_fired() {
                return; // reclaimed: its counts were freed then
            }
            t.open -= 1;
            if let Some(p) = t.peers.get_mut(&self.peer) {
                p.open -= 1;
                if p.open == 0 {
                    t.peers.remove(&self.peer);
                }
            }
        } else {
            // Still pending (not evicted, which already freed it).
            t.remove_pending(self.id);
        }
    }
}

/// An admitted connection: its slot, its byte counter and its deadline. Wrap its stream with
/// [`Admitted::counted`], run it under [`Admitted::supervise`] and call [`Promoter::establish`] once the
/// client has proved itself.
pub struct Admitted {
    slot: Arc<Slot>,
    reads: Arc<Reads>,
    deadline: Instant,
    /// Set while queued: fired when the connection may start its handshake.
    start: Option<Arc<ShedSignal>>,
}

/// What the server has read from a connection so far.
#[derive(Debug, Default)]
struct Reads {
    /// Bytes received.
    bytes: AtomicU64,
    /// Whether the server has tried to read (until then the connection is not judged idle).
    polled: AtomicBool,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted").field("peer", &self.slot.peer).field("id", &self.slot.id).finish_non_exhaustive()
    }
}

/// Ends the pending phase of a connection (a cloneable handle for the code that sees the first request).
#[derive(Clone)]
pub struct Promoter(Arc<Slot>);

impl std::fmt::Debug for Promoter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Promoter").field(&self.0.id).finish()
    }
}

impl Promoter {
    /// Marks the connection established. `false` if it was shed first (the caller then closes it).
    pub fn establish(&self) -> bool {
        let slot = &self.0;
        if slot.established.load(Ordering::Acquire) {
            return true;
        }
        let mut t = slot.admission.lock();
        let Some(e) = t.pending.remove(&slot.id) else { return false };
        let p = t.peers.get_mut(&e.peer).expect("counted peer");
        if e.queued.is_some() {
            p.queued -= 1;
        } else {
            p.pending -= 1;
            t.start_queued(e.peer);
        }
        slot.established.store(true, Ordering::Release);
        drop(t);
        slot.admission.counters.established.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Whether the connection is established.
    pub fn is_established(&self) -> bool {
        self.0.established.load(Ordering::Acquire)
    }

    /// Lets the table reclaim this established connection when every slot is taken and `idle()` says it
    /// has no call in flight (module docs). The returned handle completes when it was reclaimed: the
    /// server then closes the connection gracefully (its counts are already freed). `None` if the
    /// connection is not established (or was shed).
    pub fn reclaimable(&self, idle: impl Fn() -> bool + Send + Sync + 'static) -> Option<Reclaim> {
        let slot = &self.0;
        let mut t = slot.admission.lock();
        if !slot.established.load(Ordering::Acquire) || slot.shed.is_fired() {
            return None;
        }
        let entry = EstablishedEntry { peer: slot.peer, idle: Box::new(idle), reclaim: Arc::clone(&slot.shed) };
        t.established.insert(slot.id, entry);
        Some(Reclaim(Arc::clone(&slot.shed)))
    }
}

/// Completes when the table reclaimed an idle established connection ([`Promoter::reclaimable`]).
pub struct Reclaim(Arc<ShedSignal>);

impl std::fmt::Debug for Reclaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Reclaim").field(&self.0.is_fired()).finish()
    }
}

impl Reclaim {
    /// Waits until the connection is reclaimed.
    pub async fn requested(&self) {
        self.0.wait().await;
    }
}

impl Admitted {
    /// `io` with its received bytes counted for this connection.
    pub fn counted<IO>(&self, io: IO) -> Counted<IO> {
        Counted { io, reads: Arc::clone(&self.reads) }
    }

    /// The handle that ends the pending phase.
    pub fn promoter(&self) -> Promoter {
        Promoter(Arc::clone(&self.slot))
    }

    /// Runs `work` (the connection's whole life). A queued connection first waits, `work` not yet polled
    /// (nothing read), until its peer has room for its handshake. While the connection is pending, it is cut
    /// short — `work` dropped, which closes the connection — when it is evicted, sends no byte within
    /// `first_byte_timeout` of its start, or is not established by `handshake_timeout` after accept; `Err`
    /// says which. Once established, only `work` decides.
    pub async fn supervise<F: Future>(self, work: F) -> Result<F::Output, Shed> {
        let config = self.slot.admission.config.clone();
        let deadline = tokio::time::sleep_until(self.deadline);
        tokio::pin!(deadline);
        let counters = &self.slot.admission.counters;
        if let Some(start) = &self.start {
            tokio::select! {
                () = start.wait() => {}
                () = self.slot.shed.wait() => return Err(Shed::Evicted),
                () = &mut deadline => {
                    counters.deadline.fetch_add(1, Ordering::Relaxed);
                    return Err(Shed::Deadline);
                }
            }
        }
        let first_byte = Instant::now() + config.first_byte_timeout;
        let promoter = self.promoter();
        tokio::pin!(work);
        let silence = tokio::time::sleep_until(first_byte);
        tokio::pin!(silence);
        let mut watch_silence = true;
        let outcome = loop {
            let pending = !promoter.is_established();
            tokio::select! {
                out = &mut work => break Ok(out),
                () = self.slot.shed.wait(), if pending => break Err(Shed::Evicted),
                () = &mut deadline, if pending => {
                    if !promoter.is_established() {
                        break Err(Shed::Deadline);
                    }
                }
                () = &mut silence, if pending && watch_silence => {
                    watch_silence = false;
                    if self.reads.bytes.load(Ordering::Acquire) == 0 && !promoter.is_established() {
                        break Err(Shed::Silent);
                    }
                }
            }
        };
        match outcome {
            Err(Shed::Silent) => counters.silent.fetch_add(1, Ordering::Relaxed),
            Err(Shed::Deadline) => counters.deadline.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        outcome
    }
}

/// Accepts connections from `listener` until `stop` completes, admits each into `admission` (a refused one
/// is closed at once, logged at debug), sets TCP_NODELAY, and runs `serve(stream, peer, promoter)` for it in
/// a task of its own under [`Admitted::supervise`]. After each accept it yields, so that the new
/// connection's task reads what its client sent with the connect before more connections compete for its
/// pending slot. `what` names the listener in logs. Returns the accept loop's task.
pub fn accept_loop<S, F, Fut>(
    listener: tokio::net::TcpListener,
    admission: Arc<Admission>,
    stop: S,
    what: &'static str,
    serve: F,
) -> tokio::task::JoinHandle<()>
where
    S: Future<Output = ()> + Send + 'static,
    F: Fn(Counted<tokio::net::TcpStream>, SocketAddr, Promoter) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        tokio::pin!(stop);
        loop {
            let accepted = tokio::select! {
                r = listener.accept() => r,
                () = &mut stop => return,
            };
            match accepted {
                Ok((tcp, peer)) => match admission.admit(peer) {
                    Ok(admitted) => {
                        let _ = tcp.set_nodelay(true);
                        let work = serve(admitted.counted(tcp), peer, admitted.promoter());
                        tokio::spawn(async move {
                            if let Err(why) = admitted.supervise(work).await {
                                tracing::debug!(%peer, ?why, what, "pending connection closed");
                            }
                        });
                        tokio::task::yield_now().await;
                    }
                    Err(why) => tracing::debug!(%peer, %why, what, "connection refused"),
                },
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, what, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    })
}

/// A stream whose received bytes are counted for admission ([`Admitted::counted`]).
#[derive(Debug)]
pub struct Counted<IO> {
    io: IO,
    reads: Arc<Reads>,
}

impl<IO> Counted<IO> {
    /// The wrapped stream.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.reads.bytes.load(Ordering::Acquire)
    }
}

impl Counted<tokio::net::TcpStream> {
    /// The remote address.
    pub fn peer_addr(&self) -> std::io::Result<SocketAddr> {
        self.io.peer_addr()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Counted<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.reads.bytes.fetch_add(n as u64, Ordering::Release);
        }
        // After the read attempt: a connection is judged idle only once the bytes it had sent were seen.
        self.reads.polled.store(true, Ordering::Release);
        r
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Counted<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A listener's admission table, read when called (`/metrics` reads each at every scrape).
pub type StatsSource = Box<dyn Fn() -> AdmissionStats + Send + Sync>;

/// Renders the admission metrics of `tables` (`(server label, stats)`) in the Prometheus text format
/// (0.0.4), one family each:
///
/// | metric | type | labels |
/// |---|---|---|
/// | `attest_admission_limit` | gauge | `server`, `limit` (`max_connections`, `max_connections_per_peer`, `max_handshakes`, `max_handshakes_per_peer`, `handshake_timeout_seconds`, `first_byte_timeout_seconds`) |
/// | `attest_admission_connections` | gauge | `server`, `state` = `pending` (queued included) \| `queued` \| `established` |
/// | `attest_admission_events_total` | counter | `server`, `event` = `admitted` \| `established` \| `refused_peer_limit` \| `refused_connection_limit` \| `evicted` \| `silent` \| `deadline` \| `queued` \| `reclaimed` |
pub fn render_metrics(out: &mut String, tables: &[(&str, AdmissionStats)]) {
    let _ = writeln!(
        out,
        "# HELP attest_admission_limit Admission limits of each listener (docs/LIMITS.md).\n\
         # TYPE attest_admission_limit gauge"
    );
    for (server, s) in tables {
        let c = &s.config;
        for (limit, value) in [
            ("max_connections", c.max_connections.to_string()),
            ("max_connections_per_peer", c.max_connections_per_peer.to_string()),
            ("max_handshakes", c.max_handshakes.to_string()),
            ("max_handshakes_per_peer", c.max_handshakes_per_peer.to_string()),
            ("handshake_timeout_seconds", c.handshake_timeout.as_secs_f64().to_string()),
            ("first_byte_timeout_seconds", c.first_byte_timeout.as_secs_f64().to_string()),
        ] {
            let _ = writeln!(out, "attest_admission_limit{{server=\"{server}\",limit=\"{limit}\"}} {value}");
        }
    }
    let _ = writeln!(
        out,
        "# HELP attest_admission_connections Open connections of each listener, pending (handshake not finished) \
         or established.\n# TYPE attest_admission_connections gauge"
    );
    for (server, s) in tables {
        let _ = writeln!(out, "attest_admission_connections{{server=\"{server}\",state=\"pending\"}} {}", s.pending);
        let _ = writeln!(out, "attest_admission_connections{{server=\"{server}\",state=\"queued\"}} {}", s.queued);
        let _ = writeln!(
            out,
            "attest_admission_connections{{server=\"{server}\",state=\"established\"}} {}",
            s.established_open
        );
    }
    let _ = writeln!(
        out,
        "# HELP attest_admission_events_total Admission decisions of each listener.\n\
         # TYPE attest_admission_events_total counter"
    );
    for (server, s) in tables {
        for (event, n) in [
            ("admitted", s.admitted),
            ("established", s.established),
            ("refused_peer_limit", s.refused_peer_limit),
            ("refused_connection_limit", s.refused_connection_limit),
            ("evicted", s.evicted),
            ("silent", s.silent),
            ("deadline", s.deadline),
            ("queued", s.queued_total),
            ("reclaimed", s.reclaimed),
        ] {
            let _ = writeln!(out, "attest_admission_events_total{{server=\"{server}\",event=\"{event}\"}} {n}");
        }
    }
}

#[cfg(test)]
#[path = "admission_test.rs"]
mod tests;
