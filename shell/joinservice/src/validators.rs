//! The joining nodes' validators, rebuilt when the measurements file changes and swapped atomically.
//!
//! ```text
//!   measurements file ──poll──► changed bytes? ──► parse (measurements crate) ──► PcrPolicy per variant
//!                                                         │ error: keep the old set, log, count          │
//!                                                         ▼                                              ▼
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
//! The file is compared by content (SHA-256), not by mtime, so replacing it by rename, rewriting it in the
//! same second, or touching it without change all do the right thing. An invalid new file (unparsable, no
//! map for a configured variant, SHA-384 values) keeps the old validators, logs an error and counts a
//! rejected reload; the next valid content is applied.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use attest_engine::gce::{GcePolicy, GceVerifier};
use attest_engine::variant::{AkRegistry, PcrPolicy, Validator, Variant};
use attest_engine::{SnpPolicy, SnpVerifier};

use super::metrics::Metrics;
use attest_atls::{AttestationValidator, BoxError, EngineValidator, FirstUseRecorder, ValidationError, nonce::Nonce};
use attest_engine::variant::Validated;
use attest_registration::FileAkRegistry;

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
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
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
}

impl std::fmt::Display for MeasurementsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeasurementsError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            MeasurementsError::Invalid { path, variant: Some(v), source } => {
                write!(f, "{} (for {v}): {source}", path.display())
            }
            MeasurementsError::Invalid { path, variant: None, source } => write!(f, "{}: {source}", path.display()),
            MeasurementsError::NoVariants => f.write_str("no attestation variant configured"),
        }
    }
}

impl std::error::Error for MeasurementsError {}

/// What every validator set is built from, besides the measurements.
#[derive(Clone, Debug)]
pub struct ValidatorConfig {
    /// The accepted variants.
    pub variants: Vec<Variant>,
    /// The `qemu-vtpm` AK registry (shared with the AK registration service, which writes into it).
    pub ak_registry: Arc<FileAkRegistry>,
    /// Record AKs trusted on first use once their document validated (the registry must have trust on first
    /// use enabled for this to matter).
    pub record_first_use: bool,
    /// The SNP verifier (chain cache) shared by all sets.
    pub snp: Arc<SnpVerifier>,
    /// The SNP policy for the SNP variants.
    pub snp_policy: SnpPolicy,
    /// SNP policies of single variants, in place of `snp_policy` (each variant's launch measurement differs).
    pub snp_policies: HashMap<Variant, SnpPolicy>,
    /// The GCE verifier (Google's pinned roots by default) and policy of `gcp-shielded-vm`.
    pub gce: Arc<GceVerifier>,
    /// The GCE policy.
    pub gce_policy: GcePolicy,
}

impl ValidatorConfig {
    /// A configuration accepting `variants`, with `qemu-vtpm` AKs looked up in `ak_registry` and every other
    /// field at its default: AKs trusted on first use are not recorded, a fresh [`SnpVerifier`] (AMD's embedded
    /// roots), and the default [`SnpPolicy`]. Override fields with struct update syntax:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use attest_engine::variant::Variant;
    /// # use attest_joinservice::ValidatorConfig;
    /// # use attest_registration::FileAkRegistry;
    /// let registry = Arc::new(FileAkRegistry::open("aks.json")?.with_trust_on_first_use(true));
    /// let config =
    ///     ValidatorConfig { record_first_use: true, ..ValidatorConfig::new(vec![Variant::QemuVtpm], registry) };
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(variants: Vec<Variant>, ak_registry: Arc<FileAkRegistry>) -> ValidatorConfig {
        ValidatorConfig {
            variants,
            ak_registry,
            record_first_use: false,
            snp: Arc::new(SnpVerifier::new()),
            snp_policy: SnpPolicy::default(),
            snp_policies: HashMap::new(),
            gce: Arc::new(GceVerifier::new()),
            gce_policy: GcePolicy::default(),
        }
    }

    /// The SNP policy that applies to `variant`.
    pub fn snp_policy_for(&self, variant: Variant) -> &SnpPolicy {
        self.snp_policies.get(&variant).unwrap_or(&self.snp_policy)
    }
}

/// The validators of one measurements file content.
#[derive(Debug)]
pub struct ValidatorSet {
    generation: u64,
    digest: [u8; 32],
    validators: BTreeMap<&'static str, EngineValidator>,
}

impl ValidatorSet {
    /// Builds validators for `config.variants` from measurements file `bytes`: a map applies to every
    /// variant; a release list is searched for each variant's (CSP, variant) entry.
    pub fn build(
        config: &ValidatorConfig,
        path: &Path,
        bytes: &[u8],
        generation: u64,
    ) -> Result<ValidatorSet, MeasurementsError> {
        if config.variants.is_empty() {
            return Err(MeasurementsError::NoVariants);
        }
        let invalid = |variant, source| MeasurementsError::Invalid { path: path.to_owned(), variant, source };
        let document = attest_measurements::parse_document(bytes).map_err(|e| invalid(None, e))?;
        let mut validators = BTreeMap::new();
        for &variant in &config.variants {
            let measurements = document.for_variant(variant).map_err(|e| invalid(Some(variant), e))?;
            let pcrs: PcrPolicy = measurements.to_pcr_policy().map_err(|e| invalid(Some(variant), e))?;
            let snp_policy = config.snp_policy_for(variant).clone();
            let mut validator = Validator::new(variant, Arc::clone(&config.snp), snp_policy, pcrs);
            if variant == Variant::GcpShieldedVm {
                validator = validator.with_gce(Arc::clone(&config.gce), config.gce_policy.clone());
            }
            let mut engine = if variant == Variant::QemuVtpm {
                validator = validator.with_ak_registry(Arc::clone(&config.ak_registry) as Arc<dyn AkRegistry>);
                EngineValidator::new(validator)
            } else {
                EngineValidator::new(validator)
            };
            if variant == Variant::QemuVtpm && config.record_first_use {
                engine = engine.recording_first_use(Arc::new(RecordInRegistry(Arc::clone(&config.ak_registry))));
            }
            validators.insert(variant.oid(), engine);
        }
        Ok(ValidatorSet { generation, digest: openssl::sha::sha256(bytes), validators })
    }

    /// The generation (1 for the startup file, +1 per applied change).
    pub fn generation(&self) -> u64 {
        self.generation
    }
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
        let bytes = read(path)?;
        let set = ValidatorSet::build(&config, path, &bytes, 1)?;
        metrics.measurements_reload(Some(1));
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
        let bytes = read(&self.path)?;
        let old = self.current();
        if openssl::sha::sha256(&bytes) == old.digest {
            return Ok(None);
        }
        match ValidatorSet::build(&self.config, &self.path, &bytes, old.generation + 1) {
            Ok(set) => {
                let generation = set.generation;
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(set);
                self.metrics.measurements_reload(Some(generation));
                tracing::info!(file = %self.path.display(), generation, "measurements changed: validators swapped");
                Ok(Some(generation))
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
                    let digest = read(&worker.path).ok().map(|b| openssl::sha::sha256(&b));
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

fn read(path: &Path) -> Result<Vec<u8>, MeasurementsError> {
    use std::io::Read as _;
    let io = |source| MeasurementsError::Io { path: path.to_owned(), source };
    let limit = attest_measurements::MAX_FILE_SIZE as u64 + 1;
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(limit).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
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
        let started = Instant::now();
        let set = self.validators.current();
        let result = match set.validators.get(self.variant.oid()) {
            Some(v) => v.validate(document, nonce),
            None => Err(ValidationError::Rejected(Box::new(VariantNotConfigured(self.variant)))),
        };
        self.validators.metrics.attestation(started.elapsed(), result.is_ok());
        match &result {
            Ok(_) => tracing::debug!(variant = %self.variant, generation = set.generation, "attestation accepted"),
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
                    outcome = "refused",
                    "joining node's attestation refused"
                );
            }
        }
        result
    }
}
