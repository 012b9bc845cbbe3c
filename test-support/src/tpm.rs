//! A software "TPM" for tests: attestation keys held in software ([`SoftAk`]) that produce the
//! structures a real TPM 2.0 returns from `TPM2_ReadPublic` and `TPM2_Quote`, plus the Azure
//! vTPM containers that carry them ([`hcl_report`], [`runtime_json`]) and a crypto-agile TCG
//! event log builder ([`EventLogBuilder`]).
//!
//! Everything is marshalled per the TPM 2.0 Library Part 2 (big-endian), except the HCL report
//! and the event log, which are little-endian like the real ones.
//!
//! ```
//! use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, pcr_digest};
//!
//! let ak = SoftAk::ecc_p256();
//! let pcrs: PcrBank = [[7; 32]; 24];
//! let quote = ak.quote(&QuoteSpec::new(&[1; 32], &pcrs, 0xFF));
//! assert_eq!(&quote.attest[..4], &0xFF54_4347u32.to_be_bytes());
//! assert!(quote.attest.ends_with(&pcr_digest(&pcrs, 0xFF)));
//! ```

use aws_lc_rs::digest::SHA256;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _, RSA_PKCS1_SHA256};

use crate::report::REPORT_LEN;

// ---- TPM constants (TPM 2.0 Library Part 2): the engine's, so the two cannot drift ------------------------

pub use attest_engine::tpm::alg::{
    TPM_ALG_ECC, TPM_ALG_ECDSA, TPM_ALG_NULL, TPM_ALG_RSA, TPM_ALG_RSAPSS, TPM_ALG_RSASSA, TPM_ALG_SHA256,
    TPM_ECC_NIST_P256,
};
pub use attest_engine::tpm::attest::{TPM_GENERATED_VALUE, TPM_ST_ATTEST_QUOTE};
/// TPMA_OBJECT bits (Part 2 §8.3).
pub use attest_engine::tpm::public::attributes;

/// objectAttributes of a typical attestation key: fixedTPM | fixedParent | sensitiveDataOrigin |
/// userWithAuth | restricted | sign (`0x00050072`).
pub const AK_ATTRIBUTES: u32 = attributes::FIXED_TPM
    | attributes::FIXED_PARENT
    | attributes::SENSITIVE_DATA_ORIGIN
    | attributes::USER_WITH_AUTH
    | attributes::RESTRICTED
    | attributes::SIGN;

const _: () = assert!(AK_ATTRIBUTES == 0x0005_0072);

/// Number of PCRs in a PC Client bank.
pub const PCR_COUNT: usize = 24;

/// The 24 SHA-256 PCRs of one bank, by index.
pub type PcrBank = [[u8; 32]; PCR_COUNT];

/// SHA-256 of the concatenation of `parts`.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut ctx = aws_lc_rs::digest::Context::new(&SHA256);
    for p in parts {
        ctx.update(p);
    }
    ctx.finish().as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// `PCR := SHA-256(PCR ‖ digest)`.
pub fn extend(pcr: &mut [u8; 32], digest: &[u8]) {
    *pcr = sha256(&[pcr, digest]);
}

/// A PCR bitmap (bit n = PCR n) of the PCRs in `pcrs`.
pub fn selection(pcrs: impl IntoIterator<Item = u8>) -> u32 {
    pcrs.into_iter().fold(0, |acc, i| {
        assert!(usize::from(i) < PCR_COUNT, "PCR {i} out of range");
        acc | (1 << i)
    })
}

/// pcrDigest of a quote: SHA-256 of the selected PCR values in ascending index order.
pub fn pcr_digest(pcrs: &PcrBank, selection: u32) -> [u8; 32] {
    let parts: Vec<&[u8]> = (0..PCR_COUNT).filter(|i| selection & (1 << i) != 0).map(|i| &pcrs[i][..]).collect();
    sha256(&parts)
}

// ---- Marshalling helpers -------------------------------------------------------------------------------

fn u16_be(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn u32_be(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn u64_be(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// A TPM2B: u16 big-endian size, then the bytes.
pub fn tpm2b(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + data.len());
    push_tpm2b(&mut out, data);
    out
}

fn push_tpm2b(out: &mut Vec<u8>, data: &[u8]) {
    u16_be(out, u16::try_from(data.len()).expect("TPM2B larger than 64 KiB"));
    out.extend_from_slice(data);
}

/// base64url without padding (RFC 4648 §5), as JWKs use.
pub fn base64url(data: &[u8]) -> String {
    crate::base64(data).trim_end_matches('=').replace('+', "-").replace('/', "_")
}

// ---- Attestation keys ----------------------------------------------------------------------------------

/// The key type of a [`SoftAk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AkKind {
    /// RSA-2048, RSASSA-PKCS1-v1_5 with SHA-256.
    Rsa2048,
    /// ECC NIST P-256, ECDSA with SHA-256.
    EccP256,
}

#[derive(Debug)]
enum Key {
    Rsa(RsaKeyPair),
    Ecc(EcdsaKeyPair),
}

/// An attestation key held in software. It signs like a TPM's restricted signing key would, but
/// signs anything (a real restricted key only signs TPM-generated structures).
#[derive(Debug)]
pub struct SoftAk {
    key: Key,
}

/// A signed quote: the marshalled TPMS_ATTEST and its TPMT_SIGNATURE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    /// TPMS_ATTEST.
    pub attest: Vec<u8>,
    /// TPMT_SIGNATURE over `attest`.
    pub signature: Vec<u8>,
}

/// What a quote attests: extraData, the SHA-256 PCRs and their selection, and the clock fields.
#[derive(Clone, Copy, Debug)]
pub struct QuoteSpec<'a> {
    /// extraData (the caller's nonce digest), at most 64 bytes.
    pub extra_data: &'a [u8],
    /// The SHA-256 PCR values.
    pub pcrs: &'a PcrBank,
    /// The SHA-256 bank's selection bitmap (bit n = PCR n).
    pub selection: u32,
    /// clockInfo.clock.
    pub clock: u64,
    /// clockInfo.resetCount.
    pub reset_count: u32,
    /// clockInfo.restartCount.
    pub restart_count: u32,
    /// clockInfo.safe.
    pub safe: bool,
    /// firmwareVersion.
    pub firmware_version: u64,
}

impl<'a> QuoteSpec<'a> {
    /// A quote of `pcrs` selected by `selection`, with plausible clock and firmware values.
    pub fn new(extra_data: &'a [u8], pcrs: &'a PcrBank, selection: u32) -> Self {
        Self {
            extra_data,
            pcrs,
            selection,
            clock: 1_234_567,
            reset_count: 3,
            restart_count: 0,
            safe: true,
            firmware_version: 0x2020_0312_0012_0003,
        }
    }
}

impl SoftAk {
    /// A fresh RSA-2048 key (RSASSA-PKCS1-v1_5, SHA-256).
    pub fn rsa() -> Self {
        Self { key: Key::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key generation failed")) }
    }

    /// A fresh ECC P-256 key (ECDSA, SHA-256).
    pub fn ecc_p256() -> Self {
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("ECDSA key generation failed");
        Self { key: Key::Ecc(key) }
    }

    /// The private key as PKCS#8 v1 DER, to hand the same AK to another process ([`SoftAk::from_pkcs8`]).
    pub fn to_pkcs8(&self) -> Vec<u8> {
        use aws_lc_rs::encoding::AsDer as _;
        match &self.key {
            Key::Rsa(k) => k.as_der().expect("RSA key serialization failed").as_ref().to_vec(),
            Key::Ecc(k) => k.to_pkcs8v1().expect("ECDSA key serialization failed").as_ref().to_vec(),
        }
    }

    /// A key of `kind` from PKCS#8 DER ([`SoftAk::to_pkcs8`]); `None` when `der` is not such a key.
    pub fn from_pkcs8(kind: AkKind, der: &[u8]) -> Option<Self> {
        let key = match kind {
            AkKind::Rsa2048 => Key::Rsa(RsaKeyPair::from_pkcs8(der).ok()?),
            AkKind::EccP256 => Key::Ecc(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der).ok()?),
        };
        Some(Self { key })
    }

    /// The key type.
    pub fn kind(&self) -> AkKind {
        match self.key {
            Key::Rsa(_) => AkKind::Rsa2048,
            Key::Ecc(_) => AkKind::EccP256,
        }
    }

    /// The RSA modulus, big-endian without leading zeros (`None` for ECC keys).
    pub fn modulus(&self) -> Option<&[u8]> {
        match &self.key {
            Key::Rsa(k) => Some(k.public_key().modulus().big_endian_without_leading_zero()),
            Key::Ecc(_) => None,
        }
    }

    /// The RSA public exponent, big-endian without leading zeros (`None` for ECC keys).
    pub fn exponent(&self) -> Option<&[u8]> {
        match &self.key {
            Key::Rsa(k) => Some(k.public_key().exponent().big_endian_without_leading_zero()),
            Key::Ecc(_) => None,
        }
    }

    /// The ECC point's affine coordinates `(x, y)` (`None` for RSA keys).
    pub fn point(&self) -> Option<(&[u8], &[u8])> {
        match &self.key {
            Key::Rsa(_) => None,
            Key::Ecc(k) => {
                let p = k.public_key().as_ref();
                Some((&p[1..33], &p[33..65]))
            }
        }
    }

    /// The marshalled TPMT_PUBLIC with the usual AK attributes ([`AK_ATTRIBUTES`]).
    pub fn tpmt_public(&self) -> Vec<u8> {
        self.tpmt_public_with(AK_ATTRIBUTES)
    }

    /// The marshalled TPMT_PUBLIC with `object_attributes` (to build keys a verifier must refuse).
    ///
    /// RSA: type RSA, nameAlg SHA-256, attributes, empty authPolicy, symmetric NULL, scheme
    /// RSASSA/SHA-256, keyBits 2048, exponent 0 (the default 65537), unique = modulus.
    /// ECC: type ECC, …, scheme ECDSA/SHA-256, curve NIST P-256, kdf NULL, unique = (x, y).
    pub fn tpmt_public_with(&self, object_attributes: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let ty = match self.key {
            Key::Rsa(_) => TPM_ALG_RSA,
            Key::Ecc(_) => TPM_ALG_ECC,
        };
        u16_be(&mut out, ty);
        u16_be(&mut out, TPM_ALG_SHA256); // nameAlg
        u32_be(&mut out, object_attributes);
        push_tpm2b(&mut out, &[]); // authPolicy
        u16_be(&mut out, TPM_ALG_NULL); // symmetric
        match &self.key {
            Key::Rsa(k) => {
                u16_be(&mut out, TPM_ALG_RSASSA);
                u16_be(&mut out, TPM_ALG_SHA256);
                let modulus = k.public_key().modulus().big_endian_without_leading_zero();
                u16_be(&mut out, u16::try_from(modulus.len() * 8).expect("key size"));
                let e = k.public_key().exponent().big_endian_without_leading_zero();
                // exponent 0 means the default 65537 (Part 2 §12.2.3.5).
                u32_be(&mut out, if e == [1, 0, 1] { 0 } else { e.iter().fold(0, |a, b| (a << 8) | u32::from(*b)) });
                push_tpm2b(&mut out, modulus);
            }
            Key::Ecc(_) => {
                u16_be(&mut out, TPM_ALG_ECDSA);
                u16_be(&mut out, TPM_ALG_SHA256);
                u16_be(&mut out, TPM_ECC_NIST_P256);
                u16_be(&mut out, TPM_ALG_NULL); // kdf
                let (x, y) = self.point().expect("ECC key");
                push_tpm2b(&mut out, x);
                push_tpm2b(&mut out, y);
            }
        }
        out
    }

    /// The marshalled TPM2B_PUBLIC (what `TPM2_ReadPublic` returns and SNP variants bind).
    pub fn tpm2b_public(&self) -> Vec<u8> {
        tpm2b(&self.tpmt_public())
    }

    /// TPM2B_PUBLIC with `object_attributes`.
    pub fn tpm2b_public_with(&self, object_attributes: u32) -> Vec<u8> {
        tpm2b(&self.tpmt_public_with(object_attributes))
    }

    /// The key's TPM Name: nameAlg (SHA-256) ‖ SHA-256(TPMT_PUBLIC).
    pub fn name(&self) -> Vec<u8> {
        let mut out = TPM_ALG_SHA256.to_be_bytes().to_vec();
        out.extend_from_slice(&sha256(&[&self.tpmt_public()]));
        out
    }

    /// SHA-256 of the TPMT_PUBLIC (how a `qemu-vtpm` AK registry keys an AK).
    pub fn tpmt_digest(&self) -> [u8; 32] {
        sha256(&[&self.tpmt_public()])
    }

    /// The bare signature over `message`: RSASSA-PKCS1-v1_5/SHA-256 bytes, or ECDSA P-256/SHA-256
    /// as fixed-width `r ‖ s`.
    pub fn sign_raw(&self, message: &[u8]) -> Vec<u8> {
        match &self.key {
            Key::Rsa(k) => {
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut sig).expect("RSA signing failed");
                sig
            }
            Key::Ecc(k) => k.sign(&SystemRandom::new(), message).expect("ECDSA signing failed").as_ref().to_vec(),
        }
    }

    /// The TPMT_SIGNATURE over `message`: RSASSA (sigAlg 0x0014, hash SHA-256, TPM2B sig) or ECDSA
    /// (sigAlg 0x0018, hash SHA-256, TPM2B r, TPM2B s).
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        let raw = self.sign_raw(message);
        let mut out = Vec::new();
        match self.key {
            Key::Rsa(_) => {
                u16_be(&mut out, TPM_ALG_RSASSA);
                u16_be(&mut out, TPM_ALG_SHA256);
                push_tpm2b(&mut out, &raw);
            }
            Key::Ecc(_) => {
                u16_be(&mut out, TPM_ALG_ECDSA);
                u16_be(&mut out, TPM_ALG_SHA256);
                let (r, s) = raw.split_at(raw.len() / 2);
                push_tpm2b(&mut out, r);
                push_tpm2b(&mut out, s);
            }
        }
        out
    }

    /// The TPMS_ATTEST this key would produce for `spec` (qualifiedSigner = [`SoftAk::name`]).
    pub fn attest(&self, spec: &QuoteSpec<'_>) -> Vec<u8> {
        tpms_attest(&self.name(), spec)
    }

    /// A signed quote for `spec`.
    pub fn quote(&self, spec: &QuoteSpec<'_>) -> Quote {
        let attest = self.attest(spec);
        let signature = self.sign(&attest);
        Quote { attest, signature }
    }

    /// The key as a SubjectPublicKeyInfo (DER).
    pub fn spki(&self) -> Vec<u8> {
        match (self.modulus(), self.point()) {
            (Some(n), _) => crate::gce::rsa_spki(n, self.exponent().expect("RSA")),
            (None, Some((x, y))) => crate::gce::p256_spki(&[&[4u8][..], x, y].concat()),
            (None, None) => unreachable!("a key is RSA or ECC"),
        }
    }

    /// The RSA key as a JWK with `kid` "HCLAkPub", as Azure's HCL runtime data carries it:
    /// `{"kid":"HCLAkPub","key_ops":["sign"],"kty":"RSA","e":…,"n":…}` (base64url, no padding).
    ///
    /// # Panics
    /// For ECC keys.
    pub fn jwk(&self) -> String {
        self.jwk_with_kid("HCLAkPub")
    }

    /// The RSA key as a JWK with `kid`.
    ///
    /// # Panics
    /// For ECC keys.
    pub fn jwk_with_kid(&self, kid: &str) -> String {
        let (n, e) = (self.modulus().expect("JWKs are built for RSA keys"), self.exponent().expect("RSA"));
        format!(r#"{{"kid":"{kid}","key_ops":["sign"],"kty":"RSA","e":"{}","n":"{}"}}"#, base64url(e), base64url(n))
    }
}

/// A marshalled quote TPMS_ATTEST: magic, type 0x8018, qualifiedSigner, extraData, clockInfo,
/// firmwareVersion, then TPMS_QUOTE_INFO with one TPMS_PCR_SELECTION for the SHA-256 bank
/// (sizeofSelect 3) and pcrDigest.
pub fn tpms_attest(qualified_signer: &[u8], spec: &QuoteSpec<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    u32_be(&mut out, TPM_GENERATED_VALUE);
    u16_be(&mut out, TPM_ST_ATTEST_QUOTE);
    push_tpm2b(&mut out, qualified_signer);
    push_tpm2b(&mut out, spec.extra_data);
    u64_be(&mut out, spec.clock);
    u32_be(&mut out, spec.reset_count);
    u32_be(&mut out, spec.restart_count);
    out.push(u8::from(spec.safe));
    u64_be(&mut out, spec.firmware_version);
    // TPML_PCR_SELECTION: count 1, {hash SHA-256, sizeofSelect 3, pcrSelect[3]}.
    u32_be(&mut out, 1);
    u16_be(&mut out, TPM_ALG_SHA256);
    out.push(3);
    out.extend_from_slice(&spec.selection.to_le_bytes()[..3]);
    push_tpm2b(&mut out, &pcr_digest(spec.pcrs, spec.selection));
    out
}

// ---- Azure vTPM containers -----------------------------------------------------------------------------

/// Size of the HCL report NV index on current Azure hosts.
pub const HCL_REPORT_NV_SIZE: usize = 2600;

/// HCL runtime data JSON with `jwks` in its `keys` array and a small `vm-configuration` object,
/// shaped like Azure's.
pub fn runtime_json(jwks: &[&str]) -> Vec<u8> {
    runtime_json_for_vm(jwks, "6D3A1B0C-2E4F-4A5B-8C7D-9E0F1A2B3C4D")
}

/// [`runtime_json`] of the VM `vm_unique_id` (a GUID: Azure gives each VM its own).
pub fn runtime_json_for_vm(jwks: &[&str], vm_unique_id: &str) -> Vec<u8> {
    format!(
        r#"{{"keys":[{}],"vm-configuration":{{"console-enabled":true,"root-cert-thumbprint":"","secure-boot":true,"tpm-enabled":true,"tpm-persisted":true,"vmUniqueId":"{vm_unique_id}"}}}}"#,
        jwks.join(",")
    )
    .into_bytes()
}

/// The REPORT_DATA an HCL report's SNP report must carry for `runtime_json`: SHA-256 of it, then
/// 32 zero bytes.
pub fn hcl_report_data(runtime_json: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&sha256(&[runtime_json]));
    out
}

/// An Azure HCL report (vTPM NV index 0x01400001): the 32-byte header ("HCLA", version 1,
/// report_size 0x4A0, request_type 2, status 0, 12 reserved bytes), the SNP report, the IGVM
/// request-data header (data_size = var_size + 20, version 1, report_type 2 (SNP), hash_type 1
/// (SHA-256), var_size), the runtime JSON, then zero padding to [`HCL_REPORT_NV_SIZE`] bytes.
/// All integers little-endian.
pub fn hcl_report(snp_report: &[u8; REPORT_LEN], runtime_json: &[u8]) -> Vec<u8> {
    hcl_report_with_hash_type(snp_report, runtime_json, 1)
}

/// [`hcl_report`] with another IGVM hash_type (1 SHA-256, 2 SHA-384, 3 SHA-512).
pub fn hcl_report_with_hash_type(snp_report: &[u8; REPORT_LEN], runtime_json: &[u8], hash_type: u32) -> Vec<u8> {
    let var_size = u32::try_from(runtime_json.len()).expect("runtime data size");
    let mut out = Vec::with_capacity(HCL_REPORT_NV_SIZE);
    out.extend_from_slice(b"HCLA");
    for v in [1u32, REPORT_LEN as u32, 2, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(snp_report);
    for v in [var_size + 20, 1, 2, hash_type, var_size] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(runtime_json);
    if out.len() < HCL_REPORT_NV_SIZE {
        out.resize(HCL_REPORT_NV_SIZE, 0);
    }
    out
}

// ---- TCG event logs ------------------------------------------------------------------------------------

/// TCG PC Client event types used by [`EventLogBuilder`] users (PFP §10.4.1).
pub mod event_type {
    /// EV_POST_CODE.
    pub const EV_POST_CODE: u32 = 0x0000_0001;
    /// EV_NO_ACTION (never extended).
    pub const EV_NO_ACTION: u32 = 0x0000_0003;
    /// EV_SEPARATOR.
    pub const EV_SEPARATOR: u32 = 0x0000_0004;
    /// EV_ACTION.
    pub const EV_ACTION: u32 = 0x0000_0005;
    /// EV_S_CRTM_VERSION.
    pub const EV_S_CRTM_VERSION: u32 = 0x0000_0008;
    /// EV_IPL.
    pub const EV_IPL: u32 = 0x0000_000D;
    /// EV_EFI_VARIABLE_DRIVER_CONFIG.
    pub const EV_EFI_VARIABLE_DRIVER_CONFIG: u32 = 0x8000_0001;
    /// EV_EFI_VARIABLE_BOOT.
    pub const EV_EFI_VARIABLE_BOOT: u32 = 0x8000_0002;
    /// EV_EFI_BOOT_SERVICES_APPLICATION.
    pub const EV_EFI_BOOT_SERVICES_APPLICATION: u32 = 0x8000_0003;
    /// EV_EFI_ACTION.
    pub const EV_EFI_ACTION: u32 = 0x8000_0007;
    /// EV_EFI_PLATFORM_FIRMWARE_BLOB.
    pub const EV_EFI_PLATFORM_FIRMWARE_BLOB: u32 = 0x8000_0008;
}

/// One recorded event of an [`EventLogBuilder`]: where it starts in the log and where its SHA-256
/// digest and data are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventPosition {
    /// Offset of the event.
    pub offset: usize,
    /// Offset of its SHA-256 digest.
    pub digest_offset: usize,
    /// Offset of its event data.
    pub data_offset: usize,
}

/// Builds a crypto-agile TCG PC Client event log (PFP §10.2.2) with a single SHA-256 bank, and
/// replays it as it goes.
///
/// The first event is the `TCG_PCClientPCREvent` carrying the `Spec ID Event03` structure
/// (`EV_NO_ACTION`, PCR 0, zero SHA-1 digest; platformClass 0, spec version 2.0 errata 2, uintnSize 2,
/// one algorithm {SHA-256, 32}, no vendor info). Every later event is a `TCG_PCR_EVENT2` with one
/// SHA-256 digest. PCRs start at zero, except the DRTM PCRs 17–22, which start at all ones.
#[derive(Clone, Debug)]
pub struct EventLogBuilder {
    bytes: Vec<u8>,
    pcrs: PcrBank,
    events: Vec<EventPosition>,
}

impl Default for EventLogBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLogBuilder {
    /// A log holding just the Spec ID event.
    pub fn new() -> Self {
        let mut spec = b"Spec ID Event03\0".to_vec();
        spec.extend_from_slice(&0u32.to_le_bytes()); // platformClass
        spec.extend_from_slice(&[0, 2, 2, 2]); // specVersionMinor, Major, errata, uintnSize
        spec.extend_from_slice(&1u32.to_le_bytes()); // numberOfAlgorithms
        spec.extend_from_slice(&TPM_ALG_SHA256.to_le_bytes());
        spec.extend_from_slice(&32u16.to_le_bytes());
        spec.push(0); // vendorInfoSize
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&event_type::EV_NO_ACTION.to_le_bytes());
        bytes.extend_from_slice(&[0; 20]);
        bytes.extend_from_slice(&u32::try_from(spec.len()).expect("size").to_le_bytes());
        bytes.extend_from_slice(&spec);
        let mut pcrs = [[0u8; 32]; PCR_COUNT];
        for pcr in &mut pcrs[17..=22] {
            *pcr = [0xFF; 32];
        }
        Self { bytes, pcrs, events: Vec::new() }
    }

    /// Appends an event whose digest is SHA-256 of `data` (as firmware does for most events).
    pub fn event(self, pcr: u8, event_type: u32, data: &[u8]) -> Self {
        let digest = sha256(&[data]);
        self.event_with_digest(pcr, event_type, digest, data)
    }

    /// Appends an event with an explicit digest; extends `pcr` unless it is `EV_NO_ACTION`.
    pub fn event_with_digest(mut self, pcr: u8, event_type: u32, digest: [u8; 32], data: &[u8]) -> Self {
        let offset = self.bytes.len();
        self.bytes.extend_from_slice(&u32::from(pcr).to_le_bytes());
        self.bytes.extend_from_slice(&event_type.to_le_bytes());
        self.bytes.extend_from_slice(&1u32.to_le_bytes()); // TPML_DIGEST_VALUES.count
        self.bytes.extend_from_slice(&TPM_ALG_SHA256.to_le_bytes());
        let digest_offset = self.bytes.len();
        self.bytes.extend_from_slice(&digest);
        self.bytes.extend_from_slice(&u32::try_from(data.len()).expect("size").to_le_bytes());
        let data_offset = self.bytes.len();
        self.bytes.extend_from_slice(data);
        if event_type != event_type::EV_NO_ACTION {
            extend(&mut self.pcrs[usize::from(pcr)], &digest);
        }
        self.events.push(EventPosition { offset, digest_offset, data_offset });
        self
    }

    /// A small, plausible UEFI boot: firmware, Secure Boot variables, boot loader and separators
    /// in PCRs 0–7, and an `EV_NO_ACTION` event that must not be extended.
    pub fn typical_boot() -> Self {
        use event_type::{
            EV_EFI_ACTION, EV_EFI_BOOT_SERVICES_APPLICATION, EV_EFI_PLATFORM_FIRMWARE_BLOB, EV_EFI_VARIABLE_BOOT,
            EV_EFI_VARIABLE_DRIVER_CONFIG, EV_NO_ACTION, EV_POST_CODE, EV_S_CRTM_VERSION, EV_SEPARATOR,
        };
        let sep = [0u8; 4];
        let mut log = Self::new()
            .event(0, EV_S_CRTM_VERSION, "1.0.0\0".as_bytes())
            .event(
                0,
                EV_EFI_PLATFORM_FIRMWARE_BLOB,
                b"\x00\x00\x82\xff\x00\x00\x00\x00\x00\x00\x8e\x00\x00\x00\x00\x00",
            )
            .event(1, EV_EFI_VARIABLE_BOOT, b"BootOrder\x00\x00\x01\x00")
            .event(2, EV_POST_CODE, b"option ROM")
            .event(3, EV_NO_ACTION, b"informational, never extended")
            .event(4, EV_EFI_ACTION, b"Calling EFI Application from Boot Option")
            .event(4, EV_EFI_BOOT_SERVICES_APPLICATION, b"\\EFI\\BOOT\\BOOTX64.EFI")
            .event(5, EV_EFI_ACTION, b"Exit Boot Services Invocation")
            .event(6, EV_POST_CODE, b"platform")
            .event(7, EV_EFI_VARIABLE_DRIVER_CONFIG, b"SecureBoot\x01");
        for pcr in 0..=7 {
            log = log.event(pcr, EV_SEPARATOR, &sep);
        }
        log
    }

    /// The log bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The log bytes, consuming the builder.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The replayed SHA-256 PCRs.
    pub fn pcrs(&self) -> &PcrBank {
        &self.pcrs
    }

    /// Positions of the events appended so far (not counting the Spec ID event).
    pub fn events(&self) -> &[EventPosition] {
        &self.events
    }
}
