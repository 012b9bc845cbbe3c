//! The join service under load (`join-load`): software-AK `qemu-vtpm` issuers, the
//! fixture files a join service needs to trust them, the load generator and a validation scaling probe.
//!
//! | module | what |
//! |---|---|
//! | [`issuer`] | [`SoftAkIssuer`]: genuine `qemu-vtpm` documents, quote signed by a software AK |
//! | [`inprocess`] | the key service and join service in this process, configured from the fixture (tests) |
//! | [`fixture`] | `join-load setup`: AKs, AK registry pinning them, measurements, salt, master secret, PKI |
//! | [`load`] | `join-load run`: concurrent joins over aTLS, latency percentiles, errors by kind |
//! | [`attack`] | `join-load run --attack-*`: idle and slow-loris sockets holding the services' limits meanwhile |
//! | [`mtls`] | `join-load mtls`: the transport floor — fresh mutual-TLS connections + one gRPC call each, on the key service |
//! | [`server_check`] | [`ServerCheck`]: the node's check of the join service (mutual aTLS, AK activation) |
//! | [`validate`] | `join-load validate`: the handshake's validation path on 1, 2, … threads |
//!
//! `benches/join-load/run.sh` drives the binary against `key-service` and `join-service` processes;
//! `benches/tests/join_load_smoke.rs` runs a small load against an in-process join service in CI.

pub mod attack;
pub mod fixture;
pub mod inprocess;
pub mod issuer;
pub mod load;
pub mod mtls;
pub mod server_check;
pub mod validate;

pub use fixture::{BoxError, load_issuers, write_fixture};
pub use issuer::SoftAkIssuer;
pub use load::{LoadConfig, NodeRequest, Percentiles, Report, check_ticket, node_requests};
pub use mtls::{MtlsReport, mtls_connections};
pub use server_check::ServerCheck;
pub use validate::{ScalingPoint, validation_scaling};
