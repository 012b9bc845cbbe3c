//! The node lock: the one-way switch that decides whether this node initializes a cluster or joins one.
//!
//! ```text
//!                 try_lock(Init | Join, cluster id)        (first caller only; the lock register extended)
//!   ┌──────────┐ ───────────────────────────────────────▶ ┌────────┐
//!   │ Unlocked │                                          │ Locked │ ──▶ every later try_lock: AlreadyLocked
//!   └──────────┘ ◀─ ─ ─ ─ ─ ─ ─ (no transition) ─ ─ ─ ─ ─ └────────┘
//!        ▲                                                    ▲
//!        └── open(): register = 0 ────── start-up ──── open(): register ≠ 0 (bootstrapped before a restart)
//! ```
//!
//! # In process
//!
//! The init server and the join client run in parallel and race for the lock. The state sits behind one
//! mutex, held across the register extend: the first caller sees `Unlocked`, extends, and leaves `Locked`;
//! every other caller waits for the mutex and then sees `Locked`. There is no window where two callers both
//! pass, and no unlock operation exists.
//!
//! # Across restarts (the lock register)
//!
//! Taking the lock extends the variant's lock register ([`LockRegister`], a column of the variant table)
//! with the cluster id: the vTPM's SHA-256 PCR 15 with the 32-byte id wherever the variant has a vTPM, a TD's
//! RTMR3 with SHA-384(id) where it has none (`qemu-tdx`). Such registers reset only with the machine (a TD's
//! RTMRs when the TD is rebuilt), so a bootstrapper restarted on the same boot finds the register ≠ 0 and
//! opens the lock already locked; and because the register is part of every attestation, a verifier can
//! tell a bootstrapped node from a fresh one and which cluster it belongs to (after one extend from zero, the
//! register holds [`LockRegister::bound`]: SHA-256(0³² ‖ cluster id) for PCR 15, see [`expected_pcr_value`]).
//! A reboot resets the register; re-establishing the node after a reboot (the rejoin path) is the job of the
//! node's disk set-up, not of this lock.
//!
//! # The intent marker
//!
//! A node stopped (killed, or its bootstrapper crashed) right after the extend has its lock register (PCR 15,
//! or RTMR3 on a TD) set and no node state yet: it cannot join again in this boot (the join measurements
//! require the register unbound) and has no key
//! to continue with. To tell that case from a register extended by something else, the lock first writes the
//! cluster id it is about to extend with to [`LOCK_INTENT_FILE`] in the runtime directory
//! ([`NodeLock::with_intent_dir`]: a tmpfs, so the marker lives exactly as long as the PCR value it
//! explains). At the next start in the same boot, the register bound to the marker's cluster id
//! ([`LockRegister::bound`]) with no state is an *interrupted* bootstrap ([`NodeLock::interrupted_lock`]): the node is marked for reset and
//! rebooted, which clears the register, and it starts fresh. A start with the register unbound removes a
//! stale marker.
//!
//! If the extend itself fails, the hardware may or may not have executed it. The lock then stays `Locked`
//! anyway (never back to unlocked: a second extend could leave the register at a value no verifier expects)
//! and the caller gets [`LockError::Pcr`]: the node refuses every later attempt and needs operator attention.
//!
//! The register is reached through the [`PcrBackend`] trait (named for PCR 15, the register of every variant
//! with a vTPM): [`MemoryPcr`] for tests, and the hardware for real — a [`Tpm`] of its own or, since a TPM
//! without a resource manager (swtpm) serves one connection at a time, the one inside the node's issuer
//! ([`QemuVtpmIssuer`], [`NodeIssuer`]); a TD's RTMR through the issuer's TDX guest
//! ([`NodeIssuer::tdx_guest`]: extended through the kernel's RTMR interface, read back from the TD report).

use std::sync::Mutex;

use tokio::sync::watch;

use attest_attester::issuer::{NodeIssuer, QemuVtpmIssuer};
use attest_attester::tpm::{PcrMask, Tpm};
use attest_engine::crypto::{Digest, default_provider};
use attest_engine::variant::LockRegister;

/// The PCR the lock extends on every variant with a vTPM (SHA-256 bank).
pub const BOOTSTRAP_PCR: u8 = 15;
/// The lock's intent marker in the runtime directory (module docs, "The intent marker").
pub const LOCK_INTENT_FILE: &str = "lock-intent";

/// Who took the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockHolder {
    /// The init server (this node initializes a new cluster).
    Init,
    /// The join client (this node joins an existing cluster).
    Join,
    /// A bootstrapped node after a reboot, re-establishing its lock (rejoin ticket or recovery).
    Rejoin,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LockHolder::Init => "init",
            LockHolder::Join => "join",
            LockHolder::Rejoin => "rejoin",
        })
    }
}

/// Why the lock register could not be read or extended.
#[derive(Debug)]
pub enum PcrError {
    /// The TPM command failed.
    Tpm(attest_attester::tpm::Error),
    /// The hardware did not return a value of the register's size.
    Missing,
    /// The intent marker could not be written (nothing was extended).
    Intent(attest_util::fs::FileError),
    /// The lock register is a PCR, and the node's variant has no vTPM.
    NoVtpm(attest_attester::issuer::HwIssuerError),
    /// The lock register is an RTMR: the TDX guest could not read (TD report) or extend it, or the node's
    /// issuer has no TDX guest.
    Td(attest_attester::issuer::HwIssuerError),
}

impl std::fmt::Display for PcrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PcrError::Tpm(e) => write!(f, "PCR {BOOTSTRAP_PCR}: {e}"),
            PcrError::Missing => f.write_str("the hardware returned no value of the lock register's size"),
            PcrError::Intent(e) => write!(f, "writing the lock's intent marker (the lock register not extended): {e}"),
            PcrError::NoVtpm(e) => write!(f, "PCR {BOOTSTRAP_PCR}: {e}"),
            PcrError::Td(e) => write!(f, "the TD's lock RTMR: {e}"),
        }
    }
}

impl std::error::Error for PcrError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PcrError::Tpm(e) => Some(e),
            PcrError::Intent(e) => Some(e),
            PcrError::NoVtpm(e) | PcrError::Td(e) => Some(e),
            PcrError::Missing => None,
        }
    }
}

/// Why the lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// The lock is already taken: by `holder` in this process, or (`None`) before this process started.
    AlreadyLocked {
        /// Who took it, if it was this process.
        holder: Option<LockHolder>,
    },
    /// The lock register could not be read or extended. The lock is locked regardless (see the module docs).
    Pcr(PcrError),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::AlreadyLocked { holder: Some(h) } => write!(f, "node lock already taken by the {h} path"),
            LockError::AlreadyLocked { holder: None } => {
                write!(f, "node lock already taken before this start (the lock register is not zero)")
            }
            LockError::Pcr(e) => write!(f, "taking the node lock: {e}"),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Pcr(e) => Some(e),
            LockError::AlreadyLocked { .. } => None,
        }
    }
}

/// Why [`NodeLock::relock`] refused.
#[derive(Debug)]
pub enum RelockError {
    /// The lock register could not be read or extended.
    Pcr(PcrError),
    /// The lock register holds neither zero nor this cluster's value: something else extended it since the
    /// reboot.
    Foreign {
        /// The register.
        register: LockRegister,
        /// Its value now.
        pcr: Box<Digest>,
        /// Its value on a node of this cluster ([`LockRegister::bound`]).
        expected: Box<Digest>,
    },
}

impl std::fmt::Display for RelockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelockError::Pcr(e) => write!(f, "re-extending the lock register: {e}"),
            RelockError::Foreign { register, pcr, expected } => write!(
                f,
                "{register} is {} after the reboot, neither zero nor this cluster's {}: refusing to extend it",
                hex::encode(pcr.as_bytes()),
                hex::encode(expected.as_bytes())
            ),
        }
    }
}

impl std::error::Error for RelockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Pcr(e) => Some(e),
            Self::Foreign { .. } => None,
        }
    }
}

/// Read and extend access to the node lock's register ([`PcrBackend::register`]: the vTPM's SHA-256 PCR 15,
/// or a TD's RTMR3). Calls may block (a TPM command, a TD report).
pub trait PcrBackend: Send + Sync + std::fmt::Debug {
    /// The register (its variant's [`LockRegister`]).
    fn register(&self) -> LockRegister {
        LockRegister::Pcr(BOOTSTRAP_PCR)
    }
    /// The register's current value (of the register's size).
    fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError>;
    /// Extends the register with `digest` (of the register's size).
    fn extend_bootstrap_pcr(&self, digest: &Digest) -> Result<(), PcrError>;
}

fn read_on(tpm: &mut Tpm, index: u8) -> Result<Digest, PcrError> {
    let mask = PcrMask::from_indices(&[index]).map_err(PcrError::Tpm)?;
    let pcrs = tpm.read_pcrs(mask).map_err(PcrError::Tpm)?;
    pcrs.get(index).map(|v| Digest::new(v)).ok_or(PcrError::Missing)
}

fn extend_on(tpm: &mut Tpm, index: u8, digest: &Digest) -> Result<(), PcrError> {
    let digest = <[u8; 32]>::try_from(digest.as_bytes()).map_err(|_| PcrError::Missing)?;
    tpm.extend_pcr(index, &digest).map_err(PcrError::Tpm)
}

/// The TPM inside the node's issuer (the connection the aTLS quotes use).
impl PcrBackend for QemuVtpmIssuer {
    fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError> {
        self.with_tpm(|tpm, _| read_on(tpm, BOOTSTRAP_PCR))
    }

    fn extend_bootstrap_pcr(&self, digest: &Digest) -> Result<(), PcrError> {
        self.with_tpm(|tpm, _| extend_on(tpm, BOOTSTRAP_PCR, digest))
    }
}

/// The lock register of the node's variant (its row of the variant table), through the node's issuer: a PCR
/// of the TPM the quotes come from, or an RTMR of the TDX guest (extended through the kernel, read back from
/// the TD report).
impl PcrBackend for NodeIssuer {
    fn register(&self) -> LockRegister {
        self.variant().info().lock
    }

    fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError> {
        match self.register() {
            LockRegister::Pcr(i) => self.with_tpm(|tpm| read_on(tpm, i)).map_err(PcrError::NoVtpm)?,
            LockRegister::Rtmr(i) => {
                let rtmrs = self.tdx_guest().ok_or_else(no_td_guest)?.rtmrs().map_err(PcrError::Td)?;
                rtmrs.get(usize::from(i)).map(|v| Digest::new(v)).ok_or(PcrError::Missing)
            }
        }
    }

    fn extend_bootstrap_pcr(&self, digest: &Digest) -> Result<(), PcrError> {
        match self.register() {
            LockRegister::Pcr(i) => self.with_tpm(|tpm| extend_on(tpm, i, digest)).map_err(PcrError::NoVtpm)?,
            LockRegister::Rtmr(i) => {
                let digest = <[u8; 48]>::try_from(digest.as_bytes()).map_err(|_| PcrError::Missing)?;
                self.tdx_guest().ok_or_else(no_td_guest)?.extend_rtmr(i, &digest).map_err(PcrError::Td)
            }
        }
    }
}

fn no_td_guest() -> PcrError {
    PcrError::Td(attest_attester::issuer::HwIssuerError::DeviceNotPresent { device: "the TDX guest of the node lock" })
}

/// A TPM connection of its own.
impl PcrBackend for Mutex<Tpm> {
    fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError> {
        read_on(&mut self.lock().unwrap_or_else(std::sync::PoisonError::into_inner), BOOTSTRAP_PCR)
    }

    fn extend_bootstrap_pcr(&self, digest: &Digest) -> Result<(), PcrError> {
        extend_on(&mut self.lock().unwrap_or_else(std::sync::PoisonError::into_inner), BOOTSTRAP_PCR, digest)
    }
}

/// An in-memory lock register with the hardware's extend semantics (new = hash(old ‖ digest)), for tests:
/// PCR 15 by default, any [`LockRegister`] with [`MemoryPcr::of`].
#[derive(Debug)]
pub struct MemoryPcr {
    register: LockRegister,
    value: Mutex<Digest>,
    extends: std::sync::atomic::AtomicUsize,
}

impl Default for MemoryPcr {
    fn default() -> Self {
        Self::of(LockRegister::Pcr(BOOTSTRAP_PCR))
    }
}

impl MemoryPcr {
    /// PCR 15 holding zero (a fresh boot).
    pub fn new() -> MemoryPcr {
        MemoryPcr::default()
    }

    /// `register` holding zero (a fresh boot).
    pub fn of(register: LockRegister) -> MemoryPcr {
        MemoryPcr { register, value: Mutex::new(register.unbound()), extends: std::sync::atomic::AtomicUsize::new(0) }
    }

    /// How many times the register was extended.
    pub fn extend_count(&self) -> usize {
        self.extends.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl PcrBackend for MemoryPcr {
    fn register(&self) -> LockRegister {
        self.register
    }

    fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError> {
        Ok(*self.value.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn extend_bootstrap_pcr(&self, digest: &Digest) -> Result<(), PcrError> {
        if digest.as_bytes().len() != self.register.size() {
            return Err(PcrError::Missing);
        }
        let mut v = self.value.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *v = self.register.extend(default_provider(), &v, digest);
        self.extends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// PCR 15 after exactly one lock on a fresh boot: SHA-256(0³² ‖ cluster id) (the vTPM variants'
/// [`LockRegister::bound`]).
pub fn expected_pcr_value(cluster_id: &[u8; 32]) -> [u8; 32] {
    let mut h = openssl::sha::Sha256::new();
    h.update(&[0; 32]);
    h.update(cluster_id);
    h.finish()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Unlocked,
    Locked(Option<LockHolder>),
}

/// The node lock. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct NodeLock {
    backend: std::sync::Arc<dyn PcrBackend>,
    state: Mutex<State>,
    /// `true` once locked; watchers (the join client's back-off sleep) wake up on the change.
    locked: watch::Sender<bool>,
    /// The lock register as found by [`NodeLock::open`].
    initial_pcr: Digest,
    /// Where the intent marker is written (`None`: not kept).
    intent_dir: Option<std::path::PathBuf>,
}

impl NodeLock {
    /// Opens the lock on `backend`: locked already if its register is not zero.
    pub fn open(backend: std::sync::Arc<dyn PcrBackend>) -> Result<NodeLock, PcrError> {
        let initial_pcr = backend.read_bootstrap_pcr()?;
        if initial_pcr.as_bytes().len() != backend.register().size() {
            return Err(PcrError::Missing);
        }
        let locked = initial_pcr != backend.register().unbound();
        Ok(NodeLock {
            backend,
            state: Mutex::new(if locked { State::Locked(None) } else { State::Unlocked }),
            locked: watch::Sender::new(locked),
            initial_pcr,
            intent_dir: None,
        })
    }

    /// Keeps the intent marker in `dir` (the runtime directory: a tmpfs). Opened on an unbound register, a marker
    /// left there is stale (the extend never happened) and removed.
    pub fn with_intent_dir(mut self, dir: &std::path::Path) -> NodeLock {
        if self.initial_pcr == self.backend.register().unbound() {
            let _ = std::fs::remove_file(dir.join(LOCK_INTENT_FILE));
        }
        self.intent_dir = Some(dir.to_owned());
        self
    }

    /// The cluster id of a lock interrupted before its node state was written: the register at open is bound
    /// to the cluster id the intent marker names. `None` without a marker or when the register holds
    /// anything else.
    pub fn interrupted_lock(&self) -> Option<[u8; 32]> {
        let text = std::fs::read_to_string(self.intent_dir.as_ref()?.join(LOCK_INTENT_FILE)).ok()?;
        let mut cluster_id = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut cluster_id).ok()?;
        (self.backend.register().bound(default_provider(), &cluster_id) == self.initial_pcr).then_some(cluster_id)
    }

    /// Writes the intent marker for `cluster_id` (when kept); a failure to write it stops the lock (the
    /// extend that follows must be explainable after a crash).
    fn write_intent(&self, cluster_id: &[u8; 32]) -> Result<(), PcrError> {
        if let Some(dir) = &self.intent_dir {
            attest_util::fs::write_atomic(
                &dir.join(LOCK_INTENT_FILE),
                format!("{}\n", hex::encode(cluster_id)).as_bytes(),
                attest_util::fs::SECRET_FILE_MODE,
            )
            .map_err(PcrError::Intent)?;
            attest_util::fault::point("lock.intent-written");
        }
        Ok(())
    }

    /// The lock register as it was when the lock was opened.
    pub fn initial_pcr(&self) -> Digest {
        self.initial_pcr
    }

    /// The lock register (the variant's [`LockRegister`]).
    pub fn register(&self) -> LockRegister {
        self.backend.register()
    }

    /// Whether the lock is taken (now or before this process started).
    pub fn is_locked(&self) -> bool {
        *self.locked.borrow()
    }

    /// Who took the lock in this process (`None` if unlocked, or locked before this start).
    pub fn holder(&self) -> Option<LockHolder> {
        match *self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            State::Locked(h) => h,
            State::Unlocked => None,
        }
    }

    /// A receiver that sees `true` once the lock is taken.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.locked.subscribe()
    }

    /// Takes the lock for `holder` and extends the lock register with `cluster_id`
    /// ([`LockRegister::extend_digest`]). Exactly one caller ever succeeds; the others get
    /// [`LockError::AlreadyLocked`]. Blocks for the hardware: call it from a blocking thread in async code.
    pub fn try_lock(&self, holder: LockHolder, cluster_id: &[u8; 32]) -> Result<(), LockError> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let State::Locked(h) = *state {
            return Err(LockError::AlreadyLocked { holder: h });
        }
        *state = State::Locked(Some(holder));
        self.locked.send_replace(true);
        // Still under the mutex: nobody observes `Locked` before the extend has been attempted.
        let digest = self.backend.register().extend_digest(default_provider(), cluster_id);
        let extended = self.write_intent(cluster_id).and_then(|()| self.backend.extend_bootstrap_pcr(&digest));
        drop(state);
        extended.map_err(LockError::Pcr)?;
        attest_util::fault::point("lock.extended");
        Ok(())
    }
}

impl NodeLock {
    /// What [`NodeLock::relock`] would find, without changing anything: `Ok(true)` when the lock register is
    /// unbound (it would extend), `Ok(false)` when it already holds this cluster's value,
    /// [`RelockError::Foreign`] else.
    pub fn check_relock(&self, cluster_id: &[u8; 32]) -> Result<bool, RelockError> {
        let register = self.backend.register();
        let pcr = self.backend.read_bootstrap_pcr().map_err(RelockError::Pcr)?;
        let expected = register.bound(default_provider(), cluster_id);
        if pcr == expected {
            Ok(false)
        } else if pcr == register.unbound() {
            Ok(true)
        } else {
            Err(RelockError::Foreign { register, pcr: Box::new(pcr), expected: Box::new(expected) })
        }
    }

    /// Re-establishes the lock of a bootstrapped node after a reboot (rejoin, recovery): reads the lock
    /// register *now* and extends it with `cluster_id` where it is zero (the machine was reset), accepts it
    /// where it already is this cluster's ([`LockRegister::bound`]), and refuses anything else. The lock is
    /// `Locked(holder)` afterwards, whatever the outcome (a refused node must not init or join either).
    /// Returns whether the register was extended.
    pub fn relock(&self, holder: LockHolder, cluster_id: &[u8; 32]) -> Result<bool, RelockError> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *state = State::Locked(Some(holder));
        self.locked.send_replace(true);
        let register = self.backend.register();
        let pcr = self.backend.read_bootstrap_pcr().map_err(RelockError::Pcr)?;
        let expected = register.bound(default_provider(), cluster_id);
        if pcr == expected {
            return Ok(false);
        }
        if pcr != register.unbound() {
            return Err(RelockError::Foreign { register, pcr: Box::new(pcr), expected: Box::new(expected) });
        }
        let digest = register.extend_digest(default_provider(), cluster_id);
        self.backend.extend_bootstrap_pcr(&digest).map_err(RelockError::Pcr)?;
        drop(state);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relock_extends_a_reset_pcr_accepts_its_own_and_refuses_a_foreign_one() {
        let pcr = Arc::new(MemoryPcr::new());
        let lock = NodeLock::open(pcr.clone()).unwrap();
        assert!(lock.relock(LockHolder::Rejoin, &[3; 32]).unwrap(), "PCR 15 = 0: extended");
        assert_eq!(pcr.read_bootstrap_pcr().unwrap().as_bytes(), expected_pcr_value(&[3; 32]));
        assert!(lock.is_locked() && lock.holder() == Some(LockHolder::Rejoin));
        assert!(!lock.relock(LockHolder::Rejoin, &[3; 32]).unwrap(), "already this cluster's: unchanged");
        assert_eq!(pcr.extend_count(), 1);
        match lock.relock(LockHolder::Rejoin, &[4; 32]) {
            Err(RelockError::Foreign { register, pcr: found, expected }) => {
                assert_eq!(register, LockRegister::Pcr(15));
                assert_eq!(found.as_bytes(), expected_pcr_value(&[3; 32]));
                assert_eq!(expected.as_bytes(), expected_pcr_value(&[4; 32]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pcr.extend_count(), 1, "a foreign PCR 15 is never extended");
        assert!(matches!(lock.try_lock(LockHolder::Init, &[3; 32]), Err(LockError::AlreadyLocked { .. })));
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A TD's RTMR3 (no vTPM): the same one-way lock, extended with SHA-384(cluster id); a restart finds it
    /// bound, a reboot (fresh register) relocks it, another cluster's value is refused.
    #[test]
    fn an_rtmr_lock_binds_sha384_of_the_cluster_id() {
        let rtmr3 = LockRegister::Rtmr(3);
        let td = Arc::new(MemoryPcr::of(rtmr3));
        let lock = NodeLock::open(td.clone()).unwrap();
        assert!(!lock.is_locked());
        assert_eq!(lock.register(), rtmr3);
        lock.try_lock(LockHolder::Join, &[5; 32]).unwrap();
        let bound = td.read_bootstrap_pcr().unwrap();
        assert_eq!(bound, rtmr3.bound(default_provider(), &[5; 32]));
        assert_eq!(bound.as_bytes().len(), 48);
        assert!(NodeLock::open(td.clone()).unwrap().is_locked(), "a restart in the same boot: locked");

        let rebooted = Arc::new(MemoryPcr::of(rtmr3));
        let lock = NodeLock::open(rebooted.clone()).unwrap();
        assert!(lock.relock(LockHolder::Rejoin, &[5; 32]).unwrap());
        assert_eq!(rebooted.read_bootstrap_pcr().unwrap(), bound);
        match lock.relock(LockHolder::Rejoin, &[6; 32]) {
            Err(e @ RelockError::Foreign { .. }) => assert!(e.to_string().starts_with("RTMR3 is "), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(rebooted.extend_count(), 1);
        assert!(matches!(td.extend_bootstrap_pcr(&Digest::new(&[1; 32])), Err(PcrError::Missing)));
    }

    #[test]
    fn one_way_and_extends_once() {
        let pcr = Arc::new(MemoryPcr::new());
        let lock = NodeLock::open(pcr.clone()).unwrap();
        assert!(!lock.is_locked());
        lock.try_lock(LockHolder::Init, &[7; 32]).unwrap();
        assert!(lock.is_locked());
        assert_eq!(lock.holder(), Some(LockHolder::Init));
        assert!(matches!(
            lock.try_lock(LockHolder::Join, &[8; 32]),
            Err(LockError::AlreadyLocked { holder: Some(LockHolder::Init) })
        ));
        assert!(matches!(lock.try_lock(LockHolder::Init, &[7; 32]), Err(LockError::AlreadyLocked { .. })));
        assert_eq!(pcr.extend_count(), 1);
        assert_eq!(pcr.read_bootstrap_pcr().unwrap().as_bytes(), expected_pcr_value(&[7; 32]));
        // A restart on the same "boot": the PCR says bootstrapped.
        let again = NodeLock::open(pcr.clone()).unwrap();
        assert!(again.is_locked());
        assert!(matches!(again.try_lock(LockHolder::Join, &[7; 32]), Err(LockError::AlreadyLocked { holder: None })));
        assert_eq!(pcr.extend_count(), 1);
    }

    /// Init and join racing: 1000 attempts in total (500 rounds of one init thread against one join thread,
    /// each round on a fresh lock, both released by a barrier), plus 1000 threads on one lock. Exactly one
    /// winner per lock, the PCR extended exactly once, every loser told `AlreadyLocked`.
    #[test]
    fn init_and_join_race_exactly_one_wins() {
        const ROUNDS: usize = 500;
        let mut wins = [0usize; 2];
        for _ in 0..ROUNDS {
            let pcr = Arc::new(MemoryPcr::new());
            let lock = Arc::new(NodeLock::open(pcr.clone()).unwrap());
            let barrier = Arc::new(std::sync::Barrier::new(2));
            let results: Vec<_> = [LockHolder::Init, LockHolder::Join]
                .into_iter()
                .map(|holder| {
                    let (lock, barrier) = (lock.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        (holder, lock.try_lock(holder, &[holder as u8 + 1; 32]))
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            let winners: Vec<_> = results.iter().filter(|(_, r)| r.is_ok()).map(|(h, _)| *h).collect();
            assert_eq!(winners.len(), 1, "{results:?}");
            let loser = results.iter().find(|(_, r)| r.is_err()).unwrap();
            assert!(
                matches!(loser.1, Err(LockError::AlreadyLocked { holder: Some(h) }) if h == winners[0]),
                "{results:?}"
            );
            assert_eq!(pcr.extend_count(), 1);
            assert_eq!(lock.holder(), Some(winners[0]));
            wins[winners[0] as usize] += 1;
        }
        assert_eq!(wins[0] + wins[1], ROUNDS);

        // 1000 contenders on one lock.
        let pcr = Arc::new(MemoryPcr::new());
        let lock = Arc::new(NodeLock::open(pcr.clone()).unwrap());
        let won = Arc::new(AtomicUsize::new(0));
        let already = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..1000)
            .map(|i| {
                let (lock, won, already) = (lock.clone(), won.clone(), already.clone());
                std::thread::spawn(move || {
                    let holder = if i % 2 == 0 { LockHolder::Init } else { LockHolder::Join };
                    match lock.try_lock(holder, &[1; 32]) {
                        Ok(()) => won.fetch_add(1, Ordering::SeqCst),
                        Err(LockError::AlreadyLocked { .. }) => already.fetch_add(1, Ordering::SeqCst),
                        Err(e) => panic!("{e}"),
                    };
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(won.load(Ordering::SeqCst), 1);
        assert_eq!(already.load(Ordering::SeqCst), 999);
        assert_eq!(pcr.extend_count(), 1);
    }

    #[test]
    fn the_intent_marker_explains_an_interrupted_lock_and_nothing_else() {
        for register in [LockRegister::Pcr(15), LockRegister::Rtmr(3)] {
            let tmp = attest_test_support::TempDir::new("lock-intent");
            let pcr = Arc::new(MemoryPcr::of(register));
            let lock = NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path());
            lock.try_lock(LockHolder::Join, &[5; 32]).unwrap();
            // "Crash", restart in the same boot: the register and the marker agree.
            let again = NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path());
            assert_eq!(again.interrupted_lock(), Some([5; 32]), "{register}");
            // Without the marker (another boot's runtime directory), or with the register at another value: no.
            assert_eq!(NodeLock::open(pcr.clone()).unwrap().interrupted_lock(), None);
            pcr.extend_bootstrap_pcr(&Digest::new(&vec![1; register.size()])).unwrap();
            assert_eq!(NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path()).interrupted_lock(), None);
            // A fresh boot (the register unbound) removes the stale marker.
            let fresh = NodeLock::open(Arc::new(MemoryPcr::of(register))).unwrap().with_intent_dir(tmp.path());
            assert_eq!(fresh.interrupted_lock(), None);
            assert!(!tmp.path().join(LOCK_INTENT_FILE).exists(), "{register}");
        }
    }

    #[derive(Debug)]
    struct FailingPcr;
    impl PcrBackend for FailingPcr {
        fn read_bootstrap_pcr(&self) -> Result<Digest, PcrError> {
            Ok(LockRegister::Pcr(15).unbound())
        }
        fn extend_bootstrap_pcr(&self, _: &Digest) -> Result<(), PcrError> {
            Err(PcrError::Missing)
        }
    }

    #[test]
    fn a_failed_extend_still_locks() {
        let lock = NodeLock::open(Arc::new(FailingPcr)).unwrap();
        assert!(matches!(lock.try_lock(LockHolder::Init, &[1; 32]), Err(LockError::Pcr(_))));
        assert!(lock.is_locked());
        assert!(matches!(lock.try_lock(LockHolder::Join, &[1; 32]), Err(LockError::AlreadyLocked { .. })));
    }
}
