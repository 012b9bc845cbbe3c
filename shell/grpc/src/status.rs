//! gRPC status codes and the [`Status`] carried in `grpc-status` / `grpc-message` trailers.
//!
//! Codes are the 17 of `grpc/doc/statuscodes.md`; [`Code::from_i32`] is a total mapping (anything unknown is
//! [`Code::Unknown`], as the gRPC spec asks of receivers). `grpc-message` is percent-encoded as in
//! `grpc/doc/PROTOCOL-HTTP2.md` ("Percent-Encoded"): every byte outside 0x20–0x7E, and `%` itself, becomes `%XX`
//! (upper-case hex). Decoding is lenient the way the spec requires: a `%` not followed by two hex digits is
//! kept literally, and the decoded bytes are read as UTF-8 with invalid sequences replaced, so an arbitrary
//! UTF-8 message survives the round trip exactly.

use std::fmt;

use bytes::Bytes;

use super::metadata::Metadata;

/// A gRPC status code (`grpc/doc/statuscodes.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// 0: not an error.
    Ok = 0,
    /// 1: the operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// 2: unknown error (also what unknown codes map to).
    Unknown = 2,
    /// 3: the client specified an invalid argument.
    InvalidArgument = 3,
    /// 4: the deadline expired before the operation could complete.
    DeadlineExceeded = 4,
    /// 5: some requested entity was not found.
    NotFound = 5,
    /// 6: the entity that a client attempted to create already exists.
    AlreadyExists = 6,
    /// 7: the caller does not have permission.
    PermissionDenied = 7,
    /// 8: some resource has been exhausted (for example the maximum message size).
    ResourceExhausted = 8,
    /// 9: the system is not in a state required for the operation.
    FailedPrecondition = 9,
    /// 10: the operation was aborted (concurrency conflict).
    Aborted = 10,
    /// 11: the operation was attempted past the valid range.
    OutOfRange = 11,
    /// 12: the operation is not implemented or supported (unknown method, unsupported encoding).
    Unimplemented = 12,
    /// 13: internal error: an invariant the protocol expects was broken (bad framing, undecodable message).
    Internal = 13,
    /// 14: the service is currently unavailable (transient; retry may help).
    Unavailable = 14,
    /// 15: unrecoverable data loss or corruption.
    DataLoss = 15,
    /// 16: the request does not have valid authentication credentials.
    Unauthenticated = 16,
}

impl Code {
    /// All 17 codes in numeric order.
    pub const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// Total mapping from the wire value: codes outside 0–16 are [`Code::Unknown`].
    pub fn from_i32(value: i32) -> Code {
        usize::try_from(value).ok().and_then(|i| Code::ALL.get(i).copied()).unwrap_or(Code::Unknown)
    }

    /// The wire value.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// Parses a `grpc-status` header value (ASCII decimal). Anything unparsable is [`Code::Unknown`].
    pub fn from_header(value: &[u8]) -> Code {
        std::str::from_utf8(value).ok().and_then(|s| s.parse::<i32>().ok()).map_or(Code::Unknown, Code::from_i32)
    }

    /// The canonical upper-case name (`DEADLINE_EXCEEDED`).
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code a client reports for a non-200 HTTP status without `grpc-status`
    /// (`grpc/doc/http-grpc-status-mapping.md`).
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502..=504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of a call that did not succeed: a code, a human-readable message, optional binary details
/// (`grpc-status-details-bin`, usually an encoded `google.rpc.Status`) and trailing metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The status code.
    pub code: Code,
    /// The message (sent percent-encoded in `grpc-message`).
    pub message: String,
    /// Binary details, sent as `grpc-status-details-bin` when not empty.
    pub details: Bytes,
    /// Trailing metadata sent with the status.
    pub metadata: Metadata,
}

macro_rules! constructors {
    ($($(#[$doc:meta])* $name:ident => $code:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(message: impl Into<String>) -> Status {
                Status::new(Code::$code, message)
            }
        )*
    };
}

impl Status {
    /// A status with `code` and `message`, no details or metadata.
    pub fn new(code: Code, message: impl Into<String>) -> Status {
        Status { code, message: message.into(), details: Bytes::new(), metadata: Metadata::new() }
    }

    constructors! {
        /// [`Code::Cancelled`].
        cancelled => Cancelled,
        /// [`Code::Unknown`].
        unknown => Unknown,
        /// [`Code::InvalidArgument`].
        invalid_argument => InvalidArgument,
        /// [`Code::DeadlineExceeded`].
        deadline_exceeded => DeadlineExceeded,
        /// [`Code::NotFound`].
        not_found => NotFound,
        /// [`Code::AlreadyExists`].
        already_exists => AlreadyExists,
        /// [`Code::PermissionDenied`].
        permission_denied => PermissionDenied,
        /// [`Code::ResourceExhausted`].
        resource_exhausted => ResourceExhausted,
        /// [`Code::FailedPrecondition`].
        failed_precondition => FailedPrecondition,
        /// [`Code::Aborted`].
        aborted => Aborted,
        /// [`Code::OutOfRange`].
        out_of_range => OutOfRange,
        /// [`Code::Unimplemented`].
        unimplemented => Unimplemented,
        /// [`Code::Internal`].
        internal => Internal,
        /// [`Code::Unavailable`].
        unavailable => Unavailable,
        /// [`Code::DataLoss`].
        data_loss => DataLoss,
        /// [`Code::Unauthenticated`].
        unauthenticated => Unauthenticated,
    }

    /// Attaches binary details (`grpc-status-details-bin`).
    pub fn with_details(mut self, details: impl Into<Bytes>) -> Status {
        self.details = details.into();
        self
    }

    /// Attaches trailing metadata.
    pub fn with_metadata(mut self, metadata: Metadata) -> Status {
        self.metadata = metadata;
        self
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.code.as_i32(), self.message)
    }
}

impl std::error::Error for Status {}

/// What `grpc-message` escapes: bytes outside 0x20–0x7E, and `%` (gRPC over HTTP/2, "Responses").
/// `percent-encoding` escapes every non-ASCII byte by itself.
const GRPC_MESSAGE_ESCAPES: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');

/// Percent-encodes a `grpc-message`: bytes outside 0x20–0x7E and `%` become `%XX`.
pub fn percent_encode(message: &str) -> String {
    percent_encoding::utf8_percent_encode(message, GRPC_MESSAGE_ESCAPES).to_string()
}

/// Decodes a percent-encoded `grpc-message`. Malformed escapes are kept literally; invalid UTF-8 after
/// decoding is replaced (U+FFFD), as the spec asks of receivers.
pub fn percent_decode(value: &[u8]) -> String {
    percent_encoding::percent_decode(value).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_i32_is_total() {
        for (i, code) in (0..).zip(Code::ALL) {
            assert_eq!(Code::from_i32(i), code);
            assert_eq!(code.as_i32(), i);
        }
        for v in [-1, 17, 100, i32::MAX, i32::MIN] {
            assert_eq!(Code::from_i32(v), Code::Unknown);
        }
        assert_eq!(Code::from_header(b"4"), Code::DeadlineExceeded);
        assert_eq!(Code::from_header(b"x"), Code::Unknown);
        assert_eq!(Code::from_header(b""), Code::Unknown);
    }

    #[test]
    fn http_mapping() {
        assert_eq!(Code::from_http_status(400), Code::Internal);
        assert_eq!(Code::from_http_status(401), Code::Unauthenticated);
        assert_eq!(Code::from_http_status(403), Code::PermissionDenied);
        assert_eq!(Code::from_http_status(404), Code::Unimplemented);
        for s in [429, 502, 503, 504] {
            assert_eq!(Code::from_http_status(s), Code::Unavailable);
        }
        assert_eq!(Code::from_http_status(415), Code::Unknown);
        assert_eq!(Code::from_http_status(500), Code::Unknown);
    }

    #[test]
    fn percent_encoding_round_trips() {
        for s in ["", "plain text", "100% done", "€ ünïcödé 日本語 🚀", "tab\tnew\nline\r", "%%%41", "\u{7f}\u{0}"]
        {
            let enc = percent_encode(s);
            assert!(enc.bytes().all(|b| (0x20..=0x7E).contains(&b)), "{enc}");
            assert_eq!(percent_decode(enc.as_bytes()), s);
        }
        assert_eq!(percent_encode("a%b\u{e9}"), "a%25b%C3%A9");
    }

    #[test]
    fn lenient_decoding() {
        assert_eq!(percent_decode(b"%"), "%");
        assert_eq!(percent_decode(b"%4"), "%4");
        assert_eq!(percent_decode(b"%zz%41"), "%zzA");
        assert_eq!(percent_decode(b"%FF"), "\u{fffd}");
        assert_eq!(percent_decode(b"%e2%82%ac"), "€");
    }
}
