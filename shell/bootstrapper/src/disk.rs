//! Disk set-up: what the node does with its state-disk key, behind one trait ([`DiskSetup`]).
//!
//! | implementation | where | what `setup` does | strength |
//! |---|---|---|---|
//! | [`LuksDisk`] | machines with dm-crypt and `cryptsetup` | `cryptsetup luksFormat` (first use) and `cryptsetup open` of the configured device with the key | the key never touches a file system; data at rest is encrypted |
//! | [`KeyFileDisk`] | machines without dm-crypt (containers, CI, the local demo) | writes the key to a 0600 file in a runtime directory | **weaker**: the key sits in a file readable by root; nothing is encrypted — it only proves the key arrived |
//!
//! # Keys never on a command line
//!
//! The key is written to cryptsetup's standard input (`--key-file -`, which makes cryptsetup read the key
//! verbatim up to EOF: binary-safe, no newline handling); command lines are visible to every local user in
//! `/proc/PID/cmdline`. [`LuksDisk::format_command`] and [`LuksDisk::open_command`] build the commands without
//! running them, so tests check their construction where cryptsetup is absent.
//!
//! # Disk UUID
//!
//! The key is derived per disk UUID (`state_disk_key(master, uuid)`), and the UUID is needed before the lock
//! (the join request carries it). [`LuksDisk`] uses the LUKS header's UUID when the device is already LUKS
//! and otherwise generates one and formats the device with it (`luksFormat --uuid`); [`KeyFileDisk`] keeps a
//! generated UUID in its directory. Both generate random version-4 UUIDs (RFC 9562 §5.4).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::atomic::{FileError, PUBLIC_FILE_MODE, SECRET_FILE_MODE, write_atomic};

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
    /// Sets the disk up with `key` (32 bytes). Returns a one-line description for the log.
    fn setup(&self, key: &[u8]) -> Result<String, DiskError>;
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
}

// ---- LUKS ----------------------------------------------------------------------------------------------

/// A command line, built but not run. The key (when `stdin_key`) goes to standard input, never here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Whether the key is written to its standard input.
    pub stdin_key: bool,
}

/// LUKS2 on a block device with `cryptsetup`.
#[derive(Debug)]
pub struct LuksDisk {
    device: PathBuf,
    mapper_name: String,
    cryptsetup: PathBuf,
    generated_uuid: Mutex<Option<String>>,
}

impl LuksDisk {
    /// The state disk `device`, opened as `/dev/mapper/`[`DEFAULT_MAPPER_NAME`], with `cryptsetup` from PATH.
    pub fn new(device: &Path) -> LuksDisk {
        LuksDisk {
            device: device.to_owned(),
            mapper_name: DEFAULT_MAPPER_NAME.to_owned(),
            cryptsetup: PathBuf::from("cryptsetup"),
            generated_uuid: Mutex::new(None),
        }
    }

    /// Uses this cryptsetup binary.
    pub fn with_cryptsetup(mut self, program: &Path) -> LuksDisk {
        program.clone_into(&mut self.cryptsetup);
        self
    }

    /// Opens the device under this device-mapper name.
    pub fn with_mapper_name(mut self, name: &str) -> LuksDisk {
        name.clone_into(&mut self.mapper_name);
        self
    }

    fn line(&self, args: &[&str], device_last: bool, stdin_key: bool) -> CommandLine {
        let mut v: Vec<OsString> = args.iter().map(OsString::from).collect();
        if device_last {
            v.push(self.device.clone().into_os_string());
        }
        CommandLine { program: self.cryptsetup.clone(), args: v, stdin_key }
    }

    /// `cryptsetup luksFormat --type luks2 --batch-mode --uuid UUID --key-file - DEVICE` (key on stdin).
    pub fn format_command(&self, uuid: &str) -> CommandLine {
        self.line(&["luksFormat", "--type", "luks2", "--batch-mode", "--uuid", uuid, "--key-file", "-"], true, true)
    }

    /// `cryptsetup open --type luks2 --key-file - DEVICE NAME` (key on stdin).
    pub fn open_command(&self) -> CommandLine {
        let mut c = self.line(&["open", "--type", "luks2", "--key-file", "-"], true, true);
        c.args.push(OsString::from(&self.mapper_name));
        c
    }

    /// `cryptsetup isLuks DEVICE`.
    pub fn is_luks_command(&self) -> CommandLine {
        self.line(&["isLuks"], true, false)
    }

    /// `cryptsetup luksUUID DEVICE`.
    pub fn uuid_command(&self) -> CommandLine {
        self.line(&["luksUUID"], true, false)
    }

    /// Runs `line`, writing `key` to its standard input if it takes one. Returns its exit status and output.
    fn run(line: &CommandLine, key: Option<&[u8]>) -> Result<std::process::Output, DiskError> {
        let mut cmd = Command::new(&line.program);
        cmd.args(&line.args)
            .stdin(if line.stdin_key { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| DiskError::Spawn { program: line.program.clone(), source })?;
        if let (Some(mut stdin), Some(key)) = (child.stdin.take(), key) {
            // A write error (cryptsetup exited early) shows up in its exit status below.
            let _ = stdin.write_all(key);
        }
        child.wait_with_output().map_err(|source| DiskError::Spawn { program: line.program.clone(), source })
    }

    fn check(action: &'static str, out: &std::process::Output) -> Result<(), DiskError> {
        if out.status.success() {
            return Ok(());
        }
        let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if stderr.len() > MAX_DIAGNOSTIC_LENGTH {
            let mut end = MAX_DIAGNOSTIC_LENGTH;
            while !stderr.is_char_boundary(end) {
                end -= 1;
            }
            stderr.truncate(end);
        }
        Err(DiskError::Command { action, status: out.status, stderr })
    }

    fn is_luks(&self) -> Result<bool, DiskError> {
        Ok(Self::run(&self.is_luks_command(), None)?.status.success())
    }
}

impl DiskSetup for LuksDisk {
    fn disk_uuid(&self) -> Result<String, DiskError> {
        if self.is_luks()? {
            let out = Self::run(&self.uuid_command(), None)?;
            Self::check("luksUUID", &out)?;
            let uuid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            return if is_uuid(&uuid) {
                Ok(uuid)
            } else {
                Err(DiskError::InvalidUuid { source: "cryptsetup luksUUID" })
            };
        }
        let mut g = self.generated_uuid.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(g.get_or_insert_with(random_uuid).clone())
    }

    fn setup(&self, key: &[u8]) -> Result<String, DiskError> {
        let mut formatted = false;
        if !self.is_luks()? {
            let uuid = self.disk_uuid()?;
            Self::check("luksFormat", &Self::run(&self.format_command(&uuid), Some(key))?)?;
            formatted = true;
        }
        Self::check("open", &Self::run(&self.open_command(), Some(key))?)?;
        Ok(format!(
            "{} {} as /dev/mapper/{}",
            if formatted { "formatted (LUKS2) and opened" } else { "opened" },
            self.device.display(),
            self.mapper_name
        ))
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
    fn luks_commands_keep_the_key_off_the_command_line() {
        let d = LuksDisk::new(Path::new("/dev/vdb")).with_mapper_name("state");
        let uuid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
        let f = d.format_command(uuid);
        assert_eq!(f.program, PathBuf::from("cryptsetup"));
        assert_eq!(
            f.args,
            ["luksFormat", "--type", "luks2", "--batch-mode", "--uuid", uuid, "--key-file", "-", "/dev/vdb"]
                .map(OsString::from)
        );
        assert!(f.stdin_key);
        let o = d.open_command();
        assert_eq!(o.args, ["open", "--type", "luks2", "--key-file", "-", "/dev/vdb", "state"].map(OsString::from));
        assert!(o.stdin_key);
        assert!(!d.is_luks_command().stdin_key);
        assert_eq!(d.uuid_command().args, ["luksUUID", "/dev/vdb"].map(OsString::from));
    }

    /// A fake cryptsetup (a shell script) records its arguments and standard input: the key arrives on stdin
    /// and nowhere in the arguments.
    #[test]
    fn luks_setup_with_a_fake_cryptsetup() {
        let tmp = attest_test_support::TempDir::new("luks");
        let dir = tmp.path();
        let script = dir.join("cryptsetup");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nD={d}\necho \"$@\" >> $D/args\ncase \"$1\" in\n  isLuks) test -f $D/formatted ;;\n  \
                 luksFormat) cat > $D/format-key; touch $D/formatted ;;\n  open) cat > $D/open-key ;;\n  \
                 luksUUID) echo 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9 ;;\nesac\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let disk = LuksDisk::new(Path::new("/dev/fake")).with_cryptsetup(&script);
        let uuid = disk.disk_uuid().unwrap();
        assert!(is_uuid(&uuid));
        assert_eq!(disk.disk_uuid().unwrap(), uuid, "stable before formatting");
        let key = [0xA5u8; 32];
        let report = disk.setup(&key).unwrap();
        assert!(report.contains("formatted"), "{report}");
        assert_eq!(std::fs::read(dir.join("format-key")).unwrap(), key);
        assert_eq!(std::fs::read(dir.join("open-key")).unwrap(), key);
        let args = std::fs::read_to_string(dir.join("args")).unwrap();
        assert!(args.contains(&format!("luksFormat --type luks2 --batch-mode --uuid {uuid} --key-file - /dev/fake")));
        assert!(!args.contains(&hex::encode(key)) && !args.contains("\u{a5}"));
        // Formatted now: the UUID comes from the header, setup only opens.
        assert_eq!(disk.disk_uuid().unwrap(), "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
        assert!(disk.setup(&key).unwrap().starts_with("opened"));
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
