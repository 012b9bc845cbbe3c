//! A simulated SEV-SNP guest device: the AMD secure processor's answer to `SNP_GET_EXT_REPORT`, signed by a
//! generated test VCEK (or VLEK), served on a Unix socket in the framing of
//! `attest_attester::issuer::sevguest::wire`.
//!
//! ```text
//!  SimulatedSnp::provision(dir)  ── generates ARK → ASK (VCEK) or ARK → ASVK (VLEK) and the leaf; writes the
//!                                   test-root directory (attest_kds::test_roots layout) and the leaf
//!  SnpServer::start(socket)      ── per connection: MSG_REPORT_REQ ──► report {REPORT_DATA, VMPL from the
//!                                   request; MEASUREMENT of the simulated guest; TCB, CHIP_ID of the leaf}
//!                                   signed by the leaf ──► MSG_REPORT_RSP + certificate table (leaf, ASK/ASVK, ARK)
//! ```
//!
//! The keys live in this process only; the directory holds certificates and CRLs, plus a CRL that revokes
//! the leaf (`snp/crl-revoking.der`), which the revoked-VCEK attack installs in a copy of the directory.

use attest_attester::issuer::sevguest::{REPORT_RSP_SIZE, wire};
use attest_engine::snp::{CertKind, REPORT_SIZE, encode_cert_table};
use attest_kds::test_roots::{MARKER, files};
use attest_test_support::{CrlSpec, Leaf, LeafSpec, Product, ReportBuilder, SigningKeyKind, TestPki};
use std::io::{Read as _, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The leaf certificate (VCEK or VLEK), for attesters whose host supplies none (Azure's THIM stand-in).
pub const LEAF_FILE: &str = "snp/leaf.der";
/// An ARK-signed CRL revoking the leaf (not installed by default).
pub const REVOKING_CRL_FILE: &str = "snp/crl-revoking.der";
/// The serial number of every simulated leaf.
pub const LEAF_SERIAL: [u8; 3] = [0x51, 0x4D, 0x01];
/// The launch MEASUREMENT of the simulated guest when none is configured.
pub const DEFAULT_MEASUREMENT: [u8; 48] = *b"attest-hwsim simulated guest launch measurement!";

/// The simulated chip: its test PKI, leaf and the guest it reports for.
pub struct SimulatedSnp {
    pki: TestPki,
    leaf: Leaf,
    measurement: [u8; 48],
    dir: PathBuf,
}

impl core::fmt::Debug for SimulatedSnp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimulatedSnp")
            .field("kind", &self.leaf.kind)
            .field("measurement", &hex::encode(self.measurement))
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, data)
}

impl SimulatedSnp {
    /// Generates a Milan test PKI whose leaf is a VCEK (`kind` Vcek: GCP, Azure) or a VLEK (AWS), a guest
    /// with `measurement`, and writes the test-root directory `dir` (created; existing SNP files replaced).
    pub fn provision(dir: &Path, kind: SigningKeyKind, measurement: [u8; 48]) -> std::io::Result<Self> {
        let pki = TestPki::new(Product::Milan, kind);
        let leaf = pki.issue_leaf(&LeafSpec::new().serial(LEAF_SERIAL.to_vec()));
        write(dir, MARKER, crate::BANNER.as_bytes())?;
        write(dir, files::SNP_PRODUCT, Product::Milan.name().as_bytes())?;
        write(dir, files::SNP_ARK, pki.ark_der())?;
        let (intermediate, crl_file, stale) = match kind {
            SigningKeyKind::Vcek => (files::SNP_ASK, files::SNP_CRL_VCEK, files::SNP_ASVK),
            SigningKeyKind::Vlek => (files::SNP_ASVK, files::SNP_CRL_VLEK, files::SNP_ASK),
        };
        write(dir, intermediate, pki.ask_der())?;
        for old in [stale, files::SNP_CRL_VCEK, files::SNP_CRL_VLEK] {
            let _ = std::fs::remove_file(dir.join(old));
        }
        write(dir, crl_file, &pki.issue_crl(&CrlSpec::new()))?;
        let revoked_at = attest_test_support::unix_time(2024, 1, 1, 0, 0, 0);
        write(dir, REVOKING_CRL_FILE, &pki.issue_crl(&CrlSpec::new().revoke(LEAF_SERIAL.to_vec(), revoked_at)))?;
        write(dir, LEAF_FILE, &leaf.der)?;
        Ok(Self { pki, leaf, measurement, dir: dir.to_owned() })
    }

    /// The leaf (VCEK or VLEK).
    pub fn leaf(&self) -> &Leaf {
        &self.leaf
    }

    /// The test-root directory.
    pub fn directory(&self) -> &Path {
        &self.dir
    }

    /// The launch MEASUREMENT of the simulated guest.
    pub fn measurement(&self) -> [u8; 48] {
        self.measurement
    }

    /// The CRL file name (in the test-root directory) of this chip's leaf kind.
    pub fn crl_file(&self) -> &'static str {
        match self.leaf.kind {
            SigningKeyKind::Vcek => files::SNP_CRL_VCEK,
            SigningKeyKind::Vlek => files::SNP_CRL_VLEK,
        }
    }

    /// The answer to one framed request: a signed report in MSG_REPORT_RSP and the certificate table, or an
    /// error reply.
    pub fn answer(&self, request: &[u8], report_id: u64) -> Vec<u8> {
        let Ok((_version, req)) = wire::decode_request(request) else {
            return wire::encode_error(0x16, "malformed request");
        };
        let (report_data, vmpl) = wire::split_request(&req);
        if vmpl > 3 {
            return wire::encode_error(0x16, "VMPL above 3");
        }
        let (report, table) = self.report(&report_data, vmpl, report_id);
        let response: [u8; REPORT_RSP_SIZE] = wire::encode_response(&report);
        wire::encode_reply(&response, &table)
    }

    /// A signed report for `report_data` at `vmpl` and the certificate table (leaf, ASK/ASVK, ARK).
    pub fn report(&self, report_data: &[u8; 64], vmpl: u32, report_id: u64) -> ([u8; REPORT_SIZE], Vec<u8>) {
        let report_data = *report_data;
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&report_id.to_le_bytes());
        let report = ReportBuilder::for_leaf(&self.leaf)
            .report_data(report_data)
            .vmpl(vmpl)
            .measurement(self.measurement)
            .report_id(id)
            .sign(&self.leaf);
        let leaf_kind = match self.leaf.kind {
            SigningKeyKind::Vcek => CertKind::Vcek,
            SigningKeyKind::Vlek => CertKind::Vlek,
        };
        let table = encode_cert_table(&[
            (leaf_kind, &self.leaf.der),
            (CertKind::Ask, self.pki.ask_der()),
            (CertKind::Ark, self.pki.ark_der()),
        ]);
        (report, table)
    }
}

/// A running simulated device: a thread answering on a Unix socket until dropped.
#[derive(Debug)]
pub struct SnpServer {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    served: Arc<AtomicU64>,
}

impl SnpServer {
    /// Serves `sim` on `socket` (an existing socket file is replaced).
    pub fn start(sim: SimulatedSnp, socket: &Path) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let (stop2, served2) = (Arc::clone(&stop), Arc::clone(&served));
        // Non-blocking accept, polled: the loop ends when `stop` is set even if the socket file is gone.
        listener.set_nonblocking(true)?;
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let n = served2.fetch_add(1, Ordering::SeqCst) + 1;
                        let _ = conn.set_nonblocking(false).and_then(|()| serve_one(&sim, &mut conn, n));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        Ok(Self { socket: socket.to_owned(), stop, thread: Some(thread), served })
    }

    /// The socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// How many requests were answered.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

fn serve_one(sim: &SimulatedSnp, conn: &mut UnixStream, n: u64) -> std::io::Result<()> {
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut request = vec![0u8; wire::REQUEST_SIZE];
    conn.read_exact(&mut request)?;
    conn.write_all(&sim.answer(&request, n))?;
    conn.shutdown(std::net::Shutdown::Write)
}

impl Drop for SnpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The simulated chip as a configfs-tsm backend (provider `sev_guest`): `privlevel` then `inblob` in,
/// the report in `outblob` and the certificate table in `auxblob`.
#[derive(Debug)]
pub struct SnpTsmBackend {
    sim: Arc<SimulatedSnp>,
    served: AtomicU64,
}

impl SnpTsmBackend {
    /// A backend over `sim`.
    pub fn new(sim: Arc<SimulatedSnp>) -> Self {
        Self { sim, served: AtomicU64::new(0) }
    }
}

impl crate::tsm::TsmBackend for SnpTsmBackend {
    fn provider(&self) -> &'static str {
        "sev_guest"
    }
    fn options(&self) -> &'static [&'static str] {
        &["privlevel"]
    }
    fn has_auxblob(&self) -> bool {
        true
    }
    fn answer(&self, inblob: &[u8; 64], options: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
        let vmpl = options
            .first()
            .and_then(|v| core::str::from_utf8(v).ok())
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|v| *v <= 3);
        // The kernel refuses a privlevel above 3 at the write; here the entry answers nothing usable.
        let Some(vmpl) = vmpl else { return (Vec::new(), Vec::new()) };
        let n = self.served.fetch_add(1, Ordering::SeqCst) + 1;
        let (report, table) = self.sim.report(inblob, vmpl, n);
        (report.to_vec(), table)
    }
}
