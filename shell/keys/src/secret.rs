//! The master secret: its accepted encodings and how it is kept in memory.
//!
//! # Accepted formats
//!
//! A master secret is a key (≥ [`MIN_MASTER_SECRET_LENGTH`] bytes) and a salt (any length, may be empty). A
//! master-secret file ([`MasterSecret::from_file`], at most [`MAX_MASTER_SECRET_FILE_SIZE`] bytes) holds one of:
//!
//! 1. **A KMS URI** (the file's text, surrounding whitespace ignored, starts with `kms://`): the form below.
//! 2. **Constellation-style JSON** (the text starts with `{` and ends with `}`): `{"key": "<base64>", "salt":
//!    "<base64>"}`, as `constellation-mastersecret.json`; `salt` may be omitted (empty salt), other members are
//!    refused. A malformed JSON document is an error, never silently taken as raw bytes.
//! 3. **Raw bytes** (anything else): the whole file, byte for byte (a trailing newline is part of the key), is
//!    the key; the salt is empty.
//!
//! The **KMS URI** ([`MasterSecret::from_kms_uri`], the `kms_uri` of an init request, `docs/ARCHITECTURE.md`, "Protos") is
//! Constellation's form: `kms://cluster-kms?key=<base64>&salt=<base64>`. `salt` may be omitted (empty salt); no
//! other parameter, path or fragment is accepted, nor a parameter given twice. Values may be percent-encoded.
//!
//! Base64 everywhere may use the standard (`+/`) or the URL-safe (`-_`) alphabet, with or without `=` padding;
//! [`MasterSecret::to_kms_uri`] writes URL-safe with padding (as Constellation does) and
//! [`MasterSecret::to_json`] standard with padding (as Go's `encoding/json` does for `[]byte`).
//!
//! # In memory
//!
//! Key and salt live in [`Zeroizing`] buffers, as does every intermediate copy made while parsing (the file
//! contents, percent-decoded and normalised base64 text). `Debug` prints `<redacted>` and the lengths, and no
//! error message contains any part of the secret, not even the byte a base64 decoder stopped at.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD, URL_SAFE};
use zeroize::Zeroizing;

/// Shortest accepted master key, in bytes.
pub const MIN_MASTER_SECRET_LENGTH: usize = 16;
/// Largest accepted master-secret file, in bytes (a 4 KiB key in base64 JSON is ≈ 5.5 KiB).
pub const MAX_MASTER_SECRET_FILE_SIZE: u64 = 64 * 1024;
/// The scheme and host of a KMS URI.
pub const KMS_URI_PREFIX: &str = "kms://cluster-kms";

/// Why a master secret cannot be used. No variant carries any byte of the secret.
#[derive(Debug)]
pub enum MasterSecretError {
    /// The key is shorter than [`MIN_MASTER_SECRET_LENGTH`] bytes.
    TooShort {
        /// Its length in bytes.
        len: usize,
    },
    /// The file cannot be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_MASTER_SECRET_FILE_SIZE`].
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file looks like JSON but is not a valid master-secret document.
    Json {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// A field is not valid base64.
    Base64 {
        /// `"key"` or `"salt"`.
        field: &'static str,
    },
    /// The KMS URI is malformed.
    Uri {
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl fmt::Display for MasterSecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MasterSecretError::TooShort { len } => {
                write!(f, "master secret is {len} bytes long, at least {MIN_MASTER_SECRET_LENGTH} are required")
            }
            MasterSecretError::Io { path, source } => {
                write!(f, "cannot read master secret file {}: {source}", path.display())
            }
            MasterSecretError::FileTooLarge { path } => {
                write!(f, "master secret file {} is larger than {MAX_MASTER_SECRET_FILE_SIZE} bytes", path.display())
            }
            MasterSecretError::Json { line, column } => write!(
                f,
                "master secret file is not a valid JSON document {{\"key\": base64, \"salt\": base64}} \
                 (error at line {line}, column {column})"
            ),
            MasterSecretError::Base64 { field } => write!(f, "master secret {field} is not valid base64"),
            MasterSecretError::Uri { reason } => write!(f, "invalid KMS URI: {reason}"),
        }
    }
}

impl std::error::Error for MasterSecretError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MasterSecretError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The key service's master secret: key and salt, zeroized on drop, redacted in `Debug`.
pub struct MasterSecret {
    key: Zeroizing<Vec<u8>>,
    salt: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for MasterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterSecret")
            .field("key", &format_args!("<redacted>"))
            .field("key_len", &self.key.len())
            .field("salt", &format_args!("<redacted>"))
            .field("salt_len", &self.salt.len())
            .finish()
    }
}

/// Base64 decoding that accepts padding or not; the alphabet is normalised to the standard one first.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes standard or URL-safe base64, padded or not, keeping every copy in zeroized buffers.
fn decode_base64(text: &[u8], field: &'static str) -> Result<Zeroizing<Vec<u8>>, MasterSecretError> {
    let normalised: Zeroizing<Vec<u8>> = Zeroizing::new(
        text.iter()
            .map(|&b| match b {
                b'-' => b'+',
                b'_' => b'/',
                b => b,
            })
            .collect(),
    );
    let mut out = Zeroizing::new(Vec::with_capacity(normalised.len() / 4 * 3 + 3));
    LENIENT.decode_vec(&*normalised, &mut out).map_err(|_| MasterSecretError::Base64 { field })?;
    Ok(out)
}

/// Percent-decodes a URI query value into a zeroized buffer (decoding by `percent-encoding`). A `%` not
/// followed by two hex digits is an error here: a key that does not decode exactly is refused.
fn percent_decode(value: &str) -> Result<Zeroizing<Vec<u8>>, MasterSecretError> {
    let well_formed =
        value.split('%').skip(1).all(|s| s.as_bytes().get(..2).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)));
    if !well_formed {
        return Err(MasterSecretError::Uri { reason: "invalid percent-encoding" });
    }
    // The decoded value is never longer than the input: reserving that much keeps every byte of the secret
    // in this one zeroized allocation.
    let mut out = Zeroizing::new(Vec::with_capacity(value.len()));
    out.extend(percent_encoding::percent_decode_str(value));
    Ok(out)
}

/// The JSON document, borrowing from the (zeroized) file buffer so the base64 text is never copied.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSecret<'a> {
    #[serde(borrow)]
    key: &'a str,
    #[serde(borrow, default)]
    salt: Option<&'a str>,
}

impl MasterSecret {
    /// A master secret from its key and salt. The key must be at least [`MIN_MASTER_SECRET_LENGTH`] bytes.
    pub fn new(key: Zeroizing<Vec<u8>>, salt: Zeroizing<Vec<u8>>) -> Result<MasterSecret, MasterSecretError> {
        if key.len() < MIN_MASTER_SECRET_LENGTH {
            return Err(MasterSecretError::TooShort { len: key.len() });
        }
        Ok(MasterSecret { key, salt })
    }

    /// The key (the HKDF input keying material).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The salt (the HKDF salt; may be empty).
    pub fn salt(&self) -> &[u8] {
        &self.salt
    }

    /// Reads a master-secret file (KMS URI, JSON or raw bytes: see the [module docs](self)).
    pub fn from_file(path: &Path) -> Result<MasterSecret, MasterSecretError> {
        let io = |source| MasterSecretError::Io { path: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size > MAX_MASTER_SECRET_FILE_SIZE {
            return Err(MasterSecretError::FileTooLarge { path: path.to_owned() });
        }
        // Capacity for the whole file plus one byte, so the buffer is never reallocated (which would leave an
        // unzeroized copy behind) and growth past the limit is detected.
        let mut contents = Zeroizing::new(Vec::with_capacity(MAX_MASTER_SECRET_FILE_SIZE as usize + 1));
        file.take(MAX_MASTER_SECRET_FILE_SIZE + 1).read_to_end(&mut contents).map_err(io)?;
        if contents.len() as u64 > MAX_MASTER_SECRET_FILE_SIZE {
            return Err(MasterSecretError::FileTooLarge { path: path.to_owned() });
        }
        MasterSecret::from_file_contents(&contents)
    }

    /// Parses the contents of a master-secret file (KMS URI, JSON or raw bytes: see the [module docs](self)).
    pub fn from_file_contents(contents: &[u8]) -> Result<MasterSecret, MasterSecretError> {
        if let Ok(text) = std::str::from_utf8(contents) {
            let text = text.trim();
            if text.starts_with("kms://") {
                return MasterSecret::from_kms_uri(text);
            }
            if text.starts_with('{') && text.ends_with('}') {
                return MasterSecret::from_json(text);
            }
        }
        MasterSecret::new(Zeroizing::new(contents.to_vec()), Zeroizing::new(Vec::new()))
    }

    /// Parses the Constellation-style JSON document `{"key": base64, "salt": base64}`.
    pub fn from_json(text: &str) -> Result<MasterSecret, MasterSecretError> {
        // serde_json's messages may quote the offending value; only its position is reported.
        let doc: JsonSecret<'_> =
            serde_json::from_str(text).map_err(|e| MasterSecretError::Json { line: e.line(), column: e.column() })?;
        let key = decode_base64(doc.key.as_bytes(), "key")?;
        let salt = match doc.salt {
            Some(s) => decode_base64(s.as_bytes(), "salt")?,
            None => Zeroizing::new(Vec::new()),
        };
        MasterSecret::new(key, salt)
    }

    /// Parses a KMS URI `kms://cluster-kms?key=<base64>&salt=<base64>` (see the [module docs](self)).
    pub fn from_kms_uri(uri: &str) -> Result<MasterSecret, MasterSecretError> {
        let uri_err = |reason| MasterSecretError::Uri { reason };
        let rest = uri.strip_prefix(KMS_URI_PREFIX).ok_or(uri_err("expected kms://cluster-kms?key=…&salt=…"))?;
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let query = rest.strip_prefix('?').ok_or(uri_err("expected a query (?key=…) after kms://cluster-kms"))?;
        if query.contains('#') {
            return Err(uri_err("a fragment is not allowed"));
        }
        let mut key = None;
        let mut salt = None;
        for param in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = param.split_once('=').ok_or(uri_err("a query parameter has no value"))?;
            let slot = match name {
                "key" => &mut key,
                "salt" => &mut salt,
                _ => return Err(uri_err("unknown query parameter (only key and salt are allowed)")),
            };
            if slot.is_some() {
                return Err(uri_err("a query parameter is given twice"));
            }
            *slot = Some(percent_decode(value)?);
        }
        let key = decode_base64(&key.ok_or(uri_err("the key parameter is missing"))?, "key")?;
        let salt = match salt {
            Some(s) => decode_base64(&s, "salt")?,
            None => Zeroizing::new(Vec::new()),
        };
        MasterSecret::new(key, salt)
    }

    /// This secret as a KMS URI (URL-safe base64 with padding, as Constellation writes it).
    pub fn to_kms_uri(&self) -> Zeroizing<String> {
        let mut uri = Zeroizing::new(String::with_capacity(
            KMS_URI_PREFIX.len() + 11 + (self.key.len() + self.salt.len()) / 3 * 4 + 8,
        ));
        uri.push_str(KMS_URI_PREFIX);
        uri.push_str("?key=");
        URL_SAFE.encode_string(&*self.key, &mut uri);
        uri.push_str("&salt=");
        URL_SAFE.encode_string(&*self.salt, &mut uri);
        uri
    }

    /// This secret as the Constellation-style JSON document (standard base64 with padding).
    pub fn to_json(&self) -> Zeroizing<String> {
        let mut json = Zeroizing::new(String::with_capacity(20 + (self.key.len() + self.salt.len()) / 3 * 4 + 8));
        json.push_str("{\"key\":\"");
        STANDARD.encode_string(&*self.key, &mut json);
        json.push_str("\",\"salt\":\"");
        STANDARD.encode_string(&*self.salt, &mut json);
        json.push_str("\"}");
        json
    }
}
