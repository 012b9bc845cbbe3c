//! Benchmarks for attest: the criterion targets live in `benches/benches/`; this library holds the join
//! service load generator ([`joinload`], binary `join-load`).

#![forbid(unsafe_code)]

pub mod joinload;
