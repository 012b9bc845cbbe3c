//! GCE Shielded VM attestations (go-tpm-tools `Attestation`): the real vector from testdata through
//! `gce::GceVerifier`, its documented outcomes, and refusals of tampered copies.
//!
//! The engine does not decode protobuf (attest-proto does, and has its own table test); this test walks
//! the message by hand so that it exercises the engine API alone.

mod common;

use attest_engine::UnixTime;
use attest_engine::crypto::HashAlgorithm;
use attest_engine::error::Error;
use attest_engine::gce::{
    ConfidentialTechnology, ExpectedNonce, GceCheck, GceEvidence, GcePolicy, GceQuote, GceRequest, GceVerifier,
    UnsignedInstanceInfo,
};
use attest_engine::policy::Outcome;

/// One protobuf field: number and payload (varints as their value, little-endian u64 bytes).
fn fields(mut b: &[u8]) -> Vec<(u64, &[u8], u64)> {
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

fn one<'a>(f: &[(u64, &'a [u8], u64)], n: u64) -> &'a [u8] {
    f.iter().find(|(k, _, _)| *k == n).map_or(&[], |(_, v, _)| v)
}

/// One quote: TPMS_ATTEST, TPMT_SIGNATURE, the bank of its PCR map, and the map's entries.
type Quote = (Vec<u8>, Vec<u8>, HashAlgorithm, Vec<(u32, Vec<u8>)>);

/// The parts of a go-tpm-tools attestation, owned so tests can tamper with them.
#[derive(Clone)]
struct Parts {
    ak_pub: Vec<u8>,
    quotes: Vec<Quote>,
    event_log: Vec<u8>,
    ak_cert: Vec<u8>,
}

impl Parts {
    fn load(pb: &[u8]) -> Self {
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

    fn evidence(&self) -> Result<GceEvidence<'_>, Error> {
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

fn time() -> UnixTime {
    UnixTime::parse("2025-06-01T00:00:00Z").unwrap()
}

fn verify(parts: &Parts, nonce: ExpectedNonce<'_>, policy: &GcePolicy) -> Result<String, Error> {
    let ev = parts.evidence()?;
    let ok = GceVerifier::new().verify(&ev, &GceRequest { nonce, time: time() }, policy)?;
    Ok(hex::encode(ok.pcr(HashAlgorithm::Sha256, 0).unwrap()))
}

fn load() -> Option<Parts> {
    let dir = common::testdata()?;
    Some(Parts::load(&common::read(&dir, "go-tpm-tools/gce-cos-85-no-nonce.pb")))
}

#[test]
fn cos85_no_nonce_is_accepted_only_without_a_nonce() {
    let Some(parts) = load() else { return };
    let ev = parts.evidence().unwrap();
    let verifier = GceVerifier::new();
    let req = GceRequest { nonce: ExpectedNonce::DangerousNone, time: time() };
    let ok = verifier.verify(&ev, &req, &GcePolicy::default()).unwrap();

    // The documented facts (testdata README).
    assert_eq!(ok.path_depth(), 3, "AK cert → tpm_ek_intermediate_2 → tpm_ek_root_1");
    let sha256 = |i| hex::encode(ok.pcr(HashAlgorithm::Sha256, i).unwrap());
    assert_eq!(sha256(0), "0f35c214608d93c7a6e68ae7359b4a8be5a0e99eea9107ece427c4dea4e439cf");
    assert_eq!(sha256(4), "d690bdac2aa8b73a1d718cb91990df07d0747b07ea57b3b2d0f0d511f0d90491");
    assert_eq!(sha256(7), "3365d7fa2b024c852913c06e04ffbfa6ea5289f743bbf1a76f7ffdf21ed84793");
    let info = ok.instance();
    assert_eq!(
        (info.zone, info.project_id, info.instance_name),
        ("us-central1-a", "google.com:wuale-gcp-testing", "cos-test")
    );
    assert_eq!(info.instance_id, 0x5E53_E3FB_BF83_06C5);
    assert_eq!(info.security.unwrap().is_production, Some(true));
    let platform = ok.platform().unwrap();
    assert_eq!(platform.gce_firmware_version, Some(1));
    assert_eq!(platform.technology, Some(ConfidentialTechnology::AmdSev));
    // SHA-1 is verified but not used; SHA-256 and SHA-384 replay.
    assert_eq!(ok.banks().collect::<Vec<_>>(), [HashAlgorithm::Sha384, HashAlgorithm::Sha256]);
    assert!(ok.pcr(HashAlgorithm::Sha1, 0).is_none());
    assert!(ok.log_replayed(HashAlgorithm::Sha256) && ok.log_replayed(HashAlgorithm::Sha384));
    assert!(!ok.log_replayed(HashAlgorithm::Sha1));
    let v = ok.verdict();
    assert_eq!(v.outcome(GceCheck::Nonce), Outcome::Waived, "no nonce was asked for");
    assert_eq!(v.outcome(GceCheck::Sha1Banks), Outcome::Passed);
    assert_eq!(v.outcome(GceCheck::EventLogReplay), Outcome::Passed);
    assert_eq!(v.outcome(GceCheck::Project), Outcome::Waived);
    assert!(v.iter().all(|(_, o)| o != Outcome::NotRun));

    // The EAR claims of this verdict.
    let a = attest_engine::ear::Appraisal::from_gce(&ok);
    let issue = attest_engine::ear::Issue {
        verifier: attest_engine::ear::VerifierId { developer: "attest", build: "test" },
        issued_at: time(),
        trusted_time: time(),
        nonce: None,
        policy_id: None,
    };
    let ear = attest_engine::ear::claims(&[a], &issue);
    let sub = &ear["submods"]["gcp-shielded-vm"];
    // No nonce and no reference values: genuine, but nothing approved what runs, nor made it fresh.
    assert_eq!(sub["ear.status"], "warning");
    assert!(sub["ear.trustworthiness-vector"].get("executables").is_none());
    assert!(sub["ear.trustworthiness-vector"].get("instance-identity").is_none());
    assert_eq!(sub["ear.trustworthiness-vector"]["hardware"], 2);
    assert_eq!(sub["ear.trustworthiness-vector"]["runtime-opaque"], 2, "AMD SEV from the verified log");
    assert_eq!(sub["attest.claims"]["instance"]["instance_name"], "cos-test");
    assert_eq!(sub["attest.checks"]["nonce"], "waived");
    assert_eq!(
        sub["attest.claims"]["pcrs"]["sha256"]["0"],
        "0f35c214608d93c7a6e68ae7359b4a8be5a0e99eea9107ece427c4dea4e439cf"
    );

    // Any non-empty nonce fails; an empty "expected" nonce is a caller mistake, not "no nonce".
    for nonce in [&b"x"[..], &[0x90, 0x09], &[0u8; 32]] {
        assert!(matches!(
            verify(&parts, ExpectedNonce::Exactly(nonce), &GcePolicy::default()),
            Err(Error::NonceMismatch { .. })
        ));
    }
    assert!(matches!(verify(&parts, ExpectedNonce::Exactly(&[]), &GcePolicy::default()), Err(Error::Misuse { .. })));
}

#[test]
fn sha1_rules() {
    let Some(parts) = load() else { return };
    // SHA-1 only: refused unless allowed.
    let mut sha1_only = parts.clone();
    sha1_only.quotes.retain(|q| q.2 == HashAlgorithm::Sha1);
    assert_eq!(
        verify(&sha1_only, ExpectedNonce::DangerousNone, &GcePolicy::default()).unwrap_err(),
        Error::Sha1Refused
    );
    let allow = GcePolicy { allow_sha1: true, ..GcePolicy::default() };
    let ev = sha1_only.evidence().unwrap();
    let ok = GceVerifier::new()
        .verify(&ev, &GceRequest { nonce: ExpectedNonce::DangerousNone, time: time() }, &allow)
        .unwrap();
    assert!(ok.log_replayed(HashAlgorithm::Sha1));
    assert_eq!(ok.verdict().outcome(GceCheck::Sha1Banks), Outcome::Waived);
    // Each non-SHA-1 quote alone suffices.
    for bank in [HashAlgorithm::Sha256, HashAlgorithm::Sha384] {
        let mut single = parts.clone();
        single.quotes.retain(|q| q.2 == bank);
        let ev = single.evidence().unwrap();
        let ok = GceVerifier::new()
            .verify(&ev, &GceRequest { nonce: ExpectedNonce::DangerousNone, time: time() }, &GcePolicy::default())
            .unwrap();
        assert_eq!(ok.banks().collect::<Vec<_>>(), [bank]);
    }
}

#[test]
fn policy_and_structure_refusals() {
    let Some(parts) = load() else { return };
    let nonce = ExpectedNonce::DangerousNone;
    // Project allow-list and technology allow-list.
    let p = GcePolicy { allowed_projects: vec!["other".into()], ..GcePolicy::default() };
    assert!(matches!(verify(&parts, nonce, &p), Err(Error::PlatformPolicy { check: "project", .. })));
    let p = GcePolicy { allowed_projects: vec!["google.com:wuale-gcp-testing".into()], ..GcePolicy::default() };
    verify(&parts, nonce, &p).unwrap();
    let p = GcePolicy { allowed_technologies: vec![ConfidentialTechnology::AmdSevSnp], ..GcePolicy::default() };
    assert!(matches!(verify(&parts, nonce, &p), Err(Error::PlatformPolicy { check: "confidential_technology", .. })));
    let p = GcePolicy { allowed_technologies: vec![ConfidentialTechnology::AmdSev], ..GcePolicy::default() };
    verify(&parts, nonce, &p).unwrap();
    // No event log: refused by default, waived on request.
    let mut no_log = parts.clone();
    no_log.event_log.clear();
    assert!(matches!(verify(&no_log, nonce, &GcePolicy::default()), Err(Error::MissingEvidence { .. })));
    verify(&no_log, nonce, &GcePolicy { require_event_log: false, ..GcePolicy::default() }).unwrap();
    // Another GCE log does not replay to these quotes.
    let dir = common::testdata().unwrap();
    let mut other_log = parts.clone();
    other_log.event_log = common::read(&dir, "go-tpm-tools/eventlogs/cos-93-amd-sev.bin");
    assert!(matches!(verify(&other_log, nonce, &GcePolicy::default()), Err(Error::EventLogReplayMismatch { .. })));
    // No AK certificate; a certificate for another key (an intermediate is not the AK's).
    let mut no_cert = parts.clone();
    no_cert.ak_cert.clear();
    assert!(matches!(verify(&no_cert, nonce, &GcePolicy::default()), Err(Error::MissingEvidence { .. })));
    // At a time outside the AK certificate's validity.
    let ev = parts.evidence().unwrap();
    let early = GceRequest { nonce, time: UnixTime::parse("2021-01-01T00:00:00Z").unwrap() };
    assert!(matches!(
        GceVerifier::new().verify(&ev, &early, &GcePolicy::default()),
        Err(Error::CertNotYetValid { .. })
    ));
    // An extra PCR value that the quote does not select; a missing one.
    let mut extra = parts.clone();
    let pcr0 = extra.quotes[1].3.iter().find(|(i, _)| *i == 0).unwrap().1.clone();
    extra.quotes[1].3.retain(|(i, _)| *i != 0);
    assert!(matches!(verify(&extra, nonce, &GcePolicy::default()), Err(Error::Tpm { .. })));
    extra.quotes[1].3.push((0, pcr0));
    verify(&extra, nonce, &GcePolicy::default()).unwrap();
    // A quote's PCR map declared in another bank than the quote selects.
    let mut wrong_bank = parts.clone();
    wrong_bank.quotes.retain(|q| q.2 == HashAlgorithm::Sha384);
    wrong_bank.quotes[0].2 = HashAlgorithm::Sha256;
    assert!(verify(&wrong_bank, nonce, &GcePolicy::default()).is_err());
    // Two quotes of the same bank.
    let mut twice = parts.clone();
    twice.quotes.push(twice.quotes[1].clone());
    assert!(verify(&twice, nonce, &GcePolicy::default()).is_err());
    // The attester's unsigned instance info must match the certificate's.
    let ev0 = parts.evidence().unwrap();
    let mut ev = ev0.clone();
    ev.set_unsigned_instance_info(UnsignedInstanceInfo {
        zone: "us-central1-a",
        project_id: "google.com:wuale-gcp-testing",
        project_number: 0x1B_5A47_5C69,
        instance_name: "cos-test",
        instance_id: 0x5E53_E3FB_BF83_06C5,
    });
    let req = GceRequest { nonce, time: time() };
    GceVerifier::new().verify(&ev, &req, &GcePolicy::default()).unwrap();
    let mut ev = ev0.clone();
    ev.set_unsigned_instance_info(UnsignedInstanceInfo { zone: "europe-west4-a", ..UnsignedInstanceInfo::default() });
    assert!(matches!(GceVerifier::new().verify(&ev, &req, &GcePolicy::default()), Err(Error::GceInstanceInfo { .. })));
    // A verifier with other roots refuses Google's AK certificate.
    let gcp_root = common::certs(&dir, "go-tpm-tools/ca-certs/gcp_ek_ak_ca_root.crt");
    let other = GceVerifier::with_trust_anchors(attest_engine::crypto::default_provider(), gcp_root, vec![]);
    assert!(matches!(other.verify(&ev0, &req, &GcePolicy::default()), Err(Error::UnknownIssuer { .. })));
}

#[test]
fn every_signed_bit_matters() {
    let Some(parts) = load() else { return };
    let nonce = ExpectedNonce::DangerousNone;
    let policy = GcePolicy { allow_sha1: true, ..GcePolicy::default() };
    verify(&parts, nonce, &policy).unwrap();
    // Every bit of every quote's TPMS_ATTEST and TPMT_SIGNATURE (SHA-1 quotes are verified too).
    for q in 0..parts.quotes.len() {
        for part in 0..2 {
            let len = if part == 0 { parts.quotes[q].0.len() } else { parts.quotes[q].1.len() };
            for bit in 0..len * 8 {
                let mut t = parts.clone();
                let bytes = if part == 0 { &mut t.quotes[q].0 } else { &mut t.quotes[q].1 };
                bytes[bit / 8] ^= 1 << (bit % 8);
                assert!(verify(&t, nonce, &GcePolicy::default()).is_err(), "quote {q} part {part} bit {bit}");
            }
        }
    }
    // Every bit of the AK's TPMT_PUBLIC.
    for bit in 0..parts.ak_pub.len() * 8 {
        let mut t = parts.clone();
        t.ak_pub[bit / 8] ^= 1 << (bit % 8);
        assert!(verify(&t, nonce, &policy).is_err(), "ak_pub bit {bit}");
    }
    // Every byte of the AK certificate (one bit per byte: the RSA path check per flip is the cost).
    for byte in 0..parts.ak_cert.len() {
        let mut t = parts.clone();
        t.ak_cert[byte] ^= 1 << (byte % 8);
        assert!(verify(&t, nonce, &policy).is_err(), "ak_cert byte {byte}");
    }
    // Every PCR value of every bank.
    for q in 0..parts.quotes.len() {
        for e in 0..parts.quotes[q].3.len() {
            let mut t = parts.clone();
            t.quotes[q].3[e].1[0] ^= 1;
            assert!(verify(&t, nonce, &policy).is_err(), "quote {q} pcr entry {e}");
        }
    }
    // Event log: a flipped digest or data byte in every event changes a replay or breaks the log.
    let log = attest_engine::tpm::eventlog::EventLog::parse(&parts.event_log).unwrap();
    let offsets: Vec<(usize, bool)> = log
        .events()
        .map(|e| (e.offset(), e.event_type() == attest_engine::tpm::eventlog::EventType::EV_NO_ACTION))
        .collect();
    for (offset, no_action) in offsets {
        // The first digest byte of a TCG_PCR_EVENT2 (pcrIndex, eventType, count, hashAlg = 14 bytes).
        let mut t = parts.clone();
        let at = offset + if offset == 0 { 8 } else { 14 };
        t.event_log[at] ^= 1;
        let r = verify(&t, nonce, &policy);
        if !no_action {
            assert!(r.is_err(), "event at {offset}");
        }
    }
}
