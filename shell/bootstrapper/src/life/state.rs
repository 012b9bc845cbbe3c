//! Node state: what a bootstrapped node must remember (role, measurement salt, cluster id, disk UUID, how far
//! bootstrapping got), persisted atomically as JSON, and the start-up rule that combines it with the lock.
//!
//! ```json
//! {"version": 1, "role": "control-plane", "measurement_salt": "<hex, 32 bytes>",
//!  "cluster_id": "<hex, 32 bytes>", "disk_uuid": "…", "phase": "bootstrapped", "dry_run": true}
//! ```
//!
//! `dry_run` is present (and `true`) only for a node bootstrapped with the dry-run backend: it ran no
//! `kubeadm`, so it is locked and has its keys but is part of no Kubernetes cluster.
//!
//! ```text
//! ```
//!
//! Nothing in it is secret: the salt is public (the join service hands it to every node), the cluster id is
//! extended into the lock register (PCR 15, or a TD's RTMR3: [`crate::life::lock`]), and the keys are re-derived,
//! never stored.
//!
//! # Start-up ([`check_startup`])
//!
//! The state comes from the disk's header where the disk keeps one (LUKS2, readable before the disk is
//! open), else from the state file.
//!
//! The lock register is the variant's ([`LockRegister`]): PCR 15 where the variant has a vTPM, RTMR3 on a TD
//! without one; "bound" is [`LockRegister::bound`] of the stored cluster id (PCR 15: SHA-256(0³² ‖ id)).
//!
//! | lock register | node state | meaning | result |
//! |---|---|---|---|
//! | 0 | absent | fresh node | [`Startup::Fresh`]: serve init, run the join client |
//! | 0 | present, phase `bootstrapped` | a bootstrapped node after a reboot (PCRs reset) | [`Startup::Rejoin`]: rejoin ticket or recovery, reopen the disk, re-extend PCR 15 |
//! | 0 | present, phase `failed` or `bootstrapping` | marked for reset: a bootstrap that failed (or stopped) after the lock, then a reboot | [`Startup::Reset`]: forget the state and the disk key, then start fresh |
//! | ≠ 0, = bound to the stored cluster id | present, phase `bootstrapped` or `failed` | bootstrapped in this boot; the bootstrapper restarted | [`Startup::Bootstrapped`] |
//! | ≠ 0, = bound to the stored cluster id | present, phase `bootstrapping` | the bootstrap stopped (crashed, killed) after the lock in this boot | [`Startup::Interrupted`]: marked for reset |
//! | ≠ 0, = bound to the lock's intent marker | absent | stopped between taking the lock and writing the state, in this boot (`crate::life::lock`, "The intent marker"; checked by `Node::startup`) | [`Startup::Interrupted`]: marked for reset |
//! | ≠ 0 | absent, no matching intent marker | the register extended by something else | [`StartupError::LockedWithoutState`] |
//! | ≠ 0, other value | present | the register extended by someone else, or state of another cluster | [`StartupError::PcrMismatch`] |
//! | 0 | present, but the disk it names is not this node's | state without its disk | [`StartupError::StateWithoutDisk`] (checked by `Node::startup`) |
//!
//! The error rows are refusals: the node cannot tell which cluster it belongs to, or the TPM and the disk
//! disagree, and guessing would either join a node twice or hand a second cluster's keys to it. The
//! operator has to reinstall (reboot with a fresh state disk). A node whose state says [`Phase::Failed`] in
//! the boot it failed in is bootstrapped but broken, and an interrupted one is half-bootstrapped: for both
//! the bootstrapper exits with "marked for reset" and the systemd unit reboots the node, which clears PCR
//! 15 and turns it into the `Reset` row (or, with no state written yet, the `Fresh` one). A locked PCR 15
//! therefore never outlives the boot it was extended in without a key to go with it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::{FileError, PUBLIC_FILE_MODE, write_atomic};
use attest_engine::crypto::{Digest, default_provider};
use attest_engine::variant::LockRegister;

/// The state file's name in the state directory.
pub(crate) const STATE_FILE_NAME: &str = "node-state.json";
/// Format version written and accepted.
pub(crate) const STATE_FORMAT_VERSION: u32 = 1;
/// Largest state file read, in bytes.
pub(crate) const MAX_STATE_FILE_SIZE: u64 = 64 * 1024;
/// Length of the measurement salt, in bytes.
pub(crate) const MEASUREMENT_SALT_LENGTH: usize = 32;

/// The node's role in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Runs the Kubernetes control plane.
    ControlPlane,
    /// Runs workloads only.
    Worker,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::ControlPlane => "control-plane",
            Role::Worker => "worker",
        })
    }
}

/// How far bootstrapping got after the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Lock taken, disk set up; the cluster initializer or joiner is running (or was, when the node crashed).
    Bootstrapping,
    /// The cluster initializer or joiner succeeded.
    Bootstrapped,
    /// The cluster initializer or joiner failed.
    Failed,
}

/// The persisted node state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeState {
    /// `STATE_FORMAT_VERSION`.
    pub version: u32,
    /// The node's role.
    pub role: Role,
    /// The measurement salt of the cluster.
    #[serde(with = "hex32")]
    pub measurement_salt: [u8; MEASUREMENT_SALT_LENGTH],
    /// The cluster id (extended into PCR 15).
    #[serde(with = "hex32")]
    pub cluster_id: [u8; 32],
    /// The state disk's UUID (the data key id of its key).
    pub disk_uuid: String,
    /// How far bootstrapping got.
    pub phase: Phase,
    /// Bootstrapped by the dry-run backend (nothing ran; no Kubernetes).
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// How the state disk protects the node's data (`DiskSetup::protection`: encryption, integrity or why
    /// not). Absent in states written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_protection: Option<String>,
    /// Why the last rejoin after a reboot was refused (the node then stays down); cleared by a rejoin that
    /// succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_refusal: Option<String>,
}

// serde's `skip_serializing_if` passes the field by reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

mod hex32 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = String::deserialize(d)?;
        let mut out = [0u8; 32];
        hex::decode_to_slice(&text, &mut out).map_err(|_| serde::de::Error::custom("expected 64 hex digits"))?;
        Ok(out)
    }
}

/// Why the state file cannot be read or written.
#[derive(Debug)]
pub enum StateError {
    /// Reading or writing failed.
    File(FileError),
    /// The file is larger than `MAX_STATE_FILE_SIZE`.
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a valid state document.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong (serde's message: positions and field names, no values).
        reason: String,
    },
    /// The file has another format version.
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The node state in the disk's header could not be read.
    Header {
        /// What failed.
        reason: String,
    },
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::File(e) => write!(f, "node state: {e}"),
            StateError::TooLarge { path } => {
                write!(f, "node state {} is larger than {MAX_STATE_FILE_SIZE} bytes", path.display())
            }
            StateError::Malformed { path, reason } => write!(f, "node state {} is malformed: {reason}", path.display()),
            StateError::UnsupportedVersion { version } => {
                write!(f, "node state has format version {version}, this bootstrapper reads {STATE_FORMAT_VERSION}")
            }
            StateError::Header { reason } => write!(f, "node state in the disk header: {reason}"),
        }
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateError::File(e) => Some(e),
            _ => None,
        }
    }
}

/// The state file in a state directory.
#[derive(Clone, Debug)]
pub struct StateStore {
    path: PathBuf,
}

impl StateStore {
    /// The store of `state_dir` (`STATE_FILE_NAME` in it).
    pub fn new(state_dir: &Path) -> StateStore {
        StateStore { path: state_dir.join(STATE_FILE_NAME) }
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored state, `None` if there is no state file.
    pub fn load(&self) -> Result<Option<NodeState>, StateError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StateError::File(FileError { path: self.path.clone(), source })),
        };
        if meta.len() > MAX_STATE_FILE_SIZE {
            return Err(StateError::TooLarge { path: self.path.clone() });
        }
        let text = std::fs::read(&self.path)
            .map_err(|source| StateError::File(FileError { path: self.path.clone(), source }))?;
        let state: NodeState = serde_json::from_slice(&text)
            .map_err(|e| StateError::Malformed { path: self.path.clone(), reason: e.to_string() })?;
        if state.version != STATE_FORMAT_VERSION {
            return Err(StateError::UnsupportedVersion { version: state.version });
        }
        Ok(Some(state))
    }

    /// Writes `state` atomically (temporary file, fsync, rename, directory fsync).
    pub fn persist(&self, state: &NodeState) -> Result<(), StateError> {
        let mut text = serde_json::to_vec_pretty(state).expect("serializing plain data cannot fail");
        text.push(b'\n');
        write_atomic(&self.path, &text, PUBLIC_FILE_MODE).map_err(StateError::File)
    }
}

/// What a starting node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Startup {
    /// Never bootstrapped: serve init and run the join client.
    Fresh,
    /// Bootstrapped before this start, in this boot (see [`NodeState::phase`] for how it ended).
    Bootstrapped(NodeState),
    /// Bootstrapped before a reboot: get the disk key back (rejoin ticket or recovery) and re-extend the lock
    /// register.
    Rejoin(NodeState),
    /// A bootstrap that failed after the lock, then a reboot: reset the node, then start fresh.
    Reset(NodeState),
    /// A bootstrap interrupted after the lock in this boot (PCR 15 holds this cluster id; the state is
    /// `bootstrapping`, or absent and explained by the lock's intent marker): marked for reset — a reboot
    /// clears PCR 15, then the node resets or starts fresh.
    Interrupted {
        /// The cluster id PCR 15 holds.
        cluster_id: [u8; 32],
        /// The state, if it was written.
        state: Option<NodeState>,
    },
}

/// Why a node refuses to start bootstrapping (see the table in the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartupError {
    /// The lock register is set but there is no node state: the node crashed between taking the lock and
    /// persisting its state. It refuses both init and join.
    LockedWithoutState,
    /// There is node state and the lock register is zero, but the state disk it names is not this node's disk.
    StateWithoutDisk {
        /// The cluster id the state names.
        cluster_id: [u8; 32],
        /// The disk UUID the state names.
        state_disk_uuid: String,
        /// The disk UUID the node's disk has.
        disk_uuid: String,
    },
    /// The lock register is not the value the stored cluster id gives.
    PcrMismatch {
        /// The register (PCR 15, RTMR3).
        register: LockRegister,
        /// Its value.
        pcr: Box<Digest>,
        /// Its value bound to the stored cluster id ([`LockRegister::bound`]).
        expected: Box<Digest>,
    },
}

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartupError::LockedWithoutState => f.write_str(
                "node is locked without state: the lock register is set but no node state was persisted, and no \
                 lock intent of this boot explains it (the register was extended by something else); it refuses \
                 init and join: reboot it (the register resets) or reinstall it",
            ),
            StartupError::StateWithoutDisk { cluster_id, state_disk_uuid, disk_uuid } => write!(
                f,
                "node state for cluster {} names state disk {state_disk_uuid}, but this node's disk is {disk_uuid}; \
                 refusing init, join and rejoin",
                hex::encode(cluster_id)
            ),
            StartupError::PcrMismatch { register, pcr, expected } => write!(
                f,
                "{register} is {} but the stored cluster id gives {}: refusing init and join",
                hex::encode(pcr.as_bytes()),
                hex::encode(expected.as_bytes())
            ),
        }
    }
}

impl std::error::Error for StartupError {}

/// Combines the lock register's value `pcr` (of `register`) and the stored state (table in the module docs).
pub(crate) fn check_startup(
    register: LockRegister,
    pcr: &Digest,
    state: Option<NodeState>,
) -> Result<Startup, StartupError> {
    let locked = *pcr != register.unbound();
    match (locked, state) {
        (false, None) => Ok(Startup::Fresh),
        (true, None) => Err(StartupError::LockedWithoutState),
        (false, Some(s)) if s.phase == Phase::Bootstrapped => Ok(Startup::Rejoin(s)),
        (false, Some(s)) => Ok(Startup::Reset(s)),
        (true, Some(s)) => {
            let expected = register.bound(default_provider(), &s.cluster_id);
            if expected != *pcr {
                Err(StartupError::PcrMismatch { register, pcr: Box::new(*pcr), expected: Box::new(expected) })
            } else if s.phase == Phase::Bootstrapping {
                Ok(Startup::Interrupted { cluster_id: s.cluster_id, state: Some(s) })
            } else {
                Ok(Startup::Bootstrapped(s))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> NodeState {
        NodeState {
            version: STATE_FORMAT_VERSION,
            role: Role::ControlPlane,
            measurement_salt: [1; 32],
            cluster_id: [2; 32],
            disk_uuid: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9".into(),
            phase: Phase::Bootstrapping,
            dry_run: false,
            disk_protection: None,
            last_refusal: None,
        }
    }

    #[test]
    fn roundtrip_and_format() {
        let tmp = attest_test_support::TempDir::new("state-roundtrip");
        let dir = tmp.path().join("state");
        let store = StateStore::new(&dir);
        assert_eq!(store.load().unwrap(), None);
        let mut s = state();
        store.persist(&s).unwrap();
        assert_eq!(store.load().unwrap(), Some(s.clone()));
        s.phase = Phase::Bootstrapped;
        store.persist(&s).unwrap();
        assert_eq!(store.load().unwrap(), Some(s));
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(text.contains("\"role\": \"control-plane\""), "{text}");
        assert!(text.contains(&hex::encode([2u8; 32])), "{text}");
        // A real node's state does not mention dry runs; a dry-run node's says so.
        assert!(!text.contains("dry_run"), "{text}");
        let mut d = state();
        d.dry_run = true;
        store.persist(&d).unwrap();
        assert!(std::fs::read_to_string(store.path()).unwrap().contains("\"dry_run\": true"));
        assert_eq!(store.load().unwrap(), Some(d));
    }

    #[test]
    fn malformed_and_foreign_versions_are_refused() {
        let tmp = attest_test_support::TempDir::new("state-malformed");
        let dir = tmp.path().join("state");
        let store = StateStore::new(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(store.path(), b"{\"version\": 1}").unwrap();
        assert!(matches!(store.load(), Err(StateError::Malformed { .. })));
        let mut v = serde_json::to_value(state()).unwrap();
        v["version"] = 2.into();
        std::fs::write(store.path(), v.to_string()).unwrap();
        assert!(matches!(store.load(), Err(StateError::UnsupportedVersion { version: 2 })));
        v["version"] = 1.into();
        v["cluster_id"] = "00".into();
        std::fs::write(store.path(), v.to_string()).unwrap();
        assert!(matches!(store.load(), Err(StateError::Malformed { .. })));
    }

    /// A state file cut anywhere (a torn write on a file system that lost an unsynced tail) or with a tail
    /// of zeros (blocks allocated, data never written) is refused, never read as a valid state.
    #[test]
    fn a_half_written_state_file_is_never_valid() {
        let tmp = attest_test_support::TempDir::new("state-torn");
        let store = StateStore::new(tmp.path());
        let mut s = state();
        s.last_refusal = Some("a reason".into());
        store.persist(&s).unwrap();
        let full = std::fs::read(store.path()).unwrap();
        let json_end = full.len() - 1; // the trailing newline
        for cut in 0..json_end {
            std::fs::write(store.path(), &full[..cut]).unwrap();
            assert!(store.load().is_err(), "{cut} of {} bytes read as valid", full.len());
            let mut zeros = full[..cut].to_vec();
            zeros.resize(full.len(), 0);
            std::fs::write(store.path(), &zeros).unwrap();
            assert!(store.load().is_err(), "{cut} bytes and zeros read as valid");
        }
        std::fs::write(store.path(), &full[..json_end]).unwrap();
        assert_eq!(store.load().unwrap(), Some(s), "only the newline missing: the whole document");
    }

    #[test]
    fn startup_table() {
        for register in [LockRegister::Pcr(15), LockRegister::Rtmr(3)] {
            let s = state();
            let check = |v: &Digest, s| check_startup(register, v, s);
            let (zero, good) = (register.unbound(), register.bound(default_provider(), &s.cluster_id));
            assert_eq!(check(&zero, None), Ok(Startup::Fresh));
            // Locked in this boot with the state still `bootstrapping`: interrupted, marked for reset.
            assert_eq!(
                check(&good, Some(s.clone())),
                Ok(Startup::Interrupted { cluster_id: s.cluster_id, state: Some(s.clone()) })
            );
            let mut bootstrapped = s.clone();
            bootstrapped.phase = Phase::Bootstrapped;
            assert_eq!(check(&good, Some(bootstrapped.clone())), Ok(Startup::Bootstrapped(bootstrapped)));
            assert_eq!(check(&good, None), Err(StartupError::LockedWithoutState));
            // After a reboot: a bootstrapped node rejoins, a node whose bootstrap failed (or stopped) resets.
            assert_eq!(check(&zero, Some(s.clone())), Ok(Startup::Reset(s.clone())));
            let mut done = s.clone();
            done.phase = Phase::Bootstrapped;
            assert_eq!(check(&zero, Some(done.clone())), Ok(Startup::Rejoin(done)));
            let mut failed = s.clone();
            failed.phase = Phase::Failed;
            assert_eq!(check(&zero, Some(failed.clone())), Ok(Startup::Reset(failed)));
            let other = register.bound(default_provider(), &[9; 32]);
            let e = check(&other, Some(s)).unwrap_err();
            assert!(matches!(e, StartupError::PcrMismatch { .. }), "{e}");
            assert!(e.to_string().starts_with(&register.to_string()), "{e}");
        }
        assert_eq!(
            crate::life::lock::expected_pcr_value(&[2; 32]),
            LockRegister::Pcr(15).bound(default_provider(), &[2; 32]).as_bytes()
        );
        assert!(StartupError::LockedWithoutState.to_string().contains("locked without state"));
    }
}
