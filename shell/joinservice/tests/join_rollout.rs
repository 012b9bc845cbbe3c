//! Rolling upgrades: the join service's validators admit nodes of the old and the new image while
//! the signed measurements file accepts both, and refuse the old image once a re-signed file drops it — on
//! hot reload, without a restart.

mod join_support;

use std::sync::Arc;

use attest_atls::ValidationError;
use attest_engine::crypto::default_provider;
use attest_engine::variant::{AkBasis, Validator, Variant};
use attest_joinservice::{Metrics, ValidatorConfig, Validators};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_registration::FileAkRegistry;
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, sha256};
use join_support::{MeasurementsSigner, temp_dir};
use prost::Message as _;

/// The PCRs of a node booted from `image`: PCRs 4, 9 and 11 depend on the image, the rest do not.
fn booted(image: &str) -> PcrBank {
    let mut bank = [[0u8; 32]; 24];
    for (i, p) in bank.iter_mut().enumerate() {
        *p = if [4, 9, 11].contains(&i) { sha256(&[image.as_bytes(), &[i as u8]]) } else { sha256(&[&[i as u8]]) };
    }
    bank
}

/// A list entry for qemu-vtpm expecting `image`'s PCRs 4, 9, 11 and 15 = 0 (as `attest measurements
/// compute --pcr15-zero` writes it).
fn entry(image: &str) -> String {
    let bank = booted(image);
    let pcr = |i: usize| format!("\"{i}\": {{\"expected\": \"{}\", \"warnOnly\": false}}", hex::encode(bank[i]));
    format!(
        r#"{{"csp": "QEMU", "attestationVariant": "qemu-vtpm", "image": "{image}", "measurements": {{{}, {}, {}, "15": {{"expected": "{}", "warnOnly": false}}}}}}"#,
        pcr(4),
        pcr(9),
        pcr(11),
        "00".repeat(32)
    )
}

fn file(images: &[&str]) -> String {
    let entries: Vec<String> = images.iter().map(|i| entry(i)).collect();
    format!(r#"{{"version": "v2", "ref": "-", "stream": "custom", "list": [{}]}}"#, entries.join(", "))
}

/// The attestation document of a node booted from `image` (PCR 15 = 0), for `nonce`.
fn document(ak: &SoftAk, image: &str, nonce: &[u8; 32]) -> Vec<u8> {
    let mut pcrs = booted(image);
    pcrs[15] = [0; 32];
    quoting(ak, &pcrs, nonce)
}

/// The attestation document quoting `pcrs` for `nonce`.
fn quoting(ak: &SoftAk, pcrs: &PcrBank, nonce: &[u8; 32]) -> Vec<u8> {
    let user_data = [0x11; 32];
    let extra = Validator::quote_nonce(default_provider(), &[], &user_data, nonce);
    let quote = ak.quote(&QuoteSpec::new(&extra, pcrs, 0x00FF_FFFF));
    AttestationDocument {
        variant: Variant::QemuVtpm.name().to_owned(),
        tpm: Some(TpmEvidence {
            ak_public: ak.tpm2b_public(),
            quote_attest: quote.attest,
            quote_signature: quote.signature,
            pcrs: (0..24u32)
                .map(|i| PcrValue { hash_alg: 0x000B, index: i, value: pcrs[i as usize].to_vec() })
                .collect(),
            ..TpmEvidence::default()
        }),
        user_data: user_data.to_vec(),
        ..AttestationDocument::default()
    }
    .encode_to_vec()
}

#[test]
fn a_rollout_admits_old_and_new_then_refuses_the_old_image_once_dropped() {
    let dir = temp_dir("rollout");
    let path = dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&dir);
    let registry = Arc::new(FileAkRegistry::open(dir.join("aks.json")).unwrap());
    let (old_node, new_node) = (SoftAk::ecc_p256(), SoftAk::ecc_p256());
    for ak in [&old_node, &new_node] {
        let digest = attest_registration::ak_digest(&ak.tpm2b_public()).unwrap();
        registry.register(digest, AkBasis::Pinned).unwrap();
    }
    signer.write(&path, &file(&["v1"]));
    let config = ValidatorConfig::new(vec![Variant::QemuVtpm], registry, signer.trust(&path));
    let validators = Arc::new(Validators::load(config, &path, Arc::new(Metrics::new())).unwrap());
    let validator = validators.attestation_validators().remove(0);
    let nonce = [7u8; 32];
    let admits = |ak: &SoftAk, image: &str| validator.validate(&document(ak, image, &nonce), &nonce);

    // Before the rollout: only v1.
    assert!(admits(&old_node, "v1").is_ok());
    assert!(matches!(admits(&new_node, "v2"), Err(ValidationError::Rejected(_))));

    // Measurements rolled forward (old and new accepted, signed): both images join.
    signer.write(&path, &file(&["v1", "v2"]));
    assert_eq!(validators.reload().unwrap(), Some(2));
    assert!(admits(&old_node, "v1").is_ok(), "the old image during the rollout");
    assert!(admits(&new_node, "v2").is_ok(), "the new image during the rollout");
    // Each admission names the set (image) the node met: what the join service logs with every ticket.
    let admitted_by = |ak: &SoftAk, image: &str| {
        let accepted = validator.validate_peer(&document(ak, image, &nonce), &nonce).expect("admitted");
        accepted.measurement_set.as_deref().map(str::to_owned)
    };
    assert_eq!(admitted_by(&old_node, "v1").as_deref(), Some("v1"));
    assert_eq!(admitted_by(&new_node, "v2").as_deref(), Some("v2"));
    // Values of two images are never mixed: PCR 4 of v1 with PCR 9 of v2 matches neither set.
    let mut mixed = booted("v1");
    mixed[9] = booted("v2")[9];
    mixed[15] = [0; 32];
    let mixed = quoting(&old_node, &mixed, &nonce);
    assert!(validator.validate(&mixed, &nonce).is_err(), "a mix of two images");

    // The old image dropped (re-signed): the old node is refused, the new one still joins.
    signer.write(&path, &file(&["v2"]));
    assert_eq!(validators.reload().unwrap(), Some(3));
    match admits(&old_node, "v1") {
        Err(ValidationError::Rejected(e)) => assert!(e.to_string().contains("PCR"), "{e}"),
        other => panic!("the old image must be refused: {other:?}"),
    }
    assert!(admits(&new_node, "v2").is_ok());

    // Unlabelled duplicate sets are refused on reload; the running set stays.
    let unlabelled = file(&["v2", "v3"]).replace(r#""image": "v3", "#, "");
    signer.write(&path, &unlabelled);
    assert!(validators.reload().is_err());
    assert_eq!(validators.current().generation(), 3);
}
