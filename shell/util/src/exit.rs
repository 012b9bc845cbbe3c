//! Exit statuses of the service binaries. Each binary keeps its statuses in one table (its `exit.rs`), uses
//! the table's constants for every exit, and prints the table in its `--help` ([`help`]), so that a systemd
//! unit, a container runtime or a script can act on a status without reading the source.

use std::fmt::Write as _;

/// One exit status of a binary: its code and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitStatus {
    /// The process's exit code.
    pub code: u8,
    /// What the code means, for `--help` (one sentence).
    pub meaning: &'static str,
}

/// Status 2, wrong usage: the same in every binary (clap exits with it for bad arguments).
pub const USAGE: ExitStatus =
    ExitStatus { code: 2, meaning: "wrong usage: bad arguments, or a flag this build refuses" };

/// The table as `--help` prints it (after the options).
pub fn help(table: &[ExitStatus]) -> String {
    let mut s = String::from("Exit status:\n");
    for status in table {
        let _ = writeln!(s, "  {}  {}", status.code, status.meaning);
    }
    s
}

/// Whether `table` lists each code once, in increasing order, starting at 0 and including [`USAGE`]: what
/// every binary's table test checks.
pub fn is_well_formed(table: &[ExitStatus]) -> bool {
    table.first().is_some_and(|s| s.code == 0)
        && table.windows(2).all(|w| w[0].code < w[1].code)
        && table.contains(&USAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_status_in_order() {
        let table = [ExitStatus { code: 0, meaning: "ok" }, USAGE];
        assert!(is_well_formed(&table));
        assert_eq!(help(&table), format!("Exit status:\n  0  ok\n  2  {}\n", USAGE.meaning));
        assert!(!is_well_formed(&[USAGE]), "no 0");
        assert!(!is_well_formed(&[ExitStatus { code: 0, meaning: "ok" }]), "no usage status");
        assert!(!is_well_formed(&[ExitStatus { code: 0, meaning: "ok" }, USAGE, USAGE]), "a code twice");
    }
}
