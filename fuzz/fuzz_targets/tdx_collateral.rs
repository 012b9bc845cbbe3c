//! TDX collateral readers on arbitrary bytes: the JSON bundle (`Collateral::from_bundle_json`), a PCS
//! response body taken as both the TCB Info and the QE Identity response (`Collateral::from_pcs`), and the
//! signed-object decoders (`TcbInfo::from_json`, `QeIdentity::from_json`). Collateral that reads is verified
//! under the real Intel root (signatures, chains, CRLs) and written back: the bundle writer must round-trip.
#![no_main]

use attest_engine::tdx::{Collateral, PcsResponses, QeIdentity, TcbInfo};
use attest_engine::UnixTime;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fn exercise(c: &Collateral) {
    let again = Collateral::from_bundle_json(c.to_bundle_json().as_bytes()).expect("bundle writer output reads back");
    assert_eq!(&again, c, "bundle round trip");
    let provider = attest_engine::crypto::default_provider();
    if let Ok(v) = c.verify(provider) {
        black_box((v.has_crls(), v.expires(), v.valid_from(), v.check_time(UnixTime::from_secs(1_700_000_000)).is_ok()));
        black_box((v.tcb_info().tcb_levels.len(), v.qe_identity().tcb_levels.len()));
    }
}

fuzz_target!(|data: &[u8]| {
    black_box(TcbInfo::from_json(data).map(|t| t.tcb_levels.len()).ok());
    black_box(QeIdentity::from_json(data).map(|q| q.tcb_levels.len()).ok());
    if let Ok(c) = Collateral::from_bundle_json(data) {
        exercise(&c);
    }
    let pcs = PcsResponses {
        tcb_info: data,
        tcb_info_issuer_chain: b"",
        qe_identity: data,
        qe_identity_issuer_chain: b"",
        pck_crl: Some(data),
        pck_crl_issuer_chain: b"",
        root_ca_crl: None,
    };
    black_box(Collateral::from_pcs(&pcs).is_ok());
});
