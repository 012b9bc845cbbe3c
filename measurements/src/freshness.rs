//! Measurements that only move forward: a signed file's monotonic **version** and optional **expiry**.
//!
//! Two optional top-level fields, in either form (our extension; a file without them is version 0 and
//! never expires, exactly Constellation's format):
//!
//! ```json
//! { "measurementsVersion": 7, "expires": "2026-01-31T00:00:00Z",
//!   "version": "v2.16.0", "ref": "-", "stream": "stable", "list": [ … ] }
//! ```
//!
//! - `measurementsVersion`: an integer 0..=[`MAX_MEASUREMENTS_VERSION`] (2⁵³ − 1, so every JSON reader agrees
//!   on it). It is inside the signed bytes, so only the signer can raise it. A verifier keeps the highest
//!   version it has accepted and refuses a lower one: putting back an older, validly signed file (to admit an
//!   image the operator has since dropped) is refused. To return to old values the operator signs them again
//!   under a **new** version (`attest measurements sign --version N`).
//! - `expires`: RFC 3339 in UTC with whole seconds only (`YYYY-MM-DDTHH:MM:SSZ`); a verifier refuses the file
//!   from that second on, so a withheld update cannot keep an old file valid for ever.
//!
//! Constellation's readers ignore unknown top-level fields of the **list** form, so a versioned release list
//! stays readable there. A versioned **map** is this project's only: Constellation reads map keys as PCR
//! indices. The release field `version` (a release name such as `v2.16.0`) is unrelated and unchanged.

use crate::error::Error;
use attest_engine::UnixTime;
use core::fmt;

/// Highest `measurementsVersion` accepted: 2⁵³ − 1, the largest integer every JSON implementation reads
/// exactly (RFC 8259 §6, I-JSON).
pub const MAX_MEASUREMENTS_VERSION: u64 = (1 << 53) - 1;

/// The JSON field of the version.
pub const VERSION_FIELD: &str = "measurementsVersion";
/// The JSON field of the expiry.
pub const EXPIRES_FIELD: &str = "expires";

/// A file's version and expiry (the defaults: version 0, no expiry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Freshness {
    /// The monotonic version (0 for a file without one).
    pub version: u64,
    /// The first second at which the file is no longer valid, if any.
    pub expires: Option<UnixTime>,
}

impl Freshness {
    /// A version without expiry; [`Error::InvalidVersion`] above [`MAX_MEASUREMENTS_VERSION`].
    pub fn new(version: u64, expires: Option<UnixTime>) -> Result<Freshness, Error> {
        check_version(version)?;
        Ok(Freshness { version, expires })
    }

    /// Whether the file has expired at `now` (`expires` ≤ `now`).
    pub fn is_expired(&self, now: UnixTime) -> bool {
        self.expires.is_some_and(|e| e <= now)
    }

    /// Whether the file carries either field (a file without them is written in the plain, unversioned form).
    pub fn is_default(&self) -> bool {
        *self == Freshness::default()
    }

    /// The top-level JSON members, each followed by `,\n` and indented by `indent` (empty for the default).
    pub(crate) fn json_members(&self, indent: &str) -> String {
        use core::fmt::Write as _;
        let mut out = String::new();
        if self.version != 0 || self.expires.is_some() {
            let _ = writeln!(out, "{indent}\"{VERSION_FIELD}\": {},", self.version);
        }
        if let Some(e) = self.expires {
            let _ = writeln!(out, "{indent}\"{EXPIRES_FIELD}\": \"{e}\",");
        }
        out
    }
}

impl fmt::Display for Freshness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "version {}", self.version)?;
        match self.expires {
            Some(e) => write!(f, ", expires {e}"),
            None => f.write_str(", no expiry"),
        }
    }
}

pub(crate) fn check_version(version: u64) -> Result<u64, Error> {
    if version > MAX_MEASUREMENTS_VERSION {
        return Err(Error::InvalidVersion { reason: "above 2^53 - 1" });
    }
    Ok(version)
}

/// Parses `expires`: exactly `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC, whole seconds, upper-case `T` and `Z`).
pub fn parse_expires(text: &str) -> Result<UnixTime, Error> {
    let b = text.as_bytes();
    if b.len() != 20 || b[10] != b'T' || b[19] != b'Z' {
        return Err(Error::InvalidExpiry { reason: "not YYYY-MM-DDTHH:MM:SSZ" });
    }
    UnixTime::parse(text).ok_or(Error::InvalidExpiry { reason: "not a valid UTC time after 1970" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_strict_rfc3339_utc() {
        assert_eq!(parse_expires("2026-01-31T00:00:00Z").map(|t| t.to_string()).as_deref(), Ok("2026-01-31T00:00:00Z"));
        for bad in [
            "2026-01-31",
            "2026-01-31T00:00:00",
            "2026-01-31t00:00:00z",
            "2026-01-31T00:00:00+00:00",
            "2026-02-30T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "1700000000",
            "2026-01-31T00:00:00.5Z",
        ] {
            assert!(parse_expires(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn versions_are_bounded_and_expiry_is_inclusive() {
        assert!(Freshness::new(MAX_MEASUREMENTS_VERSION, None).is_ok());
        assert!(Freshness::new(MAX_MEASUREMENTS_VERSION + 1, None).is_err());
        let f = Freshness { version: 3, expires: Some(UnixTime::from_secs(100)) };
        assert!(!f.is_expired(UnixTime::from_secs(99)));
        assert!(f.is_expired(UnixTime::from_secs(100)));
        assert!(Freshness::default().is_default() && !Freshness::default().is_expired(UnixTime::from_secs(u64::MAX)));
        assert_eq!(f.to_string(), "version 3, expires 1970-01-01T00:01:40Z");
    }
}
