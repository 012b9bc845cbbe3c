//! The variant table (`engine/src/variant/table.rs`) is consistent: every row's columns fit together, names,
//! OIDs and C codes are unique, and the table drawn in the module's docs says what the rows hold.

use attest_engine::snp::SigningKey;
use attest_engine::tdx::TdxPolicy;
use attest_engine::variant::{
    AkTrust, Hardware, LaunchPin, LockRegister, Measured, NonceCarrier, TABLE, Variant, VariantInfo,
};

#[test]
fn rows_follow_the_enum_and_lookups_find_each_row() {
    for (i, row) in TABLE.iter().enumerate() {
        assert_eq!(row.variant as usize, i);
        assert_eq!(row.variant.info(), row);
        assert_eq!(Variant::from_name(row.name), Some(row.variant));
        assert_eq!(row.name.parse::<Variant>(), Ok(row.variant));
        assert_eq!(Variant::from_oid(row.oid), Some(row.variant));
        assert_eq!(Variant::from_ffi_code(row.ffi_code), Some(row.variant));
        assert_eq!(row.variant.to_string(), row.name);
        assert_eq!(Variant::ALL[i], row.variant);
    }
    let e = "azure".parse::<Variant>().unwrap_err().to_string();
    assert!(TABLE.iter().all(|r| e.contains(r.name)), "{e}");
}

#[test]
fn names_oids_and_codes_are_unique_and_well_formed() {
    for (i, a) in TABLE.iter().enumerate() {
        assert!(a.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{}", a.name);
        assert!(a.oid.starts_with("1.3.9900."), "{}: aTLS OIDs live under 1.3.9900", a.name);
        assert!(a.ffi_code != 0, "{}: 0 is no variant", a.name);
        assert!(!a.summary.is_empty() && !a.summary.ends_with('.'), "{}: a one-line summary", a.name);
        for b in &TABLE[i + 1..] {
            assert_ne!(a.name, b.name);
            assert_ne!(a.oid, b.oid);
            assert_ne!(a.ffi_code, b.ffi_code);
            assert_ne!(a.constellation, b.constellation, "{} and {} read the same measurements", a.name, b.name);
        }
    }
}

/// The columns of a row must describe one coherent trust path; a row that pairs, say, a fresh-report binding
/// with no hardware could not be validated.
#[test]
fn every_row_is_a_coherent_trust_path() {
    for row in &TABLE {
        let n = row.name;
        match row.ak {
            AkTrust::Registry | AkTrust::ProviderCertificate => {
                assert_eq!(row.hardware, Hardware::None, "{n}");
                assert_eq!(row.nonce, NonceCarrier::Quote, "{n}");
                assert_eq!(row.launch, LaunchPin::NotApplicable, "{n}");
            }
            AkTrust::HclRuntimeData => {
                assert_ne!(row.hardware, Hardware::None, "{n}: the runtime data needs hardware to bind it");
                assert_eq!(row.nonce, NonceCarrier::Quote, "{n}: the vTPM runs inside the TEE");
            }
            AkTrust::FreshReportBinding => {
                assert!(matches!(row.hardware, Hardware::SevSnp { .. }), "{n}");
                assert_eq!(row.nonce, NonceCarrier::QuoteAndReport, "{n}: the host holds the AK");
            }
            AkTrust::NoAk => {
                assert_eq!(row.hardware, Hardware::Tdx, "{n}");
                assert_eq!(row.nonce, NonceCarrier::TdQuote, "{n}");
                assert_eq!(row.measured, Measured::TdRegisters, "{n}: no vTPM, no PCRs");
            }
        }
        match row.hardware {
            Hardware::SevSnp { .. } => assert_eq!(row.launch, LaunchPin::SnpPolicy, "{n}"),
            Hardware::Tdx => assert_eq!(row.launch, LaunchPin::TdxMrtd, "{n}"),
            Hardware::None => assert_eq!(row.launch, LaunchPin::NotApplicable, "{n}"),
        }
        assert_eq!(row.has_vtpm(), row.measured == Measured::Pcrs, "{n}");
        // Credential activation needs a certified EK; without a vTPM there is no EK at all.
        if row.ak == AkTrust::Registry {
            assert!(row.ek_certificate, "{n}: an AK registry variant is trusted through its EK certificate");
        }
        if !row.has_vtpm() {
            assert!(!row.ek_certificate, "{n}: no vTPM, no EK certificate");
        }
        // Waivers are TD-attribute checks of a TDX platform, each once.
        for (i, c) in row.td_waivers.iter().enumerate() {
            assert_eq!(row.hardware, Hardware::Tdx, "{n}: TD waivers on a non-TDX row");
            assert!(TdxPolicy::WAIVABLE_FOR_PLATFORM.contains(c), "{n}: {c} is not waivable for a platform");
            assert!(!row.td_waivers[i + 1..].contains(c), "{n}: {c} twice");
        }
        assert_eq!(row.is_tdx(), row.hardware == Hardware::Tdx, "{n}");
        // The lock binds the cluster id into a register the variant's measurements speak of: the vTPM's PCR
        // 15, or (no vTPM) RTMR3 — never a register the firmware or boot chain extends.
        match (row.measured, row.lock) {
            (Measured::Pcrs, LockRegister::Pcr(15)) | (Measured::TdRegisters, LockRegister::Rtmr(3)) => {}
            (m, l) => panic!("{n}: a node lock in {l} for a variant measured by {m:?}"),
        }
    }
}

fn cell_hardware(row: &VariantInfo) -> String {
    match row.hardware {
        Hardware::None => "none".into(),
        Hardware::SevSnp { signer: SigningKey::Vcek } => "SEV-SNP, VCEK".into(),
        Hardware::SevSnp { signer: SigningKey::Vlek } => "SEV-SNP, VLEK".into(),
        Hardware::Tdx => "TDX".into(),
    }
}

/// The markdown table in `table.rs`'s module docs, row by row, equals what the rows hold.
#[test]
fn the_documented_table_matches_the_rows() {
    let source = include_str!("../src/variant/table.rs");
    let documented: Vec<Vec<String>> = source
        .lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .map(|l| format!("`{l}").split(" | ").map(|c| c.trim_end_matches(" |").trim().to_owned()).collect())
        .collect();
    assert_eq!(documented.len(), TABLE.len(), "one documented row per variant");
    for (doc, row) in documented.iter().zip(&TABLE) {
        let want = [
            format!("`{}`", row.name),
            row.oid.to_owned(),
            format!("{} / {}", row.constellation.csp, row.constellation.variant),
            cell_hardware(row),
            match row.ak {
                AkTrust::Registry => "AK registry",
                AkTrust::HclRuntimeData => "HCL runtime data",
                AkTrust::FreshReportBinding => "fresh report binding",
                AkTrust::ProviderCertificate => "provider certificate",
                AkTrust::NoAk => "— (no vTPM)",
            }
            .to_owned(),
            match row.nonce {
                NonceCarrier::Quote => "quote",
                NonceCarrier::QuoteAndReport => "quote and report",
                NonceCarrier::TdQuote => "TD quote",
            }
            .to_owned(),
            match row.launch {
                LaunchPin::NotApplicable => "—",
                LaunchPin::SnpPolicy => "SNP policy",
                LaunchPin::TdxMrtd => "TDX policy (MRTD)",
            }
            .to_owned(),
            match row.measured {
                Measured::Pcrs => "PCRs",
                Measured::TdRegisters => "MRTD, RTMR0–3",
            }
            .to_owned(),
            row.lock.to_string(),
            match (row.ek_certificate, row.has_vtpm()) {
                (true, _) => "yes",
                (false, true) => "none",
                (false, false) => "— (no vTPM)",
            }
            .to_owned(),
            if row.td_waivers.is_empty() {
                "—".to_owned()
            } else {
                row.td_waivers.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
            },
            row.ffi_code.to_string(),
        ];
        assert_eq!(doc.as_slice(), want.as_slice(), "documented row of {}", row.name);
    }
}
