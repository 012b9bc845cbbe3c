//! Generic X.509 PKIs for path-building tests: roots, intermediates and leaves with ECDSA P-256 keys
//! (ecdsa-with-SHA256), names `CN=<name>`, and exactly the basicConstraints, keyUsage and extKeyUsage a test
//! asks for.
//!
//! ```
//! use attest_test_support::x509::{CertSpec, TestCa};
//!
//! let root = TestCa::root("Root", &CertSpec::ca());
//! let inter = root.issue_ca("Intermediate", &CertSpec::ca().path_len(0));
//! let leaf = inter.issue_leaf("leaf", &CertSpec::leaf().eku(&["1.3.6.1.5.5.7.3.2"]));
//! assert_eq!(leaf[0], 0x30);
//! ```

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

use crate::der;
use crate::pki::{DEFAULT_NOT_AFTER, DEFAULT_NOT_BEFORE, TbsFields, extension, signed, tbs_certificate};

/// keyUsage bit: digitalSignature (bit 0).
pub const KU_DIGITAL_SIGNATURE: u16 = 0x8000;
/// keyUsage bit: keyCertSign (bit 5).
pub const KU_KEY_CERT_SIGN: u16 = 0x8000 >> 5;
/// keyUsage bit: cRLSign (bit 6).
pub const KU_CRL_SIGN: u16 = 0x8000 >> 6;

/// What goes into a certificate besides names and keys. Build with [`CertSpec::ca`] or [`CertSpec::leaf`]
/// and adjust.
#[derive(Clone, Debug)]
pub struct CertSpec {
    serial: u64,
    not_before: i64,
    not_after: i64,
    /// `Some((cA, pathLenConstraint))`, or no basicConstraints at all.
    basic_constraints: Option<(bool, Option<u64>)>,
    key_usage: Option<u16>,
    eku: Option<Vec<String>>,
}

impl CertSpec {
    /// A CA: basicConstraints cA (critical, no pathLenConstraint), keyUsage keyCertSign | cRLSign, no EKU,
    /// valid 2020-01-01 .. 2049-01-01.
    pub fn ca() -> Self {
        Self {
            serial: 1,
            not_before: DEFAULT_NOT_BEFORE,
            not_after: DEFAULT_NOT_AFTER,
            basic_constraints: Some((true, None)),
            key_usage: Some(KU_KEY_CERT_SIGN | KU_CRL_SIGN),
            eku: None,
        }
    }

    /// An end entity: no basicConstraints, keyUsage digitalSignature, no EKU.
    pub fn leaf() -> Self {
        Self { basic_constraints: None, key_usage: Some(KU_DIGITAL_SIGNATURE), ..Self::ca() }
    }

    /// The serial number.
    pub fn serial(mut self, serial: u64) -> Self {
        self.serial = serial;
        self
    }

    /// The validity period in Unix seconds.
    pub fn validity(mut self, not_before: i64, not_after: i64) -> Self {
        self.not_before = not_before;
        self.not_after = not_after;
        self
    }

    /// basicConstraints with `ca` and no pathLenConstraint (`None`: leave the extension out).
    pub fn basic_constraints(mut self, ca: Option<bool>) -> Self {
        self.basic_constraints = ca.map(|ca| (ca, None));
        self
    }

    /// basicConstraints cA with pathLenConstraint `n`.
    pub fn path_len(mut self, n: u64) -> Self {
        self.basic_constraints = Some((true, Some(n)));
        self
    }

    /// keyUsage bits ([`KU_KEY_CERT_SIGN`] …; `None`: leave the extension out).
    pub fn key_usage(mut self, bits: Option<u16>) -> Self {
        self.key_usage = bits;
        self
    }

    /// extKeyUsage with these purposes (dotted OIDs).
    pub fn eku(mut self, purposes: &[&str]) -> Self {
        self.eku = Some(purposes.iter().map(|p| (*p).to_owned()).collect());
        self
    }

    fn extensions(&self) -> Vec<Vec<u8>> {
        let mut exts = Vec::new();
        if let Some((ca, path_len)) = self.basic_constraints {
            let mut parts = Vec::new();
            if ca {
                parts.push(der::boolean(true));
            }
            if let Some(n) = path_len {
                parts.push(der::integer_u64(n));
            }
            let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            exts.push(extension("2.5.29.19", true, &der::sequence(&parts)));
        }
        if let Some(bits) = self.key_usage {
            exts.push(extension("2.5.29.15", true, &key_usage_bits(bits)));
        }
        if let Some(purposes) = &self.eku {
            let oids: Vec<Vec<u8>> = purposes.iter().map(|p| der::oid(p)).collect();
            let oids: Vec<&[u8]> = oids.iter().map(Vec::as_slice).collect();
            exts.push(extension("2.5.29.37", false, &der::sequence(&oids)));
        }
        exts
    }
}

/// keyUsage as a DER BIT STRING (trailing zero bits dropped, as DER requires).
fn key_usage_bits(bits: u16) -> Vec<u8> {
    let bytes = bits.to_be_bytes();
    let len = if bytes[1] == 0 { 1 } else { 2 };
    let last = bytes[len - 1];
    let unused = if last == 0 { 0 } else { last.trailing_zeros() as u8 };
    der::bit_string_with_unused(unused, &bytes[..len])
}

/// `Name ::= SEQUENCE { SET { SEQUENCE { commonName, UTF8String } } }`.
pub fn name(common_name: &str) -> Vec<u8> {
    der::sequence(&[&der::set(&[&der::sequence(&[&der::oid("2.5.4.3"), &der::utf8_string(common_name)])])])
}

fn spki(key: &EcdsaKeyPair) -> Vec<u8> {
    let alg = der::sequence(&[&der::oid("1.2.840.10045.2.1"), &der::oid("1.2.840.10045.3.1.7")]);
    der::sequence(&[&alg, &der::bit_string(key.public_key().as_ref())])
}

fn issue(
    spec: &CertSpec,
    issuer_name: &[u8],
    subject: &[u8],
    subject_key: &EcdsaKeyPair,
    signer: &EcdsaKeyPair,
) -> Vec<u8> {
    let alg = der::sequence(&[&der::oid("1.2.840.10045.4.3.2")]);
    let exts = spec.extensions();
    let exts: Vec<&[u8]> = exts.iter().map(Vec::as_slice).collect();
    let tbs = tbs_certificate(&TbsFields {
        serial: &spec.serial.to_be_bytes(),
        signature_alg: &alg,
        issuer: issuer_name,
        not_before: spec.not_before,
        not_after: spec.not_after,
        subject,
        spki: &spki(subject_key),
        extensions: &exts,
    });
    let sig = signer.sign(&SystemRandom::new(), &tbs).expect("ECDSA signing failed");
    signed(&tbs, &alg, sig.as_ref())
}

fn generate() -> EcdsaKeyPair {
    EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).expect("ECDSA key generation failed")
}

/// A certificate authority of a generated PKI: its key, name and certificate.
#[derive(Debug)]
pub struct TestCa {
    key: EcdsaKeyPair,
    name: Vec<u8>,
    /// The CA's certificate (DER).
    pub der: Vec<u8>,
}

impl TestCa {
    /// A self-signed root `CN=<common_name>` with a fresh key.
    pub fn root(common_name: &str, spec: &CertSpec) -> Self {
        let key = generate();
        let name = name(common_name);
        let der = issue(spec, &name, &name, &key, &key);
        Self { key, name, der }
    }

    /// A CA `CN=<common_name>` with a fresh key, certified by this one.
    pub fn issue_ca(&self, common_name: &str, spec: &CertSpec) -> Self {
        let key = generate();
        let name = name(common_name);
        let der = issue(spec, &self.name, &name, &key, &self.key);
        Self { key, name, der }
    }

    /// Another certificate for `subject`'s name and key, certified by this CA (cross-certificates,
    /// re-issued CAs).
    pub fn certify(&self, subject: &TestCa, spec: &CertSpec) -> Vec<u8> {
        issue(spec, &self.name, &subject.name, &subject.key, &self.key)
    }

    /// An end-entity certificate `CN=<common_name>` with a fresh key, certified by this CA.
    pub fn issue_leaf(&self, common_name: &str, spec: &CertSpec) -> Vec<u8> {
        issue(spec, &self.name, &name(common_name), &generate(), &self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_usage_encoding_is_der() {
        assert_eq!(key_usage_bits(KU_KEY_CERT_SIGN | KU_CRL_SIGN), [0x03, 0x02, 0x01, 0x06]);
        assert_eq!(key_usage_bits(KU_DIGITAL_SIGNATURE), [0x03, 0x02, 0x07, 0x80]);
        assert_eq!(key_usage_bits(0x0080), [0x03, 0x03, 0x07, 0x00, 0x80]);
    }
}
