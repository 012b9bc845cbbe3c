//! The node's `/metrics` (`--metrics-listen`, off by default): the admission limits, open connections and
//! admission decisions of each of the node's listeners (`attest_admission_*`, rendered by
//! `attest_grpc::admission::render_metrics`, one `server` label each: `init`, `recovery`, `verify-grpc`,
//! `verify-http`, `metrics`). Each listener registers itself with the node's [`NodeMetrics`] when it
//! starts; the endpoint reads them at every scrape. The aTLS handshakes the node's init and recovery
//! endpoints refused are counted by reason (`attest_atls_handshakes_refused_total`, one set of counters for
//! both endpoints, shared with their acceptors).

use std::sync::Mutex;

use std::sync::Arc;

use attest_atls::HandshakeRefusals;
use attest_grpc::admission::{StatsSource, render_metrics};

/// The node's listeners whose admission tables `/metrics` exports.
#[derive(Default)]
pub struct NodeMetrics {
    sources: Mutex<Vec<(&'static str, StatsSource)>>,
    refusals: Arc<HandshakeRefusals>,
}

impl std::fmt::Debug for NodeMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.lock().iter().map(|(n, _)| *n).collect();
        f.debug_struct("NodeMetrics").field("listeners", &names).finish()
    }
}

impl NodeMetrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(&'static str, StatsSource)>> {
        self.sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Exports the admission table `stats` reads as `server="name"` (a later one of the same name replaces
    /// it: a listener started again after a restart of its phase).
    pub fn add(&self, name: &'static str, stats: StatsSource) {
        let mut sources = self.lock();
        sources.retain(|(n, _)| *n != name);
        sources.push((name, stats));
    }

    /// The counters of refused aTLS handshakes, for the node's acceptors (`AtlsAcceptor::with_refusals`).
    pub fn handshake_refusals(&self) -> &Arc<HandshakeRefusals> {
        &self.refusals
    }

    /// The text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let tables: Vec<_> = self.lock().iter().map(|(name, stats)| (*name, stats())).collect();
        let mut out = String::with_capacity(2048);
        render_metrics(&mut out, &tables);
        self.refusals.render(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_handshakes_are_exported_by_reason() {
        let metrics = NodeMetrics::default();
        let before = metrics.render();
        assert!(before.contains("# TYPE attest_atls_handshakes_refused_total counter"), "{before}");
        let refused = attest_atls::Error::Config { what: "test" };
        let reason = metrics.handshake_refusals().record("server", None, &refused);
        let line = format!("attest_atls_handshakes_refused_total{{reason=\"{}\"}} 1", reason.label());
        let after = metrics.render();
        assert!(!before.contains(&line) && after.contains(&line), "{after}");
    }
}
