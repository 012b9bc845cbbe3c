//! The protobuf attestation document (`attest.v1.AttestationDocument`) → the engine's borrowed
//! [`Document`]. The same bridge as `attest_shell::issuer::{pcr_values, document}`, repeated here so the
//! C library does not link the async shell (tokio, OpenSSL).

use attest_engine::Error;
use attest_engine::tpm::alg::hash_from_tpm;
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::{Document, SnpEvidence, TpmEvidence};
use attest_proto::attest::v1::AttestationDocument;
use prost::Message;

/// Why a document cannot be read.
pub(crate) enum DocError {
    /// An engine error (unsupported bank, PCR index or length).
    Engine(Error),
    /// Not a well-formed document (`ATTEST_RESULT_DOCUMENT_MALFORMED`).
    Malformed(String),
}

impl From<Error> for DocError {
    fn from(e: Error) -> Self {
        Self::Engine(e)
    }
}

/// Decodes the protobuf.
pub(crate) fn decode(bytes: &[u8]) -> Result<AttestationDocument, DocError> {
    AttestationDocument::decode(bytes).map_err(|e| DocError::Malformed(format!("attestation document: {e}")))
}

/// The PCR values of the document's TPM evidence, borrowed from it. Fails for an unknown bank, an index
/// above 23, a value of the wrong length, or the same PCR twice.
pub(crate) fn pcr_values(doc: &AttestationDocument) -> Result<PcrValues<'_>, DocError> {
    let mut out = PcrValues::new();
    let Some(tpm) = &doc.tpm else { return Ok(out) };
    for p in &tpm.pcrs {
        let id = u16::try_from(p.hash_alg).map_err(|_| Error::UnsupportedTpmAlgorithm { what: "PCR bank", id: 0 })?;
        let alg = hash_from_tpm(id, "PCR bank")?;
        let index = usize::try_from(p.index).unwrap_or(usize::MAX);
        if out.get(alg, index).is_some() {
            return Err(DocError::Malformed(format!("attestation document: PCR {index} is presented twice")));
        }
        out.set(alg, index, &p.value)?;
    }
    Ok(out)
}

/// The engine's view of `doc` (empty byte fields mean "absent"; the quote signature is a TPMT_SIGNATURE).
pub(crate) fn view<'a>(doc: &'a AttestationDocument, pcrs: &'a PcrValues<'a>) -> Document<'a> {
    let tpm = doc.tpm.as_ref().map(|t| TpmEvidence {
        ak_public: &t.ak_public,
        attest: &t.quote_attest,
        signature: QuoteSignature::Tpmt(&t.quote_signature),
        pcrs,
        event_log: &t.event_log,
    });
    let snp = doc.snp.as_ref().map(|s| SnpEvidence {
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
