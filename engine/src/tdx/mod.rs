//! Intel TDX: DCAP TD quotes (versions 4 and 5), Intel PCS collateral, TCB evaluation and policy.
//!
//! | file | what |
//! |---|---|
//! | [`header`] | the 48-byte quote header |
//! | [`body`] | TD report bodies, TDX 1.0 (584 bytes) and 1.5 (648 bytes) |
//! | [`qe_report`] | the quoting enclave's 384-byte SGX report |
//! | [`quote`] | the quote: header, body, signature data, certification data (type 6 → type 5 PEM chain) |
//! | [`pck`] | the SGX extension of PCK certificates (FMSPC, PCE-ID, TCB components, PCESVN, CPUSVN, SGX type) |
//! | [`collateral`] | TCB Info, QE Identity, CRLs and issuer chains: PCS responses or the JSON bundle; verified once |
//! | [`tcb_info`], [`qe_identity`], [`status`] | decoded collateral and TCB statuses |
//! | [`tcb`] | TCB evaluation as Intel specifies it |
//! | [`policy`] | [`TdxPolicy`], [`TdxCheck`], [`TdxVerdict`] |
//! | [`verify`] | [`TdxVerifier`] with a cached PCK path |
//! | [`ccel`] | CC event log (CCEL) replay against RTMR0–3; the ACPI CCEL table |
//! | [`tdreport`] | TDREPORT_STRUCT, the in-TD report (RTMR read-back, Azure's quote requests) |
//!
//! # Decisions
//!
//! * **Where a quote ends.** `sig_data_len` defines the end; bytes after it (padded buffers, junk) are never
//!   read. [`TdQuote::parse`] refuses them, [`TdQuote::parse_prefix`] reports them ([`Trailing`]) and the
//!   policy decides: zero padding is accepted by default, anything else only under an explicit waiver.
//! * **Collateral lives in the verifier.** [`TdxVerifier::set_collateral`] verifies signatures, chains and
//!   CRL signatures once and keeps the result per FMSPC; every verification re-checks the times against its
//!   own trusted time. Replacing an FMSPC's collateral retires the cached PCK entries verified under it.
//!   One PCK CRL is held per FMSPC (Intel's bundle carries the CRL of the CA that issues that platform's
//!   PCK certificates); a quote whose PCK CA is not that CRL's issuer is refused
//!   ([`crate::Error::CollateralMismatch`]), never accepted unchecked.
//! * **The warm path** is keyed by SHA-256 of the quote's PEM PCK chain as received (so a quote whose chain
//!   differs in any byte takes the cold path and is judged afresh), bounded, and expires with the PCK
//!   certificate and its CA. It does the QE report signature, the binding hash and the quote signature.
//! * **TCB levels are taken in Intel's order** (newest first), as Intel's QVL does; the collateral is signed.
//! * **Revoked** is a status no policy can accept ([`TdxPolicy`] refuses to list it).
//! * **Without collateral** only [`TdxVerifier::dangerous_verify_signatures_only`] runs: an inspection aid,
//!   not a verdict.
//!
//! ```no_run
//! use attest_engine::tdx::{Collateral, TdxPolicy, TdxRequest, TdxVerifier};
//! use attest_engine::UnixTime;
//! # let (quote, bundle) = (&[0u8][..], &[0u8][..]);
//! let verifier = TdxVerifier::new(); // Intel's SGX Root CA is built in
//! verifier.set_collateral(&Collateral::from_bundle_json(bundle)?)?;
//! let req = TdxRequest::new(quote, UnixTime::parse("2023-07-01T00:00:00Z").unwrap());
//! let verified = verifier.verify(&req, &TdxPolicy::default())?;
//! println!("TCB {}", verified.tcb_status());
//! # Ok::<(), attest_engine::Error>(())
//! ```

pub mod body;
pub mod ccel;
pub mod collateral;
pub mod header;
pub mod pck;
pub mod policy;
pub mod qe_identity;
pub mod qe_report;
pub mod quote;
pub mod status;
pub mod tcb;
pub mod tcb_info;
pub mod tdreport;
pub mod verify;

pub use crate::intel::{SGX_ROOT_CA, SGX_ROOT_CA_SHA256};
pub use body::TdReport;
pub use collateral::{Collateral, PcsResponses, VerifiedCollateral};
pub use pck::SgxExtensions;
pub use policy::{TdxCheck, TdxPolicy, TdxVerdict};
pub use qe_identity::QeIdentity;
pub use quote::{TdQuote, Trailing};
pub use status::TcbStatus;
pub use tcb::TcbEvaluation;
pub use tcb_info::TcbInfo;
pub use verify::{CollateralInfo, TdxRequest, TdxVerifier, VerifiedTdQuote};
