//! `attest`: the attestation command-line tool.
//!
//! ```text
//! attest snp verify REPORT --vcek CERT [--chain CHAIN] [--crl CRL] [--product P] [--report-data HEX]
//!                          [--policy FILE] [--at TIME] [--json] [--verbose]
//! attest snp chain --vcek CERT [--chain CHAIN] [--crl CRL] [--product P] [--at TIME] [--json]
//! attest snp show REPORT [--product P] [--json]
//! attest init --endpoint HOST:PORT --measurements FILE [--ak-registry FILE] [--ek-ca DIR] [--master-secret FILE]
//!             [--init-secret FILE] [--out DIR] [--cluster-name N] [--kubernetes-version V] [--json]
//! attest verify --endpoint HOST:PORT --measurements FILE [--ak-registry FILE] [--json]
//! ```
//!
//! Exit status: 0 accepted, 1 rejected, 2 usage error (bad arguments, unreadable or malformed files).

#![forbid(unsafe_code)]

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    attest_cli::run(attest_cli::Cli::parse())
}
