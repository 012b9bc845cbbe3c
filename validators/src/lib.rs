//! # attest-validators
//!
//! The one validator factory ([`ValidatorFactory`]): the engine's [`Validator`] of any attestation variant,
//! built from a measurements document and the operator's policies — the same way for the join service, the
//! bootstrapper, the `attest` CLI (all through `attest-trust`, which re-exports it) and the C ABI.
//!
//! **May depend on:** `attest-engine`, `attest-measurements`. **Must not depend on:** any shell crate, an
//! HTTP client, an async runtime or a command-line parser: it is sans-IO (it reads no file and keeps no
//! state), so the C library and other embedders can link it without the services. Where trust inputs come
//! from (signed measurements files, CRLs kept current, launch pinning checked at start, waivers) is
//! `attest-trust`'s business.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Arc;

use attest_engine::crypto::Digest;
use attest_engine::gce::{GcePolicy, GceVerifier};
use attest_engine::policy::Hex;
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tdx::{TdxPolicy, TdxVerifier};
use attest_engine::variant::{AkRegistry, LockRegister, Measured, PcrPolicy, Validator, Variant};
use attest_measurements::{Document, Measurements};

/// What a variant's validator expects of the measured registers: the vTPM's PCRs, or (a variant measured by
/// its TD registers) the TDX policy with the file's MRTD and RTMRs.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// Expected SHA-256 PCR values.
    Pcrs(PcrPolicy),
    /// The TDX policy holding the expected MRTD and RTMR0–3 (boxed: a policy is ~600 bytes).
    TdRegisters(Box<TdxPolicy>),
}

impl From<PcrPolicy> for Expected {
    fn from(pcrs: PcrPolicy) -> Self {
        Expected::Pcrs(pcrs)
    }
}

impl Expected {
    /// Leaves PCR `index` out of the expectations (a variant measured by PCRs; no-op otherwise).
    pub fn without_pcr(mut self, index: u8) -> Self {
        if let Expected::Pcrs(policy) = &mut self {
            policy.entries.retain(|e| e.index != index);
        }
        self
    }

    /// Replaces the expectation of PCR `index` by an enforced `value` (a variant measured by PCRs; no-op
    /// otherwise).
    pub fn with_pcr(mut self, index: u8, value: [u8; 32]) -> Self {
        if let Expected::Pcrs(policy) = &mut self {
            policy.entries.retain(|e| e.index != index);
            policy.entries.push(attest_engine::variant::PcrExpectation { index, expected: value, warn_only: false });
            policy.entries.sort_by_key(|e| e.index);
        }
        self
    }

    /// Leaves the node lock's register out of the expectations (a vTPM's PCR, or a TD's RTMR: whichever these
    /// expectations measure; a register of the other kind is left alone).
    pub fn without_lock(mut self, register: LockRegister) -> Self {
        match (&mut self, register) {
            (Expected::Pcrs(_), LockRegister::Pcr(i)) => return self.without_pcr(i),
            (Expected::TdRegisters(policy), LockRegister::Rtmr(i)) => {
                if let Some(slot) = rtmr_slot(policy, i) {
                    *slot = None;
                }
            }
            _ => {}
        }
        self
    }

    /// Replaces the expectation of the node lock's register by an enforced `value` (of the register's size;
    /// a register of the other kind than these expectations, or a value of the wrong size, is left alone).
    pub fn with_lock(mut self, register: LockRegister, value: &Digest) -> Self {
        match (&mut self, register) {
            (Expected::Pcrs(_), LockRegister::Pcr(i)) => {
                if let Ok(v) = <[u8; 32]>::try_from(value.as_bytes()) {
                    return self.with_pcr(i, v);
                }
            }
            (Expected::TdRegisters(policy), LockRegister::Rtmr(i)) => {
                if let (Some(slot), Ok(v)) = (rtmr_slot(policy, i), <[u8; 48]>::try_from(value.as_bytes())) {
                    *slot = Some(Hex(v));
                }
            }
            _ => {}
        }
        self
    }
}

/// The TDX policy's expectation of RTMR `index` (0–3).
fn rtmr_slot(policy: &mut TdxPolicy, index: u8) -> Option<&mut Option<Hex<48>>> {
    match index {
        0 => Some(&mut policy.rtmr0),
        1 => Some(&mut policy.rtmr1),
        2 => Some(&mut policy.rtmr2),
        3 => Some(&mut policy.rtmr3),
        _ => None,
    }
}

/// Why a validator could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum FactoryError {
    /// The measurements document has no usable map for the variant.
    Measurements {
        /// The variant.
        variant: Variant,
        /// The measurements crate's reason.
        source: attest_measurements::Error,
    },
    /// The variant trusts its AK through a registry, and none was configured.
    NoAkRegistry {
        /// The variant.
        variant: Variant,
    },
    /// The expectations given are of the other kind than the variant measures (PCRs for a variant measured by
    /// its TD registers, or the reverse).
    WrongExpectations {
        /// The variant.
        variant: Variant,
        /// What it measures.
        measured: Measured,
    },
}

impl std::fmt::Display for FactoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Measurements { variant, source } => write!(f, "measurements for {variant}: {source}"),
            Self::NoAkRegistry { variant } => {
                write!(f, "{variant} trusts attestation keys through an AK registry, and none is configured")
            }
            Self::WrongExpectations { variant, measured } => {
                write!(f, "{variant} is measured by {measured:?}; the expectations given are of the other kind")
            }
        }
    }
}

impl std::error::Error for FactoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Measurements { source, .. } => Some(source),
            Self::NoAkRegistry { .. } | Self::WrongExpectations { .. } => None,
        }
    }
}

/// The one validator factory: the engine's [`Validator`] of any variant, built from the operator's trust
/// configuration — the same way for the join service (joining nodes), the bootstrapper (the join service it
/// joins through), `attest init` / `attest verify` / `attest document verify` and the C ABI.
///
/// ```text
///  measurements map of the variant ──► expected (the variant table's `measured`: SHA-256 PCRs, or MRTD/RTMRs)
///                                             │  consumers may adjust it (PCR 15: the cluster binding)
///  ValidatorFactory { SNP verifier + policy per variant, TDX verifier + policy, GCE verifier + policy,
///                     AK registry }  ──► validator(variant, expected) ──► Validator (every verifier set;
///                                                                          the AK registry where the table's
///                                                                          AK trust is `Registry`)
/// ```
///
/// What a variant needs follows from its row of the engine's variant table
/// ([`attest_engine::variant::TABLE`]), never from its name: a variant whose AK is trusted through a registry
/// cannot be built without one ([`FactoryError::NoAkRegistry`]), and a variant measured by its TD registers
/// takes its MRTD and RTMRs from the measurements file into the TDX policy. Launch pinning is not checked
/// here: consumers check it at start (`check_launch`, or the join service when a measurements file is
/// applied), and every validation checks it again.
///
/// Fields are public so that a consumer sets what it configures and keeps the secure defaults for the rest
/// ([`ValidatorFactory::default`]: AMD's, Intel's and Google's pinned roots, no TDX collateral, the engine's
/// default policies, no AK registry).
#[derive(Clone, Debug)]
pub struct ValidatorFactory {
    /// The SEV-SNP verifier (pinned roots, verified-chain cache, CRLs).
    pub snp: Arc<SnpVerifier>,
    /// The SNP policy of the SEV-SNP variants.
    pub snp_policy: SnpPolicy,
    /// SNP policies of single variants, in place of `snp_policy` (each variant's launch measurement differs).
    pub snp_policies: HashMap<Variant, SnpPolicy>,
    /// The TDX verifier (Intel's pinned root and the installed collateral).
    pub tdx: Arc<TdxVerifier>,
    /// The TDX policy of the TDX variants (a variant measured by its TD registers takes its MRTD and RTMRs
    /// from the measurements file instead).
    pub tdx_policy: TdxPolicy,
    /// The GCE verifier (Google's pinned roots).
    pub gce: Arc<GceVerifier>,
    /// The GCE policy.
    pub gce_policy: GcePolicy,
    /// The AK registry of the variants whose AK is trusted through one.
    pub ak_registry: Option<Arc<dyn AkRegistry>>,
}

impl Default for ValidatorFactory {
    fn default() -> Self {
        ValidatorFactory {
            snp: Arc::new(SnpVerifier::new()),
            snp_policy: SnpPolicy::default(),
            snp_policies: HashMap::new(),
            tdx: Arc::new(TdxVerifier::new()),
            tdx_policy: TdxPolicy::default(),
            gce: Arc::new(GceVerifier::new()),
            gce_policy: GcePolicy::default(),
            ak_registry: None,
        }
    }
}

impl ValidatorFactory {
    /// The secure defaults ([`ValidatorFactory::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The SNP policy that applies to `variant`.
    pub fn snp_policy_for(&self, variant: Variant) -> &SnpPolicy {
        self.snp_policies.get(&variant).unwrap_or(&self.snp_policy)
    }

    /// What `map` expects of a node of `variant`: its SHA-256 PCRs, or (measured by TD registers) this
    /// factory's TDX policy with the map's MRTD and RTMRs.
    pub fn expected(&self, variant: Variant, map: &Measurements) -> Result<Expected, FactoryError> {
        let bad = |source| FactoryError::Measurements { variant, source };
        Ok(match variant.info().measured {
            Measured::Pcrs => Expected::Pcrs(map.to_pcr_policy().map_err(bad)?),
            Measured::TdRegisters => Expected::TdRegisters(Box::new(map.to_tdx_policy(&self.tdx_policy).map_err(bad)?)),
        })
    }

    /// [`ValidatorFactory::expected`] of the map a measurements document holds for `variant` (a map applies
    /// to every variant; a release list is searched for the variant's entry, which must be the only one).
    pub fn expected_in(&self, variant: Variant, document: &Document) -> Result<Expected, FactoryError> {
        let map = document.for_variant(variant).map_err(|source| FactoryError::Measurements { variant, source })?;
        self.expected(variant, map)
    }

    /// Every accepted measurement set a document holds for `variant`, in file order (at least one): the map,
    /// or each of a release list's entries for the variant — several while a cluster rolls from one image to
    /// the next. Each comes with the image it belongs to, when the file names it.
    pub fn expected_sets(
        &self,
        variant: Variant,
        document: &Document,
    ) -> Result<Vec<(Option<String>, Expected)>, FactoryError> {
        let bad = |source| FactoryError::Measurements { variant, source };
        document
            .sets_for_variant(variant)
            .map_err(bad)?
            .into_iter()
            .map(|set| Ok((set.image.map(str::to_owned), self.expected(variant, set.measurements)?)))
            .collect()
    }

    /// The validator of `variant` expecting `expected`, with every verifier and policy of this factory and,
    /// where the variant trusts its AK through a registry, the factory's registry.
    pub fn validator(&self, variant: Variant, expected: Expected) -> Result<Validator, FactoryError> {
        self.validator_accepting(variant, vec![expected])
    }

    /// The validator of `variant` that admits a node meeting any one of `sets` (rolling upgrades: the first
    /// is the validator's own set, the others its alternatives, each applied whole —
    /// `Validator::with_alternatives`). An empty `sets` expects nothing.
    pub fn validator_accepting(&self, variant: Variant, sets: Vec<Expected>) -> Result<Validator, FactoryError> {
        let info = variant.info();
        let (mut pcr_sets, mut tdx_sets) = (Vec::new(), Vec::new());
        for expected in sets {
            match (info.measured, expected) {
                (Measured::Pcrs, Expected::Pcrs(pcrs)) => pcr_sets.push(pcrs),
                (Measured::TdRegisters, Expected::TdRegisters(tdx)) => tdx_sets.push(*tdx),
                (measured, _) => return Err(FactoryError::WrongExpectations { variant, measured }),
            }
        }
        let pcrs = if pcr_sets.is_empty() { PcrPolicy::default() } else { pcr_sets.remove(0) };
        let tdx_policy = if tdx_sets.is_empty() { self.tdx_policy.clone() } else { tdx_sets.remove(0) };
        let mut validator = Validator::new(variant, Arc::clone(&self.snp), self.snp_policy_for(variant).clone(), pcrs)
            .with_tdx(Arc::clone(&self.tdx), tdx_policy)
            .with_gce(Arc::clone(&self.gce), self.gce_policy.clone())
            .with_alternatives(pcr_sets, tdx_sets);
        if info.ak == attest_engine::variant::AkTrust::Registry {
            let registry = self.ak_registry.as_ref().ok_or(FactoryError::NoAkRegistry { variant })?;
            validator = validator.with_ak_registry(Arc::clone(registry));
        }
        Ok(validator)
    }

    /// The validator of `variant` admitting every accepted set `document` holds for it
    /// ([`ValidatorFactory::expected_sets`], then [`ValidatorFactory::validator_accepting`]).
    pub fn validator_for(&self, variant: Variant, document: &Document) -> Result<Validator, FactoryError> {
        let sets = self.expected_sets(variant, document)?.into_iter().map(|(_, e)| e).collect();
        self.validator_accepting(variant, sets)
    }

    /// The validator of `variant` with no measurement expectations, for checking its launch pinning at start
    /// (`check_launch`): launch pinning depends on the variant and its policies only. A variant measured by
    /// its TD registers takes its MRTD from the measurements file, so its launch is checked once a file is
    /// applied; its probe here has the factory's TDX policy.
    pub fn launch_probe(&self, variant: Variant) -> Validator {
        Validator::new(variant, Arc::clone(&self.snp), self.snp_policy_for(variant).clone(), PcrPolicy::default())
            .with_tdx(Arc::clone(&self.tdx), self.tdx_policy.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_engine::crypto::default_provider;
    use attest_engine::variant::PcrExpectation;

    #[test]
    fn the_lock_register_is_left_out_or_replaced_in_either_kind_of_expectations() {
        let p = default_provider();
        let id = [9; 32];
        let (pcr15, rtmr3) = (LockRegister::Pcr(15), LockRegister::Rtmr(3));
        let entry = |index, v| PcrExpectation { index, expected: [v; 32], warn_only: false };
        let pcrs = Expected::Pcrs(PcrPolicy { entries: vec![entry(4, 1), entry(15, 0)] });
        let Expected::Pcrs(left) = pcrs.clone().without_lock(pcr15) else { panic!() };
        assert_eq!(left.entries, [entry(4, 1)]);
        let Expected::Pcrs(bound) = pcrs.clone().with_lock(pcr15, &pcr15.bound(p, &id)) else { panic!() };
        assert_eq!(bound.entries[1].expected, pcr15.bound(p, &id).as_bytes());
        assert_eq!(pcrs.clone().without_lock(rtmr3), pcrs, "an RTMR is no PCR");

        let policy = TdxPolicy { rtmr1: Some(Hex([1; 48])), rtmr3: Some(Hex([0; 48])), ..TdxPolicy::default() };
        let td = Expected::TdRegisters(Box::new(policy));
        let Expected::TdRegisters(left) = td.clone().without_lock(rtmr3) else { panic!() };
        assert_eq!((left.rtmr1, left.rtmr3), (Some(Hex([1; 48])), None));
        let Expected::TdRegisters(bound) = td.clone().with_lock(rtmr3, &rtmr3.bound(p, &id)) else { panic!() };
        assert_eq!(bound.rtmr3.unwrap().0, rtmr3.bound(p, &id).as_bytes());
        assert_eq!(td.clone().with_lock(rtmr3, &pcr15.bound(p, &id)), td, "a 32-byte value for an RTMR");
        assert_eq!(td.clone().without_lock(pcr15), td, "a PCR is no TD register");
    }
}
