//! GCE Shielded VM / Confidential VM attestation, as Google's go-tpm-tools produces it.
//!
//! A GCE VM's vTPM holds an attestation key (AK) that Google's CA certifies: the AK certificate carries
//! the AK and, in a Google extension, the VM's zone, project and instance ([`InstanceInfo`]). go-tpm-tools
//! sends an `Attestation` message with the AK's TPMT_PUBLIC, one quote per PCR bank, the TCG event log
//! and the AK certificate ([`GceEvidence`] is the engine's borrowed view of it; `attest-proto` decodes
//! the protobuf). [`GceVerifier::verify`] checks:
//!
//! 1. the AK is a restricted signing key;
//! 2. the AK certificate chains to one of Google's pinned EK/AK CA roots ([`roots`](self) module, generated)
//!    at the trusted time, through the pinned or the presented intermediates (RFC 5280 path validation by
//!    [`crate::x509::verify_path`]);
//! 3. the certified key is exactly the AK, and the instance information decodes (and equals the
//!    attester's unsigned copy when one is sent);
//! 4. every quote: signed by the AK with its scheme, extraData = the caller's nonce (or explicitly none),
//!    one bank whose presented PCR values are exactly the selected ones and hash to pcrDigest;
//! 5. the event log replays to the quoted PCRs of every usable bank it carries; Google's PCR 0 events
//!    give the firmware version and the confidential technology ([`PlatformState`]);
//! 6. policy ([`GcePolicy`]): SHA-1 banks, production VM, project and technology allow-lists.
//!
//! The verdict ([`GceVerdict`]) records each check as passed or waived. What is not verified here: the
//! COS canonical event log (carried), and a TEE attestation attached by go-tpm-tools (recorded as
//! present; verify it with the SEV-SNP or TDX verifier). The `gcp-shielded-vm` attestation variant
//! ([`crate::variant`]) trusts its AK the same way.

pub mod evidence;
pub mod instance;
pub mod platform;
mod roots;
pub mod verify;

pub use evidence::{
    GceEvidence, GceQuote, MAX_CERTIFICATE_SIZE, MAX_INTERMEDIATES, MAX_QUOTES, TeeAttestationKind,
    UnsignedInstanceInfo,
};
pub use instance::{InstanceInfo, SecurityProperties};
pub use platform::{ConfidentialTechnology, PlatformState};
pub use verify::{CertifiedAk, ExpectedNonce, GceCheck, GcePolicy, GceRequest, GceVerdict, GceVerifier, VerifiedGce};
