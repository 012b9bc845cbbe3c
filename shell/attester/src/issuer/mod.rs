//! Issuers (attester side): produce an [`AttestationDocument`] for a verifier's nonce; and the bridge from
//! the protobuf document to the engine's borrowed [`Document`].
//!
//! | issuer | variant | evidence source |
//! |---|---|---|
//! | [`QemuVtpmIssuer`] | `qemu-vtpm` | a TPM (tss-esapi): AK, quote, PCRs, event log |
//! | [`SnpIssuer`] | `aws-sev-snp`, `gcp-sev-snp` | a fresh report per attestation from the SEV-SNP guest device ([`sevguest`]) + the TPM quote of a [`QemuVtpmIssuer`] |
//! | [`AzureSnpIssuer`] | `azure-sev-snp` | the paravisor's vTPM: HCL report (NV 0x01400001) + quote by the HCL AK (0x81000003) |
//! | [`GceIssuer`] | `gcp-shielded-vm` | the GCE vTPM: AK from Google's NV template, its certificate, quote, event log |
//! | [`QemuTdxIssuer`] | `qemu-tdx` | the TDX guest ([`tdguest`]): a TD quote per attestation (configfs-tsm, else `/dev/tdx_guest` and the host's QGS), the CC event log |
//! | [`AzureTdxIssuer`] | `azure-tdx` | the paravisor's vTPM: HCL report (TDX), quote by the HCL AK, and the TD quote of the HCL report's TD report from the paravisor's quote endpoint |
//!
//! [`select`] chooses one by name or detects it from the machine; `args` (cargo feature `cli`) is the
//! command-line form of the node's hardware that the bootstrapper and the join service share. The hardware issuers fail with
//! [`HwIssuerError::DeviceNotPresent`] where their device does not exist. Simulated hardware (tests, the
//! demo) is reached through the same code paths: a simulated SEV-SNP guest device differs only in its
//! transport ([`sevguest`]), a simulated vTPM is a swtpm provisioned as the cloud provisions its vTPM.
//!
//! The engine's `TpmEvidence.pcrs` is a `&'a PcrValues<'a>`, so the PCR table must live next to the
//! document while it is validated:
//!
//! ```no_run
//! # use attest_attester::issuer::{document, pcr_values};
//! # fn f(doc: &attest_proto::attest::v1::AttestationDocument, v: &attest_engine::variant::Validator) -> Result<(), attest_attester::tpm::Error> {
//! let pcrs = pcr_values(doc)?;
//! let view = document(doc, &pcrs);
//! let validated = v.validate(&view, b"nonce", attest_engine::UnixTime::from_secs(1_700_000_000))?;
//! # Ok(()) }
//! ```

#[cfg(feature = "cli")]
pub mod args;
pub mod azure;
mod error;
pub mod gce;
pub mod qemu;
pub mod select;
pub mod sevguest;
pub mod snp;
pub mod tdguest;
pub mod tdx;
pub mod tsm;

#[cfg(feature = "cli")]
pub use args::HardwareArgs;
pub use azure::AzureSnpIssuer;
pub use error::HwIssuerError;
pub use gce::GceIssuer;
pub use qemu::QemuVtpmIssuer;
pub use select::{HardwareConfig, IssuerKind, NodeIssuer, VariantChoice};
pub use sevguest::{SnpDeviceAddr, SnpGuestDevice};
pub use snp::SnpIssuer;
pub use tdguest::{TdxGuest, TdxPaths};
pub use tdx::{AzureTdxIssuer, QemuTdxIssuer, QuoteEndpoint};

use crate::tpm::Error;
use crate::tpm::{AttestationKey, QuotedPcrs};
use attest_engine::tpm::PcrValues;
use attest_engine::variant::Document;
use attest_engine::variant::Variant;
use attest_proto::attest::v1::{AttestationDocument, TpmEvidence};
use attest_proto::document::DocumentError;

/// A document of `variant` whose only evidence is `tpm` (no SNP, TDX or HCL part), for `instance_info` and
/// `user_data`; the issuers that add more evidence set it on the result.
pub(crate) fn tpm_document(
    variant: Variant,
    tpm: TpmEvidence,
    instance_info: &[u8],
    user_data: &[u8],
) -> AttestationDocument {
    AttestationDocument {
        variant: variant.name().to_owned(),
        tpm: Some(tpm),
        snp: None,
        tdx: None,
        hcl_report: Vec::new(),
        instance_info: instance_info.to_vec(),
        user_data: user_data.to_vec(),
    }
}

/// The TPM evidence of a quote by `ak` over SHA-256 PCRs (`quoted`), with `event_log`; no AK or EK
/// certificate (the issuers that have one set it on the result).
pub(crate) fn quote_evidence(ak: &AttestationKey, quoted: QuotedPcrs, event_log: Vec<u8>) -> TpmEvidence {
    let QuotedPcrs { quote, values } = quoted;
    TpmEvidence {
        ak_public: ak.tpm2b_public().to_vec(),
        quote_attest: quote.attest,
        quote_signature: quote.signature,
        pcrs: qemu::sha256_pcr_values(&values),
        event_log,
        ak_certificate: Vec::new(),
        ek_certificate: Vec::new(),
    }
}

/// The PCR values of a document's TPM evidence, borrowed from it ([`attest_proto::document::pcr_values`]).
/// A document without TPM evidence has none.
///
/// Fails for an unknown bank, an index above 23, a value of the wrong length, or the same PCR twice (a
/// document that presents two values for one PCR is malformed, whichever one the quote covers).
pub fn pcr_values(doc: &AttestationDocument) -> Result<PcrValues<'_>, Error> {
    attest_proto::document::pcr_values(doc).map_err(|e| match e {
        DocumentError::Engine(e) => Error::from(e),
        DocumentError::BankIdOutOfRange { .. } => Error::InvalidArgument { what: "PCR bank id above 0xFFFF" },
        DocumentError::DuplicatePcr { .. } => Error::InvalidArgument { what: "the same PCR is presented twice" },
        _ => Error::InvalidArgument { what: "malformed PCR table" },
    })
}

/// The engine's view of `doc`, with `pcrs` from [`pcr_values`] ([`attest_proto::document::view`]). The
/// quote signature is taken as a marshalled TPMT_SIGNATURE; empty byte fields mean "absent".
pub fn document<'a>(doc: &'a AttestationDocument, pcrs: &'a PcrValues<'a>) -> Document<'a> {
    attest_proto::document::view(doc, pcrs)
}
