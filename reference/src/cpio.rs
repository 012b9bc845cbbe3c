//! The cpio archives systemd-stub 252 builds at boot from files it finds on the ESP (credentials, system
//! extensions) and from its own `.pcrsig`/`.pcrpkey` sections, which it measures and appends to the initrd
//! it hands the kernel.
//!
//! ```text
//!  <uki>.efi.extra.d/*.cred   ─► ".extra/credentials"        dirs 0555/0500, files 0400 ─► PCR 12 EV_IPL "Credentials initrd"
//!  \loader\credentials\*.cred ─► ".extra/global_credentials" dirs 0555/0500, files 0400 ─► PCR 12 EV_IPL "Global credentials initrd"
//!  <uki>.efi.extra.d/*.raw    ─► ".extra/sysext"             dirs 0555/0555, files 0444 ─► PCR 13 EV_IPL "System extension initrd"
//!  .pcrsig / .pcrpkey section ─► ".extra/tpm2-pcr-signature.json" / "tpm2-pcr-public-key.pem" (not measured)
//! ```
//!
//! Each archive is one newc ("070701") cpio: the prefix's directories (leading ones 0555, the last one the
//! archive's directory mode), then the files sorted by name (UTF-16 code units, i.e. byte order for the
//! ASCII names the stub accepts), then the stub's fixed `TRAILER!!!` record. Header fields are eight
//! lower-case hex digits; inodes count from 1 within an archive; uid, gid, mtime and devices are zero, nlink
//! is 1; names and contents are padded to 4 bytes. The whole archive is measured as one event (later stubs
//! measure file by file; only 252 is modelled). The stub skips files whose names start with `.`, are not
//! ASCII, are longer than 255 characters or lack the suffix; here such a name is refused, so a prediction
//! never silently leaves a file out.

use crate::error::Error;

/// Most files in one archive (the stub has no limit; a node's ESP holds a handful).
pub const MAX_ESP_FILES: usize = 1024;
/// Longest file name the stub picks up (Linux's NAME_MAX).
pub const MAX_ESP_FILE_NAME_LEN: usize = 255;

/// A file the stub finds on the ESP: its name within its directory and its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EspFile<'a> {
    /// The file name (no directory), e.g. `node.cred`.
    pub name: &'a str,
    /// The contents.
    pub data: &'a [u8],
}

/// One kind of archive the stub builds from a directory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kind {
    /// The directory inside the archive.
    pub(crate) prefix: &'static str,
    /// Mode of its last directory.
    pub(crate) dir_mode: u32,
    /// Mode of its files.
    pub(crate) file_mode: u32,
    /// The suffix a file needs (case-insensitive).
    pub(crate) suffix: &'static str,
    /// What `InvalidArgument` calls a file of this kind.
    pub(crate) what: &'static str,
}

/// `<uki>.efi.extra.d/*.cred`.
pub(crate) const CREDENTIALS: Kind =
    Kind { prefix: ".extra/credentials", dir_mode: 0o500, file_mode: 0o400, suffix: ".cred", what: "credential" };
/// `\loader\credentials\*.cred`.
pub(crate) const GLOBAL_CREDENTIALS: Kind = Kind {
    prefix: ".extra/global_credentials",
    dir_mode: 0o500,
    file_mode: 0o400,
    suffix: ".cred",
    what: "global credential",
};
/// `<uki>.efi.extra.d/*.raw`.
pub(crate) const SYSEXTS: Kind =
    Kind { prefix: ".extra/sysext", dir_mode: 0o555, file_mode: 0o444, suffix: ".raw", what: "system extension" };

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
/// The stub's trailer record, byte for byte (its name size field is written upper-case).
const TRAILER: &[u8] = b"070701\
    00000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000B00000000\
    TRAILER!!!\0\0\0\0";

fn header(out: &mut Vec<u8>, inode: u32, mode: u32, size: u32, name_size: u32) {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(110);
    text.push_str("070701");
    for field in [inode, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, name_size, 0] {
        let _ = write!(text, "{field:08x}");
    }
    out.extend_from_slice(text.as_bytes());
}

fn pad4(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(4), 0);
}

fn directory(out: &mut Vec<u8>, inode: &mut u32, path: &str, mode: u32) {
    header(out, *inode, mode | S_IFDIR, 0, path.len() as u32 + 1);
    *inode += 1;
    out.extend_from_slice(path.as_bytes());
    out.push(0);
    pad4(out);
}

/// The prefix's directories, then the files in the given order, then the trailer.
fn archive(prefix: &str, dir_mode: u32, file_mode: u32, files: &[EspFile<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(files.iter().map(|f| f.data.len() + 256).sum::<usize>() + 512);
    let mut inode = 1u32;
    for (end, _) in prefix.match_indices('/').filter(|&(end, _)| end > 0) {
        directory(&mut out, &mut inode, &prefix[..end], 0o555);
    }
    directory(&mut out, &mut inode, prefix, dir_mode);
    for f in files {
        header(&mut out, inode, file_mode | S_IFREG, f.data.len() as u32, (prefix.len() + f.name.len() + 2) as u32);
        inode += 1;
        out.extend_from_slice(prefix.as_bytes());
        out.push(b'/');
        out.extend_from_slice(f.name.as_bytes());
        out.push(0);
        pad4(&mut out);
        out.extend_from_slice(f.data);
        pad4(&mut out);
    }
    out.extend_from_slice(TRAILER);
    out
}

/// The archive the stub builds from `files` of `kind` (`None` when there are none: the stub then builds
/// and measures nothing). Refuses names the stub would skip, duplicates, and sizes cpio cannot carry.
pub(crate) fn stub_archive(kind: Kind, files: &[EspFile<'_>]) -> Result<Option<Vec<u8>>, Error> {
    if files.is_empty() {
        return Ok(None);
    }
    if files.len() > MAX_ESP_FILES {
        return Err(Error::LimitExceeded {
            what: "ESP files of one kind",
            limit: MAX_ESP_FILES as u64,
            found: files.len() as u64,
        });
    }
    let bad = |reason| Err(Error::InvalidArgument { what: kind.what, reason });
    let mut sorted = files.to_vec();
    for f in &sorted {
        let n = f.name;
        if n.is_empty() || n.starts_with('.') || !n.is_ascii() || n.contains(['/', '\\', '\0']) {
            return bad("file name must be a plain ASCII name not starting with '.' (the stub skips others)");
        }
        if n.len() > MAX_ESP_FILE_NAME_LEN {
            return bad("file name longer than 255 characters (the stub skips it)");
        }
        if n.len() <= kind.suffix.len() || !n[n.len() - kind.suffix.len()..].eq_ignore_ascii_case(kind.suffix) {
            return bad("file name lacks the suffix the stub picks up (.cred for credentials, .raw for sysexts)");
        }
        if u32::try_from(f.data.len()).is_err() {
            return Err(Error::LimitExceeded {
                what: "ESP file bytes (cpio sizes are 32-bit)",
                limit: u64::from(u32::MAX),
                found: f.data.len() as u64,
            });
        }
    }
    sorted.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    if sorted.windows(2).any(|w| w[0].name == w[1].name) {
        return bad("two files of the same name in one directory");
    }
    Ok(Some(archive(kind.prefix, kind.dir_mode, kind.file_mode, &sorted)))
}

/// The archive the stub makes of one of its own sections (`.extra/<name>`, 0555/0444; not measured).
pub(crate) fn literal(name: &str, data: &[u8]) -> Vec<u8> {
    archive(".extra", 0o555, 0o444, &[EspFile { name, data }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_a_credentials_archive() {
        let files = [EspFile { name: "b.cred", data: b"xyz" }, EspFile { name: "a.CRED", data: b"" }];
        let a = stub_archive(CREDENTIALS, &files).unwrap().unwrap();
        let text = String::from_utf8_lossy(&a);
        // Directories first (inodes 1, 2), files sorted (a.CRED inode 3, b.cred inode 4), the trailer.
        let dir1 = "070701000000010000416d0000000000000000000000010000000000000000000000000000000000000000000000000000000700000000.extra\0";
        assert!(text.starts_with(dir1), "{text:?}");
        assert_eq!(a.len() % 4, 0);
        assert!(a.ends_with(TRAILER));
        assert_eq!(TRAILER.len(), 124);
        let first = text.find(".extra/credentials/a.CRED\0").unwrap();
        let second = text.find(".extra/credentials/b.cred\0").unwrap();
        assert!(first < second);
        assert!(text.contains("00004140"), "the last directory is 0500: {text:?}");
        assert!(text.contains("xyz\0"));
        // a.CRED: inode 3, mode 0100400, empty, a 26-byte name.
        let file = "07070100000003000081000000000000000000000000010000000000000000000000000000000000000000000000000000001a00000000";
        assert!(text.contains(file), "{text:?}");
    }

    #[test]
    fn names_the_stub_would_skip_are_refused() {
        for name in [".hidden.cred", "x.raw", "é.cred", ".cred", "a/b.cred"] {
            let files = [EspFile { name, data: b"" }];
            assert!(matches!(stub_archive(CREDENTIALS, &files), Err(Error::InvalidArgument { .. })), "{name}");
        }
        let long = format!("{}.cred", "a".repeat(251));
        assert!(stub_archive(CREDENTIALS, &[EspFile { name: &long, data: b"" }]).is_err());
        let twice = [EspFile { name: "a.cred", data: b"1" }, EspFile { name: "a.cred", data: b"2" }];
        assert!(stub_archive(CREDENTIALS, &twice).is_err());
        assert_eq!(stub_archive(SYSEXTS, &[]).unwrap(), None);
    }
}
