//! On-hardware tests: real `/dev/tpmrm0` and `/dev/sev-guest` devices when present (skipping with a message
//! when absent) and `swtpm` otherwise. Filled by the "Engine II" issue.
