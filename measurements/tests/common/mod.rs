//! Helpers shared by the integration tests.
#![allow(dead_code)]

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;

/// DER prefix of a P-256 SubjectPublicKeyInfo up to the point: SEQUENCE { SEQUENCE { id-ecPublicKey,
/// secp256r1 }, BIT STRING (66 bytes, 0 unused bits) }.
pub(crate) const P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// DER prefix of a P-384 SubjectPublicKeyInfo up to the point.
pub(crate) const P384_SPKI_PREFIX: &[u8] = &[
    0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00,
    0x22, 0x03, 0x62, 0x00,
];

/// Reads `tests/data/<name>`.
#[track_caller]
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `len` bytes of `byte`, as lowercase hex.
pub(crate) fn hx(byte: u8, len: usize) -> String {
    hex::encode(vec![byte; len])
}

/// Wraps DER in a PEM block with `label`.
pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(core::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out + "-----END " + label + "-----\n"
}

/// A freshly generated P-256 signing key.
pub(crate) struct Signer {
    key: EcdsaKeyPair,
}

impl Signer {
    pub(crate) fn new() -> Self {
        Self { key: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).unwrap() }
    }

    /// The SubjectPublicKeyInfo DER, built by hand from the uncompressed point.
    pub(crate) fn spki_der(&self) -> Vec<u8> {
        let point = self.key.public_key().as_ref();
        assert_eq!(point.len(), 65);
        [P256_SPKI_PREFIX, point].concat()
    }

    pub(crate) fn public_key_pem(&self) -> String {
        pem("PUBLIC KEY", &self.spki_der())
    }

    /// DER ECDSA signature over `message` (SHA-256).
    pub(crate) fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign(&SystemRandom::new(), message).unwrap().as_ref().to_vec()
    }

    /// Base64 of the DER signature, as Constellation's `measurements.json.sig`.
    pub(crate) fn sign_base64(&self, message: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.sign(message))
    }
}

/// A P-384 public key PEM (well-formed, wrong curve).
pub(crate) fn p384_public_key_pem() -> String {
    let key = EcdsaKeyPair::generate(&ECDSA_P384_SHA384_ASN1_SIGNING).unwrap();
    pem("PUBLIC KEY", &[P384_SPKI_PREFIX, key.public_key().as_ref()].concat())
}
