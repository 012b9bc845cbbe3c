//! Zero-copy reading of X.509 certificates and CRLs — the objects AMD publishes (ARK, ASK, ASVK, VCEK, VLEK,
//! CRLs) and TPM EK/AK certificates — and generic path building ([`path`]).

pub mod alg;
pub mod amd;
pub mod cert;
pub mod crl;
pub mod csr;
pub mod eku;
pub mod name;
pub mod path;
pub mod pem;

pub use alg::{PublicKey, SignatureAlgorithm};
pub use amd::AmdExtensions;
pub use cert::{Certificate, Extension};
pub use crl::Crl;
pub use csr::CertificationRequest;
pub use eku::{ExtKeyUsage, KeyPurposeId};
pub use name::{Name, NameAttribute};
pub use path::{PathOptions, VerifiedPath, verify_path, verify_path_with};
