//! Atomic file replacement, shared by everything the shell persists: the bootstrapper's node state, key
//! file, cluster PKI and join files, the AK registry, and the files `attest init` writes. (The KDS store has
//! its own variant that also fsyncs each directory it creates below its root, and the dry-run token issuer
//! an exclusive create-if-absent.)
//!
//! ```text
//! DIR/.NAME.tmp.PID.N   create (mode given, O_EXCL) → write → fsync
//!          │ rename(2)  (atomic within one file system)
//!          ▼
//! DIR/NAME              → fsync(DIR)  (the rename itself is durable)
//! ```
//!
//! A crash leaves either the old file or the new one, never a torn mix; a leftover temporary file is
//! harmless (its name starts with a dot and carries the writer's PID). The mode is set at creation, so a
//! secret file is never readable by others, not even for an instant.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Mode of files holding secrets (keys): owner read/write only.
pub const SECRET_FILE_MODE: u32 = 0o600;
/// Mode of public files (certificates, configuration without secrets, node state).
pub const PUBLIC_FILE_MODE: u32 = 0o644;
/// Mode of directories the bootstrapper creates.
pub const DIR_MODE: u32 = 0o700;

/// Distinguishes temporary files of concurrent writers in one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// An I/O failure on a named path.
#[derive(Debug)]
pub struct FileError {
    /// The file or directory.
    pub path: PathBuf,
    /// The error.
    pub source: std::io::Error,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

pub(crate) fn at(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |source| FileError { path: path.to_owned(), source }
}

/// Creates `dir` and its parents (mode [`DIR_MODE`] for the ones created).
pub fn create_dir_all(dir: &Path) -> Result<(), FileError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir).map_err(at(dir))
}

/// Writes `data` to `path` atomically with permissions `mode`, creating the parent directory if needed.
pub fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<(), FileError> {
    write_atomic_observed(path, data, mode, &mut |_| {})
}

/// The steps of [`write_atomic`] after which a crash can happen (for the tests that stop there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The temporary file is written and synced; the target is untouched.
    TempSynced,
    /// The rename happened; the directory is not synced yet.
    Renamed,
    /// The directory is synced.
    Done,
}

fn write_atomic_observed(path: &Path, data: &[u8], mode: u32, after: &mut dyn FnMut(Step)) -> Result<(), FileError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    create_dir_all(&dir)?;
    let name = path.file_name().ok_or_else(|| FileError {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"),
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}.{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp).map_err(at(&tmp))?;
        f.write_all(data).map_err(at(&tmp))?;
        f.sync_all().map_err(at(&tmp))?;
        drop(f);
        after(Step::TempSynced);
        std::fs::rename(&tmp, path).map_err(at(path))?;
        after(Step::Renamed);
        std::fs::File::open(&dir).and_then(|d| d.sync_all()).map_err(at(&dir))?;
        after(Step::Done);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_replaces_and_sets_mode() {
        let tmp = attest_test_support::TempDir::new("atomic");
        let dir = tmp.path().join("atomic");
        let path = dir.join("sub/file");
        write_atomic(&path, b"one", SECRET_FILE_MODE).unwrap();
        write_atomic(&path, b"two", SECRET_FILE_MODE).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 1);
    }

    /// A crash after any step leaves the old content or the new one at the path, never a mix, a truncated
    /// file or none; a temporary file a crashed writer left behind does not stop the next write.
    #[test]
    fn every_step_leaves_the_old_or_the_new_file() {
        let tmp = attest_test_support::TempDir::new("atomic-steps");
        let path = tmp.path().join("state.json");
        write_atomic(&path, b"old contents", PUBLIC_FILE_MODE).unwrap();
        let new = vec![b'n'; 100_000];
        let mut seen = Vec::new();
        write_atomic_observed(&path, &new, PUBLIC_FILE_MODE, &mut |step| {
            let now = std::fs::read(&path).unwrap();
            let expected: &[u8] = if step == Step::TempSynced { b"old contents" } else { &new };
            assert_eq!(now, expected, "after {step:?}");
            seen.push(step);
        })
        .unwrap();
        assert_eq!(seen, [Step::TempSynced, Step::Renamed, Step::Done]);
        // A writer that died after its temporary file (another process: another name) leaves it behind.
        std::fs::write(tmp.path().join(".state.json.tmp.1.0"), b"half").unwrap();
        write_atomic(&path, b"next", PUBLIC_FILE_MODE).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"next");
    }
}
