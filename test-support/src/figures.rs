//! Figures of the attack tests: how many genuine calls were served while an attack ran, and their
//! latency percentiles, printed for benches/README.md. Nothing here asserts speed; the tests assert only
//! that every genuine call was served.

use std::time::Duration;

/// How many genuine calls an attack test makes: `default` in CI, or `ATTEST_ATTACK_GENUINE_CALLS` (for the
/// figures in benches/README.md, which take more samples than CI needs).
pub fn genuine_calls(default: usize) -> usize {
    std::env::var("ATTEST_ATTACK_GENUINE_CALLS").ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// The latencies of the genuine calls of one attack.
#[derive(Debug, Default)]
pub struct Latencies {
    served: Vec<Duration>,
    tried: usize,
}

impl Latencies {
    /// An empty record.
    pub fn new() -> Latencies {
        Latencies::default()
    }

    /// Records one call: its latency when it was served, `None` when it failed.
    pub fn record(&mut self, served: Option<Duration>) {
        self.tried += 1;
        self.served.extend(served);
    }

    /// Calls tried and served.
    pub fn counts(&self) -> (usize, usize) {
        (self.tried, self.served.len())
    }

    /// The `q`-quantile (0..=1) of the served calls' latencies (nearest rank), if any was served.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let mut sorted = self.served.clone();
        sorted.sort_unstable();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let rank = ((q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize).max(1);
        sorted.get(rank - 1).copied()
    }

    /// One line for the test's output: `figure <what>: served S/T (R %), p50 … ms, p99 … ms, max … ms`.
    pub fn summary(&self, what: &str) -> String {
        let (tried, served) = self.counts();
        let ms = |q: f64| self.quantile(q).map_or_else(|| "-".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1e3));
        #[allow(clippy::cast_precision_loss)]
        let rate = if tried == 0 { 0.0 } else { 100.0 * served as f64 / tried as f64 };
        format!(
            "figure {what}: served {served}/{tried} ({rate:.1} %), p50 {} ms, p99 {} ms, max {} ms",
            ms(0.5),
            ms(0.99),
            ms(1.0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank_over_served_calls() {
        let mut l = Latencies::new();
        assert_eq!(l.quantile(0.5), None);
        for ms in (1..=100).rev() {
            l.record(Some(Duration::from_millis(ms)));
        }
        l.record(None);
        assert_eq!(l.counts(), (101, 100));
        assert_eq!(l.quantile(0.5), Some(Duration::from_millis(50)));
        assert_eq!(l.quantile(0.99), Some(Duration::from_millis(99)));
        assert_eq!(l.quantile(1.0), Some(Duration::from_millis(100)));
        assert_eq!(l.quantile(0.0), Some(Duration::from_millis(1)));
        assert!(l.summary("x").starts_with("figure x: served 100/101 (99.0 %), p50 50.0 ms, p99 99.0 ms"));
    }
}
