//! The protobuf attestation document ([`AttestationDocument`]) → the engine's borrowed [`Document`].
//!
//! One bridge for every consumer (the shell's issuers and validators, the C library, the fuzz target), so
//! that a document means the same thing everywhere. The engine's `TpmEvidence.pcrs` is a
//! `&'a PcrValues<'a>`, so the PCR table must live next to the view while it is validated:
//!
//! ```
//! # use attest_proto::attest::v1::AttestationDocument;
//! # use attest_proto::document::{pcr_values, view};
//! let doc = AttestationDocument { variant: "qemu-vtpm".into(), ..Default::default() };
//! let pcrs = pcr_values(&doc)?;
//! let document = view(&doc, &pcrs);
//! assert_eq!(document.variant, "qemu-vtpm");
//! # Ok::<(), attest_proto::document::DocumentError>(())
//! ```
//!
//! Empty byte fields mean "absent" (protobuf 3 cannot tell them apart); the quote signature is a marshalled
//! TPMT_SIGNATURE.

#![warn(missing_docs, unreachable_pub)] // the crate allows them for the generated code only

use attest_engine::tpm::alg::hash_from_tpm;
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::{Document, SnpEvidence, TpmEvidence};

use crate::attest::v1::AttestationDocument;

/// Why a document's PCR table cannot be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum DocumentError {
    /// A bank id above 0xFFFF (TPM_ALG_ID is 16 bits).
    BankIdOutOfRange {
        /// The id as sent.
        id: u32,
    },
    /// The same PCR of one bank is presented twice: the document is malformed, whichever value the quote
    /// covers.
    DuplicatePcr {
        /// The PCR index.
        index: u32,
    },
    /// The engine refused a value: unsupported bank, index above 23, value of the wrong length.
    Engine(attest_engine::Error),
    /// The bytes are not a protobuf `AttestationDocument`.
    Decode(prost::DecodeError),
    /// The message names no attestation variant: every document does, and an empty input decodes to the
    /// all-default message, so this is not a document ([`decode`]).
    NoVariant,
}

impl std::fmt::Display for DocumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocumentError::BankIdOutOfRange { id } => write!(f, "attestation document: PCR bank id {id} above 0xFFFF"),
            DocumentError::DuplicatePcr { index } => {
                write!(f, "attestation document: PCR {index} is presented twice")
            }
            DocumentError::Engine(e) => write!(f, "attestation document: {e}"),
            DocumentError::Decode(e) => write!(f, "not an attestation document (protobuf): {e}"),
            DocumentError::NoVariant => {
                f.write_str("not an attestation document: it names no attestation variant (empty or all-default)")
            }
        }
    }
}

impl std::error::Error for DocumentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DocumentError::Engine(e) => Some(e),
            DocumentError::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<attest_engine::Error> for DocumentError {
    fn from(e: attest_engine::Error) -> Self {
        DocumentError::Engine(e)
    }
}

/// Decodes a document as it arrives (a file, a handshake): bytes that are not a protobuf
/// `AttestationDocument`, or a message that names no attestation variant, are not a document — the one
/// reading every verifier of documents (CLI, C library) shares.
pub fn decode(bytes: &[u8]) -> Result<AttestationDocument, DocumentError> {
    let doc = <AttestationDocument as prost::Message>::decode(bytes).map_err(DocumentError::Decode)?;
    if doc.variant.is_empty() {
        return Err(DocumentError::NoVariant);
    }
    Ok(doc)
}

/// The PCR values of `doc`'s TPM evidence, borrowed from it; empty when it has no TPM evidence.
pub fn pcr_values(doc: &AttestationDocument) -> Result<PcrValues<'_>, DocumentError> {
    let mut out = PcrValues::new();
    let Some(tpm) = &doc.tpm else { return Ok(out) };
    for p in &tpm.pcrs {
        let id = u16::try_from(p.hash_alg).map_err(|_| DocumentError::BankIdOutOfRange { id: p.hash_alg })?;
        let alg = hash_from_tpm(id, "PCR bank")?;
        // An index that does not fit a usize is above 23 as well; `set` refuses it.
        let index = usize::try_from(p.index).unwrap_or(usize::MAX);
        if out.get(alg, index).is_some() {
            return Err(DocumentError::DuplicatePcr { index: p.index });
        }
        out.set(alg, index, &p.value)?;
    }
    Ok(out)
}

/// The engine's view of `doc`, with `pcrs` from [`pcr_values`].
pub fn view<'a>(doc: &'a AttestationDocument, pcrs: &'a PcrValues<'a>) -> Document<'a> {
    let tpm = doc.tpm.as_ref().map(|t| TpmEvidence {
        ak_public: &t.ak_public,
        attest: &t.quote_attest,
        signature: QuoteSignature::Tpmt(&t.quote_signature),
        pcrs,
        event_log: &t.event_log,
        ak_certificate: &t.ak_certificate,
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
        td_quote: doc.tdx.as_ref().map_or(&[][..], |t| &t.quote[..]),
        td_event_log: doc.tdx.as_ref().map_or(&[][..], |t| &t.event_log[..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attest::v1::{PcrValue as Pcr, TpmEvidence as PbTpm};

    fn doc(pcrs: Vec<Pcr>) -> AttestationDocument {
        AttestationDocument {
            variant: "qemu-vtpm".into(),
            tpm: Some(PbTpm { pcrs, ..Default::default() }),
            ..Default::default()
        }
    }

    /// Empty input decodes to the all-default message: not a document; neither are bytes that are no
    /// protobuf; a document that names its variant is one.
    #[test]
    fn decode_refuses_what_is_no_document() {
        use prost::Message as _;
        assert!(matches!(decode(b""), Err(DocumentError::NoVariant)));
        assert!(matches!(decode(&[0xFF, 0xFF, 0xFF]), Err(DocumentError::Decode(_))));
        let no_variant = AttestationDocument { user_data: vec![1; 32], ..Default::default() }.encode_to_vec();
        assert!(matches!(decode(&no_variant), Err(DocumentError::NoVariant)));
        let wire = doc(Vec::new()).encode_to_vec();
        assert_eq!(decode(&wire).unwrap(), doc(Vec::new()));
        assert!(DocumentError::NoVariant.to_string().contains("names no attestation variant"));
    }

    fn pcr(hash_alg: u32, index: u32, len: usize) -> Pcr {
        Pcr { hash_alg, index, value: vec![7; len] }
    }

    #[test]
    fn pcrs_are_borrowed_and_checked() {
        let d = doc(vec![pcr(0x000B, 4, 32), pcr(0x000B, 9, 32)]);
        let pcrs = pcr_values(&d).unwrap();
        assert_eq!(pcrs.get(attest_engine::crypto::HashAlgorithm::Sha256, 9), Some(&[7u8; 32][..]));
        let v = view(&d, &pcrs);
        assert!(v.tpm.is_some() && v.snp.is_none());

        assert!(matches!(
            pcr_values(&doc(vec![pcr(0x000B, 4, 32), pcr(0x000B, 4, 32)])),
            Err(DocumentError::DuplicatePcr { index: 4 })
        ));
        assert!(matches!(pcr_values(&doc(vec![pcr(0x1_000B, 4, 32)])), Err(DocumentError::BankIdOutOfRange { .. })));
        assert!(matches!(pcr_values(&doc(vec![pcr(0x000B, 24, 32)])), Err(DocumentError::Engine(_))));
        assert!(matches!(pcr_values(&doc(vec![pcr(0x000B, 4, 31)])), Err(DocumentError::Engine(_))));
        assert!(matches!(pcr_values(&doc(vec![pcr(0x0099, 4, 32)])), Err(DocumentError::Engine(_))));
    }

    #[test]
    fn empty_fields_are_absent() {
        let d = AttestationDocument {
            snp: Some(crate::attest::v1::SnpEvidence { report: vec![1], ..Default::default() }),
            ..Default::default()
        };
        let pcrs = pcr_values(&d).unwrap();
        let v = view(&d, &pcrs);
        let snp = v.snp.unwrap();
        assert!(snp.intermediate.is_none() && snp.root.is_none());
        assert!(v.tpm.is_none());
        assert!(v.td_quote.is_empty() && v.td_event_log.is_empty());
    }

    #[test]
    fn tdx_evidence_is_borrowed() {
        use crate::attest::v1::TdxEvidence;
        use prost::Message as _;
        let d = AttestationDocument {
            variant: "qemu-tdx".into(),
            tdx: Some(TdxEvidence { quote: vec![4, 0, 2, 0], event_log: vec![9; 3] }),
            ..Default::default()
        };
        // Field 7 on the wire: tag (7 << 3 | 2) = 0x3a.
        let wire = d.encode_to_vec();
        assert!(wire.windows(2).any(|w| w == [0x3a, 11]), "{wire:02x?}");
        let back = AttestationDocument::decode(&wire[..]).unwrap();
        let pcrs = pcr_values(&back).unwrap();
        let v = view(&back, &pcrs);
        assert_eq!((v.variant, v.td_quote, v.td_event_log), ("qemu-tdx", &[4u8, 0, 2, 0][..], &[9u8; 3][..]));
        assert!(v.tpm.is_none() && v.snp.is_none());
    }
}
