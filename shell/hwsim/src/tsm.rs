//! Simulated configfs-tsm: the report directory of `attest_attester::issuer::tsm`, served by this process.
//!
//! The kernel populates a report entry when it is created (`mkdir`) and answers through its attributes. Here
//! a watcher notices new entries in the directory and populates each with regular files (`generation`,
//! `provider`) and FIFOs for what the kernel computes on access (`inblob`, the backend's options such as
//! `privlevel`, `outblob`, `auxblob`); a thread per entry then reads what the attester writes — bumping
//! `generation` once per attribute, as the kernel does — and writes the backend's answer into `outblob` (and
//! `auxblob`). The attester's code path is the one it takes on a real kernel.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What answers a simulated report entry.
pub trait TsmBackend: Send + Sync + 'static {
    /// The `provider` attribute (`tdx_guest`, `sev_guest`).
    fn provider(&self) -> &'static str;
    /// The option attributes the attester writes before `inblob`, in order (SEV-SNP: `privlevel`).
    fn options(&self) -> &'static [&'static str];
    /// Whether entries have an `auxblob`.
    fn has_auxblob(&self) -> bool;
    /// The `outblob` and `auxblob` for `inblob` (zero-padded to 64 bytes) and the options' values.
    fn answer(&self, inblob: &[u8; 64], options: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>);
}

/// Creates a FIFO (mode 0600) at `path`, replacing what was there.
pub fn mkfifo(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("mkfifo").arg("-m").arg("0600").arg(path).status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("mkfifo {} failed", path.display()))) }
}

/// A watcher serving a report directory until dropped.
#[derive(Debug)]
pub struct TsmServer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TsmServer {
    /// Serves the report directory `reports` (created) with `backend`.
    pub fn start(backend: Arc<dyn TsmBackend>, reports: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(reports)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, reports) = (Arc::clone(&stop), reports.to_owned());
        let thread = std::thread::spawn(move || {
            let mut known = std::collections::HashSet::new();
            while !stop2.load(Ordering::SeqCst) {
                if let Ok(entries) = std::fs::read_dir(&reports) {
                    for e in entries.flatten() {
                        let path = e.path();
                        if path.is_dir() && known.insert(path.clone()) {
                            let backend = Arc::clone(&backend);
                            std::thread::spawn(move || serve_entry(&*backend, &path));
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Ok(Self { stop, thread: Some(thread) })
    }
}

impl Drop for TsmServer {
    /// Stops the watcher. Entry threads blocked in open(2) on a FIFO end with the process.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_fifo(path: &Path) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    std::fs::File::open(path).ok()?.read_to_end(&mut data).ok()?;
    Some(data)
}

fn write_fifo(path: &Path, data: &[u8]) -> Option<()> {
    std::fs::OpenOptions::new().write(true).open(path).ok()?.write_all(data).ok()
}

/// Populates one entry and answers its requests until a FIFO fails.
fn serve_entry(backend: &dyn TsmBackend, dir: &Path) {
    let generation = dir.join("generation");
    let fifos: Vec<PathBuf> = backend
        .options()
        .iter()
        .map(|o| dir.join(o))
        .chain(["inblob", "outblob"].map(|n| dir.join(n)))
        .chain(backend.has_auxblob().then(|| dir.join("auxblob")))
        .collect();
    if std::fs::write(&generation, b"0\n").is_err()
        || fifos.iter().any(|f| mkfifo(f).is_err())
        // Last, and whole at once (the attester takes `provider` appearing as "populated"; a kernel never
        // shows it half-written).
        || std::fs::write(dir.join(".provider"), format!("{}\n", backend.provider()))
            .and_then(|()| std::fs::rename(dir.join(".provider"), dir.join("provider")))
            .is_err()
    {
        return;
    }
    let mut counter = 0u32;
    let mut bump = || {
        counter = counter.wrapping_add(1);
        let tmp = dir.join(".generation");
        std::fs::write(&tmp, format!("{counter}\n")).and_then(|()| std::fs::rename(&tmp, &generation)).ok()
    };
    loop {
        let mut options = Vec::new();
        for o in backend.options() {
            let Some(v) = read_fifo(&dir.join(o)) else { return };
            options.push(v);
            if bump().is_none() {
                return;
            }
        }
        let Some(inblob) = read_fifo(&dir.join("inblob")) else { return };
        if bump().is_none() {
            return;
        }
        // The kernel takes up to 64 bytes and zero-pads.
        let mut data = [0u8; 64];
        let n = inblob.len().min(64);
        data[..n].copy_from_slice(&inblob[..n]);
        let (out, aux) = backend.answer(&data, &options);
        if write_fifo(&dir.join("outblob"), &out).is_none() {
            return;
        }
        if backend.has_auxblob() && write_fifo(&dir.join("auxblob"), &aux).is_none() {
            return;
        }
    }
}
