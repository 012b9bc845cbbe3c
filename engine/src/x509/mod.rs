//! Zero-copy reading of the X.509 objects AMD publishes: certificates (ARK, ASK, ASVK, VCEK, VLEK) and CRLs.

pub mod alg;
pub mod amd;
pub mod cert;
pub mod crl;
pub mod name;
pub mod path;
pub mod pem;

pub use alg::{PublicKey, SignatureAlgorithm};
pub use amd::AmdExtensions;
pub use cert::{Certificate, Extension};
pub use crl::Crl;
pub use name::Name;
pub use path::{VerifiedPath, verify_path};
