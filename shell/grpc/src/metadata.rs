//! Custom metadata (HTTP/2 headers and trailers that are not part of the gRPC protocol itself) and the
//! `grpc-timeout` header.
//!
//! Keys are lower-case ASCII; keys ending in `-bin` carry binary values, sent as standard base64. As
//! `grpc/doc/PROTOCOL-HTTP2.md` requires, we emit base64 without padding and accept it with or without.
//! Reserved keys (`grpc-*` other than what the application may set, `content-type`, `te`, pseudo-headers)
//! never appear in a [`Metadata`] received from a peer, and inserting one is refused.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};

/// Standard base64 alphabet, no padding on output, padding optional on input.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_encode_padding(false).with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a metadata entry could not be inserted or read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataError {
    /// The key is not a valid lower-case header name.
    InvalidKey,
    /// The key is reserved for the gRPC protocol or HTTP/2 (`grpc-status`, `content-type`, `te`, …).
    ReservedKey,
    /// An ASCII value contains bytes outside visible ASCII and space, or a binary key lacks the `-bin` suffix
    /// (or an ASCII key has it).
    InvalidValue,
    /// A `-bin` value is not valid base64.
    InvalidBase64,
}

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MetadataError::InvalidKey => "invalid metadata key",
            MetadataError::ReservedKey => "reserved metadata key",
            MetadataError::InvalidValue => "invalid metadata value",
            MetadataError::InvalidBase64 => "invalid base64 in -bin metadata",
        })
    }
}

impl std::error::Error for MetadataError {}

/// Headers owned by the protocol: never application metadata.
fn is_reserved(key: &str) -> bool {
    matches!(
        key,
        "content-type"
            | "te"
            | "content-length"
            | "connection"
            | "transfer-encoding"
            | "grpc-status"
            | "grpc-message"
            | "grpc-status-details-bin"
            | "grpc-timeout"
            | "grpc-encoding"
            | "grpc-accept-encoding"
    ) || key.starts_with(':')
}

/// Application metadata of a request, response or status: a multimap of lower-case keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    headers: HeaderMap,
}

impl Metadata {
    /// Empty metadata.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// Takes the application metadata out of received headers, dropping the reserved ones.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Metadata {
        let mut out = HeaderMap::new();
        for (k, v) in headers {
            if !is_reserved(k.as_str()) {
                out.append(k.clone(), v.clone());
            }
        }
        Metadata { headers: out }
    }

    /// Appends the entries to `headers`.
    pub(crate) fn write_to(&self, headers: &mut HeaderMap) {
        for (k, v) in &self.headers {
            headers.append(k.clone(), v.clone());
        }
    }

    fn key(key: &str, binary: bool) -> Result<HeaderName, MetadataError> {
        if key.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(MetadataError::InvalidKey);
        }
        let name = HeaderName::from_bytes(key.as_bytes()).map_err(|_| MetadataError::InvalidKey)?;
        if is_reserved(name.as_str()) {
            return Err(MetadataError::ReservedKey);
        }
        if name.as_str().ends_with("-bin") != binary {
            return Err(MetadataError::InvalidValue);
        }
        Ok(name)
    }

    /// Appends an ASCII entry (`key` must not end in `-bin`; value bytes 0x20–0x7E).
    pub fn append(&mut self, key: &str, value: &str) -> Result<(), MetadataError> {
        let name = Metadata::key(key, false)?;
        if !value.bytes().all(|b| (0x20..=0x7E).contains(&b)) {
            return Err(MetadataError::InvalidValue);
        }
        let value = HeaderValue::from_str(value).map_err(|_| MetadataError::InvalidValue)?;
        self.headers.append(name, value);
        Ok(())
    }

    /// Appends a binary entry (`key` must end in `-bin`); the value is sent as base64.
    pub fn append_bin(&mut self, key: &str, value: &[u8]) -> Result<(), MetadataError> {
        let name = Metadata::key(key, true)?;
        let value = HeaderValue::from_str(&BASE64.encode(value)).map_err(|_| MetadataError::InvalidValue)?;
        self.headers.append(name, value);
        Ok(())
    }

    /// The first ASCII value of `key`, if present and valid.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.headers.get(key).and_then(|v| v.to_str().ok())
    }

    /// All ASCII values of `key`, in order.
    pub fn get_all(&self, key: &str) -> Vec<&str> {
        self.headers.get_all(key).iter().filter_map(|v| v.to_str().ok()).collect()
    }

    /// The first binary value of `key` (a `-bin` key), base64-decoded.
    pub fn get_bin(&self, key: &str) -> Option<Result<Vec<u8>, MetadataError>> {
        self.headers.get(key).map(|v| decode_bin(v.as_bytes()))
    }

    /// All binary values of `key`, decoded. A received `-bin` header may also hold several comma-separated
    /// base64 values (HTTP list folding); each is decoded separately.
    pub fn get_all_bin(&self, key: &str) -> Result<Vec<Vec<u8>>, MetadataError> {
        let mut out = Vec::new();
        for v in &self.headers.get_all(key) {
            for part in v.as_bytes().split(|&b| b == b',') {
                out.push(decode_bin(part.trim_ascii())?);
            }
        }
        Ok(out)
    }

    /// Iterates over `(key, raw value)` pairs (binary values still base64-encoded).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
}

/// Decodes a `-bin` value: standard base64, padding optional.
pub(crate) fn decode_bin(value: &[u8]) -> Result<Vec<u8>, MetadataError> {
    BASE64.decode(value).map_err(|_| MetadataError::InvalidBase64)
}

/// Encodes a `-bin` value: standard base64 without padding.
pub(crate) fn encode_bin(value: &[u8]) -> String {
    BASE64.encode(value)
}

/// The most digits `grpc-timeout` may carry (`TimeoutValue → {positive integer as ASCII string of at most 8
/// digits}`, PROTOCOL-HTTP2.md).
pub const TIMEOUT_MAX_DIGITS: usize = 8;

/// Parses a `grpc-timeout` value: 1–8 ASCII digits followed by one unit of `H` (hours), `M` (minutes),
/// `S` (seconds), `m` (milliseconds), `u` (microseconds) or `n` (nanoseconds). Returns `None` if malformed.
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > TIMEOUT_MAX_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Encodes a timeout for `grpc-timeout` in the finest unit whose value fits in 8 digits, rounding up so that
/// the server never sees a shorter deadline than the client keeps.
pub fn encode_timeout(timeout: Duration) -> String {
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = timeout.as_nanos();
    for (per, unit) in UNITS {
        let v = nanos.div_ceil(per);
        if v < 100_000_000 {
            return format!("{v}{unit}");
        }
    }
    "99999999H".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout(b"1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout(b"2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_timeout(b"3S"), Some(Duration::from_secs(3)));
        assert_eq!(parse_timeout(b"40m"), Some(Duration::from_millis(40)));
        assert_eq!(parse_timeout(b"5u"), Some(Duration::from_micros(5)));
        assert_eq!(parse_timeout(b"99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(parse_timeout(b"99999999H"), Some(Duration::from_secs(99_999_999 * 3600)));
        assert_eq!(parse_timeout(b"0m"), Some(Duration::ZERO));
        for bad in [&b""[..], b"m", b"123456789m", b"10", b"10s", b"1.5S", b"-1S", b" 1S", b"1 S", b"10x"] {
            assert_eq!(parse_timeout(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(250),
            Duration::from_secs(1),
            Duration::from_secs(86_400 * 400),
            Duration::from_nanos(123_456_789_012),
        ] {
            let s = encode_timeout(d);
            let back = parse_timeout(s.as_bytes()).unwrap();
            assert!(back >= d, "{d:?} -> {s} -> {back:?}");
            assert!(s.len() <= 9);
        }
        assert_eq!(encode_timeout(Duration::from_millis(250)), "250000u");
    }

    #[test]
    fn metadata_entries() {
        let mut m = Metadata::new();
        m.append("x-user", "alice").unwrap();
        m.append_bin("x-key-bin", &[0, 1, 2, 255]).unwrap();
        assert_eq!(m.get("x-user"), Some("alice"));
        assert_eq!(m.get_bin("x-key-bin").unwrap().unwrap(), vec![0, 1, 2, 255]);
        assert_eq!(m.iter().find(|(k, _)| *k == "x-key-bin").unwrap().1, b"AAEC/w");
        assert_eq!(m.append("grpc-status", "0"), Err(MetadataError::ReservedKey));
        assert_eq!(m.append("X-Upper", "v"), Err(MetadataError::InvalidKey));
        assert_eq!(m.append("x-a-bin", "v"), Err(MetadataError::InvalidValue));
        assert_eq!(m.append_bin("x-a", b"v"), Err(MetadataError::InvalidValue));
        assert_eq!(m.append("x-a", "caf\u{e9}"), Err(MetadataError::InvalidValue));
        assert_eq!(decode_bin(b"AAEC/w==").unwrap(), vec![0, 1, 2, 255]);
        assert_eq!(decode_bin(b"AAEC/w").unwrap(), vec![0, 1, 2, 255]);
        assert_eq!(decode_bin(b"!!"), Err(MetadataError::InvalidBase64));
        let mut h = HeaderMap::new();
        h.insert("x-k-bin", HeaderValue::from_static("AQ==, Ag"));
        h.insert("grpc-timeout", HeaderValue::from_static("1S"));
        let m = Metadata::from_headers(&h);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get_all_bin("x-k-bin").unwrap(), vec![vec![1], vec![2]]);
    }
}
