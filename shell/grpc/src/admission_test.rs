#![allow(clippy::many_single_char_names)] // connections a…f, in admission order
use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn config(max_connections: usize, per_peer: usize, handshakes: usize, handshakes_per_peer: usize) -> AdmissionConfig {
    AdmissionConfig {
        max_connections,
        max_connections_per_peer: per_peer,
        max_handshakes: handshakes,
        max_handshakes_per_peer: handshakes_per_peer,
        handshake_timeout: Duration::from_secs(60),
        first_byte_timeout: Duration::from_secs(60),
    }
}

/// The server read from an admitted connection and found nothing (yet).
fn polled(a: &Admitted) -> &Admitted {
    a.reads.polled.store(true, Ordering::Release);
    a
}

/// Bytes "received" on an admitted connection.
fn send(a: &Admitted, n: u64) {
    polled(a).reads.bytes.fetch_add(n, Ordering::Release);
}

/// Admits and marks read (the server looked at it).
fn admit_polled(table: &Arc<Admission>, peer: &str) -> Admitted {
    let a = table.admit(addr(peer)).unwrap();
    polled(&a);
    a
}

fn shed(a: &Admitted) -> bool {
    a.slot.shed.is_fired()
}

#[test]
fn peers_are_ipv4_addresses_and_ipv6_slash_64s() {
    assert_eq!(PeerKey::of(&addr("10.0.0.1:1")), PeerKey::of(&addr("10.0.0.1:2")));
    assert_ne!(PeerKey::of(&addr("10.0.0.1:1")), PeerKey::of(&addr("10.0.0.2:1")));
    assert_eq!(PeerKey::of(&addr("[2001:db8:1:2::1]:1")), PeerKey::of(&addr("[2001:db8:1:2:ffff::9]:5")));
    assert_ne!(PeerKey::of(&addr("[2001:db8:1:2::1]:1")), PeerKey::of(&addr("[2001:db8:1:3::1]:1")));
    assert_eq!(PeerKey::of(&addr("[::ffff:10.0.0.1]:1")), PeerKey::of(&addr("10.0.0.1:9")));
    assert_eq!(PeerKey::of(&addr("[2001:db8:1:2::1]:1")).to_string(), "2001:db8:1:2::/64");
}

#[test]
fn a_full_pending_set_sheds_the_oldest_silent_connection_first() {
    let table = Admission::new(config(100, 100, 3, 100));
    let a = admit_polled(&table, "10.0.0.1:1");
    let b = admit_polled(&table, "10.0.0.2:1");
    let c = admit_polled(&table, "10.0.0.3:1");
    send(&a, 300); // a spoke, b and c are silent
    let d = admit_polled(&table, "10.0.0.4:1");
    assert!(!shed(&a) && shed(&b) && !shed(&c), "the oldest silent one goes first");
    let e = admit_polled(&table, "10.0.0.5:1");
    assert!(shed(&c) && !shed(&a));
    send(&d, 1);
    send(&e, 1);
    // Nobody silent: the one that sent the fewest bytes goes, the oldest of those (d before e; a sent 300).
    let f = admit_polled(&table, "10.0.0.6:1");
    assert!(!shed(&a) && shed(&d) && !shed(&e));
    send(&e, 1000);
    send(&f, 1000);
    let _g = table.admit(addr("10.0.0.7:1")).unwrap();
    assert!(shed(&a) && !shed(&e) && !shed(&f), "a trickle of 300 bytes goes before a whole ClientHello");
    let s = table.stats();
    assert_eq!((s.pending, s.established_open, s.admitted, s.evicted), (3, 0, 7, 4));
    // A shed connection cannot be established afterwards.
    assert!(!a.promoter().establish());
    assert!(e.promoter().establish());
}

#[test]
fn a_peer_over_its_handshake_limit_sheds_its_own_connections_only() {
    let table = Admission::new(config(100, 10, 50, 2));
    let other = admit_polled(&table, "10.0.0.9:1");
    let a1 = admit_polled(&table, "10.0.0.1:1");
    let a2 = admit_polled(&table, "10.0.0.1:2");
    let a3 = admit_polled(&table, "10.0.0.1:3");
    assert!(shed(&a1) && !shed(&a2) && !shed(&a3) && !shed(&other));
    // Established connections of the peer count against its connection limit, not its handshake limit.
    assert!(a2.promoter().establish() && a3.promoter().establish());
    let more: Vec<_> = (0..8)
        .map(|i| {
            let a = table.admit(addr(&format!("10.0.0.1:{}", 10 + i))).unwrap();
            a.promoter().establish();
            a
        })
        .collect();
    // 10 established: the peer is full and has nothing pending to shed.
    assert_eq!(table.admit(addr("10.0.0.1:99")).unwrap_err(), Refusal::PeerLimit);
    assert!(!shed(&other));
    drop(more);
    assert!(table.admit(addr("10.0.0.1:99")).is_ok());
    assert_eq!(table.stats().refused_peer_limit, 1);
}

#[tokio::test]
async fn a_peers_handshakes_beyond_its_limit_wait_their_turn_instead_of_being_shed() {
    let table = Admission::new(config(100, 10, 50, 2));
    let a1 = admit_polled(&table, "10.0.0.1:1");
    let a2 = admit_polled(&table, "10.0.0.1:2");
    send(&a1, 300); // both mid-handshake: a burst of genuine connections, nothing silent to shed
    send(&a2, 300);
    let a3 = table.admit(addr("10.0.0.1:3")).unwrap();
    let a4 = table.admit(addr("10.0.0.1:4")).unwrap();
    assert!(!shed(&a1) && !shed(&a2) && !shed(&a3) && !shed(&a4));
    let s = table.stats();
    assert_eq!((s.pending, s.queued, s.queued_total, s.evicted), (4, 2, 2, 0));
    // A queued connection's work is not polled (nothing read) until one of the peer's handshakes ends.
    let polled3 = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&polled3);
    let run3 = tokio::spawn(a3.supervise(async move {
        flag.store(true, Ordering::Release);
        std::future::pending::<()>().await;
    }));
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!polled3.load(Ordering::Acquire), "queued work ran before its turn");
    assert!(a1.promoter().establish()); // a1's handshake ends: the oldest queued (a3) starts
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(polled3.load(Ordering::Acquire), "queued work did not start");
    assert_eq!(table.stats().queued, 1);
    // Another peer is not affected, and a peer's silent handshake is still shed rather than queued behind.
    let other = admit_polled(&table, "10.0.0.9:1");
    assert!(!shed(&other));
    drop(a2); // a2 gone: a4 starts
    assert_eq!(table.stats().queued, 0);
    let a5 = admit_polled(&table, "10.0.0.1:5"); // the peer is at 2 handshaking (a3, a4): queued
    assert_eq!(table.stats().queued, 1);
    drop(a5);
    run3.abort();
    let _ = run3.await;
    drop((a1, a4, other));
    let s = table.stats();
    assert_eq!((s.pending, s.queued, s.established_open), (0, 0, 0));
    assert!(table.lock().peers.is_empty());
}

#[tokio::test]
async fn a_queued_connection_keeps_the_deadline_of_its_accept_and_is_shed_first() {
    let mut c = config(100, 10, 3, 1);
    c.handshake_timeout = Duration::from_millis(100);
    let table = Admission::new(c);
    let a = admit_polled(&table, "10.0.0.1:1");
    send(&a, 100);
    let queued = table.admit(addr("10.0.0.1:2")).unwrap();
    assert_eq!(queued.supervise(std::future::pending::<()>()).await, Err(Shed::Deadline));
    // Under the listener's pending cap a queued connection (nothing spent on it) is the first victim.
    let q = table.admit(addr("10.0.0.1:3")).unwrap();
    let b = admit_polled(&table, "10.0.0.2:1");
    send(&b, 1);
    let _c = table.admit(addr("10.0.0.3:1")).unwrap();
    assert!(shed(&q) && !shed(&a) && !shed(&b));
}

#[test]
fn a_full_listener_reclaims_the_oldest_idle_established_connection_never_a_busy_one() {
    let table = Admission::new(config(3, 2, 3, 2));
    let busy = Arc::new(AtomicBool::new(false));
    let established: Vec<_> = ["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"]
        .iter()
        .map(|peer| {
            let a = table.admit(addr(peer)).unwrap();
            assert!(a.promoter().establish());
            a
        })
        .collect();
    // The first is busy (a call in flight), the other two idle; the third never said how to tell.
    let first_busy = Arc::clone(&busy);
    let r0 = established[0].promoter().reclaimable(move || !first_busy.load(Ordering::Acquire)).unwrap();
    busy.store(true, Ordering::Release);
    let r1 = established[1].promoter().reclaimable(|| true).unwrap();
    let newcomer = table.admit(addr("10.0.0.9:1")).unwrap();
    assert!(!r0.0.is_fired() && r1.0.is_fired(), "the oldest idle one goes, not the busy one");
    let s = table.stats();
    assert_eq!((s.established_open, s.pending, s.reclaimed), (2, 1, 1), "{s:?}");
    // Dropping the reclaimed connection frees nothing twice.
    let mut established = established;
    drop(established.remove(1));
    assert_eq!(table.stats().established_open, 2);
    // Nothing idle left (and the pending newcomer not yet read from): a full listener refuses.
    assert_eq!(table.admit(addr("10.0.0.8:1")).unwrap_err(), Refusal::ConnectionLimit);
    assert!(newcomer.promoter().establish());
    assert_eq!(table.admit(addr("10.0.0.7:1")).unwrap_err(), Refusal::ConnectionLimit);
    // Once the busy one's call ends, it is the one reclaimed.
    busy.store(false, Ordering::Release);
    assert!(table.admit(addr("10.0.0.7:1")).is_ok());
    assert!(r0.0.is_fired());
    drop(established);
    drop(newcomer);
    assert!(table.lock().peers.is_empty() && table.lock().established.is_empty());
}

#[test]
fn established_connections_are_never_shed_and_a_full_listener_refuses() {
    let table = Admission::new(config(4, 4, 2, 4));
    let held: Vec<_> = (1..=4)
        .map(|i| {
            let a = table.admit(addr(&format!("10.0.0.{i}:1"))).unwrap();
            assert!(a.promoter().establish());
            a
        })
        .collect();
    assert_eq!(table.admit(addr("10.0.0.9:1")).unwrap_err(), Refusal::ConnectionLimit);
    assert!(held.iter().all(|a| !shed(a)));
    drop(held);
    let s = table.stats();
    assert_eq!((s.pending, s.established_open, s.refused_connection_limit), (0, 0, 1));
    // Pending connections fill at most max_handshakes of the slots: the rest is the established reserve.
    let p1 = admit_polled(&table, "10.0.0.1:1");
    let p2 = admit_polled(&table, "10.0.0.2:1");
    let p3 = admit_polled(&table, "10.0.0.3:1");
    assert!(shed(&p1) && !shed(&p2) && !shed(&p3));
    assert_eq!(table.stats().pending, 2);
}

#[test]
fn dropping_frees_every_count() {
    let table = Admission::new(config(10, 10, 10, 10));
    {
        let a = table.admit(addr("10.0.0.1:1")).unwrap();
        let b = table.admit(addr("10.0.0.1:2")).unwrap();
        b.promoter().establish();
        let _c = table.admit(addr("10.0.0.2:1")).unwrap();
        drop(a);
        let s = table.stats();
        assert_eq!((s.pending, s.established_open), (1, 1));
    }
    let s = table.stats();
    assert_eq!((s.pending, s.established_open), (0, 0));
    assert!(table.lock().peers.is_empty());
}

#[tokio::test]
async fn supervision_closes_silent_late_and_evicted_connections_only_while_pending() {
    let mut c = config(10, 10, 1, 10);
    c.first_byte_timeout = Duration::from_millis(50);
    c.handshake_timeout = Duration::from_millis(200);
    let table = Admission::new(c);
    let forever = std::future::pending::<()>;

    let silent = table.admit(addr("10.0.0.1:1")).unwrap();
    assert_eq!(silent.supervise(forever()).await, Err(Shed::Silent));

    let slow = table.admit(addr("10.0.0.1:2")).unwrap();
    send(&slow, 1); // a trickle does not extend the deadline
    assert_eq!(slow.supervise(forever()).await, Err(Shed::Deadline));

    let first = admit_polled(&table, "10.0.0.1:3");
    send(&first, 1);
    let run = tokio::spawn(first.supervise(forever()));
    tokio::task::yield_now().await;
    let second = table.admit(addr("10.0.0.2:1")).unwrap(); // max_handshakes = 1: `first` is shed
    assert_eq!(run.await.unwrap(), Err(Shed::Evicted));
    drop(second);

    // Established before the deadline: the work decides, however long it takes.
    let ok = table.admit(addr("10.0.0.3:1")).unwrap();
    let promoter = ok.promoter();
    let work = async move {
        assert!(promoter.establish());
        tokio::time::sleep(Duration::from_millis(400)).await;
        7
    };
    assert_eq!(ok.supervise(work).await, Ok(7));
    let s = table.stats();
    assert_eq!((s.silent, s.deadline, s.evicted, s.established), (1, 1, 1, 1));
}

#[test]
fn metrics_name_every_limit_and_event() {
    let table = Admission::new(AdmissionConfig::default());
    let _a = table.admit(addr("10.0.0.1:1")).unwrap();
    let mut out = String::new();
    render_metrics(&mut out, &[("join", table.stats()), ("registration", table.stats())]);
    for line in [
        "attest_admission_limit{server=\"join\",limit=\"max_connections\"} 1024",
        "attest_admission_limit{server=\"join\",limit=\"max_connections_per_peer\"} 32",
        "attest_admission_limit{server=\"join\",limit=\"max_handshakes\"} 128",
        "attest_admission_limit{server=\"join\",limit=\"max_handshakes_per_peer\"} 8",
        "attest_admission_limit{server=\"join\",limit=\"handshake_timeout_seconds\"} 10",
        "attest_admission_limit{server=\"join\",limit=\"first_byte_timeout_seconds\"} 3",
        "attest_admission_connections{server=\"registration\",state=\"pending\"} 1",
        "attest_admission_events_total{server=\"join\",event=\"admitted\"} 1",
        "attest_admission_events_total{server=\"join\",event=\"evicted\"} 0",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
    }
    assert_eq!(out.matches("# TYPE").count(), 3);
}

#[test]
fn connections_the_server_has_not_read_from_are_never_shed() {
    let table = Admission::new(config(2, 2, 2, 2));
    let a = table.admit(addr("10.0.0.1:1")).unwrap();
    let b = table.admit(addr("10.0.0.2:1")).unwrap();
    assert_eq!(table.admit(addr("10.0.0.3:1")).unwrap_err(), Refusal::ConnectionLimit);
    assert_eq!(table.admit(addr("10.0.0.1:2")).unwrap_err(), Refusal::ConnectionLimit);
    polled(&b);
    let _c = table.admit(addr("10.0.0.3:1")).unwrap();
    assert!(!shed(&a) && shed(&b));
}
