//! PCR indices, single measurements and the measurements map, with its merge rules.

use crate::error::Error;
use crate::{EXPECTED_LENGTHS, PCR_COUNT};
use core::fmt;
use std::collections::BTreeMap;

/// A TPM PCR index, 0..=23 (TCG PC Client Platform Firmware Profile: 24 PCRs per bank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PcrIndex(u8);

impl PcrIndex {
    /// The highest index.
    pub const MAX: Self = Self(PCR_COUNT as u8 - 1);

    /// `index` as a PCR index, or [`Error::PcrIndexOutOfRange`].
    pub fn new(index: u32) -> Result<Self, Error> {
        Self::from_u64(u64::from(index))
    }

    pub(crate) fn from_u64(index: u64) -> Result<Self, Error> {
        if index < PCR_COUNT as u64 { Ok(Self(index as u8)) } else { Err(Error::PcrIndexOutOfRange { index }) }
    }

    /// The index as a number.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// All 24 indices in order.
    pub fn all() -> impl Iterator<Item = Self> {
        (0..PCR_COUNT as u8).map(Self)
    }
}

impl TryFrom<u32> for PcrIndex {
    type Error = Error;
    fn try_from(index: u32) -> Result<Self, Error> {
        Self::new(index)
    }
}

impl From<PcrIndex> for u32 {
    fn from(index: PcrIndex) -> u32 {
        u32::from(index.0)
    }
}

impl fmt::Display for PcrIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The expected value of one PCR and whether a mismatch is only a warning.
///
/// Invariant: `expected` is 32 or 48 bytes ([`EXPECTED_LENGTHS`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Measurement {
    expected: Vec<u8>,
    warn_only: bool,
}

impl Measurement {
    /// A measurement expecting `expected` (32 or 48 bytes, else [`Error::WrongLength`]).
    pub fn new(expected: &[u8], warn_only: bool) -> Result<Self, Error> {
        Self::from_vec(expected.to_vec(), warn_only).map_err(|found| Error::WrongLength { index: None, found })
    }

    /// An enforced measurement (a mismatch rejects the machine).
    pub fn enforced(expected: &[u8]) -> Result<Self, Error> {
        Self::new(expected, false)
    }

    /// A warn-only measurement (a mismatch is reported but accepted).
    pub fn warn_only(expected: &[u8]) -> Result<Self, Error> {
        Self::new(expected, true)
    }

    /// Takes `expected` if its length is allowed, else returns the length.
    pub(crate) fn from_vec(expected: Vec<u8>, warn_only: bool) -> Result<Self, usize> {
        if EXPECTED_LENGTHS.contains(&expected.len()) { Ok(Self { expected, warn_only }) } else { Err(expected.len()) }
    }

    /// The expected PCR value (32 or 48 bytes).
    pub fn expected(&self) -> &[u8] {
        &self.expected
    }

    /// Whether a mismatch is only reported (`warnOnly: true`) instead of rejecting.
    pub fn is_warn_only(&self) -> bool {
        self.warn_only
    }
}

impl fmt::Debug for Measurement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Measurement")
            .field("expected", &hex::encode(&self.expected))
            .field("warn_only", &self.warn_only)
            .finish()
    }
}

/// Expected values for a set of PCRs of one bank (all 32 or all 48 bytes).
///
/// Parsed maps are never empty ([`Error::NoMeasurements`]); one built with [`Measurements::new`] starts
/// empty, and an empty map compares as accepted, so callers building maps by hand must fill them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Measurements {
    entries: BTreeMap<PcrIndex, Measurement>,
}

impl Measurements {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the expected value of `index`, returning the previous one. Fails with [`Error::MixedLengths`]
    /// if the value's length differs from the map's other entries (the replaced entry does not count, so
    /// a one-entry map can switch banks).
    pub fn insert(&mut self, index: PcrIndex, measurement: Measurement) -> Result<Option<Measurement>, Error> {
        if let Some((_, other)) = self.entries.iter().find(|(i, _)| **i != index) {
            let (expected, found) = (other.expected.len(), measurement.expected.len());
            if expected != found {
                return Err(Error::MixedLengths { index, expected, found });
            }
        }
        Ok(self.entries.insert(index, measurement))
    }

    /// Removes the expected value of `index`.
    pub fn remove(&mut self, index: PcrIndex) -> Option<Measurement> {
        self.entries.remove(&index)
    }

    /// The expected value of `index`, if any.
    pub fn get(&self, index: PcrIndex) -> Option<&Measurement> {
        self.entries.get(&index)
    }

    /// Entries in PCR order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (PcrIndex, &Measurement)> {
        self.entries.iter().map(|(i, m)| (*i, m))
    }

    /// Number of PCRs with an expected value.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no PCR has an expected value.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Length of the expected values (32 or 48), or `None` for an empty map.
    pub fn digest_len(&self) -> Option<usize> {
        self.entries.values().next().map(|m| m.expected.len())
    }

    /// Overlays `overrides` on `self`: **later wins per PCR**.
    ///
    /// * a PCR only in `self` keeps its value;
    /// * a PCR in `overrides` takes the override's expected value *and* `warnOnly` flag, whatever `self`
    ///   said (so an override can both change and relax a PCR; load overrides only from a trusted source);
    /// * the result must still be one bank: different value lengths fail with [`Error::MixedLengths`]
    ///   (reported at the lowest PCR whose length differs from the lowest PCR's).
    ///
    /// `a.merge(&b)?.merge(&c)?` applies `b` then `c`.
    pub fn merge(&self, overrides: &Self) -> Result<Self, Error> {
        self.merge_inner(overrides, false)
    }

    /// Like [`merge`](Self::merge), but a PCR set in both maps must be set identically (same expected
    /// value and same `warnOnly`), else [`Error::MergeConflict`] for the lowest such PCR. Use it to
    /// combine maps that must not override one another (e.g. two halves of one policy).
    pub fn merge_strict(&self, other: &Self) -> Result<Self, Error> {
        self.merge_inner(other, true)
    }

    fn merge_inner(&self, other: &Self, strict: bool) -> Result<Self, Error> {
        let mut out = self.clone();
        for (index, m) in other.iter() {
            if strict && self.get(index).is_some_and(|mine| mine != m) {
                return Err(Error::MergeConflict { index });
            }
            out.entries.insert(index, m.clone());
        }
        // One bank: every value as long as the lowest PCR's.
        let expected = out.digest_len().unwrap_or_default();
        if let Some((index, m)) = out.iter().find(|(_, m)| m.expected.len() != expected) {
            return Err(Error::MixedLengths { index, expected, found: m.expected.len() });
        }
        Ok(out)
    }
}
