//! A simulated Intel TD and its platform: TD quotes signed through a generated Intel-like PKI (test-support's
//! `intel` module: root, PCK Platform CA, a PCK certificate with the SGX extension, TCB Info, QE Identity and
//! CRLs signed by a generated TCB Signing key), served through the kernel's interfaces below a **system root**
//! — the layout `attest_attester::issuer::tdguest::TdxPaths` reads:
//!
//! ```text
//! ROOT/sys/kernel/config/tsm/report/       configfs-tsm: each entry the attester creates (mkdir) is populated
//!      <entry>/generation, provider          with regular files, and FIFOs for inblob and outblob that this
//!      <entry>/inblob, outblob (FIFOs)       process answers: inblob (64 bytes) → generation + 1 → outblob = a
//!                                            TD quote of the TD's current state with that REPORTDATA
//! ROOT/dev/tdx_guest                       a marker (the device exists; its ioctl is not simulated)
//! ROOT/sys/class/misc/tdx_guest/measurements/rtmr2:sha384, rtmr3:sha384   FIFOs: 48 bytes written extend the RTMR
//! ROOT/sys/firmware/acpi/tables/CCEL, data/CCEL                           the ACPI CCEL table and a log area whose
//!                                                                         log replays to the TD's RTMR0 and RTMR1
//! ```
//!
//! For `azure-tdx` the same TD is an Azure TD partition (TDATTRIBUTES 0: no SEPT_VE_DISABLE, as on Azure):
//! [`SimulatedTd::provision_azure`] provisions a swtpm as Azure's paravisor does (the HCL AK at 0x81000003, an
//! HCL report of TDX type at NV 0x01400001 whose TD report binds the runtime data carrying the AK), and
//! [`QuoteEndpointServer`] stands in for the paravisor's quote endpoint on 127.0.0.1, speaking its real format
//! (`POST /acc/tdquote {"report": base64url}` → `{"quote": base64url}`) and quoting only TD reports this TD
//! issued (their MAC verifies under the simulated platform key, as the real quoting enclave checks).
//!
//! The test-root directory gets the Intel-like root and the collateral (`attest_kds::test_roots` names the
//! files), and a second collateral set whose PCK CRL revokes the TD's PCK certificate (the revoked-PCK attack).

use crate::tsm::{TsmBackend, TsmServer, mkfifo};
use attest_attester::issuer::azure::{AZURE_AK_HANDLE, HCL_REPORT_NV_INDEX};
use attest_attester::issuer::snp::HwIssuerError;
use attest_attester::tpm::{AkAlgorithm, AkConfig, AkStorage, Tpm};
use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::tdx::tdreport::{RawTdReportStruct, TDREPORT_SIZE, TDREPORT_TYPE_TDX};
use attest_kds::test_roots::{MARKER, files};
use attest_test_support::intel::{
    IntelPki, IntelPkiParts, P256, Pck, PckSpec, QuoteSpec, qe_identity_json, tcb_info_json,
};
use aws_lc_rs::hmac;
use base64::Engine as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The MRTD of the simulated TD when none is configured.
pub const DEFAULT_MRTD: [u8; 48] = *b"attest-hwsim simulated TD build-time measurement";
/// The serial number of the simulated PCK certificate.
pub const PCK_SERIAL: [u8; 3] = [0x7D, 0x01, 0x01];
/// TDATTRIBUTES of a simulated TD: SEPT_VE_DISABLE only (what the default policy accepts).
pub const TD_ATTRIBUTES: u64 = 1 << 28;
/// TDATTRIBUTES of a simulated Azure TD partition: 0 (Azure's TDs run without SEPT_VE_DISABLE).
pub const AZURE_TD_ATTRIBUTES: u64 = 0;
/// The DEBUG bit of TDATTRIBUTES (bit 0, "TUD"): a TD whose memory and state the host can read.
pub const DEBUG_ATTRIBUTE: u64 = 1;
/// TEE_TCB_SVN of a TD on an up-to-date TDX module: the collateral's `UpToDate` level.
pub const TEE_TCB_SVN: [u8; 16] = [3, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// TEE_TCB_SVN of a TD on an out-of-date TDX module: the collateral's `OutOfDate` level (the default TDX
/// policy refuses it).
pub const OUTDATED_TEE_TCB_SVN: [u8; 16] = [2, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// The simulated TD's registers and attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdState {
    /// MRTD.
    pub mr_td: [u8; 48],
    /// RTMR0..3.
    pub rtmrs: [[u8; 48]; 4],
    /// TDATTRIBUTES.
    pub attributes: u64,
}

/// The simulated platform every TD of one test root shares: the Intel-like PKI, the PCK certificate of the
/// platform's processor and the key that MACs its TD reports. Persisted with [`TdPlatform::save`], so that
/// several processes — one per simulated TD — run on one platform that one test root vouches for.
pub struct TdPlatform {
    pki: IntelPki,
    pck: Pck,
    mac_secret: [u8; 32],
    mac_key: hmac::Key,
}

impl core::fmt::Debug for TdPlatform {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TdPlatform").finish_non_exhaustive()
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, data)
}

fn rfc3339(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = UnixTime::from_secs(secs).to_civil();
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

fn comps(prefix: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..prefix.len()].copy_from_slice(prefix);
    c
}

fn bad_platform(path: &Path, why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {why}", path.display()))
}

impl TdPlatform {
    /// Generates the PKI, the PCK certificate and the MAC key, and writes what verifiers trust into the
    /// test-root directory `dir`: the marker, the root, the collateral (TCB Info with an `UpToDate` level and
    /// an `OutOfDate` one below it, QE Identity, CRLs) and the collateral whose PCK CRL revokes the PCK
    /// certificate ([`REVOKING_COLLATERAL_FILE`]).
    pub fn generate(dir: &Path) -> std::io::Result<Self> {
        let pki = IntelPki::new();
        let pck = pki.issue_pck(&PckSpec { serial: PCK_SERIAL.to_vec(), ..PckSpec::default() });
        let mut mac_secret = [0u8; 32];
        aws_lc_rs::rand::fill(&mut mac_secret).map_err(|_| std::io::Error::other("random MAC key"))?;
        let platform = Self::from_parts(pki, pck, mac_secret);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let (from, until) = (now - 86_400, now + 30 * 86_400);
        let (from_text, until_text) = (rfc3339(from), rfc3339(until));
        let window = (from_text.as_str(), until_text.as_str());
        let sgx = comps(&[5, 5, 2, 2, 3, 1, 0, 3]);
        let tcb = tcb_info_json(
            PckSpec::default().fmspc,
            window,
            &[
                (sgx, 11, comps(&TEE_TCB_SVN[..3]), "UpToDate", &[]),
                (sgx, 11, comps(&OUTDATED_TEE_TCB_SVN[..3]), "OutOfDate", &["INTEL-SA-00837"]),
            ],
            &[(4, "UpToDate")],
        );
        let qe = qe_identity_json(window, &[(4, "UpToDate")]);
        let crl_window = (i64::try_from(from).unwrap_or(0), i64::try_from(until).unwrap_or(i64::MAX));
        let pki = &platform.pki;
        write(dir, MARKER, crate::BANNER.as_bytes())?;
        write(dir, files::TDX_ROOT, pki.root_der())?;
        write(dir, files::TDX_COLLATERAL, pki.bundle(&tcb, &qe, crl_window, &[], &[]).as_bytes())?;
        write(dir, REVOKING_COLLATERAL_FILE, pki.bundle(&tcb, &qe, crl_window, &[&PCK_SERIAL], &[]).as_bytes())?;
        Ok(platform)
    }

    fn from_parts(pki: IntelPki, pck: Pck, mac_secret: [u8; 32]) -> Self {
        let mac_key = hmac::Key::new(hmac::HMAC_SHA256, &mac_secret);
        Self { pki, pck, mac_secret, mac_key }
    }

    /// Writes the platform's secrets (the PKI's and the PCK's keys, the MAC key: a TEST platform's, useless
    /// outside a test root) to `path`, readable by the owner only, replacing it atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let parts = self.pki.to_parts();
        let pair = |(k, c): &(Vec<u8>, Vec<u8>)| serde_json::json!({"key": hex::encode(k), "cert": hex::encode(c)});
        let text = serde_json::json!({
            "warning": crate::BANNER,
            "root": pair(&parts.root),
            "pck_ca": pair(&parts.pck_ca),
            "tcb_signing": pair(&parts.tcb_signing),
            "pck": pair(&(self.pck.key.pkcs8().to_vec(), self.pck.der.clone())),
            "mac_key": hex::encode(self.mac_secret),
        })
        .to_string();
        let tmp = path.with_extension("tmp");
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    }

    /// The platform [`TdPlatform::save`] wrote to `path`.
    pub fn load(path: &Path) -> std::io::Result<Self> {
        let text = std::fs::read(path)?;
        if text.len() > MAX_PLATFORM_FILE {
            return Err(bad_platform(path, "larger than a simulated platform file"));
        }
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| bad_platform(path, &e.to_string()))?;
        let bytes = |name: &str, field: &str| {
            v[name][field]
                .as_str()
                .and_then(|h| hex::decode(h).ok())
                .ok_or_else(|| bad_platform(path, &format!("no {name}.{field}")))
        };
        let pair = |name: &str| Ok::<_, std::io::Error>((bytes(name, "key")?, bytes(name, "cert")?));
        let parts = IntelPkiParts { root: pair("root")?, pck_ca: pair("pck_ca")?, tcb_signing: pair("tcb_signing")? };
        let pki = IntelPki::from_parts(&parts).ok_or_else(|| bad_platform(path, "a key does not parse"))?;
        let (pck_key, pck_der) = pair("pck")?;
        let key = P256::from_pkcs8(&pck_key).ok_or_else(|| bad_platform(path, "the PCK key does not parse"))?;
        let mac_secret = v["mac_key"]
            .as_str()
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| bad_platform(path, "no 32-byte mac_key"))?;
        Ok(Self::from_parts(pki, Pck { der: pck_der, key }, mac_secret))
    }

    /// This platform's PKI with the PCK certificate of another machine, `name`: its own PPID and serial
    /// number (both derived from the name, so that the machine keeps its identity across restarts) under the
    /// same PCK CA, FMSPC and TCB, so that one test root and one collateral vouch for a cluster of machines
    /// — each of which a verifier tells apart by its PPID (the TDX variants' node identity). The revoking
    /// collateral revokes [`PCK_SERIAL`] only, never a named machine.
    #[must_use]
    pub fn for_machine(self, name: &str) -> Self {
        let d = openssl::sha::sha256(format!("attest-hwsim TDX machine {name}").as_bytes());
        let mut ppid = [0u8; 16];
        ppid.copy_from_slice(&d[..16]);
        // A positive serial of 9 octets, never PCK_SERIAL's 3.
        let serial = [&[0x5A][..], &d[16..24]].concat();
        let pck = self.pki.issue_pck(&PckSpec { serial, ppid, ..PckSpec::default() });
        Self { pck, ..self }
    }

    /// The platform at `path` when it exists, else a new one generated into the test-root directory `dir`
    /// and saved to `path`. Returns whether it was generated now.
    pub fn open_or_generate(path: &Path, dir: &Path) -> std::io::Result<(Self, bool)> {
        if path.exists() {
            return Ok((Self::load(path)?, false));
        }
        let platform = Self::generate(dir)?;
        platform.save(path)?;
        Ok((platform, true))
    }
}

/// Largest simulated platform file read.
pub const MAX_PLATFORM_FILE: usize = 64 * 1024;

/// How a simulated TD is built and booted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdConfig {
    /// MRTD.
    pub mr_td: [u8; 48],
    /// TDATTRIBUTES.
    pub attributes: u64,
    /// TEE_TCB_SVN: the TDX module's ([`TEE_TCB_SVN`], or [`OUTDATED_TEE_TCB_SVN`]).
    pub tee_tcb_svn: [u8; 16],
    /// The boot's measurements, in order: (RTMR 0–2, event data) — each extends the RTMR with SHA-384 of the
    /// data and is written to the CC event log.
    pub events: Vec<(u8, Vec<u8>)>,
}

impl TdConfig {
    /// A TD with `mr_td` and `attributes` on an up-to-date module, booting the simulated firmware's events
    /// (RTMR0: its configuration and HOB; RTMR1: a kernel and its command line).
    pub fn new(mr_td: [u8; 48], attributes: u64) -> Self {
        let events: [(u8, &[u8]); 4] = [
            (0, b"attest-hwsim TDVF configuration"),
            (0, b"attest-hwsim TD HOB"),
            (1, b"attest-hwsim kernel"),
            (1, b"attest-hwsim kernel command line"),
        ];
        Self {
            mr_td,
            attributes,
            tee_tcb_svn: TEE_TCB_SVN,
            events: events.iter().map(|(i, d)| (*i, d.to_vec())).collect(),
        }
    }
}

/// A simulated TD on a [`TdPlatform`]: its registers, and the kernel's interfaces below its system root.
pub struct SimulatedTd {
    platform: Arc<TdPlatform>,
    state: Mutex<TdState>,
    tee_tcb_svn: [u8; 16],
    root: PathBuf,
    quotes: AtomicU64,
    /// The read ends of the RTMR files ([`TdServer`]): extends written there are applied before the TD's
    /// state is read, so an extend the guest completed is in every later quote, as on a real TD.
    rtmr_pipes: Mutex<Vec<(usize, std::fs::File, Vec<u8>)>>,
}

impl core::fmt::Debug for SimulatedTd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimulatedTd").field("root", &self.root).field("state", &self.state()).finish_non_exhaustive()
    }
}

/// A CC event log (TCG crypto-agile, SHA-384 only) of `events` `(MR index 1–4 = RTMR0–3, data)`, and the
/// RTMRs it extends.
pub fn cc_event_log(events: &[(u32, &[u8])]) -> (Vec<u8>, [[u8; 48]; 4]) {
    let p = default_provider();
    let mut out = Vec::new();
    // TCG_PCClientPCREvent carrying the Spec ID Event03 (one algorithm: SHA-384, 48 bytes).
    let mut spec = b"Spec ID Event03\0".to_vec();
    spec.extend_from_slice(&0u32.to_le_bytes());
    spec.extend_from_slice(&[0, 2, 2, 2]);
    spec.extend_from_slice(&1u32.to_le_bytes());
    spec.extend_from_slice(&0x000Cu16.to_le_bytes());
    spec.extend_from_slice(&48u16.to_le_bytes());
    spec.push(0);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&3u32.to_le_bytes()); // EV_NO_ACTION
    out.extend_from_slice(&[0; 20]);
    out.extend_from_slice(&(spec.len() as u32).to_le_bytes());
    out.extend_from_slice(&spec);
    let mut rtmrs = [[0u8; 48]; 4];
    for (index, data) in events {
        let digest = p.digests.digest(attest_engine::crypto::HashAlgorithm::Sha384, &[data]);
        out.extend_from_slice(&index.to_le_bytes());
        out.extend_from_slice(&0x8000_0001u32.to_le_bytes()); // EV_EFI_EVENT_BASE + 1 (a plain event)
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0x000Cu16.to_le_bytes());
        out.extend_from_slice(digest.as_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        let i = (*index - 1) as usize;
        let next = p.digests.digest(attest_engine::crypto::HashAlgorithm::Sha384, &[&rtmrs[i], digest.as_bytes()]);
        rtmrs[i].copy_from_slice(next.as_bytes());
    }
    (out, rtmrs)
}

/// The ACPI CCEL table for a TDX log area of `len` bytes.
pub fn ccel_table(len: u64) -> Vec<u8> {
    let mut t = Vec::with_capacity(56);
    t.extend_from_slice(b"CCEL");
    t.extend_from_slice(&56u32.to_le_bytes());
    t.push(1); // revision
    t.push(0); // checksum, fixed below
    t.extend_from_slice(b"ATTEST");
    t.extend_from_slice(b"HWSIM TD");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"ATST");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&[2, 0, 0, 0]); // CC type TDX, subtype 0, reserved
    t.extend_from_slice(&len.to_le_bytes());
    t.extend_from_slice(&0x7F00_0000u64.to_le_bytes());
    let sum = t.iter().fold(0u8, |s, b| s.wrapping_add(*b));
    t[9] = 0u8.wrapping_sub(sum);
    t
}

/// The size of the simulated log area (as OVMF reserves).
pub const CCEL_AREA: usize = 64 * 1024;

impl SimulatedTd {
    /// Generates a platform into the test-root directory `dir` ([`TdPlatform::generate`]) and boots one TD
    /// with `mr_td` and `attributes` on it below `root` ([`SimulatedTd::boot`], the default events).
    pub fn provision(dir: &Path, root: &Path, mr_td: [u8; 48], attributes: u64) -> std::io::Result<Self> {
        Self::boot(Arc::new(TdPlatform::generate(dir)?), root, &TdConfig::new(mr_td, attributes))
    }

    /// Boots a TD of `config` on `platform`: its registers from the boot's events (RTMR3 zero), and the
    /// kernel's interfaces written fresh below `root` (created; what an earlier boot left there is removed).
    pub fn boot(platform: Arc<TdPlatform>, root: &Path, config: &TdConfig) -> std::io::Result<Self> {
        if root == Path::new("/") || root.as_os_str().is_empty() {
            return Err(std::io::Error::other("a simulated TD needs a system root of its own"));
        }
        for dir in ["sys", "dev"] {
            match std::fs::remove_dir_all(root.join(dir)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        if let Some((i, _)) = config.events.iter().find(|(i, _)| *i > 2) {
            return Err(std::io::Error::other(format!("RTMR{i}: the boot measures RTMR0-2 only")));
        }
        let events: Vec<(u32, &[u8])> = config.events.iter().map(|(i, d)| (u32::from(*i) + 1, d.as_slice())).collect();
        let (log, rtmrs) = cc_event_log(&events);
        let mut area = log;
        area.resize(CCEL_AREA.max(area.len()), 0xFF);
        write(root, "sys/firmware/acpi/tables/CCEL", &ccel_table(area.len() as u64))?;
        write(root, "sys/firmware/acpi/tables/data/CCEL", &area)?;
        write(root, "dev/tdx_guest", b"")?;
        std::fs::create_dir_all(root.join(attest_attester::issuer::tsm::TSM_REPORT_DIR))?;
        Ok(Self {
            platform,
            state: Mutex::new(TdState { mr_td: config.mr_td, rtmrs, attributes: config.attributes }),
            tee_tcb_svn: config.tee_tcb_svn,
            root: root.to_owned(),
            quotes: AtomicU64::new(0),
            rtmr_pipes: Mutex::new(Vec::new()),
        })
    }

    /// The platform.
    pub fn platform(&self) -> &Arc<TdPlatform> {
        &self.platform
    }

    /// The TD's registers now (after applying every extend written to its RTMR files).
    pub fn state(&self) -> TdState {
        self.apply_pending_extends();
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Applies the 48-byte extends waiting in the RTMR files' pipes.
    fn apply_pending_extends(&self) {
        let mut pipes = self.rtmr_pipes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (index, file, carry) in pipes.iter_mut() {
            let mut chunk = [0u8; 4096];
            loop {
                match file.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => carry.extend_from_slice(&chunk[..n]),
                }
            }
            while carry.len() >= 48 {
                let digest: [u8; 48] = carry[..48].try_into().unwrap_or([0; 48]);
                carry.drain(..48);
                self.extend(*index, &digest);
            }
        }
    }

    /// The system root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many quotes were produced.
    pub fn quotes(&self) -> u64 {
        self.quotes.load(Ordering::SeqCst)
    }

    /// Extends RTMR `index` with `digest` (TDG.MR.RTMR.EXTEND).
    pub fn extend(&self, index: usize, digest: &[u8; 48]) {
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let next =
            default_provider().digests.digest(attest_engine::crypto::HashAlgorithm::Sha384, &[&s.rtmrs[index], digest]);
        s.rtmrs[index].copy_from_slice(next.as_bytes());
    }

    /// A quote (v4) of the TD's state now with `report_data`, signed through the PKI.
    pub fn quote(&self, report_data: &[u8; 64]) -> Vec<u8> {
        let s = self.state();
        self.quotes.fetch_add(1, Ordering::SeqCst);
        self.platform.pki.quote(
            &self.platform.pck,
            &QuoteSpec {
                tee_tcb_svn: self.tee_tcb_svn,
                td_attributes: s.attributes.to_le_bytes(),
                mr_td: s.mr_td,
                rtmrs: s.rtmrs,
                report_data: *report_data,
                ..QuoteSpec::default()
            },
        )
    }

    /// A TDREPORT_STRUCT of the TD's state now with `report_data`, MAC'ed with the platform key.
    pub fn td_report(&self, report_data: &[u8; 64]) -> Vec<u8> {
        let s = self.state();
        let mut r = vec![0u8; TDREPORT_SIZE];
        r[0] = TDREPORT_TYPE_TDX;
        r[128..192].copy_from_slice(report_data);
        r[0x108..0x118].copy_from_slice(&self.tee_tcb_svn);
        r[0x200..0x208].copy_from_slice(&s.attributes.to_le_bytes());
        r[0x208..0x210].copy_from_slice(&0xE7u64.to_le_bytes());
        r[0x210..0x240].copy_from_slice(&s.mr_td);
        for (i, rtmr) in s.rtmrs.iter().enumerate() {
            r[0x2D0 + 48 * i..0x300 + 48 * i].copy_from_slice(rtmr);
        }
        let tag = hmac::sign(&self.platform.mac_key, &r[..0xE0]);
        r[0xE0..0x100].copy_from_slice(tag.as_ref());
        r
    }

    /// The quote of a TD report of this platform (its MAC verifies), as a quoting enclave makes it; `None`
    /// for any other report.
    pub fn quote_td_report(&self, td_report: &[u8]) -> Option<Vec<u8>> {
        let r = RawTdReportStruct::parse(td_report).ok()?;
        hmac::verify(&self.platform.mac_key, &td_report[..0xE0], &r.mac).ok()?;
        self.quotes.fetch_add(1, Ordering::SeqCst);
        Some(self.platform.pki.quote(
            &self.platform.pck,
            &QuoteSpec {
                tee_tcb_svn: r.tee_tcb_svn,
                td_attributes: r.td_attributes,
                mr_td: r.mr_td,
                rtmrs: r.rtmr,
                report_data: r.report_data,
                ..QuoteSpec::default()
            },
        ))
    }
    /// Provisions `tpm` as Azure's paravisor does for this TD (the HCL AK at 0x81000003, the HCL report of TDX
    /// type at NV 0x01400001 binding the runtime data with the AK).
    pub fn provision_azure(&self, tpm: &mut Tpm) -> Result<Vec<u8>, HwIssuerError> {
        let config = AkConfig { algorithm: AkAlgorithm::Rsa2048, storage: AkStorage::Persistent(AZURE_AK_HANDLE) };
        let ak = tpm.attestation_key(config)?;
        let runtime = attest_test_support::tpm::runtime_json_for_vm(
            &[&crate::azure::hcl_ak_jwk(ak.tpm2b_public())?],
            &crate::azure::vm_unique_id(ak.tpm2b_public()),
        );
        let report_data = attest_engine::azure::hcl_report_data(default_provider(), &runtime);
        let td_report = self.td_report(&report_data);
        let mut hcl = attest_test_support::intel::hcl_report_tdx(&report_data, &self.state().mr_td, &runtime);
        hcl[32..32 + TDREPORT_SIZE].copy_from_slice(&td_report);
        // swtpm caps NV indices at 2048 bytes: end the index with the runtime data (as for SNP).
        hcl.truncate(32 + 0x4A0 + 20 + runtime.len());
        tpm.nv_define_and_write(HCL_REPORT_NV_INDEX, &hcl)?;
        Ok(hcl)
    }
}

/// Collateral whose PCK CRL revokes the simulated PCK certificate (not installed by default).
pub const REVOKING_COLLATERAL_FILE: &str = "tdx/collateral-revoking.json";

/// A running simulated TD: configfs-tsm entries answered until dropped, and its RTMR files.
///
/// The RTMR files (`rtmr2:sha384`, `rtmr3:sha384`) are FIFOs this process holds open for reading without
/// blocking: a guest's write of 48 bytes completes into the pipe at once, and the TD applies it before its
/// state is next read ([`SimulatedTd::state`]) — so, as with the kernel's synchronous extend, every quote made
/// after the write returned covers it.
#[derive(Debug)]
pub struct TdServer {
    _tsm: TsmServer,
}

/// The TD as a configfs-tsm backend: `outblob` is a quote of its state with the inblob as REPORTDATA.
struct TdBackend(Arc<SimulatedTd>);

impl TsmBackend for TdBackend {
    fn provider(&self) -> &'static str {
        "tdx_guest"
    }
    fn options(&self) -> &'static [&'static str] {
        &[]
    }
    fn has_auxblob(&self) -> bool {
        false
    }
    fn answer(&self, inblob: &[u8; 64], _: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
        (self.0.quote(inblob), Vec::new())
    }
}

impl TdServer {
    /// Serves `td` below its root.
    pub fn start(td: &Arc<SimulatedTd>) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let measurements = td.root.join("sys/class/misc/tdx_guest/measurements");
        let mut pipes = Vec::new();
        for index in [2usize, 3] {
            let path = measurements.join(format!("rtmr{index}:sha384"));
            mkfifo(&path)?;
            let read_end = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path)?;
            pipes.push((index, read_end, Vec::new()));
        }
        *td.rtmr_pipes.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = pipes;
        let reports = td.root.join(attest_attester::issuer::tsm::TSM_REPORT_DIR);
        let tsm = TsmServer::start(Arc::new(TdBackend(Arc::clone(td))), &reports)?;
        Ok(Self { _tsm: tsm })
    }
}

/// The paravisor's quote endpoint, stood in for on 127.0.0.1.
#[derive(Debug)]
pub struct QuoteEndpointServer {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Largest request the stand-in reads.
pub const MAX_ENDPOINT_REQUEST: usize = 16 * 1024;

impl QuoteEndpointServer {
    /// Listens on `addr` (a 127.0.0.1 address; port 0 picks one).
    pub fn start(td: Arc<SimulatedTd>, addr: std::net::SocketAddr) -> std::io::Result<Self> {
        if !addr.ip().is_loopback() {
            return Err(std::io::Error::other("the quote endpoint stand-in listens on loopback only"));
        }
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let _ = conn.set_nonblocking(false);
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                        let response = answer(&td, &mut conn);
                        let _ = conn.write_all(&response);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Self { addr, stop, thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Its URL, as the attester takes it.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, attest_attester::issuer::tdx::AZURE_QUOTE_PATH)
    }
}

impl Drop for QuoteEndpointServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn http(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One request: `POST /acc/tdquote` with `{"report": base64url(TDREPORT)}`.
fn answer(td: &SimulatedTd, conn: &mut std::net::TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return http("400 Bad Request", "{\"error\":\"truncated request\"}"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > MAX_ENDPOINT_REQUEST {
            return http("413 Payload Too Large", "{}");
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    if !head.starts_with("POST /acc/tdquote ") {
        return http("404 Not Found", "{}");
    }
    let len = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    let Some(len) = len.filter(|l| *l <= MAX_ENDPOINT_REQUEST) else { return http("411 Length Required", "{}") };
    while buf.len() < head_end + len {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return http("400 Bad Request", "{}"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    #[derive(serde::Deserialize)]
    struct Request {
        report: String,
    }
    let Ok(req) = serde_json::from_slice::<Request>(&buf[head_end..head_end + len]) else {
        return http("400 Bad Request", "{\"error\":\"expected {\\\"report\\\": …}\"}");
    };
    let Ok(report) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(req.report.trim_end_matches('=')) else {
        return http("400 Bad Request", "{\"error\":\"report is not base64url\"}");
    };
    match td.quote_td_report(&report) {
        Some(quote) => http(
            "200 OK",
            &serde_json::json!({ "quote": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(quote) }).to_string(),
        ),
        None => http("400 Bad Request", "{\"error\":\"not a TD report of this platform\"}"),
    }
}
