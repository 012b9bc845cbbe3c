//! The binary evidence readers: an AK in any encoding (`AkKey::parse`), az-cvm-vtpm's bincode quote
//! (`AzureQuoteBin::parse`, which must borrow exactly its input's fields), and Google's instance-information
//! extension (`InstanceInfo::from_der`), and SEV-SNP evidence classification (`SnpEvidence::parse`, whose
//! report is always 0x4A0 bytes of its input); must never panic.
#![no_main]

use attest_engine::formats::snp::SnpEvidence;
use attest_engine::formats::tpm::{AkKey, AzureQuoteBin};
use attest_engine::gce::InstanceInfo;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    if let Ok(ak) = AkKey::parse(data) {
        black_box((ak.public().is_ok(), ak.scheme().is_ok()));
    }
    if let Ok(q) = AzureQuoteBin::parse(data) {
        let n = q.pcrs().len();
        assert_eq!(8 + q.signature.len() + 8 + q.attest.len() + 8 + 32 * n, data.len(), "the view covers the input");
        black_box((q.pcr_values(), q.to_parts().is_ok()));
    }
    if let Ok(info) = InstanceInfo::from_der(data) {
        black_box(info);
    }
    if let Ok(ev) = SnpEvidence::parse(data) {
        assert_eq!(ev.report().len(), 0x4A0, "the report is the report's size");
        black_box((ev.container(), ev.hcl().is_some()));
    }
});
