//! The LUKS2 state disk, through `cryptsetup` (the design is in [`crate::disk`]).
//!
//! ```text
//!  setup (fresh node, after the lock)            reopen (rejoin / recovery, after a reboot)
//!  luksFormat --type luks2                        isLuks ─no─▶ NotBootstrapped
//!    --cipher aes-xts-plain64 --key-size 512      open (key on stdin) ─wrong key─▶ Command error
//!    [--integrity hmac-sha256 --integrity-no-wipe]  mount /dev/mapper/state STATE_DIR
//!    --pbkdf pbkdf2 --pbkdf-force-iterations 1000
//!    --uuid UUID --key-file - DEVICE
//!  open --key-file - DEVICE state
//!  [zero the mapped device: integrity tags]
//!  mkfs.ext4 -L attest-state; mount at STATE_DIR
//! ```
//!
//! Header-only mode ([`LuksDisk::header_only`], machines without a device mapper) stops after the keyslot:
//! `open --test-passphrase` proves the key opens the disk, nothing is mapped or mounted, and
//! [`DiskSetup::protection`] says that the state directory is not encrypted.
//!
//! # Choices
//!
//! - **Key on stdin** (`--key-file -`: read verbatim to EOF, binary-safe); never an argument (visible in
//!   `/proc/PID/cmdline`) or a file.
//! - **PBKDF2 with 1000 iterations** (cryptsetup's minimum): the key is 256 random bits from the key service,
//!   not a passphrase; key stretching protects low-entropy secrets only, and Argon2's memory cost on every
//!   boot buys nothing here (Constellation formats its state disk the same way).
//! - **Integrity** (dm-integrity, `hmac-sha256`, so tampering with sectors is detected, not only hidden) where
//!   the kernel offers it ([`integrity_support`]: a device mapper and a dm-integrity module); otherwise the
//!   disk is formatted without and [`DiskSetup::protection`] — logged and stored in the node state — says
//!   why. With integrity the device is formatted with `--integrity-no-wipe` and then zeroed through the
//!   mapping, which writes every sector's tag once (unwritten sectors would read as integrity errors).
//! - **Node state in the header**: a LUKS2 token (id [`STATE_TOKEN_ID`], type [`STATE_TOKEN_TYPE`], no
//!   keyslots) holds the node state as JSON, so a rebooted node knows what it is before it has a key.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::disk::{
    DEFAULT_MAPPER_NAME, DiskError, DiskSetup, HeaderState, MAX_DIAGNOSTIC_LENGTH, is_uuid, random_uuid,
};
use crate::life::state::{MAX_STATE_FILE_SIZE, NodeState, STATE_FORMAT_VERSION};

/// The data cipher.
pub const CIPHER: &str = "aes-xts-plain64";
/// The volume key size for [`CIPHER`], in bits (two AES-256 keys).
pub const KEY_SIZE_BITS: &str = "512";
/// The dm-integrity algorithm where available.
pub const INTEGRITY_ALGORITHM: &str = "hmac-sha256";
/// The keyslot's PBKDF (see the module docs).
pub const PBKDF: &str = "pbkdf2";
/// Its iteration count (cryptsetup's minimum for PBKDF2).
pub const PBKDF_ITERATIONS: &str = "1000";
/// The LUKS2 token id holding the node state (LUKS2 has tokens 0..=31).
pub const STATE_TOKEN_ID: &str = "31";
/// The token's type.
pub const STATE_TOKEN_TYPE: &str = "attest-node-state";
/// The file system made on the mapped disk.
pub const FILESYSTEM_LABEL: &str = "attest-state";
/// Bytes written per call when zeroing a mapped integrity device.
pub const WIPE_BLOCK_SIZE: usize = 4 * 1024 * 1024;

/// Whether the kernel offers integrity protection for dm-crypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integrity {
    /// A device mapper and a dm-integrity module exist.
    Available,
    /// Not available, and why.
    Unavailable(&'static str),
}

/// Whether `/proc/self/mounts` (`mounts`) lists a mount at `dir` (its second field, with the kernel's octal
/// escapes of space, tab, newline and backslash).
pub fn mounted_at(mounts: &str, dir: &Path) -> bool {
    let unescape =
        |field: &str| field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    mounts.lines().filter_map(|l| l.split(' ').nth(1)).any(|m| Path::new(&unescape(m)) == dir)
}

/// Whether the kernel's device mapper is usable: `/dev/mapper/control` exists and the driver registered
/// it (`device-mapper` in `/proc/misc`; a container can have the node without the driver).
pub fn device_mapper_available() -> bool {
    Path::new("/dev/mapper/control").exists()
        && std::fs::read_to_string("/proc/misc")
            .is_ok_and(|t| t.lines().any(|l| l.trim_end().ends_with(" device-mapper")))
}

/// Probes this machine: a usable device mapper ([`device_mapper_available`]), then dm-integrity loaded
/// (`/sys/module/dm_integrity`), built in or loadable (`/lib/modules/<release>/modules.{builtin,dep}`).
pub fn integrity_support() -> Integrity {
    if !device_mapper_available() {
        return Integrity::Unavailable("no device mapper (/dev/mapper/control absent or no device-mapper driver)");
    }
    if Path::new("/sys/module/dm_integrity").exists() {
        return Integrity::Available;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let dir = Path::new("/lib/modules").join(release.trim());
    let listed = ["modules.builtin", "modules.dep"]
        .iter()
        .any(|f| std::fs::read_to_string(dir.join(f)).is_ok_and(|t| t.contains("dm-integrity.ko")));
    if listed { Integrity::Available } else { Integrity::Unavailable("the kernel has no dm-integrity module") }
}

/// A command line, built but not run. What goes to standard input (a key, a token) is never here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Whether the command reads a secret or a document from its standard input.
    pub stdin_key: bool,
}

#[derive(Clone, Debug)]
enum Mode {
    /// Mapped (and mounted at `mount`, when set).
    Mapped { mount: Option<PathBuf>, integrity: Integrity },
    /// Header and keyslot only.
    HeaderOnly,
}

/// LUKS2 on a block device (or, header-only, on a file) with `cryptsetup`.
#[derive(Debug)]
pub struct LuksDisk {
    device: PathBuf,
    mapper_name: String,
    cryptsetup: PathBuf,
    mkfs: PathBuf,
    mount: PathBuf,
    mode: Mode,
    generated_uuid: Mutex<Option<String>>,
}

impl LuksDisk {
    /// The state disk `device`, mapped as `/dev/mapper/`[`DEFAULT_MAPPER_NAME`], with integrity where
    /// [`integrity_support`] finds it, `cryptsetup`, `mkfs.ext4` and `mount` from PATH. Not mounted unless
    /// [`LuksDisk::with_mount`] says where.
    pub fn new(device: &Path) -> LuksDisk {
        Self::with_mode(device, Mode::Mapped { mount: None, integrity: integrity_support() })
    }

    /// Header-only mode on `file` (see the module docs): format and key check, nothing mapped.
    pub fn header_only(file: &Path) -> LuksDisk {
        Self::with_mode(file, Mode::HeaderOnly)
    }

    fn with_mode(device: &Path, mode: Mode) -> LuksDisk {
        LuksDisk {
            device: device.to_owned(),
            mapper_name: DEFAULT_MAPPER_NAME.to_owned(),
            cryptsetup: PathBuf::from("cryptsetup"),
            mkfs: PathBuf::from("mkfs.ext4"),
            mount: PathBuf::from("mount"),
            mode,
            generated_uuid: Mutex::new(None),
        }
    }

    /// Mounts the mapped disk at `dir` (the node's state directory).
    pub fn with_mount(mut self, dir: &Path) -> LuksDisk {
        if let Mode::Mapped { mount, .. } = &mut self.mode {
            *mount = Some(dir.to_owned());
        }
        self
    }

    /// Overrides the integrity probe (tests, or an operator who knows better).
    pub fn with_integrity(mut self, value: Integrity) -> LuksDisk {
        if let Mode::Mapped { integrity, .. } = &mut self.mode {
            *integrity = value;
        }
        self
    }

    /// Uses this cryptsetup binary.
    pub fn with_cryptsetup(mut self, program: &Path) -> LuksDisk {
        program.clone_into(&mut self.cryptsetup);
        self
    }

    /// Uses these `mkfs.ext4` and `mount` binaries.
    pub fn with_tools(mut self, mkfs: &Path, mount: &Path) -> LuksDisk {
        mkfs.clone_into(&mut self.mkfs);
        mount.clone_into(&mut self.mount);
        self
    }

    /// Opens the device under this device-mapper name.
    pub fn with_mapper_name(mut self, name: &str) -> LuksDisk {
        name.clone_into(&mut self.mapper_name);
        self
    }

    /// The mapped device (`/dev/mapper/NAME`).
    pub fn mapped_path(&self) -> PathBuf {
        Path::new("/dev/mapper").join(&self.mapper_name)
    }

    fn integrity(&self) -> Integrity {
        match &self.mode {
            Mode::Mapped { integrity, .. } => *integrity,
            Mode::HeaderOnly => Integrity::Unavailable("header-only mode (nothing is mapped)"),
        }
    }

    fn line(&self, args: &[&str], device_last: bool, stdin_key: bool) -> CommandLine {
        let mut v: Vec<OsString> = args.iter().map(OsString::from).collect();
        if device_last {
            v.push(self.device.clone().into_os_string());
        }
        CommandLine { program: self.cryptsetup.clone(), args: v, stdin_key }
    }

    /// `cryptsetup luksFormat` with the cipher, key size, PBKDF and (where available) integrity of the module
    /// docs, `--uuid UUID --key-file - DEVICE` (key on stdin).
    pub fn format_command(&self, uuid: &str) -> CommandLine {
        let mut args = vec![
            "luksFormat",
            "--type",
            "luks2",
            "--batch-mode",
            "--cipher",
            CIPHER,
            "--key-size",
            KEY_SIZE_BITS,
            "--pbkdf",
            PBKDF,
            "--pbkdf-force-iterations",
            PBKDF_ITERATIONS,
        ];
        if self.integrity() == Integrity::Available {
            args.extend(["--integrity", INTEGRITY_ALGORITHM, "--integrity-no-wipe"]);
        }
        args.extend(["--uuid", uuid, "--key-file", "-"]);
        self.line(&args, true, true)
    }

    /// Mapped: `cryptsetup open --type luks2 --key-file - DEVICE NAME`; header-only: `cryptsetup open
    /// --test-passphrase --type luks2 --key-file - DEVICE`. Key on stdin.
    pub fn open_command(&self) -> CommandLine {
        match self.mode {
            Mode::Mapped { .. } => {
                let mut c = self.line(&["open", "--type", "luks2", "--key-file", "-"], true, true);
                c.args.push(OsString::from(&self.mapper_name));
                c
            }
            Mode::HeaderOnly => self.test_key_command(),
        }
    }

    /// `cryptsetup open --test-passphrase --type luks2 --key-file - DEVICE`: checks the key (on stdin) against
    /// a keyslot and maps nothing.
    pub fn test_key_command(&self) -> CommandLine {
        self.line(&["open", "--test-passphrase", "--type", "luks2", "--key-file", "-"], true, true)
    }

    /// `cryptsetup isLuks DEVICE`.
    pub fn is_luks_command(&self) -> CommandLine {
        self.line(&["isLuks"], true, false)
    }

    /// `cryptsetup luksUUID DEVICE`.
    pub fn uuid_command(&self) -> CommandLine {
        self.line(&["luksUUID"], true, false)
    }

    /// `cryptsetup token export --token-id 31 DEVICE`.
    pub fn token_export_command(&self) -> CommandLine {
        self.line(&["token", "export", "--token-id", STATE_TOKEN_ID], true, false)
    }

    /// `cryptsetup token import --token-id 31 --token-replace --json-file - DEVICE` (the token on stdin).
    pub fn token_import_command(&self) -> CommandLine {
        self.line(&["token", "import", "--token-id", STATE_TOKEN_ID, "--token-replace", "--json-file", "-"], true, true)
    }

    /// `cryptsetup token remove --token-id 31 DEVICE`.
    pub fn token_remove_command(&self) -> CommandLine {
        self.line(&["token", "remove", "--token-id", STATE_TOKEN_ID], true, false)
    }

    /// `cryptsetup erase --batch-mode DEVICE`: destroys every keyslot (the disk's data becomes unreadable).
    pub fn erase_command(&self) -> CommandLine {
        self.line(&["erase", "--batch-mode"], true, false)
    }

    /// Runs `line`, writing `input` to its standard input if it takes one. Returns its exit status and output
    /// (standard output cut at [`MAX_STATE_FILE_SIZE`]).
    fn run(line: &CommandLine, input: Option<&[u8]>) -> Result<std::process::Output, DiskError> {
        let mut cmd = Command::new(&line.program);
        cmd.args(&line.args)
            .stdin(if line.stdin_key { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| DiskError::Spawn { program: line.program.clone(), source })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A write error (the program exited early) shows up in its exit status below.
            let _ = stdin.write_all(input.unwrap_or_default());
        }
        let mut out =
            child.wait_with_output().map_err(|source| DiskError::Spawn { program: line.program.clone(), source })?;
        out.stdout.truncate(usize::try_from(MAX_STATE_FILE_SIZE).unwrap_or(usize::MAX));
        Ok(out)
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

    /// Whether the device has a LUKS header. Only cryptsetup's "not LUKS" (exit 1) is a no: a device that
    /// cannot be read (exit 4, and anything else) is an error, never taken for a fresh disk that may be
    /// formatted.
    fn is_luks(&self) -> Result<bool, DiskError> {
        let out = Self::run(&self.is_luks_command(), None)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Self::check("isLuks", &out).map(|()| false),
        }
    }

    fn tool(action: &'static str, program: &Path, args: &[&std::ffi::OsStr]) -> Result<(), DiskError> {
        let line = CommandLine {
            program: program.to_owned(),
            args: args.iter().map(|a| a.to_os_string()).collect(),
            stdin_key: false,
        };
        Self::check(action, &Self::run(&line, None)?)
    }

    /// Writes zeros over the whole mapped device (integrity tags for every sector).
    fn wipe_mapped(&self) -> Result<(), DiskError> {
        let path = self.mapped_path();
        let file_error = |source| DiskError::File(crate::atomic::FileError { path: path.clone(), source });
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).map_err(file_error)?;
        let zeros = vec![0u8; WIPE_BLOCK_SIZE];
        loop {
            match f.write(&zeros) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => break, // ENOSPC: the end of the device
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(file_error(e)),
            }
        }
        f.sync_all().map_err(file_error)
    }

    fn mount_at(&self, dir: &Path) -> Result<(), DiskError> {
        std::fs::create_dir_all(dir)
            .map_err(|source| DiskError::File(crate::atomic::FileError { path: dir.to_owned(), source }))?;
        let dev = self.mapped_path();
        Self::tool("mount", &self.mount.clone(), &[dev.as_os_str(), dir.as_os_str()])
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
        let uuid = self.disk_uuid()?;
        Self::check("luksFormat", &Self::run(&self.format_command(&uuid), Some(key))?)?;
        attest_util::fault::point("disk.formatted");
        Self::check("open", &Self::run(&self.open_command(), Some(key))?)?;
        match &self.mode {
            Mode::HeaderOnly => Ok(format!(
                "formatted a LUKS2 header on {} (UUID {uuid}) and checked the key against its keyslot; {}",
                self.device.display(),
                self.protection()
            )),
            Mode::Mapped { mount, integrity } => {
                if *integrity == Integrity::Available {
                    self.wipe_mapped()?;
                }
                let dev = self.mapped_path();
                Self::tool(
                    "mkfs",
                    &self.mkfs.clone(),
                    &["-q".as_ref(), "-F".as_ref(), "-L".as_ref(), FILESYSTEM_LABEL.as_ref(), dev.as_os_str()],
                )?;
                if let Some(dir) = mount {
                    self.mount_at(dir)?;
                }
                Ok(format!(
                    "formatted {} (LUKS2, UUID {uuid}), opened as {}, ext4{}; {}",
                    self.device.display(),
                    dev.display(),
                    mount.as_ref().map(|d| format!(", mounted at {}", d.display())).unwrap_or_default(),
                    self.protection()
                ))
            }
        }
    }

    fn reopen(&self, key: &[u8]) -> Result<String, DiskError> {
        if !self.is_luks()? {
            return Err(DiskError::NotBootstrapped { reason: format!("{} has no LUKS header", self.device.display()) });
        }
        // Reopening runs again after a crash in the same boot (the rejoin's steps repeat until PCR 15 is
        // re-extended): a mapping left by the stopped run is kept once the key is shown to open the disk.
        let mapped = matches!(self.mode, Mode::Mapped { .. }) && self.mapped_path().exists();
        let open = if mapped { self.test_key_command() } else { self.open_command() };
        Self::check("open", &Self::run(&open, Some(key))?)?;
        match &self.mode {
            Mode::HeaderOnly => Ok(format!(
                "the key opens {} (open --test-passphrase); not mapped: header-only mode",
                self.device.display()
            )),
            Mode::Mapped { mount, .. } => {
                if let Some(dir) = mount
                    && !mounted_at(&std::fs::read_to_string("/proc/self/mounts").unwrap_or_default(), dir)
                {
                    self.mount_at(dir)?;
                }
                Ok(format!(
                    "{} {} as {}{}",
                    if mapped { "found open (key checked):" } else { "reopened" },
                    self.device.display(),
                    self.mapped_path().display(),
                    mount.as_ref().map(|d| format!(", mounted at {}", d.display())).unwrap_or_default()
                ))
            }
        }
    }

    fn protection(&self) -> String {
        match (&self.mode, self.integrity()) {
            (Mode::HeaderOnly, _) => format!(
                "LUKS2 header only ({CIPHER}): nothing mapped, the state directory is NOT encrypted (no device mapper)"
            ),
            (Mode::Mapped { .. }, Integrity::Available) => {
                format!("LUKS2 {CIPHER}, integrity {INTEGRITY_ALGORITHM} (dm-integrity)")
            }
            (Mode::Mapped { .. }, Integrity::Unavailable(why)) => {
                format!("LUKS2 {CIPHER}, NO integrity protection: {why}")
            }
        }
    }

    fn header_state(&self) -> Result<HeaderState, DiskError> {
        if !self.is_luks()? {
            return Ok(HeaderState::Absent);
        }
        let out = Self::run(&self.token_export_command(), None)?;
        if !out.status.success() {
            // No token 31 (exit 1, "Failed to get token"): a disk with no node state. Anything else is an
            // error: a header read failure must not pass for a fresh disk (the next step would format it).
            let missing =
                out.status.code() == Some(1) && String::from_utf8_lossy(&out.stderr).contains("Failed to get token");
            return if missing {
                Ok(HeaderState::Absent)
            } else {
                Self::check("token export", &out).map(|()| HeaderState::Absent)
            };
        }
        let bad = |reason: String| DiskError::HeaderState { reason };
        let token: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| bad(e.to_string()))?;
        if token.get("type").and_then(serde_json::Value::as_str) != Some(STATE_TOKEN_TYPE) {
            return Err(bad(format!("token {STATE_TOKEN_ID} is not of type {STATE_TOKEN_TYPE}")));
        }
        let state: NodeState = serde_json::from_value(token.get("node_state").cloned().unwrap_or_default())
            .map_err(|e| bad(e.to_string()))?;
        if state.version != STATE_FORMAT_VERSION {
            return Err(bad(format!("format version {}", state.version)));
        }
        Ok(HeaderState::Present(state))
    }

    fn record_state(&self, state: &NodeState) -> Result<(), DiskError> {
        let token = serde_json::json!({"type": STATE_TOKEN_TYPE, "keyslots": [], "node_state": state});
        Self::check("token import", &Self::run(&self.token_import_command(), Some(token.to_string().as_bytes()))?)
    }

    fn reset(&self) -> Result<String, DiskError> {
        if !self.is_luks()? {
            return Ok(format!("{} has no LUKS header: nothing to reset", self.device.display()));
        }
        // The token first: a disk without it is a fresh disk, whatever happens to the keyslots.
        let _ = Self::run(&self.token_remove_command(), None)?;
        attest_util::fault::point("reset.token-removed");
        Self::check("erase", &Self::run(&self.erase_command(), None)?)?;
        Ok(format!("{}: node state removed from the header and every keyslot erased", self.device.display()))
    }
}

#[cfg(test)]
mod tests;
