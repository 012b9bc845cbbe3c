//! The `join-service` exit statuses: one table, printed by `join-service --help`.

use attest_util::exit::{ExitStatus, USAGE};

/// After a graceful shutdown (SIGTERM or SIGINT).
pub const STOPPED: ExitStatus = ExitStatus { code: 0, meaning: "stopped gracefully (SIGTERM or SIGINT)" };
/// The service could not run.
pub const RUNTIME: ExitStatus =
    ExitStatus { code: 1, meaning: "the service could not run (bind failure, signal setup, the runtime)" };
/// The configuration could not be loaded.
pub const CONFIG: ExitStatus = ExitStatus {
    code: 3,
    meaning: "the configuration could not be loaded (measurements and their signature or version, salt, PKI, \
              AK registry, Kubernetes settings or client, this node's own attestation)",
};

/// Every status, in order.
pub const TABLE: &[ExitStatus] = &[STOPPED, RUNTIME, USAGE, CONFIG];

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_is_well_formed() {
        assert!(attest_util::exit::is_well_formed(super::TABLE));
    }
}
