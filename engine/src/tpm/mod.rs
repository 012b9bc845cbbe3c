//! TPM 2.0 evidence: quotes (TPMS_ATTEST), signatures, attestation-key public areas, PCR selections, and
//! TCG PC Client event logs. Structures follow the TPM 2.0 Library Part 2 names; all views borrow the
//! received bytes.

pub mod alg;
pub mod attest;
pub mod eventlog;
pub mod public;
pub mod quote;
pub(crate) mod reader;
pub mod signature;

pub use attest::{Attest, PcrSelection};
pub use public::{AkPublic, EccCurve, SigScheme, TpmtPublic};
pub use quote::{PcrBank, PcrValues, QuoteRequest, QuoteSignature, VerifiedQuote, verify_quote};
pub use signature::TpmSignature;
