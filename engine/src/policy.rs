//! The vocabulary every evidence policy shares: what happened to a check ([`Outcome`]), fixed-length hex
//! values in policy files ([`Hex`]), how revocation is checked ([`Revocation`]), how a launch is pinned
//! ([`LaunchPinning`]), and the policy-file readers. The policies themselves live with their evidence:
//! [`crate::snp::SnpPolicy`] (module [`crate::snp::policy`]) and [`crate::tdx::TdxPolicy`] (module
//! [`crate::tdx::policy`]).

use crate::error::Error;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Declares a check enum with `ALL`, `COUNT` and stable snake_case names (SNP's in `crate::snp::policy`, TDX's in
/// `crate::tdx::policy`).
macro_rules! checks {
    ($(#[$edoc:meta])* $enum:ident { $($(#[$doc:meta])* $name:ident => $label:literal,)* }) => {
        $(#[$edoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $enum { $($(#[$doc])* $name,)* }

        impl $enum {
            /// All checks, in order.
            pub const ALL: &'static [$enum] = &[$($enum::$name,)*];
            /// Number of checks.
            pub const COUNT: usize = Self::ALL.len();
            /// A stable, snake_case name.
            pub fn name(self) -> &'static str {
                match self { $($enum::$name => $label,)* }
            }
        }
    };
}
pub(crate) use checks;

/// What happened to one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The verifier did not reach the check (only in verdicts of failed verifications).
    #[default]
    NotRun,
    /// Checked and satisfied.
    Passed,
    /// Not checked: the policy does not ask for it, or it does not apply to this evidence.
    Waived,
}

/// A fixed-length byte string written as hex in policy files. The length is exact.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hex<const N: usize>(pub [u8; N]);

impl<const N: usize> fmt::Debug for Hex<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl<const N: usize> Serialize for Hex<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(self.0))
    }
}

impl<'de, const N: usize> Deserialize<'de> for Hex<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let v = hex::decode(s.trim()).map_err(serde::de::Error::custom)?;
        let arr: [u8; N] = v.try_into().map_err(|v: Vec<u8>| {
            serde::de::Error::custom(format_args!(
                "expected exactly {N} bytes ({} hex digits), found {} bytes",
                N * 2,
                v.len()
            ))
        })?;
        Ok(Self(arr))
    }
}

/// How revocation is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Revocation {
    /// Check against the CRL when the verifier holds one; otherwise record the check as waived.
    #[default]
    CheckIfPresent,
    /// Fail when the verifier holds no CRL for the product.
    Require,
}

/// How a policy pins the launch of a guest ([`crate::snp::SnpPolicy::launch_pinning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchPinning {
    /// MEASUREMENT must be one of the policy's `measurements`.
    Measurement,
    /// ID_KEY_DIGEST must be one of the policy's `id_key_digests` (and MEASUREMENT is then the launch
    /// digest that key signed).
    IdKey,
    /// Nothing pins the launch, by the explicit waiver `dangerous_allow_unpinned_launch`.
    DangerouslyUnpinned,
    /// The evidence has no SNP launch to pin (`qemu-vtpm`).
    NotApplicable,
}

impl LaunchPinning {
    /// A stable name (`measurement`, `id-key`, `dangerously-unpinned`, `not-applicable`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Measurement => "measurement",
            Self::IdKey => "id-key",
            Self::DangerouslyUnpinned => "dangerously-unpinned",
            Self::NotApplicable => "not-applicable",
        }
    }
}

/// Reads a policy file in TOML (unknown keys are errors through each policy's `deny_unknown_fields`).
pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    toml::from_str(text).map_err(|e| Error::PolicyFile { format: "toml", reason: e.to_string().trim().into() })
}

/// Reads a policy file in JSON.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| Error::PolicyFile { format: "json", reason: e.to_string().into() })
}
