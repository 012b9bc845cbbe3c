//! The cluster state's cost per join (`attest_trust::membership`): what the join service adds to
//! every join and rejoin to bind disks, names and roles to attested identities, on states of 1 000 and
//! 10 000 nodes.
//!
//! | benchmark | what it measures |
//! |---|---|
//! | `membership/returning_join/N` | `admit_join` of a node already bound (its name and disk): the decision, nothing written |
//! | `membership/rejoin/N` | `check_rejoin` of a node's own disk |
//! | `membership/refused_join/N` | `admit_join` of another node's name: the refusal, nothing written |
//! | `membership/persisted_change/N` | one change written to the state file (atomic replace, fsync): what a new node's first join pays on top of the decision |
//!
//! `returning_join` and `persisted_change` run side by side in one group per size, so their ratio is read
//! from one run: `cargo bench -p attest-benches --bench membership`.

use attest_engine::variant::NodeIdentity;
use attest_test_support::TempDir;
use attest_trust::membership::{ClusterState, JoinClaim};
use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;

fn identity(i: usize) -> NodeIdentity {
    NodeIdentity::parse(&format!("ak:{}", hex::encode(openssl::sha::sha256(&i.to_le_bytes())))).unwrap()
}

fn name(i: usize) -> String {
    format!("node-{i}")
}

fn disk(i: usize) -> String {
    let h = hex::encode(&openssl::sha::sha256(format!("disk {i}").as_bytes())[..16]);
    format!("{}-{}-4{}-8{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// A state file of `n` worker nodes, each with one name and one disk, opened.
fn state_of(dir: &TempDir, n: usize) -> ClusterState {
    let nodes: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({"identity": identity(i).as_str(), "names": [name(i)], "disks": [disk(i)],
                "controlPlane": false})
        })
        .collect();
    let path = dir.path().join(format!("cluster-state-{n}.json"));
    let text = serde_json::json!({"version": 1, "measurementsVersion": 1, "nodes": nodes, "usedAdmissions": []});
    std::fs::write(&path, text.to_string()).unwrap();
    ClusterState::open(&path).unwrap()
}

fn membership(c: &mut Criterion) {
    let dir = TempDir::new("bench-membership");
    let mut g = c.benchmark_group("membership");
    for n in [1_000usize, 10_000] {
        let state = state_of(&dir, n);
        // The last node recorded: the scans go through every node.
        let (id, nm, dk) = (identity(n - 1), name(n - 1), disk(n - 1));
        let claim = JoinClaim { identity: &id, name: &nm, disk_uuid: &dk, control_plane: false };
        g.bench_function(BenchmarkId::new("returning_join", n), |b| {
            b.iter(|| black_box(state.admit_join(black_box(&claim), &[]).unwrap()));
        });
        g.bench_function(BenchmarkId::new("rejoin", n), |b| {
            b.iter(|| black_box(state.check_rejoin(black_box(&id), black_box(&dk), false).unwrap()));
        });
        let (other, own_disk) = (identity(n), disk(n));
        let lie = JoinClaim { identity: &other, name: &nm, disk_uuid: &own_disk, control_plane: false };
        g.bench_function(BenchmarkId::new("refused_join", n), |b| {
            b.iter(|| black_box(state.admit_join(black_box(&lie), &[]).unwrap_err()));
        });
        let mut version = 1u64;
        g.bench_function(BenchmarkId::new("persisted_change", n), |b| {
            b.iter(|| {
                version += 1;
                assert!(state.raise_measurements_floor(black_box(version)).unwrap());
            });
        });
        assert_eq!(state.nodes().len(), n, "the benchmark changed the membership");
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default().sample_size(20).configure_from_args();
    membership(&mut c);
    c.final_summary();
}
