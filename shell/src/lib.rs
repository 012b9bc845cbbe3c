//! # attest-shell
//!
//! The network shell of attest and the `attest` command-line tool. The verification itself lives in the
//! sans-IO [`attest_engine`]; this crate does everything the engine refuses to do: read files, decode
//! input encodings (PEM, DER, hex, base64, Azure HCL containers), read the system clock for a default
//! trusted time, measure timings and print results.
//!
//! The command-line front end is in [`cli`]; its SEV-SNP commands (`attest snp verify|chain|show`) are in
//! [`cli::snp`].

#![forbid(unsafe_code)]

pub mod atls;
pub mod bootstrapper;
pub mod cli;
pub mod fsutil;
pub mod grpc;
pub mod issuer;
pub mod joinservice;
pub mod k8s;
pub mod kds;
pub mod keyservice;
pub mod registration;
pub mod tpm;
mod x509util;
