//! The joining nodes' validators, rebuilt when the measurements file changes and swapped atomically.
//!
//! ```text
//!   measurements file + signature ──poll──► changed bytes? ──► signature (attest-trust) ──► parse ──► PcrPolicy per variant
//!                                                                   │ error (bad signature, unparsable): keep the old set, log, count
//!                                                                   ▼                                              ▼
//!                               ValidatorSet { generation, EngineValidator per variant }  ──► store (swap the Arc)
//!
//!   aTLS handshake ──► SwappingValidator::validate ──► load: read-lock, clone the Arc, unlock
//!                                                       └─► validate on the cloned set (no lock held)
//! ```
//!
//! The current set lives in an `RwLock<Arc<ValidatorSet>>` that is locked only to clone or replace the
//! `Arc` — a few nanoseconds, never across a validation — so validations run concurrently, a reload never
//! waits for them, and a handshake that started on the old set finishes on it (the `Arc` keeps it alive).
//! This is `arc-swap`'s pattern without the crate: with one writer every few seconds and a quote
//! verification (≈ 0.1–1 ms) per read, the lock is never contended long enough to matter.
//!
//! The file (and its signature file) is compared by content (SHA-256), not by mtime, so replacing it by
//! rename, rewriting it in the same second, or touching it without change all do the right thing. Every
//! content is signature-checked before it is parsed ([`MeasurementsTrust`]); an invalid new file (a bad or
//! missing signature, unparsable, no map for a configured variant, SHA-384 values) keeps the old validators,
//! logs an error and counts a rejected reload; the next valid content is applied. A file changed before its
//! signature is refused until the matching signature arrives.
//!
//! Only forward: the file's signed `measurementsVersion` must not be below the highest version this cluster
//! accepted, which the cluster state keeps across restarts (`attest_trust::membership`): an older, validly
//! signed file put back is refused at start (the service does not start) and on reload (the running set
//! stays), with an error line naming the rollback and `attest_join_measurements_rollbacks_total`. Each
//! applied version raises the floor — written before the new validators are used; a floor that cannot be
//! written refuses the file. A file whose `expires` has passed is refused at load, and a set whose file
//! expires while in use refuses every attestation from then on (`attest_join_measurements_expired`), so a
//! withheld update cannot keep an old file valid for ever.
//!
//! Rolling upgrades: a release list may hold several accepted sets for a variant, each labelled with its
//! image (`attest measurements merge`). The set's validator admits a node that meets any of them
//! (`Validator::with_alternatives`), so during a rollout old and new images join; once the operator signs a
//! file without the old image, the reload swaps in validators that refuse it — the next handshake of an old
//! node fails, whatever it was admitted with before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use attest_engine::variant::{AkRegistry, AkTrust, LaunchPin, Validator, Variant};

use super::metrics::Metrics;
use attest_atls::{
    Accepted, AttestationValidator, BoxError, EngineValidator, FirstUseRecorder, ValidationError, nonce::Nonce,
};
use attest_engine::variant::Validated;
use attest_measurements::Freshness;
use attest_registration::FileAkRegistry;
use attest_trust::membership::{ClusterState, StateError};
use attest_trust::{FactoryError, LoadedMeasurements, MeasurementsTrust, Trust, TrustError, ValidatorFactory};

/// Pins AKs trusted on first use in the file registry, once their document fully validated (aTLS's hook; the
/// registry lives in `attest-registration`, which aTLS does not know).
#[derive(Debug)]
struct RecordInRegistry(Arc<FileAkRegistry>);

impl FirstUseRecorder for RecordInRegistry {
    fn record_first_use(&self, validated: &Validated<'_>, ak_tpm2b_public: &[u8]) -> Result<(), BoxError> {
        Ok(self.0.record_first_use(validated, ak_tpm2b_public)?)
    }
}

/// Default interval between two reads of the measurements file.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Why a measurements file could not be turned into validators.
#[derive(Debug)]
pub enum MeasurementsError {
    /// The file or its signature could not be read, or the signature does not verify (nothing was parsed).
    Untrusted(TrustError),
    /// The file is not a valid measurements document, or lacks a map for a configured variant.
    Invalid {
        /// The file.
        path: PathBuf,
        /// For which variant (when the failure is per variant).
        variant: Option<Variant>,
        /// The measurements crate's reason.
        source: attest_measurements::Error,
    },
    /// No variant is configured.
    NoVariants,
    /// A validator cannot be built from this configuration (e.g. a variant needing an AK registry without one).
    Factory(FactoryError),
    /// A TDX variant's policy pins no launch: no MRTD (for `qemu-tdx`, measurement 0 of the file; for
    /// `azure-tdx`, the TDX policy's `mrtd`) and no `dangerous_allow_unpinned_launch`.
    LaunchUnpinned {
        /// The variant.
        variant: Variant,
    },
    /// The new highest accepted version could not be recorded in the cluster state: the file is not used.
    State(StateError),
}

impl std::fmt::Display for MeasurementsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeasurementsError::Untrusted(e) => write!(f, "{e}"),
            MeasurementsError::Invalid { path, variant: Some(v), source } => {
                write!(f, "{} (for {v}): {source}", path.display())
            }
            MeasurementsError::Invalid { path, variant: None, source } => write!(f, "{}: {source}", path.display()),
            MeasurementsError::NoVariants => f.write_str("no attestation variant configured"),
            MeasurementsError::Factory(e) => write!(f, "{e}"),
            MeasurementsError::State(e) => write!(f, "recording the measurements version: {e}"),
            MeasurementsError::LaunchUnpinned { variant } => write!(
                f,
                "{variant}: nothing pins the TD's launch (give MRTD: measurement 0 for qemu-tdx, mrtd in the TDX \
                 policy for azure-tdx; or set dangerous_allow_unpinned_launch)"
            ),
        }
    }
}

impl std::error::Error for MeasurementsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MeasurementsError::Untrusted(e) => Some(e),
            MeasurementsError::Invalid { source, .. } => Some(source),
            MeasurementsError::Factory(e) => Some(e),
            MeasurementsError::State(e) => Some(e),
            MeasurementsError::NoVariants | MeasurementsError::LaunchUnpinned { .. } => None,
        }
    }
}

/// What every validator set is built from, besides the measurements.
#[derive(Clone, Debug)]
pub struct ValidatorConfig {
    /// The accepted variants.
    pub variants: Vec<Variant>,
    /// The `qemu-vtpm` AK registry (shared with the AK registration service, which writes into it); every
    /// set's factory trusts AKs through it.
    pub ak_registry: Arc<FileAkRegistry>,
    /// Record AKs trusted on first use once their document validated (the registry must have trust on first
    /// use enabled for this to matter).
    pub record_first_use: bool,
    /// The verifiers (pinned roots, chain cache, CRLs, TDX collateral refreshed by [`crate::tdx`]) and policies
    /// shared by all sets ([`ValidatorFactory`]; its `ak_registry` is replaced by [`ValidatorConfig::ak_registry`]).
    /// A variant measured by its TD registers takes its MRTD and RTMRs from the measurements file.
    pub factory: ValidatorFactory,
    /// How the measurements file is trusted (its signature, or the explicit waiver).
    pub measurements: MeasurementsTrust,
    /// What the service trusts and waives, for every verdict's log line (`None`: not reported).
    pub trust: Option<Arc<Trust>>,
    /// Where the highest accepted measurements version is kept (the cluster state; in memory by default).
    pub state: Arc<ClusterState>,
}

impl ValidatorConfig {
    /// A configuration accepting `variants`, with AKs looked up in `ak_registry`, measurements trusted as
    /// `measurements` says, and every other field at its default: AKs trusted on first use are not recorded,
    /// and the [`ValidatorFactory`]'s secure defaults (pinned roots, default policies). Override fields with
    /// struct update syntax:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use attest_engine::variant::Variant;
    /// # use attest_joinservice::ValidatorConfig;
    /// # use attest_registration::FileAkRegistry;
    /// # use attest_trust::MeasurementsTrust;
    /// let registry = Arc::new(FileAkRegistry::open("aks.json")?.with_trust_on_first_use(true));
    /// let signed = MeasurementsTrust::verify_with("measurements.pub".as_ref(), "measurements.json.sig".as_ref())?;
    /// let config = ValidatorConfig {
    ///     record_first_use: true,
    ///     ..ValidatorConfig::new(vec![Variant::QemuVtpm], registry, signed)
    /// };
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        variants: Vec<Variant>,
        ak_registry: Arc<FileAkRegistry>,
        measurements: MeasurementsTrust,
    ) -> ValidatorConfig {
        ValidatorConfig {
            variants,
            ak_registry,
            record_first_use: false,
            factory: ValidatorFactory::default(),
            measurements,
            trust: None,
            state: Arc::new(ClusterState::in_memory()),
        }
    }

    /// One validator per configured variant whose launch its policy pins (SNP policy, or none to pin) with no
    /// PCR expectations: what the launch check at start ([`attest_trust::check_launch`]) looks at. A variant
    /// whose launch the TDX policy's MRTD pins (for one measured by its TD registers, the measurements file's
    /// MRTD) is checked when a set is built instead ([`MeasurementsError::LaunchUnpinned`]).
    pub fn launch_validators(&self) -> Vec<Validator> {
        self.variants
            .iter()
            .filter(|v| v.info().launch != LaunchPin::TdxMrtd)
            .map(|&v| self.factory.launch_probe(v))
            .collect()
    }
}

/// The validators of one measurements file content.
#[derive(Debug)]
pub struct ValidatorSet {
    generation: u64,
    digest: [u8; 32],
    freshness: Freshness,
    validators: BTreeMap<&'static str, EngineValidator>,
}

impl ValidatorSet {
    /// Builds validators for `config.variants` from a loaded (signature-checked) measurements document through
    /// the [`ValidatorFactory`]: a map applies to every variant; a release list is searched for each variant's
    /// (CSP, variant) entry. The map of a variant measured by its TD registers holds 48-byte MRTD and RTMRs,
    /// every other variant's SHA-256 PCRs; a validator whose launch the TDX policy's MRTD must pin and nothing
    /// pins is refused ([`MeasurementsError::LaunchUnpinned`]).
    pub fn build(
        config: &ValidatorConfig,
        path: &Path,
        loaded: &LoadedMeasurements,
        generation: u64,
    ) -> Result<ValidatorSet, MeasurementsError> {
        if config.variants.is_empty() {
            return Err(MeasurementsError::NoVariants);
        }
        let factory_error = |e: FactoryError| match e {
            FactoryError::Measurements { variant, source } => {
                MeasurementsError::Invalid { path: path.to_owned(), variant: Some(variant), source }
            }
            other => MeasurementsError::Factory(other),
        };
        let factory = ValidatorFactory {
            ak_registry: Some(Arc::clone(&config.ak_registry) as Arc<dyn AkRegistry>),
            ..config.factory.clone()
        };
        let mut validators = BTreeMap::new();
        for &variant in &config.variants {
            // Every accepted set of the variant (several during a rolling upgrade): the first is the
            // validator's own, the others its alternatives; a node meeting any of them is admitted.
            let sets = factory.expected_sets(variant, &loaded.document).map_err(factory_error)?;
            let labels: Vec<Option<String>> = sets.iter().map(|(image, _)| image.clone()).collect();
            let images: Vec<&str> = sets.iter().map(|(image, _)| image.as_deref().unwrap_or("(unlabelled)")).collect();
            if images.len() > 1 {
                tracing::info!(%variant, sets = images.len(), images = %images.join(","),
                    "several accepted measurement sets (rolling upgrade): a node meeting any of them is admitted");
            }
            let validator = factory
                .validator_accepting(variant, sets.into_iter().map(|(_, e)| e).collect())
                .map_err(factory_error)?;
            if variant.info().launch == LaunchPin::TdxMrtd && validator.launch_pinning().is_err() {
                return Err(MeasurementsError::LaunchUnpinned { variant });
            }
            let mut engine = EngineValidator::new(validator).with_set_labels(labels);
            if variant.info().ak == AkTrust::Registry && config.record_first_use {
                engine = engine.recording_first_use(Arc::new(RecordInRegistry(Arc::clone(&config.ak_registry))));
            }
            validators.insert(variant.oid(), engine);
        }
        Ok(ValidatorSet { generation, digest: loaded.inputs_sha256, freshness: loaded.freshness, validators })
    }

    /// The generation (1 for the startup file, +1 per applied change).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The signed version and expiry of the file the set was built from.
    pub fn freshness(&self) -> Freshness {
        self.freshness
    }
}

/// Refuses a file below the cluster's highest accepted version, builds its set, then records its version
/// as the new floor (before the set is used).
fn build_forward(
    config: &ValidatorConfig,
    path: &Path,
    loaded: &LoadedMeasurements,
    generation: u64,
) -> Result<ValidatorSet, MeasurementsError> {
    loaded.check_floor(path, config.state.measurements_floor()).map_err(MeasurementsError::Untrusted)?;
    let set = ValidatorSet::build(config, path, loaded, generation)?;
    config.state.raise_measurements_floor(loaded.freshness.version).map_err(MeasurementsError::State)?;
    Ok(set)
}

/// The current validator set, swappable.
#[derive(Debug)]
pub struct Validators {
    config: ValidatorConfig,
    path: PathBuf,
    current: RwLock<Arc<ValidatorSet>>,
    metrics: Arc<Metrics>,
}

impl Validators {
    /// Loads the measurements file at `path` (which must be valid: a service without validators cannot
    /// start).
    pub fn load(config: ValidatorConfig, path: &Path, metrics: Arc<Metrics>) -> Result<Validators, MeasurementsError> {
        let loaded = config.measurements.load(path).map_err(MeasurementsError::Untrusted)?;
        let set = build_forward(&config, path, &loaded, 1)?;
        metrics.measurements_reload(Some(1));
        metrics.set_measurements_version(loaded.freshness.version);
        tracing::info!(file = %path.display(), sha256 = %hex::encode(loaded.file_sha256),
            signature = loaded.signature.name(), version = loaded.freshness.version,
            expires = %loaded.freshness.expires.map_or_else(|| "never".to_owned(), |e| e.to_string()),
            floor = config.state.measurements_floor(), "measurements loaded");
        Ok(Validators { config, path: path.to_owned(), current: RwLock::new(Arc::new(set)), metrics })
    }

    /// The current set: the lock is held only to clone the `Arc`.
    pub fn current(&self) -> Arc<ValidatorSet> {
        Arc::clone(&self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Reads the file; when its content changed, builds and installs a new set. Returns the new generation
    /// when one was applied, `Ok(None)` when nothing changed, and the error (old set kept) when the new
    /// content is invalid.
    pub fn reload(&self) -> Result<Option<u64>, MeasurementsError> {
        let old = self.current();
        if self.config.measurements.inputs_sha256(&self.path) == Some(old.digest) {
            return Ok(None);
        }
        let built =
            self.config.measurements.load(&self.path).map_err(MeasurementsError::Untrusted).and_then(|loaded| {
                if loaded.inputs_sha256 == old.digest {
                    return Ok(None);
                }
                build_forward(&self.config, &self.path, &loaded, old.generation + 1).map(Some)
            });
        match built {
            Ok(None) => Ok(None),
            Ok(Some(set)) => {
                let (generation, version) = (set.generation, set.freshness.version);
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(set);
                self.metrics.measurements_reload(Some(generation));
                self.metrics.set_measurements_version(version);
                self.metrics.set_measurements_expired(false);
                tracing::info!(file = %self.path.display(), generation, version, "measurements changed: validators swapped");
                Ok(Some(generation))
            }
            Err(e @ MeasurementsError::Untrusted(TrustError::MeasurementsRolledBack { .. })) => {
                self.metrics.measurements_rollback();
                Err(e)
            }
            Err(e) => {
                self.metrics.measurements_reload(None);
                Err(e)
            }
        }
    }

    /// One [`AttestationValidator`] per configured variant, each loading the current set per handshake.
    pub fn attestation_validators(self: &Arc<Self>) -> Vec<Arc<dyn AttestationValidator>> {
        self.config
            .variants
            .iter()
            .map(|v| {
                Arc::new(SwappingValidator { variant: *v, validators: Arc::clone(self) })
                    as Arc<dyn AttestationValidator>
            })
            .collect()
    }

    /// Polls the file every `interval` until `stop` turns true; errors are logged (at error level once per
    /// distinct bad content, so a broken file does not flood the log) and the old set stays in use.
    pub fn watch(
        self: &Arc<Self>,
        interval: Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let mut last_bad: Option<[u8; 32]> = None;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(interval) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                let worker = Arc::clone(&this);
                // Parsing a file of up to 1 MiB and hashing it: off the async workers.
                let outcome = tokio::task::spawn_blocking(move || {
                    let digest = worker.config.measurements.inputs_sha256(&worker.path);
                    (worker.reload(), digest)
                })
                .await;
                match outcome {
                    Ok((Ok(_), _)) => last_bad = None,
                    Ok((Err(e), digest)) => {
                        if digest.is_none() || digest != last_bad {
                            tracing::error!(error = %e, generation = this.current().generation, "measurements file rejected: keeping the current validators");
                        }
                        last_bad = digest;
                    }
                    Err(e) => tracing::error!(error = %e, "measurements reload task failed"),
                }
            }
        })
    }
}

/// Validates one variant's documents with whatever set is current when the handshake validates, and records
/// the latency and outcome.
#[derive(Debug)]
pub struct SwappingValidator {
    variant: Variant,
    validators: Arc<Validators>,
}

/// The current set has no validator for this variant (it cannot happen with sets built from the same
/// configuration; kept as an error rather than a panic).
#[derive(Debug)]
struct VariantNotConfigured(Variant);

impl std::fmt::Display for VariantNotConfigured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no validator for {} in the current measurements", self.0)
    }
}

impl std::error::Error for VariantNotConfigured {}

impl AttestationValidator for SwappingValidator {
    fn oid(&self) -> &str {
        self.variant.oid()
    }

    fn validate(&self, document: &[u8], nonce: &Nonce) -> Result<Vec<u8>, ValidationError> {
        self.validate_peer(document, nonce).map(|a| a.user_data)
    }

    fn validate_peer(&self, document: &[u8], nonce: &Nonce) -> Result<Accepted, ValidationError> {
        let started = Instant::now();
        let set = self.validators.current();
        let expired = set.freshness.expires.filter(|_| set.freshness.is_expired(attest_trust::measurements::now()));
        if expired.is_some() {
            self.validators.metrics.set_measurements_expired(true);
        }
        let result = match (expired, set.validators.get(self.variant.oid())) {
            (Some(expires), _) => Err(ValidationError::Rejected(Box::new(TrustError::MeasurementsExpired {
                path: self.validators.path.clone(),
                expires,
            }))),
            (None, Some(v)) => v.validate_peer(document, nonce),
            (None, None) => Err(ValidationError::Rejected(Box::new(VariantNotConfigured(self.variant)))),
        };
        self.validators.metrics.attestation(started.elapsed(), result.is_ok());
        let trust = self.validators.config.trust.as_deref();
        let waivers = trust.map_or_else(|| "unreported".to_owned(), Trust::waivers_field);
        let launch = trust.and_then(|t| t.launch_of(self.variant)).map_or("unreported", |l| l.name());
        match &result {
            Ok(_) => tracing::debug!(variant = %self.variant, generation = set.generation, launch, waivers = %waivers,
                "attestation accepted"),
            Err(e) => {
                let reason = match e {
                    ValidationError::NonceMismatch => "nonce mismatch".to_owned(),
                    ValidationError::Rejected(source) => source.to_string(),
                };
                tracing::warn!(
                    variant = %self.variant,
                    variant_oid = self.variant.oid(),
                    generation = set.generation,
                    reason = %reason,
                    launch,
                    waivers = %waivers,
                    outcome = "refused",
                    "joining node's attestation refused"
                );
            }
        }
        result
    }
}
