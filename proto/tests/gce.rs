//! go-tpm-tools' real GCE attestation through the protobuf bridge (`attest_proto::gce`) and the engine's
//! GCE verifier: the documented outcome, and refusals of tampered encodings.

use attest_engine::crypto::HashAlgorithm;
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerifier};
use attest_engine::{Error, UnixTime};

fn verify(bytes: &[u8], nonce: ExpectedNonce<'_>) -> Result<(String, String), Error> {
    let att = attest_proto::gce::decode(bytes)?;
    let ev = attest_proto::gce::evidence(&att)?;
    let req = GceRequest { nonce, time: UnixTime::parse("2025-06-01").unwrap() };
    let ok = GceVerifier::new().verify(&ev, &req, &GcePolicy::default())?;
    Ok((ok.instance().instance_name.to_owned(), hex::encode(ok.pcr(HashAlgorithm::Sha256, 0).unwrap())))
}

#[test]
fn cos85_no_nonce() {
    let Some(dir) = attest_test_support::testdata::dir() else { return };
    let pb = std::fs::read(dir.join("go-tpm-tools/gce-cos-85-no-nonce.pb")).unwrap();
    let (name, pcr0) = verify(&pb, ExpectedNonce::DangerousNone).unwrap();
    assert_eq!(name, "cos-test");
    assert_eq!(pcr0, "0f35c214608d93c7a6e68ae7359b4a8be5a0e99eea9107ece427c4dea4e439cf");
    assert!(matches!(verify(&pb, ExpectedNonce::Exactly(&[0x90, 0x09])), Err(Error::NonceMismatch { .. })));
    // Tampered encodings: every 97th byte flipped (protobuf framing, AK, quotes, certificate) is refused,
    // as a decoding error or a verification error, never accepted. The event log is left out: bytes of its
    // informational (EV_NO_ACTION) events are measured nowhere; engine/tests/gce.rs flips its digests.
    let log = attest_proto::gce::decode(&pb).unwrap().event_log;
    let log_at = pb.windows(64).position(|w| w == &log[..64]).unwrap();
    for i in (0..pb.len()).step_by(97).filter(|i| !(log_at..log_at + log.len()).contains(i)) {
        let mut t = pb.clone();
        t[i] ^= 0x01;
        assert!(verify(&t, ExpectedNonce::DangerousNone).is_err(), "byte {i}");
    }
    // Truncations.
    for n in [0, 1, 100, pb.len() / 2, pb.len() - 1] {
        assert!(verify(&pb[..n], ExpectedNonce::DangerousNone).is_err(), "truncated to {n}");
    }
}
