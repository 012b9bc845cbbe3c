//! The node lock: the one-way switch that decides whether this node initializes a cluster or joins one.
//!
//! ```text
//!                 try_lock(Init | Join, cluster id)        (first caller only; PCR 15 extended)
//!   ┌──────────┐ ───────────────────────────────────────▶ ┌────────┐
//!   │ Unlocked │                                          │ Locked │ ──▶ every later try_lock: AlreadyLocked
//!   └──────────┘ ◀─ ─ ─ ─ ─ ─ ─ (no transition) ─ ─ ─ ─ ─ └────────┘
//!        ▲                                                    ▲
//!        └── open(): PCR 15 = 0 ──────── start-up ──── open(): PCR 15 ≠ 0 (bootstrapped before a restart)
//! ```
//!
//! # In process
//!
//! The init server and the join client run in parallel and race for the lock. The state sits behind one
//! mutex, held across the PCR extend: the first caller sees `Unlocked`, extends, and leaves `Locked`; every
//! other caller waits for the mutex and then sees `Locked`. There is no window where two callers both pass,
//! and no unlock operation exists.
//!
//! # Across restarts (the TPM)
//!
//! Taking the lock extends SHA-256 PCR 15 with the 32-byte cluster id. PCRs reset only with the platform, so
//! a bootstrapper restarted on the same boot finds PCR 15 ≠ 0 and opens the lock already locked; and because
//! PCR 15 is quoted in every attestation, a verifier can tell a bootstrapped node from a fresh one and which
//! cluster it belongs to (after one extend from zero, PCR 15 = SHA-256(0³² ‖ cluster id), see
//! [`expected_pcr_value`]). A reboot resets PCR 15; re-establishing the node after a reboot (the rejoin path)
//! is the job of the node's disk set-up, not of this lock.
//!
//! # The intent marker
//!
//! A node stopped (killed, or its bootstrapper crashed) right after the extend has PCR 15 set and no node
//! state yet: it cannot join again in this boot (the join measurements require PCR 15 = 0) and has no key
//! to continue with. To tell that case from a PCR 15 extended by something else, the lock first writes the
//! cluster id it is about to extend with to [`LOCK_INTENT_FILE`] in the runtime directory
//! ([`NodeLock::with_intent_dir`]: a tmpfs, so the marker lives exactly as long as the PCR value it
//! explains). At the next start in the same boot, PCR 15 = SHA-256(0³² ‖ the marker's cluster id) with no
//! state is an *interrupted* bootstrap ([`NodeLock::interrupted_lock`]): the node is marked for reset and
//! rebooted, which clears PCR 15, and it starts fresh. A start with PCR 15 = 0 removes a stale marker.
//!
//! If the extend itself fails, the TPM may or may not have executed it. The lock then stays `Locked` anyway
//! (never back to unlocked: a second extend could leave PCR 15 at a value no verifier expects) and the caller
//! gets [`LockError::Pcr`]: the node refuses every later attempt and needs operator attention.
//!
//! The PCR is reached through the [`PcrBackend`] trait: [`MemoryPcr`] for tests, and the TPM for real — either
//! a [`Tpm`] of its own or, since a TPM without a resource manager (swtpm) serves one connection at a time, the
//! one inside the node's [`QemuVtpmIssuer`].

use std::sync::Mutex;

use tokio::sync::watch;

use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::tpm::{PcrMask, Tpm};

/// The PCR the lock extends (SHA-256 bank).
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

/// Why the PCR could not be read or extended.
#[derive(Debug)]
pub enum PcrError {
    /// The TPM command failed.
    Tpm(attest_attester::tpm::Error),
    /// The TPM did not return the SHA-256 value of PCR 15.
    Missing,
    /// The intent marker could not be written (nothing was extended).
    Intent(attest_util::fs::FileError),
    /// The node's variant has no vTPM (`qemu-tdx`).
    NoVtpm(attest_attester::issuer::HwIssuerError),
}

impl std::fmt::Display for PcrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PcrError::Tpm(e) => write!(f, "PCR {BOOTSTRAP_PCR}: {e}"),
            PcrError::Missing => write!(f, "the TPM returned no SHA-256 value for PCR {BOOTSTRAP_PCR}"),
            PcrError::Intent(e) => {
                write!(f, "writing the lock's intent marker (PCR {BOOTSTRAP_PCR} not extended): {e}")
            }
            PcrError::NoVtpm(e) => write!(f, "PCR {BOOTSTRAP_PCR}: {e}"),
        }
    }
}

impl std::error::Error for PcrError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PcrError::Tpm(e) => Some(e),
            PcrError::Intent(e) => Some(e),
            PcrError::NoVtpm(e) => Some(e),
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
    /// The PCR could not be read or extended. The lock is locked regardless (see the module docs).
    Pcr(PcrError),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::AlreadyLocked { holder: Some(h) } => write!(f, "node lock already taken by the {h} path"),
            LockError::AlreadyLocked { holder: None } => {
                write!(f, "node lock already taken before this start (PCR {BOOTSTRAP_PCR} is not zero)")
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
    /// PCR 15 could not be read or extended.
    Pcr(PcrError),
    /// PCR 15 holds neither zero nor this cluster's value: something else extended it since the reboot.
    Foreign {
        /// PCR 15 now.
        pcr: [u8; 32],
        /// SHA-256(0³² ‖ cluster id).
        expected: [u8; 32],
    },
}

impl std::fmt::Display for RelockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelockError::Pcr(e) => write!(f, "re-extending PCR {BOOTSTRAP_PCR}: {e}"),
            RelockError::Foreign { pcr, expected } => write!(
                f,
                "PCR {BOOTSTRAP_PCR} is {} after the reboot, neither zero nor this cluster's {}: refusing to extend it",
                hex::encode(pcr),
                hex::encode(expected)
            ),
        }
    }
}

impl std::error::Error for RelockError {}

/// Read and extend access to SHA-256 PCR 15. Calls may block (a TPM command).
pub trait PcrBackend: Send + Sync + std::fmt::Debug {
    /// The current value of PCR 15.
    fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError>;
    /// Extends PCR 15 with `digest`.
    fn extend_bootstrap_pcr(&self, digest: &[u8; 32]) -> Result<(), PcrError>;
}

fn read_on(tpm: &mut Tpm) -> Result<[u8; 32], PcrError> {
    let mask = PcrMask::from_indices(&[BOOTSTRAP_PCR]).map_err(PcrError::Tpm)?;
    let pcrs = tpm.read_pcrs(mask).map_err(PcrError::Tpm)?;
    pcrs.get(BOOTSTRAP_PCR).copied().ok_or(PcrError::Missing)
}

/// The TPM inside the node's issuer (the connection the aTLS quotes use).
impl PcrBackend for QemuVtpmIssuer {
    fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError> {
        self.with_tpm(|tpm, _| read_on(tpm))
    }

    fn extend_bootstrap_pcr(&self, digest: &[u8; 32]) -> Result<(), PcrError> {
        self.with_tpm(|tpm, _| tpm.extend_pcr(BOOTSTRAP_PCR, digest)).map_err(PcrError::Tpm)
    }
}

/// The TPM of the node's issuer, whatever its variant (the vTPM the quotes come from). A variant without a
/// vTPM (`qemu-tdx`) has no PCR 15: [`PcrError::NoVtpm`] (its lock binding is RTMR3, through
/// `NodeIssuer::tdx_guest`).
impl PcrBackend for attest_attester::issuer::NodeIssuer {
    fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError> {
        self.with_tpm(read_on).map_err(PcrError::NoVtpm)?
    }

    fn extend_bootstrap_pcr(&self, digest: &[u8; 32]) -> Result<(), PcrError> {
        self.with_tpm(|tpm| tpm.extend_pcr(BOOTSTRAP_PCR, digest)).map_err(PcrError::NoVtpm)?.map_err(PcrError::Tpm)
    }
}

/// A TPM connection of its own.
impl PcrBackend for Mutex<Tpm> {
    fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError> {
        read_on(&mut self.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn extend_bootstrap_pcr(&self, digest: &[u8; 32]) -> Result<(), PcrError> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_pcr(BOOTSTRAP_PCR, digest)
            .map_err(PcrError::Tpm)
    }
}

/// An in-memory SHA-256 PCR with TPM extend semantics (new = SHA-256(old ‖ digest)), for tests.
#[derive(Debug, Default)]
pub struct MemoryPcr {
    value: Mutex<[u8; 32]>,
    extends: std::sync::atomic::AtomicUsize,
}

impl MemoryPcr {
    /// A PCR holding zero (a fresh boot).
    pub fn new() -> MemoryPcr {
        MemoryPcr::default()
    }

    /// How many times the PCR was extended.
    pub fn extend_count(&self) -> usize {
        self.extends.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl PcrBackend for MemoryPcr {
    fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError> {
        Ok(*self.value.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn extend_bootstrap_pcr(&self, digest: &[u8; 32]) -> Result<(), PcrError> {
        let mut v = self.value.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *v = extend(&v, digest);
        self.extends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A TPM PCR extend: SHA-256(old ‖ digest).
pub fn extend(old: &[u8; 32], digest: &[u8; 32]) -> [u8; 32] {
    let mut h = openssl::sha::Sha256::new();
    h.update(old);
    h.update(digest);
    h.finish()
}

/// PCR 15 after exactly one lock on a fresh boot: SHA-256(0³² ‖ cluster id).
pub fn expected_pcr_value(cluster_id: &[u8; 32]) -> [u8; 32] {
    extend(&[0; 32], cluster_id)
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
    /// PCR 15 as found by [`NodeLock::open`].
    initial_pcr: [u8; 32],
    /// Where the intent marker is written (`None`: not kept).
    intent_dir: Option<std::path::PathBuf>,
}

impl NodeLock {
    /// Opens the lock on `backend`: locked already if PCR 15 is not zero.
    pub fn open(backend: std::sync::Arc<dyn PcrBackend>) -> Result<NodeLock, PcrError> {
        let initial_pcr = backend.read_bootstrap_pcr()?;
        let locked = initial_pcr != [0; 32];
        Ok(NodeLock {
            backend,
            state: Mutex::new(if locked { State::Locked(None) } else { State::Unlocked }),
            locked: watch::Sender::new(locked),
            initial_pcr,
            intent_dir: None,
        })
    }

    /// Keeps the intent marker in `dir` (the runtime directory: a tmpfs). Opened on PCR 15 = 0, a marker left
    /// there is stale (the extend never happened) and removed.
    pub fn with_intent_dir(mut self, dir: &std::path::Path) -> NodeLock {
        if self.initial_pcr == [0; 32] {
            let _ = std::fs::remove_file(dir.join(LOCK_INTENT_FILE));
        }
        self.intent_dir = Some(dir.to_owned());
        self
    }

    /// The cluster id of a lock interrupted before its node state was written: PCR 15 at open equals
    /// SHA-256(0³² ‖ the cluster id the intent marker names). `None` without a marker or when PCR 15 is
    /// anything else.
    pub fn interrupted_lock(&self) -> Option<[u8; 32]> {
        let text = std::fs::read_to_string(self.intent_dir.as_ref()?.join(LOCK_INTENT_FILE)).ok()?;
        let mut cluster_id = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut cluster_id).ok()?;
        (expected_pcr_value(&cluster_id) == self.initial_pcr).then_some(cluster_id)
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

    /// PCR 15 as it was when the lock was opened.
    pub fn initial_pcr(&self) -> [u8; 32] {
        self.initial_pcr
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

    /// Takes the lock for `holder` and extends PCR 15 with `cluster_id`. Exactly one caller ever succeeds;
    /// the others get [`LockError::AlreadyLocked`]. Blocks for the TPM command: call it from a blocking
    /// thread in async code.
    pub fn try_lock(&self, holder: LockHolder, cluster_id: &[u8; 32]) -> Result<(), LockError> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let State::Locked(h) = *state {
            return Err(LockError::AlreadyLocked { holder: h });
        }
        *state = State::Locked(Some(holder));
        self.locked.send_replace(true);
        // Still under the mutex: nobody observes `Locked` before the extend has been attempted.
        let extended = self.write_intent(cluster_id).and_then(|()| self.backend.extend_bootstrap_pcr(cluster_id));
        drop(state);
        extended.map_err(LockError::Pcr)?;
        attest_util::fault::point("lock.extended");
        Ok(())
    }
}

impl NodeLock {
    /// What [`NodeLock::relock`] would find, without changing anything: `Ok(true)` when PCR 15 is zero (it
    /// would extend), `Ok(false)` when it already holds this cluster's value, [`RelockError::Foreign`] else.
    pub fn check_relock(&self, cluster_id: &[u8; 32]) -> Result<bool, RelockError> {
        let pcr = self.backend.read_bootstrap_pcr().map_err(RelockError::Pcr)?;
        let expected = expected_pcr_value(cluster_id);
        if pcr == expected {
            Ok(false)
        } else if pcr == [0; 32] {
            Ok(true)
        } else {
            Err(RelockError::Foreign { pcr, expected })
        }
    }

    /// Re-establishes the lock of a bootstrapped node after a reboot (rejoin, recovery): reads PCR 15 *now*
    /// and extends it with `cluster_id` where it is zero (the TPM was reset), accepts it where it already is
    /// SHA-256(0³² ‖ cluster id), and refuses anything else. The lock is `Locked(holder)` afterwards, whatever
    /// the outcome (a refused node must not init or join either). Returns whether PCR 15 was extended.
    pub fn relock(&self, holder: LockHolder, cluster_id: &[u8; 32]) -> Result<bool, RelockError> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *state = State::Locked(Some(holder));
        self.locked.send_replace(true);
        let pcr = self.backend.read_bootstrap_pcr().map_err(RelockError::Pcr)?;
        let expected = expected_pcr_value(cluster_id);
        if pcr == expected {
            return Ok(false);
        }
        if pcr != [0; 32] {
            return Err(RelockError::Foreign { pcr, expected });
        }
        self.backend.extend_bootstrap_pcr(cluster_id).map_err(RelockError::Pcr)?;
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
        assert_eq!(pcr.read_bootstrap_pcr().unwrap(), expected_pcr_value(&[3; 32]));
        assert!(lock.is_locked() && lock.holder() == Some(LockHolder::Rejoin));
        assert!(!lock.relock(LockHolder::Rejoin, &[3; 32]).unwrap(), "already this cluster's: unchanged");
        assert_eq!(pcr.extend_count(), 1);
        match lock.relock(LockHolder::Rejoin, &[4; 32]) {
            Err(RelockError::Foreign { pcr: found, expected }) => {
                assert_eq!(found, expected_pcr_value(&[3; 32]));
                assert_eq!(expected, expected_pcr_value(&[4; 32]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pcr.extend_count(), 1, "a foreign PCR 15 is never extended");
        assert!(matches!(lock.try_lock(LockHolder::Init, &[3; 32]), Err(LockError::AlreadyLocked { .. })));
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
        assert_eq!(pcr.read_bootstrap_pcr().unwrap(), expected_pcr_value(&[7; 32]));
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
        let tmp = attest_test_support::TempDir::new("lock-intent");
        let pcr = Arc::new(MemoryPcr::new());
        let lock = NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path());
        lock.try_lock(LockHolder::Join, &[5; 32]).unwrap();
        // "Crash", restart in the same boot: PCR 15 and the marker agree.
        let again = NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path());
        assert_eq!(again.interrupted_lock(), Some([5; 32]));
        // Without the marker (another boot's runtime directory), or with a PCR 15 of another value: no.
        assert_eq!(NodeLock::open(pcr.clone()).unwrap().interrupted_lock(), None);
        pcr.extend_bootstrap_pcr(&[1; 32]).unwrap();
        assert_eq!(NodeLock::open(pcr.clone()).unwrap().with_intent_dir(tmp.path()).interrupted_lock(), None);
        // A fresh boot (PCR 15 = 0) removes the stale marker.
        let fresh = NodeLock::open(Arc::new(MemoryPcr::new())).unwrap().with_intent_dir(tmp.path());
        assert_eq!(fresh.interrupted_lock(), None);
        assert!(!tmp.path().join(LOCK_INTENT_FILE).exists());
    }

    #[derive(Debug)]
    struct FailingPcr;
    impl PcrBackend for FailingPcr {
        fn read_bootstrap_pcr(&self) -> Result<[u8; 32], PcrError> {
            Ok([0; 32])
        }
        fn extend_bootstrap_pcr(&self, _: &[u8; 32]) -> Result<(), PcrError> {
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
