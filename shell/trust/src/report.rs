//! What a running verifier trusts and waives, and the launch check at start.

use std::sync::Arc;

use attest_engine::LaunchPinning;
use attest_engine::variant::{Validator, Variant};
use attest_kds::{CrlKeeper, RevocationState};
use serde_json::json;

use crate::{SignatureState, TrustError};

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
        for check in variant.info().td_waivers {
            tracing::warn!(%variant, waived = check.name(),
                "TD-attribute check waived for this variant's platform (its row of the variant table)");
        }
        out.push((variant, pinning));
    }
    Ok(out)
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
    /// `launch-unpinned:<variant>`, `td-platform:<variant>:<check>` (a TD-attribute check the variant's
    /// platform cannot pass, waived by its row of the variant table), `revocation-stale`, `revocation-missing`.
    pub fn waivers(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.measurements == SignatureState::DangerouslyUnsigned {
            out.push("measurements-unsigned".to_owned());
        }
        for (v, p) in &self.launch {
            if *p == LaunchPinning::DangerouslyUnpinned {
                out.push(format!("launch-unpinned:{v}"));
            }
            for check in v.info().td_waivers {
                out.push(format!("td-platform:{v}:{check}"));
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
