//! Every shared TPM and Azure vTPM vector through the evidence-format readers (`formats`) and the engine's
//! verifiers: the documented verdict per file (a table), a tampered copy of each refused, and every-bit
//! flips over the signed parts of an Azure bundle.

mod common;

use attest_engine::UnixTime;
use attest_engine::azure::RuntimeData;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::Error;
use attest_engine::formats::azure::{
    AzureHardware, AzureVtpmEvidence, UserData, verify_azure_snp_evidence, verify_azure_tdx_vtpm,
    verify_snp_runtime_data,
};
use attest_engine::formats::tpm::{AkKey, AzureQuoteBin, HexQuote, TpmQuoteParts, TrusteeTpmEvidence};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tpm::verify_quote;
use std::path::Path;

fn time() -> UnixTime {
    UnixTime::parse("2025-06-01").unwrap()
}

/// Azure's paravisor reports run with provisional firmware at times; the verdicts here are about the
/// formats, so the SNP policy only relaxes that.
fn policy() -> SnpPolicy {
    SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() }
}

const CHALLENGE: &[u8] = b"challenge";

fn genoa_nonce() -> Vec<u8> {
    hex::decode("0218488bae25d2509232bf676f1a66a30d7372add909109b36016ef136f2938ca05475f8b46094de6b64270ea35d950f")
        .unwrap()
}

/// A TPM quote with its AK: PCR 0 of the verified quote, hex.
fn tpm_verdict(ak: &AkKey, quote: &TpmQuoteParts, nonce: &[u8]) -> Result<String, Error> {
    let pcrs = quote.pcr_values()?;
    let ok = verify_quote(default_provider(), &quote.request(&pcrs, ak, nonce)?)?;
    Ok(hex::encode(ok.pcr(quote.bank, 0).unwrap_or_default()))
}

/// An Azure SNP vTPM bundle: PCR 0, hex.
fn snp_verdict(ev: &AzureVtpmEvidence, nonce: &[u8], user_data: UserData<'_>) -> Result<String, Error> {
    let pcrs = ev.quote.pcr_values()?;
    let ok = verify_azure_snp_evidence(&SnpVerifier::new(), ev, &pcrs, nonce, user_data, time(), &policy())?;
    Ok(hex::encode(ok.quote.pcr(HashAlgorithm::Sha256, 0).unwrap()))
}

/// An Azure TDX vTPM bundle: PCR 0 and the TD REPORTDATA it requires, hex.
fn tdx_verdict(ev: &AzureVtpmEvidence, nonce: &[u8]) -> Result<(String, String), Error> {
    let pcrs = ev.quote.pcr_values()?;
    let ok = verify_azure_tdx_vtpm(default_provider(), ev, &pcrs, nonce, UserData::NotRequired)?;
    Ok((hex::encode(ok.quote.pcr(HashAlgorithm::Sha256, 0).unwrap()), hex::encode(&ok.td_report_data[..32])))
}

fn raw_snp(dir: &Path, hcl: &str, vcek: &str, quote: TpmQuoteParts) -> AzureVtpmEvidence {
    AzureVtpmEvidence {
        version: 0,
        hardware: AzureHardware::Snp,
        hcl_report: common::read(dir, hcl),
        vcek: common::certs(dir, vcek).swap_remove(0),
        td_quote: Vec::new(),
        quote,
    }
}

fn json(dir: &Path, rel: &str) -> AzureVtpmEvidence {
    AzureVtpmEvidence::from_json(&common::read(dir, rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const MILAN_PCR0: &str = "f3a7e99a5f819a034386bce753a48a73cfdaa0bea0ecfc124bedbf5a8c4799be";
const V1_PCR0: &str = "e15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced";
const GENOA_PCR0: &str = "afd689d0bb1c5f36f023fbaf574135f555a28a10c1f6b938d2a25e70c7783338";
const TDX_PCR0: &str = "782b20b10f55cc46e2142cc2145d548698073e5beb82752c8d7f9279f0d8a273";
const TDX_REPORT_DATA: &str = "9734504f161d104c74e3165c15f779b06a9bb40dfa71937817d7eee68e593839";

#[test]
fn tpm_vectors() {
    let Some(dir) = common::testdata() else { return };
    // trustee-tpm: the documented extraData (64 bytes: 48 given + 16 zero).
    let ev = TrusteeTpmEvidence::from_json(&common::read(&dir, "trustee-tpm/tpm_evidence.json")).unwrap();
    let mut nonce =
        hex::decode("a04182b506878d4f29b91ee606a71a0d3361ccf1b22db20c98adcaa537bea393ef0e41a18b3569ab678f1497fbc5c120")
            .unwrap();
    nonce.extend([0; 16]);
    assert_eq!(tpm_verdict(&ev.ak, &ev.quote, &nonce).unwrap(), "0".repeat(64), "PCR 0 of a software TPM is zero");
    assert!(matches!(tpm_verdict(&ev.ak, &ev.quote, &nonce[..48]), Err(Error::NonceMismatch { .. })));
    let mut bad = ev.quote.clone();
    bad.signature[20] ^= 1;
    assert_eq!(tpm_verdict(&ev.ak, &bad, &nonce).unwrap_err(), Error::QuoteSignatureInvalid);

    // azure-cvm-tooling: bincode bundle + PEM AK.
    let ak = AkKey::parse(&common::read(&dir, "azure-cvm-tooling/akpub.pem")).unwrap();
    let bin = common::read(&dir, "azure-cvm-tooling/quote.bin");
    let q = AzureQuoteBin::parse(&bin).unwrap().to_parts().unwrap();
    assert_eq!(tpm_verdict(&ak, &q, CHALLENGE).unwrap(), MILAN_PCR0);
    let mut bad = q.clone();
    bad.attest[30] ^= 1;
    assert!(tpm_verdict(&ak, &bad, CHALLENGE).is_err());
    // The same AK as DER SPKI.
    let AkKey::Spki(der) = &ak else { panic!("PEM gives an SPKI") };
    assert_eq!(AkKey::parse(der).unwrap(), ak);
    // The zero-copy view and the owned parts are the same bytes.
    let view = AzureQuoteBin::parse(&bin).unwrap();
    assert_eq!((view.attest, view.signature, view.pcrs().len()), (&q.attest[..], &q.signature[..], 24));
}

#[test]
fn gce_ak_as_tpmt_and_tpm2b() {
    let Some(dir) = common::testdata() else { return };
    // The GCE AK (TPMT_PUBLIC, field 1 of the go-tpm-tools attestation: bytes 3..283 of the file).
    let pb = common::read(&dir, "go-tpm-tools/gce-cos-85-no-nonce.pb");
    assert_eq!(&pb[..3], &[0x0A, 0x98, 0x02], "field 1, 280 bytes");
    let tpmt = &pb[3..283];
    let ak = AkKey::parse(tpmt).unwrap();
    assert!(matches!(ak, AkKey::Tpmt(_)));
    let mut tpm2b = (tpmt.len() as u16).to_be_bytes().to_vec();
    tpm2b.extend_from_slice(tpmt);
    assert_eq!(AkKey::parse(&tpm2b).unwrap(), ak);
    assert!(ak.scheme().unwrap().is_some());
    assert!(AkKey::parse(&tpmt[..100]).is_err());
}

#[test]
fn azure_snp_vectors() {
    let Some(dir) = common::testdata() else { return };
    let hcl = "trustee-az-snp-vtpm/hcl-report.bin";
    let vcek = "trustee-az-snp-vtpm/vcek.pem";
    let table: Vec<(&str, AzureVtpmEvidence, Vec<u8>, &str)> = vec![
        (
            "hcl-report.bin + vcek.pem + quote.bin",
            raw_snp(
                &dir,
                hcl,
                vcek,
                AzureQuoteBin::parse(&common::read(&dir, "trustee-az-snp-vtpm/quote.bin")).unwrap().to_parts().unwrap(),
            ),
            CHALLENGE.to_vec(),
            MILAN_PCR0,
        ),
        (
            "hcl-report.bin + vcek.pem + tpm-quote-v1.json",
            raw_snp(
                &dir,
                hcl,
                vcek,
                HexQuote::from_json(&common::read(&dir, "trustee-az-snp-vtpm/tpm-quote-v1.json")).unwrap(),
            ),
            CHALLENGE.to_vec(),
            MILAN_PCR0,
        ),
        ("evidence-v0.json", json(&dir, "trustee-az-snp-vtpm/evidence-v0.json"), CHALLENGE.to_vec(), V1_PCR0),
        ("evidence-v1.json", json(&dir, "trustee-az-snp-vtpm/evidence-v1.json"), CHALLENGE.to_vec(), V1_PCR0),
        ("evidence-genoa.json", json(&dir, "trustee-az-snp-vtpm/evidence-genoa.json"), genoa_nonce(), GENOA_PCR0),
    ];
    for (name, ev, nonce, pcr0) in &table {
        assert_eq!(ev.hardware, AzureHardware::Snp, "{name}");
        assert_eq!(
            snp_verdict(ev, nonce, UserData::NotRequired).unwrap_or_else(|e| panic!("{name}: {e}")),
            *pcr0,
            "{name}"
        );
        // Tampered: the quote signature, the quote, the SNP report, the runtime data; another nonce.
        for (what, tamper) in [
            ("signature", &(|e: &mut AzureVtpmEvidence| e.quote.signature[7] ^= 1) as &dyn Fn(&mut AzureVtpmEvidence)),
            ("attest", &|e: &mut AzureVtpmEvidence| e.quote.attest[40] ^= 1),
            ("report measurement", &|e: &mut AzureVtpmEvidence| e.hcl_report[0x20 + 0x90] ^= 1),
            ("runtime data", &|e: &mut AzureVtpmEvidence| e.hcl_report[0x4D4 + 3] ^= 1),
            ("pcr 0", &|e: &mut AzureVtpmEvidence| e.quote.pcrs[0][0] ^= 1),
        ] {
            let mut t = ev.clone();
            tamper(&mut t);
            assert!(snp_verdict(&t, nonce, UserData::NotRequired).is_err(), "{name}: tampered {what}");
        }
        assert!(matches!(snp_verdict(ev, b"other", UserData::NotRequired), Err(Error::NonceMismatch { .. })), "{name}");
    }
    // v0 and v1 carry reports of the same VM (the same measurement and runtime data, signed twice) and the
    // same VCEK.
    assert!(table[2].1.hcl_report[0x20 + 0x90..0x20 + 0xC0] == table[3].1.hcl_report[0x20 + 0x90..0x20 + 0xC0]);
    assert!(table[2].1.hcl_report[0x4C0..] == table[3].1.hcl_report[0x4C0..]);
    assert!(table[2].1.vcek == table[3].1.vcek);
}

#[test]
fn azure_v2_user_data() {
    let Some(dir) = common::testdata() else { return };
    // A v2 document has the v1 layout with "version": 2 (the held-out real one is not in this tree).
    let v1 = String::from_utf8(common::read(&dir, "trustee-az-snp-vtpm/evidence-v1.json")).unwrap();
    let v2 = v1.replacen("\"version\": 1", "\"version\": 2", 1);
    assert_ne!(v1, v2);
    let ev = AzureVtpmEvidence::from_json(v2.as_bytes()).unwrap();
    assert_eq!(ev.version, 2);
    let hcl = attest_engine::azure::HclReport::parse(&ev.hcl_report).unwrap();
    let actual = *RuntimeData::parse(hcl.variable_data()).unwrap().user_data().expect("the runtime data has user-data");
    assert!(matches!(snp_verdict(&ev, CHALLENGE, UserData::NotRequired), Err(Error::Misuse { .. })));
    assert_eq!(snp_verdict(&ev, CHALLENGE, UserData::Exactly(&actual)).unwrap(), V1_PCR0);
    let mut other = actual;
    other[63] ^= 1;
    assert!(matches!(
        snp_verdict(&ev, CHALLENGE, UserData::Exactly(&other)),
        Err(Error::RuntimeUserDataMismatch { .. })
    ));
    assert_eq!(snp_verdict(&ev, CHALLENGE, UserData::DangerousIgnore).unwrap(), V1_PCR0);
    // Unknown versions and mixed layouts are refused.
    for bad in [
        v1.replacen("\"version\": 1", "\"version\": 3", 1),
        v1.replacen("\"vcek\"", "\"td_quote\"", 1),
        "{}".into(),
        "[]".into(),
    ] {
        assert!(AzureVtpmEvidence::from_json(bad.as_bytes()).is_err(), "{}", &bad[..bad.len().min(40)]);
    }
}

#[test]
fn azure_tdx_vectors() {
    let Some(dir) = common::testdata() else { return };
    let td_quote = common::read(&dir, "trustee-az-tdx-vtpm/td-quote.bin");
    let raw = |quote| AzureVtpmEvidence {
        version: 0,
        hardware: AzureHardware::Tdx,
        hcl_report: common::read(&dir, "trustee-az-tdx-vtpm/hcl-report.bin"),
        vcek: Vec::new(),
        td_quote: td_quote.clone(),
        quote,
    };
    let table = [
        ("evidence-v0.json", json(&dir, "trustee-az-tdx-vtpm/evidence-v0.json")),
        ("evidence-v1.json", json(&dir, "trustee-az-tdx-vtpm/evidence-v1.json")),
        (
            "hcl-report.bin + quote.bin",
            raw(AzureQuoteBin::parse(&common::read(&dir, "trustee-az-tdx-vtpm/quote.bin"))
                .unwrap()
                .to_parts()
                .unwrap()),
        ),
        (
            "hcl-report.bin + tpm-quote-v1.json",
            raw(HexQuote::from_json(&common::read(&dir, "trustee-az-tdx-vtpm/tpm-quote-v1.json")).unwrap()),
        ),
    ];
    for (name, ev) in &table {
        assert_eq!(ev.hardware, AzureHardware::Tdx, "{name}");
        assert_eq!(ev.td_quote, td_quote, "{name}: the TD quote is handed over as received");
        let (pcr0, report_data) = tdx_verdict(ev, CHALLENGE).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((pcr0.as_str(), report_data.as_str()), (TDX_PCR0, TDX_REPORT_DATA), "{name}");
        let mut t = ev.clone();
        t.quote.signature[0] ^= 1;
        assert_eq!(tdx_verdict(&t, CHALLENGE).unwrap_err(), Error::QuoteSignatureInvalid, "{name}");
        let mut t = ev.clone();
        t.quote.pcrs[0][0] ^= 1;
        assert!(matches!(tdx_verdict(&t, CHALLENGE), Err(Error::PcrDigestMismatch { .. })), "{name}");
        // An SNP verification of TDX evidence is a caller mistake.
        let pcrs = ev.quote.pcr_values().unwrap();
        assert!(matches!(
            verify_azure_snp_evidence(
                &SnpVerifier::new(),
                ev,
                &pcrs,
                CHALLENGE,
                UserData::NotRequired,
                time(),
                &policy()
            ),
            Err(Error::Misuse { .. })
        ));
    }
    // The TD quote's REPORTDATA (offset 568 of a v4 quote) is what the binding asks for.
    assert_eq!(hex::encode(&td_quote[568..600]), TDX_REPORT_DATA);
}

#[test]
fn constellation_and_azure_cvm_tooling_snp() {
    let Some(dir) = common::testdata() else { return };
    let verifier = SnpVerifier::new();
    let report = common::read(&dir, "constellation-azure-snp/attestation.bin");
    let runtime = common::read(&dir, "constellation-azure-snp/runtimedata.bin");
    let vcek = common::read(&dir, "constellation-azure-snp/vcek.cert");
    let (ok, rt) = verify_snp_runtime_data(&verifier, &report, &runtime, &vcek, time(), &policy()).unwrap();
    assert_eq!(ok.signer(), attest_engine::CertRole::Vcek);
    assert!(matches!(rt.ak().ak_public(), attest_engine::tpm::AkPublic::Rsa { .. }));
    let mut t = runtime.clone();
    t[10] ^= 1;
    assert!(verify_snp_runtime_data(&verifier, &report, &t, &vcek, time(), &policy()).is_err());
    let mut t = report.clone();
    t[0x90] ^= 1;
    assert!(matches!(
        verify_snp_runtime_data(&verifier, &t, &runtime, &vcek, time(), &policy()),
        Err(Error::ReportSignatureInvalid)
    ));

    // azure-cvm-tooling: its HCL report has no matching VCEK here (certs.pem belongs to another chip).
    let hcl = common::read(&dir, "azure-cvm-tooling/hcl-report-snp.bin");
    let parsed = attest_engine::azure::HclReport::parse(&hcl).unwrap();
    let other_vcek = common::certs(&dir, "azure-cvm-tooling/certs.pem").swap_remove(0);
    let err = verify_snp_runtime_data(
        &verifier,
        parsed.snp_report().unwrap(),
        parsed.variable_data(),
        &other_vcek,
        time(),
        &policy(),
    );
    assert!(err.is_err(), "another chip's VCEK");
    // Its standalone runtime data parses and carries an RSA AK.
    RuntimeData::parse(&common::read(&dir, "azure-cvm-tooling/var-data.bin")).unwrap();
}

#[test]
fn every_signed_bit_of_an_azure_bundle() {
    let Some(dir) = common::testdata() else { return };
    let ev = json(&dir, "trustee-az-snp-vtpm/evidence-v1.json");
    let verifier = SnpVerifier::new();
    let pcrs = ev.quote.pcr_values().unwrap();
    let check = |e: &AzureVtpmEvidence| {
        let pcrs = e.quote.pcr_values().unwrap();
        verify_azure_snp_evidence(&verifier, e, &pcrs, CHALLENGE, UserData::NotRequired, time(), &policy()).is_err()
    };
    verify_azure_snp_evidence(&verifier, &ev, &pcrs, CHALLENGE, UserData::NotRequired, time(), &policy()).unwrap();
    let var_size = attest_engine::azure::HclReport::parse(&ev.hcl_report).unwrap().variable_data().len();
    // The SNP report's signed bytes (0..0x2A0), inside the HCL report at 0x20; the runtime data; the quote.
    let regions: [(&str, usize, usize); 2] =
        [("report", 0x20, 0x20 + 0x2A0), ("runtime data", 0x4D4, 0x4D4 + var_size)];
    for (what, start, end) in regions {
        for bit in start * 8..end * 8 {
            let mut t = ev.clone();
            t.hcl_report[bit / 8] ^= 1 << (bit % 8);
            assert!(check(&t), "{what} bit {bit}");
        }
    }
    for bit in 0..ev.quote.attest.len() * 8 {
        let mut t = ev.clone();
        t.quote.attest[bit / 8] ^= 1 << (bit % 8);
        assert!(check(&t), "attest bit {bit}");
    }
    for bit in 0..ev.quote.signature.len() * 8 {
        let mut t = ev.clone();
        t.quote.signature[bit / 8] ^= 1 << (bit % 8);
        assert!(check(&t), "signature bit {bit}");
    }
}
