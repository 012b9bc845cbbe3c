//! The protobuf attestation document (`attest.v1.AttestationDocument`) → the engine's borrowed
//! [`Document`], through the one bridge in [`attest_proto::document`] (the C library does not link the
//! async shell). This module only maps its errors onto the C result codes.

use attest_engine::Error;
use attest_engine::tpm::PcrValues;
use attest_engine::variant::Document;
use attest_proto::attest::v1::AttestationDocument;
use attest_proto::document::DocumentError;

/// Why a document cannot be read.
pub(crate) enum DocError {
    /// An engine error (unsupported bank, PCR index or length).
    Engine(Error),
    /// Not a well-formed document (`ATTEST_RESULT_DOCUMENT_MALFORMED`).
    Malformed(String),
}

impl From<DocumentError> for DocError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Engine(e) => Self::Engine(e),
            other => Self::Malformed(other.to_string()),
        }
    }
}

/// Decodes the document as the CLI does ([`attest_proto::document::decode`]).
pub(crate) fn decode(bytes: &[u8]) -> Result<AttestationDocument, DocError> {
    Ok(attest_proto::document::decode(bytes)?)
}

/// The PCR values of the document's TPM evidence, borrowed from it. Fails for an unknown bank, an index
/// above 23, a value of the wrong length, or the same PCR twice.
pub(crate) fn pcr_values(doc: &AttestationDocument) -> Result<PcrValues<'_>, DocError> {
    Ok(attest_proto::document::pcr_values(doc)?)
}

/// The engine's view of `doc` (empty byte fields mean "absent"; the quote signature is a TPMT_SIGNATURE).
pub(crate) fn view<'a>(doc: &'a AttestationDocument, pcrs: &'a PcrValues<'a>) -> Document<'a> {
    attest_proto::document::view(doc, pcrs)
}
