//! Readers for the evidence formats other verifiers and tools already produce, each returning the parts
//! the engine's verifiers take ([`crate::tpm::verify_quote`], [`crate::azure::verify_azure_snp`]).
//!
//! | reader | input | source of the format |
//! |---|---|---|
//! | [`tpm::AkKey::parse`] | an AK as PEM/DER SubjectPublicKeyInfo, TPM2B_PUBLIC or TPMT_PUBLIC | tpm2-tools, go-tpm-tools, OpenSSL |
//! | [`tpm::TpmQuoteParts`] | TPMS_ATTEST + TPMT_SIGNATURE (or a bare RSA signature) + PCR values | `tpm2_quote` outputs |
//! | [`tpm::TrusteeTpmEvidence::from_json`] | `{ak_public, tpm_quote: {message, signature, pcrs}}` | trustee's TPM verifier |
//! | [`tpm::AzureQuoteBin::parse`] | bincode `{signature, message, pcrs}` (zero-copy) | azure-cvm-tooling `az-cvm-vtpm` `Quote` |
//! | [`tpm::HexQuote::from_json`] | `{signature, message, pcrs}` in hex | trustee `tpm-quote-v1.json` |
//! | [`snp::SnpEvidence::parse`] | an SEV-SNP report: raw, + IGVM request-data header, or inside an Azure HCL report | SNP firmware, Azure's vTPM NV index |
//! | [`azure::AzureVtpmEvidence::from_json`] | Azure SNP vTPM evidence v0, v1, v2 and Azure TDX vTPM evidence v0, v1, v2 | trustee's `az-snp-vtpm` / `az-tdx-vtpm` verifiers |
//!
//! **Signed bytes are never re-encoded.** A reader only undoes the transport encoding (hex, base64,
//! JSON number arrays, bincode length prefixes); the verifier then checks signatures over exactly those
//! bytes. Binary readers borrow their input; JSON readers own the decoded buffers (JSON is never on a
//! hot path).
//!
//! **Bounds.** Every input is checked against [`MAX_JSON_EVIDENCE_SIZE`] (JSON) or its structure's limits
//! before it is decoded, and every count against a named limit; errors are [`Error::EvidenceFormat`]
//! (which format, what was wrong) or [`Error::LimitExceeded`].

pub mod azure;
pub mod snp;
pub mod tpm;

use crate::error::Error;
use base64::Engine as _;

/// Largest JSON evidence document accepted (trustee's Azure evidence with number arrays is ≈36 KiB; a
/// v0 document with a 16 KiB HCL report and a TD quote as number arrays stays under 128 KiB).
pub const MAX_JSON_EVIDENCE_SIZE: usize = 256 * 1024;

pub(crate) fn bad(format: &'static str, reason: &'static str) -> Error {
    Error::EvidenceFormat { format, reason }
}

pub(crate) fn check_json_size(format: &'static str, json: &[u8]) -> Result<(), Error> {
    if json.len() > MAX_JSON_EVIDENCE_SIZE {
        return Err(Error::LimitExceeded { what: format, limit: MAX_JSON_EVIDENCE_SIZE, found: json.len() });
    }
    Ok(())
}

/// Decodes hex (either case).
pub(crate) fn hex_bytes(format: &'static str, s: &str) -> Result<Vec<u8>, Error> {
    hex::decode(s.trim()).map_err(|_| bad(format, "a field is not hex"))
}

/// Decodes base64 in the standard or the URL-safe alphabet, padded or not (trustee writes both). The two
/// alphabets differ in two characters only, so no text decodes to different bytes under both.
pub(crate) fn base64_bytes(format: &'static str, s: &str) -> Result<Vec<u8>, Error> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const CONFIG: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, CONFIG);
    let s = s.trim();
    STANDARD.decode(s).or_else(|_| URL_SAFE.decode(s)).map_err(|_| bad(format, "a field is not base64"))
}
