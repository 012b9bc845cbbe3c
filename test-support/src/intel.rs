//! A generated Intel-like SGX/TDX PKI (root CA, PCK Platform CA, TCB Signing, PCK certificates with the SGX
//! extension, ECDSA CRLs), signed collateral, and synthetic TD quotes signed through it — so tests can reach
//! every TCB status, revocation and the variants' positive paths, which the real vectors cannot (their
//! collateral is either for another platform or of another time).
//!
//! Structure follows Intel's: P-256 keys, ECDSA-with-SHA256 certificates and CRLs, the SGX extension
//! 1.2.840.113741.1.13.1, TCB Info / QE Identity JSON signed over its exact text (raw r ‖ s), and quotes in
//! the DCAP v4/v5 layout with certification data 6 → 5 (PEM chain).
//!
//! ```
//! use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec};
//! let pki = IntelPki::new();
//! let pck = pki.issue_pck(&PckSpec::default());
//! let quote = pki.quote(&pck, &QuoteSpec::default());
//! assert_eq!(&quote[..2], &4u16.to_le_bytes());
//! ```

use crate::der;
use crate::pki::{DEFAULT_NOT_AFTER, DEFAULT_NOT_BEFORE, TbsFields, extension, signed, tbs_certificate};
use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
};

/// The SGX extension arc.
pub const SGX_OID: &str = "1.2.840.113741.1.13.1";
/// Intel's QE vendor id.
pub const QE_VENDOR_ID: [u8; 16] =
    [0x93, 0x9a, 0x72, 0x33, 0xf7, 0x9c, 0x4c, 0xa9, 0x94, 0x0a, 0x0d, 0xb3, 0x95, 0x7f, 0x06, 0x07];
/// The QE MRSIGNER the generated QE Identity expects and quotes carry by default.
pub const QE_MRSIGNER: [u8; 32] = [0xDC; 32];

/// A P-256 key usable for both X.509 (ASN.1) and raw r ‖ s signatures.
pub struct P256 {
    asn1: EcdsaKeyPair,
    fixed: EcdsaKeyPair,
    pkcs8: Vec<u8>,
}

impl P256 {
    /// A fresh key.
    pub fn generate() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("P-256 key");
        Self::from_pkcs8(pkcs8.as_ref()).expect("a generated key")
    }
    /// A key from its PKCS#8 encoding ([`P256::pkcs8`]); `None` when it is not a P-256 key.
    pub fn from_pkcs8(pkcs8: &[u8]) -> Option<Self> {
        Some(Self {
            asn1: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8).ok()?,
            fixed: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8).ok()?,
            pkcs8: pkcs8.to_vec(),
        })
    }
    /// The key as PKCS#8 (to persist a generated PKI: a simulated platform shared by several processes).
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }
    /// The uncompressed point `04 ‖ x ‖ y`.
    pub fn point(&self) -> &[u8] {
        self.asn1.public_key().as_ref()
    }
    /// An ASN.1 DER ECDSA-Sig-Value over `msg`.
    pub fn sign_asn1(&self, msg: &[u8]) -> Vec<u8> {
        self.asn1.sign(&SystemRandom::new(), msg).expect("sign").as_ref().to_vec()
    }
    /// A raw `r ‖ s` signature over `msg`.
    pub fn sign_fixed(&self, msg: &[u8]) -> [u8; 64] {
        self.fixed.sign(&SystemRandom::new(), msg).expect("sign").as_ref().try_into().expect("64 bytes")
    }
    fn spki(&self) -> Vec<u8> {
        let alg = der::sequence(&[&der::oid("1.2.840.10045.2.1"), &der::oid("1.2.840.10045.3.1.7")]);
        der::sequence(&[&alg, &der::bit_string(self.point())])
    }
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn ecdsa_sha256_alg() -> Vec<u8> {
    der::sequence(&[&der::oid("1.2.840.10045.4.3.2")])
}

/// An Intel-style name: CN and O.
pub fn intel_name(cn: &str) -> Vec<u8> {
    let attr = |oid: &str, v: &str| der::set(&[&der::sequence(&[&der::oid(oid), &der::utf8_string(v)])]);
    der::sequence(&[&attr("2.5.4.3", cn), &attr("2.5.4.10", "Intel Corporation")])
}

/// DER → one PEM `CERTIFICATE` block.
pub fn pem(der_bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der_bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(core::str::from_utf8(line).expect("ASCII"));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The facts a PCK certificate states.
#[derive(Clone, Debug)]
pub struct PckSpec {
    /// Serial number content octets.
    pub serial: Vec<u8>,
    /// PPID: the platform's (processor's) identity, which verifiers take as a TD's machine.
    pub ppid: [u8; 16],
    /// FMSPC.
    pub fmspc: [u8; 6],
    /// PCE-ID.
    pub pce_id: [u8; 2],
    /// SGX TCB components (= CPUSVN).
    pub components: [u8; 16],
    /// PCESVN.
    pub pce_svn: u16,
    /// Validity.
    pub not_before: i64,
    /// Validity.
    pub not_after: i64,
}

impl Default for PckSpec {
    fn default() -> Self {
        Self {
            serial: vec![0x42, 1],
            ppid: [0xAB; 16],
            fmspc: [0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
            pce_id: [0, 0],
            components: [5, 5, 2, 2, 3, 1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0],
            pce_svn: 11,
            not_before: DEFAULT_NOT_BEFORE,
            not_after: DEFAULT_NOT_AFTER,
        }
    }
}

/// A PCK certificate and its key.
pub struct Pck {
    /// The certificate, DER.
    pub der: Vec<u8>,
    /// The PCK key (signs QE reports).
    pub key: P256,
}

/// What a synthetic quote says.
#[derive(Clone, Debug)]
pub struct QuoteSpec {
    /// 4 or 5.
    pub version: u16,
    /// TDX 1.5 body (v5 body type 3) instead of TDX 1.0.
    pub tdx15: bool,
    /// TEE_TCB_SVN.
    pub tee_tcb_svn: [u8; 16],
    /// TEE_TCB_SVN2 (TDX 1.5).
    pub tee_tcb_svn2: [u8; 16],
    /// TDATTRIBUTES (little-endian bytes).
    pub td_attributes: [u8; 8],
    /// MRTD.
    pub mr_td: [u8; 48],
    /// RTMR0..3.
    pub rtmrs: [[u8; 48]; 4],
    /// REPORTDATA.
    pub report_data: [u8; 64],
    /// MRSERVICETD (TDX 1.5).
    pub mr_service_td: [u8; 48],
    /// The QE's ISVSVN.
    pub qe_isv_svn: u16,
    /// The QE's MRSIGNER.
    pub qe_mr_signer: [u8; 32],
    /// Bytes appended after the quote.
    pub trailing: Vec<u8>,
}

impl Default for QuoteSpec {
    fn default() -> Self {
        Self {
            version: 4,
            tdx15: false,
            tee_tcb_svn: [3, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            tee_tcb_svn2: [3, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            td_attributes: 0x1000_0000u64.to_le_bytes(),
            mr_td: [0x11; 48],
            rtmrs: [[0; 48]; 4],
            report_data: [0; 64],
            mr_service_td: [0; 48],
            qe_isv_svn: 4,
            qe_mr_signer: QE_MRSIGNER,
            trailing: Vec::new(),
        }
    }
}

/// The generated PKI.
pub struct IntelPki {
    root: P256,
    root_der: Vec<u8>,
    pck_ca: P256,
    pck_ca_der: Vec<u8>,
    tcb_signing: P256,
    tcb_signing_der: Vec<u8>,
}

impl Default for IntelPki {
    fn default() -> Self {
        Self::new()
    }
}

const ROOT_CN: &str = "Intel SGX Root CA";
const PCK_CA_CN: &str = "Intel SGX PCK Platform CA";

fn ca_extensions(key_usage_bits: u8, ca: bool) -> Vec<Vec<u8>> {
    let bc = if ca { der::sequence(&[&der::boolean(true), &der::integer_u64(0)]) } else { der::sequence(&[]) };
    vec![
        extension("2.5.29.15", true, &der::bit_string_with_unused(1, &[key_usage_bits])),
        extension("2.5.29.19", true, &bc),
    ]
}

#[allow(clippy::too_many_arguments)] // a private helper mirroring a TBSCertificate's fields
fn cert(
    serial: &[u8],
    issuer: &str,
    subject: &str,
    key: &P256,
    signer: &P256,
    exts: &[Vec<u8>],
    nb: i64,
    na: i64,
) -> Vec<u8> {
    let alg = ecdsa_sha256_alg();
    let exts: Vec<&[u8]> = exts.iter().map(Vec::as_slice).collect();
    let tbs = tbs_certificate(&TbsFields {
        serial,
        signature_alg: &alg,
        issuer: &intel_name(issuer),
        not_before: nb,
        not_after: na,
        subject: &intel_name(subject),
        spki: &key.spki(),
        extensions: &exts,
    });
    let sig = signer.sign_asn1(&tbs);
    signed(&tbs, &alg, &sig)
}

/// A generated PKI's keys (PKCS#8) and certificates (DER), to persist it ([`IntelPki::to_parts`],
/// [`IntelPki::from_parts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntelPkiParts {
    /// The root's key and certificate.
    pub root: (Vec<u8>, Vec<u8>),
    /// The PCK Platform CA's key and certificate.
    pub pck_ca: (Vec<u8>, Vec<u8>),
    /// The TCB Signing key and certificate.
    pub tcb_signing: (Vec<u8>, Vec<u8>),
}

impl IntelPki {
    /// The PKI's keys and certificates.
    pub fn to_parts(&self) -> IntelPkiParts {
        IntelPkiParts {
            root: (self.root.pkcs8().to_vec(), self.root_der.clone()),
            pck_ca: (self.pck_ca.pkcs8().to_vec(), self.pck_ca_der.clone()),
            tcb_signing: (self.tcb_signing.pkcs8().to_vec(), self.tcb_signing_der.clone()),
        }
    }

    /// The PKI of `parts` (as [`IntelPki::to_parts`] gave them); `None` when a key does not parse.
    pub fn from_parts(parts: &IntelPkiParts) -> Option<Self> {
        Some(Self {
            root: P256::from_pkcs8(&parts.root.0)?,
            root_der: parts.root.1.clone(),
            pck_ca: P256::from_pkcs8(&parts.pck_ca.0)?,
            pck_ca_der: parts.pck_ca.1.clone(),
            tcb_signing: P256::from_pkcs8(&parts.tcb_signing.0)?,
            tcb_signing_der: parts.tcb_signing.1.clone(),
        })
    }

    /// A fresh PKI: root (self-signed), PCK Platform CA and TCB Signing under it.
    pub fn new() -> Self {
        let (nb, na) = (DEFAULT_NOT_BEFORE, DEFAULT_NOT_AFTER);
        let root = P256::generate();
        // keyCertSign (bit 5) | cRLSign (bit 6): 0b0000_0110 shifted into the first octet.
        let root_der = cert(&[0x01], ROOT_CN, ROOT_CN, &root, &root, &ca_extensions(0x06, true), nb, na);
        let pck_ca = P256::generate();
        let pck_ca_der = cert(&[0x02], ROOT_CN, PCK_CA_CN, &pck_ca, &root, &ca_extensions(0x06, true), nb, na);
        let tcb_signing = P256::generate();
        // digitalSignature | nonRepudiation.
        let tcb_signing_der =
            cert(&[0x03], ROOT_CN, "Intel SGX TCB Signing", &tcb_signing, &root, &ca_extensions(0xC0, false), nb, na);
        Self { root, root_der, pck_ca, pck_ca_der, tcb_signing, tcb_signing_der }
    }

    /// The root certificate (DER): give it to `TdxVerifier::dangerous_with_root`.
    pub fn root_der(&self) -> &[u8] {
        &self.root_der
    }
    /// The PCK CA certificate (DER).
    pub fn pck_ca_der(&self) -> &[u8] {
        &self.pck_ca_der
    }
    /// The TCB Signing certificate (DER).
    pub fn tcb_signing_der(&self) -> &[u8] {
        &self.tcb_signing_der
    }

    /// Issues a PCK certificate under the PCK CA.
    pub fn issue_pck(&self, spec: &PckSpec) -> Pck {
        let key = P256::generate();
        let entry = |arc: &str, value: &[u8]| der::sequence(&[&der::oid(&format!("{SGX_OID}.{arc}")), value]);
        let mut tcb: Vec<Vec<u8>> =
            (1..=16).map(|i| entry(&format!("2.{i}"), &der::integer_u64(u64::from(spec.components[i - 1])))).collect();
        tcb.push(entry("2.17", &der::integer_u64(u64::from(spec.pce_svn))));
        tcb.push(entry("2.18", &der::octet_string(&spec.components)));
        let tcb: Vec<&[u8]> = tcb.iter().map(Vec::as_slice).collect();
        let sgx = der::sequence(&[
            &entry("1", &der::octet_string(&spec.ppid)),
            &entry("2", &der::sequence(&tcb)),
            &entry("3", &der::octet_string(&spec.pce_id)),
            &entry("4", &der::octet_string(&spec.fmspc)),
            &entry("5", &der::tlv(0x0A, &[1])),
        ]);
        let exts = vec![
            extension("2.5.29.15", true, &der::bit_string_with_unused(6, &[0xC0])),
            extension("2.5.29.19", true, &der::sequence(&[])),
            extension(SGX_OID, false, &sgx),
        ];
        let der = cert(
            &spec.serial,
            PCK_CA_CN,
            "Intel SGX PCK Certificate",
            &key,
            &self.pck_ca,
            &exts,
            spec.not_before,
            spec.not_after,
        );
        Pck { der, key }
    }

    /// An ECDSA CRL from the root (`pck = false`) or the PCK CA, revoking `serials`.
    pub fn crl(&self, pck: bool, this_update: i64, next_update: i64, serials: &[&[u8]]) -> Vec<u8> {
        let alg = ecdsa_sha256_alg();
        let (issuer, key) = if pck { (PCK_CA_CN, &self.pck_ca) } else { (ROOT_CN, &self.root) };
        let mut parts =
            vec![der::integer_u64(1), alg.clone(), intel_name(issuer), der::time(this_update), der::time(next_update)];
        if !serials.is_empty() {
            let entries: Vec<Vec<u8>> =
                serials.iter().map(|s| der::sequence(&[&der::integer_unsigned(s), &der::time(this_update)])).collect();
            let entries: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
            parts.push(der::sequence(&entries));
        }
        // crlExtensions [0]: the CRL number (RFC 5280 §5.2.3 requires it; Intel's CRLs carry it).
        parts.push(der::tlv(0xA0, &der::sequence(&[&extension("2.5.29.20", false, &der::integer_u64(1))])));
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let tbs = der::sequence(&parts);
        let sig = key.sign_asn1(&tbs);
        signed(&tbs, &alg, &sig)
    }

    /// A signed collateral bundle (the shared JSON form) for `tcb_info` and `qe_identity` (the exact JSON
    /// texts), with a root CRL and a PCK CRL valid `this_update..next_update` revoking the given serials.
    pub fn bundle(
        &self,
        tcb_info: &str,
        qe_identity: &str,
        window: (i64, i64),
        revoked_pcks: &[&[u8]],
        revoked_cas: &[&[u8]],
    ) -> String {
        let signing_chain = format!("{}{}", pem(&self.tcb_signing_der), pem(&self.root_der));
        let pck_chain = format!("{}{}", pem(&self.pck_ca_der), pem(&self.root_der));
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        format!(
            "{{\"pck_crl_issuer_chain\":\"{}\",\"root_ca_crl\":\"{}\",\"pck_crl\":\"{}\",\"tcb_info_issuer_chain\":\"{}\",\
             \"tcb_info\":\"{}\",\"tcb_info_signature\":\"{}\",\"qe_identity_issuer_chain\":\"{}\",\"qe_identity\":\"{}\",\
             \"qe_identity_signature\":\"{}\"}}",
            esc(&pck_chain),
            hex(&self.crl(false, window.0, window.1, revoked_cas)),
            hex(&self.crl(true, window.0, window.1, revoked_pcks)),
            esc(&signing_chain),
            esc(tcb_info),
            hex(&self.tcb_signing.sign_fixed(tcb_info.as_bytes())),
            esc(&signing_chain),
            esc(qe_identity),
            hex(&self.tcb_signing.sign_fixed(qe_identity.as_bytes())),
        )
    }

    /// A TD quote whose PCK chain is `pck` → PCK CA → root, signed by a fresh attestation key.
    pub fn quote(&self, pck: &Pck, spec: &QuoteSpec) -> Vec<u8> {
        let mut q = Vec::new();
        q.extend(spec.version.to_le_bytes());
        q.extend(2u16.to_le_bytes());
        q.extend(0x81u32.to_le_bytes());
        q.extend([0u8; 4]);
        q.extend(QE_VENDOR_ID);
        q.extend([0u8; 20]);
        if spec.version == 5 {
            q.extend((if spec.tdx15 { 3u16 } else { 2u16 }).to_le_bytes());
            q.extend((if spec.tdx15 { 648u32 } else { 584u32 }).to_le_bytes());
        }
        q.extend(spec.tee_tcb_svn);
        q.extend([0u8; 48]); // MRSEAM
        q.extend([0u8; 48]); // MRSIGNERSEAM (Intel's module: zero)
        q.extend([0u8; 8]); // SEAMATTRIBUTES
        q.extend(spec.td_attributes);
        q.extend(0xE7u64.to_le_bytes()); // XFAM
        q.extend(spec.mr_td);
        q.extend([0u8; 48 * 3]); // MRCONFIGID, MROWNER, MROWNERCONFIG
        for r in &spec.rtmrs {
            q.extend(r);
        }
        q.extend(spec.report_data);
        if spec.version == 5 && spec.tdx15 {
            q.extend(spec.tee_tcb_svn2);
            q.extend(spec.mr_service_td);
        }
        let attestation = P256::generate();
        let signature = attestation.sign_fixed(&q);
        let att_key = &attestation.point()[1..];
        let auth = [0x5A; 32];
        let mut qe = vec![0u8; 384];
        qe[0x30] = 0x11; // ATTRIBUTES: INIT | MODE64BIT
        qe[0x80..0xA0].copy_from_slice(&spec.qe_mr_signer);
        qe[0x100..0x102].copy_from_slice(&2u16.to_le_bytes()); // ISVPRODID
        qe[0x102..0x104].copy_from_slice(&spec.qe_isv_svn.to_le_bytes());
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(att_key);
        ctx.update(&auth);
        qe[0x140..0x160].copy_from_slice(ctx.finish().as_ref());
        let qe_sig = pck.key.sign_fixed(&qe);
        let chain = format!("{}{}{}", pem(&pck.der), pem(&self.pck_ca_der), pem(&self.root_der));
        let mut cert = qe;
        cert.extend(qe_sig);
        cert.extend(32u16.to_le_bytes());
        cert.extend(auth);
        cert.extend(5u16.to_le_bytes());
        cert.extend((chain.len() as u32).to_le_bytes());
        cert.extend(chain.as_bytes());
        let mut sig = Vec::new();
        sig.extend(signature);
        sig.extend(att_key);
        sig.extend(6u16.to_le_bytes());
        sig.extend((cert.len() as u32).to_le_bytes());
        sig.extend(cert);
        q.extend((sig.len() as u32).to_le_bytes());
        q.extend(sig);
        q.extend(&spec.trailing);
        q
    }
}

/// One platform TCB level: SGX components, PCESVN, TDX components, status, advisory IDs.
pub type Level<'a> = ([u8; 16], u16, [u8; 16], &'a str, &'a [&'a str]);

/// A TDX TCB Info v3 JSON text for `fmspc` with the given levels `(sgx components, pcesvn, tdx components,
/// status, advisory IDs)`, newest first, and a TDX_01 module identity with levels `(isvsvn, status)`.
pub fn tcb_info_json(
    fmspc: [u8; 6],
    window: (&str, &str),
    levels: &[Level<'_>],
    module_levels: &[(u8, &str)],
) -> String {
    let comps = |c: &[u8; 16]| c.iter().map(|s| format!("{{\"svn\":{s}}}")).collect::<Vec<_>>().join(",");
    let ids = |a: &[&str]| a.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(",");
    let levels: Vec<String> = levels
        .iter()
        .map(|(sgx, pce, tdx, status, adv)| {
            format!(
                "{{\"tcb\":{{\"sgxtcbcomponents\":[{}],\"pcesvn\":{pce},\"tdxtcbcomponents\":[{}]}},\
                 \"tcbDate\":\"2024-01-01T00:00:00Z\",\"tcbStatus\":\"{status}\",\"advisoryIDs\":[{}]}}",
                comps(sgx),
                comps(tdx),
                ids(adv)
            )
        })
        .collect();
    let module: Vec<String> = module_levels
        .iter()
        .map(|(svn, status)| {
            format!("{{\"tcb\":{{\"isvsvn\":{svn}}},\"tcbDate\":\"2024-01-01T00:00:00Z\",\"tcbStatus\":\"{status}\"}}")
        })
        .collect();
    let zero48 = "00".repeat(48);
    format!(
        "{{\"id\":\"TDX\",\"version\":3,\"issueDate\":\"{}\",\"nextUpdate\":\"{}\",\"fmspc\":\"{}\",\"pceId\":\"0000\",\
         \"tcbType\":0,\"tcbEvaluationDataNumber\":17,\"tdxModule\":{{\"mrsigner\":\"{zero48}\",\"attributes\":\"0000000000000000\",\
         \"attributesMask\":\"FFFFFFFFFFFFFFFF\"}},\"tdxModuleIdentities\":[{{\"id\":\"TDX_01\",\"mrsigner\":\"{zero48}\",\
         \"attributes\":\"0000000000000000\",\"attributesMask\":\"FFFFFFFFFFFFFFFF\",\"tcbLevels\":[{}]}}],\"tcbLevels\":[{}]}}",
        window.0,
        window.1,
        hex(&fmspc),
        module.join(","),
        levels.join(",")
    )
}

/// A TD_QE identity v2 JSON text with one level per `(isvsvn, status)`, newest first.
pub fn qe_identity_json(window: (&str, &str), levels: &[(u16, &str)]) -> String {
    let levels: Vec<String> = levels
        .iter()
        .map(|(svn, status)| {
            format!("{{\"tcb\":{{\"isvsvn\":{svn}}},\"tcbDate\":\"2024-01-01T00:00:00Z\",\"tcbStatus\":\"{status}\"}}")
        })
        .collect();
    format!(
        "{{\"id\":\"TD_QE\",\"version\":2,\"issueDate\":\"{}\",\"nextUpdate\":\"{}\",\"tcbEvaluationDataNumber\":17,\
         \"miscselect\":\"00000000\",\"miscselectMask\":\"FFFFFFFF\",\"attributes\":\"11000000000000000000000000000000\",\
         \"attributesMask\":\"FBFFFFFFFFFFFFFF0000000000000000\",\"mrsigner\":\"{}\",\"isvprodid\":2,\"tcbLevels\":[{}]}}",
        window.0,
        window.1,
        hex(&QE_MRSIGNER).to_uppercase(),
        levels.join(",")
    )
}

/// An Azure HCL report of TDX type (report_type 4): the 32-byte header, a 1184-byte hardware-report area
/// holding a TDREPORT (type 0x81, REPORTDATA at 128, TDINFO.MRTD at 528), the IGVM request-data header
/// (hash_type 1, SHA-256) and `runtime_json`, padded to the NV index size (2600 bytes).
pub fn hcl_report_tdx(report_data: &[u8; 64], mr_td: &[u8; 48], runtime_json: &[u8]) -> Vec<u8> {
    const AREA: usize = 0x4A0;
    let var_size = u32::try_from(runtime_json.len()).expect("runtime data size");
    let mut out = Vec::with_capacity(2600);
    out.extend_from_slice(b"HCLA");
    for v in [2u32, 1024 + 8, 2, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[0; 12]);
    let mut area = vec![0u8; AREA];
    area[0] = 0x81;
    area[128..192].copy_from_slice(report_data);
    area[528..576].copy_from_slice(mr_td);
    out.extend_from_slice(&area);
    for v in [var_size + 20, 1, 4, 1, var_size] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(runtime_json);
    if out.len() < 2600 {
        out.resize(2600, 0);
    }
    out
}
