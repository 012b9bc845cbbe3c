//! The `attest-bootstrapper` exit statuses: one table, printed by `attest-bootstrapper --help`.

use attest_util::exit::{ExitStatus, USAGE};

/// The node is bootstrapped (now or before this start), or the process was stopped by a signal.
pub(crate) const DONE: ExitStatus =
    ExitStatus { code: 0, meaning: "bootstrapped (now or before this start), or stopped by a signal" };
/// A runtime failure (TPM, bind, detection).
pub(crate) const RUNTIME: ExitStatus =
    ExitStatus { code: 1, meaning: "runtime failure (TPM, bind, hardware detection that found nothing or too much)" };
/// A configuration error.
pub(crate) const CONFIG: ExitStatus = ExitStatus {
    code: 3,
    meaning: "configuration: the init secret hash file, kubeadm missing, the join service's trust inputs \
              (measurements and their signature, launch pinning, CRLs)",
};
/// Bootstrapping failed after the lock: the node needs a reset.
pub(crate) const FAILED: ExitStatus = ExitStatus {
    code: 4,
    meaning: "bootstrapping failed after the lock (now, before this start, or interrupted in this boot): the \
              node is marked for reset; the unit reboots it and the next start resets it",
};
/// The node's state is inconsistent: init and join refused.
pub(crate) const INCONSISTENT: ExitStatus = ExitStatus {
    code: 5,
    meaning: "node state inconsistent (locked without state, state without its disk, lock register mismatch): \
              init and join refused",
};
/// The rejoin was refused: the node stays down until an operator acts.
pub(crate) const REJOIN_REFUSED: ExitStatus = ExitStatus {
    code: 6,
    meaning: "rejoin refused (the node's measurements changed, or the keys are another cluster's): the node \
              stays down",
};
/// The rejoin's keys were right but the node could not be brought back.
pub(crate) const REJOIN_FAILED: ExitStatus = ExitStatus {
    code: 7,
    meaning: "rejoin failed (the disk did not reopen, the lock register or Kubernetes could not be brought back)",
};

/// Every status, in order.
pub(crate) const TABLE: &[ExitStatus] =
    &[DONE, RUNTIME, USAGE, CONFIG, FAILED, INCONSISTENT, REJOIN_REFUSED, REJOIN_FAILED];

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_is_well_formed() {
        assert!(attest_util::exit::is_well_formed(super::TABLE));
    }
}
