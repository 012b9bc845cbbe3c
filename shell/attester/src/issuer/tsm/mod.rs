//! Linux's configfs-tsm report interface (`/sys/kernel/config/tsm/report`, kernel 6.7+): one transport for
//! TD quotes (provider `tdx_guest`) and SEV-SNP reports (provider `sev_guest`), by plain file I/O.
//!
//! ```text
//!  TsmEntry::create(root, provider)   mkdir root/attest-<pid>-<n>   (the kernel populates the attributes)
//!  TsmEntry::request(inblob, options)
//!     read generation ─► write each option (privlevel, …) ─► write inblob ─► read outblob, auxblob
//!     ─► read generation ─► output::check_output: generation moved by our writes alone, the blob parses and
//!        carries our inblob ─► evidence (a conflict is retried, MAX_CONFLICT_RETRIES times)
//!  drop                               rmdir the entry
//! ```
//!
//! An entry is private to its [`TsmEntry`] (a fresh name per process and entry) and used under a mutex, so a
//! conflict means another process wrote into it; the request is then repeated, never answered with a blob
//! that may be another writer's. The checks of the output are the pure [`output`] module (the `attest-tsm` crate).
//!
//! The kernel populates a new entry's attributes before `mkdir` returns. A directory populated by another
//! process (the simulated hardware of `attest-hwsim`, which serves the same layout with FIFOs in place of
//! the kernel's attributes) may take a moment: [`TsmEntry::create`] waits for `provider` to appear, up to
//! [`ENTRY_READY_TIMEOUT`] — on a real kernel the wait ends at once.

pub use attest_tsm as output;

use output::{INBLOB_SIZE, MAX_ATTRIBUTE_TEXT, MAX_AUXBLOB_SIZE, MAX_OUTBLOB_SIZE, Provider, RawOutput, TsmError};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The report directory under the system root.
pub const TSM_REPORT_DIR: &str = "sys/kernel/config/tsm/report";
/// How long [`TsmEntry::create`] waits for a new entry's attributes.
pub const ENTRY_READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a request is repeated after a generation conflict.
pub const MAX_CONFLICT_RETRIES: usize = 3;

static NEXT_ENTRY: AtomicU64 = AtomicU64::new(0);

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> TsmError {
    let path = path.display().to_string();
    move |source| TsmError::Io { op, path, source }
}

/// Reads an attribute, at most `limit` bytes (one more is read to notice an oversized one).
fn read_bounded(path: &Path, limit: usize, what: &'static str) -> Result<Vec<u8>, TsmError> {
    let file = std::fs::File::open(path).map_err(io("opening", path))?;
    let mut out = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut out).map_err(io("reading", path))?;
    if out.len() > limit {
        return Err(TsmError::Oversized { what, limit });
    }
    Ok(out)
}

/// Writes an attribute in one write.
fn write_attribute(path: &Path, data: &[u8]) -> Result<(), TsmError> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).map_err(io("opening", path))?;
    file.write_all(data).map_err(io("writing", path))
}

/// One report entry of ours.
#[derive(Debug)]
pub struct TsmEntry {
    dir: PathBuf,
    provider: Provider,
    lock: Mutex<()>,
}

impl TsmEntry {
    /// Creates an entry under `root` (the report directory) and checks that its backend is `want`.
    /// [`TsmError::Io`] with `NotFound` when `root` does not exist (no configfs-tsm on this kernel).
    pub fn create(root: &Path, want: Provider) -> Result<Self, TsmError> {
        let name = format!("attest-{}-{}", std::process::id(), NEXT_ENTRY.fetch_add(1, Ordering::Relaxed));
        let dir = root.join(name);
        std::fs::create_dir(&dir).map_err(io("creating", &dir))?;
        let entry = Self { dir, provider: want, lock: Mutex::new(()) };
        let provider = entry.dir.join("provider");
        let start = Instant::now();
        while !provider.exists() {
            if start.elapsed() > ENTRY_READY_TIMEOUT {
                return Err(TsmError::NotReady { path: entry.dir.display().to_string() });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        output::parse_provider(&read_bounded(&provider, MAX_ATTRIBUTE_TEXT, "provider")?, want)?;
        Ok(entry)
    }

    /// The entry's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// One request: `options` (attribute name and value, e.g. SEV-SNP's `privlevel`) written first, then
    /// `inblob`; returns the checked evidence (a TD quote without padding, or an SNP report) and the
    /// `auxblob` (SEV-SNP's certificate table; empty when absent).
    pub fn request(
        &self,
        inblob: &[u8; INBLOB_SIZE],
        options: &[(&str, &[u8])],
    ) -> Result<(Vec<u8>, Vec<u8>), TsmError> {
        let _guard = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut attempt = 0;
        loop {
            match self.request_once(inblob, options) {
                Err(TsmError::Conflict { before, after, writes }) if attempt < MAX_CONFLICT_RETRIES => {
                    tracing::warn!(entry = %self.dir.display(), before, after, writes, "configfs-tsm: concurrent writer; repeating the request");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn request_once(
        &self,
        inblob: &[u8; INBLOB_SIZE],
        options: &[(&str, &[u8])],
    ) -> Result<(Vec<u8>, Vec<u8>), TsmError> {
        let generation = self.dir.join("generation");
        let before = read_bounded(&generation, MAX_ATTRIBUTE_TEXT, "generation")?;
        for (name, value) in options {
            write_attribute(&self.dir.join(name), value)?;
        }
        write_attribute(&self.dir.join("inblob"), inblob)?;
        let outblob = read_bounded(&self.dir.join("outblob"), MAX_OUTBLOB_SIZE, "outblob")?;
        let aux_path = self.dir.join("auxblob");
        let auxblob = if self.provider == Provider::SevGuest && aux_path.exists() {
            read_bounded(&aux_path, MAX_AUXBLOB_SIZE, "auxblob")?
        } else {
            Vec::new()
        };
        let after = read_bounded(&generation, MAX_ATTRIBUTE_TEXT, "generation")?;
        let writes = u32::try_from(options.len() + 1).unwrap_or(u32::MAX);
        let raw = RawOutput {
            generation_before: &before,
            generation_after: &after,
            writes,
            outblob: &outblob,
            auxblob: &auxblob,
        };
        let checked = output::check_output(self.provider, inblob, &raw)?;
        Ok((checked.evidence.to_vec(), checked.auxblob.to_vec()))
    }
}

impl Drop for TsmEntry {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            tracing::debug!(entry = %self.dir.display(), error = %e, "configfs-tsm: entry not removed");
        }
    }
}
