//! The `gcp-shielded-vm` variant end to end: a software AK certified by a generated "Google-like" CA
//! (root → AK certificate with the instance-information extension), quoting as a GCE vTPM does
//! (qualifiedSigner = the AK's qualified name as an endorsement-hierarchy primary key). One document
//! validates; each check then refuses its own tampered document.

use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::Error;
use attest_engine::gce::{ConfidentialTechnology, GcePolicy, GceVerifier};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::{AkBasis, Document, PcrPolicy, TpmEvidence, Validator, Variant};
use attest_test_support::gce::{GoogleLikeCa, InstanceSpec};
use attest_test_support::tpm::{self, EventLogBuilder, PcrBank, QuoteSpec, SoftAk, tpms_attest};
use std::sync::{Arc, LazyLock};

const NONCE: &[u8] = b"gce verifier nonce";
const USER_DATA: &[u8] = &[7; 32];
const INSTANCE_INFO: &[u8] = b"opaque";
const TPM_RH_ENDORSEMENT: u32 = 0x4000_000B;

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap()
}

fn new_ca(cn: &str) -> GoogleLikeCa {
    GoogleLikeCa::root(cn)
}

fn instance_info(project: &str, production: bool) -> InstanceSpec {
    InstanceSpec::new(project, "node-1").production(production)
}

fn ak_certificate(ca: &GoogleLikeCa, ak: &SoftAk, info: &InstanceSpec) -> Vec<u8> {
    ca.ak_certificate(&ak.spki(), info)
}

static CA: LazyLock<GoogleLikeCa> = LazyLock::new(|| new_ca("test EK/AK CA root"));
static OTHER_CA: LazyLock<GoogleLikeCa> = LazyLock::new(|| new_ca("test EK/AK CA root"));
static RSA_AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::rsa);
static ECC_AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::ecc_p256);
static BOOT_LOG: LazyLock<EventLogBuilder> = LazyLock::new(EventLogBuilder::typical_boot);

/// The AK's qualified name as an endorsement-hierarchy primary key.
fn qualified_name(ak: &SoftAk, hierarchy: u32) -> Vec<u8> {
    let name = ak.name();
    let mut out = name[..2].to_vec();
    out.extend(tpm::sha256(&[&hierarchy.to_be_bytes(), &name]));
    out
}

#[derive(Clone)]
struct Doc {
    ak_public: Vec<u8>,
    attest: Vec<u8>,
    signature: Vec<u8>,
    pcrs: PcrBank,
    event_log: Vec<u8>,
    ak_certificate: Vec<u8>,
}

impl Doc {
    fn new(ak: &SoftAk, certs: Vec<u8>, hierarchy: u32) -> Self {
        let pcrs = *BOOT_LOG.pcrs();
        let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
        let attest = tpms_attest(&qualified_name(ak, hierarchy), &QuoteSpec::new(&extra, &pcrs, 0xFF));
        let signature = ak.sign(&attest);
        Self {
            ak_public: ak.tpm2b_public(),
            attest,
            signature,
            pcrs,
            event_log: BOOT_LOG.bytes().to_vec(),
            ak_certificate: certs,
        }
    }

    fn validate(&self, v: &Validator) -> Result<(AkBasis, String, bool), Error> {
        let mut values = PcrValues::new();
        for (i, p) in self.pcrs.iter().enumerate() {
            values.set(HashAlgorithm::Sha256, i, p).unwrap();
        }
        let doc = Document {
            variant: Variant::GcpShieldedVm.name(),
            tpm: Some(TpmEvidence {
                ak_public: &self.ak_public,
                attest: &self.attest,
                signature: QuoteSignature::Tpmt(&self.signature),
                pcrs: &values,
                event_log: &self.event_log,
                ak_certificate: &self.ak_certificate,
            }),
            snp: None,
            hcl_report: &[],
            instance_info: INSTANCE_INFO,
            user_data: USER_DATA,
            td_quote: &[],
            td_event_log: &[],
        };
        let ok = v.validate(&doc, NONCE, now())?;
        let instance = ok.instance.unwrap();
        Ok((
            ok.ak_basis.unwrap(),
            format!("{}/{}/{}", instance.project_id, instance.zone, instance.instance_name),
            ok.event_log_replayed,
        ))
    }
}

fn validator(policy: GcePolicy) -> Validator {
    let gce = GceVerifier::with_trust_anchors(default_provider(), vec![CA.der.clone()], vec![]);
    Validator::new(Variant::GcpShieldedVm, Arc::new(SnpVerifier::new()), SnpPolicy::default(), PcrPolicy::default())
        .with_gce(Arc::new(gce), policy)
}

#[test]
fn variant_names_and_oid() {
    assert_eq!(Variant::from_name("gcp-shielded-vm"), Some(Variant::GcpShieldedVm));
    assert_eq!(Variant::from_oid("1.3.9900.3.99"), Some(Variant::GcpShieldedVm));
    let oids: std::collections::BTreeSet<_> = Variant::ALL.iter().map(|v| v.oid()).collect();
    assert_eq!(oids.len(), Variant::ALL.len(), "one OID per variant");
}

#[test]
fn certified_aks_validate() {
    for ak in [&*RSA_AK, &*ECC_AK] {
        let doc = Doc::new(ak, ak_certificate(&CA, ak, &instance_info("my-project", true)), TPM_RH_ENDORSEMENT);
        let (basis, who, replayed) = doc.validate(&validator(GcePolicy::default())).unwrap();
        assert_eq!(basis, AkBasis::CertifiedByProvider);
        assert_eq!(who, "my-project/europe-west4-a/node-1");
        assert!(replayed);
    }
    // An owner-hierarchy primary AK is accepted as well.
    let doc = Doc::new(&RSA_AK, ak_certificate(&CA, &RSA_AK, &instance_info("p", true)), 0x4000_0001);
    doc.validate(&validator(GcePolicy::default())).unwrap();
    // Intermediates may follow the AK certificate.
    let inter = CA.intermediate("test EK/AK CA intermediate");
    let inter_der = inter.der.clone();
    let chain = [ak_certificate(&inter, &RSA_AK, &instance_info("p", true)), inter_der].concat();
    Doc::new(&RSA_AK, chain.clone(), TPM_RH_ENDORSEMENT).validate(&validator(GcePolicy::default())).unwrap();
    // Without the intermediate there is no path.
    let leaf_only = ak_certificate(&inter, &RSA_AK, &instance_info("p", true));
    assert!(matches!(
        Doc::new(&RSA_AK, leaf_only, TPM_RH_ENDORSEMENT).validate(&validator(GcePolicy::default())),
        Err(Error::UnknownIssuer { .. })
    ));
}

#[test]
fn each_check_refuses() {
    let good_cert = ak_certificate(&CA, &RSA_AK, &instance_info("my-project", true));
    let good = Doc::new(&RSA_AK, good_cert.clone(), TPM_RH_ENDORSEMENT);
    let v = validator(GcePolicy::default());
    good.validate(&v).unwrap();

    // No certificate; a certificate from another CA; a certificate for another AK.
    let mut d = good.clone();
    d.ak_certificate.clear();
    assert!(matches!(d.validate(&v), Err(Error::MissingEvidence { .. })));
    let d =
        Doc::new(&RSA_AK, ak_certificate(&OTHER_CA, &RSA_AK, &instance_info("my-project", true)), TPM_RH_ENDORSEMENT);
    // The impostor CA has the same name as the trusted one: path building finds the trusted CA by name and
    // refuses the signature.
    let e = d.validate(&v);
    assert!(matches!(e, Err(Error::CertSignatureInvalid { .. })), "{e:?}");
    let d = Doc::new(&RSA_AK, ak_certificate(&CA, &ECC_AK, &instance_info("my-project", true)), TPM_RH_ENDORSEMENT);
    assert_eq!(d.validate(&v).unwrap_err(), Error::AkCertificateKeyMismatch);
    // Trailing junk after the certificates.
    let mut d = good.clone();
    d.ak_certificate.push(0);
    assert!(d.validate(&v).is_err());
    // Google's real roots do not know this CA.
    let google = Validator::new(
        Variant::GcpShieldedVm,
        Arc::new(SnpVerifier::new()),
        SnpPolicy::default(),
        PcrPolicy::default(),
    );
    assert!(matches!(good.validate(&google), Err(Error::UnknownIssuer { .. })));

    // A quote whose qualifiedSigner is the plain Name, or another hierarchy's QN.
    for signer in [RSA_AK.name(), qualified_name(&RSA_AK, 0x4000_000C)] {
        let mut d = good.clone();
        d.attest = tpms_attest(
            &signer,
            &QuoteSpec::new(
                &Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE),
                &d.pcrs,
                0xFF,
            ),
        );
        d.signature = RSA_AK.sign(&d.attest);
        assert!(matches!(d.validate(&v), Err(Error::QualifiedSignerMismatch { .. })));
    }
    // Wrong nonce binding; flipped signature.
    let mut d = good.clone();
    d.attest = tpms_attest(&qualified_name(&RSA_AK, TPM_RH_ENDORSEMENT), &QuoteSpec::new(&[1; 32], &d.pcrs, 0xFF));
    d.signature = RSA_AK.sign(&d.attest);
    assert!(matches!(d.validate(&v), Err(Error::NonceMismatch { .. })));
    let mut d = good.clone();
    d.signature[10] ^= 1;
    assert_eq!(d.validate(&v).unwrap_err(), Error::QuoteSignatureInvalid);

    // Policy: non-production; project allow-list; technology allow-list (the synthetic log has no
    // NonHostInfo event).
    let d = Doc::new(&RSA_AK, ak_certificate(&CA, &RSA_AK, &instance_info("my-project", false)), TPM_RH_ENDORSEMENT);
    assert!(matches!(d.validate(&v), Err(Error::PlatformPolicy { check: "production", .. })));
    d.validate(&validator(GcePolicy { require_production: false, ..GcePolicy::default() })).unwrap();
    let only_other = validator(GcePolicy { allowed_projects: vec!["other".into()], ..GcePolicy::default() });
    assert!(matches!(good.validate(&only_other), Err(Error::PlatformPolicy { check: "project", .. })));
    let sev =
        validator(GcePolicy { allowed_technologies: vec![ConfidentialTechnology::AmdSev], ..GcePolicy::default() });
    assert!(matches!(good.validate(&sev), Err(Error::PlatformPolicy { check: "confidential_technology", .. })));
    // Every bit of the presented TPM2B_PUBLIC.
    for bit in 0..good.ak_public.len() * 8 {
        let mut d = good.clone();
        d.ak_public[bit / 8] ^= 1 << (bit % 8);
        assert!(d.validate(&v).is_err(), "ak_public bit {bit}");
    }
}
