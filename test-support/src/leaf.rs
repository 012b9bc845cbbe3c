//! VCEK/VLEK leaf certificates with AMD's extensions, and report signing.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};

use crate::der;
use crate::pki::{
    AMD_OID_PREFIX, Product, SigningKeyKind, TbsFields, Tcb, TestPki, amd_name, extension, rsa_pss_sha384_alg_id,
    rsa_pss_sign, signed, tbs_certificate,
};
use crate::report::{REPORT_LEN, SIGNATURE_OFFSET, SIGNED_LEN};

/// Default `csp_id` of VLEKs (AWS's look like `CN=cc-eu-west-1.amazonaws.com`).
pub const DEFAULT_CSP_ID: &str = "CN=cc-test-1.example.invalid";

/// How the hwID extension (`1.3.6.1.4.1.3704.1.4`) carries the chip id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HwIdEncoding {
    /// The chip id bytes are the extnValue itself (what AMD's KDS issues).
    #[default]
    Raw,
    /// The extnValue is a DER OCTET STRING `04 40 ...` wrapping the chip id (seen in the wild
    /// in synthetic certificates; parsers tend to accept both).
    OctetString,
}

#[derive(Clone, Debug, Default)]
enum Choice<T> {
    #[default]
    Default,
    Omit,
    Set(T),
}

/// What goes into a VCEK/VLEK certificate. All fields have defaults mirroring AMD's KDS
/// (see each setter); build with [`TestPki::issue_leaf`].
#[derive(Clone, Debug)]
pub struct LeafSpec {
    serial: Vec<u8>,
    not_before: Option<i64>,
    not_after: Option<i64>,
    product_name: Option<String>,
    struct_version: Option<u64>,
    tcb: Option<Tcb>,
    spl_integer_width: Option<usize>,
    hwid: Choice<Vec<u8>>,
    hwid_encoding: HwIdEncoding,
    csp_id: Choice<String>,
    extra_extensions: Vec<(String, bool, Vec<u8>)>,
    omitted_extensions: Vec<String>,
    issuer_common_name: Option<String>,
    key_pkcs8: Option<Vec<u8>>,
    explicit_trailer_field: bool,
}

impl Default for LeafSpec {
    fn default() -> Self {
        LeafSpec {
            serial: vec![0x00],
            not_before: None,
            not_after: None,
            product_name: None,
            struct_version: None,
            tcb: None,
            spl_integer_width: None,
            hwid: Choice::Default,
            hwid_encoding: HwIdEncoding::Raw,
            csp_id: Choice::Default,
            extra_extensions: Vec::new(),
            omitted_extensions: Vec::new(),
            issuer_common_name: None,
            key_pkcs8: None,
            explicit_trailer_field: false,
        }
    }
}

/// Default productName extension value: `"Milan-B0"` for Milan VCEKs, otherwise the bare
/// product name (`"Genoa"`, `"Turin"`, and `"Milan"` for Milan VLEKs), as in real certificates.
pub fn default_product_name(product: Product, kind: SigningKeyKind) -> String {
    match (product, kind) {
        (Product::Milan, SigningKeyKind::Vcek) => "Milan-B0".to_owned(),
        _ => product.name().to_owned(),
    }
}

/// Default chip id of generated VCEKs: [`Product::hwid_len`] bytes `0x10, 0x11, ...`.
pub fn default_hwid(product: Product) -> Vec<u8> {
    (0..product.hwid_len()).map(|i| 0x10u8.wrapping_add(i as u8)).collect()
}

impl LeafSpec {
    /// Same as `LeafSpec::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serial number as unsigned big-endian bytes (default `[0x00]`: AMD's VCEKs have serial 0).
    pub fn serial(mut self, serial: impl Into<Vec<u8>>) -> Self {
        self.serial = serial.into();
        self
    }

    /// Validity period in Unix seconds (default: the PKI's validity).
    pub fn validity(mut self, not_before: i64, not_after: i64) -> Self {
        self.not_before = Some(not_before);
        self.not_after = Some(not_after);
        self
    }

    /// notBefore in Unix seconds.
    pub fn not_before(mut self, not_before: i64) -> Self {
        self.not_before = Some(not_before);
        self
    }

    /// notAfter in Unix seconds.
    pub fn not_after(mut self, not_after: i64) -> Self {
        self.not_after = Some(not_after);
        self
    }

    /// productName IA5String (default: [`default_product_name`]).
    pub fn product_name(mut self, name: impl Into<String>) -> Self {
        self.product_name = Some(name.into());
        self
    }

    /// structVersion INTEGER (default 0, and 1 on Turin).
    pub fn struct_version(mut self, version: u64) -> Self {
        self.struct_version = Some(version);
        self
    }

    /// The TCB SPL extensions (default [`Tcb::default_for`] the product). The fmcSPL
    /// extension (`.3.9`) is written whenever `fmc` is `Some`, whatever the product.
    pub fn tcb(mut self, tcb: Tcb) -> Self {
        self.tcb = Some(tcb);
        self
    }

    /// Writes every SPL INTEGER (reserved ones included) with exactly `width` content bytes,
    /// zero-padded on the left: width 2 turns 5 into `02 02 00 05` (non-minimal DER, for
    /// parser-leniency tests). By default SPLs are minimal DER (`02 01 05`, `02 02 00 d9`).
    ///
    /// # Panics
    /// If `width` is 0.
    pub fn spl_integer_width(mut self, width: usize) -> Self {
        assert!(width > 0, "an INTEGER has at least one content byte");
        self.spl_integer_width = Some(width);
        self
    }

    /// hwID extension bytes (default for VCEKs: [`default_hwid`]; VLEKs have none).
    pub fn hwid(mut self, hwid: impl Into<Vec<u8>>) -> Self {
        self.hwid = Choice::Set(hwid.into());
        self
    }

    /// Leaves out the hwID extension.
    pub fn no_hwid(mut self) -> Self {
        self.hwid = Choice::Omit;
        self
    }

    /// How the hwID is encoded (default [`HwIdEncoding::Raw`]).
    pub fn hwid_encoding(mut self, encoding: HwIdEncoding) -> Self {
        self.hwid_encoding = encoding;
        self
    }

    /// csp_id extension (`.5`, IA5String) text (default for VLEKs: [`DEFAULT_CSP_ID`];
    /// VCEKs have none).
    pub fn csp_id(mut self, csp_id: impl Into<String>) -> Self {
        self.csp_id = Choice::Set(csp_id.into());
        self
    }

    /// Leaves out the csp_id extension.
    pub fn no_csp_id(mut self) -> Self {
        self.csp_id = Choice::Omit;
        self
    }

    /// Appends an extension after AMD's: `value` is the extnValue content (the bytes inside
    /// the OCTET STRING). May repeat an OID already present, to test duplicate handling.
    pub fn extra_extension(mut self, oid: &str, critical: bool, value: impl Into<Vec<u8>>) -> Self {
        self.extra_extensions.push((oid.to_owned(), critical, value.into()));
        self
    }

    /// Removes the standard extension with this dotted OID (e.g. `"1.3.6.1.4.1.3704.1.3.1"`
    /// to drop blSPL). Extensions added with [`LeafSpec::extra_extension`] are kept.
    pub fn without_extension(mut self, oid: &str) -> Self {
        self.omitted_extensions.push(oid.to_owned());
        self
    }

    /// Issuer common name (default: the PKI's intermediate name). Only the name changes: the
    /// certificate is still signed with the PKI's intermediate key.
    pub fn issuer_common_name(mut self, common_name: impl Into<String>) -> Self {
        self.issuer_common_name = Some(common_name.into());
        self
    }

    /// Certifies an existing P-384 key (PKCS #8 v1 DER, see [`Leaf::pkcs8`]) instead of a
    /// freshly generated one.
    pub fn key_pkcs8(mut self, pkcs8: impl Into<Vec<u8>>) -> Self {
        self.key_pkcs8 = Some(pkcs8.into());
        self
    }

    /// Whether the RSASSA-PSS parameters spell out the default trailerField (default: no,
    /// like current KDS VCEKs and VLEKs; older Milan VCEKs have it).
    pub fn pss_trailer_field(mut self, explicit: bool) -> Self {
        self.explicit_trailer_field = explicit;
        self
    }
}

/// An issued VCEK/VLEK: its certificate and private key, plus what was certified.
#[derive(Debug)]
pub struct Leaf {
    /// The certificate (DER).
    pub der: Vec<u8>,
    /// The P-384 key pair whose public key the certificate carries.
    pub key: EcdsaKeyPair,
    /// Product of the issuing PKI.
    pub product: Product,
    /// VCEK or VLEK.
    pub kind: SigningKeyKind,
    /// The TCB written into the SPL extensions.
    pub tcb: Tcb,
    /// The hwID written into the certificate, if any.
    pub hwid: Option<Vec<u8>>,
}

impl Leaf {
    /// The certificate as PEM.
    pub fn pem(&self) -> String {
        crate::pem("CERTIFICATE", &self.der)
    }

    /// The uncompressed public point `04 || X || Y` (97 bytes).
    pub fn public_key_point(&self) -> &[u8] {
        self.key.public_key().as_ref()
    }

    /// The private key as PKCS #8 v1 DER (to reuse it via [`LeafSpec::key_pkcs8`]).
    pub fn pkcs8(&self) -> Vec<u8> {
        self.key.to_pkcs8v1().expect("PKCS #8 serialisation failed").as_ref().to_vec()
    }

    /// The 64-byte CHIP_ID a report from this chip carries: the hwID, zero-padded (Turin's
    /// 8-byte id fills the first 8 bytes), or zeros when there is no hwID.
    pub fn chip_id(&self) -> [u8; 64] {
        let mut id = [0u8; 64];
        if let Some(hwid) = &self.hwid {
            let n = hwid.len().min(64);
            id[..n].copy_from_slice(&hwid[..n]);
        }
        id
    }

    /// Signs `report` in place: ECDSA P-384 over SHA-384 of bytes `0..0x2A0`, R written at
    /// 0x2A0 and S at 0x2E8, each as 72 little-endian bytes (48 significant, then 24 zeros).
    pub fn sign_report(&self, report: &mut [u8; REPORT_LEN]) {
        let signature = self.key.sign(&SystemRandom::new(), &report[..SIGNED_LEN]).expect("ECDSA signing failed");
        let (r, s) = signature.as_ref().split_at(48);
        for (field, component) in [(SIGNATURE_OFFSET, r), (SIGNATURE_OFFSET + 72, s)] {
            let out = &mut report[field..field + 72];
            out.fill(0);
            for (dst, src) in out.iter_mut().zip(component.iter().rev()) {
                *dst = *src;
            }
        }
    }
}

fn amd_oid(suffix: &str) -> String {
    format!("{AMD_OID_PREFIX}.{suffix}")
}

fn ec_p384_spki(point: &[u8]) -> Vec<u8> {
    let alg = der::sequence(&[&der::oid("1.2.840.10045.2.1"), &der::oid("1.3.132.0.34")]);
    der::sequence(&[&alg, &der::bit_string(point)])
}

impl TestPki {
    /// Issues a VCEK (or VLEK, per the PKI's kind) signed by the PKI's intermediate key.
    ///
    /// Extensions follow KDS's order: structVersion (`.1`), productName (`.2`), the SPLs —
    /// Milan/Genoa: `.3.1` bl, `.3.2` tee, `.3.4`–`.3.7` reserved, `.3.3` snp, `.3.8` ucode;
    /// Turin: `.3.9` fmc, `.3.1`, `.3.2`, `.3.3`, `.3.5`–`.3.7`, `.3.8` — then hwID (`.4`)
    /// and csp_id (`.5`), then any extras. None is critical.
    pub fn issue_leaf(&self, spec: &LeafSpec) -> Leaf {
        let product = self.product;
        let kind = self.kind;
        let tcb = spec.tcb.unwrap_or_else(|| Tcb::default_for(product));
        let struct_version = spec.struct_version.unwrap_or(u64::from(product == Product::Turin));
        let product_name = spec.product_name.clone().unwrap_or_else(|| default_product_name(product, kind));
        let hwid = match &spec.hwid {
            Choice::Default => (kind == SigningKeyKind::Vcek).then(|| default_hwid(product)),
            Choice::Omit => None,
            Choice::Set(v) => Some(v.clone()),
        };
        let csp_id = match &spec.csp_id {
            Choice::Default => (kind == SigningKeyKind::Vlek).then(|| DEFAULT_CSP_ID.to_owned()),
            Choice::Omit => None,
            Choice::Set(v) => Some(v.clone()),
        };

        let spl = |value: u8| match spec.spl_integer_width {
            None => der::integer_u64(u64::from(value)),
            Some(width) => {
                let mut content = vec![0u8; width];
                content[width - 1] = value;
                der::integer_raw(&content)
            }
        };

        let mut exts: Vec<(String, bool, Vec<u8>)> = vec![
            (amd_oid("1"), false, der::integer_u64(struct_version)),
            (amd_oid("2"), false, der::ia5_string(&product_name)),
        ];
        let spls: Vec<(&str, u8)> = if product == Product::Turin {
            let mut v = Vec::new();
            if let Some(fmc) = tcb.fmc {
                v.push(("3.9", fmc));
            }
            v.extend([
                ("3.1", tcb.bl),
                ("3.2", tcb.tee),
                ("3.3", tcb.snp),
                ("3.5", 0),
                ("3.6", 0),
                ("3.7", 0),
                ("3.8", tcb.ucode),
            ]);
            v
        } else {
            let mut v = Vec::new();
            if let Some(fmc) = tcb.fmc {
                v.push(("3.9", fmc));
            }
            v.extend([
                ("3.1", tcb.bl),
                ("3.2", tcb.tee),
                ("3.4", 0),
                ("3.5", 0),
                ("3.6", 0),
                ("3.7", 0),
                ("3.3", tcb.snp),
                ("3.8", tcb.ucode),
            ]);
            v
        };
        for (suffix, value) in spls {
            exts.push((amd_oid(suffix), false, spl(value)));
        }
        if let Some(hwid) = &hwid {
            let value = match spec.hwid_encoding {
                HwIdEncoding::Raw => hwid.clone(),
                HwIdEncoding::OctetString => der::octet_string(hwid),
            };
            exts.push((amd_oid("4"), false, value));
        }
        if let Some(csp_id) = &csp_id {
            exts.push((amd_oid("5"), false, der::ia5_string(csp_id)));
        }
        exts.retain(|(oid, ..)| !spec.omitted_extensions.contains(oid));
        exts.extend(spec.extra_extensions.iter().cloned());

        let key = match &spec.key_pkcs8 {
            Some(pkcs8) => {
                EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, pkcs8).expect("invalid P-384 PKCS #8 key")
            }
            None => EcdsaKeyPair::generate(&ECDSA_P384_SHA384_FIXED_SIGNING).expect("P-384 key generation failed"),
        };

        let encoded_exts: Vec<Vec<u8>> =
            exts.iter().map(|(oid, critical, value)| extension(oid, *critical, value)).collect();
        let encoded_exts: Vec<&[u8]> = encoded_exts.iter().map(Vec::as_slice).collect();
        let issuer_cn = spec.issuer_common_name.clone().unwrap_or_else(|| self.intermediate_common_name());
        let alg = rsa_pss_sha384_alg_id(spec.explicit_trailer_field);
        let tbs = tbs_certificate(&TbsFields {
            serial: &spec.serial,
            signature_alg: &alg,
            issuer: &amd_name(&issuer_cn),
            not_before: spec.not_before.unwrap_or(self.not_before),
            not_after: spec.not_after.unwrap_or(self.not_after),
            subject: &amd_name(kind.leaf_common_name()),
            spki: &ec_p384_spki(key.public_key().as_ref()),
            extensions: &encoded_exts,
        });
        let signature = rsa_pss_sign(&self.ask_key, &tbs);
        Leaf { der: signed(&tbs, &alg, &signature), key, product, kind, tcb, hwid }
    }
}
