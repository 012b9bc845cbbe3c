//! EAT Attestation Results (IETF RATS "EAR", draft-ietf-rats-ear, with the trustworthiness vector of
//! draft-ietf-rats-ar4si): the claims of an attestation result, built from any verdict as plain data.
//!
//! Claim building lives in the engine because it is a pure function of a verdict (no keys, no clock, no
//! I/O); signing the claims as a JWT (ES256/ES384 with the user's key) is the CLI's job. Every verifier's
//! result converts into an [`Appraisal`] (one EAR submodule), failures too ([`Appraisal::failed`]);
//! [`claims`] assembles the token's claims set.
//!
//! # Claim mapping
//!
//! | EAR claim | value |
//! |---|---|
//! | `eat_profile` | `tag:github.com,2023:veraison/ear` |
//! | `iat` | the caller's trusted time (seconds) |
//! | `eat_nonce` | the verifier's nonce, base64url (when given) |
//! | `ear.verifier-id` | `{"developer": …, "build": …}` from the caller |
//! | `submods.<name>` | one [`Appraisal`]: `gcp-shielded-vm`, `sev-snp`, `tpm-quote`, `azure-sev-snp-vtpm`, or a variant name |
//! | `submods.<name>.ear.status` | the worst tier of the vector: `affirming`, `warning`, `contraindicated` (or `none`) |
//! | `submods.<name>.ear.trustworthiness-vector` | the claims below (ar4si §2.3); absent claims mean "no claim" |
//! | `submods.<name>.ear.appraisal-policy-id` | the caller's policy id, when given |
//! | `submods.<name>.attest.checks` | every check of the verdict by its stable name: `passed`, `waived`, `not-run` (private claim) |
//! | `submods.<name>.attest.claims` | the verdict's facts (instance, PCRs, TCB, …) (private claim) |
//!
//! Trustworthiness vector of a passed verification (ar4si value meanings):
//!
//! | claim | value | when |
//! |---|---|---|
//! | `hardware` | 2 (genuine) | the evidence chains to a pinned vendor root (AMD ARK; Google's EK/AK CA; Azure via the SNP report) |
//! | `instance-identity` | 2 (recognized, not compromised) | the signing key is bound to the instance (VCEK/VLEK, certified or hardware-bound AK) |
//! | `executables` | 2 (approved) | reference values were compared (SNP measurement, PCR policy, replayed log); otherwise no claim |
//! | `configuration` | 2 (approved) | the policy's configuration checks ran (SNP guest policy, GCE production/project); otherwise no claim |
//! | `runtime-opaque` | 2 (encrypted memory) | SEV-SNP evidence, or a GCE confidential technology from the verified log |
//! | `file-system`, `storage-opaque`, `sourced-data` | no claim | nothing here speaks to them |
//!
//! A failed verification ([`Appraisal::failed`]) is `contraindicated`: `hardware` 96 for signature and
//! certificate-chain failures, `instance-identity` 96 for AK trust and binding failures, `executables` 96
//! for PCR, measurement and event-log mismatches, `configuration` 96 for other policy failures, and
//! `sourced-data` 96 for malformed evidence; the error's text goes to `attest.error`.

use crate::error::Error;
use crate::policy::Outcome;
use crate::time::UnixTime;
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The EAR profile this module produces.
pub const EAR_PROFILE: &str = "tag:github.com,2023:veraison/ear";

/// ar4si: affirming.
pub const AFFIRMING: i8 = 2;
/// ar4si: contraindicated (the lowest value of the tier).
pub const CONTRAINDICATED: i8 = 96;

/// The trustworthiness vector (ar4si §2.3); `None` = no claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrustVector {
    /// instance-identity.
    pub instance_identity: Option<i8>,
    /// configuration.
    pub configuration: Option<i8>,
    /// executables.
    pub executables: Option<i8>,
    /// file-system.
    pub file_system: Option<i8>,
    /// hardware.
    pub hardware: Option<i8>,
    /// runtime-opaque.
    pub runtime_opaque: Option<i8>,
    /// storage-opaque.
    pub storage_opaque: Option<i8>,
    /// sourced-data.
    pub sourced_data: Option<i8>,
}

impl TrustVector {
    fn entries(&self) -> [(&'static str, Option<i8>); 8] {
        [
            ("instance-identity", self.instance_identity),
            ("configuration", self.configuration),
            ("executables", self.executables),
            ("file-system", self.file_system),
            ("hardware", self.hardware),
            ("runtime-opaque", self.runtime_opaque),
            ("storage-opaque", self.storage_opaque),
            ("sourced-data", self.sourced_data),
        ]
    }

    /// The tier name of the worst claim (ar4si: 2–31 affirming, 32–95 warning, 96–127 contraindicated).
    pub fn status(&self) -> &'static str {
        let worst = self.entries().iter().filter_map(|(_, v)| *v).map(i16::from).max();
        match worst {
            None | Some(..=1) => "none",
            Some(2..=31) => "affirming",
            Some(32..=95) => "warning",
            Some(_) => "contraindicated",
        }
    }

    fn to_json(self) -> Value {
        Value::Object(self.entries().into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), json!(v)))).collect())
    }
}

/// One appraised piece of evidence: an EAR submodule.
#[derive(Clone, Debug, PartialEq)]
pub struct Appraisal {
    /// The submodule name.
    pub submod: String,
    /// The trustworthiness vector.
    pub vector: TrustVector,
    /// Every check by its stable name.
    pub checks: Vec<(&'static str, Outcome)>,
    /// Facts of the verdict (instance, PCRs, …).
    pub claims: Map<String, Value>,
    /// The error of a failed verification.
    pub error: Option<String>,
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Passed => "passed",
        Outcome::Waived => "waived",
        Outcome::NotRun => "not-run",
    }
}

fn affirm_if(b: bool) -> Option<i8> {
    b.then_some(AFFIRMING)
}

impl Appraisal {
    /// A failed verification of `submod`.
    pub fn failed(submod: &str, error: &Error) -> Self {
        let mut vector = TrustVector::default();
        let slot = match error {
            Error::ReportSignatureInvalid
            | Error::QuoteSignatureInvalid
            | Error::CertSignatureInvalid { .. }
            | Error::IssuerMismatch { .. }
            | Error::NotACa { .. }
            | Error::UntrustedCertificate { .. }
            | Error::UnknownIssuer { .. }
            | Error::Revoked { .. }
            | Error::CertExpired { .. }
            | Error::CertNotYetValid { .. }
            | Error::CrlSignatureInvalid => &mut vector.hardware,
            Error::AkNotTrusted { .. }
            | Error::AkBindingMismatch { .. }
            | Error::AkCertificateKeyMismatch
            | Error::QualifiedSignerMismatch { .. }
            | Error::ChipIdMismatch { .. }
            | Error::TcbMismatch { .. }
            | Error::NonceMismatch { .. }
            | Error::RuntimeUserDataMismatch { .. } => &mut vector.instance_identity,
            Error::PcrMismatch { .. } | Error::PcrDigestMismatch { .. } | Error::EventLogReplayMismatch { .. } => {
                &mut vector.executables
            }
            Error::Policy(_) | Error::PlatformPolicy { .. } | Error::Sha1Refused => &mut vector.configuration,
            _ => &mut vector.sourced_data,
        };
        *slot = Some(CONTRAINDICATED);
        Self {
            submod: submod.to_owned(),
            vector,
            checks: Vec::new(),
            claims: Map::new(),
            error: Some(error.to_string()),
        }
    }

    /// A verified SEV-SNP report.
    pub fn from_snp(verified: &crate::snp::VerifiedReport<'_>) -> Self {
        let v = verified.verdict();
        let passed = |c| v.outcome(c) == Outcome::Passed;
        use crate::policy::Check;
        let vector = TrustVector {
            hardware: Some(AFFIRMING),
            instance_identity: Some(AFFIRMING),
            executables: affirm_if(passed(Check::Measurement)),
            configuration: affirm_if(passed(Check::Debug) && passed(Check::MigrationAgent)),
            runtime_opaque: Some(AFFIRMING),
            ..TrustVector::default()
        };
        let r = verified.report();
        let mut claims = Map::new();
        claims.insert("product".into(), json!(verified.product().to_string()));
        claims.insert("signer".into(), json!(verified.signer().name()));
        claims.insert("reported_tcb".into(), json!(verified.reported_tcb().to_string()));
        claims.insert("measurement".into(), json!(hex::encode(r.measurement())));
        claims.insert("report_data".into(), json!(hex::encode(r.report_data())));
        Self {
            submod: "sev-snp".into(),
            vector,
            checks: v.iter().map(|(c, o)| (c.name(), o)).collect(),
            claims,
            error: None,
        }
    }

    /// A verified GCE attestation.
    pub fn from_gce(verified: &crate::gce::VerifiedGce<'_>) -> Self {
        use crate::gce::{ConfidentialTechnology, GceCheck};
        let v = verified.verdict();
        let passed = |c| v.outcome(c) == Outcome::Passed;
        let tech = verified.platform().and_then(|p| p.technology);
        let vector = TrustVector {
            hardware: Some(AFFIRMING),
            instance_identity: affirm_if(passed(GceCheck::Nonce) || v.outcome(GceCheck::Nonce) == Outcome::Waived),
            executables: affirm_if(passed(GceCheck::EventLogReplay)),
            configuration: affirm_if(passed(GceCheck::Production) || passed(GceCheck::Project)),
            runtime_opaque: affirm_if(tech.is_some_and(|t| t != ConfidentialTechnology::None)),
            ..TrustVector::default()
        };
        let i = verified.instance();
        let mut claims = Map::new();
        claims.insert(
            "instance".into(),
            json!({"zone": i.zone, "project_id": i.project_id, "project_number": i.project_number,
                   "instance_id": i.instance_id, "instance_name": i.instance_name}),
        );
        if let Some(t) = tech {
            claims.insert("confidential_technology".into(), json!(t.name()));
        }
        let mut pcrs = Map::new();
        for bank in verified.banks() {
            let values: Map<String, Value> =
                (0..24).filter_map(|i| verified.pcr(bank, i).map(|v| (i.to_string(), json!(hex::encode(v))))).collect();
            pcrs.insert(bank.name().into(), Value::Object(values));
        }
        claims.insert("pcrs".into(), Value::Object(pcrs));
        Self {
            submod: "gcp-shielded-vm".into(),
            vector,
            checks: v.iter().map(|(c, o)| (c.name(), o)).collect(),
            claims,
            error: None,
        }
    }

    /// A verified TPM quote whose AK the caller trusts (say why in `ak_trusted`: `false` when the AK
    /// came with the evidence and nothing vouched for it, which leaves `instance-identity` unclaimed).
    pub fn from_quote(verified: &crate::tpm::VerifiedQuote<'_>, ak_trusted: bool) -> Self {
        let mut pcrs = Map::new();
        for (bank, bits) in verified.attest().pcr_selection().banks() {
            let values: Map<String, Value> = (0..24)
                .filter(|i| bits & (1 << i) != 0)
                .filter_map(|i| verified.pcr(bank, i).map(|v| (i.to_string(), json!(hex::encode(v)))))
                .collect();
            pcrs.insert(bank.name().into(), Value::Object(values));
        }
        let mut claims = Map::new();
        claims.insert("pcrs".into(), Value::Object(pcrs));
        claims.insert("firmware_version".into(), json!(format!("{:#018x}", verified.attest().firmware_version())));
        Self {
            submod: "tpm-quote".into(),
            vector: TrustVector { instance_identity: affirm_if(ak_trusted), ..TrustVector::default() },
            checks: vec![
                ("quote_signature", Outcome::Passed),
                ("nonce", Outcome::Passed),
                ("pcr_digest", Outcome::Passed),
            ],
            claims,
            error: None,
        }
    }

    /// A verified TD quote: every TDX check's outcome, the TCB status and advisory IDs, the measurements.
    pub fn from_tdx(verified: &crate::tdx::VerifiedTdQuote<'_>) -> Self {
        use crate::tdx::TdxCheck;
        let v = verified.verdict();
        let passed = |c| v.outcome(c) == Outcome::Passed;
        let body = verified.body();
        let vector = TrustVector {
            hardware: Some(AFFIRMING),
            instance_identity: affirm_if(passed(TdxCheck::ReportData)),
            executables: affirm_if(passed(TdxCheck::Mrtd)),
            // Every TD-attribute check passed: not under debug, no reserved bits, SEPT_VE_DISABLE, not
            // migratable (a waived one, e.g. a platform's, does not affirm the configuration).
            configuration: affirm_if(
                [
                    TdxCheck::Debug,
                    TdxCheck::DebugClass,
                    TdxCheck::ReservedAttributes,
                    TdxCheck::SeptVeDisable,
                    TdxCheck::Migratable,
                ]
                .into_iter()
                .all(passed),
            ),
            runtime_opaque: Some(AFFIRMING),
            ..TrustVector::default()
        };
        let mut claims = Map::new();
        claims.insert("tcb_status".into(), json!(verified.tcb_status().name()));
        claims.insert("advisory_ids".into(), json!(verified.advisory_ids().collect::<Vec<_>>()));
        claims.insert("fmspc".into(), json!(hex::encode(verified.pck().fmspc)));
        claims.insert("mr_td".into(), json!(hex::encode(body.mr_td())));
        let rtmrs: Vec<String> = body.rtmrs().iter().map(hex::encode).collect();
        claims.insert("rtmrs".into(), json!(rtmrs));
        claims.insert("report_data".into(), json!(hex::encode(body.report_data())));
        Self {
            submod: "tdx".into(),
            vector,
            checks: v.iter().map(|(c, o)| (c.name(), o)).collect(),
            claims,
            error: None,
        }
    }

    /// A validated attestation document of any variant.
    pub fn from_validated(validated: &crate::variant::Validated<'_>) -> Self {
        let mut a = match (&validated.quote, &validated.td) {
            (Some(q), _) => Self::from_quote(q, true),
            (None, Some(td)) => Self::from_tdx(td),
            // Never produced by the validator (every variant has a quote or a TD quote); no claim.
            (None, None) => Self {
                submod: String::new(),
                vector: TrustVector::default(),
                checks: Vec::new(),
                claims: Map::new(),
                error: None,
            },
        };
        a.submod = validated.variant.name().into();
        let hardware = validated.snp.is_some() || validated.instance.is_some() || validated.td.is_some();
        a.vector.hardware = affirm_if(hardware);
        a.vector.runtime_opaque = affirm_if(validated.snp.is_some() || validated.td.is_some());
        if let Some(td) = &validated.td
            && validated.quote.is_some()
        {
            // azure-tdx: the TD quote's claims next to the vTPM's.
            let t = Self::from_tdx(td);
            a.claims.insert("tdx".into(), Value::Object(t.claims));
            a.checks.extend(t.checks);
        }
        let executables = !validated.pcrs.is_empty() || validated.event_log_replayed || validated.ccel.is_some();
        a.vector.executables = affirm_if(executables || a.vector.executables.is_some());
        if let Some(i) = &validated.instance {
            a.claims.insert(
                "instance".into(),
                json!({"zone": i.zone, "project_id": i.project_id, "instance_name": i.instance_name}),
            );
        }
        if validated.ak_basis.is_some() {
            a.checks.push(("ak_trust", Outcome::Passed));
            a.checks.push(("pcr_policy", if validated.pcrs.is_empty() { Outcome::Waived } else { Outcome::Passed }));
            a.checks.push((
                "event_log_replay",
                if validated.event_log_replayed { Outcome::Passed } else { Outcome::Waived },
            ));
        }
        if validated.variant.is_tdx() {
            a.checks.push(("ccel_replay", if validated.ccel.is_some() { Outcome::Passed } else { Outcome::Waived }));
        }
        a
    }

    /// A verified Azure SEV-SNP vTPM bundle.
    pub fn from_azure_snp(verified: &crate::azure::VerifiedAzureSnp<'_>) -> Self {
        let snp = Self::from_snp(&verified.snp);
        let mut a = Self::from_quote(&verified.quote, true);
        a.submod = "azure-sev-snp-vtpm".into();
        a.vector = snp.vector;
        a.checks.extend(snp.checks);
        a.claims.extend(snp.claims);
        a
    }

    fn to_json(&self, policy_id: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("ear.status".into(), json!(self.vector.status()));
        m.insert("ear.trustworthiness-vector".into(), self.vector.to_json());
        if let Some(p) = policy_id {
            m.insert("ear.appraisal-policy-id".into(), json!(p));
        }
        let checks: Map<String, Value> =
            self.checks.iter().map(|(n, o)| ((*n).to_owned(), json!(outcome_name(*o)))).collect();
        m.insert("attest.checks".into(), Value::Object(checks));
        if !self.claims.is_empty() {
            m.insert("attest.claims".into(), Value::Object(self.claims.clone()));
        }
        if let Some(e) = &self.error {
            m.insert("attest.error".into(), json!(e));
        }
        Value::Object(m)
    }
}

/// Who produced the result (`ear.verifier-id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierId<'a> {
    /// The developer.
    pub developer: &'a str,
    /// The build.
    pub build: &'a str,
}

/// The EAR claims set for `appraisals` (one submodule each; later ones with the same name replace earlier).
pub fn claims(
    appraisals: &[Appraisal],
    verifier: &VerifierId<'_>,
    issued_at: UnixTime,
    nonce: Option<&[u8]>,
    policy_id: Option<&str>,
) -> Value {
    let submods: Map<String, Value> = appraisals.iter().map(|a| (a.submod.clone(), a.to_json(policy_id))).collect();
    let mut m = Map::new();
    m.insert("eat_profile".into(), json!(EAR_PROFILE));
    m.insert("iat".into(), json!(issued_at.as_secs()));
    m.insert("ear.verifier-id".into(), json!({"developer": verifier.developer, "build": verifier.build}));
    if let Some(n) = nonce {
        m.insert("eat_nonce".into(), json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(n)));
    }
    m.insert("submods".into(), Value::Object(submods));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_the_worst_tier() {
        assert_eq!(TrustVector::default().status(), "none");
        let v = TrustVector { hardware: Some(2), executables: Some(2), ..TrustVector::default() };
        assert_eq!(v.status(), "affirming");
        assert_eq!(TrustVector { configuration: Some(32), ..v }.status(), "warning");
        assert_eq!(TrustVector { configuration: Some(96), ..v }.status(), "contraindicated");
    }

    #[test]
    fn failures_are_contraindicated_with_the_error() {
        let a = Appraisal::failed("tpm-quote", &Error::QuoteSignatureInvalid);
        assert_eq!(a.vector.hardware, Some(CONTRAINDICATED));
        let c =
            claims(&[a], &VerifierId { developer: "attest", build: "test" }, UnixTime::from_secs(7), Some(b"n"), None);
        assert_eq!(c["submods"]["tpm-quote"]["ear.status"], "contraindicated");
        assert_eq!(c["submods"]["tpm-quote"]["ear.trustworthiness-vector"]["hardware"], 96);
        assert!(c["submods"]["tpm-quote"]["attest.error"].as_str().unwrap().contains("signature"));
        assert_eq!((c["iat"].as_u64(), c["eat_nonce"].as_str()), (Some(7), Some("bg")));
        assert_eq!(c["eat_profile"], EAR_PROFILE);
        let a = Appraisal::failed(
            "x",
            &Error::PcrMismatch {
                pcr: 4,
                expected: crate::error::Bytes::new(&[1]),
                found: crate::error::Bytes::new(&[2]),
            },
        );
        assert_eq!(a.vector.executables, Some(CONTRAINDICATED));
    }
}
