//! TPM and Azure vTPM benchmarks: quote parsing and verification, event-log replay, and the Azure SNP vTPM
//! bundle, each next to its floor (the raw signature verifications of the same bytes with aws-lc-rs).
//!
//! Groups:
//! - `tpm_engine`: `attest_parse` (`tpm::Attest::parse`), `quote_verify_rsa2048` (the real
//!   azure-cvm-tooling quote), `quote_verify_p256` (a quote by a generated ECC P-256 [`SoftAk`]).
//! - `tpm_floor`: `rsa2048_verify` / `p256_verify`: one raw aws-lc-rs verification of the same TPMS_ATTEST
//!   bytes and signature.
//! - `eventlog`: `parse_replay_sha256/<log>`: `EventLog::parse` + `replay` of the SHA-256 bank over each real
//!   go-tpm-tools log with a SHA-256 bank, and `all` over all of them; throughput in bytes of log.
//! - `azure_engine`: `warm_verify` (`azure::verify_azure_snp` on the trustee Milan bundle, VCEK leaf cache warm).
//! - `azure_floor`: `p384_plus_rsa2048_verify`: the report's P-384 signature and the quote's RSA-2048 signature.
//!
//! Inputs come from `$ATTEST_TESTDATA` (default `../shared/testdata` next to the repository). Without them
//! the benchmarks are skipped with a NOTICE, and fail under `CI=true`.

use attest_engine::UnixTime;
use attest_engine::azure::{AzureSnpRequest, HclReport, RuntimeData, verify_azure_snp};
use attest_engine::crypto::HashAlgorithm;
use attest_engine::crypto::aws_lc_rs::PROVIDER;
use attest_engine::snp::{REPORT_SIZE, SIGNED_LEN, SnpPolicy, SnpVerifier};
use attest_engine::tpm::eventlog::EventLog;
use attest_engine::tpm::{
    AkPublic, Attest, PcrValues, QuoteRequest, QuoteSignature, SigScheme, TpmSignature, TpmtPublic, verify_quote,
};
use attest_engine::x509::pem::certificates_from_pem_or_der;
use attest_engine::x509::{Certificate, PublicKey};
use attest_test_support::testdata::AzureQuote;
use attest_test_support::testdata::{dir as testdata, read};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents,
    UnparsedPublicKey,
};
use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::path::Path;

const RSASSA_SHA256: SigScheme = SigScheme::RsaSsa(HashAlgorithm::Sha256);

fn sha256_bank<V: AsRef<[u8]>>(values: &[V]) -> PcrValues<'_> {
    let mut p = PcrValues::new();
    for (i, v) in values.iter().enumerate() {
        p.set(HashAlgorithm::Sha256, i, v.as_ref()).expect("a SHA-256 PCR value");
    }
    p
}

/// SEV-SNP signature component (72 bytes little-endian, 48 significant) to 48 bytes big-endian.
fn le72_to_be48(le: &[u8]) -> [u8; 48] {
    let mut out = [0u8; 48];
    for (dst, src) in out.iter_mut().zip(le[..48].iter().rev()) {
        *dst = *src;
    }
    out
}

/// RSA key components, big-endian, as `RsaPublicKeyComponents` wants them.
fn rsa_components(ak: AkPublic<'_>) -> (Vec<u8>, Vec<u8>) {
    let AkPublic::Rsa { modulus, exponent } = ak else { panic!("not an RSA key") };
    let e = exponent.to_be_bytes();
    let first = e.iter().position(|b| *b != 0).unwrap_or(3);
    (modulus.to_vec(), e[first..].to_vec())
}

fn bench_quotes(c: &mut Criterion, dir: &Path) {
    // RSA-2048: the real azure-cvm-tooling vTPM quote (raw RSASSA-SHA256 signature, nonce "challenge").
    let q = AzureQuote::from_bincode(&read(dir, "azure-cvm-tooling/quote.bin"));
    let ak_der = attest_engine::x509::pem::parse_pem(&read(dir, "azure-cvm-tooling/akpub.pem")).expect("akpub.pem")[0]
        .der
        .clone();
    let rsa_ak = AkPublic::from_spki_der(&ak_der).expect("AK SPKI");
    let rsa_pcrs = sha256_bank(&q.pcrs);
    let rsa_req = QuoteRequest {
        attest: &q.attest,
        signature: QuoteSignature::RsaRaw { scheme: RSASSA_SHA256, sig: &q.sig },
        ak: rsa_ak,
        ak_scheme: None,
        pcrs: &rsa_pcrs,
        nonce: b"challenge",
        allow_sha1: false,
    };
    verify_quote(&PROVIDER, &rsa_req).expect("the RSA quote verifies");
    let (modulus, exponent) = rsa_components(rsa_ak);
    let rsa_raw = RsaPublicKeyComponents { n: &modulus[..], e: &exponent[..] };
    rsa_raw.verify(&RSA_PKCS1_2048_8192_SHA256, &q.attest, &q.sig).expect("aws-lc-rs accepts the RSA quote");

    // ECC P-256: a generated AK quoting 24 SHA-256 PCRs.
    let soft = SoftAk::ecc_p256();
    let tpmt = soft.tpmt_public();
    let values: PcrBank = core::array::from_fn(|i| [u8::try_from(i).expect("PCR index"); 32]);
    let nonce = [0x5A; 32];
    let quote = soft.quote(&QuoteSpec::new(&nonce, &values, 0x00FF_FFFF));
    let ecc_public = TpmtPublic::parse(&tpmt).expect("SoftAk TPMT_PUBLIC");
    ecc_public.check_attestation_key().expect("an AK");
    let mut ecc_pcrs = PcrValues::new();
    for (i, v) in values.iter().enumerate() {
        ecc_pcrs.set(HashAlgorithm::Sha256, i, v).expect("PCR");
    }
    let ecc_req = QuoteRequest {
        attest: &quote.attest,
        signature: QuoteSignature::Tpmt(&quote.signature),
        ak: ecc_public.key(),
        ak_scheme: ecc_public.scheme(),
        pcrs: &ecc_pcrs,
        nonce: &nonce,
        allow_sha1: false,
    };
    verify_quote(&PROVIDER, &ecc_req).expect("the P-256 quote verifies");
    let TpmSignature::Ecdsa { r: sig_r, s: sig_s, .. } = TpmSignature::parse(&quote.signature).expect("TPMT_SIGNATURE")
    else {
        panic!("not ECDSA")
    };
    let mut fixed = [0u8; 64];
    fixed[32 - sig_r.len()..32].copy_from_slice(sig_r);
    fixed[64 - sig_s.len()..].copy_from_slice(sig_s);
    let (px, py) = soft.point().expect("ECC point");
    let point = [&[0x04][..], px, py].concat();
    let p256_raw = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point);
    p256_raw.verify(&quote.attest, &fixed).expect("aws-lc-rs accepts the P-256 quote");

    let mut g = c.benchmark_group("tpm_engine");
    g.bench_function("attest_parse", |b| b.iter(|| Attest::parse(black_box(&q.attest)).unwrap()));
    g.bench_function("quote_verify_rsa2048", |b| b.iter(|| verify_quote(&PROVIDER, black_box(&rsa_req)).unwrap()));
    g.bench_function("quote_verify_p256", |b| b.iter(|| verify_quote(&PROVIDER, black_box(&ecc_req)).unwrap()));
    g.finish();

    let mut g = c.benchmark_group("tpm_floor");
    g.bench_function("rsa2048_verify", |b| {
        b.iter(|| {
            black_box(&rsa_raw).verify(&RSA_PKCS1_2048_8192_SHA256, black_box(&q.attest), black_box(&q.sig)).unwrap();
        });
    });
    g.bench_function("p256_verify", |b| {
        b.iter(|| black_box(&p256_raw).verify(black_box(&quote.attest), black_box(&fixed)).unwrap());
    });
    g.finish();
}

fn bench_eventlog(c: &mut Criterion, dir: &Path) {
    let mut logs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir.join("go-tpm-tools/eventlogs"))
        .expect("go-tpm-tools/eventlogs")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    paths.sort();
    for p in paths {
        let bytes = std::fs::read(&p).expect("event log");
        // Logs without a SHA-256 bank (TCG 1.2 SHA-1 format) have nothing to replay here.
        if EventLog::parse(&bytes).is_ok_and(|l| l.has_bank(HashAlgorithm::Sha256)) {
            let name = p.file_stem().expect("name").to_string_lossy().into_owned();
            logs.push((name, bytes));
        }
    }
    assert!(!logs.is_empty(), "no SHA-256 event log in go-tpm-tools/eventlogs");
    let replay = |bytes: &[u8]| {
        let log = EventLog::parse(bytes).unwrap();
        log.replay(&PROVIDER, HashAlgorithm::Sha256, false).unwrap()
    };
    let mut g = c.benchmark_group("eventlog");
    let total: usize = logs.iter().map(|(_, b)| b.len()).sum();
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("parse_replay_sha256/all", |b| {
        b.iter(|| {
            for (_, bytes) in &logs {
                black_box(replay(black_box(bytes)));
            }
        });
    });
    for (name, bytes) in &logs {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(format!("parse_replay_sha256/{name}"), |b| b.iter(|| replay(black_box(bytes))));
    }
    g.finish();
}

fn bench_azure(c: &mut Criterion, dir: &Path) {
    let hcl = read(dir, "trustee-az-snp-vtpm/hcl-report.bin");
    let vcek = certificates_from_pem_or_der(&read(dir, "trustee-az-snp-vtpm/vcek.pem")).expect("vcek.pem").remove(0);
    let json: serde_json::Value =
        serde_json::from_slice(&read(dir, "trustee-az-snp-vtpm/tpm-quote-v1.json")).expect("tpm-quote-v1.json");
    let unhex = |v: &serde_json::Value| hex::decode(v.as_str().expect("hex string")).expect("hex");
    let sig = unhex(&json["signature"]);
    let msg = unhex(&json["message"]);
    let values: Vec<Vec<u8>> = json["pcrs"].as_array().expect("pcrs").iter().map(unhex).collect();
    let pcrs = sha256_bank(&values);
    let req = AzureSnpRequest {
        hcl_report: &hcl,
        vcek: &vcek,
        intermediate: None,
        attest: &msg,
        signature: QuoteSignature::RsaRaw { scheme: RSASSA_SHA256, sig: &sig },
        pcrs: &pcrs,
        quote_nonce: b"challenge",
        time: UnixTime::parse("2025-06-01T00:00:00Z").expect("time"),
    };
    // The trustee report was taken on provisional firmware (see engine/tests/azure_vtpm.rs).
    let policy = SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() };
    let verifier = SnpVerifier::with_provider(&PROVIDER);
    assert!(!verify_azure_snp(&verifier, &req, &policy).expect("cold verify").snp.cache_hit());
    assert!(verify_azure_snp(&verifier, &req, &policy).expect("warm verify").snp.cache_hit());

    // The floor: the SNP report's P-384 signature under the VCEK and the quote's RSA-2048 signature under
    // the HCLAkPub, both raw with aws-lc-rs.
    let parsed = HclReport::parse(&hcl).expect("HCL report");
    let report = parsed.snp_report().expect("an SNP report");
    assert_eq!(report.len(), REPORT_SIZE);
    let vcek_point = match Certificate::from_der(&vcek).expect("VCEK").public_key() {
        PublicKey::EcP384 { point } => point.to_vec(),
        other => panic!("VCEK key is not P-384: {other:?}"),
    };
    let mut report_sig = [0u8; 96];
    report_sig[..48].copy_from_slice(&le72_to_be48(&report[0x2A0..0x2E8]));
    report_sig[48..].copy_from_slice(&le72_to_be48(&report[0x2E8..0x330]));
    let p384 = UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, &vcek_point);
    p384.verify(&report[..SIGNED_LEN], &report_sig).expect("aws-lc-rs accepts the report signature");
    let runtime = RuntimeData::parse(parsed.variable_data()).expect("runtime data");
    let (modulus, exponent) = rsa_components(runtime.ak().ak_public());
    let rsa = RsaPublicKeyComponents { n: &modulus[..], e: &exponent[..] };
    rsa.verify(&RSA_PKCS1_2048_8192_SHA256, &msg, &sig).expect("aws-lc-rs accepts the quote signature");

    let mut g = c.benchmark_group("azure_engine");
    g.bench_function("warm_verify", |b| b.iter(|| verify_azure_snp(&verifier, black_box(&req), &policy).unwrap()));
    g.finish();
    let mut g = c.benchmark_group("azure_floor");
    g.bench_function("p384_plus_rsa2048_verify", |b| {
        b.iter(|| {
            black_box(&p384).verify(black_box(&report[..SIGNED_LEN]), black_box(&report_sig)).unwrap();
            black_box(&rsa).verify(&RSA_PKCS1_2048_8192_SHA256, black_box(&msg), black_box(&sig)).unwrap();
        });
    });
    g.finish();
}

fn main() {
    let Some(dir) = testdata() else { return };
    let mut c = Criterion::default().configure_from_args();
    bench_quotes(&mut c, &dir);
    bench_eventlog(&mut c, &dir);
    bench_azure(&mut c, &dir);
    c.final_summary();
}
