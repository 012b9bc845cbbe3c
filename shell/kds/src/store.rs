//! The on-disk certificate store: a directory anyone can fill by hand or with `attest kds prefill`.
//!
//! ```text
//! <root>/<Product>/cert_chain.pem                  ASK then ARK, the body of /vcek/v1/<Product>/cert_chain
//! <root>/<Product>/vlek/cert_chain.pem             ASVK then ARK, the body of /vlek/v1/<Product>/cert_chain
//! <root>/<Product>/crl.der                         the ARK-signed CRL, the body of /vcek/v1/<Product>/crl
//! <root>/<Product>/vlek/crl.der                    the ARK-signed CRL, the body of /vlek/v1/<Product>/crl
//! <root>/<Product>/vcek/<hwid-hex>/<tcb-hex>.der   one VCEK (DER, as KDS serves it)
//! ```
//!
//! `<Product>` is `Milan`, `Genoa` or `Turin` (as in KDS URLs); `<hwid-hex>` is the lower-case hwID (128 hex
//! digits, 16 on Turin); `<tcb-hex>` is the raw TCB_VERSION of the product's layout as 16 lower-case hex
//! digits, most significant byte first (the `0x…` form `attest snp show` prints; e.g. bl3 snp8 ucode115 on
//! Milan is `7308000000000003`).
//!
//! Every write is atomic: the bytes go to a hidden temporary file in the same directory
//! (`.<name>.tmp.<pid>.<n>`), which is fsynced, renamed over the final name, and the directory is fsynced.
//! A crash leaves at most a hidden temporary file, never a partial file under a final name; readers ignore
//! hidden files. Nothing is written that was not verified first (the supply's job), and whatever is read is
//! verified again before use, so a hand-copied wrong file is skipped, never trusted.

use super::KdsError;
use super::key::{ChainKind, VcekKey};
use attest_engine::snp::Product;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest file read from the store (certificates and CRLs are a few KiB).
pub const MAX_STORED_FILE: usize = 1024 * 1024;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A certificate store rooted at a directory.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens (and creates) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, KdsError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| KdsError::io("create directory", &root, &e))?;
        Ok(Self { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of a VCEK.
    pub fn vcek_path(&self, key: &VcekKey) -> PathBuf {
        self.root
            .join(key.product.name())
            .join("vcek")
            .join(key.hw_id.to_hex())
            .join(format!("{:016x}.der", key.tcb_raw()))
    }

    /// The path of a `cert_chain`.
    pub fn chain_path(&self, product: Product, kind: ChainKind) -> PathBuf {
        let dir = self.root.join(product.name());
        match kind {
            ChainKind::Vcek => dir.join("cert_chain.pem"),
            ChainKind::Vlek => dir.join("vlek").join("cert_chain.pem"),
        }
    }

    /// The path of a product's VCEK CRL.
    pub fn crl_path(&self, product: Product) -> PathBuf {
        self.crl_path_of(product, ChainKind::Vcek)
    }

    /// The path of a product's CRL of one key kind.
    pub fn crl_path_of(&self, product: Product, kind: ChainKind) -> PathBuf {
        let dir = self.root.join(product.name());
        match kind {
            ChainKind::Vcek => dir.join("crl.der"),
            ChainKind::Vlek => dir.join("vlek").join("crl.der"),
        }
    }

    /// Whether the store has a VCEK directory for this chip under `product` (used to guess the product of
    /// version 2 reports offline).
    pub fn has_chip(&self, product: Product, hw_id_hex: &str) -> bool {
        self.root.join(product.name()).join("vcek").join(hw_id_hex).is_dir()
    }

    /// Reads a file; `None` when it does not exist.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, KdsError> {
        let f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(KdsError::io("read", path, &e)),
        };
        let mut out = Vec::new();
        f.take(MAX_STORED_FILE as u64 + 1).read_to_end(&mut out).map_err(|e| KdsError::io("read", path, &e))?;
        if out.len() > MAX_STORED_FILE {
            return Err(KdsError::LimitExceeded { what: "stored file size", limit: MAX_STORED_FILE, found: out.len() });
        }
        Ok(Some(out))
    }

    /// Writes `bytes` to `path` atomically (temporary file, fsync, rename, directory fsync).
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), KdsError> {
        let dir = path.parent().ok_or(KdsError::InvalidKey { reason: "store path without a directory" })?;
        let name = path.file_name().ok_or(KdsError::InvalidKey { reason: "store path without a file name" })?;
        create_dirs_durably(&self.root, dir)?;
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{}.tmp.{}.{n}", name.to_string_lossy(), std::process::id()));
        let mut guard = TempGuard(Some(tmp.clone()));
        let mut f =
            OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| KdsError::io("create", &tmp, &e))?;
        f.write_all(bytes).map_err(|e| KdsError::io("write", &tmp, &e))?;
        f.sync_all().map_err(|e| KdsError::io("fsync", &tmp, &e))?;
        drop(f);
        fs::rename(&tmp, path).map_err(|e| KdsError::io("rename", path, &e))?;
        guard.0 = None;
        sync_dir(dir)
    }
}

/// Removes the temporary file unless the write completed.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

fn sync_dir(dir: &Path) -> Result<(), KdsError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| KdsError::io("fsync directory", dir, &e))
}

/// Creates `dir` (below `root`) and fsyncs the parent of every directory it had to create, so a new
/// directory entry survives a crash as well as the file in it.
fn create_dirs_durably(root: &Path, dir: &Path) -> Result<(), KdsError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.is_dir() && d.starts_with(root) {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    fs::create_dir_all(dir).map_err(|e| KdsError::io("create directory", dir, &e))?;
    for m in missing.iter().rev() {
        if let Some(parent) = m.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_only_the_file() {
        let tmp = attest_test_support::TempDir::new("kds-store");
        let dir = tmp.path().join("kds-store");
        let store = Store::open(&dir).unwrap();
        let p = store.crl_path(Product::Milan);
        store.write_atomic(&p, b"one").unwrap();
        store.write_atomic(&p, b"two").unwrap();
        assert_eq!(store.read(&p).unwrap().unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("crl.der")]);
        assert_eq!(store.read(&store.crl_path(Product::Genoa)).unwrap(), None);
    }
}
