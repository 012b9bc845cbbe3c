//! The aTLS peer-certificate path (`shell/atls/src/verify.rs`): a DER certificate → the engine's
//! `x509::Certificate::from_der` → the extension walk under the aTLS arc 1.3.9900 → `oid_to_dotted` → the
//! document size limit → protobuf `AttestationDocument` → the engine `Document` → the variant's validator;
//! must never panic.
//!
//! Two passes per input:
//! 1. the real `atls::Verifier::verify` on OpenSSL's parse of the bytes (what a handshake runs), with an
//!    `EngineValidator` per variant. It checks the self-signature first, so mutated certificates stop there
//!    (and it validates at the system clock's time): this pass covers OpenSSL's and the engine's DER readers
//!    and the order of the checks;
//! 2. the same walk re-done here without the self-signature check (so inputs reach the document decoder and
//!    the validators), at the fixed time 2025-06-01 and with a validator set like `attestation_document`'s
//!    (a `qemu-vtpm` validator that trusts every AK, and the three SNP variants with AMD's real roots).
//!    `oid_to_dotted` must agree with the arc check and must print what `Variant::from_oid` reads back.
#![no_main]

use attest_atls::verify::{MAX_DOCUMENT_SIZE, oid_to_dotted};
use attest_atls::{AttestationValidator, EngineValidator, NonceChannel, Verifier};
use attest_engine::UnixTime;
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::variant::{AkBasis, AkRegistry, PcrPolicy, Validator, Variant};
use attest_engine::x509::Certificate;
use attest_proto::attest::v1::AttestationDocument;
use attest_proto::document::{pcr_values, view};
use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use std::hint::black_box;
use std::sync::{Arc, LazyLock};

/// DER content octets of 1.3.9900 (the aTLS arc).
const ARC: [u8; 3] = [0x2B, 0xCD, 0x2C];
/// The nonce of pass 1 (an aTLS nonce is 32 bytes; nothing can be bound to it).
const NONCE: [u8; 32] = [0x5A; 32];
/// The nonce of pass 2: the one the synthetic seeds' documents were issued for (as `attestation_document`).
const DOCUMENT_NONCE: &[u8] = b"attest-fuzz-nonce";

/// Trusts every AK (fuzzing only: it lets inputs reach quote verification).
#[derive(Debug)]
struct TrustAll;

impl AkRegistry for TrustAll {
    fn lookup(&self, _: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::Pinned)
    }
}

fn validators() -> Vec<Validator> {
    let snp = Arc::new(SnpVerifier::new());
    let v = |variant| Validator::new(variant, snp.clone(), SnpPolicy::default(), PcrPolicy::default());
    vec![
        v(Variant::QemuVtpm).with_ak_registry(Arc::new(TrustAll)),
        v(Variant::AwsSevSnp),
        v(Variant::GcpSevSnp),
        v(Variant::AzureSevSnp),
    ]
}

static VERIFIER: LazyLock<Verifier> = LazyLock::new(|| {
    let engine: Vec<Arc<dyn AttestationValidator>> =
        validators().into_iter().map(|v| Arc::new(EngineValidator::new(v)) as Arc<dyn AttestationValidator>).collect();
    // Capacity 0: nothing is remembered, so a pass never depends on the inputs before it.
    Verifier::with_replay_capacity(engine, 0)
});
static VALIDATORS: LazyLock<Vec<Validator>> = LazyLock::new(validators);
static TIME: LazyLock<UnixTime> = LazyLock::new(|| UnixTime::parse("2025-06-01T00:00:00Z").unwrap());

fn validate(oid: &str, document: &[u8]) {
    let Some(validator) = VALIDATORS.iter().find(|v| v.variant().oid() == oid) else { return };
    let Ok(doc) = AttestationDocument::decode(document) else { return };
    let Ok(pcrs) = pcr_values(&doc) else { return };
    if let Ok(ok) = validator.validate(&view(&doc, &pcrs), DOCUMENT_NONCE, *TIME) {
        black_box((ok.variant, ok.user_data, ok.event_log_replayed));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(x509) = openssl::x509::X509::from_der(data) {
        let r = VERIFIER.verify(&x509, &NONCE, NonceChannel::ServerName);
        assert!(r.is_err(), "a fuzzed certificate was accepted");
    }

    let Ok(cert) = Certificate::from_der(data) else { return };
    black_box(cert.spki());
    for ext in cert.extensions() {
        let Ok(ext) = ext else { return };
        let dotted = oid_to_dotted(ext.oid);
        if let Some(d) = &dotted {
            assert!(!d.is_empty() && d.split('.').all(|arc| arc.parse::<u64>().is_ok()), "{d}");
            if let Some(v) = Variant::from_oid(d) {
                assert!(ext.oid.starts_with(&ARC), "{d} is a variant OID outside the aTLS arc");
                assert_eq!(v.oid(), d);
            }
        }
        if !ext.oid.starts_with(&ARC) || ext.value.len() > MAX_DOCUMENT_SIZE {
            continue;
        }
        if let Some(d) = dotted {
            validate(&d, ext.value);
        }
    }
});
