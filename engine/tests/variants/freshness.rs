//! Freshness, per variant. Every variant refuses a document recorded for one nonce when it is presented for
//! another. On AWS and GCP the vTPM runs outside the TEE, so the host holds the AK and can sign fresh quotes:
//! there a genuine SNP report replayed next to a fresh quote must be refused, which only the report's own
//! binding of the nonce can do (`attest_engine::variant::binding`).

use super::*;

/// A nonce of an earlier attestation, whose genuine report the host recorded.
const OLD_NONCE: &[u8] = b"an earlier attestation's nonce!!";

fn snp_variants() -> [(Variant, &'static Leaf); 2] {
    [(Variant::AwsSevSnp, &*VLEK), (Variant::GcpSevSnp, &*VCEK)]
}

/// A genuine report (signed by the test PKI's VCEK/VLEK) with `report_data`.
fn genuine_report(leaf: &Leaf, report_data: [u8; 64]) -> [u8; 0x4A0] {
    ReportBuilder::for_leaf(leaf).mask_chip_key(leaf.kind == SigningKeyKind::Vlek).report_data(report_data).sign(leaf)
}

#[test]
fn a_replayed_snp_report_with_a_fresh_quote_is_refused() {
    for (variant, leaf) in snp_variants() {
        let v = validator(variant, PcrPolicy::default());
        for ak in [&*RSA_AK, &*ECC_AK] {
            // The earlier attestation: a genuine report for OLD_NONCE, which validated then.
            let old_report = genuine_report(leaf, snp_binding_for(&ak.tpm2b_public(), OLD_NONCE));
            let old = Evidence::tpm(variant, ak)
                .requote(ak, &quote_nonce(INSTANCE_INFO, USER_DATA, OLD_NONCE), SELECTION)
                .with_snp(&old_report, leaf);
            old.validate(&v, OLD_NONCE).unwrap_or_else(|e| panic!("{variant}: {e}"));

            // Now: the host signs a fresh quote for NONCE with the AK it holds and replays the old report.
            let replay = Evidence::tpm(variant, ak).with_snp(&old_report, leaf);
            assert_eq!(
                replay.reject(&v, NONCE),
                Error::FreshnessBindingMismatch {
                    expected: Bytes::new(&snp_binding(&ak.tpm2b_public())),
                    found: Bytes::new(&snp_binding_for(&ak.tpm2b_public(), OLD_NONCE)),
                },
                "{variant}"
            );
            // The whole earlier document replayed for the new nonce is refused as well.
            assert!(matches!(old.reject(&v, NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");

            // A fresh report, requested inside the TEE for this attestation, is accepted.
            let fresh =
                Evidence::tpm(variant, ak).with_snp(&genuine_report(leaf, snp_binding(&ak.tpm2b_public())), leaf);
            let ok = fresh.validate(&v, NONCE).unwrap_or_else(|e| panic!("{variant}: {e}"));
            assert_eq!(ok.report_data, Some(snp_binding(&ak.tpm2b_public())));
        }
    }
}

/// The report binds the quote's extraData, hence the user data (aTLS: the TLS key) and the instance info, not
/// only the nonce: a report for the right nonce but another TLS key is refused.
#[test]
fn the_snp_report_binds_user_data_and_instance_info() {
    for (variant, leaf) in snp_variants() {
        let v = validator(variant, PcrPolicy::default());
        let ak = RSA_AK.tpm2b_public();
        let mut flipped = quote_nonce(INSTANCE_INFO, USER_DATA, NONCE);
        flipped[31] ^= 1;
        for other in [quote_nonce(INSTANCE_INFO, &[0xA5; 32], NONCE), quote_nonce(b"{}", USER_DATA, NONCE), flipped] {
            let report = genuine_report(leaf, snp_vtpm_report_data(default_provider(), &ak, &other));
            let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&report, leaf);
            assert!(matches!(ev.reject(&v, NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");
        }
    }
}

/// Azure: the vTPM runs inside the TEE, so the host cannot sign with its AK. The HCL report binds the AK (not
/// a nonce); the quote binds the nonce. An old quote is refused for a new nonce, and a fresh quote by any key
/// other than the bound AK is refused.
#[test]
fn azure_freshness_comes_from_the_quote_by_the_in_tee_ak() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let recorded = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    recorded.validate(&v, NONCE).unwrap();
    // The whole recorded document presented for a new nonce.
    assert!(matches!(recorded.reject(&v, OTHER_NONCE), Error::NonceMismatch { .. }));
    // The recorded HCL report with a fresh quote by a key the host holds.
    let fresh_extra = quote_nonce(INSTANCE_INFO, USER_DATA, OTHER_NONCE);
    let host_quote = recorded.clone().requote(&OTHER_RSA_AK, &fresh_extra, SELECTION);
    assert_eq!(host_quote.reject(&v, OTHER_NONCE), Error::QuoteSignatureInvalid);
    // A fresh quote by the in-TEE AK is what a genuine guest sends: accepted.
    recorded.requote(&RSA_AK, &fresh_extra, SELECTION).validate(&v, OTHER_NONCE).unwrap();
}

/// Every variant: the document of one attestation does not validate for another nonce.
#[test]
fn every_variant_refuses_a_document_recorded_for_another_nonce() {
    let qemu = qemu_validator(registry(), PcrPolicy::default());
    let cases: [(Validator, Evidence); 4] = [
        (qemu, Evidence::tpm(Variant::QemuVtpm, &RSA_AK)),
        (validator(Variant::AzureSevSnp, PcrPolicy::default()), azure_evidence(&[&RSA_AK.jwk()], &RSA_AK)),
        (validator(Variant::AwsSevSnp, PcrPolicy::default()), aws_evidence(&RSA_AK, ReportBuilder::for_leaf(&VLEK))),
        (validator(Variant::GcpSevSnp, PcrPolicy::default()), gcp_evidence(&RSA_AK, ReportBuilder::for_leaf(&VCEK))),
    ];
    for (v, ev) in &cases {
        ev.validate(v, NONCE).unwrap_or_else(|e| panic!("{}: {e}", v.variant()));
        let err = ev.reject(v, OTHER_NONCE);
        let want_report_binding = matches!(v.variant(), Variant::AwsSevSnp | Variant::GcpSevSnp);
        assert!(
            if want_report_binding {
                matches!(err, Error::FreshnessBindingMismatch { .. })
            } else {
                matches!(err, Error::NonceMismatch { .. })
            },
            "{}: {err}",
            v.variant()
        );
    }
}
