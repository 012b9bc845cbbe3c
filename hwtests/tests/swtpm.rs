//! The swtpm suite (runs in CI): the full `qemu-vtpm` loop against a real TPM 2.0 implementation —
//! EK certificate → AK registration by credential activation → quote → engine validation — plus tampering,
//! PCR policy, PCR extension, and a cross-check of every accepted quote with `tpm2_checkquote`.
//!
//! Each test starts its own swtpm from the binary's manufactured template (see `attest_hwtests`), so the
//! tests run in parallel and no test sees another's PCR extensions.

use attest_attester::issuer::{QemuVtpmIssuer, document, pcr_values};
use attest_attester::tpm::{AkAlgorithm, AkConfig, AkStorage, DEFAULT_AK_HANDLE, Error, PcrMask, Tpm};
use attest_engine::Error as EngineError;
use attest_engine::crypto::HashAlgorithm;
use attest_engine::tpm::Attest;
use attest_engine::variant::{AkBasis, AkRegistry, PcrExpectation, PcrOutcome, PcrPolicy, StaticAkRegistry, Validated};
use attest_hwtests::Swtpm;
use attest_hwtests::support::{ak_pem, foreign_ca_pem, now, random32, validator};
use attest_proto::attest::v1::AttestationDocument;
use attest_registration::{AkRegistrar, EkCaBundle, FileAkRegistry, ak_digest, make_credential};
use prost::Message;
use std::sync::Arc;

const USER_DATA: &[u8] = b"sha256-of-the-aTLS-certificate-spki";
const INSTANCE_INFO: &[u8] = b"{\"instance\":\"node-0\"}";

#[track_caller]
fn start() -> (Swtpm, Tpm) {
    let sw = Swtpm::start().expect("start swtpm");
    let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
    (sw, tpm)
}

fn ecc_ak() -> AkConfig {
    AkConfig { algorithm: AkAlgorithm::EccP256, storage: AkStorage::Persistent(DEFAULT_AK_HANDLE + 1) }
}

/// What the engine decided: the AK basis, each expected PCR's outcome, and how many SHA-256 PCRs were quoted.
type Decision = (AkBasis, Vec<(u8, PcrOutcome)>, usize);

/// Validates `doc` (after a protobuf round trip) for `nonce`.
fn validate(
    v: &attest_engine::variant::Validator,
    doc: &AttestationDocument,
    nonce: &[u8],
) -> Result<Decision, EngineError> {
    let doc = AttestationDocument::decode(doc.encode_to_vec().as_slice()).expect("protobuf round trip");
    let pcrs = pcr_values(&doc).expect("PCR values");
    let view = document(&doc, &pcrs);
    let ok: Validated<'_> = v.validate(&view, nonce, now())?;
    let quote = ok.quote.as_ref().expect("qemu-vtpm documents carry a vTPM quote");
    let quoted = (0..24).filter(|i| quote.pcr(HashAlgorithm::Sha256, *i).is_some()).count();
    Ok((ok.ak_basis.expect("qemu-vtpm documents carry an AK"), ok.pcrs, quoted))
}

fn pinned(ak_public: &[u8]) -> Arc<dyn AkRegistry> {
    Arc::new(StaticAkRegistry(vec![(ak_digest(ak_public).unwrap(), AkBasis::Pinned)]))
}

fn pcr(doc: &AttestationDocument, index: u32) -> [u8; 32] {
    let p = doc.tpm.as_ref().unwrap().pcrs.iter().find(|p| p.index == index).expect("PCR presented");
    p.value.as_slice().try_into().unwrap()
}

#[test]
fn registers_ak_by_credential_activation_then_accepts_its_quotes() {
    let (sw, mut tpm) = start();
    let ek_cert = tpm.ek_certificate().unwrap();
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();

    // Verifier: EK certificate → credential for the AK's Name.
    let registry = Arc::new(FileAkRegistry::open(sw.dir().join("aks.json")).unwrap());
    let registrar = AkRegistrar::new(EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap(), &registry);
    let (challenge, pending) = registrar.challenge(&ek_cert, issuer.attestation_key().tpm2b_public()).unwrap();
    // Attester: only this TPM can recover the secret.
    let secret = issuer.with_tpm(|tpm, ak| tpm.activate_credential(ak, &challenge)).unwrap();
    let digest = registrar.complete(pending, &secret).unwrap();
    assert_eq!(digest, ak_digest(issuer.attestation_key().tpm2b_public()).unwrap());
    let on_disk = std::fs::read_to_string(registry.path()).unwrap();
    assert!(on_disk.contains(&hex::encode(digest)) && on_disk.contains("credential-activation"), "{on_disk}");

    let v = validator(registry.clone(), PcrPolicy::default());
    let nonce = random32();
    let doc = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    assert_eq!(doc.variant, "qemu-vtpm");
    assert_eq!(doc.tpm.as_ref().unwrap().pcrs.len(), 24);
    let (basis, _, quoted) = validate(&v, &doc, &nonce).unwrap();
    assert_eq!(basis, AkBasis::CredentialActivation);
    assert_eq!(quoted, 24);

    // A verifier that reloads the registry from disk agrees; one with an empty registry does not.
    let reloaded = Arc::new(FileAkRegistry::open(registry.path()).unwrap());
    assert_eq!(
        validate(&validator(reloaded, PcrPolicy::default()), &doc, &nonce).unwrap().0,
        AkBasis::CredentialActivation
    );
    let empty = Arc::new(StaticAkRegistry::default());
    assert!(matches!(
        validate(&validator(empty, PcrPolicy::default()), &doc, &nonce),
        Err(EngineError::AkNotTrusted { .. })
    ));

    // The quote's extraData is the engine's freshness rule, exactly.
    let attest = Attest::parse(&doc.tpm.as_ref().unwrap().quote_attest).unwrap();
    let want = attest_engine::variant::Validator::quote_nonce(
        attest_engine::crypto::default_provider(),
        INSTANCE_INFO,
        USER_DATA,
        &nonce,
    );
    assert_eq!(attest.extra_data(), want);
    drop(issuer);
}

#[test]
fn tampered_documents_are_rejected_with_the_right_error() {
    let (_sw, tpm) = start();
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let v = validator(pinned(issuer.attestation_key().tpm2b_public()), PcrPolicy::default());
    let nonce = random32();
    let doc = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    assert_eq!(validate(&v, &doc, &nonce).unwrap().0, AkBasis::Pinned);

    // Wrong nonce, and a replayed quote offered for a new challenge.
    assert!(matches!(validate(&v, &doc, &random32()), Err(EngineError::NonceMismatch { .. })));
    let next_nonce = random32();
    assert!(matches!(validate(&v, &doc, &next_nonce), Err(EngineError::NonceMismatch { .. })));
    let fresh = issuer.issue(&next_nonce, USER_DATA, INSTANCE_INFO).unwrap();
    assert!(validate(&v, &fresh, &next_nonce).is_ok());

    // User data and instance info are bound too.
    let mut d = doc.clone();
    d.user_data = b"another certificate".to_vec();
    assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::NonceMismatch { .. })));
    let mut d = doc.clone();
    d.instance_info.push(b' ');
    assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::NonceMismatch { .. })));

    // An altered PCR value no longer hashes to the quoted pcrDigest.
    for index in [0usize, 7, 15, 23] {
        let mut d = doc.clone();
        d.tpm.as_mut().unwrap().pcrs[index].value[0] ^= 1;
        assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::PcrDigestMismatch { .. })), "PCR {index}");
    }
    // A missing PCR value.
    let mut d = doc.clone();
    d.tpm.as_mut().unwrap().pcrs.remove(4);
    assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::PcrValueMissing { pcr: 4, .. })));

    // Any flipped bit of the signed TPMS_ATTEST breaks the signature (sample every 7th bit).
    let attest_len = doc.tpm.as_ref().unwrap().quote_attest.len();
    for bit in (0..attest_len * 8).step_by(7) {
        let mut d = doc.clone();
        d.tpm.as_mut().unwrap().quote_attest[bit / 8] ^= 1 << (bit % 8);
        assert!(validate(&v, &d, &nonce).is_err(), "bit {bit} of TPMS_ATTEST");
    }
    let mut d = doc.clone();
    let sig = &mut d.tpm.as_mut().unwrap().quote_signature;
    let last = sig.len() - 1;
    sig[last] ^= 0x80;
    assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::QuoteSignatureInvalid)));

    // Another variant name.
    let mut d = doc.clone();
    d.variant = "gcp-sev-snp".into();
    assert!(matches!(validate(&v, &d, &nonce), Err(EngineError::VariantMismatch { .. })));
}

#[test]
fn other_aks_are_refused() {
    let (_sw, tpm) = start();
    let rsa = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let rsa_public = rsa.attestation_key().tpm2b_public().to_vec();
    let nonce = random32();
    let rsa_doc = rsa.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();

    // A second (ECC P-256) AK on the same TPM: its quotes verify when it is trusted, not otherwise.
    let ecc = QemuVtpmIssuer::new(rsa.into_tpm(), ecc_ak()).unwrap();
    let ecc_doc = ecc.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    assert_eq!(
        validate(&validator(pinned(ecc.attestation_key().tpm2b_public()), PcrPolicy::default()), &ecc_doc, &nonce)
            .unwrap()
            .0,
        AkBasis::Pinned
    );
    let only_rsa = validator(pinned(&rsa_public), PcrPolicy::default());
    assert!(matches!(validate(&only_rsa, &ecc_doc, &nonce), Err(EngineError::AkNotTrusted { .. })));

    // An AK from another TPM (its own endorsement seed, so a different RSA primary), trusted by the
    // verifier, cannot vouch for this TPM's quote.
    let other_sw = Swtpm::start_unique().unwrap();
    let mut other_tpm = Tpm::open(&other_sw.tcti()).unwrap();
    let other_ak = other_tpm.attestation_key(AkConfig::default()).unwrap();
    assert_ne!(other_ak.tpm2b_public(), &rsa_public[..]);
    let trusts_other = validator(pinned(other_ak.tpm2b_public()), PcrPolicy::default());
    let mut swapped = rsa_doc.clone();
    swapped.tpm.as_mut().unwrap().ak_public = other_ak.tpm2b_public().to_vec();
    assert!(matches!(validate(&trusts_other, &swapped, &nonce), Err(EngineError::QuoteSignatureInvalid)));
    assert!(matches!(validate(&trusts_other, &rsa_doc, &nonce), Err(EngineError::AkNotTrusted { .. })));

    // And the other TPM cannot activate a credential made for this TPM's EK.
    let mut tpm = ecc.into_tpm();
    let ek = tpm.ek_public().unwrap().to_pkey().unwrap();
    let rsa_ak = tpm.attestation_key(AkConfig::default()).unwrap();
    let challenge = make_credential(&ek, rsa_ak.name(), &[5u8; 32]).unwrap();
    assert!(matches!(other_tpm.activate_credential(&other_ak, &challenge), Err(Error::CredentialMismatch)));
    assert_eq!(*tpm.activate_credential(&rsa_ak, &challenge).unwrap(), [5u8; 32]);
    drop(other_tpm);
}

#[test]
fn pcr_policy_mismatch_rejects_unless_warn_only() {
    let (_sw, tpm) = start();
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let registry = pinned(issuer.attestation_key().tpm2b_public());
    let nonce = random32();
    let doc = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();

    let expect = |index: u8, expected: [u8; 32], warn_only: bool| PcrExpectation { index, expected, warn_only };
    let matching = PcrPolicy { entries: vec![expect(0, pcr(&doc, 0), false), expect(15, pcr(&doc, 15), false)] };
    let (_, outcomes, _) = validate(&validator(registry.clone(), matching), &doc, &nonce).unwrap();
    assert_eq!(outcomes, vec![(0, PcrOutcome::Match), (15, PcrOutcome::Match)]);

    let wrong = PcrPolicy { entries: vec![expect(0, pcr(&doc, 0), false), expect(15, [0xAA; 32], false)] };
    assert!(matches!(
        validate(&validator(registry.clone(), wrong), &doc, &nonce),
        Err(EngineError::PcrMismatch { pcr: 15, .. })
    ));

    let warn = PcrPolicy { entries: vec![expect(0, pcr(&doc, 0), false), expect(15, [0xAA; 32], true)] };
    let (_, outcomes, _) = validate(&validator(registry, warn), &doc, &nonce).unwrap();
    assert_eq!(outcomes, vec![(0, PcrOutcome::Match), (15, PcrOutcome::MismatchWarnOnly)]);
}

#[test]
fn extending_pcr_15_changes_the_quoted_value() {
    let (_sw, tpm) = start();
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let registry = pinned(issuer.attestation_key().tpm2b_public());
    let nonce = random32();
    let before = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    let pcr15 = pcr(&before, 15);
    assert_eq!(pcr15, [0u8; 32], "a fresh TPM's PCR 15 is zero");

    let cluster_id = openssl::sha::sha256(b"cluster id");
    issuer.with_tpm(|tpm, _| tpm.extend_pcr(15, &cluster_id)).unwrap();
    let after = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    let mut chain = pcr15.to_vec();
    chain.extend_from_slice(&cluster_id);
    let expected = openssl::sha::sha256(&chain);
    assert_eq!(pcr(&after, 15), expected, "PCR 15 = SHA-256(old ‖ digest)");
    for i in (0..24).filter(|i| *i != 15) {
        assert_eq!(pcr(&after, i), pcr(&before, i), "PCR {i} unchanged");
    }

    let expects = |value| PcrPolicy { entries: vec![PcrExpectation { index: 15, expected: value, warn_only: false }] };
    assert!(validate(&validator(registry.clone(), expects(expected)), &after, &nonce).is_ok());
    assert!(matches!(
        validate(&validator(registry.clone(), expects(pcr15)), &after, &nonce),
        Err(EngineError::PcrMismatch { pcr: 15, .. })
    ));
    // The old document still shows the old value: it is a different quote.
    assert!(validate(&validator(registry, expects(pcr15)), &before, &nonce).is_ok());
    assert!(issuer.with_tpm(|tpm, _| tpm.extend_pcr(24, &cluster_id)).is_err());
}

#[test]
fn credential_activation_round_trips_and_binds_the_ak_name() {
    let (_sw, mut tpm) = start();
    let ek_cert = tpm.ek_certificate().unwrap();
    let ca = EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap();
    let ek_from_cert = ca.verify(&ek_cert, &[]).unwrap();
    let ek = tpm.ek_public().unwrap();
    // The certified key is the EK the template re-creates.
    assert_eq!(ek_from_cert.rsa().unwrap().n().to_vec(), ek.modulus);
    assert_eq!(ek.exponent, 65_537);
    assert_eq!(ek.name.len(), 34);

    let ak = tpm.attestation_key(AkConfig::default()).unwrap();
    let ecc = tpm.attestation_key(ecc_ak()).unwrap();
    let secret = random32();

    // Software make_credential (from the certificate's key, and from the TPM's EK modulus) → TPM activation.
    let c = make_credential(&ek_from_cert, ak.name(), &secret).unwrap();
    assert_eq!(*tpm.activate_credential(&ak, &c).unwrap(), secret);
    let c2 = make_credential(&ek.to_pkey().unwrap(), ak.name(), b"short").unwrap();
    assert_eq!(&*tpm.activate_credential(&ak, &c2).unwrap(), b"short");

    // A credential for another Name cannot be activated with this AK (and vice versa).
    let for_ecc = make_credential(&ek_from_cert, ecc.name(), &secret).unwrap();
    assert!(matches!(tpm.activate_credential(&ak, &for_ecc), Err(Error::CredentialMismatch)));
    assert_eq!(*tpm.activate_credential(&ecc, &for_ecc).unwrap(), secret);
    let mut made_up = ak.name().to_vec();
    made_up[33] ^= 1;
    let c3 = make_credential(&ek_from_cert, &made_up, &secret).unwrap();
    assert!(matches!(tpm.activate_credential(&ak, &c3), Err(Error::CredentialMismatch)));

    // Tampering with the blob or the encrypted seed fails the TPM's integrity check.
    let mut bad = c.clone();
    bad.credential_blob[10] ^= 1;
    assert!(matches!(tpm.activate_credential(&ak, &bad), Err(Error::CredentialMismatch)));
    let mut bad = c.clone();
    bad.encrypted_secret[100] ^= 1;
    assert!(matches!(tpm.activate_credential(&ak, &bad), Err(Error::CredentialMismatch)));

    // Every failure above flushed its EK and policy session (a leak would exhaust the three object slots).
    assert_eq!(tpm.loaded_handle_count().unwrap(), 0);
    for _ in 0..5 {
        assert_eq!(*tpm.activate_credential(&ak, &c).unwrap(), secret);
    }
    assert_eq!(tpm.loaded_handle_count().unwrap(), 0);
}

#[test]
fn registration_refuses_wrong_secrets_foreign_cas_and_non_aks() {
    let (sw, mut tpm) = start();
    let ek_cert = tpm.ek_certificate().unwrap();
    let ak = tpm.attestation_key(AkConfig::default()).unwrap();
    let registry = FileAkRegistry::open(sw.dir().join("aks.json")).unwrap();
    let registrar = AkRegistrar::new(EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap(), &registry);

    // A wrong answer records nothing.
    let (_, pending) = registrar.challenge(&ek_cert, ak.tpm2b_public()).unwrap();
    assert!(matches!(registrar.complete(pending, &[0u8; 32]), Err(Error::CredentialMismatch)));
    let (_, pending) = registrar.challenge(&ek_cert, ak.tpm2b_public()).unwrap();
    assert!(matches!(registrar.complete(pending, &[0u8; 5]), Err(Error::CredentialMismatch)));
    assert!(registry.entries().is_empty());

    // An EK certificate from a CA we do not trust.
    let foreign = foreign_ca_pem();
    let other = AkRegistrar::new(EkCaBundle::from_pem(&foreign).unwrap(), &registry);
    assert!(matches!(other.challenge(&ek_cert, ak.tpm2b_public()), Err(Error::EkCertificate { .. })));
    // Only the root is not enough (the intermediate is missing) unless the attester sends it.
    let root_only = EkCaBundle::from_files(&[Swtpm::ca_dir().unwrap().join("swtpm-localca-rootca-cert.pem")]).unwrap();
    assert!(matches!(root_only.verify(&ek_cert, &[]), Err(Error::EkCertificate { .. })));
    let issuer_pem = std::fs::read(Swtpm::ca_dir().unwrap().join("issuercert.pem")).unwrap();
    let issuer_der = openssl::x509::X509::from_pem(&issuer_pem).unwrap().to_der().unwrap();
    assert!(root_only.verify(&ek_cert, &[&issuer_der]).is_ok());
    // Truncated or padded certificates.
    assert!(registrar.challenge(&ek_cert[..ek_cert.len() - 1], ak.tpm2b_public()).is_err());
    let mut padded = ek_cert.clone();
    padded.push(0);
    assert!(registrar.challenge(&padded, ak.tpm2b_public()).is_err());

    // The EK's own public area is not an attestation key (restricted *decrypt*).
    let ek = tpm.ek_public().unwrap();
    assert!(matches!(registrar.challenge(&ek_cert, &ek.tpm2b_public), Err(Error::Engine(_))));
}

#[test]
fn trust_on_first_use_records_only_validated_aks() {
    let (sw, tpm) = start();
    let path = sw.dir().join("tofu.json");
    let registry = Arc::new(FileAkRegistry::open(&path).unwrap().with_trust_on_first_use(true));
    let v = validator(registry.clone(), PcrPolicy::default());
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let nonce = random32();
    let doc = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();

    // A document that fails (wrong nonce) pins nothing.
    let wrong = random32();
    let pcrs = pcr_values(&doc).unwrap();
    assert!(registry.validate(&v, &document(&doc, &pcrs), &wrong, now()).is_err());
    assert!(registry.entries().is_empty());
    // The first valid one pins its AK.
    let ok = registry.validate(&v, &document(&doc, &pcrs), &nonce, now()).unwrap();
    assert_eq!(ok.ak_basis, Some(AkBasis::TrustOnFirstUse));
    let digest = ak_digest(issuer.attestation_key().tpm2b_public()).unwrap();
    assert_eq!(registry.entries(), vec![(digest, AkBasis::TrustOnFirstUse)]);

    // With TOFU off (the default), the pinned AK is still known and an unknown one is refused.
    let strict = Arc::new(FileAkRegistry::open(&path).unwrap());
    assert_eq!(strict.lookup(&digest), Some(AkBasis::TrustOnFirstUse));
    let ecc = QemuVtpmIssuer::new(issuer.into_tpm(), ecc_ak()).unwrap();
    let ecc_doc = ecc.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    assert!(matches!(
        validate(&validator(strict.clone(), PcrPolicy::default()), &ecc_doc, &nonce),
        Err(EngineError::AkNotTrusted { .. })
    ));
    assert_eq!(validate(&validator(strict, PcrPolicy::default()), &doc, &nonce).unwrap().0, AkBasis::TrustOnFirstUse);
}

#[test]
fn the_ak_persists_and_is_deterministic() {
    let (sw, mut tpm) = start();
    assert!(!tpm.persistent_exists(DEFAULT_AK_HANDLE).unwrap());
    let ak = tpm.attestation_key(AkConfig::default()).unwrap();
    assert!(tpm.persistent_exists(DEFAULT_AK_HANDLE).unwrap());
    drop(tpm);

    // A new connection finds the same AK at its handle; re-creating it from the template gives the same key.
    let mut tpm = Tpm::open(&sw.tcti()).unwrap();
    assert_eq!(tpm.attestation_key(AkConfig::default()).unwrap(), ak);
    let transient = tpm.attestation_key(AkConfig { storage: AkStorage::Transient, ..AkConfig::default() }).unwrap();
    assert_eq!(transient.tpm2b_public(), ak.tpm2b_public());
    assert_eq!(transient.name(), ak.name());
    // A transient AK quotes too (created and flushed per quote).
    let q = tpm.quote(&transient, PcrMask::from_indices(&[0, 1]).unwrap(), &[1; 32]).unwrap();
    assert_eq!(Attest::parse(&q.attest).unwrap().extra_data(), [1; 32]);
    assert_eq!(tpm.loaded_handle_count().unwrap(), 0);

    // The ECC template is refused at the RSA AK's handle rather than overwriting it.
    let clash = AkConfig { algorithm: AkAlgorithm::EccP256, storage: AkStorage::Persistent(DEFAULT_AK_HANDLE) };
    assert!(matches!(tpm.attestation_key(clash), Err(Error::PersistentHandleOccupied { .. })));
    tpm.evict_attestation_key(DEFAULT_AK_HANDLE).unwrap();
    assert!(!tpm.persistent_exists(DEFAULT_AK_HANDLE).unwrap());
    tpm.evict_attestation_key(DEFAULT_AK_HANDLE).unwrap();
}

#[test]
fn pcr_reads_come_in_chunks_and_agree_with_the_quote() {
    let (_sw, mut tpm) = start();
    let all = tpm.read_pcrs(PcrMask::ALL).unwrap();
    assert!(all.0.iter().all(Option::is_some), "all 24 SHA-256 PCRs read across several TPM2_PCR_Read calls");
    let some = tpm.read_pcrs(PcrMask::from_indices(&[23, 1, 15]).unwrap()).unwrap();
    assert_eq!(some.0.iter().filter(|v| v.is_some()).count(), 3);
    assert_eq!(some.get(23), all.get(23));
    // PC Client: PCRs 17..=22 reset to all-ones (locality), the others to zero.
    assert_eq!(all.get(17), Some(&[0xFF; 32]));
    assert_eq!(all.get(0), Some(&[0; 32]));
    assert!(tpm.read_pcrs(PcrMask::from_indices(&[]).unwrap()).unwrap().0.iter().all(Option::is_none));
}

/// The PCR file `tpm2_quote -o` writes and `tpm2_checkquote -f` reads (tpm2-tools 5.4): raw little-endian
/// C structs — TPML_PCR_SELECTION (count u32, 16 × TPMS_PCR_SELECTION padded to 8 bytes), a u32 number of
/// TPML_DIGESTs, then each TPML_DIGEST (count u32, 8 × TPM2B_DIGEST {size u16, buffer[64]}).
///
/// (The selection-less form, raw values plus `-l sha256:0,…,23`, fails in tpm2-tools 5.4 with "Failed to hash
/// PCR values related to quote" for more than eight PCRs — measured — so the serialized form is used.)
fn tpm2_tools_pcr_file(pcrs: &[attest_proto::attest::v1::PcrValue]) -> Vec<u8> {
    let mut bits = 0u32;
    for p in pcrs {
        bits |= 1 << p.index;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&0x000Bu16.to_le_bytes());
    out.push(3);
    out.extend_from_slice(&bits.to_le_bytes());
    out.push(0);
    out.resize(4 + 16 * 8, 0);
    let chunks: Vec<_> = pcrs.chunks(8).collect();
    out.extend_from_slice(&(chunks.len() as u32).to_le_bytes());
    for chunk in chunks {
        out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        for i in 0..8 {
            let mut digest = [0u8; 66];
            if let Some(p) = chunk.get(i) {
                digest[..2].copy_from_slice(&(p.value.len() as u16).to_le_bytes());
                digest[2..2 + p.value.len()].copy_from_slice(&p.value);
            }
            out.extend_from_slice(&digest);
        }
    }
    out
}

/// Writes the quote, signature, AK public key (PEM) and PCR values to files and runs `tpm2_checkquote`.
fn checkquote(dir: &std::path::Path, doc: &AttestationDocument, extra: &[u8]) -> bool {
    let tpm = doc.tpm.as_ref().unwrap();
    std::fs::write(dir.join("quote.msg"), &tpm.quote_attest).unwrap();
    std::fs::write(dir.join("quote.sig"), &tpm.quote_signature).unwrap();
    std::fs::write(dir.join("ak.pem"), ak_pem(&tpm.ak_public)).unwrap();
    let mut pcrs = tpm.pcrs.clone();
    pcrs.sort_by_key(|p| p.index);
    std::fs::write(dir.join("pcrs.bin"), tpm2_tools_pcr_file(&pcrs)).unwrap();
    let out = std::process::Command::new("tpm2_checkquote")
        .current_dir(dir)
        .args(["-u", "ak.pem", "-m", "quote.msg", "-s", "quote.sig", "-f", "pcrs.bin", "-g", "sha256"])
        .args(["-q", &hex::encode(extra)])
        .output()
        .expect("run tpm2_checkquote (tpm2-tools)");
    if !out.status.success() {
        eprintln!("tpm2_checkquote: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    out.status.success()
}

#[test]
fn tpm2_checkquote_agrees_with_the_engine() {
    let (sw, tpm) = start();
    let nonce = random32();
    let extra = attest_engine::variant::Validator::quote_nonce(
        attest_engine::crypto::default_provider(),
        INSTANCE_INFO,
        USER_DATA,
        &nonce,
    );
    let rsa = QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap();
    let rsa_doc = rsa.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
    let ecc = QemuVtpmIssuer::new(rsa.into_tpm(), ecc_ak()).unwrap();
    let ecc_doc = ecc.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();

    for doc in [&rsa_doc, &ecc_doc] {
        let v = validator(pinned(&doc.tpm.as_ref().unwrap().ak_public), PcrPolicy::default());
        assert!(validate(&v, doc, &nonce).is_ok());
        assert!(checkquote(sw.dir(), doc, &extra), "tpm2_checkquote accepts what the engine accepts");

        // Both refuse an altered PCR value, and a different nonce.
        let mut d = doc.clone();
        d.tpm.as_mut().unwrap().pcrs[9].value[31] ^= 1;
        assert!(validate(&v, &d, &nonce).is_err());
        assert!(!checkquote(sw.dir(), &d, &extra), "tpm2_checkquote refuses an altered PCR");
        assert!(validate(&v, doc, &random32()).is_err());
        assert!(!checkquote(sw.dir(), doc, &random32()), "tpm2_checkquote refuses another nonce");
    }
}

#[test]
fn the_issuer_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<QemuVtpmIssuer>();
    assert_send_sync::<FileAkRegistry>();

    let (_sw, tpm) = start();
    let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap());
    let v = Arc::new(validator(pinned(issuer.attestation_key().tpm2b_public()), PcrPolicy::default()));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (issuer, v) = (issuer.clone(), v.clone());
            std::thread::spawn(move || {
                for _ in 0..5 {
                    let nonce = random32();
                    let doc = issuer.issue(&nonce, USER_DATA, INSTANCE_INFO).unwrap();
                    assert!(validate(&v, &doc, &nonce).is_ok());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(issuer.with_tpm(|tpm, _| tpm.loaded_handle_count()).unwrap(), 0);
}
