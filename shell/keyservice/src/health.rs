//! The standard gRPC health service, `grpc.health.v1.Health/Check`, on a plaintext listener of its own
//! (`--health-listen`), for the kubelet's gRPC probes (Kubernetes ≥ 1.27: `grpc: {port: …}`), which speak
//! neither TLS nor client certificates. It says whether `kms.API` is serving and nothing else: no key, no
//! secret, no caller reaches `kms.API` through it.
//!
//! The messages follow gRPC's `health/v1/health.proto` (field numbers are its wire contract): the request's
//! `service` (1) names a service (`""` = the server as a whole); the answer's `status` (1) is UNKNOWN 0,
//! SERVING 1, NOT_SERVING 2 or SERVICE_UNKNOWN 3. A service this server does not have is `NOT_FOUND`, as
//! the protocol asks. While shutting down the answer is NOT_SERVING, so that Kubernetes stops routing first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use attest_grpc::{Request, Response, Router, Status};

/// The gRPC path of the health check.
pub const HEALTH_CHECK_PATH: &str = "/grpc.health.v1.Health/Check";
/// The service name of `kms.API` in health checks.
pub const KMS_SERVICE_NAME: &str = "kms.API";

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    /// The service asked about; empty for the whole server.
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    /// A [`ServingStatus`].
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    /// Not known.
    Unknown = 0,
    /// Serving.
    Serving = 1,
    /// Not serving (shutting down).
    NotServing = 2,
    /// Only for the streaming `Watch`, which this server does not offer.
    ServiceUnknown = 3,
}

/// Whether `kms.API` is serving: set when its listener is up, cleared when shutdown begins.
#[derive(Clone, Debug, Default)]
pub struct Health(Arc<AtomicBool>);

impl Health {
    /// Marks `kms.API` serving (`true`) or not.
    pub fn set_serving(&self, serving: bool) {
        self.0.store(serving, Ordering::SeqCst);
    }

    /// The answer for `service`, or `None` for a service this server does not have.
    pub fn check(&self, service: &str) -> Option<ServingStatus> {
        if !service.is_empty() && service != KMS_SERVICE_NAME {
            return None;
        }
        Some(if self.0.load(Ordering::SeqCst) { ServingStatus::Serving } else { ServingStatus::NotServing })
    }

    /// A router with only the health check.
    pub fn router(&self) -> Router {
        let health = self.clone();
        let mut router = Router::new();
        router.unary(HEALTH_CHECK_PATH, move |request: Request<HealthCheckRequest>| {
            let answer = match health.check(&request.message.service) {
                Some(s) => Ok(Response::new(HealthCheckResponse { status: s as i32 })),
                None => Err(Status::not_found("unknown service")),
            };
            async move { answer }
        });
        router
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        let h = Health::default();
        assert_eq!(h.check(""), Some(ServingStatus::NotServing));
        h.set_serving(true);
        assert_eq!(h.check(""), Some(ServingStatus::Serving));
        assert_eq!(h.check(KMS_SERVICE_NAME), Some(ServingStatus::Serving));
        assert_eq!(h.check("join.API"), None);
        assert_eq!(h.router().paths(), [HEALTH_CHECK_PATH]);
    }
}
