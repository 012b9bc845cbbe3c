//! # attest-tsm
//!
//! The configfs-tsm output reader: what a report entry's attributes hold after one request, judged before
//! anything above uses it. Pure (bytes in, a checked view or a typed error out): the attester's configfs-tsm
//! transport (`attest_attester::issuer::tsm`, which re-exports this crate as `tsm::output`) does the file
//! I/O, and the fuzz target `tsm_output` calls this crate directly.
//!
//! **May depend on:** `attest-engine` (the TD quote and SNP report parsers). **Must not depend on:** I/O
//! crates, the TSS library or any service; it reads no file itself ([`TsmError::Io`] and
//! [`TsmError::NotReady`] are raised by the transport above).
//!
//! Linux, `Documentation/ABI/testing/configfs-tsm-report`:
//!
//! ```text
//! generation  (RO) decimal u32, incremented by every write to inblob or an option (privlevel, …)
//! provider    (RO) the backend: "tdx_guest" (Intel TDX) or "sev_guest" (AMD SEV-SNP)
//! inblob      (WO) up to 64 bytes of report data
//! outblob     (RO) TDX: the TD quote; SEV-SNP: the attestation report (0x4A0 bytes)
//! auxblob     (RO) SEV-SNP: the host's certificate table (GHCB layout), empty without one
//! ```
//!
//! A writer checks for a concurrent writer the way the kernel documents it: read `generation` before its
//! writes and after reading `outblob`; the difference must be exactly the number of its own writes, or
//! another writer changed the entry in between and the blob may answer that writer's request.
//! [`check_output`] then requires the blob to be what the provider produces, for *this* request: a TD quote
//! or SNP report that parses, whose report data is the inblob written, with nothing after it but zero
//! padding; every size under a named limit.

#![forbid(unsafe_code)]

use attest_engine::snp::{REPORT_SIZE, Report};
use attest_engine::tdx::{TdQuote, Trailing};
use core::fmt;

/// Largest `outblob` read (the engine's largest TD quote input; the kernel's own buffer is smaller).
pub const MAX_OUTBLOB_SIZE: usize = attest_engine::tdx::quote::MAX_QUOTE_INPUT_SIZE;
/// Largest `auxblob` read (a certificate table: VCEK/VLEK, ASK, ARK and a few more).
pub const MAX_AUXBLOB_SIZE: usize = 64 * 1024;
/// Largest `provider` or `generation` attribute read.
pub const MAX_ATTRIBUTE_TEXT: usize = 64;
/// The report data written to `inblob` (the kernel accepts up to 64 bytes; both providers use 64).
pub const INBLOB_SIZE: usize = 64;

/// The backend of a report entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// Intel TDX (`tdx_guest`): `outblob` is a TD quote.
    TdxGuest,
    /// AMD SEV-SNP (`sev_guest`): `outblob` is an attestation report, `auxblob` the certificate table.
    SevGuest,
}

impl Provider {
    /// The name in the `provider` attribute.
    pub fn name(self) -> &'static str {
        match self {
            Self::TdxGuest => "tdx_guest",
            Self::SevGuest => "sev_guest",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a configfs-tsm request failed or its output was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum TsmError {
    /// Reading or writing an attribute failed.
    Io {
        /// What was being done.
        op: &'static str,
        /// The attribute's path.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// An attribute's text is not what the ABI says (`generation` not a decimal u32, `provider` not a name).
    Malformed {
        /// The attribute.
        attribute: &'static str,
    },
    /// The entry belongs to another backend than the caller drives.
    WrongProvider {
        /// The backend wanted.
        want: Provider,
        /// The `provider` attribute as read (at most [`MAX_ATTRIBUTE_TEXT`] bytes).
        found: String,
    },
    /// `generation` moved by other than this writer's writes: another writer used the entry concurrently.
    Conflict {
        /// Before this writer's writes.
        before: u32,
        /// After reading the blob.
        after: u32,
        /// This writer's writes.
        writes: u32,
    },
    /// A blob exceeds its limit.
    Oversized {
        /// `outblob` or `auxblob`.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// `outblob` is empty: the provider produced nothing.
    Empty,
    /// The blob is not a TD quote / SNP report the engine can parse.
    Evidence(attest_engine::Error),
    /// The blob answers another request: its report data is not the inblob written.
    ReportDataMismatch,
    /// Bytes other than zero padding follow the quote in `outblob`.
    TrailingBytes {
        /// How many.
        len: usize,
    },
    /// The entry did not appear in time after `mkdir` (a populator slower than the kernel).
    NotReady {
        /// The entry.
        path: String,
    },
}

impl fmt::Display for TsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { op, path, source } => write!(f, "configfs-tsm: {op} {path}: {source}"),
            Self::Malformed { attribute } => write!(f, "configfs-tsm: malformed {attribute} attribute"),
            Self::WrongProvider { want, found } => {
                write!(f, "configfs-tsm: the report entry's provider is {found:?}, not {want}")
            }
            Self::Conflict { before, after, writes } => write!(
                f,
                "configfs-tsm: generation went from {before} to {after} across {writes} write(s): another writer \
                 used the report entry concurrently"
            ),
            Self::Oversized { what, limit } => write!(f, "configfs-tsm: {what} exceeds {limit} bytes"),
            Self::Empty => f.write_str("configfs-tsm: outblob is empty"),
            Self::Evidence(e) => write!(f, "configfs-tsm: outblob: {e}"),
            Self::ReportDataMismatch => f.write_str("configfs-tsm: outblob does not carry the report data written"),
            Self::TrailingBytes { len } => write!(f, "configfs-tsm: {len} non-zero bytes follow the quote"),
            Self::NotReady { path } => write!(f, "configfs-tsm: {path} was not populated in time"),
        }
    }
}

impl std::error::Error for TsmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Evidence(e) => Some(e),
            _ => None,
        }
    }
}

/// The text of a small attribute: ASCII, one optional trailing newline.
fn attribute_text<'a>(attribute: &'static str, bytes: &'a [u8]) -> Result<&'a str, TsmError> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() || bytes.len() > MAX_ATTRIBUTE_TEXT || !bytes.is_ascii() {
        return Err(TsmError::Malformed { attribute });
    }
    core::str::from_utf8(bytes).map_err(|_| TsmError::Malformed { attribute })
}

/// `generation`: a decimal u32.
pub fn parse_generation(bytes: &[u8]) -> Result<u32, TsmError> {
    let text = attribute_text("generation", bytes)?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TsmError::Malformed { attribute: "generation" });
    }
    text.parse().map_err(|_| TsmError::Malformed { attribute: "generation" })
}

/// `provider`, required to be `want`.
pub fn parse_provider(bytes: &[u8], want: Provider) -> Result<Provider, TsmError> {
    let text = attribute_text("provider", bytes)?;
    if !text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Err(TsmError::Malformed { attribute: "provider" });
    }
    if text == want.name() { Ok(want) } else { Err(TsmError::WrongProvider { want, found: text.to_owned() }) }
}

/// The checked output of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsmOutput<'a> {
    /// The backend.
    pub provider: Provider,
    /// The evidence without padding: the TD quote (its exact length) or the SNP report.
    pub evidence: &'a [u8],
    /// The certificate table (SEV-SNP; empty when the host supplies none, and always for TDX).
    pub auxblob: &'a [u8],
}

/// The raw attributes of one request, as read.
#[derive(Clone, Copy, Debug)]
pub struct RawOutput<'a> {
    /// `generation` before the writes.
    pub generation_before: &'a [u8],
    /// `generation` after reading the blobs.
    pub generation_after: &'a [u8],
    /// How many attributes this writer wrote (inblob and options).
    pub writes: u32,
    /// `outblob`.
    pub outblob: &'a [u8],
    /// `auxblob` (empty when absent).
    pub auxblob: &'a [u8],
}

/// Checks one request's output against the `inblob` written (module docs).
pub fn check_output<'a>(
    provider: Provider,
    inblob: &[u8; INBLOB_SIZE],
    raw: &RawOutput<'a>,
) -> Result<TsmOutput<'a>, TsmError> {
    let before = parse_generation(raw.generation_before)?;
    let after = parse_generation(raw.generation_after)?;
    if after != before.wrapping_add(raw.writes) {
        return Err(TsmError::Conflict { before, after, writes: raw.writes });
    }
    if raw.outblob.len() > MAX_OUTBLOB_SIZE {
        return Err(TsmError::Oversized { what: "outblob", limit: MAX_OUTBLOB_SIZE });
    }
    if raw.auxblob.len() > MAX_AUXBLOB_SIZE {
        return Err(TsmError::Oversized { what: "auxblob", limit: MAX_AUXBLOB_SIZE });
    }
    if raw.outblob.is_empty() {
        return Err(TsmError::Empty);
    }
    let evidence = match provider {
        Provider::TdxGuest => {
            let quote = TdQuote::parse_prefix(raw.outblob).map_err(TsmError::Evidence)?;
            match quote.trailing() {
                Trailing::None | Trailing::ZeroPadding(_) => {}
                Trailing::Other(len) => return Err(TsmError::TrailingBytes { len }),
            }
            if quote.body().report_data() != inblob {
                return Err(TsmError::ReportDataMismatch);
            }
            quote.as_bytes()
        }
        Provider::SevGuest => {
            if raw.outblob.len() != REPORT_SIZE {
                return Err(TsmError::Evidence(attest_engine::Error::Truncated {
                    structure: "SEV-SNP report (configfs-tsm outblob)",
                    needed: REPORT_SIZE,
                    found: raw.outblob.len(),
                }));
            }
            let report = Report::parse(raw.outblob).map_err(TsmError::Evidence)?;
            if report.report_data() != inblob {
                return Err(TsmError::ReportDataMismatch);
            }
            raw.outblob
        }
    };
    let auxblob = if provider == Provider::TdxGuest { &[][..] } else { raw.auxblob };
    Ok(TsmOutput { provider, evidence, auxblob })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes() {
        assert_eq!(parse_generation(b"0\n").unwrap(), 0);
        assert_eq!(parse_generation(b"4294967295").unwrap(), u32::MAX);
        for bad in [&b""[..], b"\n", b"-1", b"1 ", b"4294967296", b"0x10", b"1\n\n", &[b'1'; 65]] {
            assert!(matches!(parse_generation(bad), Err(TsmError::Malformed { .. })), "{bad:?}");
        }
        assert_eq!(parse_provider(b"tdx_guest\n", Provider::TdxGuest).unwrap(), Provider::TdxGuest);
        assert!(matches!(
            parse_provider(b"sev_guest\n", Provider::TdxGuest),
            Err(TsmError::WrongProvider { want: Provider::TdxGuest, .. })
        ));
        assert!(matches!(parse_provider(b"TDX", Provider::TdxGuest), Err(TsmError::Malformed { .. })));
    }

    #[test]
    fn generation_must_move_by_the_writes_alone() {
        let raw = |before: &'static [u8], after: &'static [u8]| RawOutput {
            generation_before: before,
            generation_after: after,
            writes: 1,
            outblob: b"x",
            auxblob: b"",
        };
        for (before, after) in [(&b"5"[..], &b"5"[..]), (b"5", b"7"), (b"5", b"4")] {
            assert!(
                matches!(
                    check_output(Provider::TdxGuest, &[0; 64], &raw(before, after)),
                    Err(TsmError::Conflict { .. })
                ),
                "{before:?} → {after:?}"
            );
        }
        // Wrapping at u32::MAX is one write, not a conflict; the blob then fails to parse.
        let e = check_output(Provider::TdxGuest, &[0; 64], &raw(b"4294967295", b"0")).unwrap_err();
        assert!(matches!(e, TsmError::Evidence(_)), "{e}");
    }

    proptest::proptest! {
        /// Arbitrary attribute contents never panic; accepted output is consistent (module docs).
        #[test]
        fn never_panics_and_accepts_only_consistent_output(
            before in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            after in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            writes in 0u32..4,
            outblob in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            snp in proptest::prelude::any::<bool>(),
        ) {
            let provider = if snp { Provider::SevGuest } else { Provider::TdxGuest };
            let raw = RawOutput { generation_before: &before, generation_after: &after, writes, outblob: &outblob, auxblob: b"" };
            if let Ok(out) = check_output(provider, &[0; 64], &raw) {
                proptest::prop_assert_eq!(parse_generation(&after).unwrap(), parse_generation(&before).unwrap().wrapping_add(writes));
                proptest::prop_assert!(outblob.starts_with(out.evidence));
            }
            if let (Ok(x), Ok(y)) = (parse_generation(&before), parse_generation(&after))
                && y != x.wrapping_add(writes)
            {
                let conflict = matches!(check_output(provider, &[0; 64], &raw), Err(TsmError::Conflict { .. }));
                proptest::prop_assert!(conflict, "a moved generation is a conflict");
            }
        }
    }

    #[test]
    fn sizes_are_bounded() {
        let big = vec![0u8; MAX_OUTBLOB_SIZE + 1];
        let raw = RawOutput { generation_before: b"1", generation_after: b"2", writes: 1, outblob: &big, auxblob: b"" };
        assert!(matches!(check_output(Provider::TdxGuest, &[0; 64], &raw), Err(TsmError::Oversized { .. })));
        let raw = RawOutput { outblob: b"", ..raw };
        assert!(matches!(check_output(Provider::TdxGuest, &[0; 64], &raw), Err(TsmError::Empty)));
        let raw = RawOutput { outblob: &big[..100], ..raw };
        assert!(matches!(check_output(Provider::SevGuest, &[0; 64], &raw), Err(TsmError::Evidence(_))));
    }
}
