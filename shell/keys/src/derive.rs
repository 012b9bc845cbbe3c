//! The key derivations of `docs/ARCHITECTURE.md`, "Keys": HKDF-SHA256 (RFC 5869) and the named keys built on it.
//!
//! # Why aws-lc-rs and not the `hkdf` + `sha2` crates
//!
//! aws-lc-rs is already in the dependency graph (the engine's crypto backend), so using its HKDF adds no crate
//! to the node image, and it is a FIPS-validated implementation. Its copy of the input keying material is
//! zeroized on drop (`ZeroizeBoxSlice`). The one inconvenience, that the output length must be given as a
//! [`aws_lc_rs::hkdf::KeyType`], is a five-line newtype (`OkmLen`). `hkdf` + `sha2` would have meant two new
//! crates (and `hmac`, `digest`) for the same function.

use aws_lc_rs::hkdf;
use zeroize::Zeroizing;

use super::secret::MasterSecret;

/// The info prefix of every data key: info = `"key-"` + data key id.
pub const DATA_KEY_INFO_PREFIX: &str = "key-";
/// Largest data key the service derives, in bytes (HKDF-SHA256 itself stops at 255 × 32 = 8160).
pub const MAX_DATA_KEY_LENGTH: usize = 4096;
/// Longest data key id accepted, in bytes (a disk UUID is 36; the longest fixed id is 17).
pub const MAX_DATA_KEY_ID_LENGTH: usize = 256;
/// The data key id of the measurement secret.
pub const MEASUREMENT_SECRET_KEY_ID: &str = "measurementSecret";
/// Length of the measurement secret, in bytes.
pub const MEASUREMENT_SECRET_LENGTH: usize = 32;
/// Length of a state-disk key, in bytes.
pub const STATE_DISK_KEY_LENGTH: usize = 32;
/// The HKDF info of the cluster id (the measurement secret is the IKM, the measurement salt the salt).
pub const CLUSTER_ID_INFO: &str = "key-clusterID";
/// Length of the cluster id, in bytes.
pub const CLUSTER_ID_LENGTH: usize = 32;

/// Why a data key request is refused. Every variant is the caller's fault (`INVALID_ARGUMENT` on the wire);
/// none carries key material.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyRequestError {
    /// The data key id is empty.
    EmptyId,
    /// The data key id is longer than [`MAX_DATA_KEY_ID_LENGTH`] bytes.
    IdTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A key of length 0 was requested.
    ZeroLength,
    /// A key longer than [`MAX_DATA_KEY_LENGTH`] bytes was requested.
    LengthTooLarge {
        /// The requested length.
        len: u64,
    },
}

impl std::fmt::Display for KeyRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyRequestError::EmptyId => f.write_str("data_key_id is empty"),
            KeyRequestError::IdTooLong { len } => {
                write!(f, "data_key_id is {len} bytes long, the limit is {MAX_DATA_KEY_ID_LENGTH}")
            }
            KeyRequestError::ZeroLength => f.write_str("length is 0"),
            KeyRequestError::LengthTooLarge { len } => {
                write!(f, "length {len} exceeds the limit of {MAX_DATA_KEY_LENGTH} bytes")
            }
        }
    }
}

impl std::error::Error for KeyRequestError {}

/// An HKDF output length as aws-lc-rs wants it.
struct OkmLen(usize);

impl hkdf::KeyType for OkmLen {
    fn len(&self) -> usize {
        self.0
    }
}

/// HKDF-SHA256 (RFC 5869): extract with `salt` (empty = HashLen zeros, as the RFC says) from `ikm`, expand with
/// `info` to `len` bytes. Returns `None` when `len` is 0 or above 255 × 32 = 8160, the RFC's limit.
pub fn hkdf_sha256(ikm: &[u8], salt: &[u8], info: &[u8], len: usize) -> Option<Zeroizing<Vec<u8>>> {
    if len == 0 {
        return None;
    }
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(ikm);
    let info = [info];
    let okm = prk.expand(&info, OkmLen(len)).ok()?;
    let mut out = Zeroizing::new(vec![0u8; len]);
    okm.fill(&mut out).ok()?;
    Some(out)
}

/// Checks a data key request against the limits: a non-empty id of at most [`MAX_DATA_KEY_ID_LENGTH`] bytes, a
/// length in `1..=`[`MAX_DATA_KEY_LENGTH`]. Returns the length as `usize`.
pub fn validate_request(data_key_id: &str, length: u64) -> Result<usize, KeyRequestError> {
    if data_key_id.is_empty() {
        return Err(KeyRequestError::EmptyId);
    }
    if data_key_id.len() > MAX_DATA_KEY_ID_LENGTH {
        return Err(KeyRequestError::IdTooLong { len: data_key_id.len() });
    }
    if length == 0 {
        return Err(KeyRequestError::ZeroLength);
    }
    match usize::try_from(length) {
        Ok(len) if len <= MAX_DATA_KEY_LENGTH => Ok(len),
        _ => Err(KeyRequestError::LengthTooLarge { len: length }),
    }
}

/// The data key `data_key_id` of `length` bytes: HKDF-SHA256(IKM = master key, salt = master salt,
/// info = `"key-"` + id, L = length), after [`validate_request`].
pub fn derive_data_key(
    secret: &MasterSecret,
    data_key_id: &str,
    length: usize,
) -> Result<Zeroizing<Vec<u8>>, KeyRequestError> {
    let length = validate_request(data_key_id, length as u64)?;
    let mut info = Vec::with_capacity(DATA_KEY_INFO_PREFIX.len() + data_key_id.len());
    info.extend_from_slice(DATA_KEY_INFO_PREFIX.as_bytes());
    info.extend_from_slice(data_key_id.as_bytes());
    // Cannot fail: 1 ≤ length ≤ MAX_DATA_KEY_LENGTH < 8160.
    Ok(hkdf_sha256(secret.key(), secret.salt(), &info, length).expect("length within the HKDF-SHA256 limit"))
}

/// The state-disk key of the disk `disk_uuid` (the UUID string as the disk reports it, used as the data key id
/// unchanged): [`STATE_DISK_KEY_LENGTH`] bytes.
pub fn state_disk_key(secret: &MasterSecret, disk_uuid: &str) -> Result<Zeroizing<Vec<u8>>, KeyRequestError> {
    derive_data_key(secret, disk_uuid, STATE_DISK_KEY_LENGTH)
}

/// The measurement secret: the data key [`MEASUREMENT_SECRET_KEY_ID`], [`MEASUREMENT_SECRET_LENGTH`] bytes.
pub fn measurement_secret(secret: &MasterSecret) -> Zeroizing<Vec<u8>> {
    derive_data_key(secret, MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH).expect("fixed, valid id and length")
}

/// The cluster id: HKDF-SHA256(IKM = measurement secret, salt = measurement salt, info = `"key-clusterID"`,
/// L = 32). Not secret (it is extended into PCR 15 and shown to the user), hence a plain array.
pub fn cluster_id(measurement_secret: &[u8], measurement_salt: &[u8]) -> [u8; CLUSTER_ID_LENGTH] {
    let okm = hkdf_sha256(measurement_secret, measurement_salt, CLUSTER_ID_INFO.as_bytes(), CLUSTER_ID_LENGTH)
        .expect("32 bytes is within the HKDF-SHA256 limit");
    let mut id = [0u8; CLUSTER_ID_LENGTH];
    id.copy_from_slice(&okm);
    id
}
