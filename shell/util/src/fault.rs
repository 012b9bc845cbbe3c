//! Fault-injection points for the crash matrix (`scripts/crash-matrix.py`).
//!
//! The services call [`point`] with a name at every step where they persist something (or, in the join and
//! key services, in the middle of a join). In a normal build that is all it does: [`point`] reads one
//! `OnceLock` that nothing ever set and returns.
//!
//! A test build arms it: the binaries `attest-bootstrapper`, `join-service` and `key-service` call
//! [`arm_from_env`] only when built with their cargo feature `fault-injection`, which no manifest of the
//! workspace turns on (`test-support/tests/test_roots_feature.rs` checks that); a build without the feature
//! announces that it ignores the variable. Armed with `ATTEST_FAULT_POINTS=name[,name…]`, the process,
//! on reaching a listed point, prints `ATTEST-FAULT-POINT <name> pid=<pid>` to stderr and stops there for
//! good (the thread sleeps), so that the harness kills it at exactly that step — with SIGKILL, or with a
//! simulated power cut (the TPM reset, unsynced writes lost) — and then checks how the node comes back.
//!
//! Stopping instead of exiting keeps the kill outside the process: nothing the process would do on its way
//! out (destructors, buffered writes) can run, as after a real crash.

use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable naming the armed points (honoured only by `fault-injection` builds).
pub const FAULT_POINTS_VAR: &str = "ATTEST_FAULT_POINTS";

static ARMED: OnceLock<Vec<String>> = OnceLock::new();

/// Arms the points listed in [`FAULT_POINTS_VAR`], if set. Returns them. Call it only from a build made for
/// fault injection (the binaries gate the call on their `fault-injection` feature).
pub fn arm_from_env(service: &str) -> Vec<String> {
    let Ok(list) = std::env::var(FAULT_POINTS_VAR) else { return Vec::new() };
    let points: Vec<String> = list.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect();
    if ARMED.set(points.clone()).is_ok() && !points.is_empty() {
        tracing::warn!(service, points = ?points, "FAULT INJECTION ARMED: this process stops at these points");
    }
    points
}

/// Whether `name` is armed in this process.
pub fn is_armed(name: &str) -> bool {
    ARMED.get().is_some_and(|points| points.iter().any(|p| p == name))
}

/// A persistence step named `name`: returns at once unless the point is armed; an armed point announces
/// itself on stderr and never returns (module docs).
pub fn point(name: &str) {
    if !is_armed(name) {
        return;
    }
    {
        use std::io::Write as _;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "ATTEST-FAULT-POINT {name} pid={}", std::process::id());
        let _ = err.flush();
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// What a build without the feature says when the variable is set anyway (it is ignored).
pub fn warn_if_requested(service: &str) {
    if std::env::var_os(FAULT_POINTS_VAR).is_some() {
        tracing::warn!(service, "{FAULT_POINTS_VAR} is set but this build has no fault injection: ignored");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unarmed_points_return() {
        // Nothing armed in this test process: every point is a no-op.
        point("anything");
        assert!(!is_armed("anything"));
    }
}
