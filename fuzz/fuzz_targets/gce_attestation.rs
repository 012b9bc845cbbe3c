//! go-tpm-tools' GCE `Attestation` protobuf → `attest_proto::gce::{decode, evidence}` → the engine's
//! `GceVerifier` (Google's pinned roots, at 2025-06-01, both with no nonce and with a nonce, default and
//! SHA-1-allowing policies); must never panic. A success with a nonce would be a finding (no input here
//! holds Google's signature over it).
#![no_main]

use attest_engine::UnixTime;
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerifier};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::LazyLock;

static VERIFIER: LazyLock<GceVerifier> = LazyLock::new(GceVerifier::new);
static POLICIES: LazyLock<[GcePolicy; 2]> = LazyLock::new(|| {
    [GcePolicy::default(), GcePolicy { allow_sha1: true, require_event_log: false, ..GcePolicy::default() }]
});

fuzz_target!(|data: &[u8]| {
    let Ok(att) = attest_proto::gce::decode(data) else { return };
    let Ok(ev) = attest_proto::gce::evidence(&att) else { return };
    black_box((ev.quotes().count(), ev.intermediates().len(), ev.tee_attestation()));
    let time = UnixTime::parse("2025-06-01").unwrap();
    for policy in POLICIES.iter() {
        for nonce in [ExpectedNonce::DangerousNone, ExpectedNonce::Exactly(b"fuzz")] {
            if let Ok(ok) = VERIFIER.verify(&ev, &GceRequest { nonce, time }, policy) {
                assert!(matches!(nonce, ExpectedNonce::DangerousNone), "a nonce was accepted");
                black_box((ok.instance(), ok.platform(), ok.banks().count(), ok.verdict()));
                black_box(attest_engine::ear::Appraisal::from_gce(&ok));
            }
        }
    }
});
