//! The shared trust inputs: a measurements file is believed only with a good signature (or the named
//! waiver), an SNP variant starts only with a pinned launch (or the named waiver), CRLs load at start or the
//! consumer does not start (stale only under the named waiver), and every waiver shows in `Trust::waivers`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use attest_engine::crypto::default_provider;
use attest_engine::snp::{OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::variant::{PcrPolicy, Validator, Variant};
use attest_engine::{LaunchPinning, UnixTime};
use attest_kds::{ChainKind, Clock, CrlWanted, Kds, KdsConfig, RevocationState};
use attest_test_support::{CrlSpec, SigningKeyKind, TempDir, TestPki};
use attest_trust::{SignatureState, Trust, TrustArgs, TrustError, check_launch, crl_wanted};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;

const MEASUREMENTS: &str =
    r#"{"4":{"expected":"1111111111111111111111111111111111111111111111111111111111111111","warnOnly":false}}"#;

/// A P-256 key: its public PEM in `dir/key.pub`, and a signer.
struct Signer {
    key: PKey<openssl::pkey::Private>,
    public: PathBuf,
}

impl Signer {
    fn new(dir: &Path, name: &str) -> Signer {
        let key =
            PKey::from_ec_key(EcKey::generate(&EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap()).unwrap())
                .unwrap();
        let public = dir.join(name);
        std::fs::write(&public, key.public_key_to_pem().unwrap()).unwrap();
        Signer { key, public }
    }

    fn sign(&self, data: &[u8]) -> Vec<u8> {
        let mut s = openssl::sign::Signer::new(MessageDigest::sha256(), &self.key).unwrap();
        s.sign_oneshot_to_vec(data).unwrap()
    }
}

fn args(sig: Option<&Path>, key: Option<&Path>) -> TrustArgs {
    TrustArgs {
        measurements_signature: sig.map(Path::to_owned),
        measurements_public_key: key.map(Path::to_owned),
        ..TrustArgs::default()
    }
}

#[test]
fn unsigned_measurements_are_refused_unless_explicitly_waived() {
    let dir = TempDir::new("trust-unsigned");
    let file = dir.path().join("m.json");
    std::fs::write(&file, MEASUREMENTS).unwrap();
    assert!(matches!(TrustArgs::default().measurements_trust(), Err(TrustError::UnsignedMeasurements)));
    let waived = TrustArgs { dangerously_skip_measurements_signature: true, ..TrustArgs::default() };
    let trust = waived.measurements_trust().unwrap();
    let loaded = trust.load(&file).unwrap();
    assert_eq!(loaded.signature, SignatureState::DangerouslyUnsigned);
    let t = Trust { measurements: loaded.signature, launch: Vec::new(), revocation: None };
    assert_eq!(t.waivers(), ["measurements-unsigned"]);
    assert_eq!(t.to_json()["measurementsSignature"], "dangerously-unsigned");
}

/// A signed file's version and expiry are believed from the signed bytes: an expired file is refused by every
/// consumer, a version below the one already accepted by a consumer that keeps one (rollback).
#[test]
fn expired_or_rolled_back_measurements_are_refused() {
    let dir = TempDir::new("trust-fresh");
    let (file, sig) = (dir.path().join("m.json"), dir.path().join("m.json.sig"));
    let signer = Signer::new(dir.path(), "key.pub");
    let trust = args(Some(&sig), Some(&signer.public)).measurements_trust().unwrap();
    let write = |text: &str| {
        std::fs::write(&file, text).unwrap();
        std::fs::write(&sig, signer.sign(text.as_bytes())).unwrap();
    };
    let versioned = |header: &str| MEASUREMENTS.replacen('{', &format!("{{{header},"), 1);

    write(&versioned(r#""measurementsVersion": 4, "expires": "2030-01-01T00:00:00Z""#));
    let before = UnixTime::parse("2029-12-31T23:59:59Z").unwrap();
    let loaded = trust.load_at(&file, before).unwrap();
    assert_eq!(loaded.freshness.version, 4);
    loaded.check_floor(&file, 4).unwrap();
    loaded.check_floor(&file, 3).unwrap();
    let e = loaded.check_floor(&file, 5).unwrap_err();
    assert!(matches!(e, TrustError::MeasurementsRolledBack { found: 4, floor: 5, .. }), "{e}");
    assert!(e.to_string().contains("rollback"), "{e}");
    let e = trust.load_at(&file, UnixTime::parse("2030-01-01T00:00:00Z").unwrap()).unwrap_err();
    assert!(matches!(e, TrustError::MeasurementsExpired { .. }), "{e}");
    // A file without a version is version 0: any versioned file supersedes it.
    write(MEASUREMENTS);
    let unversioned = trust.load(&file).unwrap();
    assert_eq!(unversioned.freshness.version, 0);
    assert!(unversioned.check_floor(&file, 1).is_err());
    unversioned.check_floor(&file, 0).unwrap();
}

#[test]
fn a_badly_signed_measurements_file_is_refused() {
    let dir = TempDir::new("trust-signed");
    let (file, sig) = (dir.path().join("m.json"), dir.path().join("m.json.sig"));
    let signer = Signer::new(dir.path(), "key.pub");
    let other = Signer::new(dir.path(), "other.pub");
    std::fs::write(&file, MEASUREMENTS).unwrap();
    std::fs::write(&sig, signer.sign(MEASUREMENTS.as_bytes())).unwrap();

    let trust = args(Some(&sig), Some(&signer.public)).measurements_trust().unwrap();
    let loaded = trust.load(&file).unwrap();
    assert_eq!(loaded.signature, SignatureState::Verified);
    let t = Trust { measurements: loaded.signature, launch: Vec::new(), revocation: None };
    assert!(t.waivers().is_empty());
    assert_eq!(t.waivers_field(), "none");

    // Another key.
    let wrong = args(Some(&sig), Some(&other.public)).measurements_trust().unwrap();
    assert!(matches!(wrong.load(&file), Err(TrustError::BadSignature { .. })));
    // The file changed after signing (one byte).
    let mut altered = MEASUREMENTS.as_bytes().to_vec();
    altered[10] ^= 1;
    std::fs::write(&file, &altered).unwrap();
    assert!(matches!(trust.load(&file), Err(TrustError::BadSignature { .. })));
    // The signature is garbage, or missing.
    std::fs::write(&file, MEASUREMENTS).unwrap();
    std::fs::write(&sig, b"not a signature").unwrap();
    assert!(matches!(trust.load(&file), Err(TrustError::BadSignature { .. })));
    std::fs::remove_file(&sig).unwrap();
    assert!(matches!(trust.load(&file), Err(TrustError::Io { .. })));
    // A change of either input changes the poller's digest.
    std::fs::write(&sig, signer.sign(MEASUREMENTS.as_bytes())).unwrap();
    let before = trust.inputs_sha256(&file).unwrap();
    assert_eq!(before, trust.load(&file).unwrap().inputs_sha256);
    std::fs::write(&sig, signer.sign(MEASUREMENTS.as_bytes())).unwrap(); // ECDSA: a new signature
    assert_ne!(trust.inputs_sha256(&file).unwrap(), before);
}

fn validator(variant: Variant, policy: SnpPolicy) -> Validator {
    Validator::new(variant, Arc::new(SnpVerifier::new()), policy, PcrPolicy::default())
}

#[test]
fn snp_variants_without_a_pinned_launch_refuse_to_start_unless_waived() {
    for variant in [Variant::AzureSevSnp, Variant::AwsSevSnp, Variant::GcpSevSnp] {
        let v = validator(variant, SnpPolicy::default());
        assert!(matches!(check_launch([&v]), Err(TrustError::LaunchUnpinned { variant: got }) if got == variant));
        // The waiver flag sets the policy's waiver; the start goes ahead and reports it.
        let mut policy = SnpPolicy::default();
        TrustArgs { dangerous_allow_unpinned_launch: true, ..TrustArgs::default() }.apply_to_policy(&mut policy);
        let launch = check_launch([&validator(variant, policy)]).unwrap();
        assert_eq!(launch, [(variant, LaunchPinning::DangerouslyUnpinned)]);
        let t = Trust { measurements: SignatureState::Verified, launch, revocation: None };
        assert_eq!(t.waivers(), [format!("launch-unpinned:{variant}")]);
        // A pinned measurement needs no waiver.
        let pinned = SnpPolicy::from_toml(&format!("measurements = [\"{}\"]", "ab".repeat(48))).unwrap();
        assert_eq!(check_launch([&validator(variant, pinned)]).unwrap(), [(variant, LaunchPinning::Measurement)]);
    }
    assert_eq!(
        check_launch([&validator(Variant::QemuVtpm, SnpPolicy::default())]).unwrap(),
        [(Variant::QemuVtpm, LaunchPinning::NotApplicable)]
    );
    // A variant whose TDX platform cannot pass a TD-attribute check names that waiver.
    let launch = vec![(Variant::AzureTdx, LaunchPinning::Measurement), (Variant::QemuTdx, LaunchPinning::Measurement)];
    let t = Trust { measurements: SignatureState::Verified, launch, revocation: None };
    assert_eq!(t.waivers(), ["td-platform:azure-tdx:sept_ve_disable"]);
}

#[test]
fn the_crls_follow_the_variants_and_the_policys_products() {
    assert!(crl_wanted(&[Variant::QemuVtpm, Variant::GcpShieldedVm], &SnpPolicy::default()).is_empty());
    let milan = SnpPolicy { products: vec![Product::Milan], ..SnpPolicy::default() };
    assert_eq!(
        crl_wanted(&[Variant::AwsSevSnp, Variant::GcpSevSnp], &milan),
        [
            CrlWanted { product: Product::Milan, kind: ChainKind::Vlek },
            CrlWanted { product: Product::Milan, kind: ChainKind::Vcek }
        ]
    );
    assert_eq!(crl_wanted(&[Variant::AzureSevSnp], &SnpPolicy::default()).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crls_load_at_start_or_the_consumer_does_not_start() {
    let pki = TestPki::new(attest_test_support::Product::Milan, SigningKeyKind::Vcek);
    let anchors = vec![OwnedTrustAnchors {
        product: Product::Milan,
        ark: Cow::Owned(pki.ark_der().to_vec()),
        ask: Some(Cow::Owned(pki.ask_der().to_vec())),
        asvk: None,
    }];
    let now = 1_750_000_000i64;
    let store = TempDir::new("trust-crl");
    let kds = || {
        Kds::new(KdsConfig {
            store: Some(store.path().to_owned()),
            base_url: None,
            trust_anchors: Some(anchors.clone()),
            clock: Clock::fixed(UnixTime::from_secs(u64::try_from(now).unwrap())),
            ..KdsConfig::default()
        })
        .unwrap()
    };
    let policy = SnpPolicy { products: vec![Product::Milan], ..SnpPolicy::default() };
    let verifier = || Arc::new(SnpVerifier::with_trust_anchors(default_provider(), anchors.clone()));
    let variants = [Variant::GcpSevSnp];
    // Nothing in the store, offline: no start.
    let strict = TrustArgs::default();
    let e = strict.revocation_from(kds(), verifier(), &variants, &policy).await.unwrap_err();
    assert!(matches!(e, TrustError::Revocation(_)), "{e}");
    // A fresh CRL in the store: loaded and installed.
    std::fs::create_dir_all(store.path().join("Milan")).unwrap();
    let fresh = pki.issue_crl(&CrlSpec::new().this_update(now - 86_400).next_update(now + 86_400));
    std::fs::write(store.path().join("Milan/crl.der"), &fresh).unwrap();
    let v = verifier();
    let keeper = strict.revocation_from(kds(), Arc::clone(&v), &variants, &policy).await.unwrap();
    assert_eq!(v.installed_crls().len(), 1);
    assert_eq!(keeper.state(), RevocationState::Fresh);
    // A stale one: refused, unless --allow-stale-crl, which is then reported.
    let stale = pki.issue_crl(&CrlSpec::new().this_update(now - 2 * 86_400).next_update(now - 86_400));
    std::fs::write(store.path().join("Milan/crl.der"), &stale).unwrap();
    assert!(strict.revocation_from(kds(), verifier(), &variants, &policy).await.is_err());
    let lax = TrustArgs { allow_stale_crl: true, ..TrustArgs::default() };
    let mut waived_policy = policy.clone();
    lax.apply_to_policy(&mut waived_policy);
    assert!(waived_policy.allow_stale_crl);
    let keeper = lax.revocation_from(kds(), verifier(), &variants, &waived_policy).await.unwrap();
    let t = Trust { measurements: SignatureState::Verified, launch: Vec::new(), revocation: Some(keeper) };
    assert_eq!(t.waivers(), ["revocation-stale"]);
    assert_eq!(t.to_json()["revocation"], "stale-waived");
}

/// A control-plane admission is believed only under the operator's key, for exactly what it names, until it
/// expires; any altered byte of it is refused.
#[test]
fn admissions_verify_only_under_the_operator_key_until_they_expire() {
    use attest_engine::variant::NodeIdentity;
    use attest_trust::admission::{Admission, AdmissionError, load_dir};
    let dir = TempDir::new("trust-admission");
    let operator = Signer::new(dir.path(), "operator.pub");
    let other = Signer::new(dir.path(), "other.pub");
    let key = |s: &Signer| attest_measurements::VerifyingKey::from_pem(&std::fs::read(&s.public).unwrap()).unwrap();
    let admission = Admission {
        id: "0123456789abcdef0123456789abcdef".into(),
        identity: NodeIdentity::parse(&format!("ak:{}", "ab".repeat(32))).unwrap(),
        node_name: "node-4".into(),
        expires: UnixTime::parse("2030-01-01T00:00:00Z").unwrap(),
    };
    let payload = admission.payload();
    let file = Admission::envelope(&payload, &operator.sign(&payload));
    let now = UnixTime::parse("2029-01-01T00:00:00Z").unwrap();
    assert_eq!(Admission::verify(&file, &key(&operator), now).unwrap(), admission);
    assert_eq!(Admission::verify(&file, &key(&other), now).unwrap_err(), AdmissionError::BadSignature);
    assert!(matches!(
        Admission::verify(&file, &key(&operator), admission.expires).unwrap_err(),
        AdmissionError::Expired { .. }
    ));
    // Signed by another key, or the payload changed after signing (another node name).
    let forged = Admission::envelope(&payload, &other.sign(&payload));
    assert_eq!(Admission::verify(&forged, &key(&operator), now).unwrap_err(), AdmissionError::BadSignature);
    let changed = String::from_utf8(payload.clone()).unwrap().replace("node-4", "node-5").into_bytes();
    let changed = Admission::envelope(&changed, &operator.sign(&payload));
    assert_eq!(Admission::verify(&changed, &key(&operator), now).unwrap_err(), AdmissionError::BadSignature);
    // Another signed object of the operator (a measurements file) is no admission.
    let other_object = Admission::envelope(MEASUREMENTS.as_bytes(), &operator.sign(MEASUREMENTS.as_bytes()));
    assert!(matches!(
        Admission::verify(&other_object, &key(&operator), now).unwrap_err(),
        AdmissionError::Malformed { .. }
    ));
    // A directory: the good one is read, the others reported.
    let admissions = dir.path().join("admissions");
    std::fs::create_dir(&admissions).unwrap();
    std::fs::write(admissions.join("a.json"), &file).unwrap();
    std::fs::write(admissions.join("b.json"), &forged).unwrap();
    std::fs::write(admissions.join("c.txt"), &forged).unwrap();
    let (good, bad) = load_dir(&admissions, &key(&operator), now);
    assert_eq!(good, vec![admission]);
    assert_eq!(bad.len(), 1);
    assert!(load_dir(&dir.path().join("missing"), &key(&operator), now).0.is_empty());
}
