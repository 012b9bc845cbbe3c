//! AMD SEV-SNP: the attestation report ([`Report`]), TCB versions, the certificate table of an extended
//! report ([`CertTable`]), verification against AMD's certificate chain ([`SnpVerifier`] →
//! [`VerifiedReport`]) and the policy it applies ([`SnpPolicy`], recorded check by check in a [`Verdict`]).

pub(crate) mod cache;
mod certtable;
pub mod crls;
pub mod policy;
pub mod report;
pub mod tcb;
pub mod verify;

pub use crate::amd::{Product, TrustAnchors};
pub use cache::DEFAULT_CACHE_CAPACITY;
pub use certtable::{
    CERT_TABLE_ENTRY_SIZE, CarriedCerts, CertKind, CertTable, MAX_CERT_LEN, MAX_CERT_TABLE_ENTRIES,
    MAX_CERT_TABLE_SIZE, encode_cert_table,
};
pub use crls::{CrlScope, InstalledCrl, MAX_INSTALLED_CRLS};
pub use policy::{AbiVersion, Check, PlatformFlag, SnpPolicy, Verdict};
pub use report::{FirmwareVersion, GuestPolicy, PlatformInfo, REPORT_SIZE, RawReport, Report, SIGNED_LEN, SigningKey};
pub use tcb::{TcbComponent, TcbVersion};
pub use verify::{ChainRequest, OwnedTrustAnchors, SnpRequest, SnpVerifier, VerifiedChain, VerifiedReport};
