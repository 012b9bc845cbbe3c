//! `tdx::TdQuote::parse_prefix` and `parse` on arbitrary bytes; when it parses, every accessor is read and
//! the two parsers must agree; then the verifier's signatures-only path and a full verification (no
//! collateral installed) at 2025-01-01 must return, never panic.
#![no_main]

use attest_engine::UnixTime;
use attest_engine::tdx::{TdQuote, TdxPolicy, TdxRequest, TdxVerifier, Trailing};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static VERIFIER: OnceLock<TdxVerifier> = OnceLock::new();
    let exact = TdQuote::parse(data);
    let Ok(q) = TdQuote::parse_prefix(data) else {
        assert!(exact.is_err(), "parse accepted what parse_prefix refused");
        return;
    };
    assert_eq!(exact.is_ok(), q.trailing() == Trailing::None, "parse and parse_prefix disagree");
    assert_eq!(q.as_bytes().len() + q.trailing().len(), data.len(), "quote and trailing bytes add up to the input");
    assert!(q.signed_bytes().len() < q.as_bytes().len());
    let h = q.header();
    black_box((h.version(), h.att_key_type(), h.tee_type(), h.qe_svn(), h.pce_svn(), h.qe_vendor_id(), h.user_data()));
    let b = q.body();
    black_box((b.kind(), b.tee_tcb_svn(), b.mr_seam(), b.mr_signer_seam(), b.seam_attributes(), b.td_attributes()));
    black_box((b.xfam(), b.mr_td(), b.mr_config_id(), b.mr_owner(), b.mr_owner_config(), b.rtmrs(), b.report_data()));
    black_box((b.tee_tcb_svn2(), b.mr_service_td(), b.is_debug()));
    let qe = q.qe_report();
    black_box((qe.cpu_svn(), qe.misc_select(), qe.attributes(), qe.mr_enclave(), qe.mr_signer(), qe.isv_prod_id()));
    black_box((qe.isv_svn(), qe.report_data(), q.signature(), q.attestation_key(), q.qe_report_signature()));
    black_box((q.qe_auth_data(), q.pck_chain_pem(), format!("{q:?}")));
    let v = VERIFIER.get_or_init(TdxVerifier::new);
    let t = UnixTime::parse("2025-01-01T00:00:00Z").unwrap();
    black_box(v.dangerous_verify_signatures_only(data, t).is_ok());
    assert!(v.verify(&TdxRequest::new(data, t), &TdxPolicy::default()).is_err(), "verified without collateral");
});
