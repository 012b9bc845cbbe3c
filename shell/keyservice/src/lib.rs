//! # attest-keyservice
//!
//! The key service: `kms.API/GetDataKey` (`docs/ARCHITECTURE.md`, "Keys").
//!
//! **May depend on:** `attest-keys` (the derivations and the master secret, re-exported here), `attest-grpc`,
//! `attest-proto`, `attest-util`, OpenSSL (mutual TLS, [`tls`]). **Must not depend on:** aTLS, the attester
//! side or another service; nothing but its binary and tests should need this crate (the bootstrapper and
//! the CLI take the derivations from `attest-keys`).
//! The `key-service` command is [`cmd`]; the binary is a thin `main` over it.
//!
//! Every data key is HKDF-SHA256(IKM = master key, salt = master salt, info = `"key-"` + data key id,
//! L = requested length) — deterministic, so the service keeps no state: the same master secret always gives the
//! same keys, and a restarted service (or a second replica) answers identically. The derivations other services
//! need (state-disk key, measurement secret, cluster id) are in `attest-keys` and re-exported here.
//!
//! Only callers holding a client certificate of the cluster's key-service CA reach it: the `key-service` binary
//! serves over mutual TLS only ([`tls`]), never plaintext HTTP/2.
//!
//! The master secret ([`MasterSecret`], formats in [`secret`]) is held in zeroized buffers, redacted in `Debug`,
//! and never logged: the service logs the data key id and length of each request, never key material.
//!
//! ```
//! use std::sync::Arc;
//! use attest_grpc::Router;
//! use attest_keyservice::{KeyService, MasterSecret};
//!
//! let secret = MasterSecret::from_kms_uri("kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAA==&salt=").unwrap();
//! let mut router = Router::new();
//! router.add_service(Arc::new(KeyService::new(secret)));
//! assert_eq!(router.paths(), ["/kms.API/GetDataKey"]);
//! ```

#![forbid(unsafe_code)]

pub mod cmd;
pub mod exit;
pub mod health;
pub mod tls;

pub use attest_keys::{derive, secret};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;

use attest_grpc::{Request, Response, Router, Service, Status};

pub use attest_keys::{
    CLUSTER_ID_INFO, CLUSTER_ID_LENGTH, DATA_KEY_INFO_PREFIX, KeyRequestError, MAX_DATA_KEY_ID_LENGTH,
    MAX_DATA_KEY_LENGTH, MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH, STATE_DISK_KEY_LENGTH, cluster_id,
    derive_data_key, hkdf_sha256, measurement_secret, state_disk_key, validate_request,
};
pub use attest_keys::{MIN_MASTER_SECRET_LENGTH, MasterSecret, MasterSecretError};

/// The `kms.API` service over a master secret.
#[derive(Debug)]
pub struct KeyService {
    secret: MasterSecret,
    served: AtomicU64,
}

impl KeyService {
    /// A key service deriving from `secret`.
    pub fn new(secret: MasterSecret) -> KeyService {
        KeyService { secret, served: AtomicU64::new(0) }
    }

    /// How many data keys this service has handed out (over gRPC or [`KeyService::get_data_key`]).
    pub fn keys_served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// `kms.API/GetDataKey`: validates the request (an empty or too long id, a length of 0 or above
    /// [`MAX_DATA_KEY_LENGTH`] are refused: `INVALID_ARGUMENT` on the wire) and derives the key.
    pub fn get_data_key(&self, request: &GetDataKeyRequest) -> Result<GetDataKeyResponse, KeyRequestError> {
        let id = request.data_key_id.as_str();
        let derived = validate_request(id, u64::from(request.length))
            .and_then(|length| derive_data_key(&self.secret, id, length));
        match derived {
            Ok(key) => {
                self.served.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(data_key_id = ?id, length = request.length, "kms: data key derived");
                // The response message owns a plain Vec (prost); the zeroized buffer is wiped here, the
                // response's copy when the server has encoded and dropped it.
                Ok(GetDataKeyResponse { data_key: key.to_vec() })
            }
            Err(e) => {
                tracing::info!(data_key_id = ?truncate(id), length = request.length, error = %e, "kms: request refused");
                Err(e)
            }
        }
    }
}

/// The gRPC status of a refused request: every refusal is the caller's fault, `INVALID_ARGUMENT` with the
/// reason (never key material).
pub fn refusal_status(e: &KeyRequestError) -> Status {
    Status::invalid_argument(e.to_string())
}

/// At most the first 64 bytes of an id (on a char boundary), for logging refused requests with huge ids.
fn truncate(id: &str) -> &str {
    let mut end = id.len().min(64);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
}

impl Service for KeyService {
    fn register(self: Arc<Self>, router: &mut Router) {
        router.unary(paths::KMS_GET_DATA_KEY, move |request: Request<GetDataKeyRequest>| {
            let this = Arc::clone(&self);
            // HKDF of at most 4 KiB is microseconds of work: no need to leave the async task.
            async move {
                // Only over a mutually authenticated connection (`tls::serve`): a route reached any other way
                // (plaintext by a wiring mistake) answers nothing.
                let Some(caller) = request.peer::<tls::KmsCaller>() else {
                    tracing::warn!(outcome = "refused", "kms: call without an authenticated caller");
                    return Err(Status::unauthenticated(
                        "the key service serves only mutually authenticated TLS callers",
                    ));
                };
                tracing::debug!(caller = %caller.name, "kms: call");
                let answer = this.get_data_key(&request.message).map(Response::new).map_err(|e| refusal_status(&e));
                // The crash matrix stops here: the key derived, not sent (attest_util::fault).
                attest_util::fault::point("key-service.data-key");
                answer
            }
        });
    }
}
