//! What fair admission costs per accepted connection (`attest_grpc::admission`): admitting and
//! releasing one connection into an empty table, and admitting one into a full pending set (128 silent
//! connections, the default `max_handshakes`), which scans for the victim and sheds it — the cost every
//! connection pays while an attacker holds the pending slots — and admitting one into a listener whose 1,024
//! slots (the default `max_connections`) are all established, 1,023 of them busy: the scan for the one idle
//! connection and its reclaim, the worst case of an attacker holding established connections.
//!
//! ```sh
//! cargo bench -p attest-benches --bench admission
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use attest_grpc::admission::{Admission, AdmissionConfig, Admitted, DEFAULT_MAX_HANDSHAKES};
use attest_grpc::server::DEFAULT_MAX_CONNECTIONS;
use criterion::Criterion;
use tokio::io::{AsyncRead, ReadBuf};

fn peer(n: u32) -> SocketAddr {
    SocketAddr::from(([10, (n >> 16) as u8, (n >> 8) as u8, n as u8], 40_000))
}

/// Admits a connection from `n` and has the server read from it once, finding nothing (a silent socket).
fn silent(table: &Arc<Admission>, n: u32) -> Admitted {
    let admitted = table.admit(peer(n)).expect("admitted");
    let mut io = admitted.counted(tokio::io::empty());
    let mut buf = [0u8; 16];
    let mut read = ReadBuf::new(&mut buf);
    let _ = Pin::new(&mut io).poll_read(&mut Context::from_waker(Waker::noop()), &mut read);
    admitted
}

fn admission(c: &mut Criterion) {
    let mut g = c.benchmark_group("admission");
    let table = Admission::new(AdmissionConfig::default());
    let mut n = 0u32;
    g.bench_function("admit_release", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            drop(table.admit(peer(n)).expect("admitted"));
        });
    });

    // A full pending set of silent connections from distinct peers: every admission sheds the oldest.
    let full = Admission::new(AdmissionConfig::default());
    let mut held: VecDeque<Admitted> = (0..DEFAULT_MAX_HANDSHAKES as u32).map(|i| silent(&full, i)).collect();
    let mut next = DEFAULT_MAX_HANDSHAKES as u32;
    g.bench_function("admit_shedding_128", |b| {
        b.iter(|| {
            next = next.wrapping_add(1) % 1_000_000;
            held.push_back(silent(&full, next));
            drop(held.pop_front()); // the one just shed
        });
    });
    assert_eq!(full.stats().pending, DEFAULT_MAX_HANDSHAKES);

    // Every slot established, all busy but the newest: each admission scans past the busy ones, reclaims the
    // idle one, and the newcomer (established, idle) is the next one reclaimed.
    let established = Admission::new(AdmissionConfig::default());
    let establish = |n: u32, idle: bool| {
        let a = established.admit(peer(n)).expect("admitted");
        assert!(a.promoter().establish());
        let reclaim = a.promoter().reclaimable(move || idle).expect("established");
        (a, reclaim)
    };
    let busy: Vec<_> = (0..DEFAULT_MAX_CONNECTIONS as u32 - 1).map(|i| establish(i, false)).collect();
    let mut last = establish(DEFAULT_MAX_CONNECTIONS as u32, true);
    let mut next = 2_000_000u32;
    g.bench_function("admit_reclaiming_behind_1023_busy", |b| {
        b.iter(|| {
            next = next.wrapping_add(1) % 1_000_000 + 2_000_000;
            last = establish(next, true); // reclaims the previous newcomer, dropped here
        });
    });
    let s = established.stats();
    assert_eq!(s.established_open, DEFAULT_MAX_CONNECTIONS);
    assert!(s.reclaimed > 0);
    drop((busy, last));
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    admission(&mut c);
    c.final_summary();
}
