//! Comparing actual PCR values with the expected ones.
//!
//! Every expected PCR gets one row; actual PCRs that nothing expects are not reported (they are not
//! checked). An actual value of another length than the expected one (another bank) is a mismatch.

use crate::pcr::{Measurements, PcrIndex};
use core::fmt;
use std::collections::BTreeMap;

/// The outcome for one expected PCR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PcrStatus {
    /// The actual value equals the expected one.
    Match,
    /// The value differs and the PCR is enforced: the machine is rejected.
    MismatchEnforced,
    /// The value differs but the PCR is `warnOnly`: reported, accepted.
    MismatchWarnOnly,
    /// No actual value was presented. Rejects the machine unless the PCR is `warnOnly`
    /// ([`PcrCheck::warn_only`]).
    Missing,
}

/// One row of a [`Report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcrCheck {
    /// The PCR.
    pub index: PcrIndex,
    /// The outcome.
    pub status: PcrStatus,
    /// Whether the PCR is `warnOnly`.
    pub warn_only: bool,
    /// The expected value.
    pub expected: Vec<u8>,
    /// The actual value, if one was presented.
    pub actual: Option<Vec<u8>>,
}

impl PcrCheck {
    /// Whether this row rejects the machine (an enforced mismatch, or an enforced PCR missing).
    pub fn is_rejection(&self) -> bool {
        match self.status {
            PcrStatus::Match | PcrStatus::MismatchWarnOnly => false,
            PcrStatus::MismatchEnforced => true,
            PcrStatus::Missing => !self.warn_only,
        }
    }

    /// Whether this row is a tolerated deviation (warn-only mismatch or warn-only missing).
    pub fn is_warning(&self) -> bool {
        self.status != PcrStatus::Match && !self.is_rejection()
    }

    fn label(&self) -> &'static str {
        match (self.status, self.warn_only) {
            (PcrStatus::Match, _) => "match",
            (PcrStatus::MismatchEnforced, _) => "MISMATCH",
            (PcrStatus::MismatchWarnOnly, _) => "mismatch (warn-only)",
            (PcrStatus::Missing, false) => "MISSING",
            (PcrStatus::Missing, true) => "missing (warn-only)",
        }
    }
}

/// The per-PCR result of [`Measurements::compare`], in PCR order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    checks: Vec<PcrCheck>,
}

impl Report {
    /// All rows, in PCR order.
    pub fn checks(&self) -> &[PcrCheck] {
        &self.checks
    }

    /// True iff no row is an enforced mismatch or an enforced PCR missing. (An empty report is accepted;
    /// parsed measurements are never empty.)
    pub fn is_accepted(&self) -> bool {
        !self.checks.iter().any(PcrCheck::is_rejection)
    }

    /// Rows that reject the machine.
    pub fn rejections(&self) -> impl Iterator<Item = &PcrCheck> {
        self.checks.iter().filter(|c| c.is_rejection())
    }

    /// Rows that are tolerated deviations (warn-only).
    pub fn warnings(&self) -> impl Iterator<Item = &PcrCheck> {
        self.checks.iter().filter(|c| c.is_warning())
    }
}

/// A table: one line per expected PCR, then the verdict.
///
/// ```text
/// PCR  STATUS                EXPECTED / ACTUAL
///   4  match                 7b06…
///   9  MISMATCH              expected 00aa…
///                            actual   11bb…
/// ```
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "PCR  {:<21} EXPECTED / ACTUAL", "STATUS")?;
        for c in &self.checks {
            let expected = hex::encode(&c.expected);
            match (&c.status, &c.actual) {
                (PcrStatus::Match, _) => writeln!(f, "{:>3}  {:<21} {expected}", c.index, c.label())?,
                (_, Some(actual)) => {
                    writeln!(f, "{:>3}  {:<21} expected {expected}", c.index, c.label())?;
                    writeln!(f, "{:>3}  {:<21} actual   {}", "", "", hex::encode(actual))?;
                }
                (_, None) => {
                    writeln!(f, "{:>3}  {:<21} expected {expected}", c.index, c.label())?;
                    writeln!(f, "{:>3}  {:<21} actual   (absent)", "", "")?;
                }
            }
        }
        let (rejections, warnings) = (self.rejections().count(), self.warnings().count());
        let verdict = if self.is_accepted() { "ACCEPTED" } else { "REJECTED" };
        write!(f, "{verdict}: {} PCRs checked, {rejections} rejecting, {warnings} warnings", self.checks.len())
    }
}

impl Measurements {
    /// Compares actual PCR values (index → value, as read from a verified quote) with the expected ones.
    pub fn compare(&self, actual: &BTreeMap<u32, Vec<u8>>) -> Report {
        self.compare_with(|index| actual.get(&u32::from(index)).map(Vec::as_slice))
    }

    /// Like [`compare`](Self::compare), with the actual values looked up through `actual`.
    pub fn compare_with<'a>(&self, mut actual: impl FnMut(PcrIndex) -> Option<&'a [u8]>) -> Report {
        let checks = self
            .iter()
            .map(|(index, m)| {
                let got = actual(index);
                let status = match got {
                    None => PcrStatus::Missing,
                    Some(v) if v == m.expected() => PcrStatus::Match,
                    Some(_) if m.is_warn_only() => PcrStatus::MismatchWarnOnly,
                    Some(_) => PcrStatus::MismatchEnforced,
                };
                PcrCheck {
                    index,
                    status,
                    warn_only: m.is_warn_only(),
                    expected: m.expected().to_vec(),
                    actual: got.map(<[u8]>::to_vec),
                }
            })
            .collect();
        Report { checks }
    }
}
