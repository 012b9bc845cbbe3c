//! The `key-service` exit statuses: one table, printed by `key-service --help`.

use attest_util::exit::{ExitStatus, USAGE};

/// After a graceful shutdown (SIGTERM or SIGINT).
pub const STOPPED: ExitStatus = ExitStatus { code: 0, meaning: "stopped gracefully (SIGTERM or SIGINT)" };
/// The service could not run.
pub const RUNTIME: ExitStatus =
    ExitStatus { code: 1, meaning: "the service could not run (bind failure, signal setup, the runtime)" };
/// The master secret or the TLS files could not be loaded.
pub const MASTER_SECRET: ExitStatus = ExitStatus {
    code: 3,
    meaning: "the master secret or the TLS files could not be loaded (unreadable, malformed, a master key \
              shorter than 16 bytes, a key that does not match its certificate)",
};

/// Every status, in order.
pub const TABLE: &[ExitStatus] = &[STOPPED, RUNTIME, USAGE, MASTER_SECRET];

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_is_well_formed() {
        assert!(attest_util::exit::is_well_formed(super::TABLE));
    }
}
