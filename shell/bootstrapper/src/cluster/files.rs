//! Writing the files a join ticket carries: the kubelet certificate and key, and (control-plane nodes) the
//! cluster's control-plane certificates and keys.
//!
//! Control-plane file names come from the network, so each is checked before it becomes a path
//! ([`check_file_name`]): relative, at most [`MAX_FILE_NAME_DEPTH`] components (`etcd/ca.key`), each of
//! `[A-Za-z0-9._-]`, not `.` or `..`, not starting with a dot. A name like `../../etc/shadow` or `/etc/passwd`
//! never reaches the file system. Keys (`*.key`) are written with mode 0600, everything else 0644.

use std::path::{Path, PathBuf};

use crate::atomic::{FileError, PUBLIC_FILE_MODE, SECRET_FILE_MODE, write_atomic};

/// Longest accepted control-plane file name, in bytes.
pub(crate) const MAX_FILE_NAME_LENGTH: usize = 128;
/// Most path components in a control-plane file name (`etcd/ca.crt` has two).
pub(crate) const MAX_FILE_NAME_DEPTH: usize = 2;
/// The kubelet's certificate file name in its PKI directory (kubelet's `--cert-dir` default names).
pub(crate) const KUBELET_CERT_NAME: &str = "kubelet.crt";
/// The kubelet's key file name in its PKI directory.
pub(crate) const KUBELET_KEY_NAME: &str = "kubelet.key";

/// A control-plane file name that is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileNameError {
    /// The name (cut to `MAX_FILE_NAME_LENGTH` bytes, escaped by `Debug` when printed).
    pub name: String,
    /// Why.
    pub reason: &'static str,
}

impl std::fmt::Display for FileNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "control-plane file name {:?} refused: {}", self.name, self.reason)
    }
}

impl std::error::Error for FileNameError {}

/// Checks a control-plane file name (rules in the module docs).
pub(crate) fn check_file_name(name: &str) -> Result<&str, FileNameError> {
    let refuse = |reason| {
        let mut end = name.len().min(MAX_FILE_NAME_LENGTH);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        Err(FileNameError { name: name[..end].to_owned(), reason })
    };
    if name.is_empty() {
        return refuse("empty");
    }
    if name.len() > MAX_FILE_NAME_LENGTH {
        return refuse("too long");
    }
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > MAX_FILE_NAME_DEPTH {
        return refuse("too many path components");
    }
    for p in parts {
        if p.is_empty() {
            return refuse("absolute path or empty component");
        }
        if p.starts_with('.') {
            return refuse("component starts with a dot");
        }
        if !p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
            return refuse("character outside [A-Za-z0-9._-]");
        }
    }
    Ok(name)
}

fn mode_for(name: &str) -> u32 {
    if Path::new(name).extension().is_some_and(|e| e == "key") { SECRET_FILE_MODE } else { PUBLIC_FILE_MODE }
}

/// Writes the kubelet certificate and key into `kubelet_pki_dir` and the control-plane files into `pki_dir`.
/// Names are checked first, all of them, so a bad name writes nothing. Returns the paths written.
pub(crate) fn write_join_files(
    pki_dir: &Path,
    kubelet_pki_dir: &Path,
    kubelet_cert_pem: &[u8],
    kubelet_key_pem: &[u8],
    control_plane_files: &[(String, zeroize::Zeroizing<Vec<u8>>)],
) -> Result<Vec<PathBuf>, JoinFilesError> {
    for (name, _) in control_plane_files {
        check_file_name(name).map_err(JoinFilesError::FileName)?;
    }
    let mut written = Vec::new();
    let mut write = |path: PathBuf, data: &[u8], mode: u32| -> Result<(), FileError> {
        write_atomic(&path, data, mode)?;
        written.push(path);
        Ok(())
    };
    write(kubelet_pki_dir.join(KUBELET_CERT_NAME), kubelet_cert_pem, PUBLIC_FILE_MODE).map_err(JoinFilesError::File)?;
    write(kubelet_pki_dir.join(KUBELET_KEY_NAME), kubelet_key_pem, SECRET_FILE_MODE).map_err(JoinFilesError::File)?;
    for (name, data) in control_plane_files {
        write(pki_dir.join(name), data, mode_for(name)).map_err(JoinFilesError::File)?;
    }
    Ok(written)
}

/// Why `write_join_files` wrote nothing (a bad name) or stopped (a write failed). The backends turn it into
/// their `BackendError` (this module stays below the backend trait).
#[derive(Debug)]
pub enum JoinFilesError {
    /// A control-plane file name from the ticket is not acceptable.
    FileName(FileNameError),
    /// A file could not be written.
    File(FileError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["ca.crt", "ca.key", "sa.pub", "front-proxy-ca.key", "etcd/ca.crt"] {
            assert_eq!(check_file_name(ok), Ok(ok));
        }
        for bad in ["", "/etc/passwd", "../ca.key", "etcd/../../x", "a/b/c", ".hidden", "a//b", "ca key", "ca\0.key"] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_file_name(&"a".repeat(MAX_FILE_NAME_LENGTH + 1)).is_err());
    }

    #[test]
    fn writes_with_modes_and_refuses_traversal_before_writing() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = attest_test_support::TempDir::new("files");
        let dir = tmp.path().join("files");
        let files = vec![
            ("ca.crt".to_owned(), zeroize::Zeroizing::new(b"CERT".to_vec())),
            ("etcd/ca.key".to_owned(), zeroize::Zeroizing::new(b"KEY".to_vec())),
        ];
        let written = write_join_files(&dir.join("pki"), &dir.join("kubelet"), b"KC", b"KK", &files).unwrap();
        assert_eq!(written.len(), 4);
        let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("pki/etcd/ca.key"), 0o600);
        assert_eq!(mode("pki/ca.crt"), 0o644);
        assert_eq!(mode("kubelet/kubelet.key"), 0o600);
        let bad = vec![
            ("ok.crt".to_owned(), zeroize::Zeroizing::new(b"x".to_vec())),
            ("../escape".to_owned(), zeroize::Zeroizing::new(b"x".to_vec())),
        ];
        let other = dir.join("other");
        assert!(write_join_files(&other.join("pki"), &other.join("kubelet"), b"", b"", &bad).is_err());
        assert!(!other.exists(), "nothing written when a name is refused");
    }
}
