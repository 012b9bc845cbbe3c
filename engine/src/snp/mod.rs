//! AMD SEV-SNP: the attestation report, TCB versions, and verification against AMD's certificate chain.

pub(crate) mod cache;
pub mod crls;
pub mod report;
pub mod tcb;
pub mod verify;

pub use cache::DEFAULT_CACHE_CAPACITY;
pub use crls::{CrlScope, InstalledCrl, MAX_INSTALLED_CRLS};
pub use report::{FirmwareVersion, GuestPolicy, PlatformInfo, REPORT_SIZE, RawReport, Report, SIGNED_LEN, SigningKey};
pub use tcb::{TcbComponent, TcbVersion};
pub use verify::{ChainRequest, OwnedTrustAnchors, SnpRequest, SnpVerifier, VerifiedChain, VerifiedReport};
