//! The TD-attribute defaults (`TdxPolicy`): a table of quotes signed through a generated Intel-like PKI with
//! each judged TDATTRIBUTES bit set (or SEPT_VE_DISABLE clear) — genuine signatures, so only the attribute
//! check can refuse them — each refused by its own named check under the default policy, accepted with its
//! own waiver (recorded as waived), and judged alike by an independent verifier (dcap-qvl) wherever the two
//! read the TDX module ABI alike. The variant table's per-platform waiver (`azure-tdx` runs without
//! SEPT_VE_DISABLE) is waived there and nowhere else.

use attest_engine::policy::Outcome;
use attest_engine::tdx::body::{
    TD_ATTRIBUTE_DEBUG, TD_ATTRIBUTE_KL, TD_ATTRIBUTE_MIGRATABLE, TD_ATTRIBUTE_PERFMON, TD_ATTRIBUTE_PKS,
    TD_ATTRIBUTE_SEPT_VE_DISABLE,
};
use attest_engine::tdx::{Collateral, TdxCheck, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::variant::{Hardware, TABLE};
use attest_engine::{Error, UnixTime};
use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec, qe_identity_json, tcb_info_json};

const WINDOW: (&str, &str) = ("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z");
const CRL_WINDOW: (i64, i64) = (1_704_067_200, 1_706_745_600);
const NOW: &str = "2024-01-15T00:00:00Z";

fn comps(prefix: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..prefix.len()].copy_from_slice(prefix);
    c
}

struct Fixture {
    pki: IntelPki,
    bundle: String,
    verifier: TdxVerifier,
}

fn fixture() -> Fixture {
    let pki = IntelPki::new();
    let tcb = tcb_info_json(
        PckSpec::default().fmspc,
        WINDOW,
        &[(comps(&[5, 5, 2, 2, 3, 1, 0, 3]), 11, comps(&[3, 0, 5]), "UpToDate", &[])],
        &[(4, "UpToDate")],
    );
    let bundle = pki.bundle(&tcb, &qe_identity_json(WINDOW, &[(4, "UpToDate")]), CRL_WINDOW, &[], &[]);
    let verifier = TdxVerifier::dangerous_with_root(attest_engine::crypto::default_provider(), pki.root_der().to_vec());
    verifier.set_collateral(&Collateral::from_bundle_json(bundle.as_bytes()).unwrap()).unwrap();
    Fixture { pki, bundle, verifier }
}

/// A TD with SEPT_VE_DISABLE and nothing else: what the default policy accepts.
const GOOD: u64 = TD_ATTRIBUTE_SEPT_VE_DISABLE;

/// One row: TDATTRIBUTES, the check that refuses them by default, and that check's waiver.
struct Row {
    what: &'static str,
    attributes: u64,
    check: TdxCheck,
    waiver: &'static str,
    /// Whether dcap-qvl 0.7.1 (TDX module ABI 348551-008) also refuses these attributes by default.
    dcap_qvl_refuses: bool,
}

fn bit(n: u32) -> u64 {
    1 << n
}

fn rows() -> Vec<Row> {
    let mut rows = vec![
        Row {
            what: "DEBUG",
            attributes: GOOD | TD_ATTRIBUTE_DEBUG,
            check: TdxCheck::Debug,
            waiver: "allow_debug",
            dcap_qvl_refuses: true,
        },
        Row {
            what: "SEPT_VE_DISABLE clear",
            attributes: 0,
            check: TdxCheck::SeptVeDisable,
            waiver: "allow_missing_sept_ve_disable",
            dcap_qvl_refuses: true,
        },
        Row {
            what: "MIGRATABLE",
            attributes: GOOD | TD_ATTRIBUTE_MIGRATABLE,
            check: TdxCheck::Migratable,
            waiver: "allow_migratable",
            dcap_qvl_refuses: true,
        },
    ];
    // The other TUD bits: reserved in TDX 1.0/1.5 (dcap-qvl's newer ABI reads 4–6 as profiling bits, refused
    // too unless debugging is allowed).
    for n in 1..=7 {
        rows.push(Row {
            what: "a TUD bit",
            attributes: GOOD | bit(n),
            check: TdxCheck::DebugClass,
            waiver: "allow_debug_class",
            dcap_qvl_refuses: true,
        });
    }
    // Reserved SEC and OTHER bits. The newer ABI (dcap-qvl 0.7.1) defines 16 ICSSD, 17 SERVTD_EXT, 18–22,
    // 27 LASS and 62 TPA; this verifier follows the TDX 1.0/1.5 ABI, where they are reserved.
    for n in (8..=27).chain(32..=62) {
        let newer_abi_defines = matches!(n, 16..=22 | 27 | 62);
        rows.push(Row {
            what: "a reserved bit",
            attributes: GOOD | bit(n),
            check: TdxCheck::ReservedAttributes,
            waiver: "allow_reserved_attributes",
            // SERVTD_EXT (17) is refused by dcap-qvl unless service TDs are allowed.
            dcap_qvl_refuses: !newer_abi_defines || n == 17,
        });
    }
    rows
}

fn quote(f: &Fixture, attributes: u64) -> Vec<u8> {
    let pck = f.pki.issue_pck(&PckSpec::default());
    f.pki.quote(&pck, &QuoteSpec { td_attributes: attributes.to_le_bytes(), ..QuoteSpec::default() })
}

fn verify(f: &Fixture, quote: &[u8], policy: &TdxPolicy) -> Result<attest_engine::tdx::TdxVerdict, Error> {
    let t = UnixTime::parse(NOW).unwrap();
    f.verifier.verify(&TdxRequest::new(quote, t), policy).map(|v| *v.verdict())
}

fn dcap_qvl_refuses(fixture: &Fixture, quote: &[u8]) -> bool {
    let bundle: serde_json::Value = serde_json::from_str(&fixture.bundle).unwrap();
    let s = |k: &str| bundle[k].as_str().unwrap().to_owned();
    let h = |k: &str| hex::decode(bundle[k].as_str().unwrap()).unwrap();
    let collateral = dcap_qvl::QuoteCollateralV3 {
        pck_crl_issuer_chain: s("pck_crl_issuer_chain"),
        root_ca_crl: h("root_ca_crl"),
        pck_crl: h("pck_crl"),
        tcb_info_issuer_chain: s("tcb_info_issuer_chain"),
        tcb_info: s("tcb_info"),
        tcb_info_signature: h("tcb_info_signature"),
        qe_identity_issuer_chain: s("qe_identity_issuer_chain"),
        qe_identity: s("qe_identity"),
        qe_identity_signature: h("qe_identity_signature"),
        pck_certificate_chain: None,
    };
    let time = UnixTime::parse(NOW).unwrap().as_secs();
    let result = dcap_qvl::verify::QuoteVerifier::new(fixture.pki.root_der().to_vec()).verify(quote, &collateral, time);
    if let Err(e) = &result {
        eprintln!("dcap-qvl: {e:#}");
    }
    result.is_err()
}

#[test]
fn the_default_policy_accepts_a_plain_td_and_allowed_bits() {
    let f = fixture();
    for attributes in [GOOD, GOOD | TD_ATTRIBUTE_PKS | TD_ATTRIBUTE_KL | TD_ATTRIBUTE_PERFMON] {
        let q = quote(&f, attributes);
        let verdict = verify(&f, &q, &TdxPolicy::default()).unwrap_or_else(|e| panic!("{attributes:#x}: {e}"));
        for c in [
            TdxCheck::Debug,
            TdxCheck::DebugClass,
            TdxCheck::ReservedAttributes,
            TdxCheck::SeptVeDisable,
            TdxCheck::Migratable,
        ] {
            assert_eq!(verdict.outcome(c), Outcome::Passed, "{attributes:#x}: {c}");
        }
        assert!(!dcap_qvl_refuses(&f, &q), "dcap-qvl refuses {attributes:#x}");
    }
}

#[test]
fn each_attribute_check_refuses_its_bits_and_has_its_own_waiver() {
    let f = fixture();
    for row in rows() {
        let what = format!("{} ({:#018x})", row.what, row.attributes);
        let q = quote(&f, row.attributes);
        // Refused by default, by exactly this check.
        let e = verify(&f, &q, &TdxPolicy::default()).unwrap_err();
        assert_eq!(e.check_tdx(), Some(row.check), "{what}: {e}");
        assert!(e.to_string().contains(row.check.name()), "{what}: {e}");
        // Accepted with this check's waiver, recorded as waived; the other attribute checks still pass.
        let waived = TdxPolicy::from_toml(&format!("{} = true", row.waiver)).unwrap();
        let verdict = verify(&f, &q, &waived).unwrap_or_else(|e| panic!("{what} with {}: {e}", row.waiver));
        assert_eq!(verdict.outcome(row.check), Outcome::Waived, "{what}");
        assert_eq!(verdict.waived().filter(|c| *c == row.check).count(), 1);
        // Another check's waiver does not help.
        let other = if row.check == TdxCheck::Migratable { "allow_debug" } else { "allow_migratable" };
        let e = verify(&f, &q, &TdxPolicy::from_toml(&format!("{other} = true")).unwrap()).unwrap_err();
        assert_eq!(e.check_tdx(), Some(row.check), "{what} under {other}");
        // The independent verifier, where it reads the ABI alike.
        assert_eq!(dcap_qvl_refuses(&f, &q), row.dcap_qvl_refuses, "{what}: dcap-qvl");
    }
}

#[test]
fn only_the_azure_tdx_row_waives_sept_ve_disable_and_its_verdicts_say_so() {
    for row in &TABLE {
        let policy = TdxPolicy::default().with_waived(row.td_waivers);
        let expect = row.hardware == Hardware::Tdx && row.name == "azure-tdx";
        assert_eq!(policy.allow_missing_sept_ve_disable, expect, "{}", row.name);
        // Nothing else is waived for any platform.
        assert_eq!(TdxPolicy { allow_missing_sept_ve_disable: false, ..policy }, TdxPolicy::default(), "{}", row.name);
    }
    let f = fixture();
    let azure = TABLE.iter().find(|r| r.name == "azure-tdx").unwrap();
    let q = quote(&f, 0); // Azure's TD partitions: TDATTRIBUTES 0.
    let verdict = verify(&f, &q, &TdxPolicy::default().with_waived(azure.td_waivers)).unwrap();
    assert_eq!(verdict.outcome(TdxCheck::SeptVeDisable), Outcome::Waived);
    assert_eq!(verdict.outcome(TdxCheck::Debug), Outcome::Passed);
    // The waiver covers that one bit: a debuggable or migratable Azure TD is still refused.
    for (bits, check) in [(TD_ATTRIBUTE_DEBUG, TdxCheck::Debug), (TD_ATTRIBUTE_MIGRATABLE, TdxCheck::Migratable)] {
        let q = quote(&f, bits);
        let e = verify(&f, &q, &TdxPolicy::default().with_waived(azure.td_waivers)).unwrap_err();
        assert_eq!(e.check_tdx(), Some(check));
    }
}
