//! # attest-keys
//!
//! The cluster's key derivations and its master secret, below everything that derives or checks a key: the
//! key service serves them (`kms.API`), the bootstrapper derives the same keys at init and recovery and checks
//! the cluster id at join and rejoin, the CLI writes master secrets. Keeping them here means none of those
//! links another service's crate (its gRPC server, TLS stack and binary) for a few functions.
//!
//! Every data key is HKDF-SHA256(IKM = master key, salt = master salt, info = `"key-"` + data key id,
//! L = requested length) ([`derive`](mod@derive)); the master secret's accepted encodings and how it is kept in
//! memory are in [`secret`]. The join service's emergency SSH CA, whose Ed25519 seed is one of those data
//! keys, and the host keys it certifies are in [`ssh`] (pure: bytes in, a certificate or a typed error out).
//!
//! **May depend on:** aws-lc-rs (HKDF), OpenSSL (the SSH CA's Ed25519 signatures and host-key checks),
//! serde/serde_json, base64, hex, percent-encoding, zeroize. **Must not depend on:** any crate of the workspace
//! (`attest-test-support` only for tests), I/O beyond reading a master-secret file, or network code.

#![forbid(unsafe_code)]

pub mod derive;
pub mod secret;
pub mod ssh;

pub use derive::{
    CLUSTER_ID_INFO, CLUSTER_ID_LENGTH, DATA_KEY_INFO_PREFIX, KeyRequestError, MAX_DATA_KEY_ID_LENGTH,
    MAX_DATA_KEY_LENGTH, MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH, STATE_DISK_KEY_LENGTH, cluster_id,
    derive_data_key, hkdf_sha256, measurement_secret, state_disk_key, validate_request,
};
pub use secret::{MIN_MASTER_SECRET_LENGTH, MasterSecret, MasterSecretError};
