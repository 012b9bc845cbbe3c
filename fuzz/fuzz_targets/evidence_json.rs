//! The JSON evidence readers: trustee's TPM evidence, trustee's hex quote, and trustee's Azure SNP/TDX
//! vTPM evidence (v0/v1/v2); must never panic, and what parses must satisfy the readers' invariants.
//! Azure evidence that parses is also verified (SNP: AMD's real roots at 2025-06-01; TDX: the vTPM part).
#![no_main]

use attest_engine::UnixTime;
use attest_engine::formats::azure::{
    AzureHardware, AzureVtpmEvidence, UserData, verify_azure_snp_evidence, verify_azure_tdx_vtpm,
};
use attest_engine::formats::tpm::{HexQuote, TrusteeTpmEvidence};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::LazyLock;

static VERIFIER: LazyLock<SnpVerifier> = LazyLock::new(SnpVerifier::new);

fuzz_target!(|data: &[u8]| {
    if let Ok(ev) = TrusteeTpmEvidence::from_json(data) {
        assert!(ev.quote.pcrs.len() <= 24);
        black_box((ev.ak.public().is_ok(), ev.quote.pcr_values().is_ok()));
    }
    if let Ok(q) = HexQuote::from_json(data) {
        assert!(q.raw_rsa.is_some());
        black_box(q.pcr_values().is_ok());
    }
    if let Ok(ev) = AzureVtpmEvidence::from_json(data) {
        assert!(ev.version <= 2);
        let Ok(pcrs) = ev.quote.pcr_values() else { return };
        match ev.hardware {
            AzureHardware::Snp => {
                let time = UnixTime::parse("2025-06-01").unwrap();
                let r = verify_azure_snp_evidence(
                    &VERIFIER,
                    &ev,
                    &pcrs,
                    b"challenge",
                    UserData::DangerousIgnore,
                    time,
                    &SnpPolicy::default(),
                );
                black_box(r.is_ok());
            }
            AzureHardware::Tdx => {
                let r = verify_azure_tdx_vtpm(VERIFIER.provider(), &ev, &pcrs, b"challenge", UserData::DangerousIgnore);
                black_box(r.map(|ok| ok.td_report_data).ok());
            }
        }
    }
});
