//! go-tpm-tools' attestation protobuf, read as far as the GCE tests need it (the AK, the quotes, the event log,
//! the AK certificate), owned so that tests can tamper with the parts.
#![allow(dead_code, unreachable_pub)]

use attest_engine::crypto::HashAlgorithm;
use attest_engine::error::Error;
use attest_engine::gce::{GceEvidence, GceQuote};
/// One protobuf field: number and payload (varints as their value, little-endian u64 bytes).
pub fn fields(mut b: &[u8]) -> Vec<(u64, &[u8], u64)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => out.push((key >> 3, &b[..0], varint(&mut b))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((key >> 3, &b[..n], 0));
                b = &b[n..];
            }
            t => panic!("wire type {t}"),
        }
    }
    out
}

pub fn one<'a>(f: &[(u64, &'a [u8], u64)], n: u64) -> &'a [u8] {
    f.iter().find(|(k, _, _)| *k == n).map_or(&[], |(_, v, _)| v)
}

/// One quote: TPMS_ATTEST, TPMT_SIGNATURE, the bank of its PCR map, and the map's entries.
pub type Quote = (Vec<u8>, Vec<u8>, HashAlgorithm, Vec<(u32, Vec<u8>)>);

/// The parts of a go-tpm-tools attestation, owned so tests can tamper with them.
#[derive(Clone)]
pub struct Parts {
    pub ak_pub: Vec<u8>,
    pub quotes: Vec<Quote>,
    pub event_log: Vec<u8>,
    pub ak_cert: Vec<u8>,
}

impl Parts {
    pub fn load(pb: &[u8]) -> Self {
        let top = fields(pb);
        let quotes = top
            .iter()
            .filter(|(k, _, _)| *k == 2)
            .map(|(_, q, _)| {
                let q = fields(q);
                let pcrs = fields(one(&q, 3));
                let bank = match pcrs.iter().find(|(k, _, _)| *k == 1).unwrap().2 {
                    4 => HashAlgorithm::Sha1,
                    11 => HashAlgorithm::Sha256,
                    12 => HashAlgorithm::Sha384,
                    h => panic!("bank {h}"),
                };
                let entries = pcrs
                    .iter()
                    .filter(|(k, _, _)| *k == 2)
                    .map(|(_, e, _)| {
                        let kv = fields(e);
                        let index = kv.iter().find(|(k, _, _)| *k == 1).map_or(0, |(_, _, v)| *v as u32);
                        (index, one(&kv, 2).to_vec())
                    })
                    .collect();
                (one(&q, 1).to_vec(), one(&q, 2).to_vec(), bank, entries)
            })
            .collect();
        Self { ak_pub: one(&top, 1).to_vec(), quotes, event_log: one(&top, 3).to_vec(), ak_cert: one(&top, 6).to_vec() }
    }

    pub fn evidence(&self) -> Result<GceEvidence<'_>, Error> {
        let mut ev = GceEvidence::new(&self.ak_pub, &self.event_log);
        if !self.ak_cert.is_empty() {
            ev.set_ak_certificate(&self.ak_cert)?;
        }
        for (attest, sig, bank, pcrs) in &self.quotes {
            let mut q = GceQuote::new(attest, sig, *bank);
            for (i, v) in pcrs {
                q.set_pcr(*i, v)?;
            }
            ev.push_quote(q)?;
        }
        Ok(ev)
    }
}
