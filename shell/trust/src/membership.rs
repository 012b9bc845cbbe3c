//! The cluster's membership as its verifier keeps it: which attested node (its [`NodeIdentity`]) owns which
//! disk UUIDs and kubelet node name, which nodes are control-plane members, which one-time admissions are used
//! up, and the highest measurements version accepted. An attested node gets only what is its own.
//!
//! ```text
//!   join: CSR name N, disk UUID U, control plane?  ── from an attested node with identity I
//!     N bound to another identity ─────────────────────▶ refused NameTaken
//!     I per-VM and already named M ≠ N ────────────────▶ refused IdentityNamed
//!     U bound to another identity ─────────────────────▶ refused DiskTaken
//!     control plane: I a member already, or an unused admission (identity I, name N, signed, not expired)
//!                    else ─────────────────────────────▶ refused ControlPlaneNotAuthorized
//!     ok: N → I, U → I (the last MAX_DISKS_PER_NODE), admission used; written (atomically) BEFORE any secret
//!   rejoin: disk UUID U from identity I
//!     U bound to I ─▶ ok     U bound to another ─▶ refused DiskTaken     U unknown ─▶ refused DiskUnknown
//! ```
//!
//! The first join binds: a node's disk UUID is random and the node joins with it before anyone else can know it,
//! and a name is claimed by the first attested node to join under it. Where the identity names one VM
//! ([`IdentitySource::per_vm`](attest_engine::variant::IdentitySource::per_vm)), it holds one name, so a node cannot collect names it might later impersonate;
//! where it names a machine (TDX platform), the machine's VMs share it and may hold several.
//!
//! The init node never joins: `attest init` writes the first state ([`ClusterState::create`]) with the init
//! node's identity (from the attestation it verified), its name and disk UUID, as a control-plane member — the
//! allow-list from the init configuration. Further control-plane nodes need an operator-signed one-time
//! admission ([`crate::admission`]).
//!
//! # File
//!
//! ```json
//! {"version": 1, "measurementsVersion": 4,
//!  "nodes": [{"identity": "ak:…", "names": ["node-2"], "disks": ["…uuid…"], "controlPlane": false}],
//!  "usedAdmissions": ["<id hex>"]}
//! ```
//!
//! Rewritten atomically (temporary file, fsync, rename, fsync of the directory) on every change, under a lock;
//! a failed write leaves the state in memory as it was, and the join is refused. One join service process
//! writes a file: replicas need a shared store of their own (`docs/LIMITS.md`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use attest_engine::variant::NodeIdentity;
use serde_json::{Value, json};

use super::admission::Admission;

/// Version of the file format.
pub const STATE_FORMAT_VERSION: u64 = 1;
/// Largest state file read, in bytes.
pub const MAX_CLUSTER_STATE_SIZE: usize = 16 << 20;
/// Most nodes recorded.
pub const MAX_NODES: usize = 50_000;
/// Disk UUIDs remembered per node (the newest; a node reset for a new disk drops the oldest).
pub const MAX_DISKS_PER_NODE: usize = 4;
/// Names one machine-wide identity may hold (several VMs on one TDX host).
pub const MAX_NAMES_PER_PLATFORM: usize = 64;
/// Used admission ids remembered (the oldest forgotten first; an admission expires anyway).
pub const MAX_USED_ADMISSIONS: usize = 10_000;
/// Longest node name (a DNS-1123 subdomain); an admission names a node too, so it is defined there.
pub use super::admission::MAX_NODE_NAME_LEN;

/// Why the membership refuses a node — a typed refusal, never a secret in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The node name belongs to another attested node.
    NameTaken {
        /// The name asked for.
        name: String,
    },
    /// This (per-VM) identity joined under another name.
    IdentityNamed {
        /// The name it holds.
        name: String,
    },
    /// The disk belongs to another attested node.
    DiskTaken {
        /// The disk UUID asked for.
        disk: String,
    },
    /// No node joined with this disk: its key is not given out (rejoin).
    DiskUnknown {
        /// The disk UUID asked for.
        disk: String,
    },
    /// A control-plane join without a member identity or an admission for this identity and name.
    ControlPlaneNotAuthorized,
    /// A limit of the state ([`MAX_NODES`], …) would be exceeded.
    Full {
        /// Which limit.
        what: &'static str,
    },
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NameTaken { name } => write!(f, "node name {name:?} belongs to another attested node"),
            Self::IdentityNamed { name } => {
                write!(f, "this attested node joined as {name:?}; it cannot take another name")
            }
            Self::DiskTaken { disk } => write!(f, "disk {disk} belongs to another attested node"),
            Self::DiskUnknown { disk } => write!(f, "disk {disk} was never joined: its key is not given out"),
            Self::ControlPlaneNotAuthorized => f.write_str(
                "a control-plane join needs an operator's admission for this attested node and name (attest admission \
                 issue); the request's flag alone is not enough",
            ),
            Self::Full { what } => write!(f, "cluster state full: {what}"),
        }
    }
}

/// Why the state cannot be used (or a change not kept).
#[derive(Debug)]
pub enum StateError {
    /// Reading or writing the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is malformed.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// [`ClusterState::create`] found a state already there.
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The node is refused.
    Refused(Refusal),
}

impl core::fmt::Display for StateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cluster state {}: {source}", path.display()),
            Self::Invalid { path, reason } => write!(f, "cluster state {}: {reason}", path.display()),
            Self::Exists { path } => write!(f, "cluster state {} exists already; not overwritten", path.display()),
            Self::Refused(r) => write!(f, "{r}"),
        }
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// One attested node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    /// Its identity.
    pub identity: NodeIdentity,
    /// Its kubelet node names (one for a per-VM identity).
    pub names: Vec<String>,
    /// Its disk UUIDs, oldest first (at most [`MAX_DISKS_PER_NODE`]).
    pub disks: Vec<String>,
    /// Whether it is a control-plane member (the init node, or admitted by the operator).
    pub control_plane: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    measurements_version: u64,
    nodes: Vec<NodeRecord>,
    used_admissions: Vec<String>,
}

/// What a join asks for, from an attested node.
#[derive(Clone, Copy, Debug)]
pub struct JoinClaim<'a> {
    /// The node's identity (from its verified evidence).
    pub identity: &'a NodeIdentity,
    /// The kubelet node name of its CSR.
    pub name: &'a str,
    /// Its disk UUID.
    pub disk_uuid: &'a str,
    /// Whether it asks to join the control plane.
    pub control_plane: bool,
}

/// What a granted join changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// Whether the node is new to the state.
    pub new_node: bool,
    /// The admission used for a control-plane join (its id), when one was.
    pub admission: Option<String>,
}

/// The cluster's membership ([module docs](self)), backed by a file or in memory.
#[derive(Debug)]
pub struct ClusterState {
    path: Option<PathBuf>,
    state: Mutex<State>,
}

impl ClusterState {
    /// Opens the state at `path`, which must exist (`attest init` writes the first one).
    pub fn open(path: &Path) -> Result<ClusterState, StateError> {
        let bytes = read_limited(path)?;
        let state = parse(path, &bytes)?;
        Ok(ClusterState { path: Some(path.to_owned()), state: Mutex::new(state) })
    }

    /// Writes the first state at `path` — the init node as a control-plane member, and the measurements version
    /// accepted at init — refusing to overwrite an existing file.
    pub fn create(
        path: &Path,
        init_node: Option<NodeRecord>,
        measurements_version: u64,
    ) -> Result<ClusterState, StateError> {
        if path.exists() {
            return Err(StateError::Exists { path: path.to_owned() });
        }
        let state = State { measurements_version, nodes: init_node.into_iter().collect(), used_admissions: Vec::new() };
        write(path, &state)?;
        Ok(ClusterState { path: Some(path.to_owned()), state: Mutex::new(state) })
    }

    /// An empty state that is never written (tests, and a verifier without persistent state).
    pub fn in_memory() -> ClusterState {
        ClusterState { path: None, state: Mutex::new(State::default()) }
    }

    /// The file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `change` to a copy; writes it; only then makes it the state. The lock is held throughout, so
    /// two joins never decide on the same old state.
    fn update<T>(
        &self,
        change: impl FnOnce(&mut State) -> Result<Option<T>, StateError>,
    ) -> Result<Option<T>, StateError> {
        let mut guard = self.lock();
        let mut next = guard.clone();
        let out = change(&mut next)?;
        if next != *guard {
            if let Some(path) = &self.path {
                write(path, &next)?;
            }
            *guard = next;
        }
        Ok(out)
    }

    /// Every node recorded.
    pub fn nodes(&self) -> Vec<NodeRecord> {
        self.lock().nodes.clone()
    }

    /// The highest measurements version accepted.
    pub fn measurements_floor(&self) -> u64 {
        self.lock().measurements_version
    }

    /// Raises the highest accepted measurements version to `version` (never lowers it); persisted before it
    /// returns. Returns whether it rose.
    pub fn raise_measurements_floor(&self, version: u64) -> Result<bool, StateError> {
        self.update(|s| {
            if version > s.measurements_version {
                s.measurements_version = version;
                Ok(Some(true))
            } else {
                Ok(Some(false))
            }
        })
        .map(|r| r.unwrap_or(false))
    }

    /// Decides a join ([module docs](self)) and, when granted, records it before returning. `admissions` are
    /// the operator's verified admissions; one for this identity and name, not yet used, authorizes a
    /// control-plane join (and is then used up).
    pub fn admit_join(&self, claim: &JoinClaim<'_>, admissions: &[Admission]) -> Result<Granted, StateError> {
        // Most joins change nothing (a returning node, or a refusal): decided on the state as it is, without
        // the copy a change needs.
        if let Some(granted) = join_unchanged(&self.lock(), claim)? {
            return Ok(granted);
        }
        let refused = |r| Err(StateError::Refused(r));
        self.update(|s| {
            if let Some(granted) = join_unchanged(s, claim)? {
                return Ok(Some(granted));
            }
            let id = claim.identity;
            let existing = s.nodes.iter().position(|n| &n.identity == id);
            if let Some(i) = existing {
                let n = &s.nodes[i];
                if id.source().per_vm() && !n.names.is_empty() && !n.names.iter().any(|m| m == claim.name) {
                    return refused(Refusal::IdentityNamed { name: n.names[0].clone() });
                }
            }
            let member = existing.is_some_and(|i| s.nodes[i].control_plane);
            let admission = if claim.control_plane && !member {
                let found = admissions
                    .iter()
                    .find(|a| &a.identity == id && a.node_name == claim.name && !s.used_admissions.contains(&a.id));
                match found {
                    Some(a) => Some(a.id.clone()),
                    None => return refused(Refusal::ControlPlaneNotAuthorized),
                }
            } else {
                None
            };
            let i = if let Some(i) = existing {
                i
            } else {
                if s.nodes.len() >= MAX_NODES {
                    return refused(Refusal::Full { what: "nodes" });
                }
                s.nodes.push(NodeRecord {
                    identity: id.clone(),
                    names: Vec::new(),
                    disks: Vec::new(),
                    control_plane: false,
                });
                s.nodes.len() - 1
            };
            let n = &mut s.nodes[i];
            if !n.names.iter().any(|m| m == claim.name) {
                if n.names.len() >= MAX_NAMES_PER_PLATFORM {
                    return refused(Refusal::Full { what: "names of one platform" });
                }
                n.names.push(claim.name.to_owned());
            }
            if !n.disks.iter().any(|d| d == claim.disk_uuid) {
                n.disks.push(claim.disk_uuid.to_owned());
                if n.disks.len() > MAX_DISKS_PER_NODE {
                    n.disks.remove(0);
                }
            }
            if let Some(a) = &admission {
                n.control_plane = true;
                s.used_admissions.push(a.clone());
                if s.used_admissions.len() > MAX_USED_ADMISSIONS {
                    s.used_admissions.remove(0);
                }
            }
            Ok(Some(Granted { new_node: existing.is_none(), admission }))
        })
        .map(|g| g.unwrap_or(Granted { new_node: false, admission: None }))
    }

    /// Decides a rejoin: the disk must be one `identity` joined with. With `adopt_unknown` (the named waiver
    /// for clusters made before disks were bound), a disk nobody holds is bound to `identity` instead of
    /// refused; returns whether that happened.
    pub fn check_rejoin(
        &self,
        identity: &NodeIdentity,
        disk_uuid: &str,
        adopt_unknown: bool,
    ) -> Result<bool, StateError> {
        if let Some(adopted) = rejoin_unchanged(&self.lock(), identity, disk_uuid, adopt_unknown)? {
            return Ok(adopted);
        }
        self.update(|s| {
            if let Some(adopted) = rejoin_unchanged(s, identity, disk_uuid, adopt_unknown)? {
                return Ok(Some(adopted));
            }
            let full = s.nodes.len() >= MAX_NODES;
            match s.nodes.iter_mut().find(|n| &n.identity == identity) {
                Some(n) => {
                    n.disks.push(disk_uuid.to_owned());
                    if n.disks.len() > MAX_DISKS_PER_NODE {
                        n.disks.remove(0);
                    }
                }
                None if full => {
                    return Err(StateError::Refused(Refusal::Full { what: "nodes" }));
                }
                None => s.nodes.push(NodeRecord {
                    identity: identity.clone(),
                    names: Vec::new(),
                    disks: vec![disk_uuid.to_owned()],
                    control_plane: false,
                }),
            }
            Ok(Some(true))
        })
        .map(|r| r.unwrap_or(false))
    }
}

/// A join decided without a change: another node's name or disk (refused), or this node's claim exactly as
/// recorded (granted). `None` when the state must change, or admissions decide.
fn join_unchanged(s: &State, claim: &JoinClaim<'_>) -> Result<Option<Granted>, StateError> {
    let id = claim.identity;
    if s.nodes.iter().any(|n| &n.identity != id && n.names.iter().any(|m| m == claim.name)) {
        return Err(StateError::Refused(Refusal::NameTaken { name: claim.name.to_owned() }));
    }
    if s.nodes.iter().any(|n| &n.identity != id && n.disks.iter().any(|d| d == claim.disk_uuid)) {
        return Err(StateError::Refused(Refusal::DiskTaken { disk: claim.disk_uuid.to_owned() }));
    }
    let recorded = s.nodes.iter().find(|n| &n.identity == id).is_some_and(|n| {
        n.names.iter().any(|m| m == claim.name)
            && n.disks.iter().any(|d| d == claim.disk_uuid)
            && (n.control_plane || !claim.control_plane)
    });
    Ok(recorded.then_some(Granted { new_node: false, admission: None }))
}

/// A rejoin decided without a change: the identity's own disk (`Some(false)`), another's or an unknown one
/// (refused). `None` when the disk is to be adopted (the waiver).
fn rejoin_unchanged(
    s: &State,
    identity: &NodeIdentity,
    disk_uuid: &str,
    adopt_unknown: bool,
) -> Result<Option<bool>, StateError> {
    match s.nodes.iter().find(|n| n.disks.iter().any(|d| d == disk_uuid)) {
        Some(n) if &n.identity == identity => Ok(Some(false)),
        Some(_) => Err(StateError::Refused(Refusal::DiskTaken { disk: disk_uuid.to_owned() })),
        None if !adopt_unknown => Err(StateError::Refused(Refusal::DiskUnknown { disk: disk_uuid.to_owned() })),
        None => Ok(None),
    }
}

fn read_limited(path: &Path) -> Result<Vec<u8>, StateError> {
    use std::io::Read as _;
    let io = |source| StateError::Io { path: path.to_owned(), source };
    let mut out = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(MAX_CLUSTER_STATE_SIZE as u64 + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() > MAX_CLUSTER_STATE_SIZE {
        return Err(StateError::Invalid {
            path: path.to_owned(),
            reason: format!("larger than {MAX_CLUSTER_STATE_SIZE} bytes"),
        });
    }
    Ok(out)
}

/// The list of strings `field` of `v` (absent: empty), at most `limit`; `invalid` makes the error.
fn strings(
    v: &Value,
    field: &str,
    limit: usize,
    invalid: impl Fn(String) -> StateError,
) -> Result<Vec<String>, StateError> {
    let Some(list) = v.get(field) else { return Ok(Vec::new()) };
    let list = list.as_array().ok_or_else(|| invalid(format!("{field} is not a list")))?;
    if list.len() > limit {
        return Err(invalid(format!("{field}: more than {limit}")));
    }
    list.iter()
        .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| invalid(format!("{field}: not a string"))))
        .collect()
}

fn parse(path: &Path, bytes: &[u8]) -> Result<State, StateError> {
    let invalid = |reason: String| StateError::Invalid { path: path.to_owned(), reason };
    let v: Value = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| invalid("not a JSON object".into()))?;
    for key in obj.keys() {
        if !["version", "measurementsVersion", "nodes", "usedAdmissions"].contains(&key.as_str()) {
            return Err(invalid(format!("unknown field {key:?}")));
        }
    }
    if v.get("version").and_then(Value::as_u64) != Some(STATE_FORMAT_VERSION) {
        return Err(invalid(format!("version must be {STATE_FORMAT_VERSION}")));
    }
    let measurements_version = match v.get("measurementsVersion") {
        None => 0,
        Some(n) => n.as_u64().ok_or_else(|| invalid("measurementsVersion is not an unsigned integer".into()))?,
    };
    let raw_nodes = match v.get("nodes") {
        None => Vec::new(),
        Some(n) => n.as_array().ok_or_else(|| invalid("nodes is not a list".into()))?.clone(),
    };
    if raw_nodes.len() > MAX_NODES {
        return Err(invalid(format!("more than {MAX_NODES} nodes")));
    }
    let mut nodes = Vec::with_capacity(raw_nodes.len());
    for (i, n) in raw_nodes.iter().enumerate() {
        let at = |e: String| invalid(format!("nodes[{i}]: {e}"));
        let identity = n
            .get("identity")
            .and_then(Value::as_str)
            .and_then(NodeIdentity::parse)
            .ok_or_else(|| at("identity is missing or not an identity".into()))?;
        let names = strings(n, "names", MAX_NAMES_PER_PLATFORM, at)?;
        if names.iter().any(|m| m.is_empty() || m.len() > MAX_NODE_NAME_LEN) {
            return Err(at("a name is empty or too long".into()));
        }
        let disks = strings(n, "disks", MAX_DISKS_PER_NODE, at)?;
        let control_plane = n.get("controlPlane").and_then(Value::as_bool).unwrap_or(false);
        nodes.push(NodeRecord { identity, names, disks, control_plane });
    }
    let used_admissions = strings(&v, "usedAdmissions", MAX_USED_ADMISSIONS, invalid)?;
    Ok(State { measurements_version, nodes, used_admissions })
}

fn write(path: &Path, s: &State) -> Result<(), StateError> {
    let nodes: Vec<Value> = s
        .nodes
        .iter()
        .map(|n| {
            json!({"identity": n.identity.as_str(), "names": n.names, "disks": n.disks, "controlPlane": n.control_plane})
        })
        .collect();
    let v = json!({"version": STATE_FORMAT_VERSION, "measurementsVersion": s.measurements_version, "nodes": nodes,
        "usedAdmissions": s.used_admissions});
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    attest_util::fs::write_atomic(path, text.as_bytes(), attest_util::fs::PUBLIC_FILE_MODE)
        .map_err(|e| StateError::Io { path: e.path, source: e.source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> NodeIdentity {
        NodeIdentity::parse(&format!("ak:{}", hex_byte(n).repeat(32))).unwrap()
    }

    fn hex_byte(n: u8) -> String {
        format!("{n:02x}")
    }

    fn platform(n: u8) -> NodeIdentity {
        NodeIdentity::parse(&format!("tdx-ppid:{}", hex_byte(n).repeat(16))).unwrap()
    }

    fn claim<'a>(identity: &'a NodeIdentity, name: &'a str, disk: &'a str, cp: bool) -> JoinClaim<'a> {
        JoinClaim { identity, name, disk_uuid: disk, control_plane: cp }
    }

    fn refusal(e: StateError) -> Refusal {
        match e {
            StateError::Refused(r) => r,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn names_and_disks_belong_to_the_first_attested_node() {
        let s = ClusterState::in_memory();
        let (a, b) = (id(1), id(2));
        assert!(s.admit_join(&claim(&a, "node-2", "disk-a", false), &[]).unwrap().new_node);
        // The same node again (a retry, or a reset node with a new disk): fine.
        assert!(!s.admit_join(&claim(&a, "node-2", "disk-a2", false), &[]).unwrap().new_node);
        // Another node: not its name, not its disk, and a per-VM identity keeps one name.
        assert_eq!(
            refusal(s.admit_join(&claim(&b, "node-2", "disk-b", false), &[]).unwrap_err()),
            Refusal::NameTaken { name: "node-2".into() }
        );
        assert_eq!(
            refusal(s.admit_join(&claim(&b, "node-3", "disk-a", false), &[]).unwrap_err()),
            Refusal::DiskTaken { disk: "disk-a".into() }
        );
        s.admit_join(&claim(&b, "node-3", "disk-b", false), &[]).unwrap();
        assert_eq!(
            refusal(s.admit_join(&claim(&b, "node-9", "disk-b", false), &[]).unwrap_err()),
            Refusal::IdentityNamed { name: "node-3".into() }
        );
        // Rejoin: only one's own disk; an unknown disk only under the waiver.
        assert!(!s.check_rejoin(&a, "disk-a", false).unwrap());
        assert_eq!(
            refusal(s.check_rejoin(&b, "disk-a", false).unwrap_err()),
            Refusal::DiskTaken { disk: "disk-a".into() }
        );
        assert_eq!(
            refusal(s.check_rejoin(&b, "disk-x", false).unwrap_err()),
            Refusal::DiskUnknown { disk: "disk-x".into() }
        );
        assert!(s.check_rejoin(&b, "disk-x", true).unwrap());
        assert!(!s.check_rejoin(&b, "disk-x", false).unwrap());
        // A machine-wide identity hosts several VMs with their own names.
        let p = platform(7);
        s.admit_join(&claim(&p, "td-1", "disk-p1", false), &[]).unwrap();
        s.admit_join(&claim(&p, "td-2", "disk-p2", false), &[]).unwrap();
        assert_eq!(s.nodes().iter().find(|n| n.identity == p).unwrap().names, ["td-1", "td-2"]);
    }

    #[test]
    fn the_control_plane_needs_a_member_or_an_unused_admission_for_this_identity_and_name() {
        let s = ClusterState::in_memory();
        let (a, b) = (id(1), id(2));
        assert_eq!(
            refusal(s.admit_join(&claim(&a, "cp-2", "d1", true), &[]).unwrap_err()),
            Refusal::ControlPlaneNotAuthorized
        );
        let admission = |identity: &NodeIdentity, name: &str, n: &str| Admission {
            id: n.to_owned(),
            identity: identity.clone(),
            node_name: name.to_owned(),
            expires: attest_engine::UnixTime::from_secs(u64::MAX / 2),
        };
        // An admission for another node or another name does not do.
        let others = [admission(&b, "cp-2", "01"), admission(&a, "cp-3", "02")];
        assert_eq!(
            refusal(s.admit_join(&claim(&a, "cp-2", "d1", true), &others).unwrap_err()),
            Refusal::ControlPlaneNotAuthorized
        );
        let mine = [admission(&a, "cp-2", "03")];
        let granted = s.admit_join(&claim(&a, "cp-2", "d1", true), &mine).unwrap();
        assert_eq!(granted.admission.as_deref(), Some("03"));
        // A member needs none the next time; the used admission is no good for anyone else.
        assert_eq!(s.admit_join(&claim(&a, "cp-2", "d2", true), &[]).unwrap().admission, None);
        let reused = [admission(&b, "cp-4", "03")];
        assert_eq!(
            refusal(s.admit_join(&claim(&b, "cp-4", "d3", true), &reused).unwrap_err()),
            Refusal::ControlPlaneNotAuthorized
        );
    }

    #[test]
    fn the_file_round_trips_and_a_failed_write_changes_nothing() {
        let dir = std::env::temp_dir().join(format!("attest-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cluster-state.json");
        let _ = std::fs::remove_file(&path);
        let init =
            NodeRecord { identity: id(1), names: vec!["node-1".into()], disks: vec!["d1".into()], control_plane: true };
        let s = ClusterState::create(&path, Some(init.clone()), 3).unwrap();
        assert!(matches!(ClusterState::create(&path, Some(init), 3), Err(StateError::Exists { .. })));
        s.admit_join(&claim(&id(2), "node-2", "d2", false), &[]).unwrap();
        assert!(s.raise_measurements_floor(5).unwrap());
        assert!(!s.raise_measurements_floor(4).unwrap());
        let again = ClusterState::open(&path).unwrap();
        assert_eq!(again.measurements_floor(), 5);
        assert_eq!(again.nodes(), s.nodes());
        // The init node's name is taken for everyone else.
        assert!(again.admit_join(&claim(&id(3), "node-1", "d3", false), &[]).is_err());
        // A write that fails (the file's path is now a non-empty directory) leaves the state as it was.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(path.join("occupied")).unwrap();
        assert!(matches!(again.admit_join(&claim(&id(4), "node-4", "d4", false), &[]), Err(StateError::Io { .. })));
        assert!(again.nodes().iter().all(|n| n.identity != id(4)));
        assert_eq!(again.measurements_floor(), 5);
        assert!(again.raise_measurements_floor(9).is_err());
        assert_eq!(again.measurements_floor(), 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_files_are_refused() {
        let p = Path::new("x.json");
        for bad in [
            "",
            "[]",
            r#"{"version": 2}"#,
            r#"{"version": 1, "extra": 1}"#,
            r#"{"version": 1, "nodes": [{"identity": "bogus"}]}"#,
            r#"{"version": 1, "nodes": [{"identity": "ak:ab", "names": [""]}]}"#,
            r#"{"version": 1, "measurementsVersion": -1}"#,
        ] {
            assert!(parse(p, bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse(p, br#"{"version": 1}"#).unwrap(), State::default());
    }
}
