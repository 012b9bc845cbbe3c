//! The configfs-tsm output reader (`attest_tsm`, the attester's `issuer::tsm::output`): arbitrary attribute contents never panic, and what it accepts is consistent — the generation moved
//! by the writes alone, the evidence lies inside `outblob`, carries the inblob as its report data, and (TDX)
//! is followed by zero padding only.
//!
//! Input: provider (1 byte: even TDX, odd SEV-SNP) · writes (1) · len(generation before) (1) ·
//! len(generation after) (1) · len(auxblob) (2, LE) · inblob (64) · the attributes in that order · outblob.
#![no_main]

use attest_tsm::{Provider, RawOutput, check_output, parse_generation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 70 {
        return;
    }
    let provider = if data[0] & 1 == 0 { Provider::TdxGuest } else { Provider::SevGuest };
    let writes = u32::from(data[1]);
    let (a, b) = (usize::from(data[2]), usize::from(data[3]));
    let c = usize::from(u16::from_le_bytes([data[4], data[5]]));
    let inblob: [u8; 64] = data[6..70].try_into().unwrap();
    let rest = &data[70..];
    if rest.len() < a + b + c {
        return;
    }
    let (before, rest) = rest.split_at(a);
    let (after, rest) = rest.split_at(b);
    let (auxblob, outblob) = rest.split_at(c);
    let raw = RawOutput { generation_before: before, generation_after: after, writes, outblob, auxblob };
    let Ok(out) = check_output(provider, &inblob, &raw) else { return };
    let (g0, g1) = (parse_generation(before).unwrap(), parse_generation(after).unwrap());
    assert_eq!(g1, g0.wrapping_add(writes), "accepted a generation that another writer moved");
    let range = outblob.as_ptr_range();
    assert!(range.contains(&out.evidence.as_ptr()), "the evidence lies outside outblob");
    assert!(out.evidence.len() <= outblob.len());
    match provider {
        Provider::TdxGuest => {
            let q = attest_engine::tdx::TdQuote::parse(out.evidence).expect("accepted evidence is an exact quote");
            assert_eq!(q.body().report_data(), &inblob);
            assert!(outblob[out.evidence.len()..].iter().all(|b| *b == 0), "non-zero bytes after the quote");
            assert!(out.auxblob.is_empty());
        }
        Provider::SevGuest => {
            let r = attest_engine::snp::Report::parse(out.evidence).expect("accepted evidence is a report");
            assert_eq!(r.report_data(), &inblob);
            assert_eq!(out.auxblob, auxblob);
        }
    }
});
