//! The `attest` exit statuses: one table for every subcommand, printed by `attest --help`.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | accepted: the evidence verified (or the command did what it was asked) |
//! | 1 | refused: well-formed evidence that a check said no to (signature, chain, binding, policy), or a node that refused or could not be reached |
//! | 2 | malformed input or wrong usage: bad arguments, unreadable files, input that is not the structure it must be (wrong version or magic, bad length, truncated or trailing bytes, undecodable protobuf, non-quote bytes), a malformed policy |
//!
//! Which failures are malformed and which are refusals is the engine's classification
//! (`attest_engine::error::ErrorClass`), so every verifier subcommand draws the line in the same place.

use super::Status;
use attest_engine::Error;
use attest_engine::error::ErrorClass;
use std::fmt::Write as _;

/// Every exit status with its meaning, in order.
pub(crate) const EXIT_STATUSES: &[(u8, &str)] = &[
    (0, "accepted: the evidence verified (or the command did what it was asked)"),
    (
        1,
        "refused: well-formed evidence that a check said no to (signature, chain, binding, policy); a node that refused or could not be reached",
    ),
    (
        2,
        "malformed input or wrong usage: bad arguments, unreadable files, input that is not the structure it must be (version, magic, length, truncated or trailing bytes, undecodable protobuf), a malformed policy",
    ),
];

/// The table as `--help` prints it.
pub(crate) fn help() -> String {
    let mut s = String::from("Exit status:\n");
    for (code, meaning) in EXIT_STATUSES {
        let _ = writeln!(s, "  {code}  {meaning}");
    }
    s.push_str("\nExample policies (commented, one per evidence kind): examples/policies/ in the attest repository.");
    s
}

/// The status of a verification that failed with `e`: malformed input and misuse are 2, refusals 1.
pub(crate) fn status_of(e: &Error) -> Status {
    match e.class() {
        ErrorClass::Refused => Status::Rejected,
        _ => Status::Usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_the_statuses() {
        let codes: Vec<u8> = EXIT_STATUSES.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, [Status::Accepted.code(), Status::Rejected.code(), Status::Usage.code()]);
        assert_eq!(status_of(&Error::ReportSignatureInvalid), Status::Rejected);
        assert_eq!(status_of(&Error::UnsupportedReportVersion { found: 0 }), Status::Usage);
    }
}
