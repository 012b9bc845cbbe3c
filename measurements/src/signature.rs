//! Signed measurements: a detached ECDSA P-256 / SHA-256 signature over the exact file bytes (as
//! Constellation's `measurements.json.sig`, which is base64 of the DER `Ecdsa-Sig-Value`, RFC 3279
//! §2.2.3), checked before the file is parsed.
//!
//! ```text
//! file, sig, key ─► size limits ─► decode sig (DER | base64) ─► key (PEM SPKI, P-256)
//!                ─► ECDSA verify over `file` as received ─► parse ─► SignedMeasurements
//! ```

use crate::error::Error;
use crate::freshness::Freshness;
use crate::key::{VerifyingKey, read_all};
use crate::parse::{self, Document};
use crate::{MAX_FILE_SIZE, MAX_SIGNATURE_SIZE};
use attest_engine::crypto::{CryptoProvider, default_provider};
use attest_engine::der::tag;
use base64::Engine as _;

/// A measurements document whose signature was verified before it was parsed. The only way to obtain
/// one is [`SignedMeasurements::verify_then_parse`] (or its `_with` variants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedMeasurements {
    document: Document,
    freshness: Freshness,
    file_sha256: [u8; 32],
}

impl SignedMeasurements {
    /// Verifies `signature` (DER, or base64 text of DER) over `file` with the P-256 key in
    /// `public_key_pem`, then parses `file` as in [`crate::parse_document`]. Uses the engine's default
    /// crypto provider.
    pub fn verify_then_parse(file: &[u8], signature: &[u8], public_key_pem: &[u8]) -> Result<Self, Error> {
        let key = VerifyingKey::from_pem(public_key_pem)?;
        Self::verify_then_parse_with(default_provider(), &key, file, signature)
    }

    /// [`verify_then_parse`](Self::verify_then_parse) with an already loaded key and an explicit
    /// crypto provider.
    pub fn verify_then_parse_with(
        provider: &CryptoProvider,
        key: &VerifyingKey,
        file: &[u8],
        signature: &[u8],
    ) -> Result<Self, Error> {
        verify(provider, key, file, signature)?;
        let (document, freshness) = parse::parse_versioned(file)?;
        Ok(Self { document, freshness, file_sha256: provider.digests.sha256(file) })
    }

    /// The verified document.
    pub fn document(&self) -> &Document {
        &self.document
    }

    /// The verified document, by value.
    pub fn into_document(self) -> Document {
        self.document
    }

    /// The signed version and expiry ([`crate::freshness`]; version 0 and none for a file without them).
    pub fn freshness(&self) -> Freshness {
        self.freshness
    }

    /// SHA-256 of the signed file bytes (for logs and audit records).
    pub fn file_sha256(&self) -> &[u8; 32] {
        &self.file_sha256
    }
}

/// Checks `signature` over `file` without parsing anything.
fn verify(provider: &CryptoProvider, key: &VerifyingKey, file: &[u8], signature: &[u8]) -> Result<(), Error> {
    if file.len() > MAX_FILE_SIZE {
        return Err(Error::LimitExceeded { what: "file bytes", limit: MAX_FILE_SIZE, found: file.len() });
    }
    if signature.len() > MAX_SIGNATURE_SIZE {
        return Err(Error::LimitExceeded {
            what: "signature bytes",
            limit: MAX_SIGNATURE_SIZE,
            found: signature.len(),
        });
    }
    let der = decode_signature(signature)?;
    provider.ecdsa_p256_sha256.verify_asn1(key.point(), file, &der).map_err(|_| Error::BadSignature)
}

/// The DER signature: `signature` itself when it is one complete DER SEQUENCE, else base64 text
/// (standard alphabet, padded; ASCII whitespace such as line breaks ignored) that decodes to one.
fn decode_signature(signature: &[u8]) -> Result<Vec<u8>, Error> {
    if read_all(signature, tag::SEQUENCE).is_ok() {
        return Ok(signature.to_vec());
    }
    let text: Vec<u8> = signature.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(&text).map_err(|_| Error::SignatureEncoding)?;
    if read_all(&der, tag::SEQUENCE).is_err() {
        return Err(Error::SignatureEncoding);
    }
    Ok(der)
}
