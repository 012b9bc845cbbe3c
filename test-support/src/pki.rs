//! The generated AMD-like PKI: ARK (root) and ASK/ASVK (intermediate) certificates.

use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PSS_SHA384};

use crate::der;

/// 2020-01-01T00:00:00Z, the default start of every validity period.
pub const DEFAULT_NOT_BEFORE: i64 = 1_577_836_800;
/// 2049-01-01T00:00:00Z, the default end of every validity period.
pub const DEFAULT_NOT_AFTER: i64 = 2_493_072_000;

/// OID arc under which AMD puts its VCEK/VLEK extensions.
pub const AMD_OID_PREFIX: &str = "1.3.6.1.4.1.3704.1";

/// AMD EPYC product line (the `<Product>` of KDS URLs and certificate names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Product {
    /// 3rd generation EPYC (Zen 3).
    Milan,
    /// 4th generation EPYC (Zen 4).
    Genoa,
    /// 5th generation EPYC (Zen 5).
    Turin,
}

impl Product {
    /// All products, oldest first.
    pub const ALL: [Product; 3] = [Product::Milan, Product::Genoa, Product::Turin];

    /// The name AMD uses in certificate names and KDS URLs: `"Milan"`, `"Genoa"`, `"Turin"`.
    pub fn name(self) -> &'static str {
        match self {
            Product::Milan => "Milan",
            Product::Genoa => "Genoa",
            Product::Turin => "Turin",
        }
    }

    /// First byte of AMD's CA serial numbers for this product (ARK-Milan is `0x010000`).
    pub fn serial_prefix(self) -> u8 {
        match self {
            Product::Milan => 0x01,
            Product::Genoa => 0x02,
            Product::Turin => 0x03,
        }
    }

    /// Length of the hwID / chip id that identifies a chip in VCEKs: 64 bytes, 8 on Turin.
    pub fn hwid_len(self) -> usize {
        match self {
            Product::Milan | Product::Genoa => 64,
            Product::Turin => 8,
        }
    }

    /// Typical CPUID (family, model, stepping) as reported at offset 0x188 of a v3+ report.
    pub fn cpuid(self) -> (u8, u8, u8) {
        match self {
            Product::Milan => (0x19, 0x01, 0x01),
            Product::Genoa => (0x19, 0x11, 0x01),
            Product::Turin => (0x1A, 0x02, 0x01),
        }
    }
}

impl core::fmt::Display for Product {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kind of key signs attestation reports, and hence which intermediate issues it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SigningKeyKind {
    /// Versioned Chip Endorsement Key, issued by the ASK (`SEV-<Product>`).
    Vcek,
    /// Versioned Loaded Endorsement Key, issued by the ASVK (`SEV-VLEK-<Product>`).
    Vlek,
}

impl SigningKeyKind {
    /// Value of the SIGNING_KEY field (bits 4:2 of the report's u32 at 0x48).
    pub fn report_value(self) -> u8 {
        match self {
            SigningKeyKind::Vcek => 0,
            SigningKeyKind::Vlek => 1,
        }
    }

    /// Common name of the leaf certificate: `"SEV-VCEK"` or `"SEV-VLEK"`.
    pub fn leaf_common_name(self) -> &'static str {
        match self {
            SigningKeyKind::Vcek => "SEV-VCEK",
            SigningKeyKind::Vlek => "SEV-VLEK",
        }
    }

    /// Path segment in KDS URLs: `"vcek"` or `"vlek"`.
    pub fn url_segment(self) -> &'static str {
        match self {
            SigningKeyKind::Vcek => "vcek",
            SigningKeyKind::Vlek => "vlek",
        }
    }
}

/// Security patch levels of a TCB version, as carried by VCEK extensions and report TCB fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Tcb {
    /// Boot loader SPL.
    pub bl: u8,
    /// PSP OS (TEE) SPL.
    pub tee: u8,
    /// SNP firmware SPL.
    pub snp: u8,
    /// CPU microcode SPL.
    pub ucode: u8,
    /// FMC SPL (Turin and later only).
    pub fmc: Option<u8>,
}

impl Tcb {
    /// A plausible, recent-looking TCB for `product` (with an FMC SPL on Turin).
    pub fn default_for(product: Product) -> Tcb {
        match product {
            Product::Milan => Tcb { bl: 4, tee: 0, snp: 22, ucode: 213, fmc: None },
            Product::Genoa => Tcb { bl: 10, tee: 0, snp: 23, ucode: 84, fmc: None },
            Product::Turin => Tcb { bl: 3, tee: 0, snp: 4, ucode: 72, fmc: Some(1) },
        }
    }

    /// Encodes the TCB_VERSION u64 of a report.
    ///
    /// Milan/Genoa: byte 0 bl, byte 1 tee, byte 6 snp, byte 7 ucode.
    /// Turin: byte 0 fmc, byte 1 bl, byte 2 tee, byte 3 snp, byte 7 ucode.
    /// `fmc` is ignored for Milan/Genoa and taken as 0 when absent on Turin.
    pub fn encode(&self, product: Product) -> u64 {
        let mut bytes = [0u8; 8];
        match product {
            Product::Milan | Product::Genoa => {
                bytes[0] = self.bl;
                bytes[1] = self.tee;
                bytes[6] = self.snp;
                bytes[7] = self.ucode;
            }
            Product::Turin => {
                bytes[0] = self.fmc.unwrap_or(0);
                bytes[1] = self.bl;
                bytes[2] = self.tee;
                bytes[3] = self.snp;
                bytes[7] = self.ucode;
            }
        }
        u64::from_le_bytes(bytes)
    }

    /// Inverse of [`Tcb::encode`] (reserved bytes are dropped; `fmc` is `Some` on Turin only).
    pub fn decode(raw: u64, product: Product) -> Tcb {
        let b = raw.to_le_bytes();
        match product {
            Product::Milan | Product::Genoa => Tcb { bl: b[0], tee: b[1], snp: b[6], ucode: b[7], fmc: None },
            Product::Turin => Tcb { bl: b[1], tee: b[2], snp: b[3], ucode: b[7], fmc: Some(b[0]) },
        }
    }
}

/// TCB_VERSION u64 for Milan/Genoa from its SPLs (byte 0 bl, 1 tee, 6 snp, 7 ucode).
pub fn tcb_milan_genoa(bl: u8, tee: u8, snp: u8, ucode: u8) -> u64 {
    Tcb { bl, tee, snp, ucode, fmc: None }.encode(Product::Milan)
}

/// TCB_VERSION u64 for Turin from its SPLs (byte 0 fmc, 1 bl, 2 tee, 3 snp, 7 ucode).
pub fn tcb_turin(fmc: u8, bl: u8, tee: u8, snp: u8, ucode: u8) -> u64 {
    Tcb { bl, tee, snp, ucode, fmc: Some(fmc) }.encode(Product::Turin)
}

/// The subject/issuer Name AMD uses, with `common_name` as the last RDN:
/// `OU=Engineering, C=US, L=Santa Clara, ST=CA, O=Advanced Micro Devices, CN=<common_name>`
/// (all UTF8String except C, which is a PrintableString).
pub fn amd_name(common_name: &str) -> Vec<u8> {
    let rdn = |oid: &str, value: Vec<u8>| der::set(&[&der::sequence(&[&der::oid(oid), &value])]);
    der::sequence(&[
        &rdn("2.5.4.11", der::utf8_string("Engineering")),
        &rdn("2.5.4.6", der::printable_string("US")),
        &rdn("2.5.4.7", der::utf8_string("Santa Clara")),
        &rdn("2.5.4.8", der::utf8_string("CA")),
        &rdn("2.5.4.10", der::utf8_string("Advanced Micro Devices")),
        &rdn("2.5.4.3", der::utf8_string(common_name)),
    ])
}

/// RSASSA-PSS AlgorithmIdentifier as in AMD's certificates: hash SHA-384 (with NULL
/// parameters), MGF1 with SHA-384, salt length 48, and — when `explicit_trailer_field` —
/// the default trailerField `[3] INTEGER 1` written out, as AMD's ARK/ASK and older VCEKs do
/// (newer VCEKs/VLEKs omit it).
pub fn rsa_pss_sha384_alg_id(explicit_trailer_field: bool) -> Vec<u8> {
    let sha384 = der::sequence(&[&der::oid("2.16.840.1.101.3.4.2.2"), &der::null()]);
    let mgf1 = der::sequence(&[&der::oid("1.2.840.113549.1.1.8"), &sha384]);
    let mut params = vec![der::explicit(0, &sha384), der::explicit(1, &mgf1), der::explicit(2, &der::integer_u64(48))];
    if explicit_trailer_field {
        params.push(der::explicit(3, &der::integer_u64(1)));
    }
    let params: Vec<&[u8]> = params.iter().map(Vec::as_slice).collect();
    der::sequence(&[&der::oid("1.2.840.113549.1.1.10"), &der::sequence(&params)])
}

/// One `Extension` (the BOOLEAN is omitted when not critical, as DER requires).
pub(crate) fn extension(oid: &str, critical: bool, value: &[u8]) -> Vec<u8> {
    if critical {
        der::sequence(&[&der::oid(oid), &der::boolean(true), &der::octet_string(value)])
    } else {
        der::sequence(&[&der::oid(oid), &der::octet_string(value)])
    }
}

/// `SEQUENCE { tbs, signatureAlgorithm, BIT STRING signature }` (certificates and CRLs).
pub(crate) fn signed(tbs: &[u8], alg_id: &[u8], signature: &[u8]) -> Vec<u8> {
    der::sequence(&[tbs, alg_id, &der::bit_string(signature)])
}

pub(crate) fn rsa_pss_sign(key: &RsaKeyPair, message: &[u8]) -> Vec<u8> {
    let mut signature = vec![0u8; key.public_modulus_len()];
    key.sign(&RSA_PSS_SHA384, &SystemRandom::new(), message, &mut signature).expect("RSA-PSS signing failed");
    signature
}

/// RSAPublicKey (PKCS #1) DER of a key pair.
fn rsa_public_key(key: &RsaKeyPair) -> &[u8] {
    key.public_key().as_ref()
}

fn rsa_spki(key: &RsaKeyPair) -> Vec<u8> {
    let alg = der::sequence(&[&der::oid("1.2.840.113549.1.1.1"), &der::null()]);
    der::sequence(&[&alg, &der::bit_string(rsa_public_key(key))])
}

/// Key identifier method 1 of RFC 5280 §4.2.1.2 (SHA-1 of the subjectPublicKey bits), which
/// is what AMD's certificates carry.
fn key_identifier(key: &RsaKeyPair) -> Vec<u8> {
    digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, rsa_public_key(key)).as_ref().to_vec()
}

fn crl_distribution_points(url: &str) -> Vec<u8> {
    // SEQUENCE OF DistributionPoint { distributionPoint [0] { fullName [0] { [6] URI } } }
    let uri = der::implicit(6, false, url.as_bytes());
    let full_name = der::implicit(0, true, &uri);
    let dp_name = der::explicit(0, &full_name);
    der::sequence(&[&der::sequence(&[&dp_name])])
}

fn crl_url(kind: SigningKeyKind, product: Product) -> String {
    format!("https://kdsintf.amd.com/{}/v1/{}/crl", kind.url_segment(), product.name())
}

fn generate_rsa(bits: usize) -> RsaKeyPair {
    let size = match bits {
        2048 => KeySize::Rsa2048,
        3072 => KeySize::Rsa3072,
        4096 => KeySize::Rsa4096,
        8192 => KeySize::Rsa8192,
        other => panic!("unsupported RSA key size {other} (use 2048, 3072, 4096 or 8192)"),
    };
    RsaKeyPair::generate(size).expect("RSA key generation failed")
}

/// Fields of a TBSCertificate for the RSA CA certificates.
struct CaCert<'a> {
    serial: &'a [u8],
    issuer: &'a [u8],
    subject: &'a [u8],
    not_before: i64,
    not_after: i64,
    subject_key: &'a RsaKeyPair,
    signer: &'a RsaKeyPair,
    extensions: Vec<Vec<u8>>,
    explicit_trailer_field: bool,
}

impl CaCert<'_> {
    fn build(&self) -> Vec<u8> {
        let alg = rsa_pss_sha384_alg_id(self.explicit_trailer_field);
        let exts: Vec<&[u8]> = self.extensions.iter().map(Vec::as_slice).collect();
        let tbs = tbs_certificate(&TbsFields {
            serial: self.serial,
            signature_alg: &alg,
            issuer: self.issuer,
            not_before: self.not_before,
            not_after: self.not_after,
            subject: self.subject,
            spki: &rsa_spki(self.subject_key),
            extensions: &exts,
        });
        let signature = rsa_pss_sign(self.signer, &tbs);
        signed(&tbs, &alg, &signature)
    }
}

pub(crate) struct TbsFields<'a> {
    pub(crate) serial: &'a [u8],
    pub(crate) signature_alg: &'a [u8],
    pub(crate) issuer: &'a [u8],
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    pub(crate) subject: &'a [u8],
    pub(crate) spki: &'a [u8],
    pub(crate) extensions: &'a [&'a [u8]],
}

pub(crate) fn tbs_certificate(f: &TbsFields<'_>) -> Vec<u8> {
    let validity = der::sequence(&[&der::time(f.not_before), &der::time(f.not_after)]);
    let mut parts: Vec<Vec<u8>> = vec![
        der::explicit(0, &der::integer_u64(2)),
        der::integer_unsigned(f.serial),
        f.signature_alg.to_vec(),
        f.issuer.to_vec(),
        validity,
        f.subject.to_vec(),
        f.spki.to_vec(),
    ];
    if !f.extensions.is_empty() {
        parts.push(der::explicit(3, &der::sequence(f.extensions)));
    }
    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    der::sequence(&parts)
}

/// Options for (re-)issuing the intermediate (ASK/ASVK) certificate; every unset field takes
/// the value the PKI's own intermediate has.
#[derive(Clone, Debug, Default)]
pub struct IntermediateSpec {
    serial: Option<Vec<u8>>,
    common_name: Option<String>,
    not_before: Option<i64>,
    not_after: Option<i64>,
    omit_trailer_field: bool,
}

impl IntermediateSpec {
    /// Same as `IntermediateSpec::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serial number as unsigned big-endian bytes (default: AMD-like, e.g. `01 00 01`).
    pub fn serial(mut self, serial: impl Into<Vec<u8>>) -> Self {
        self.serial = Some(serial.into());
        self
    }

    /// Subject common name (default `SEV-<Product>` or `SEV-VLEK-<Product>`).
    pub fn common_name(mut self, common_name: impl Into<String>) -> Self {
        self.common_name = Some(common_name.into());
        self
    }

    /// Validity period in Unix seconds (default: the PKI's validity).
    pub fn validity(mut self, not_before: i64, not_after: i64) -> Self {
        self.not_before = Some(not_before);
        self.not_after = Some(not_after);
        self
    }

    /// Whether the RSASSA-PSS parameters spell out the default trailerField (default: yes,
    /// as in AMD's cert_chain).
    pub fn pss_trailer_field(mut self, explicit: bool) -> Self {
        self.omit_trailer_field = !explicit;
        self
    }
}

/// Builder for [`TestPki`] (key size and CA validity).
#[derive(Clone, Debug)]
pub struct TestPkiBuilder {
    product: Product,
    kind: SigningKeyKind,
    rsa_bits: usize,
    not_before: i64,
    not_after: i64,
}

impl TestPkiBuilder {
    /// RSA modulus size of the ARK and intermediate keys: 2048 (default), 3072, 4096 or 8192.
    pub fn rsa_bits(mut self, bits: usize) -> Self {
        self.rsa_bits = bits;
        self
    }

    /// Validity of the ARK and intermediate, and the default validity of leaves, in Unix
    /// seconds (default 2020-01-01 .. 2049-01-01).
    pub fn validity(mut self, not_before: i64, not_after: i64) -> Self {
        self.not_before = not_before;
        self.not_after = not_after;
        self
    }

    /// Generates the keys and certificates.
    pub fn build(self) -> TestPki {
        let ark_key = generate_rsa(self.rsa_bits);
        let ask_key = generate_rsa(self.rsa_bits);
        let mut pki = TestPki {
            product: self.product,
            kind: self.kind,
            not_before: self.not_before,
            not_after: self.not_after,
            ark_key,
            ask_key,
            ark_der: Vec::new(),
            ask_der: Vec::new(),
        };
        pki.ark_der = pki.reissue_ark(self.not_before, self.not_after);
        pki.ask_der = pki.issue_intermediate(&IntermediateSpec::default());
        pki
    }
}

/// A generated AMD-like PKI for one product and signing-key kind: an ARK (self-signed RSA
/// root) and an ASK (VCEK) or ASVK (VLEK) intermediate, both signed with RSASSA-PSS/SHA-384
/// like AMD's, plus issuance of leaves ([`TestPki::issue_leaf`]) and CRLs
/// ([`TestPki::issue_crl`]).
#[derive(Debug)]
pub struct TestPki {
    pub(crate) product: Product,
    pub(crate) kind: SigningKeyKind,
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    pub(crate) ark_key: RsaKeyPair,
    pub(crate) ask_key: RsaKeyPair,
    ark_der: Vec<u8>,
    ask_der: Vec<u8>,
}

impl TestPki {
    /// A PKI with RSA-2048 keys and the default validity (2020-01-01 .. 2049-01-01).
    pub fn new(product: Product, kind: SigningKeyKind) -> TestPki {
        TestPki::builder(product, kind).build()
    }

    /// A PKI with RSA keys of `bits` bits (2048, 3072, 4096 or 8192; AMD uses 4096).
    pub fn with_rsa_bits(product: Product, kind: SigningKeyKind, bits: usize) -> TestPki {
        TestPki::builder(product, kind).rsa_bits(bits).build()
    }

    /// A builder with RSA-2048 and the default validity.
    pub fn builder(product: Product, kind: SigningKeyKind) -> TestPkiBuilder {
        TestPkiBuilder { product, kind, rsa_bits: 2048, not_before: DEFAULT_NOT_BEFORE, not_after: DEFAULT_NOT_AFTER }
    }

    /// The product.
    pub fn product(&self) -> Product {
        self.product
    }

    /// The signing-key kind (selects ASK or ASVK).
    pub fn kind(&self) -> SigningKeyKind {
        self.kind
    }

    /// Default validity period `(not_before, not_after)` in Unix seconds.
    pub fn validity(&self) -> (i64, i64) {
        (self.not_before, self.not_after)
    }

    /// ARK common name: `ARK-<Product>`.
    pub fn ark_common_name(&self) -> String {
        format!("ARK-{}", self.product.name())
    }

    /// Intermediate common name: `SEV-<Product>` (ASK) or `SEV-VLEK-<Product>` (ASVK).
    pub fn intermediate_common_name(&self) -> String {
        match self.kind {
            SigningKeyKind::Vcek => format!("SEV-{}", self.product.name()),
            SigningKeyKind::Vlek => format!("SEV-VLEK-{}", self.product.name()),
        }
    }

    /// ARK serial number like AMD's: `<p> 00 00` with `p` = 1 Milan, 2 Genoa, 3 Turin.
    pub fn ark_serial(&self) -> Vec<u8> {
        vec![self.product.serial_prefix(), 0x00, 0x00]
    }

    /// Intermediate serial number as AMD's: ASK `01 00 01` (Milan), `02 00 02` (Genoa),
    /// `03 00 01` (Turin); ASVK `<p> 01 01`.
    pub fn ask_serial(&self) -> Vec<u8> {
        match (self.kind, self.product) {
            (SigningKeyKind::Vcek, Product::Genoa) => vec![0x02, 0x00, 0x02],
            (SigningKeyKind::Vcek, product) => vec![product.serial_prefix(), 0x00, 0x01],
            (SigningKeyKind::Vlek, product) => vec![product.serial_prefix(), 0x01, 0x01],
        }
    }

    /// The self-signed ARK certificate (DER).
    pub fn ark_der(&self) -> &[u8] {
        &self.ark_der
    }

    /// The intermediate (ASK or ASVK) certificate (DER).
    pub fn ask_der(&self) -> &[u8] {
        &self.ask_der
    }

    /// The ARK certificate as PEM.
    pub fn ark_pem(&self) -> String {
        crate::pem("CERTIFICATE", &self.ark_der)
    }

    /// The intermediate certificate as PEM.
    pub fn ask_pem(&self) -> String {
        crate::pem("CERTIFICATE", &self.ask_der)
    }

    /// Intermediate then ARK, PEM, like the body of KDS `cert_chain`.
    pub fn chain_pem(&self) -> String {
        let mut out = self.ask_pem();
        out.push_str(&self.ark_pem());
        out
    }

    /// The ARK's SubjectPublicKeyInfo (DER), e.g. to pin it as a trust anchor.
    pub fn ark_spki_der(&self) -> Vec<u8> {
        rsa_spki(&self.ark_key)
    }

    /// The intermediate's SubjectPublicKeyInfo (DER).
    pub fn ask_spki_der(&self) -> Vec<u8> {
        rsa_spki(&self.ask_key)
    }

    /// Issues a new self-signed ARK certificate over the same key (same name and serial) with
    /// another validity period. The PKI's own ARK certificate is not replaced.
    pub fn reissue_ark(&self, not_before: i64, not_after: i64) -> Vec<u8> {
        let name = amd_name(&self.ark_common_name());
        let extensions = vec![
            extension("2.5.29.15", true, &der::bit_string_with_unused(1, &[0x06])),
            extension("2.5.29.14", false, &der::octet_string(&key_identifier(&self.ark_key))),
            extension("2.5.29.19", true, &der::sequence(&[&der::boolean(true)])),
            extension("2.5.29.31", false, &crl_distribution_points(&crl_url(SigningKeyKind::Vcek, self.product))),
        ];
        CaCert {
            serial: &self.ark_serial(),
            issuer: &name,
            subject: &name,
            not_before,
            not_after,
            subject_key: &self.ark_key,
            signer: &self.ark_key,
            extensions,
            explicit_trailer_field: true,
        }
        .build()
    }

    /// Issues an intermediate certificate for this PKI's intermediate key, signed by this
    /// PKI's ARK, with the overrides in `spec` (e.g. an expired ASK that still verifies the
    /// leaves this PKI issues). The PKI's own intermediate certificate is not replaced.
    pub fn issue_intermediate(&self, spec: &IntermediateSpec) -> Vec<u8> {
        self.issue_intermediate_signed_by(spec, self)
    }

    /// Like [`TestPki::issue_intermediate`], but signed by `signer`'s ARK, with `signer`'s
    /// ARK name as issuer (e.g. `SEV-Milan` certified by `ARK-Genoa`).
    pub fn issue_intermediate_signed_by(&self, spec: &IntermediateSpec, signer: &TestPki) -> Vec<u8> {
        let default_serial = self.ask_serial();
        let serial = spec.serial.as_deref().unwrap_or(&default_serial);
        let common_name = spec.common_name.clone().unwrap_or_else(|| self.intermediate_common_name());
        let extensions = vec![
            extension("2.5.29.14", false, &der::octet_string(&key_identifier(&self.ask_key))),
            extension(
                "2.5.29.35",
                false,
                &der::sequence(&[&der::implicit(0, false, &key_identifier(&signer.ark_key))]),
            ),
            extension("2.5.29.19", true, &der::sequence(&[&der::boolean(true), &der::integer_u64(0)])),
            // AMD writes keyCertSign as `03 02 01 04` (one unused bit declared).
            extension("2.5.29.15", true, &der::bit_string_with_unused(1, &[0x04])),
            extension("2.5.29.31", false, &crl_distribution_points(&crl_url(self.kind, self.product))),
        ];
        CaCert {
            serial,
            issuer: &amd_name(&signer.ark_common_name()),
            subject: &amd_name(&common_name),
            not_before: spec.not_before.unwrap_or(self.not_before),
            not_after: spec.not_after.unwrap_or(self.not_after),
            subject_key: &self.ask_key,
            signer: &signer.ark_key,
            extensions,
            explicit_trailer_field: !spec.omit_trailer_field,
        }
        .build()
    }

    pub(crate) fn ark_key_identifier(&self) -> Vec<u8> {
        key_identifier(&self.ark_key)
    }
}
