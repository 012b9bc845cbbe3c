//! The verifier's AK registry for `qemu-vtpm` ([`FileAkRegistry`]) and the AK registration flow
//! ([`AkRegistrar`]).
//!
//! # Registration by credential activation
//!
//! ```text
//!  attester                                   verifier
//!  ────────                                   ────────
//!  EK certificate (NV 0x01c00002),
//!  AK TPM2B_PUBLIC               ───────────▶ AkRegistrar::challenge
//!                                               verify EK certificate → CA bundle
//!                                               check AK attributes (restricted signing, fixedTPM, …)
//!                                               Name = 0x000B ‖ SHA-256(TPMT_PUBLIC)
//!                                               secret = 32 random bytes
//!                                               make_credential(EK, Name, secret)
//!  Tpm::activate_credential      ◀─────────── CredentialChallenge (+ PendingRegistration kept)
//!    (only the TPM with that EK and a
//!     loaded object of that Name can)
//!  recovered secret              ───────────▶ AkRegistrar::complete
//!                                               constant-time compare
//!                                               registry: SHA-256(TPMT_PUBLIC) → CredentialActivation
//! ```
//!
//! # Trust on first use
//!
//! Off by default. When on, [`AkRegistry::lookup`] answers [`AkBasis::TrustOnFirstUse`] for an AK it does
//! not know — but it records nothing, because the validator asks before it has checked the quote. Record
//! the AK only after the document validated: [`FileAkRegistry::record_first_use`], or use
//! [`FileAkRegistry::validate`], which does both in order. An AK whose quote never verified is never pinned.
//!
//! # File format
//!
//! ```json
//! {"version": 1, "aks": [{"digest": "<hex SHA-256 of TPMT_PUBLIC>", "basis": "credential-activation"}]}
//! ```
//!
//! Written atomically: a temporary file in the same directory, fsync, rename over the old file, fsync of the
//! directory. A crash leaves either the old or the new registry, never a torn one.

use super::Error;
use super::credential::{CredentialChallenge, make_credential};
use super::ekcert::EkCaBundle;
use attest_engine::UnixTime;
use attest_engine::tpm::TpmtPublic;
use attest_engine::variant::{AkBasis, AkRegistry, Document, Validated, Validator};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use zeroize::Zeroizing;

/// File format version.
const FORMAT_VERSION: u64 = 1;

/// SHA-256 of an AK's TPMT_PUBLIC, from its TPM2B_PUBLIC (the key the engine looks AKs up by).
pub fn ak_digest(ak_tpm2b_public: &[u8]) -> Result<[u8; 32], Error> {
    let tpmt = TpmtPublic::parse_tpm2b(ak_tpm2b_public)?;
    Ok(openssl::sha::sha256(tpmt.as_bytes()))
}

/// An AK registry kept in a JSON file (or, [`FileAkRegistry::in_memory`], in memory only).
#[derive(Debug)]
pub struct FileAkRegistry {
    path: PathBuf,
    entries: RwLock<BTreeMap<[u8; 32], AkBasis>>,
    trust_on_first_use: bool,
    /// Whether registrations are written to `path` (false: an in-memory registry).
    persist: bool,
    /// Serializes writers so two registrations never race on the temporary file.
    write_lock: Mutex<()>,
}

impl FileAkRegistry {
    /// Opens the registry at `path`; a missing file is an empty registry (created on the first write).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, Error> {
        let path = path.into();
        let entries = match std::fs::read(&path) {
            Ok(data) => parse(&path, &data)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(Error::Io { path, source }),
        };
        Ok(Self {
            path,
            entries: RwLock::new(entries),
            trust_on_first_use: false,
            persist: true,
            write_lock: Mutex::new(()),
        })
    }

    /// An empty registry that lives in memory only (registrations are never written): for a verifier that
    /// registers its peer's AK for one connection, as a joining node does with the join service's.
    pub fn in_memory() -> Self {
        Self {
            path: PathBuf::new(),
            entries: RwLock::new(BTreeMap::new()),
            trust_on_first_use: false,
            persist: false,
            write_lock: Mutex::new(()),
        }
    }

    /// Turns trust on first use on or off (off by default).
    pub fn with_trust_on_first_use(mut self, on: bool) -> Self {
        self.trust_on_first_use = on;
        self
    }

    /// The registry file (empty for [`FileAkRegistry::in_memory`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every recorded AK.
    pub fn entries(&self) -> Vec<([u8; 32], AkBasis)> {
        self.read().iter().map(|(d, b)| (*d, *b)).collect()
    }

    /// Records `digest` with `basis` and writes the file. An existing entry is replaced only by a stronger
    /// basis (credential activation or pinning replaces trust on first use, never the other way round).
    pub fn register(&self, digest: [u8; 32], basis: AkBasis) -> Result<(), Error> {
        let _w = self.write_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = self.read().clone();
        match next.get(&digest) {
            Some(old) if *old != AkBasis::TrustOnFirstUse || basis == AkBasis::TrustOnFirstUse => return Ok(()),
            _ => {}
        }
        next.insert(digest, basis);
        if self.persist {
            write_atomically(&self.path, &serialize(&next))?;
        }
        *self.entries.write().unwrap_or_else(std::sync::PoisonError::into_inner) = next;
        Ok(())
    }

    /// Removes an AK. Returns whether it was present.
    pub fn remove(&self, digest: &[u8; 32]) -> Result<bool, Error> {
        let _w = self.write_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = self.read().clone();
        if next.remove(digest).is_none() {
            return Ok(false);
        }
        if self.persist {
            write_atomically(&self.path, &serialize(&next))?;
        }
        *self.entries.write().unwrap_or_else(std::sync::PoisonError::into_inner) = next;
        Ok(true)
    }

    /// Records the AK of a document that validated with basis [`AkBasis::TrustOnFirstUse`]. Does nothing
    /// for other bases.
    pub fn record_first_use(&self, validated: &Validated<'_>, ak_tpm2b_public: &[u8]) -> Result<(), Error> {
        if validated.ak_basis != Some(AkBasis::TrustOnFirstUse) {
            return Ok(());
        }
        self.register(ak_digest(ak_tpm2b_public)?, AkBasis::TrustOnFirstUse)
    }

    /// Validates `doc` with `validator` (which must use this registry) and, when the AK was trusted on first
    /// use, records it — only after the whole document verified.
    pub fn validate<'a>(
        &self,
        validator: &Validator,
        doc: &Document<'a>,
        nonce: &[u8],
        time: UnixTime,
    ) -> Result<Validated<'a>, Error> {
        let validated = validator.validate(doc, nonce, time)?;
        if let Some(tpm) = &doc.tpm {
            self.record_first_use(&validated, tpm.ak_public)?;
        }
        Ok(validated)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<[u8; 32], AkBasis>> {
        self.entries.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AkRegistry for FileAkRegistry {
    fn lookup(&self, ak_digest: &[u8; 32]) -> Option<AkBasis> {
        match self.read().get(ak_digest) {
            Some(b) => Some(*b),
            None if self.trust_on_first_use => Some(AkBasis::TrustOnFirstUse),
            None => None,
        }
    }
}

fn serialize(entries: &BTreeMap<[u8; 32], AkBasis>) -> Vec<u8> {
    let aks: Vec<_> =
        entries.iter().map(|(d, b)| serde_json::json!({ "digest": hex::encode(d), "basis": b.name() })).collect();
    let mut out =
        serde_json::to_vec_pretty(&serde_json::json!({ "version": FORMAT_VERSION, "aks": aks })).unwrap_or_default();
    out.push(b'\n');
    out
}

fn parse(path: &Path, data: &[u8]) -> Result<BTreeMap<[u8; 32], AkBasis>, Error> {
    let bad = |reason: &str| Error::Registry { path: path.to_owned(), reason: reason.to_owned() };
    let v: serde_json::Value = serde_json::from_slice(data).map_err(|e| bad(&format!("not JSON: {e}")))?;
    if v.get("version").and_then(serde_json::Value::as_u64) != Some(FORMAT_VERSION) {
        return Err(bad("unsupported or missing \"version\""));
    }
    let aks = v.get("aks").and_then(serde_json::Value::as_array).ok_or_else(|| bad("missing \"aks\" array"))?;
    let mut out = BTreeMap::new();
    for e in aks {
        let digest =
            e.get("digest").and_then(serde_json::Value::as_str).ok_or_else(|| bad("an entry without \"digest\""))?;
        let mut d = [0u8; 32];
        hex::decode_to_slice(digest, &mut d).map_err(|_| bad("a digest that is not 64 hex digits"))?;
        let basis = e
            .get("basis")
            .and_then(serde_json::Value::as_str)
            .and_then(AkBasis::from_name)
            .ok_or_else(|| bad("an entry with an unknown \"basis\""))?;
        if basis == AkBasis::HardwareReport {
            return Err(bad("\"hardware-report\" is not a registry basis"));
        }
        if out.insert(d, basis).is_some() {
            return Err(bad("the same digest twice"));
        }
    }
    Ok(out)
}

/// Writes `data` to `path` atomically ([`attest_util::fs::write_atomic`]; the registry is public, mode 0644).
pub(crate) fn write_atomically(path: &Path, data: &[u8]) -> Result<(), Error> {
    attest_util::fs::write_atomic(path, data, attest_util::fs::PUBLIC_FILE_MODE)
        .map_err(|e| Error::Io { path: e.path, source: e.source })
}

/// A registration in progress: what the verifier keeps between the challenge and the answer.
#[derive(Debug)]
pub struct PendingRegistration {
    ak_digest: [u8; 32],
    secret: Zeroizing<Vec<u8>>,
}

impl PendingRegistration {
    /// SHA-256 of the AK's TPMT_PUBLIC being registered.
    pub fn ak_digest(&self) -> &[u8; 32] {
        &self.ak_digest
    }
}

/// Registers AKs by credential activation against certified EKs.
#[derive(Debug)]
pub struct AkRegistrar<'r> {
    ca: EkCaBundle,
    registry: &'r FileAkRegistry,
}

/// Bytes of the credential secret.
const SECRET_LEN: usize = 32;

impl<'r> AkRegistrar<'r> {
    /// A registrar that trusts EK certificates chaining to `ca` and records into `registry`.
    pub fn new(ca: EkCaBundle, registry: &'r FileAkRegistry) -> Self {
        Self { ca, registry }
    }

    /// Step 1: verifies the EK certificate, checks the AK's attributes, and makes a credential for the AK's
    /// Name under the certified EK. Send the challenge to the attester; keep the pending registration.
    pub fn challenge(
        &self,
        ek_certificate: &[u8],
        ak_tpm2b_public: &[u8],
    ) -> Result<(CredentialChallenge, PendingRegistration), Error> {
        let ek = self.ca.verify(ek_certificate, &[])?;
        let tpmt = TpmtPublic::parse_tpm2b(ak_tpm2b_public)?;
        tpmt.check_attestation_key()?;
        if tpmt.name_alg() != 0x000B {
            return Err(Error::InvalidArgument { what: "the AK's nameAlg must be SHA-256" });
        }
        let digest = openssl::sha::sha256(tpmt.as_bytes());
        let mut name = Vec::with_capacity(34);
        name.extend_from_slice(&[0x00, 0x0B]);
        name.extend_from_slice(&digest);
        let mut secret = Zeroizing::new(vec![0u8; SECRET_LEN]);
        openssl::rand::rand_bytes(&mut secret)?;
        let challenge = make_credential(&ek, &name, &secret)?;
        Ok((challenge, PendingRegistration { ak_digest: digest, secret }))
    }

    /// Step 2: compares the attester's recovered secret (constant time) and records the AK as
    /// [`AkBasis::CredentialActivation`]. Returns the AK digest.
    pub fn complete(&self, pending: PendingRegistration, recovered: &[u8]) -> Result<[u8; 32], Error> {
        // Taken by value: a pending registration is answered once, so a wrong answer cannot be retried.
        let PendingRegistration { ak_digest, secret } = pending;
        if recovered.len() != secret.len() || !openssl::memcmp::eq(recovered, &secret) {
            return Err(Error::CredentialMismatch);
        }
        self.registry.register(ak_digest, AkBasis::CredentialActivation)?;
        Ok(ak_digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(tag: &str) -> (attest_test_support::TempDir, PathBuf) {
        let dir = attest_test_support::TempDir::new(&format!("registry-{tag}"));
        let path = dir.path().join("aks.json");
        (dir, path)
    }

    #[test]
    fn persists_and_reloads() {
        let (_scratch, path) = temp_path("reload");
        let r = FileAkRegistry::open(&path).unwrap();
        assert_eq!(r.lookup(&[1; 32]), None);
        r.register([1; 32], AkBasis::TrustOnFirstUse).unwrap();
        r.register([2; 32], AkBasis::CredentialActivation).unwrap();
        // A stronger basis replaces TOFU; a weaker one never replaces a stronger one.
        r.register([1; 32], AkBasis::CredentialActivation).unwrap();
        r.register([2; 32], AkBasis::TrustOnFirstUse).unwrap();
        let again = FileAkRegistry::open(&path).unwrap();
        assert_eq!(again.lookup(&[1; 32]), Some(AkBasis::CredentialActivation));
        assert_eq!(again.lookup(&[2; 32]), Some(AkBasis::CredentialActivation));
        assert!(again.remove(&[2; 32]).unwrap());
        assert!(!again.remove(&[2; 32]).unwrap());
        assert_eq!(FileAkRegistry::open(&path).unwrap().entries(), vec![([1; 32], AkBasis::CredentialActivation)]);
        // No temporary files left behind.
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("aks.json")]);
    }

    #[test]
    fn an_in_memory_registry_writes_nothing() {
        let r = FileAkRegistry::in_memory();
        r.register([3; 32], AkBasis::CredentialActivation).unwrap();
        assert_eq!(r.lookup(&[3; 32]), Some(AkBasis::CredentialActivation));
        assert_eq!(r.lookup(&[4; 32]), None);
        assert!(r.remove(&[3; 32]).unwrap());
        assert_eq!(r.path(), Path::new(""));
    }

    #[test]
    fn trust_on_first_use_is_off_by_default_and_records_nothing_by_itself() {
        let (_scratch, path) = temp_path("tofu");
        let r = FileAkRegistry::open(&path).unwrap();
        assert_eq!(r.lookup(&[7; 32]), None);
        let r = r.with_trust_on_first_use(true);
        assert_eq!(r.lookup(&[7; 32]), Some(AkBasis::TrustOnFirstUse));
        assert!(r.entries().is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn malformed_files_are_rejected() {
        let (_scratch, path) = temp_path("bad");
        for bad in [
            &b"nope"[..],
            br#"{"aks":[]}"#,
            br#"{"version":2,"aks":[]}"#,
            br#"{"version":1,"aks":[{"digest":"00","basis":"pinned"}]}"#,
            br#"{"version":1,"aks":[{"digest":"0000000000000000000000000000000000000000000000000000000000000000","basis":"x"}]}"#,
            br#"{"version":1,"aks":[{"digest":"0000000000000000000000000000000000000000000000000000000000000000","basis":"hardware-report"}]}"#,
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(matches!(FileAkRegistry::open(&path), Err(Error::Registry { .. })), "{}", String::from_utf8_lossy(bad));
        }
    }
}
