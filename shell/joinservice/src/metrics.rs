//! Prometheus metrics of the join service, and the `/metrics` endpoint (plain HTTP/1.1 on a listener of its
//! own: `attest_grpc::http1`, hyper's server behind the services' fair admission), which also answers
//! `/healthz` (200 `ok` while the service runs: the listener opens only after the configuration, measurements
//! and TPM are loaded; the Kubernetes probes' endpoint).
//!
//! # Why no metrics crate
//!
//! The service exports a handful of counters and two histograms. The text exposition format (version
//! 0.0.4: `# HELP`, `# TYPE`, one sample per line, cumulative `_bucket{le=…}` plus `_sum` and `_count`) is a
//! page of code over atomics, so `prometheus`/`prometheus-client` (and their registries, encoders and
//! dependency trees) would not earn their place. Label values are fixed `&'static str` sets, so no label
//! escaping is needed and cardinality is bounded by construction.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `attest_join_tickets_issued_total` | counter | `kind` = `join` \| `rejoin` |
//! | `attest_join_refused_total` | counter | `reason` ([`RefusalReason`]) |
//! | `attest_join_attestation_seconds` | histogram | — (every aTLS validation, accepted or not) |
//! | `attest_join_attestations_total` | counter | `outcome` = `accepted` \| `rejected` |
//! | `attest_join_key_service_seconds` | histogram | — (every `GetDataKey` call) |
//! | `attest_join_key_service_calls_total` | counter | `outcome` = `ok` \| `error` |
//! | `attest_join_measurements_reloads_total` | counter | `outcome` = `applied` \| `rejected` |
//! | `attest_join_measurements_generation` | gauge | — |
//! | `attest_join_measurements_version` | gauge | — (the signed `measurementsVersion` in use) |
//! | `attest_join_measurements_rollbacks_total` | counter | — (files refused for a version below the one accepted) |
//! | `attest_join_measurements_expired` | gauge | — (1: the file in use has expired; every join is refused) |
//! | `attest_atls_handshakes_refused_total` | counter | `reason` (`attest_atls::RefusalReason`: relayed, replayed, wrong key, wrong nonce, TLS 1.2, …) |
//! | `attest_join_waiver` | gauge (1 per waiver in effect) | `waiver` (`attest_trust::Trust::waivers`) |
//! | `attest_join_dry_run` | gauge | — (1: tickets carry dry-run tokens that exist only as files) |
//! | `attest_admission_*` | gauges, counter | `server` = `join` \| `registration` \| `metrics` (`attest_grpc::admission::render_metrics`: each listener's limits, open connections and admission decisions) |
//! | `attest_registration_*` | gauges, counter | the AK registration service's pending-table limits and shedding (`RegistrationService::render_metrics`) |
//!
//! The last two families are sections the command adds ([`Metrics::add_section`]) for the listeners it runs.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use attest_grpc::http1::HttpEndpoint;
use tokio::net::TcpListener;

/// Histogram bucket upper bounds in seconds: from 1 ms (a warm key-service call) to 10 s (a timeout).
pub const LATENCY_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
/// The exposition content type.
pub const CONTENT_TYPE: &str = attest_grpc::http1::METRICS_CONTENT_TYPE;

/// Why a join (or rejoin) was refused: the `reason` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// The connection carried no verified attestation.
    Unauthenticated,
    /// A malformed request field (disk UUID, host key, principals).
    InvalidRequest,
    /// The CSR failed a check.
    InvalidCsr,
    /// The key service could not be reached.
    KeyServiceUnavailable,
    /// The key service did not answer in time.
    KeyServiceDeadline,
    /// The key service refused or answered wrongly.
    KeyServiceError,
    /// The Kubernetes API was unavailable (transient).
    TokenApiUnavailable,
    /// The Kubernetes API refused the token (permanent).
    TokenApiRefused,
    /// The PKI lacks control-plane files.
    ControlPlaneFiles,
    /// The evidence names no node identity.
    NoIdentity,
    /// The CSR's key is not the handshake's key.
    CsrKeyNotProven,
    /// The node name is another node's (or this node has another).
    NameNotOwned,
    /// The disk is another node's, or was never joined.
    DiskNotOwned,
    /// A control-plane join without membership or admission.
    ControlPlaneNotAuthorized,
    /// A limit of the cluster state.
    ClusterStateFull,
    /// The cluster state could not be written.
    ClusterState,
    /// Anything else.
    Internal,
}

impl RefusalReason {
    /// Every reason, in label order.
    pub const ALL: [RefusalReason; 17] = [
        RefusalReason::Unauthenticated,
        RefusalReason::InvalidRequest,
        RefusalReason::InvalidCsr,
        RefusalReason::KeyServiceUnavailable,
        RefusalReason::KeyServiceDeadline,
        RefusalReason::KeyServiceError,
        RefusalReason::TokenApiUnavailable,
        RefusalReason::TokenApiRefused,
        RefusalReason::ControlPlaneFiles,
        RefusalReason::NoIdentity,
        RefusalReason::CsrKeyNotProven,
        RefusalReason::NameNotOwned,
        RefusalReason::DiskNotOwned,
        RefusalReason::ControlPlaneNotAuthorized,
        RefusalReason::ClusterStateFull,
        RefusalReason::ClusterState,
        RefusalReason::Internal,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            RefusalReason::Unauthenticated => "unauthenticated",
            RefusalReason::InvalidRequest => "invalid_request",
            RefusalReason::InvalidCsr => "invalid_csr",
            RefusalReason::KeyServiceUnavailable => "key_service_unavailable",
            RefusalReason::KeyServiceDeadline => "key_service_deadline",
            RefusalReason::KeyServiceError => "key_service_error",
            RefusalReason::TokenApiUnavailable => "token_api_unavailable",
            RefusalReason::TokenApiRefused => "token_api_refused",
            RefusalReason::ControlPlaneFiles => "control_plane_files",
            RefusalReason::NoIdentity => "no_identity",
            RefusalReason::CsrKeyNotProven => "csr_key_not_proven",
            RefusalReason::NameNotOwned => "name_not_owned",
            RefusalReason::DiskNotOwned => "disk_not_owned",
            RefusalReason::ControlPlaneNotAuthorized => "control_plane_not_authorized",
            RefusalReason::ClusterStateFull => "cluster_state_full",
            RefusalReason::ClusterState => "cluster_state",
            RefusalReason::Internal => "internal",
        }
    }
}

/// A histogram over [`LATENCY_BUCKETS`].
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|&b| secs <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            cumulative += n.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        #[allow(clippy::cast_precision_loss)] // nanoseconds summed over the process lifetime; f64 is the format
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// The join service's metrics. Shared (`Arc`) by the service, the validators and the key service client.
#[derive(Debug, Default)]
pub struct Metrics {
    joins_issued: AtomicU64,
    rejoins_issued: AtomicU64,
    refused: [AtomicU64; RefusalReason::ALL.len()],
    attestation: Histogram,
    attestations_accepted: AtomicU64,
    attestations_rejected: AtomicU64,
    key_service: Histogram,
    key_calls_ok: AtomicU64,
    key_calls_error: AtomicU64,
    reloads_applied: AtomicU64,
    reloads_rejected: AtomicU64,
    rollbacks: AtomicU64,
    generation: AtomicU64,
    measurements_version: AtomicU64,
    measurements_expired: std::sync::atomic::AtomicBool,
    handshakes: std::sync::OnceLock<Arc<attest_atls::HandshakeRefusals>>,
    trust: std::sync::OnceLock<Arc<attest_trust::Trust>>,
    dry_run: std::sync::atomic::AtomicBool,
    sections: Sections,
}

/// A piece of the exposition rendered by someone else (the registration table's limits).
pub type Section = Box<dyn Fn(&mut String) + Send + Sync>;
pub use attest_grpc::admission::StatsSource as AdmissionSource;

#[derive(Default)]
struct Sections {
    admission: std::sync::Mutex<Vec<(&'static str, AdmissionSource)>>,
    other: std::sync::Mutex<Vec<Section>>,
}

impl std::fmt::Debug for Sections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.admission.lock().map(|v| v.iter().map(|(n, _)| *n).collect()).unwrap_or_default();
        f.debug_struct("Sections").field("admission", &names).finish_non_exhaustive()
    }
}

fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Metrics {
    /// Fresh, all zero.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// A join ticket was issued.
    pub fn join_issued(&self) {
        self.joins_issued.fetch_add(1, Ordering::Relaxed);
    }

    /// A rejoin ticket was issued.
    pub fn rejoin_issued(&self) {
        self.rejoins_issued.fetch_add(1, Ordering::Relaxed);
    }

    /// A join or rejoin was refused.
    pub fn refused(&self, reason: RefusalReason) {
        let i = RefusalReason::ALL.iter().position(|r| *r == reason).unwrap_or(RefusalReason::ALL.len() - 1);
        self.refused[i].fetch_add(1, Ordering::Relaxed);
    }

    /// How many refusals with `reason` so far.
    pub fn refused_count(&self, reason: RefusalReason) -> u64 {
        RefusalReason::ALL.iter().position(|r| *r == reason).map_or(0, |i| self.refused[i].load(Ordering::Relaxed))
    }

    /// Key service calls so far: (answered, failed).
    pub fn key_service_calls(&self) -> (u64, u64) {
        (self.key_calls_ok.load(Ordering::Relaxed), self.key_calls_error.load(Ordering::Relaxed))
    }

    /// Tickets issued so far: (joins, rejoins).
    pub fn issued_count(&self) -> (u64, u64) {
        (self.joins_issued.load(Ordering::Relaxed), self.rejoins_issued.load(Ordering::Relaxed))
    }

    /// An attestation validation took `d` and was accepted or not.
    pub fn attestation(&self, d: Duration, accepted: bool) {
        self.attestation.observe(d);
        let c = if accepted { &self.attestations_accepted } else { &self.attestations_rejected };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A key service call took `d`.
    pub fn key_service_call(&self, d: Duration, ok: bool) {
        self.key_service.observe(d);
        let c = if ok { &self.key_calls_ok } else { &self.key_calls_error };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A measurements reload was applied (new `generation`) or rejected.
    pub fn measurements_reload(&self, applied: Option<u64>) {
        match applied {
            Some(generation) => {
                self.reloads_applied.fetch_add(1, Ordering::Relaxed);
                self.generation.store(generation, Ordering::Relaxed);
            }
            None => {
                self.reloads_rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A measurements file was refused for a version below the one accepted (rollback); also counted as a
    /// rejected reload.
    pub fn measurements_rollback(&self) {
        self.rollbacks.fetch_add(1, Ordering::Relaxed);
        self.reloads_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Rollbacks refused so far.
    pub fn measurements_rollbacks(&self) -> u64 {
        self.rollbacks.load(Ordering::Relaxed)
    }

    /// The signed version of the measurements in use.
    pub fn set_measurements_version(&self, version: u64) {
        self.measurements_version.store(version, Ordering::Relaxed);
    }

    /// Whether the measurements in use have expired (every join is refused until a new file arrives).
    pub fn set_measurements_expired(&self, expired: bool) {
        self.measurements_expired.store(expired, Ordering::Relaxed);
    }

    /// Exports the refused aTLS handshakes of the service's acceptor.
    pub fn set_handshake_refusals(&self, refusals: Arc<attest_atls::HandshakeRefusals>) {
        let _ = self.handshakes.set(refusals);
    }

    /// Reports `trust`'s waivers (once, at start; the revocation state is read at each scrape).
    pub fn set_trust(&self, trust: Arc<attest_trust::Trust>) {
        let _ = self.trust.set(trust);
    }

    /// Reports whether tickets carry dry-run tokens.
    pub fn set_dry_run(&self, dry_run: bool) {
        self.dry_run.store(dry_run, Ordering::Relaxed);
    }

    /// Appends `section`'s samples to every exposition from now on.
    pub fn add_section(&self, section: Section) {
        locked(&self.sections.other).push(section);
    }

    /// Exports the admission table `stats` reads as `server="name"` (`attest_admission_*`, one family each for
    /// every listener added).
    pub fn add_admission(&self, name: &'static str, stats: AdmissionSource) {
        locked(&self.sections.admission).push((name, stats));
    }

    /// The text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let counter = |out: &mut String, name: &str, help: &str, samples: &[(&str, &str, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (label, value, n) in samples {
                let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
            }
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counter(
            &mut out,
            "attest_join_tickets_issued_total",
            "Join and rejoin tickets issued.",
            &[("kind", "join", load(&self.joins_issued)), ("kind", "rejoin", load(&self.rejoins_issued))],
        );
        let refused: Vec<_> =
            RefusalReason::ALL.iter().zip(&self.refused).map(|(r, n)| ("reason", r.label(), load(n))).collect();
        counter(&mut out, "attest_join_refused_total", "Join and rejoin requests refused, by reason.", &refused);
        self.attestation.render(
            &mut out,
            "attest_join_attestation_seconds",
            "Time to validate a joining node's attestation in the aTLS handshake.",
        );
        counter(
            &mut out,
            "attest_join_attestations_total",
            "Attestations validated in aTLS handshakes, by outcome.",
            &[
                ("outcome", "accepted", load(&self.attestations_accepted)),
                ("outcome", "rejected", load(&self.attestations_rejected)),
            ],
        );
        self.key_service.render(&mut out, "attest_join_key_service_seconds", "Latency of kms.API/GetDataKey calls.");
        counter(
            &mut out,
            "attest_join_key_service_calls_total",
            "kms.API/GetDataKey calls, by outcome.",
            &[("outcome", "ok", load(&self.key_calls_ok)), ("outcome", "error", load(&self.key_calls_error))],
        );
        counter(
            &mut out,
            "attest_join_measurements_reloads_total",
            "Measurements file changes seen, by outcome.",
            &[
                ("outcome", "applied", load(&self.reloads_applied)),
                ("outcome", "rejected", load(&self.reloads_rejected)),
            ],
        );
        let _ = writeln!(
            out,
            "# HELP attest_join_measurements_generation Generation of the validator set in use (1 = the startup file).\n\
             # TYPE attest_join_measurements_generation gauge\nattest_join_measurements_generation {}",
            load(&self.generation)
        );
        let _ = writeln!(
            out,
            "# HELP attest_join_measurements_version The signed measurementsVersion of the measurements in use.\n\
             # TYPE attest_join_measurements_version gauge\nattest_join_measurements_version {}",
            load(&self.measurements_version)
        );
        let _ = writeln!(
            out,
            "# HELP attest_join_measurements_rollbacks_total Measurements files refused: version below the one accepted.\n\
             # TYPE attest_join_measurements_rollbacks_total counter\nattest_join_measurements_rollbacks_total {}",
            load(&self.rollbacks)
        );
        let _ = writeln!(
            out,
            "# HELP attest_join_measurements_expired 1 when the measurements in use have expired (joins refused).\n\
             # TYPE attest_join_measurements_expired gauge\nattest_join_measurements_expired {}",
            u8::from(self.measurements_expired.load(Ordering::Relaxed))
        );
        if let Some(h) = self.handshakes.get() {
            h.render(&mut out);
        }
        let _ = writeln!(
            out,
            "# HELP attest_join_waiver Trust waivers in effect (explicit flags), one sample each.\n# TYPE attest_join_waiver gauge"
        );
        for waiver in self.trust.get().map(|t| t.waivers()).unwrap_or_default() {
            let _ = writeln!(out, "attest_join_waiver{{waiver=\"{waiver}\"}} 1");
        }
        let _ = writeln!(
            out,
            "# HELP attest_join_dry_run 1 when tickets carry dry-run tokens (files only, nothing joins).\n\
             # TYPE attest_join_dry_run gauge\nattest_join_dry_run {}",
            u8::from(self.dry_run.load(Ordering::Relaxed))
        );
        let tables: Vec<_> = locked(&self.sections.admission).iter().map(|(name, stats)| (*name, stats())).collect();
        if !tables.is_empty() {
            attest_grpc::admission::render_metrics(&mut out, &tables);
        }
        for section in locked(&self.sections.other).iter() {
            section(&mut out);
        }
        out
    }
}

/// A running `/metrics` endpoint (`attest_grpc::http1`: one request per connection, under fair admission).
#[derive(Debug)]
pub struct MetricsServer(HttpEndpoint);

impl MetricsServer {
    /// Serves `metrics` at `GET /metrics` and the health check at `GET /healthz` on `listener` (other paths
    /// 404, other methods 405), under `attest_grpc::http1::metrics_limits`; the endpoint's own admission joins
    /// the exposition as `server="metrics"`.
    #[allow(clippy::needless_pass_by_value)] // the endpoint and the exposition share the caller's `Arc`
    pub fn serve(listener: TcpListener, metrics: Arc<Metrics>) -> std::io::Result<MetricsServer> {
        let source = Arc::clone(&metrics);
        let render = Arc::new(move || source.render());
        let endpoint = HttpEndpoint::serve(
            listener,
            attest_grpc::http1::metrics_limits(),
            attest_grpc::http1::metrics_handler(render),
        )?;
        let admission = endpoint.admission();
        metrics.add_admission("metrics", Box::new(move || admission.stats()));
        Ok(MetricsServer(endpoint))
    }

    /// The listening address.
    pub fn local_addr(&self) -> SocketAddr {
        self.0.local_addr()
    }

    /// Stops accepting, lets a scrape in flight finish and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.0.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_format() {
        let m = Metrics::new();
        m.join_issued();
        m.refused(RefusalReason::KeyServiceUnavailable);
        m.refused(RefusalReason::KeyServiceUnavailable);
        m.attestation(Duration::from_millis(3), true);
        m.attestation(Duration::from_secs(20), false);
        m.key_service_call(Duration::from_micros(500), true);
        m.measurements_reload(Some(2));
        let text = m.render();
        for line in [
            "attest_join_tickets_issued_total{kind=\"join\"} 1",
            "attest_join_refused_total{reason=\"key_service_unavailable\"} 2",
            "attest_join_refused_total{reason=\"invalid_csr\"} 0",
            "attest_join_attestation_seconds_bucket{le=\"0.001\"} 0",
            "attest_join_attestation_seconds_bucket{le=\"0.005\"} 1",
            "attest_join_attestation_seconds_bucket{le=\"10\"} 1",
            "attest_join_attestation_seconds_bucket{le=\"+Inf\"} 2",
            "attest_join_attestation_seconds_count 2",
            "attest_join_attestations_total{outcome=\"rejected\"} 1",
            "attest_join_key_service_seconds_bucket{le=\"0.001\"} 1",
            "attest_join_measurements_generation 2",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        // Every sample line is `name{labels} value` or `name value`, with a HELP and TYPE per family.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = l.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{l}");
        }
        assert_eq!(text.matches("# TYPE").count(), 13);
        m.measurements_rollback();
        m.set_measurements_version(7);
        m.set_handshake_refusals(Arc::new(attest_atls::HandshakeRefusals::new()));
        let text = m.render();
        for line in [
            "attest_join_measurements_rollbacks_total 1",
            "attest_join_measurements_version 7",
            "attest_join_measurements_reloads_total{outcome=\"rejected\"} 1",
            "attest_atls_handshakes_refused_total{reason=\"protocol_version\"} 0",
            "attest_join_refused_total{reason=\"disk_not_owned\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        // No waiver reported, no dry run.
        assert!(!text.contains("attest_join_waiver{"), "{text}");
        assert!(text.lines().any(|l| l == "attest_join_dry_run 0"), "{text}");
        // Each waiver in effect is a sample; a dry run says so.
        m.set_trust(Arc::new(attest_trust::Trust {
            measurements: attest_trust::SignatureState::DangerouslyUnsigned,
            launch: vec![(
                attest_engine::variant::Variant::AwsSevSnp,
                attest_engine::LaunchPinning::DangerouslyUnpinned,
            )],
            revocation: None,
        }));
        m.set_dry_run(true);
        let text = m.render();
        for line in [
            "attest_join_waiver{waiver=\"measurements-unsigned\"} 1",
            "attest_join_waiver{waiver=\"launch-unpinned:aws-sev-snp\"} 1",
            "attest_join_dry_run 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }
}
