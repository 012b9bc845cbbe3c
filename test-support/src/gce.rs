//! A "Google-like" EK/AK CA for tests and simulated GCE vTPMs: an ECDSA P-256 root (and intermediates) that
//! certify attestation keys the way Google's CA does — an empty subject, the AK's key, and Google's
//! instance-information extension (OID 1.3.6.1.4.1.11129.2.1.21: zone, project number, project id,
//! instance id, instance name, security properties).
//!
//! ```
//! use attest_test_support::gce::{GoogleLikeCa, InstanceSpec};
//! use attest_test_support::tpm::SoftAk;
//!
//! let ca = GoogleLikeCa::root("test EK/AK CA root");
//! let ak = SoftAk::ecc_p256();
//! let cert = ca.ak_certificate(&ak.spki(), &InstanceSpec::new("my-project", "node-1"));
//! assert_eq!(cert[0], 0x30);
//! ```

use crate::der::{
    bit_string, bit_string_with_unused, boolean, explicit, integer_u64, integer_unsigned, null, octet_string, oid,
    sequence, set, unix_from_civil, utc_time, utf8_string,
};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

/// Google's instance-information extension.
pub const INSTANCE_INFO_OID: &str = "1.3.6.1.4.1.11129.2.1.21";

/// A CA of the Google-like PKI: its key, name and certificate.
pub struct GoogleLikeCa {
    key: EcdsaKeyPair,
    name: Vec<u8>,
    /// The CA's certificate (DER).
    pub der: Vec<u8>,
    serial: std::sync::atomic::AtomicU64,
}

impl core::fmt::Debug for GoogleLikeCa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GoogleLikeCa").finish_non_exhaustive()
    }
}

/// The VM a certificate names.
#[derive(Clone, Debug)]
pub struct InstanceSpec {
    /// Zone.
    pub zone: String,
    /// Project number.
    pub project_number: u64,
    /// Project id.
    pub project_id: String,
    /// Instance id.
    pub instance_id: u64,
    /// Instance name.
    pub instance_name: String,
    /// securityProperties.isProduction.
    pub production: bool,
}

impl InstanceSpec {
    /// A production VM `instance_name` in `project_id`, zone europe-west4-a.
    pub fn new(project_id: &str, instance_name: &str) -> Self {
        Self {
            zone: "europe-west4-a".into(),
            project_number: 123_456,
            project_id: project_id.into(),
            instance_id: 987_654_321,
            instance_name: instance_name.into(),
            production: true,
        }
    }

    /// Sets securityProperties.isProduction.
    pub fn production(mut self, production: bool) -> Self {
        self.production = production;
        self
    }

    /// The extension value (DER).
    pub fn extension_value(&self) -> Vec<u8> {
        let props = sequence(&[&explicit(0, &integer_u64(0)), &explicit(1, &boolean(self.production))]);
        sequence(&[
            &utf8_string(&self.zone),
            &integer_u64(self.project_number),
            &utf8_string(&self.project_id),
            &integer_u64(self.instance_id),
            &utf8_string(&self.instance_name),
            &explicit(0, &props),
        ])
    }
}

/// `CN=<cn>`.
pub fn name(cn: &str) -> Vec<u8> {
    sequence(&[&set(&[&sequence(&[&oid("2.5.4.3"), &utf8_string(cn)])])])
}

/// One extension.
pub fn extension(id: &str, critical: bool, value: &[u8]) -> Vec<u8> {
    if critical {
        sequence(&[&oid(id), &boolean(true), &octet_string(value)])
    } else {
        sequence(&[&oid(id), &octet_string(value)])
    }
}

/// SubjectPublicKeyInfo of a P-256 point (`04 ‖ X ‖ Y`).
pub fn p256_spki(point: &[u8]) -> Vec<u8> {
    sequence(&[&sequence(&[&oid("1.2.840.10045.2.1"), &oid("1.2.840.10045.3.1.7")]), &bit_string(point)])
}

/// SubjectPublicKeyInfo of an RSA key.
pub fn rsa_spki(n: &[u8], e: &[u8]) -> Vec<u8> {
    sequence(&[
        &sequence(&[&oid("1.2.840.113549.1.1.1"), &null()]),
        &bit_string(&sequence(&[&integer_unsigned(n), &integer_unsigned(e)])),
    ])
}

fn ca_extensions() -> Vec<Vec<u8>> {
    vec![
        extension("2.5.29.19", true, &sequence(&[&boolean(true)])),
        extension("2.5.29.15", true, &bit_string_with_unused(1, &[0x06])),
    ]
}

impl GoogleLikeCa {
    fn generate(cn: &str) -> (EcdsaKeyPair, Vec<u8>) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("P-256 key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref()).expect("P-256 key");
        (key, name(cn))
    }

    /// A self-signed root named `CN=<cn>`, valid 2024-01-01 .. 2040-01-01.
    pub fn root(cn: &str) -> Self {
        let (key, name) = Self::generate(cn);
        let mut ca = Self { key, name, der: Vec::new(), serial: std::sync::atomic::AtomicU64::new(2) };
        let spki = p256_spki(ca.key.public_key().as_ref());
        let subject = ca.name.clone();
        ca.der = ca.certificate(&subject, &spki, &ca_extensions());
        ca
    }

    /// An intermediate CA named `CN=<cn>` issued by this CA.
    pub fn intermediate(&self, cn: &str) -> Self {
        let (key, name) = Self::generate(cn);
        let spki = p256_spki(key.public_key().as_ref());
        let der = self.certificate(&name, &spki, &ca_extensions());
        Self { key, name, der, serial: std::sync::atomic::AtomicU64::new(2) }
    }

    /// The CA key as PKCS #8 (to keep a simulated CA across processes).
    pub fn pkcs8(&self) -> Vec<u8> {
        self.key.to_pkcs8v1().expect("PKCS #8").as_ref().to_vec()
    }

    /// A CA from its certificate and PKCS #8 key ([`GoogleLikeCa::pkcs8`]); `None` when the key does not
    /// parse.
    pub fn from_parts(der: Vec<u8>, pkcs8: &[u8], cn: &str) -> Option<Self> {
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8).ok()?;
        Some(Self { key, name: name(cn), der, serial: std::sync::atomic::AtomicU64::new(1000) })
    }

    /// A certificate for `subject` / `spki` with `extensions`, signed by this CA (ecdsa-with-SHA256, valid
    /// 2024-01-01 .. 2040-01-01).
    pub fn certificate(&self, subject: &[u8], spki: &[u8], extensions: &[Vec<u8>]) -> Vec<u8> {
        let alg = sequence(&[&oid("1.2.840.10045.4.3.2")]);
        let validity = sequence(&[
            &utc_time(unix_from_civil(2024, 1, 1, 0, 0, 0)),
            &utc_time(unix_from_civil(2040, 1, 1, 0, 0, 0)),
        ]);
        let exts: Vec<&[u8]> = extensions.iter().map(Vec::as_slice).collect();
        let serial = self.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tbs = sequence(&[
            &explicit(0, &integer_u64(2)),
            &integer_u64(serial),
            &alg,
            &self.name,
            &validity,
            subject,
            spki,
            &explicit(3, &sequence(&exts)),
        ]);
        let sig = self.key.sign(&SystemRandom::new(), &tbs).expect("ECDSA signing");
        sequence(&[&tbs, &alg, &bit_string(sig.as_ref())])
    }

    /// An AK certificate as Google issues them: empty subject, not a CA, digitalSignature, and the
    /// instance-information extension.
    pub fn ak_certificate(&self, ak_spki: &[u8], instance: &InstanceSpec) -> Vec<u8> {
        let exts = vec![
            extension("2.5.29.19", true, &sequence(&[])),
            extension("2.5.29.15", true, &bit_string_with_unused(7, &[0x80])),
            extension(INSTANCE_INFO_OID, false, &instance.extension_value()),
        ];
        self.certificate(&sequence(&[]), ak_spki, &exts)
    }

    /// The CA's public point (`04 ‖ X ‖ Y`).
    pub fn public_point(&self) -> &[u8] {
        self.key.public_key().as_ref()
    }
}
