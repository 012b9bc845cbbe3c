//! What fair admission costs per accepted connection (`attest_grpc::admission`, issue 28): admitting and
//! releasing one connection into an empty table, and admitting one into a full pending set (128 silent
//! connections, the default `max_handshakes`), which scans for the victim and sheds it — the cost every
//! connection pays while an attacker holds the pending slots.
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
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    admission(&mut c);
    c.final_summary();
}
