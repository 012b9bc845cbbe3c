//! Azure SNP vTPM bundles (HCL report + VCEK + vTPM quote) and the TDX HCL reports from testdata.

mod common;

use attest_engine::UnixTime;
use attest_engine::azure::{AzureSnpRequest, HardwareReportType, HclReport, RuntimeData, verify_azure_snp};
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::Error;
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tpm::{PcrValues, QuoteRequest, QuoteSignature, SigScheme, verify_quote};

const RSASSA_SHA256: SigScheme = SigScheme::RsaSsa(HashAlgorithm::Sha256);

fn lenient() -> SnpPolicy {
    SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() }
}

struct Quote {
    sig: Vec<u8>,
    msg: Vec<u8>,
    pcrs: Vec<Vec<u8>>,
}

fn hex_quote(v: &serde_json::Value) -> Quote {
    let h = |v: &serde_json::Value| hex::decode(v.as_str().unwrap()).unwrap();
    Quote {
        sig: h(&v["signature"]),
        msg: h(&v["message"]),
        pcrs: v["pcrs"].as_array().unwrap().iter().map(h).collect(),
    }
}

fn byte_array(v: &serde_json::Value) -> Vec<u8> {
    v.as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect()
}

fn bank(values: &[Vec<u8>]) -> PcrValues<'_> {
    let mut p = PcrValues::new();
    for (i, v) in values.iter().enumerate() {
        p.set(HashAlgorithm::Sha256, i, v).unwrap();
    }
    p
}

fn run(hcl: &[u8], vcek: &[u8], q: &Quote, nonce: &[u8]) -> Result<String, Error> {
    let verifier = SnpVerifier::new();
    let pcrs = bank(&q.pcrs);
    let req = AzureSnpRequest {
        hcl_report: hcl,
        vcek,
        intermediate: None,
        attest: &q.msg,
        signature: QuoteSignature::RsaRaw { scheme: RSASSA_SHA256, sig: &q.sig },
        pcrs: &pcrs,
        quote_nonce: nonce,
        time: UnixTime::parse("2025-06-01").unwrap(),
    };
    let ok = verify_azure_snp(&verifier, &req, &lenient())?;
    Ok(hex::encode(ok.quote.pcr(HashAlgorithm::Sha256, 0).unwrap()))
}

#[test]
fn trustee_milan_bundle() {
    let Some(dir) = common::testdata() else { return };
    let hcl = common::read(&dir, "trustee-az-snp-vtpm/hcl-report.bin");
    let vcek = common::certs(&dir, "trustee-az-snp-vtpm/vcek.pem");
    let q: serde_json::Value =
        serde_json::from_slice(&common::read(&dir, "trustee-az-snp-vtpm/tpm-quote-v1.json")).unwrap();
    let q = hex_quote(&q);
    let pcr0 = run(&hcl, &vcek[0], &q, b"challenge").unwrap();
    assert_eq!(pcr0, "f3a7e99a5f819a034386bce753a48a73cfdaa0bea0ecfc124bedbf5a8c4799be");
    // Upstream negatives.
    let reversed: Vec<u8> = b"challenge".iter().rev().copied().collect();
    assert!(matches!(run(&hcl, &vcek[0], &q, &reversed), Err(Error::NonceMismatch { .. })));
    let mut bad = Quote { sig: q.sig.clone(), msg: q.msg.clone(), pcrs: q.pcrs.clone() };
    bad.sig[0] ^= 1;
    assert_eq!(run(&hcl, &vcek[0], &bad, b"challenge").unwrap_err(), Error::QuoteSignatureInvalid);
    let mut bad = Quote { sig: q.sig.clone(), msg: q.msg.clone(), pcrs: q.pcrs.clone() };
    bad.pcrs[0][0] ^= 1;
    assert!(matches!(run(&hcl, &vcek[0], &bad, b"challenge"), Err(Error::PcrDigestMismatch { .. })));
    // Variable data changed: the SNP report no longer binds it.
    let mut h = hcl.clone();
    h[0x06e0] = h[0x06e0].wrapping_add(1);
    assert!(matches!(run(&h, &vcek[0], &q, b"challenge"), Err(Error::AkBindingMismatch { .. })));
    // AK public key corrupted (byte 0x0540 inside the JWK "n").
    let mut h = hcl.clone();
    h[0x0540] = 0;
    assert!(run(&h, &vcek[0], &q, b"challenge").is_err());
    // The binary bincode form of the same quote.
    let b = common::read(&dir, "trustee-az-snp-vtpm/quote.bin");
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    assert_eq!(&b[8..8 + n], &q.sig[..]);
}

#[test]
fn trustee_evidence_v0_v1_genoa() {
    let Some(dir) = common::testdata() else { return };
    use base64::Engine as _;
    let b64url = |s: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s.as_str().unwrap().trim_end_matches('=')).unwrap()
    };
    for (file, pcr0, nonce) in [
        (
            "trustee-az-snp-vtpm/evidence-v0.json",
            "e15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced",
            b"challenge".to_vec(),
        ),
        (
            "trustee-az-snp-vtpm/evidence-genoa.json",
            "afd689d0bb1c5f36f023fbaf574135f555a28a10c1f6b938d2a25e70c7783338",
            hex::decode(
                "0218488bae25d2509232bf676f1a66a30d7372add909109b36016ef136f2938ca05475f8b46094de6b64270ea35d950f",
            )
            .unwrap(),
        ),
    ] {
        let ev: serde_json::Value = serde_json::from_slice(&common::read(&dir, file)).unwrap();
        let hcl = byte_array(&ev["report"]);
        let vcek =
            attest_engine::x509::pem::certificates_from_pem_or_der(ev["vcek"].as_str().unwrap().as_bytes()).unwrap();
        let q = Quote {
            sig: byte_array(&ev["quote"]["signature"]),
            msg: byte_array(&ev["quote"]["message"]),
            pcrs: ev["quote"]["pcrs"].as_array().unwrap().iter().map(byte_array).collect(),
        };
        assert_eq!(run(&hcl, &vcek[0], &q, &nonce).unwrap_or_else(|e| panic!("{file}: {e}")), pcr0);
    }
    let ev: serde_json::Value =
        serde_json::from_slice(&common::read(&dir, "trustee-az-snp-vtpm/evidence-v1.json")).unwrap();
    let hcl = b64url(&ev["hcl_report"]);
    let vcek = b64url(&ev["vcek"]);
    let q = hex_quote(&ev["tpm_quote"]);
    assert_eq!(
        run(&hcl, &vcek, &q, b"challenge").unwrap(),
        "e15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced"
    );
}

#[test]
fn tdx_hcl_reports_parse_and_bind() {
    let Some(dir) = common::testdata() else { return };
    for file in [
        "constellation-azure-tdx/hclreport.bin",
        "azure-cvm-tooling/hcl-report-tdx.bin",
        "trustee-az-tdx-vtpm/hcl-report.bin",
    ] {
        let bytes = common::read(&dir, file);
        let hcl = HclReport::parse(&bytes).unwrap();
        assert_eq!(hcl.report_type(), HardwareReportType::Tdx, "{file}");
        assert!(hcl.snp_report().is_none());
        // TDREPORT.report_data (offset 128 in the TDREPORT) = SHA-256(variable data) ‖ zeros.
        let td = hcl.hardware_report();
        assert_eq!(td[0], 0x81, "TDREPORT type");
        let digest = default_provider().digests.sha256(hcl.variable_data());
        assert_eq!(&td[128..160], &digest, "{file}");
        assert_eq!(&td[160..192], &[0u8; 32]);
        let rt = RuntimeData::parse(hcl.variable_data()).unwrap();
        assert_eq!(rt.user_data(), Some(&[0u8; 64]));
    }
    // Constellation's documented value for its TDX report.
    let bytes = common::read(&dir, "constellation-azure-tdx/hclreport.bin");
    let hcl = HclReport::parse(&bytes).unwrap();
    assert_eq!(
        hex::encode(&hcl.hardware_report()[128..160]),
        "1b2d148a60baa97959615549e0e632a10c124bcecec7409e732838629b3fba8e"
    );
    // Parser negatives (upstream mutations): magic, report type, hash type.
    for (offset, value) in [(0usize, b'X'), (0x4C0 + 8, 9u8), (0x4C0 + 12, 9u8)] {
        let mut b = bytes.clone();
        b[offset] = value;
        assert!(HclReport::parse(&b).is_err(), "offset {offset}");
    }
}

#[test]
fn trustee_tdx_quote_under_hcl_ak() {
    let Some(dir) = common::testdata() else { return };
    let bytes = common::read(&dir, "trustee-az-tdx-vtpm/hcl-report.bin");
    let hcl = HclReport::parse(&bytes).unwrap();
    let rt = RuntimeData::parse(hcl.variable_data()).unwrap();
    let b = common::read(&dir, "trustee-az-tdx-vtpm/quote.bin");
    let mut pos = 0;
    let mut next = |len_prefixed: bool, n: usize| {
        let n = if len_prefixed {
            let l = u64::from_le_bytes(b[pos..pos + 8].try_into().unwrap()) as usize;
            pos += 8;
            l
        } else {
            n
        };
        let out = b[pos..pos + n].to_vec();
        pos += n;
        out
    };
    let sig = next(true, 0);
    let msg = next(true, 0);
    let count = u64::from_le_bytes(next(false, 8).try_into().unwrap()) as usize;
    let pcrs: Vec<Vec<u8>> = (0..count).map(|_| next(false, 32)).collect();
    let values = bank(&pcrs);
    let req = QuoteRequest {
        attest: &msg,
        signature: QuoteSignature::RsaRaw { scheme: RSASSA_SHA256, sig: &sig },
        ak: rt.ak().ak_public(),
        ak_scheme: None,
        pcrs: &values,
        nonce: b"challenge",
        allow_sha1: false,
    };
    let ok = verify_quote(default_provider(), &req).unwrap();
    assert_eq!(
        hex::encode(ok.pcr(HashAlgorithm::Sha256, 0).unwrap()),
        "782b20b10f55cc46e2142cc2145d548698073e5beb82752c8d7f9279f0d8a273"
    );
    // It does not verify under an SNP-side AK.
    let snp = common::read(&dir, "trustee-az-snp-vtpm/hcl-report.bin");
    let snp_rt = RuntimeData::parse(HclReport::parse(&snp).unwrap().variable_data()).unwrap();
    let bad = QuoteRequest { ak: snp_rt.ak().ak_public(), ..req };
    assert_eq!(verify_quote(default_provider(), &bad).unwrap_err(), Error::QuoteSignatureInvalid);
}
