//! The attest-kds parsers of evidence-carried certificates (`shell/kds/src/certtable.rs`, `thim.rs`) compiled
//! into the fuzz targets as they are, with only the error type they name. The fuzz crate stays free of the
//! KDS client's HTTP stack (hyper, hyper-openssl) that depending on attest-kds would bring in; a change to
//! the variants these files construct breaks this build, which the fuzz smoke run in `make test` compiles.
#![allow(dead_code, unreachable_pub)]

/// The variants of `attest_kds::KdsError` the two parsers construct, with the same fields.
#[derive(Debug)]
pub enum KdsError {
    LimitExceeded { what: &'static str, limit: usize, found: usize },
    CertTable { offset: usize, reason: &'static str },
    Thim { reason: &'static str },
}

#[path = "../../../shell/kds/src/certtable.rs"]
pub mod certtable;
#[path = "../../../shell/kds/src/thim.rs"]
pub mod thim;
