//! The trust flags every verifying command shares, and the CRLs its variants need.

use std::sync::Arc;

use attest_engine::snp::{Product, SigningKey, SnpPolicy, SnpVerifier};
use attest_engine::variant::Variant;
use attest_kds::{ChainKind, CrlKeeper, CrlPolicy, CrlWanted, Kds, KdsConfig};
use std::path::PathBuf;

use crate::{MeasurementsTrust, TrustError};

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
            Some(path) => policy_file("SNP policy", path, SnpPolicy::from_text)?,
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

/// The CRLs the SEV-SNP `variants` need: for each, the CRLs of the chain of the AMD key that signs its reports
/// (the variant table's signer: VLEK → the ASVK chain's, VCEK → the ASK chain's), for the policy's products
/// (every product when it names none).
pub fn crl_wanted(variants: &[Variant], policy: &SnpPolicy) -> Vec<CrlWanted> {
    let products: Vec<Product> =
        if policy.products.is_empty() { Product::ALL.to_vec() } else { policy.products.clone() };
    let mut out = Vec::new();
    for v in variants {
        let Some(signer) = v.info().snp_signer() else { continue };
        let kind = match signer {
            SigningKey::Vcek => ChainKind::Vcek,
            SigningKey::Vlek => ChainKind::Vlek,
        };
        out.extend(products.iter().map(|&product| CrlWanted { product, kind }));
    }
    out
}

/// A policy file (`what`) at `path`, parsed by `parse`.
pub(crate) fn policy_file<P, E: std::fmt::Display>(
    what: &'static str,
    path: &std::path::Path,
    parse: impl FnOnce(&str) -> Result<P, E>,
) -> Result<P, TrustError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| TrustError::Io { what, path: path.to_owned(), source })?;
    parse(&text).map_err(|e| TrustError::Invalid { what, path: path.to_owned(), reason: e.to_string() })
}
