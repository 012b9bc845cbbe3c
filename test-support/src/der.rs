//! A tiny DER writer (ITU-T X.690), just enough to build X.509 certificates and CRLs.
//!
//! Every function returns the complete encoding (tag, length and content) of one value, so
//! values compose by concatenation: `sequence(&[&integer_u64(1), &null()])`.
//!
//! The writer is deliberately permissive where tests need it: [`integer_raw`] writes an
//! INTEGER with exactly the given content bytes (for non-minimal encodings) and [`tlv`]
//! writes any tag.

/// Tag bytes: the engine's (the reader these encodings are fed to), plus the string types only a writer of
/// test names needs.
pub mod tag {
    pub use attest_engine::der::tag::*;
    /// UTF8String.
    pub const UTF8_STRING: u8 = 0x0C;
    /// PrintableString.
    pub const PRINTABLE_STRING: u8 = 0x13;
}

/// Appends a DER length (short form below 128, long form with the minimal number of bytes above).
pub fn write_length(len: usize, out: &mut Vec<u8>) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let be = len.to_be_bytes();
    let first = be.iter().position(|&b| b != 0).unwrap_or(be.len() - 1);
    let significant = &be[first..];
    out.push(0x80 | significant.len() as u8);
    out.extend_from_slice(significant);
}

/// Encodes one tag-length-value with a single-byte tag.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    write_length(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// SEQUENCE whose content is the concatenation of the already-encoded `parts`.
pub fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    tlv(tag::SEQUENCE, &parts.concat())
}

/// SET OF the already-encoded `parts`, sorted by their encodings as DER requires (X.690 §11.6).
pub fn set(parts: &[&[u8]]) -> Vec<u8> {
    let mut sorted = parts.to_vec();
    sorted.sort_unstable();
    tlv(tag::SET, &sorted.concat())
}

/// INTEGER holding the non-negative number given as unsigned big-endian bytes.
///
/// Redundant leading zero bytes are removed and a single `0x00` is prepended when the first
/// remaining byte has its high bit set, so the value stays positive. Empty input encodes zero.
pub fn integer_unsigned(be: &[u8]) -> Vec<u8> {
    let first = be.iter().position(|&b| b != 0);
    let content: Vec<u8> = match first {
        None => vec![0],
        Some(i) if be[i] & 0x80 != 0 => {
            let mut v = Vec::with_capacity(be.len() - i + 1);
            v.push(0);
            v.extend_from_slice(&be[i..]);
            v
        }
        Some(i) => be[i..].to_vec(),
    };
    tlv(tag::INTEGER, &content)
}

/// INTEGER holding `value` (minimal encoding).
pub fn integer_u64(value: u64) -> Vec<u8> {
    integer_unsigned(&value.to_be_bytes())
}

/// INTEGER with exactly `content` as its content octets, without any normalisation.
///
/// Use it to produce non-minimal (BER-only) or negative encodings on purpose, e.g.
/// `integer_raw(&[0x00, 0x05])` gives `02 02 00 05`.
pub fn integer_raw(content: &[u8]) -> Vec<u8> {
    tlv(tag::INTEGER, content)
}

/// BOOLEAN (`0xFF` for true, as DER requires).
pub fn boolean(value: bool) -> Vec<u8> {
    tlv(tag::BOOLEAN, &[if value { 0xFF } else { 0x00 }])
}

/// NULL.
pub fn null() -> Vec<u8> {
    tlv(tag::NULL, &[])
}

/// OBJECT IDENTIFIER from its arcs.
///
/// # Panics
/// If there are fewer than two arcs, the first arc is above 2, or the second arc is above 39
/// while the first is 0 or 1.
pub fn oid_from_arcs(arcs: &[u64]) -> Vec<u8> {
    assert!(arcs.len() >= 2, "an OID needs at least two arcs");
    assert!(arcs[0] <= 2, "the first OID arc must be 0, 1 or 2");
    assert!(arcs[0] == 2 || arcs[1] < 40, "the second OID arc must be below 40 under arcs 0 and 1");
    let mut content = Vec::new();
    push_base128(arcs[0] * 40 + arcs[1], &mut content);
    for &arc in &arcs[2..] {
        push_base128(arc, &mut content);
    }
    tlv(tag::OID, &content)
}

/// OBJECT IDENTIFIER from dotted-decimal text such as `"1.3.6.1.4.1.3704.1.2"`.
///
/// # Panics
/// If the text is not a valid dotted OID (see also [`oid_from_arcs`]).
pub fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted
        .split('.')
        .map(|arc| arc.parse().unwrap_or_else(|_| panic!("invalid OID arc {arc:?} in {dotted:?}")))
        .collect();
    oid_from_arcs(&arcs)
}

fn push_base128(mut value: u64, out: &mut Vec<u8>) {
    let mut groups = [0u8; 10];
    let mut n = 0;
    loop {
        groups[n] = (value & 0x7F) as u8;
        n += 1;
        value >>= 7;
        if value == 0 {
            break;
        }
    }
    for i in (0..n).rev() {
        out.push(if i == 0 { groups[i] } else { groups[i] | 0x80 });
    }
}

/// OCTET STRING.
pub fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(tag::OCTET_STRING, bytes)
}

/// BIT STRING with no unused bits (the usual wrapping of keys and signatures).
pub fn bit_string(bytes: &[u8]) -> Vec<u8> {
    bit_string_with_unused(0, bytes)
}

/// BIT STRING whose last byte has `unused_bits` (0..=7) unused low-order bits.
///
/// # Panics
/// If `unused_bits` is above 7, or non-zero while `bytes` is empty.
pub fn bit_string_with_unused(unused_bits: u8, bytes: &[u8]) -> Vec<u8> {
    assert!(unused_bits <= 7, "a BIT STRING has at most 7 unused bits");
    assert!(unused_bits == 0 || !bytes.is_empty(), "an empty BIT STRING has no unused bits");
    let mut content = Vec::with_capacity(bytes.len() + 1);
    content.push(unused_bits);
    content.extend_from_slice(bytes);
    tlv(tag::BIT_STRING, &content)
}

/// IA5String (the caller is responsible for passing ASCII).
pub fn ia5_string(text: &str) -> Vec<u8> {
    tlv(tag::IA5_STRING, text.as_bytes())
}

/// UTF8String.
pub fn utf8_string(text: &str) -> Vec<u8> {
    tlv(tag::UTF8_STRING, text.as_bytes())
}

/// PrintableString (the caller is responsible for the restricted character set).
pub fn printable_string(text: &str) -> Vec<u8> {
    tlv(tag::PRINTABLE_STRING, text.as_bytes())
}

/// Context-specific EXPLICIT tag `[number]` wrapping the already-encoded `inner` value.
///
/// # Panics
/// If `number` is above 30 (multi-byte tags are not supported).
pub fn explicit(number: u8, inner: &[u8]) -> Vec<u8> {
    assert!(number <= 30, "only low tag numbers are supported");
    tlv(0xA0 | number, inner)
}

/// Context-specific IMPLICIT tag `[number]` carrying `content` (the content octets of the
/// replaced type); `constructed` must match the replaced type (true for SEQUENCE/SET).
///
/// # Panics
/// If `number` is above 30 (multi-byte tags are not supported).
pub fn implicit(number: u8, constructed: bool, content: &[u8]) -> Vec<u8> {
    assert!(number <= 30, "only low tag numbers are supported");
    let tag = 0x80 | if constructed { 0x20 } else { 0 } | number;
    tlv(tag, content)
}

/// Calendar date and time (proleptic Gregorian, UTC) of a Unix timestamp.
///
/// Returns `(year, month 1..=12, day 1..=31, hour, minute, second)`.
pub fn civil_from_unix(unix_seconds: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = unix_seconds.div_euclid(86_400);
    let secs_of_day = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let hour = to_u32(secs_of_day / 3600);
    let minute = to_u32(secs_of_day % 3600 / 60);
    let second = to_u32(secs_of_day % 60);
    (year, month, day, hour, minute, second)
}

/// Unix timestamp of a calendar date and time (proleptic Gregorian, UTC).
///
/// # Panics
/// If `month` is not in 1..=12 or `day` is not in 1..=31.
pub fn unix_from_civil(year: i64, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> i64 {
    assert!((1..=12).contains(&month), "month out of range");
    assert!((1..=31).contains(&day), "day out of range");
    days_from_civil(year, month, day) * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
}

fn to_u32(value: i64) -> u32 {
    u32::try_from(value).expect("calendar field in range")
}

// Day counting in "eras" of 400 years (146 097 days), with years starting on 1 March so the
// leap day is the last day of the year.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let m = i64::from(month);
    let month_from_march = if m > 2 { m - 3 } else { m + 9 };
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = to_u32(day_of_year - (153 * month_from_march + 2) / 5 + 1);
    let month = to_u32(if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 });
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// UTCTime `YYMMDDHHMMSSZ`.
///
/// # Panics
/// If the year is outside 1950..=2049, the range UTCTime can represent.
pub fn utc_time(unix_seconds: i64) -> Vec<u8> {
    let (year, month, day, hour, minute, second) = civil_from_unix(unix_seconds);
    assert!((1950..=2049).contains(&year), "UTCTime only covers 1950..=2049, got {year}");
    let text = format!("{:02}{month:02}{day:02}{hour:02}{minute:02}{second:02}Z", year % 100);
    tlv(tag::UTC_TIME, text.as_bytes())
}

/// GeneralizedTime `YYYYMMDDHHMMSSZ`.
///
/// # Panics
/// If the year is outside 0..=9999.
pub fn generalized_time(unix_seconds: i64) -> Vec<u8> {
    let (year, month, day, hour, minute, second) = civil_from_unix(unix_seconds);
    assert!((0..=9999).contains(&year), "GeneralizedTime needs a four-digit year, got {year}");
    let text = format!("{year:04}{month:02}{day:02}{hour:02}{minute:02}{second:02}Z");
    tlv(tag::GENERALIZED_TIME, text.as_bytes())
}

/// X.509 `Time` as RFC 5280 §4.1.2.5 prescribes: UTCTime for 1950..=2049, GeneralizedTime
/// otherwise.
pub fn time(unix_seconds: i64) -> Vec<u8> {
    let (year, ..) = civil_from_unix(unix_seconds);
    if (1950..=2049).contains(&year) { utc_time(unix_seconds) } else { generalized_time(unix_seconds) }
}
