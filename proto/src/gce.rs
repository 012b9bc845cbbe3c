//! go-tpm-tools' `Attestation` ([`Attestation`], GCE Shielded VM / Confidential VM evidence) → the engine's
//! borrowed [`GceEvidence`].
//!
//! ```no_run
//! # fn main() -> Result<(), attest_engine::Error> {
//! use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerifier};
//! # let (bytes, nonce) = (&[][..], &b"n"[..]);
//! let attestation = attest_proto::gce::decode(bytes)?;
//! let evidence = attest_proto::gce::evidence(&attestation)?;
//! let req = GceRequest { nonce: ExpectedNonce::Exactly(nonce), time: attest_engine::UnixTime::parse("2025-06-01").unwrap() };
//! let verified = GceVerifier::new().verify(&evidence, &req, &GcePolicy::default())?;
//! println!("{} in {}", verified.instance().instance_name, verified.instance().project_id);
//! # Ok(()) }
//! ```
//!
//! The protobuf is decoded by prost into owned buffers; the view borrows them, and the engine verifies
//! the bytes exactly as received (TPMS_ATTEST, TPMT_SIGNATURE and the certificates are never re-encoded).
//! Errors are the engine's ([`Error::EvidenceFormat`], [`Error::LimitExceeded`], …), so the CLI and the C
//! library report GCE evidence like any other.

#![warn(missing_docs, unreachable_pub)] // the crate allows them for the generated code only

use attest_engine::Error;
use attest_engine::crypto::HashAlgorithm;
use attest_engine::gce::{GceEvidence, GceQuote, TeeAttestationKind, UnsignedInstanceInfo};
use prost::Message as _;

pub use crate::gotpm::v1::Attestation;
use crate::gotpm::v1::attestation::TeeAttestation;

/// Largest encoded `Attestation` accepted: the event log's limit (1 MiB, `MAX_LOG_SIZE`) plus room for
/// the quotes, certificates and a TEE attestation. Real ones are 30–60 KiB.
pub const MAX_ATTESTATION_SIZE: usize = 2 * 1024 * 1024;

const FORMAT: &str = "go-tpm-tools Attestation";

/// Decodes an encoded `Attestation` (at most [`MAX_ATTESTATION_SIZE`] bytes).
pub fn decode(bytes: &[u8]) -> Result<Attestation, Error> {
    if bytes.len() > MAX_ATTESTATION_SIZE {
        return Err(Error::LimitExceeded { what: FORMAT, limit: MAX_ATTESTATION_SIZE, found: bytes.len() });
    }
    Attestation::decode(bytes)
        .map_err(|_| Error::EvidenceFormat { format: FORMAT, reason: "not a valid protobuf message" })
}

/// The engine's view of `att`. Fails on unknown PCR banks, PCR indices above 23, values of the wrong
/// length, and more quotes or intermediates than the engine's limits.
pub fn evidence(att: &Attestation) -> Result<GceEvidence<'_>, Error> {
    let mut ev = GceEvidence::new(&att.ak_pub, &att.event_log);
    if !att.ak_cert.is_empty() {
        ev.set_ak_certificate(&att.ak_cert)?;
    }
    for der in &att.intermediate_certs {
        ev.push_intermediate(der)?;
    }
    for q in &att.quotes {
        let pcrs =
            q.pcrs.as_ref().ok_or(Error::EvidenceFormat { format: FORMAT, reason: "a quote without PCR values" })?;
        let bank = u16::try_from(pcrs.hash)
            .ok()
            .and_then(|id| attest_engine::tpm::alg::hash_from_tpm(id, "PCR bank").ok())
            .ok_or(Error::EvidenceFormat { format: FORMAT, reason: "unknown PCR bank (Pcrs.hash)" })?;
        let mut quote = GceQuote::new(&q.quote, &q.raw_sig, bank);
        // A protobuf map has unique keys after decoding (the last duplicate wins, as the encoding rules say).
        for (index, value) in &pcrs.pcrs {
            quote.set_pcr(*index, value)?;
        }
        ev.push_quote(quote)?;
    }
    if let Some(info) = &att.instance_info {
        ev.set_unsigned_instance_info(UnsignedInstanceInfo {
            zone: &info.zone,
            project_id: &info.project_id,
            project_number: info.project_number,
            instance_name: &info.instance_name,
            instance_id: info.instance_id,
        });
    }
    ev.set_canonical_event_log(&att.canonical_event_log);
    match &att.tee_attestation {
        Some(TeeAttestation::SevSnpAttestation(_)) => ev.set_tee_attestation(TeeAttestationKind::SevSnp),
        Some(TeeAttestation::TdxAttestation(_)) => ev.set_tee_attestation(TeeAttestationKind::Tdx),
        None => {}
    }
    Ok(ev)
}

/// The bank of a decoded `Pcrs.hash`, for callers that print evidence.
pub fn bank(hash: i32) -> Option<HashAlgorithm> {
    u16::try_from(hash).ok().and_then(|id| attest_engine::tpm::alg::hash_from_tpm(id, "PCR bank").ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gotpm::v1::{Pcrs, Quote};

    #[test]
    fn field_numbers_are_go_tpm_tools_wire_contract() {
        let a = Attestation { ak_cert: vec![1], ..Default::default() };
        assert_eq!(a.encode_to_vec()[0], (6 << 3) | 2);
        let a = Attestation { intermediate_certs: vec![vec![1]], ..Default::default() };
        assert_eq!(a.encode_to_vec()[0], (7 << 3) | 2);
        let a = Attestation { tee_attestation: Some(TeeAttestation::TdxAttestation(vec![])), ..Default::default() };
        assert_eq!(a.encode_to_vec()[0], (9 << 3) | 2);
        let q = Quote { raw_sig: vec![1], ..Default::default() };
        assert_eq!(q.encode_to_vec()[0], (2 << 3) | 2);
        let p = Pcrs { hash: 11, ..Default::default() };
        assert_eq!(p.encode_to_vec(), vec![1 << 3, 11]);
    }

    #[test]
    fn view_refuses_what_the_engine_refuses() {
        let quote = |hash, pcrs: Vec<(u32, Vec<u8>)>| Quote {
            quote: vec![],
            raw_sig: vec![],
            pcrs: Some(Pcrs { hash, pcrs: pcrs.into_iter().collect() }),
        };
        let att = |quotes| Attestation { quotes, ..Default::default() };
        assert!(evidence(&att(vec![quote(11, vec![(0, vec![0; 32])])])).is_ok());
        assert!(evidence(&att(vec![quote(99, vec![])])).is_err(), "unknown bank");
        assert!(evidence(&att(vec![quote(-1, vec![])])).is_err(), "negative enum");
        assert!(evidence(&att(vec![quote(11, vec![(24, vec![0; 32])])])).is_err(), "PCR 24");
        assert!(evidence(&att(vec![quote(11, vec![(0, vec![0; 20])])])).is_err(), "wrong length");
        assert!(evidence(&att(vec![Quote::default()])).is_err(), "no PCRs");
        assert!(evidence(&att(vec![quote(11, vec![]); 5])).is_err(), "too many quotes");
        let many = Attestation { intermediate_certs: vec![vec![0x30]; 5], ..Default::default() };
        assert!(evidence(&many).is_err(), "too many intermediates");
        assert!(decode(&vec![0; MAX_ATTESTATION_SIZE + 1]).is_err());
        assert!(decode(&[0xFF]).is_err());
    }
}
