//! What `attest init` and `attest verify` share: reaching a node over aTLS, the validator of the node's
//! variant built from a measurements file (and, per variant, an AK registry, an SNP launch policy or the
//! GCE roots), a record of what the node proved, and private file writes.
//!
//! Every variant is supported ([`VariantArgs`]). `qemu-vtpm` AKs are trusted through the AK registry, which
//! `attest init` fills by credential activation; the SNP variants trust the AK through the SNP report and
//! need a launch policy (`--snp-policy` pinning MEASUREMENT or ID_KEY_DIGEST); `gcp-shielded-vm` trusts
//! Google's AK certificate; the TDX variants are verified through their TD quote (Intel's collateral for
//! each `--tdx-platform`, from the PCS store or Intel's PCS), their launch pinned by MRTD — the measurements
//! file's index 0 for `qemu-tdx`, which has no vTPM and is measured by MRTD and RTMR0–3, or `--tdx-policy`
//! for `azure-tdx`. SNP certificates come with the node's document (the VCEK/VLEK), chained to AMD's
//! pinned roots — or, in builds with the cargo feature `dangerous-test-roots` only, to the test roots of
//! simulated hardware (`--dangerous-test-roots`), which every verdict then names.
//!
//! # The identity connection
//!
//! Before a node's AK is registered, no validator can trust its attestation, yet `attest init` must reach the
//! node's `CredentialActivation` service over aTLS to register it. [`dangerous_identity_connector`] opens that
//! first connection with a validator that takes any AK as trusted-on-first-use (recording nothing) and no PCR
//! policy: the quote is still checked for signature, freshness and key binding, which ties the AK being
//! registered to the node at the other end. Nothing sent on it is secret and nothing learned is trusted: trust
//! comes from credential activation, and the init request goes only over a second, fully verified connection
//! ([`verifying_connector`]).

use super::UsageError;
use attest_atls::nonce::Nonce;
use attest_atls::{AtlsConnector, AttestationValidator, PeerAttestation, ValidationError, Verifier};
use attest_engine::crypto::HashAlgorithm;
use attest_engine::gce::GceVerifier;
use attest_engine::snp::SnpVerifier;
use attest_engine::variant::{AkBasis, AkRegistry, AkTrust, PcrOutcome, PcrPolicy, Validator, Variant};
use attest_engine::{LaunchPinning, UnixTime};
use attest_proto::attest::v1::AttestationDocument;
use attest_proto::document::{pcr_values, view as document};
use attest_registration::{FileAkRegistry, ak_digest};
use attest_trust::{Expected, ValidatorFactory};
use prost::Message;
use serde_json::{Value, json};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Time allowed for the TCP connect and the aTLS handshake (which includes a TPM quote on the node).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves `HOST:PORT` to its first address.
pub fn resolve(endpoint: &str) -> Result<SocketAddr, UsageError> {
    let bad = |why: String| UsageError::new(format!("--endpoint {endpoint:?}: {why}"));
    let mut addrs = endpoint.to_socket_addrs().map_err(|e| bad(format!("expected HOST:PORT ({e})")))?;
    addrs.next().ok_or_else(|| bad("the host has no address".into()))
}

/// What a measurements file expects of a node of `variant` (its map, or the variant's entry of a release
/// list), read without a signature check: for inspecting evidence (`attest document verify`), never for a
/// command that trusts a node with something.
pub fn load_expected(path: &Path, variant: Variant, factory: &ValidatorFactory) -> Result<Expected, UsageError> {
    let bytes = crate::input::read_file(path, "measurements file")?;
    let bad = |e: attest_measurements::Error| UsageError::new(format!("{}: {e}", path.display()));
    let document = attest_measurements::parse_document(&bytes).map_err(bad)?;
    factory.expected_in(variant, &document).map_err(|e| match e {
        attest_trust::FactoryError::Measurements { source, .. } => bad(source),
        other => UsageError::new(other.to_string()),
    })
}

/// The PCR 15 value of a node bound to `cluster_id`: SHA-256(0³² ‖ cluster id) (every variant with a vTPM).
pub fn cluster_pcr15(cluster_id: &[u8; 32]) -> [u8; 32] {
    let mut h = openssl::sha::Sha256::new();
    h.update(&[0; 32]);
    h.update(cluster_id);
    h.finish()
}

/// `expected` with the lock register of `variant` (the variant table's `lock` column: PCR 15, or RTMR3 on a
/// TD without a vTPM) expected (enforced) to hold `cluster_id`'s bound value
/// ([`attest_engine::variant::LockRegister::bound`]); unchanged without a cluster id.
pub fn with_cluster_id(variant: Variant, expected: Expected, cluster_id: Option<&[u8; 32]>) -> Expected {
    match cluster_id {
        Some(id) => {
            let register = variant.info().lock;
            expected.with_lock(register, &register.bound(attest_engine::crypto::default_provider(), id))
        }
        None => expected,
    }
}

/// Which variant a node attests with, and what its validator needs beyond the measurements.
#[derive(Debug, clap::Args)]
pub struct VariantArgs {
    /// The node's attestation variant.
    #[arg(long, default_value = "qemu-vtpm", value_parser = attest_trust::variant_arg::any())]
    pub variant: Variant,
    /// SNP policy (TOML or JSON) of the SNP variants; it must pin the launch (measurements or id_key_digests).
    #[arg(long, value_name = "FILE")]
    pub snp_policy: Option<PathBuf>,
    /// DANGEROUS: trust the test roots of simulated hardware in DIR instead of AMD's and Google's. Only
    /// builds with the cargo feature dangerous-test-roots accept it.
    #[arg(long, value_name = "DIR")]
    pub dangerous_test_roots: Option<PathBuf>,
    /// TDX variants: the platforms whose collateral is loaded (`--tdx-platform`, from the PCS store or
    /// Intel's PCS; the test roots bring their own) and the TDX policy (`--tdx-policy`: `azure-tdx` pins its
    /// MRTD there; `qemu-tdx` takes MRTD and RTMRs from the measurements file).
    #[command(flatten)]
    pub tdx: attest_trust::tdx::TdxArgs,
}

/// A validator for a node, and the test roots it trusts (their description, for every verdict).
#[derive(Debug)]
pub struct NodeValidator {
    /// The validator.
    pub validator: Validator,
    /// `Some(description)` when it trusts test roots.
    pub test_roots: Option<String>,
}

impl VariantArgs {
    /// The validator of [`VariantArgs::variant`] expecting `pcrs`, with `registry`'s AKs (`qemu-vtpm`), for
    /// evidence at rest (`attest document verify`): the SNP policy of `--snp-policy` must pin the launch (a
    /// usage error otherwise); CRLs are whatever the verifier holds (the test PKI's with test roots; none from
    /// AMD: revocation is not checked offline and the verdict's `revocation` says so).
    pub fn offline_validator(
        &self,
        measurements: &Path,
        registry: impl FnOnce() -> Result<Arc<dyn AkRegistry>, UsageError>,
    ) -> Result<NodeValidator, UsageError> {
        let (factory, test_roots) = self.factory()?;
        let expected = load_expected(measurements, self.variant, &factory)?;
        let registry = registry()?;
        let snp_policy = attest_trust::TrustArgs::default()
            .snp_policy(self.snp_policy.as_deref())
            .map_err(|e| UsageError::new(e.to_string()))?;
        let factory = ValidatorFactory { snp_policy, ak_registry: Some(registry), ..factory };
        let validator = factory.validator(self.variant, expected).map_err(|e| UsageError::new(e.to_string()))?;
        validator.launch_pinning().map_err(|e| {
            UsageError::new(format!(
                "{}: {e} (give --snp-policy pinning the launch measurement, or MRTD: --tdx-policy or the measurements)",
                self.variant
            ))
        })?;
        Ok(NodeValidator { validator, test_roots })
    }

    /// The validator of [`VariantArgs::variant`] for the measurements at `measurements`, with `registry`'s
    /// AKs (where the variant trusts its AK through a registry; `registry` is asked after the trust checks),
    /// and what it trusts: the measurements only under `trust`'s signature rules, an SNP variant only with a
    /// pinned launch, and AMD's CRLs loaded (`crate::trust::prepare`; with test roots, the test PKI's CRLs
    /// from their directory instead). With `cluster_id`, PCR 15 must hold it (replacing the file's PCR 15
    /// entry). Any refusal is a usage error.
    pub fn validator(
        &self,
        trust: &attest_trust::TrustArgs,
        measurements: &Path,
        registry: impl FnOnce() -> Result<Arc<dyn AkRegistry>, UsageError>,
        rt: &tokio::runtime::Runtime,
        cluster_id: Option<&[u8; 32]>,
    ) -> Result<(NodeValidator, attest_trust::Trust), UsageError> {
        let (factory, test_roots) = self.factory()?;
        let prepared = crate::trust::prepare(
            trust,
            self.variant,
            measurements,
            self.snp_policy.as_deref(),
            factory,
            test_roots.is_some(),
            rt,
        )?;
        // TD quotes need Intel's collateral for their platform (the test roots bring their own).
        if self.variant.is_tdx() && test_roots.is_none() {
            let installed = rt
                .block_on(self.tdx.install(&prepared.factory.tdx))
                .map_err(|e| UsageError::new(format!("TDX collateral: {e}")))?;
            if installed.is_none() {
                return Err(UsageError::new(format!(
                    "{}: give --tdx-platform FMSPC for each TDX platform whose quotes are accepted",
                    self.variant
                )));
            }
        }
        // The AK registry only once the measurements, the launch and the CRLs are trusted.
        let factory = ValidatorFactory { ak_registry: Some(registry()?), ..prepared.factory };
        let expected = with_cluster_id(self.variant, prepared.expected, cluster_id);
        let validator = factory.validator(self.variant, expected).map_err(|e| UsageError::new(e.to_string()))?;
        Ok((NodeValidator { validator, test_roots }, prepared.trust))
    }

    /// The validator factory of these flags: AMD's, Google's and Intel's pinned roots, or
    /// (`--dangerous-test-roots`, feature builds only) the test roots of simulated hardware, described for every
    /// verdict; the TDX policy of `--tdx-policy`.
    fn factory(&self) -> Result<(ValidatorFactory, Option<String>), UsageError> {
        let (snp, gce, tdx, test_roots) = match &self.dangerous_test_roots {
            None => (SnpVerifier::new(), GceVerifier::new(), None, None),
            Some(dir) => test_root_verifiers(dir)?,
        };
        let tdx_policy = self.tdx.policy().map_err(|e| UsageError::new(e.to_string()))?;
        let mut factory =
            ValidatorFactory { snp: Arc::new(snp), gce: Arc::new(gce), tdx_policy, ..ValidatorFactory::default() };
        if let Some(tdx) = tdx {
            factory.tdx = Arc::new(tdx);
        }
        Ok((factory, test_roots))
    }
}

/// The SNP and GCE verifiers, the TDX verifier (with its collateral) when the test roots have an Intel-like
/// root, and the roots' description.
type TestRootVerifiers = (SnpVerifier, GceVerifier, Option<attest_engine::tdx::TdxVerifier>, Option<String>);

#[cfg(feature = "dangerous-test-roots")]
fn test_root_verifiers(dir: &Path) -> Result<TestRootVerifiers, UsageError> {
    let roots = attest_kds::test_roots::TestRoots::load(dir).map_err(|e| UsageError::new(e.to_string()))?;
    let snp = if roots.has_snp() {
        roots.snp_verifier().map_err(|e| UsageError::new(e.to_string()))?
    } else {
        SnpVerifier::new()
    };
    let tdx = roots.tdx_verifier().map_err(|e| UsageError::new(e.to_string()))?;
    eprintln!("attest: WARNING: {}", roots.describe());
    Ok((snp, roots.gce_verifier().unwrap_or_default(), tdx, Some(roots.describe())))
}

#[cfg(not(feature = "dangerous-test-roots"))]
fn test_root_verifiers(_: &Path) -> Result<TestRootVerifiers, UsageError> {
    Err(UsageError::new(
        "--dangerous-test-roots: this build cannot trust test roots (built without the feature dangerous-test-roots)",
    ))
}

/// The node that `attest verify` and `attest recover` attest: its endpoint, what it must measure, and the AK
/// registry that knows its AK.
#[derive(Debug, clap::Args)]
pub struct NodeTarget {
    /// The node's endpoint, HOST:PORT (`attest verify`: its aTLS endpoint, e.g. the bootstrapper;
    /// `attest recover`: its recovery endpoint).
    #[arg(long)]
    pub endpoint: String,
    /// Expected measurements of the node (JSON or YAML map, or a one-entry release list).
    #[arg(long)]
    pub measurements: PathBuf,
    /// The AK registry that knows the node's AK (`attest init`'s, or the join service's; `qemu-vtpm`).
    #[arg(long, default_value = "ak-registry.json")]
    pub ak_registry: PathBuf,
}

impl NodeTarget {
    /// The AKs a node of `variant` may use: where the variant trusts its AK through a registry (`qemu-vtpm`),
    /// the registry file, which must exist (an empty registry would refuse every node); the other variants
    /// prove their AK in the evidence.
    pub fn registry(&self, variant: Variant) -> Result<Arc<dyn AkRegistry>, UsageError> {
        if variant.info().ak != AkTrust::Registry {
            return Ok(Arc::new(attest_engine::variant::StaticAkRegistry::default()));
        }
        if !self.ak_registry.is_file() {
            return Err(UsageError::new(format!(
                "--ak-registry {}: no such file (attest init writes it when it registers the node's AK)",
                self.ak_registry.display()
            )));
        }
        Ok(open_registry(&self.ak_registry)?)
    }
}

/// Opens (or starts) the AK registry file.
pub fn open_registry(path: &Path) -> Result<Arc<FileAkRegistry>, UsageError> {
    FileAkRegistry::open(path).map(Arc::new).map_err(|e| UsageError::new(format!("--ak-registry: {e}")))
}

/// What a node proved in its aTLS certificate, as checked.
#[derive(Clone, Debug)]
pub struct AttestationSummary {
    /// The variant.
    pub variant: Variant,
    /// SHA-256 of the AK's TPMT_PUBLIC; `None` where the document carries no TPM2B_PUBLIC (`azure-sev-snp`:
    /// the AK comes from the HCL runtime data as a JWK).
    pub ak_digest: Option<[u8; 32]>,
    /// Why the AK is trusted; `None` for a variant without a vTPM (`qemu-tdx`: no AK, the TD quote binds the
    /// handshake).
    pub ak_basis: Option<AkBasis>,
    /// What the TD quote proved (TDX variants).
    pub td: Option<TdSummary>,
    /// Each expected PCR and its outcome.
    pub pcrs: Vec<(u8, PcrOutcome)>,
    /// How many SHA-256 PCRs the quote covers.
    pub quoted_pcrs: usize,
    /// Whether an event log was replayed against the quote.
    pub event_log_replayed: bool,
    /// How the launch is pinned (SNP variants: measurement, id-key, dangerously-unpinned).
    pub launch: LaunchPinning,
    /// The SNP report's MEASUREMENT (SNP variants).
    pub snp_measurement: Option<[u8; 48]>,
    /// The VM as the provider's CA certified it (`gcp-shielded-vm`): project/zone/instance.
    pub instance: Option<String>,
    /// The test roots the verdict rests on (simulated hardware), when any.
    pub test_roots: Option<String>,
    /// The node's identity in its verified evidence (the variant table's `identity` column): what the join
    /// service binds its disk, name and role to, and what an admission names.
    pub identity: Option<attest_engine::variant::NodeIdentity>,
}

/// What a verified TD quote proved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdSummary {
    /// MRTD (the TD's build-time measurement).
    pub mr_td: [u8; 48],
    /// The platform's TCB status.
    pub tcb_status: &'static str,
    /// The TD registers the policy expected and found (`mrtd`, `rtmr0` … `rtmr3`).
    pub registers_checked: Vec<&'static str>,
}

impl TdSummary {
    fn of(td: &attest_engine::tdx::VerifiedTdQuote<'_>) -> Self {
        use attest_engine::tdx::TdxCheck;
        let registers = [TdxCheck::Mrtd, TdxCheck::Rtmr0, TdxCheck::Rtmr1, TdxCheck::Rtmr2, TdxCheck::Rtmr3];
        TdSummary {
            mr_td: *td.body().mr_td(),
            tcb_status: td.tcb_status().name(),
            registers_checked: registers
                .into_iter()
                .filter(|c| td.verdict().outcome(*c) == attest_engine::policy::Outcome::Passed)
                .map(TdxCheck::name)
                .collect(),
        }
    }
}

impl AttestationSummary {
    /// The summary as JSON.
    pub fn to_json(&self) -> Value {
        let pcrs: Vec<Value> = self
            .pcrs
            .iter()
            .map(|(i, o)| json!({"pcr": i, "outcome": serde_json::to_value(o).unwrap_or(Value::Null)}))
            .collect();
        json!({
            "variant": self.variant.name(),
            "akDigest": self.ak_digest.map(hex::encode),
            "akBasis": serde_json::to_value(self.ak_basis).unwrap_or(Value::Null),
            "pcrsChecked": pcrs,
            "tdQuote": self.td.as_ref().map(|t| json!({"mrTd": hex::encode(t.mr_td), "tcbStatus": t.tcb_status,
                "registersChecked": t.registers_checked})),
            "quotedPcrs": self.quoted_pcrs,
            "eventLogReplayed": self.event_log_replayed,
            "launch": serde_json::to_value(self.launch).unwrap_or(Value::Null),
            "snpMeasurement": self.snp_measurement.map(hex::encode),
            "instance": self.instance,
            "simulatedHardware": self.test_roots.is_some(),
            "testRoots": self.test_roots,
            "identity": self.identity.as_ref().map(ToString::to_string),
        })
    }

    /// One line per fact, for people.
    pub fn describe(&self) -> String {
        let basis = serde_json::to_value(self.ak_basis).ok().and_then(|v| v.as_str().map(str::to_owned));
        let checked: Vec<String> = self
            .pcrs
            .iter()
            .map(|(i, o)| match o {
                PcrOutcome::Match => format!("{i}"),
                PcrOutcome::MismatchWarnOnly => format!("{i} (mismatch, warn-only)"),
            })
            .collect();
        use std::fmt::Write as _;
        let mut extra = String::new();
        if let Some(m) = self.snp_measurement {
            let _ = write!(extra, "\nlaunch       {} (MEASUREMENT {})", launch_name(self.launch), hex::encode(m));
        }
        if let Some(i) = &self.instance {
            let _ = write!(extra, "\ninstance     {i} (certified by the provider's CA)");
        }
        if let Some(t) = &self.td {
            let _ = write!(
                extra,
                "\nTD quote     MRTD {}, TCB {}, registers checked {}",
                hex::encode(t.mr_td),
                t.tcb_status,
                if t.registers_checked.is_empty() { "none".to_owned() } else { t.registers_checked.join(", ") }
            );
        }
        if let Some(r) = &self.test_roots {
            let _ = write!(extra, "\nWARNING      {r}");
        }
        if self.ak_basis.is_none() {
            // No vTPM (qemu-tdx): no AK, no PCRs; the TD quote is the evidence.
            return format!(
                "variant      {}\nAK           none (no vTPM: the TD quote binds the handshake){extra}",
                self.variant.name()
            );
        }
        format!(
            "variant      {}\nAK           {} ({})\nPCRs quoted  {} (SHA-256)\nPCRs checked {}\nevent log    {}{extra}",
            self.variant.name(),
            self.ak_digest.map_or_else(|| "from the HCL runtime data".to_owned(), hex::encode),
            basis.unwrap_or_default(),
            self.quoted_pcrs,
            if checked.is_empty() {
                "none (the measurements file expects none)".to_owned()
            } else {
                checked.join(", ")
            },
            if self.event_log_replayed { "replayed against the quote" } else { "not sent" },
        )
    }
}

fn launch_name(l: LaunchPinning) -> &'static str {
    match l {
        LaunchPinning::Measurement => "pinned by MEASUREMENT",
        LaunchPinning::IdKey => "pinned by ID_KEY_DIGEST",
        LaunchPinning::DangerouslyUnpinned => "DANGEROUSLY UNPINNED (waiver)",
        LaunchPinning::NotApplicable => "not applicable",
    }
}

/// An engine validator that also records what the last accepted document proved (the aTLS verifier only
/// hands back the document bytes).
#[derive(Debug)]
pub struct RecordingValidator {
    validator: Validator,
    test_roots: Option<String>,
    last: Mutex<Option<AttestationSummary>>,
    /// The result object (schema `attest-result/1`) of the last document judged, accepted or refused.
    last_result: Mutex<Option<Value>>,
}

impl RecordingValidator {
    /// Wraps `validator`.
    pub fn new(validator: Validator) -> Self {
        Self { validator, test_roots: None, last: Mutex::new(None), last_result: Mutex::new(None) }
    }

    /// Wraps a [`NodeValidator`] (its verdicts name the test roots it trusts).
    pub fn for_node(node: NodeValidator) -> Self {
        Self {
            validator: node.validator,
            test_roots: node.test_roots,
            last: Mutex::new(None),
            last_result: Mutex::new(None),
        }
    }

    /// What the last accepted document proved.
    pub fn last(&self) -> Option<AttestationSummary> {
        self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The result object (schema `attest-result/1`) of the last document the engine judged, accepted or
    /// refused (`None` before any).
    pub fn last_result(&self) -> Option<Value> {
        self.last_result.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Records that a check after the engine's refused the last document (its result object says so).
    pub fn record_refusal(&self, e: &attest_engine::Error) {
        let failed = attest_engine::ear::Appraisal::failed("document", e, "document_structure", Vec::new());
        self.record_result(&failed, now());
    }

    fn record_result(&self, a: &attest_engine::ear::Appraisal, time: UnixTime) {
        let what = format!("{} attestation document (node)", self.validator.variant());
        let v = a.result_json("document", &what, &serde_json::Map::new(), time);
        *self.last_result.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(v);
    }
}

fn now() -> UnixTime {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UnixTime::from_secs(secs)
}

impl AttestationValidator for RecordingValidator {
    fn oid(&self) -> &str {
        self.validator.variant().oid()
    }

    fn validate(&self, bytes: &[u8], nonce: &Nonce) -> Result<Vec<u8>, ValidationError> {
        let reject = |e: Box<dyn std::error::Error + Send + Sync>| ValidationError::Rejected(e);
        let doc = AttestationDocument::decode(bytes).map_err(|e| reject(Box::new(e)))?;
        let pcrs = pcr_values(&doc).map_err(|e| reject(Box::new(e)))?;
        let view = document(&doc, &pcrs);
        let time = now();
        let ok = self.validator.validate(&view, nonce, time).map_err(|e| {
            let failed = attest_engine::ear::Appraisal::failed("document", &e, "document_structure", Vec::new());
            self.record_result(&failed, time);
            match e {
                attest_engine::Error::NonceMismatch { .. } => ValidationError::NonceMismatch,
                other => reject(Box::new(other)),
            }
        })?;
        self.record_result(&attest_engine::ear::Appraisal::from_validated(&ok), time);
        let ak_public = doc.tpm.as_ref().map(|t| &t.ak_public[..]).unwrap_or_default();
        // A variant with a vTPM always carries its quote and AK (the engine refuses it otherwise); one without
        // (qemu-tdx) carries the TD quote.
        if ok.variant.has_vtpm() != (ok.quote.is_some() && ok.ak_basis.is_some())
            || (ok.variant.is_tdx() && ok.td.is_none())
        {
            return Err(reject("the node's attestation lacks the evidence of its variant".into()));
        }
        let summary = AttestationSummary {
            variant: ok.variant,
            ak_basis: ok.ak_basis,
            td: ok.td.as_ref().map(TdSummary::of),
            ak_digest: if ak_public.is_empty() {
                None
            } else {
                Some(ak_digest(ak_public).map_err(|e| reject(Box::new(e)))?)
            },
            pcrs: ok.pcrs.clone(),
            quoted_pcrs: ok
                .quote
                .as_ref()
                .map_or(0, |q| (0..24).filter(|i| q.pcr(HashAlgorithm::Sha256, *i).is_some()).count()),
            event_log_replayed: ok.event_log_replayed,
            launch: ok.launch,
            snp_measurement: ok.snp.as_ref().map(|r| *r.report().measurement()),
            instance: ok.instance.as_ref().map(|i| format!("{}/{}/{}", i.project_id, i.zone, i.instance_name)),
            test_roots: self.test_roots.clone(),
            identity: ok.node_identity().ok(),
        };
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(summary);
        Ok(ok.user_data.to_vec())
    }
}

/// An AK "registry" that answers trust-on-first-use for every AK and records nothing.
///
/// Used only for the identity connection of `attest init`, before the node's AK is registered: it lets the
/// handshake check the quote's signature, freshness and key binding under whatever AK the node presents, so
/// that the AK registered next is the one that signed this connection's attestation. Nothing learned on that
/// connection is trusted; trust comes from credential activation and a second, fully verified connection.
#[derive(Debug)]
struct DangerousAnyAk;

impl AkRegistry for DangerousAnyAk {
    fn lookup(&self, _ak_digest: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::TrustOnFirstUse)
    }
}

/// A connector for `attest init`'s identity connection to a node of `variant` (one whose AK is trusted through
/// a registry): the quote's signature, freshness and key binding are checked under whatever AK the node
/// presents (every AK counts as trusted on first use, nothing is recorded), with no PCR policy. Nothing
/// learned on it is trusted; see the [module docs](self).
pub fn dangerous_identity_connector(variant: Variant) -> Result<AtlsConnector, attest_atls::Error> {
    let factory = ValidatorFactory { ak_registry: Some(Arc::new(DangerousAnyAk)), ..ValidatorFactory::default() };
    let validator = factory
        .validator(variant, Expected::Pcrs(PcrPolicy::default()))
        .map_err(|_| attest_atls::Error::Config { what: "the identity connection needs a variant measured by PCRs" })?;
    let verifier = Verifier::new(vec![Arc::new(attest_atls::EngineValidator::new(validator))]);
    AtlsConnector::new(None, Some(Arc::new(verifier)))
}

/// A connector verifying the node with `validator`, and the validator that records what the node proved.
pub fn verifying_connector(
    validator: NodeValidator,
) -> Result<(AtlsConnector, Arc<RecordingValidator>), attest_atls::Error> {
    let recorder = Arc::new(RecordingValidator::for_node(validator));
    let verifier = Verifier::new(vec![Arc::clone(&recorder) as Arc<dyn AttestationValidator>]);
    Ok((AtlsConnector::new(None, Some(Arc::new(verifier)))?, recorder))
}

/// The AK TPM2B_PUBLIC of a verified peer's document.
pub fn peer_ak_public(peer: &PeerAttestation) -> Option<Vec<u8>> {
    AttestationDocument::decode(&peer.document[..]).ok()?.tpm.map(|t| t.ak_public)
}

/// The innermost `source()` of an error chain joined into one line (aTLS wraps the validator's reason).
pub fn reason(e: &(dyn std::error::Error + 'static)) -> String {
    attest_util::error_chain(e)
}

/// Writes `data` to `path` readable by the owner only (0600), atomically: a temporary file in the same
/// directory (created 0600, never wider), fsync, rename over `path`, fsync of the directory.
pub fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    attest_util::fs::write_atomic(path, data, attest_util::fs::SECRET_FILE_MODE)
        .map_err(|e| std::io::Error::new(e.source.kind(), e.to_string()))
}
