//! Trusted time as seconds since the Unix epoch, and X.509 time decoding (RFC 5280 §4.1.2.5).
//!
//! The engine never reads a clock: every verification takes the time as an argument (a "trusted time"), as
//! webpki does. That keeps verification reproducible and lets callers check evidence "as of" a moment.

use core::fmt;

/// A point in time: whole seconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(u64);

impl UnixTime {
    /// The time `secs` seconds after the Unix epoch.
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs)
    }

    /// Seconds since the Unix epoch.
    pub const fn as_secs(self) -> u64 {
        self.0
    }

    /// Builds a time from a UTC calendar date (proleptic Gregorian). Returns `None` for impossible dates or
    /// dates before 1970.
    pub fn from_civil(year: u32, month: u32, day: u32, hour: u32, min: u32, sec: u32) -> Option<Self> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) || hour > 23 || min > 59 {
            return None;
        }
        // RFC 5280 forbids leap seconds' 60 only implicitly; accept 0..=59.
        if sec > 59 || year < 1970 {
            return None;
        }
        let days = days_from_civil(i64::from(year), month, day);
        let secs = days * 86_400 + i64::from(hour) * 3600 + i64::from(min) * 60 + i64::from(sec);
        u64::try_from(secs).ok().map(Self)
    }

    /// Parses an RFC 3339 / ISO 8601 UTC time (`2024-05-01T12:00:00Z`), a date (`2024-05-01`), or a bare
    /// number of Unix seconds.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            return t.parse().ok().map(Self);
        }
        let b = t.as_bytes();
        let num = |r: core::ops::Range<usize>| -> Option<u32> {
            let s = b.get(r)?;
            if s.iter().all(u8::is_ascii_digit) { core::str::from_utf8(s).ok()?.parse().ok() } else { None }
        };
        if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        if b.len() == 10 {
            return Self::from_civil(y, mo, d, 0, 0, 0);
        }
        if b.len() != 20 || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
            return None;
        }
        if !matches!(b[19], b'Z' | b'z') {
            return None;
        }
        Self::from_civil(y, mo, d, num(11..13)?, num(14..16)?, num(17..19)?)
    }

    /// Decodes an X.509 `UTCTime` (`YYMMDDHHMMSSZ`, years 1950–2049) value.
    pub(crate) fn from_utc_time(v: &[u8]) -> Option<Self> {
        if v.len() != 13 || v[12] != b'Z' {
            return None;
        }
        let yy = two_digits(&v[0..2])?;
        let year = if yy >= 50 { 1900 + yy } else { 2000 + yy };
        Self::from_parts(year, &v[2..12])
    }

    /// Decodes an X.509 `GeneralizedTime` (`YYYYMMDDHHMMSSZ`, no fractions) value.
    pub(crate) fn from_generalized_time(v: &[u8]) -> Option<Self> {
        if v.len() != 15 || v[14] != b'Z' {
            return None;
        }
        let year = two_digits(&v[0..2])? * 100 + two_digits(&v[2..4])?;
        Self::from_parts(year, &v[4..14])
    }

    fn from_parts(year: u32, rest: &[u8]) -> Option<Self> {
        Self::from_civil(
            year,
            two_digits(&rest[0..2])?,
            two_digits(&rest[2..4])?,
            two_digits(&rest[4..6])?,
            two_digits(&rest[6..8])?,
            two_digits(&rest[8..10])?,
        )
    }

    /// The UTC calendar date of this time: (year, month, day, hour, minute, second).
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)] // u64 seconds / 86400 fits i64; rem < 86400
    pub fn to_civil(self) -> (i64, u32, u32, u32, u32, u32) {
        let secs = self.0 as i64;
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u32;
        let (y, m, d) = civil_from_days(days);
        (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
    }
}

impl fmt::Display for UnixTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day, hour, min, sec) = self.to_civil();
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{min:02}:{sec:02}Z")
    }
}

fn two_digits(v: &[u8]) -> Option<u32> {
    match v {
        [a @ b'0'..=b'9', b @ b'0'..=b'9'] => Some(u32::from(a - b'0') * 10 + u32::from(b - b'0')),
        _ => None,
    }
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's `days_from_civil` algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
#[allow(clippy::cast_sign_loss)] // day in 1..=31 and month in 1..=12 by construction
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_times() {
        assert_eq!(UnixTime::from_civil(1970, 1, 1, 0, 0, 0).unwrap().as_secs(), 0);
        assert_eq!(UnixTime::from_civil(2000, 3, 1, 0, 0, 0).unwrap().as_secs(), 951_868_800);
        assert_eq!(UnixTime::from_utc_time(b"250101000000Z").unwrap().as_secs(), 1_735_689_600);
        assert_eq!(UnixTime::from_generalized_time(b"20500101000000Z").unwrap().to_string(), "2050-01-01T00:00:00Z");
        assert!(UnixTime::from_utc_time(b"500101000000Z").is_none(), "1950 predates the epoch");
        assert!(UnixTime::from_utc_time(b"250230000000Z").is_none());
        assert!(UnixTime::from_utc_time(b"2501010000Z").is_none());
        assert_eq!(UnixTime::parse("2024-12-10T00:00:00Z"), UnixTime::from_civil(2024, 12, 10, 0, 0, 0));
        assert_eq!(UnixTime::parse("2024-12-10"), UnixTime::from_civil(2024, 12, 10, 0, 0, 0));
        assert_eq!(UnixTime::parse("86400"), Some(UnixTime::from_secs(86_400)));
        assert!(UnixTime::parse("2024-13-10").is_none());
    }

    #[test]
    fn roundtrip_days() {
        for days in (-1000..200_000).step_by(37) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
