//! EAT Attestation Results (IETF RATS "EAR", draft-ietf-rats-ear, with the trustworthiness vector of
//! draft-ietf-rats-ar4si) and the result schema `attest-result/1` (`schemas/result-v1.schema.json`):
//! both built from any verdict as plain data, so that every output path (the CLI's text, `--json` and
//! `--format ear`, the C ABI's and Go's verdict JSON) says the same thing.
//!
//! Claim building lives in the engine because it is a pure function of a verdict (no keys, no clock, no
//! I/O); signing the claims as a JWT (ES256/ES384 with the user's key) is the CLI's job. Every verifier's
//! result converts into an [`Appraisal`] (one EAR submodule), failures too ([`Appraisal::failed`], which
//! keeps the checks that ran and names the failed check and the policy key that governs it);
//! [`claims`] assembles the token's claims set and [`Appraisal::result_json`] the result object.
//!
//! # Claim mapping
//!
//! | EAR claim | value |
//! |---|---|
//! | `eat_profile` | `tag:github.com,2023:veraison/ear` |
//! | `iat` | the time the result was issued (the caller's clock), seconds |
//! | `eat_nonce` | the verifier's nonce, base64url, when it is 8–64 bytes (EAT §4.1 `eat_nonce`) |
//! | `attest.nonce` | the nonce as hex, whatever its length (private claim) |
//! | `ear.verifier-id` | `{"developer": …, "build": …}` from the caller (name, version and commit) |
//! | `submods.<name>` | one [`Appraisal`]: `sev-snp`, `tdx`, `tpm-quote`, `azure-sev-snp-vtpm`, `gcp-shielded-vm`, or a variant name |
//! | `submods.<name>.ear.status` | [`Appraisal::status`] |
//! | `submods.<name>.ear.trustworthiness-vector` | the claims below (ar4si §2.3); absent claims mean "no claim" |
//! | `submods.<name>.ear.appraisal-policy-id` | the caller's policy id, when given |
//! | `submods.<name>.attest.checks` | every check by its stable name: `passed`, `waived`, `warned`, `failed`, `not-run` (private claim) |
//! | `submods.<name>.attest.claims` | the verdict's facts (instance, PCRs, TCB, …) (private claim) |
//! | `submods.<name>.attest.failure` | a rejection: `{check, class, reason, policy_key}` (private claim) |
//! | `submods.<name>.attest.trusted-time` | the time the evidence was judged at (RFC 3339; private claim) |
//!
//! `ear.status` (ar4si tiers): `contraindicated` for a rejection; for an accepted verification
//! `affirming` only when reference values were compared (`executables` affirmed: an SNP measurement or
//! TDX MRTD allow-list, a PCR policy) and no claim is worse; otherwise `warning` — the evidence is genuine
//! but nothing approved what runs.
//!
//! Trustworthiness vector of an accepted verification (ar4si value meanings):
//!
//! | claim | value | when |
//! |---|---|---|
//! | `hardware` | 2 (genuine) | the evidence chains to a pinned vendor root (AMD ARK, Intel SGX Root CA, Google's AK CA; Azure and the SNP variants through the SNP report) |
//! | `instance-identity` | 2 (recognized) | the signing key is bound to the instance (VCEK/VLEK, TD quote with REPORTDATA checked, certified or registered AK) and a nonce made it fresh; a key given by the user or a waived nonce makes no claim |
//! | `executables` | 2 (approved) | reference values were compared (SNP measurement, TDX MRTD, a PCR policy); a replayed event log alone makes no claim |
//! | `configuration` | 2 (approved) | the policy's configuration checks ran (SNP/TDX debug and migration, GCE production or project) |
//! | `runtime-opaque` | 2 (encrypted memory) | SEV-SNP or TDX evidence, or a GCE confidential technology from the verified log |
//! | `file-system`, `storage-opaque`, `sourced-data` | no claim | nothing here speaks to them |
//!
//! A rejection ([`Appraisal::failed`]) is `contraindicated`: `hardware` 96 for signature and
//! certificate-chain failures, `instance-identity` 96 for AK trust and binding failures, `executables` 96
//! for PCR, measurement and event-log mismatches, `configuration` 96 for other policy failures, and
//! `sourced-data` 96 for malformed evidence.

use crate::error::{Error, ErrorClass};
use crate::policy::Outcome;
use crate::time::UnixTime;
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The EAR profile this module produces.
pub const EAR_PROFILE: &str = "tag:github.com,2023:veraison/ear";

/// The result schema's identifier, the value of every result object's `schema` (the JSON Schema is
/// `schemas/result-v1.schema.json`; its `$id` is [`RESULT_SCHEMA_ID`]). A change that removes or retypes a
/// field bumps the number.
pub const RESULT_SCHEMA: &str = "attest-result/1";
/// The `$id` of `schemas/result-v1.schema.json`.
pub const RESULT_SCHEMA_ID: &str = "urn:attest:schema:result:1";

/// ar4si: affirming.
pub const AFFIRMING: i8 = 2;
/// ar4si: contraindicated (the lowest value of the tier).
pub const CONTRAINDICATED: i8 = 96;

/// EAT's bounds on `eat_nonce` (bytes before base64url).
const EAT_NONCE_LEN: core::ops::RangeInclusive<usize> = 8..=64;

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

    /// The claims made, as a JSON object (`{"hardware": 2, …}`).
    pub fn to_json(self) -> Value {
        Value::Object(self.entries().into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), json!(v)))).collect())
    }
}

/// What happened to one check, in every output (result schema, EAR, text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckOutcome {
    /// Checked and satisfied.
    Passed,
    /// Not checked: the policy does not ask for it, or it does not apply.
    Waived,
    /// Checked, not satisfied, and accepted because the expectation is warn-only.
    Warned,
    /// Checked and not satisfied: the reason of the rejection.
    Failed,
    /// Not reached: the verification stopped before it (or the verifier records no partial verdict).
    NotRun,
}

impl CheckOutcome {
    /// A stable name: `passed`, `waived`, `warned`, `failed`, `not-run`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Waived => "waived",
            Self::Warned => "warned",
            Self::Failed => "failed",
            Self::NotRun => "not-run",
        }
    }
}

impl From<Outcome> for CheckOutcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Passed => Self::Passed,
            Outcome::Waived => Self::Waived,
            Outcome::NotRun => Self::NotRun,
        }
    }
}

/// Why a verification was refused: the failed check, the kind of failure, the reason, and the policy key
/// that governs the check (when one does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The failed check's stable name.
    pub check: String,
    /// Malformed input, or well-formed evidence a check refused.
    pub class: ErrorClass,
    /// The engine's message.
    pub reason: String,
    /// The policy key that accepts such evidence knowingly, if any.
    pub policy_key: Option<&'static str>,
}

impl Failure {
    /// The failure of `error`; `structure_check` names the check of malformed input (`report_structure`, …).
    pub fn of(error: &Error, structure_check: &str) -> Self {
        let check = match error.class() {
            ErrorClass::Malformed => structure_check.to_owned(),
            _ => error.failed_check().unwrap_or(structure_check).to_owned(),
        };
        Self { check, class: error.class(), reason: error.to_string(), policy_key: error.policy_key() }
    }

    fn to_json(&self) -> Value {
        json!({"check": self.check, "class": self.class.name(), "reason": self.reason, "policy_key": self.policy_key})
    }
}

/// One appraised piece of evidence: an EAR submodule, and the body of a result object.
#[derive(Clone, Debug, PartialEq)]
pub struct Appraisal {
    /// The submodule name.
    pub submod: String,
    /// The trustworthiness vector.
    pub vector: TrustVector,
    /// Every check by its stable name.
    pub checks: Vec<(&'static str, CheckOutcome)>,
    /// Facts of the verdict (instance, PCRs, …).
    pub claims: Map<String, Value>,
    /// Why the verification was refused (`None`: accepted).
    pub failure: Option<Failure>,
}

fn affirm_if(b: bool) -> Option<i8> {
    b.then_some(AFFIRMING)
}

fn checks_of<C: Copy>(
    iter: impl Iterator<Item = (C, Outcome)>,
    name: fn(C) -> &'static str,
) -> Vec<(&'static str, CheckOutcome)> {
    iter.map(|(c, o)| (name(c), o.into())).collect()
}

impl Appraisal {
    /// A rejection of `submod`: `checks` are the checks the verifier recorded before it stopped (empty when
    /// it records none); the failed one is marked `failed` (and added when missing). `structure_check`
    /// names the check that malformed input fails (`report_structure`, `quote_structure`, …).
    pub fn failed(
        submod: &str,
        error: &Error,
        structure_check: &'static str,
        mut checks: Vec<(&'static str, CheckOutcome)>,
    ) -> Self {
        let mut vector = TrustVector::default();
        let slot = match error {
            Error::ReportSignatureInvalid
            | Error::QuoteSignatureInvalid
            | Error::TdQuoteSignatureInvalid
            | Error::QeReportSignatureInvalid
            | Error::CertSignatureInvalid { .. }
            | Error::IssuerMismatch { .. }
            | Error::NotACa { .. }
            | Error::UntrustedCertificate { .. }
            | Error::UntrustedIntelRoot
            | Error::UnknownIssuer { .. }
            | Error::Revoked { .. }
            | Error::CertExpired { .. }
            | Error::CertNotYetValid { .. }
            | Error::CrlSignatureInvalid
            | Error::CollateralSignatureInvalid { .. } => &mut vector.hardware,
            Error::AkNotTrusted { .. }
            | Error::AkBindingMismatch { .. }
            | Error::AkCertificateKeyMismatch
            | Error::QualifiedSignerMismatch { .. }
            | Error::ChipIdMismatch { .. }
            | Error::TcbMismatch { .. }
            | Error::NonceMismatch { .. }
            | Error::FreshnessBindingMismatch { .. }
            | Error::RuntimeUserDataMismatch { .. } => &mut vector.instance_identity,
            Error::PcrMismatch { .. }
            | Error::PcrDigestMismatch { .. }
            | Error::EventLogReplayMismatch { .. }
            | Error::RtmrReplayMismatch { .. }
            | Error::LaunchUnpinned => &mut vector.executables,
            e if e.class() == ErrorClass::Malformed => &mut vector.sourced_data,
            _ => &mut vector.configuration,
        };
        *slot = Some(CONTRAINDICATED);
        let failure = Failure::of(error, structure_check);
        if let Some(entry) = checks.iter_mut().find(|(n, _)| *n == failure.check) {
            entry.1 = CheckOutcome::Failed;
        } else {
            // The failed check by the name the failure carries (a `'static` name of a known check, or the
            // structure check).
            let name =
                error.failed_check().filter(|_| failure.class != ErrorClass::Malformed).unwrap_or(structure_check);
            checks.push((name, CheckOutcome::Failed));
        }
        Self { submod: submod.to_owned(), vector, checks, claims: Map::new(), failure: Some(failure) }
    }

    /// The EAR status (see the module documentation).
    pub fn status(&self) -> &'static str {
        if self.failure.is_some() {
            return "contraindicated";
        }
        match self.vector.status() {
            "affirming" | "none"
                if self.vector.executables == Some(AFFIRMING)
                    && !self.checks.iter().any(|(_, o)| *o == CheckOutcome::Warned) =>
            {
                "affirming"
            }
            "affirming" | "none" => "warning",
            worse => worse,
        }
    }

    /// A verified SEV-SNP report.
    pub fn from_snp(verified: &crate::snp::VerifiedReport<'_>) -> Self {
        let v = verified.verdict();
        let passed = |c| v.outcome(c) == Outcome::Passed;
        use crate::snp::Check;
        let fresh = passed(Check::ReportData);
        let vector = TrustVector {
            hardware: Some(AFFIRMING),
            instance_identity: affirm_if(fresh),
            executables: affirm_if(passed(Check::Measurement) || passed(Check::IdKeyDigest)),
            configuration: affirm_if(passed(Check::Debug) && passed(Check::MigrationAgent)),
            runtime_opaque: Some(AFFIRMING),
            ..TrustVector::default()
        };
        let r = verified.report();
        let mut claims = Map::new();
        claims.insert("product".into(), json!(verified.product().to_string()));
        claims.insert("signer".into(), json!(verified.signer().name()));
        claims.insert("version".into(), json!(r.version()));
        claims.insert("reported_tcb".into(), serde_json::to_value(verified.reported_tcb()).unwrap_or(Value::Null));
        claims.insert("measurement".into(), json!(hex::encode(r.measurement())));
        claims.insert("report_data".into(), json!(hex::encode(r.report_data())));
        claims.insert("chip_id".into(), json!(hex::encode(r.chip_id())));
        Self { submod: "sev-snp".into(), vector, checks: checks_of(v.iter(), Check::name), claims, failure: None }
    }

    /// A verified GCE attestation.
    pub fn from_gce(verified: &crate::gce::VerifiedGce<'_>) -> Self {
        use crate::gce::{ConfidentialTechnology, GceCheck};
        let v = verified.verdict();
        let passed = |c| v.outcome(c) == Outcome::Passed;
        let tech = verified.platform().and_then(|p| p.technology);
        let vector = TrustVector {
            hardware: Some(AFFIRMING),
            // Google's certificate binds the AK to the instance; only a nonce makes the quote this one's.
            instance_identity: affirm_if(passed(GceCheck::Nonce)),
            // The replayed log is consistent with the PCRs, but nothing here compares it to reference values.
            executables: None,
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
            checks: checks_of(v.iter(), GceCheck::name),
            claims,
            failure: None,
        }
    }

    /// A verified TPM quote whose AK the caller trusts (say why in `ak_trusted`: `false` when the AK
    /// came with the evidence and nothing vouched for it, which leaves `instance-identity` unclaimed) with
    /// a nonce (`fresh`; `false` for an empty one, which also leaves `instance-identity` unclaimed).
    pub fn from_quote(verified: &crate::tpm::VerifiedQuote<'_>, ak_trusted: bool, fresh: bool) -> Self {
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
            vector: TrustVector { instance_identity: affirm_if(ak_trusted && fresh), ..TrustVector::default() },
            checks: vec![
                ("quote_signature", CheckOutcome::Passed),
                ("nonce", if fresh { CheckOutcome::Passed } else { CheckOutcome::Waived }),
                ("pcr_digest", CheckOutcome::Passed),
            ],
            claims,
            failure: None,
        }
    }

    /// The checks of a refused TD quote: the TDX verifier records no partial verdict, so every TDX check is
    /// `not-run` ([`Self::failed`] then marks the failed one).
    pub fn tdx_checks_not_run() -> Vec<(&'static str, CheckOutcome)> {
        crate::tdx::TdxCheck::ALL.iter().map(|c| (c.name(), CheckOutcome::NotRun)).collect()
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
        Self { submod: "tdx".into(), vector, checks: checks_of(v.iter(), TdxCheck::name), claims, failure: None }
    }

    /// A validated attestation document of any variant.
    pub fn from_validated(validated: &crate::variant::Validated<'_>) -> Self {
        use crate::variant::PcrOutcome;
        let mut a = match (&validated.quote, &validated.td) {
            (Some(q), _) => Self::from_quote(q, true, true),
            (None, Some(td)) => Self::from_tdx(td),
            // Never produced by the validator (every variant has a quote or a TD quote); no claim.
            (None, None) => Self {
                submod: String::new(),
                vector: TrustVector::default(),
                checks: Vec::new(),
                claims: Map::new(),
                failure: None,
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
        let compared = validated.pcrs.iter().any(|(_, o)| *o == PcrOutcome::Match);
        a.vector.executables = affirm_if(compared || a.vector.executables.is_some());
        if let Some(i) = &validated.instance {
            a.claims.insert(
                "instance".into(),
                json!({"zone": i.zone, "project_id": i.project_id, "instance_name": i.instance_name}),
            );
        }
        a.claims.insert("launch".into(), json!(validated.launch.name()));
        if validated.ak_basis.is_some() {
            a.checks.push(("ak_trust", CheckOutcome::Passed));
            let pcr_policy = if validated.pcrs.is_empty() {
                CheckOutcome::Waived
            } else if validated.pcrs.iter().any(|(_, o)| *o == PcrOutcome::MismatchWarnOnly) {
                CheckOutcome::Warned
            } else {
                CheckOutcome::Passed
            };
            a.checks.push(("pcr_policy", pcr_policy));
            a.checks.push((
                "event_log_replay",
                if validated.event_log_replayed { CheckOutcome::Passed } else { CheckOutcome::Waived },
            ));
        }
        if validated.variant.is_tdx() {
            a.checks.push((
                "ccel_replay",
                if validated.ccel.is_some() { CheckOutcome::Passed } else { CheckOutcome::Waived },
            ));
        }
        a
    }

    /// A verified Azure SEV-SNP vTPM bundle (`fresh`: the quote carried a non-empty nonce).
    pub fn from_azure_snp(verified: &crate::azure::VerifiedAzureSnp<'_>, fresh: bool) -> Self {
        let snp = Self::from_snp(&verified.snp);
        let mut a = Self::from_quote(&verified.quote, true, fresh);
        a.submod = "azure-sev-snp-vtpm".into();
        a.vector = TrustVector { instance_identity: affirm_if(fresh), ..snp.vector };
        a.checks.extend(snp.checks);
        a.claims.extend(snp.claims);
        a
    }

    fn checks_json(&self) -> Value {
        Value::Object(self.checks.iter().map(|(n, o)| ((*n).to_owned(), json!(o.name()))).collect())
    }

    fn to_ear(&self, policy_id: Option<&str>, trusted_time: UnixTime) -> Value {
        let mut m = Map::new();
        m.insert("ear.status".into(), json!(self.status()));
        m.insert("ear.trustworthiness-vector".into(), self.vector.to_json());
        if let Some(p) = policy_id {
            m.insert("ear.appraisal-policy-id".into(), json!(p));
        }
        m.insert("attest.checks".into(), self.checks_json());
        if !self.claims.is_empty() {
            m.insert("attest.claims".into(), Value::Object(self.claims.clone()));
        }
        if let Some(f) = &self.failure {
            m.insert("attest.failure".into(), f.to_json());
        }
        m.insert("attest.trusted-time".into(), json!(trusted_time.to_string()));
        Value::Object(m)
    }

    /// The result object of schema [`RESULT_SCHEMA`] (`schemas/result-v1.schema.json`): `verifier` names
    /// the verifier (`snp`, `tdx`, `tpm`, `azure`, `gce`, `document`), `evidence` says what was verified,
    /// `input` carries facts about the input (its format, warnings), `time` is the trusted time.
    pub fn result_json(&self, verifier: &str, evidence: &str, input: &Map<String, Value>, time: UnixTime) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), json!(RESULT_SCHEMA));
        m.insert("accepted".into(), json!(self.failure.is_none()));
        m.insert("verifier".into(), json!(verifier));
        m.insert("evidence".into(), json!(evidence));
        m.insert("status".into(), json!(self.status()));
        m.insert("trustworthiness_vector".into(), self.vector.to_json());
        m.insert("checks".into(), self.checks_json());
        m.insert("failure".into(), self.failure.as_ref().map_or(Value::Null, Failure::to_json));
        m.insert("claims".into(), Value::Object(self.claims.clone()));
        m.insert("input".into(), Value::Object(input.clone()));
        m.insert("time".into(), json!(time.to_string()));
        Value::Object(m)
    }
}

/// Who produced the result (`ear.verifier-id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierId<'a> {
    /// The developer.
    pub developer: &'a str,
    /// The build (name, version, commit).
    pub build: &'a str,
}

/// What an EAR token says besides its submodules.
#[derive(Clone, Debug)]
pub struct Issue<'a> {
    /// Who issued it.
    pub verifier: VerifierId<'a>,
    /// When it was issued (`iat`): the issuer's clock, not the trusted time of the evidence.
    pub issued_at: UnixTime,
    /// The time the evidence was judged at.
    pub trusted_time: UnixTime,
    /// The verifier's nonce.
    pub nonce: Option<&'a [u8]>,
    /// The appraisal policy's id.
    pub policy_id: Option<&'a str>,
}

/// The EAR claims set for `appraisals` (one submodule each; later ones with the same name replace earlier).
pub fn claims(appraisals: &[Appraisal], issue: &Issue<'_>) -> Value {
    let submods: Map<String, Value> =
        appraisals.iter().map(|a| (a.submod.clone(), a.to_ear(issue.policy_id, issue.trusted_time))).collect();
    let mut m = Map::new();
    m.insert("eat_profile".into(), json!(EAR_PROFILE));
    m.insert("iat".into(), json!(issue.issued_at.as_secs()));
    m.insert("ear.verifier-id".into(), json!({"developer": issue.verifier.developer, "build": issue.verifier.build}));
    if let Some(n) = issue.nonce {
        if EAT_NONCE_LEN.contains(&n.len()) {
            m.insert("eat_nonce".into(), json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(n)));
        }
        m.insert("attest.nonce".into(), json!(hex::encode(n)));
    }
    m.insert("submods".into(), Value::Object(submods));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(nonce: Option<&[u8]>) -> Issue<'_> {
        Issue {
            verifier: VerifierId { developer: "attest", build: "test" },
            issued_at: UnixTime::from_secs(7),
            trusted_time: UnixTime::from_secs(3),
            nonce,
            policy_id: None,
        }
    }

    #[test]
    fn status_is_the_worst_tier() {
        assert_eq!(TrustVector::default().status(), "none");
        let v = TrustVector { hardware: Some(2), executables: Some(2), ..TrustVector::default() };
        assert_eq!(v.status(), "affirming");
        assert_eq!(TrustVector { configuration: Some(32), ..v }.status(), "warning");
        assert_eq!(TrustVector { configuration: Some(96), ..v }.status(), "contraindicated");
    }

    #[test]
    fn accepted_without_reference_values_is_a_warning() {
        let mut a = Appraisal {
            submod: "x".into(),
            vector: TrustVector { hardware: Some(2), ..TrustVector::default() },
            checks: vec![("quote_signature", CheckOutcome::Passed)],
            claims: Map::new(),
            failure: None,
        };
        assert_eq!(a.status(), "warning");
        a.vector.executables = Some(AFFIRMING);
        assert_eq!(a.status(), "affirming");
        a.checks.push(("pcr_policy", CheckOutcome::Warned));
        assert_eq!(a.status(), "warning");
    }

    #[test]
    fn failures_are_contraindicated_with_the_failure() {
        let a = Appraisal::failed("tpm-quote", &Error::QuoteSignatureInvalid, "quote_structure", Vec::new());
        assert_eq!(a.vector.hardware, Some(CONTRAINDICATED));
        let c = claims(std::slice::from_ref(&a), &issue(Some(b"12345678")));
        let sub = &c["submods"]["tpm-quote"];
        assert_eq!(sub["ear.status"], "contraindicated");
        assert_eq!(sub["ear.trustworthiness-vector"]["hardware"], 96);
        assert_eq!(sub["attest.failure"]["check"], "quote_signature");
        assert_eq!(sub["attest.checks"]["quote_signature"], "failed");
        assert!(sub["attest.failure"]["reason"].as_str().unwrap().contains("signature"));
        assert_eq!((c["iat"].as_u64(), c["eat_nonce"].as_str()), (Some(7), Some("MTIzNDU2Nzg")));
        assert_eq!(c["eat_profile"], EAR_PROFILE);
        // Too short for EAT: only the private claim.
        let c = claims(std::slice::from_ref(&a), &issue(Some(b"n")));
        assert!(c.get("eat_nonce").is_none());
        assert_eq!(c["attest.nonce"], "6e");
        let r = a.result_json("tpm", "TPM quote", &Map::new(), UnixTime::from_secs(3));
        assert_eq!((r["schema"].as_str(), r["accepted"].as_bool()), (Some(RESULT_SCHEMA), Some(false)));
        assert_eq!(r["failure"]["class"], "refused");
        let m = Appraisal::failed("x", &Error::TpmMagic { found: 1 }, "quote_structure", Vec::new());
        assert_eq!((m.failure.as_ref().unwrap().check.as_str(), m.vector.sourced_data), ("quote_structure", Some(96)));
        let a = Appraisal::failed(
            "x",
            &Error::PcrMismatch {
                pcr: 4,
                expected: crate::error::Bytes::new(&[1]),
                found: crate::error::Bytes::new(&[2]),
            },
            "document_structure",
            vec![("ak_trust", CheckOutcome::Passed)],
        );
        assert_eq!(a.vector.executables, Some(CONTRAINDICATED));
        assert_eq!(a.checks, vec![("ak_trust", CheckOutcome::Passed), ("pcr_policy", CheckOutcome::Failed)]);
    }
}
