//! # attest-trust
//!
//! The verifier's trust inputs, one way for every consumer: the join service, the bootstrapper (verifying
//! the join service it joins through) and `attest init` / `attest verify`.
//!
//! **May depend on:** `attest-engine`, `attest-measurements`, `attest-kds` (CRL supply), clap (the shared
//! flags). **Must not depend on:** gRPC, aTLS, any service or the attester side: it decides what a verifier
//! trusts, never how it talks.
//!
//! | input | default | refused at start | waiver (logged, in every verdict) |
//! |---|---|---|---|
//! | measurements file | signature required ([`MeasurementsTrust`]) | unsigned, badly signed, unreadable | `--dangerously-skip-measurements-signature` |
//! | SNP launch (`azure-sev-snp`, `aws-sev-snp`, `gcp-sev-snp`) | pinned by the SNP policy ([`check_launch`]) | no MEASUREMENT / ID-key allow-list | `--dangerous-allow-unpinned-launch` |
//! | AMD CRLs (SNP variants) | loaded at start from the KDS store, then KDS; kept fresh ([`attest_kds::CrlKeeper`]) | stale or missing | `--allow-stale-crl` (stale only) |
//!
//! [`TrustArgs`] are the flags; [`Trust`] is what a running consumer holds and reports
//! ([`Trust::waivers`], [`Trust::to_json`]).

#![forbid(unsafe_code)]

pub mod measurements;

use std::path::PathBuf;
use std::sync::Arc;

use attest_engine::variant::{PcrPolicy, Validator, Variant};
use attest_engine::{LaunchPinning, Product, SnpPolicy, SnpVerifier};
use attest_kds::{ChainKind, CrlKeeper, CrlPolicy, CrlWanted, Kds, KdsConfig, KdsError, RevocationState};
use attest_measurements::Document;
use serde_json::json;

pub use measurements::{LoadedMeasurements, MeasurementsTrust, SignatureState};

/// Why a consumer refuses to start (or a reload is refused).
#[derive(Debug)]
pub enum TrustError {
    /// A file could not be read.
    Io {
        /// Which input.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is malformed or too large.
    Invalid {
        /// Which input.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The measurements file's signature does not verify (or cannot be decoded).
    BadSignature {
        /// The measurements file.
        path: PathBuf,
        /// The signature file.
        signature: PathBuf,
        /// The reason.
        reason: String,
    },
    /// Neither a signature nor the explicit waiver was given.
    UnsignedMeasurements,
    /// An SNP variant's policy pins no launch and the waiver was not given.
    LaunchUnpinned {
        /// The variant.
        variant: Variant,
    },
    /// The CRLs could not be loaded (stale, unavailable, or refused by the engine).
    Revocation(KdsError),
}

impl std::fmt::Display for TrustError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { what, path, source } => write!(f, "{what} {}: {source}", path.display()),
            Self::Invalid { what, path, reason } => write!(f, "{what} {}: {reason}", path.display()),
            Self::BadSignature { path, signature, reason } => write!(
                f,
                "measurements file {} refused: its signature {} does not verify: {reason}",
                path.display(),
                signature.display()
            ),
            Self::UnsignedMeasurements => f.write_str(
                "the measurements file must be signed: give --measurements-signature and --measurements-public-key \
                 (or, dangerously, --dangerously-skip-measurements-signature)",
            ),
            Self::LaunchUnpinned { variant } => write!(
                f,
                "{variant}: the SNP policy pins no launch measurement (set `measurements` or `id_key_digests` in \
                 the SNP policy, or, dangerously, --dangerous-allow-unpinned-launch)"
            ),
            Self::Revocation(e) => write!(f, "AMD CRLs: {e} (refresh the KDS store, or --allow-stale-crl)"),
        }
    }
}

impl std::error::Error for TrustError {}

/// The trust flags shared by the join service, the bootstrapper and `attest init` / `attest verify`
/// (flatten into a command's arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct TrustArgs {
    /// Detached signature of the measurements file (ECDSA P-256 over the file, DER or base64).
    #[arg(long, value_name = "FILE", requires = "measurements_public_key")]
    pub measurements_signature: Option<PathBuf>,
    /// Public key (PEM, P-256) the measurements file's signature must verify under.
    #[arg(long, value_name = "FILE", requires = "measurements_signature")]
    pub measurements_public_key: Option<PathBuf>,
    /// DANGEROUS: accept an unsigned measurements file (logged at start and shown in every verdict).
    #[arg(long, conflicts_with_all = ["measurements_signature", "measurements_public_key"])]
    pub dangerously_skip_measurements_signature: bool,
    /// DANGEROUS: accept SNP variants whose policy pins no launch measurement (logged at start and shown in
    /// every verdict).
    #[arg(long)]
    pub dangerous_allow_unpinned_launch: bool,
    /// AMD KDS store directory, read first for CRLs (and filled from KDS).
    #[arg(long, value_name = "DIR")]
    pub kds_store: Option<PathBuf>,
    /// AMD KDS base URL, asked when the store has no fresh CRL; `offline` for the store only.
    #[arg(long, value_name = "URL", default_value = attest_kds::DEFAULT_BASE_URL)]
    pub kds_url: String,
    /// Accept a CRL past its nextUpdate when no newer one can be obtained (logged; verdicts record revocation
    /// as waived).
    #[arg(long)]
    pub allow_stale_crl: bool,
}

impl Default for TrustArgs {
    /// What the flags say when none is given: signature required, launch pinning required, CRLs from AMD's
    /// KDS (no store), fresh only.
    fn default() -> Self {
        TrustArgs {
            measurements_signature: None,
            measurements_public_key: None,
            dangerously_skip_measurements_signature: false,
            dangerous_allow_unpinned_launch: false,
            kds_store: None,
            kds_url: attest_kds::DEFAULT_BASE_URL.to_owned(),
            allow_stale_crl: false,
        }
    }
}

impl TrustArgs {
    /// How the measurements file is trusted: a signature and key, or the explicit waiver; neither is an error.
    pub fn measurements_trust(&self) -> Result<MeasurementsTrust, TrustError> {
        match (
            &self.measurements_signature,
            &self.measurements_public_key,
            self.dangerously_skip_measurements_signature,
        ) {
            (Some(sig), Some(key), false) => MeasurementsTrust::verify_with(key, sig),
            (None, None, true) => {
                tracing::warn!(
                    waiver = "dangerously-skip-measurements-signature",
                    "MEASUREMENTS NOT SIGNATURE-CHECKED: anyone who can write the measurements file decides what is trusted"
                );
                Ok(MeasurementsTrust::DangerouslyUnsigned)
            }
            _ => Err(TrustError::UnsignedMeasurements),
        }
    }

    /// Sets the SNP policy's waivers these flags name (`dangerous_allow_unpinned_launch`, `allow_stale_crl`).
    pub fn apply_to_policy(&self, policy: &mut SnpPolicy) {
        if self.dangerous_allow_unpinned_launch {
            policy.dangerous_allow_unpinned_launch = true;
        }
        if self.allow_stale_crl {
            policy.allow_stale_crl = true;
        }
    }

    /// The SNP policy in `file` (TOML or JSON; the engine's secure defaults without one) with these flags'
    /// waivers applied ([`TrustArgs::apply_to_policy`]).
    pub fn snp_policy(&self, file: Option<&std::path::Path>) -> Result<SnpPolicy, TrustError> {
        let mut policy = match file {
            None => SnpPolicy::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| TrustError::Io {
                    what: "SNP policy",
                    path: path.to_owned(),
                    source,
                })?;
                SnpPolicy::from_text(&text).map_err(|e| TrustError::Invalid {
                    what: "SNP policy",
                    path: path.to_owned(),
                    reason: e.to_string(),
                })?
            }
        };
        self.apply_to_policy(&mut policy);
        Ok(policy)
    }

    /// The CRL supply these flags describe (store first, then `--kds-url` unless `offline`).
    pub fn kds(&self) -> Result<Kds, TrustError> {
        let base_url = (self.kds_url != "offline").then(|| self.kds_url.clone());
        Kds::new(KdsConfig { store: self.kds_store.clone(), base_url, ..KdsConfig::default() })
            .map_err(TrustError::Revocation)
    }

    /// The CRL policy: fresh required, stale accepted only with `--allow-stale-crl`.
    pub fn crl_policy(&self) -> CrlPolicy {
        if self.allow_stale_crl { CrlPolicy::AllowStale } else { CrlPolicy::RequireFresh }
    }

    /// Loads the CRLs `variants` need into `verifier` now (refusing to start on failure) and returns the
    /// keeper that replaces them before they expire (its `spawn` runs the refresh loop).
    pub async fn revocation(
        &self,
        verifier: Arc<SnpVerifier>,
        variants: &[Variant],
        policy: &SnpPolicy,
    ) -> Result<Arc<CrlKeeper>, TrustError> {
        if crl_wanted(variants, policy).is_empty() {
            // No SNP variant: nothing to fetch, so no supply is opened (no store directory, no network).
            let none = Kds::new(KdsConfig { store: None, base_url: None, ..KdsConfig::default() })
                .map_err(TrustError::Revocation)?;
            return Ok(Arc::new(CrlKeeper::new(none, verifier, Vec::new(), self.crl_policy())));
        }
        self.revocation_from(self.kds()?, verifier, variants, policy).await
    }

    /// [`TrustArgs::revocation`] with a given supply (tests: the test PKI's anchors and a fixed clock).
    pub async fn revocation_from(
        &self,
        kds: Kds,
        verifier: Arc<SnpVerifier>,
        variants: &[Variant],
        policy: &SnpPolicy,
    ) -> Result<Arc<CrlKeeper>, TrustError> {
        let keeper = Arc::new(CrlKeeper::new(kds, verifier, crl_wanted(variants, policy), self.crl_policy()));
        keeper.refresh().await.map_err(TrustError::Revocation)?;
        Ok(keeper)
    }
}

/// The CRLs the SNP `variants` need: the VLEK CRLs for `aws-sev-snp` (VLEK-signed), the VCEK CRLs for
/// `azure-sev-snp` and `gcp-sev-snp`, for the policy's products (every product when it names none).
pub fn crl_wanted(variants: &[Variant], policy: &SnpPolicy) -> Vec<CrlWanted> {
    let products: Vec<Product> =
        if policy.products.is_empty() { Product::ALL.to_vec() } else { policy.products.clone() };
    let mut out = Vec::new();
    for v in variants {
        let kind = match v {
            Variant::AwsSevSnp => ChainKind::Vlek,
            Variant::AzureSevSnp | Variant::GcpSevSnp => ChainKind::Vcek,
            Variant::QemuVtpm | Variant::GcpShieldedVm | Variant::AzureTdx | Variant::QemuTdx => continue,
        };
        out.extend(products.iter().map(|&product| CrlWanted { product, kind }));
    }
    out
}

/// Checks each validator's launch pinning ([`Validator::launch_pinning`]): an SNP variant without a pinned
/// launch and without the waiver refuses to start; a waived one is logged as a warning.
pub fn check_launch<'a>(
    validators: impl IntoIterator<Item = &'a Validator>,
) -> Result<Vec<(Variant, LaunchPinning)>, TrustError> {
    let mut out = Vec::new();
    for v in validators {
        let variant = v.variant();
        let pinning = v.launch_pinning().map_err(|_| TrustError::LaunchUnpinned { variant })?;
        if pinning == LaunchPinning::DangerouslyUnpinned {
            tracing::warn!(%variant, waiver = "dangerous-allow-unpinned-launch",
                "LAUNCH NOT PINNED: any guest image that binds its own key is admitted for this variant");
        }
        out.push((variant, pinning));
    }
    Ok(out)
}

/// The expected PCRs of `variant` in a measurements document: a map applies to every variant; a release
/// list is searched for the variant's entry ([`Document::for_variant`]).
pub fn pcr_policy_for(document: &Document, variant: Variant) -> Result<PcrPolicy, attest_measurements::Error> {
    document.for_variant(variant)?.to_pcr_policy()
}

/// What a running verifier trusts, for its logs and every verdict.
#[derive(Clone, Debug)]
pub struct Trust {
    /// How the measurements in use were trusted.
    pub measurements: SignatureState,
    /// How each variant's launch is pinned.
    pub launch: Vec<(Variant, LaunchPinning)>,
    /// The CRL keeper (SNP variants), whose state changes as it refreshes.
    pub revocation: Option<Arc<CrlKeeper>>,
}

impl Trust {
    /// The revocation state now ([`RevocationState::NotLoaded`] without SNP variants).
    pub fn revocation_state(&self) -> RevocationState {
        self.revocation.as_ref().map_or(RevocationState::NotLoaded, |k| k.state())
    }

    /// The waivers in effect, by name (empty: nothing waived): `measurements-unsigned`,
    /// `launch-unpinned:<variant>`, `revocation-stale`, `revocation-missing`.
    pub fn waivers(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.measurements == SignatureState::DangerouslyUnsigned {
            out.push("measurements-unsigned".to_owned());
        }
        for (v, p) in &self.launch {
            if *p == LaunchPinning::DangerouslyUnpinned {
                out.push(format!("launch-unpinned:{v}"));
            }
        }
        match self.revocation_state() {
            RevocationState::StaleWaived => out.push("revocation-stale".to_owned()),
            RevocationState::MissingWaived => out.push("revocation-missing".to_owned()),
            RevocationState::NotLoaded | RevocationState::Fresh => {}
        }
        out
    }

    /// The waivers as one log field value (`none` when there are none).
    pub fn waivers_field(&self) -> String {
        let w = self.waivers();
        if w.is_empty() { "none".to_owned() } else { w.join(",") }
    }

    /// The launch pinning of `variant`, if configured.
    pub fn launch_of(&self, variant: Variant) -> Option<LaunchPinning> {
        self.launch.iter().find(|(v, _)| *v == variant).map(|(_, p)| *p)
    }

    /// Everything as JSON (for machine-readable verdicts).
    pub fn to_json(&self) -> serde_json::Value {
        let launch: serde_json::Map<String, serde_json::Value> =
            self.launch.iter().map(|(v, p)| (v.name().to_owned(), json!(p.name()))).collect();
        json!({
            "measurementsSignature": self.measurements.name(),
            "launch": launch,
            "revocation": self.revocation_state().name(),
            "waivers": self.waivers(),
        })
    }
}
