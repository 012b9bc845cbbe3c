//! Disk set-up: what the node does with its state-disk key, behind one trait ([`DiskSetup`]).
//!
//! | implementation | where | what `setup` does | strength |
//! |---|---|---|---|
//! | [`LuksDisk`](luks::LuksDisk) (`--disk luks:/dev/X`) | machines with dm-crypt and `cryptsetup` | LUKS2 (aes-xts-plain64, hmac-sha256 integrity where the kernel has dm-integrity), mapped, ext4, mounted at the state directory | the key never touches a file system; node state, kubelet and etcd data are encrypted at rest |
//! | [`LuksDisk::header_only`](luks::LuksDisk::header_only) (`--disk luks-header:FILE`) | machines without a device mapper (CI, the local demo) | the LUKS2 header and keyslot on FILE, the key checked with `open --test-passphrase`; nothing mapped or mounted | **no encryption of data**: proves the key opens the disk, the state directory stays plain |
//! | [`KeyFileDisk`] (`--disk key-file`, explicit) | machines without dm-crypt | writes the key to a 0600 file in a runtime directory | **weakest**: the key sits in a file readable by root; nothing is encrypted — it only proves the key arrived |
//!
//! The LUKS code is in [`luks`]; this module holds the trait, the key-file disk and what they share.
//!
//! # Setup and reopen
//!
//! [`DiskSetup::setup`] runs once, after the lock of a fresh node: it (re)formats the disk — a fresh node has
//! no state, so nothing on the disk is its to keep. [`DiskSetup::reopen`] runs on a bootstrapped node after a
//! reboot (rejoin, recovery): it never formats, and a wrong key fails.
//!
//! # Node state in the header
//!
//! After a reboot the node must know that it was bootstrapped (and for which cluster) before the disk is
//! open. [`LuksDisk`](luks::LuksDisk) therefore records the node state — nothing in it is secret — in a LUKS2 token of its
//! header ([`DiskSetup::header_state`]); a [`KeyFileDisk`] has no header and the state file in the state
//! directory is the record.
//!
//! # Disk UUID
//!
//! The key is derived per disk UUID (`state_disk_key(master, uuid)`), and the UUID is needed before the lock
//! (the join request carries it). [`LuksDisk`](luks::LuksDisk) uses the LUKS header's UUID when the device is already LUKS
//! and otherwise generates one and formats the device with it (`luksFormat --uuid`); [`KeyFileDisk`] keeps a
//! generated UUID in its directory. Both generate random version-4 UUIDs (RFC 9562 §5.4).

pub mod luks;

use std::path::{Path, PathBuf};

use crate::atomic::{FileError, PUBLIC_FILE_MODE, SECRET_FILE_MODE, write_atomic};
use crate::life::state::NodeState;

/// The key file's name in [`KeyFileDisk`]'s directory.
pub const KEY_FILE_NAME: &str = "state-disk.key";
/// The disk UUID file's name in [`KeyFileDisk`]'s directory.
pub const DISK_UUID_FILE_NAME: &str = "disk-uuid";
/// The device-mapper name of the opened state disk (`/dev/mapper/state`).
pub const DEFAULT_MAPPER_NAME: &str = "state";
/// Longest cryptsetup diagnostic kept in an error, in bytes.
pub const MAX_DIAGNOSTIC_LENGTH: usize = 4096;

/// Why the disk could not be set up. No variant carries key material (cryptsetup never prints the key).
#[derive(Debug)]
pub enum DiskError {
    /// A file could not be read or written.
    File(FileError),
    /// `cryptsetup` could not be started.
    Spawn {
        /// The program.
        program: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A `cryptsetup` command failed.
    Command {
        /// The subcommand (e.g. `luksFormat`).
        action: &'static str,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Its standard error (truncated to [`MAX_DIAGNOSTIC_LENGTH`]).
        stderr: String,
    },
    /// A stored or reported disk UUID is not a UUID.
    InvalidUuid {
        /// Where it came from.
        source: &'static str,
    },
    /// The node state in the disk's header is unreadable (too large or not a state document).
    HeaderState {
        /// What is wrong.
        reason: String,
    },
    /// The disk is not set up for a reopen (no LUKS header, or another disk than the node state names).
    NotBootstrapped {
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for DiskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiskError::File(e) => write!(f, "disk set-up: {e}"),
            DiskError::Spawn { program, source } => write!(f, "cannot run {}: {source}", program.display()),
            DiskError::Command { action, status, stderr } => {
                write!(f, "cryptsetup {action} failed ({status}): {}", stderr.trim())
            }
            DiskError::InvalidUuid { source } => write!(f, "the disk UUID from {source} is not a UUID"),
            DiskError::HeaderState { reason } => write!(f, "node state in the disk header: {reason}"),
            DiskError::NotBootstrapped { reason } => write!(f, "the state disk cannot be reopened: {reason}"),
        }
    }
}

impl std::error::Error for DiskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DiskError::File(e) => Some(e),
            DiskError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Sets up the state disk with its key. Calls block (file and process I/O).
pub trait DiskSetup: Send + Sync + std::fmt::Debug {
    /// The UUID the state-disk key is derived for; stable across calls.
    fn disk_uuid(&self) -> Result<String, DiskError>;
    /// Sets a fresh node's disk up with `key` (32 bytes): (re)formats it. Returns a one-line description for
    /// the log.
    fn setup(&self, key: &[u8]) -> Result<String, DiskError>;
    /// Reopens a bootstrapped node's disk with `key` (rejoin, recovery): never formats; a wrong key fails.
    fn reopen(&self, key: &[u8]) -> Result<String, DiskError>;
    /// How the disk protects the node's data, one line for logs and the node state (e.g. whether integrity
    /// protection is on, and why not).
    fn protection(&self) -> String;
    /// The node state recorded in the disk's own header (readable before the disk is opened), if this kind
    /// of disk keeps one.
    fn header_state(&self) -> Result<HeaderState, DiskError> {
        Ok(HeaderState::Unsupported)
    }
    /// Records `state` in the disk's header (no-op for disks without one).
    fn record_state(&self, state: &NodeState) -> Result<(), DiskError> {
        let _ = state;
        Ok(())
    }
    /// Forgets a failed bootstrap (the node was marked for reset): the key and the header's state go, so the
    /// next start is a fresh node. Returns a line for the log.
    fn reset(&self) -> Result<String, DiskError>;
}

/// What [`DiskSetup::header_state`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderState {
    /// This kind of disk has no header: the state file is the record.
    Unsupported,
    /// The disk has no recorded state (a fresh disk).
    Absent,
    /// The recorded state.
    Present(NodeState),
}

/// A fresh random (version 4) UUID, lower-case hyphenated (the `uuid` crate sets the version and variant
/// bits; the 16 random bytes come from OpenSSL).
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    openssl::rand::rand_bytes(&mut b).expect("RAND_bytes");
    uuid::Builder::from_random_bytes(b).into_uuid().hyphenated().to_string()
}

/// Whether `s` is a hyphenated UUID (8-4-4-4-12 hex digits, either case): the only 36-character form
/// `uuid` parses (simple, braced and URN forms have other lengths).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok()
}

// ---- Key file ------------------------------------------------------------------------------------------

/// Key-file mode: the key goes to a 0600 file (weaker than LUKS, see the module docs).
#[derive(Debug)]
pub struct KeyFileDisk {
    dir: PathBuf,
}

impl KeyFileDisk {
    /// Key file and disk UUID in `dir` (e.g. `/run/attest`, a tmpfs, so the key does not survive a reboot).
    pub fn new(dir: &Path) -> KeyFileDisk {
        KeyFileDisk { dir: dir.to_owned() }
    }

    /// Where the key is written.
    pub fn key_path(&self) -> PathBuf {
        self.dir.join(KEY_FILE_NAME)
    }
}

impl DiskSetup for KeyFileDisk {
    fn disk_uuid(&self) -> Result<String, DiskError> {
        let path = self.dir.join(DISK_UUID_FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let uuid = text.trim().to_owned();
                if is_uuid(&uuid) { Ok(uuid) } else { Err(DiskError::InvalidUuid { source: "the disk UUID file" }) }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let uuid = random_uuid();
                write_atomic(&path, format!("{uuid}\n").as_bytes(), PUBLIC_FILE_MODE).map_err(DiskError::File)?;
                Ok(uuid)
            }
            Err(source) => Err(DiskError::File(FileError { path, source })),
        }
    }

    fn setup(&self, key: &[u8]) -> Result<String, DiskError> {
        let path = self.key_path();
        write_atomic(&path, key, SECRET_FILE_MODE).map_err(DiskError::File)?;
        Ok(format!("state-disk key written to {} (key-file mode: no disk encryption)", path.display()))
    }

    fn reopen(&self, key: &[u8]) -> Result<String, DiskError> {
        // A key file cannot tell a wrong key: the caller has checked the cluster id the key came with.
        self.setup(key)
    }

    fn protection(&self) -> String {
        "key file (no disk encryption, explicit --disk key-file)".to_owned()
    }

    fn reset(&self) -> Result<String, DiskError> {
        let path = self.key_path();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(format!("key file {} removed", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok("no key file to remove".to_owned()),
            Err(source) => Err(DiskError::File(FileError { path, source })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids() {
        let u = random_uuid();
        assert!(is_uuid(&u), "{u}");
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(random_uuid(), u);
        assert!(!is_uuid("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f"));
        assert!(!is_uuid("../../etc/passwd"));
    }

    #[test]
    fn key_file_mode() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = attest_test_support::TempDir::new("keyfile");
        let dir = tmp.path().join("keys");
        let disk = KeyFileDisk::new(&dir);
        let uuid = disk.disk_uuid().unwrap();
        assert_eq!(disk.disk_uuid().unwrap(), uuid);
        disk.setup(&[7; 32]).unwrap();
        assert_eq!(std::fs::read(disk.key_path()).unwrap(), [7; 32]);
        assert_eq!(std::fs::metadata(disk.key_path()).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::write(dir.join(DISK_UUID_FILE_NAME), "nonsense").unwrap();
        assert!(matches!(disk.disk_uuid(), Err(DiskError::InvalidUuid { .. })));
    }
}
