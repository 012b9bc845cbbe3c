//! Issuers (attester side): produce an [`AttestationDocument`] for a verifier's nonce; and the bridge from
//! the protobuf document to the engine's borrowed [`Document`].
//!
//! | issuer | variant | evidence source |
//! |---|---|---|
//! | [`QemuVtpmIssuer`] | `qemu-vtpm` | a TPM (tss-esapi): AK, quote, PCRs, event log |
//! | [`SnpIssuer`] | `aws-sev-snp`, `gcp-sev-snp` | `/dev/sev-guest` (the `sev` crate) + the TPM quote of a [`QemuVtpmIssuer`] |
//! | [`AzureSnpIssuer`] | `azure-sev-snp` | the paravisor's vTPM (`az-cvm-vtpm`): HCL report + quote by the HCL AK |
//!
//! The hardware issuers fail with [`HwIssuerError::DeviceNotPresent`] where their device does not exist.
//!
//! The engine's `TpmEvidence.pcrs` is a `&'a PcrValues<'a>`, so the PCR table must live next to the
//! document while it is validated:
//!
//! ```no_run
//! # use attest_shell::issuer::{document, pcr_values};
//! # fn f(doc: &attest_proto::attest::v1::AttestationDocument, v: &attest_engine::variant::Validator) -> Result<(), attest_shell::tpm::Error> {
//! let pcrs = pcr_values(doc)?;
//! let view = document(doc, &pcrs);
//! let validated = v.validate(&view, b"nonce", attest_engine::UnixTime::from_secs(1_700_000_000))?;
//! # Ok(()) }
//! ```

pub mod azure;
pub mod qemu;
pub mod snp;

pub use azure::AzureSnpIssuer;
pub use qemu::QemuVtpmIssuer;
pub use snp::{HwIssuerError, SnpIssuer};

use crate::tpm::Error;
use attest_engine::crypto::HashAlgorithm;
use attest_engine::tpm::alg::hash_from_tpm;
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::{Document, TpmEvidence};
use attest_proto::attest::v1::AttestationDocument;

/// The PCR values of a document's TPM evidence, borrowed from it. A document without TPM evidence has none.
///
/// Fails for an unknown bank, an index above 23, a value of the wrong length, or the same PCR twice (a
/// document that presents two values for one PCR is malformed, whichever one the quote covers).
pub fn pcr_values(doc: &AttestationDocument) -> Result<PcrValues<'_>, Error> {
    let mut out = PcrValues::new();
    let Some(tpm) = &doc.tpm else { return Ok(out) };
    for p in &tpm.pcrs {
        let id = u16::try_from(p.hash_alg).map_err(|_| Error::InvalidArgument { what: "PCR bank id above 0xFFFF" })?;
        let alg: HashAlgorithm = hash_from_tpm(id, "PCR bank")?;
        let index = usize::try_from(p.index).map_err(|_| Error::InvalidArgument { what: "PCR index" })?;
        if out.get(alg, index).is_some() {
            return Err(Error::InvalidArgument { what: "the same PCR is presented twice" });
        }
        out.set(alg, index, &p.value)?;
    }
    Ok(out)
}

/// The engine's view of `doc`, with `pcrs` from [`pcr_values`]. The quote signature is taken as a marshalled
/// TPMT_SIGNATURE ([`QuoteSignature::Tpmt`]); empty byte fields mean "absent".
pub fn document<'a>(doc: &'a AttestationDocument, pcrs: &'a PcrValues<'a>) -> Document<'a> {
    let tpm = doc.tpm.as_ref().map(|t| TpmEvidence {
        ak_public: &t.ak_public,
        attest: &t.quote_attest,
        signature: QuoteSignature::Tpmt(&t.quote_signature),
        pcrs,
        event_log: &t.event_log,
    });
    let snp = doc.snp.as_ref().map(|s| attest_engine::variant::SnpEvidence {
        report: &s.report,
        leaf: &s.leaf_certificate,
        intermediate: (!s.intermediate_certificate.is_empty()).then_some(&s.intermediate_certificate[..]),
        root: (!s.root_certificate.is_empty()).then_some(&s.root_certificate[..]),
    });
    Document {
        variant: &doc.variant,
        tpm,
        snp,
        hcl_report: &doc.hcl_report,
        instance_info: &doc.instance_info,
        user_data: &doc.user_data,
    }
}
