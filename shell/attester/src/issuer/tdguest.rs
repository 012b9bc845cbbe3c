//! The TDX guest: TD quotes, RTMRs and the CC event log, through the Linux kernel's interfaces.
//!
//! ```text
//!                   newer kernels (6.7+)                              older kernels (6.2+)
//!  quote(REPORTDATA) configfs-tsm report entry (provider tdx_guest)   /dev/tdx_guest TDX_CMD_GET_REPORT0 → TDREPORT
//!                    inblob → outblob (generation checked; tsm)       → quote generation service (QGS) over vsock
//!                                                                       (host CID 2, port 4050; qgs module)
//!  rtmrs()           read back from the TD report: TDX_CMD_GET_REPORT0 where the device exists, else the body of
//!                    a quote (the quoting enclave copies the TD report's registers into it)
//!  extend_rtmr(i)    /sys/class/misc/tdx_guest/measurements/rtmr<i>:sha384, written with 48 bytes (6.16+)
//!  event_log()       /sys/firmware/acpi/tables/CCEL (ACPI table) + /sys/firmware/acpi/tables/data/CCEL (log
//!                    area), cut to the written log (attest_engine::tdx::ccel::written_log)
//! ```
//!
//! Every path hangs below one **system root** ([`TdxPaths`]): `/` on a TD. Simulated hardware (`attest-hwsim
//! tdx serve`) serves the same layout below another directory — configfs-tsm entries whose `inblob`,
//! `outblob` and RTMR files are FIFOs it answers — so the code above is one path for both; a root other than
//! `/` needs the feature `simulated-hardware`, as the simulated SEV-SNP device does.

use super::error::HwIssuerError;
use super::tsm::TsmEntry;
use super::tsm::output::Provider;
use attest_engine::tdx::TdQuote;
use attest_engine::tdx::ccel::{CCEL_TABLE_SIZE, CcelTable, MAX_CCEL_LOG_AREA, written_log};
use attest_engine::tdx::tdreport::RawTdReportStruct;
use core::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The RTMR the node lock extends on a TD without a vTPM: RTMR3, which neither TDVF nor a direct or grub
/// boot extends (it is left to the guest's software).
pub const LOCK_RTMR: u8 = 3;

/// Where the TDX guest's interfaces are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdxPaths {
    root: PathBuf,
}

impl Default for TdxPaths {
    fn default() -> Self {
        Self::system()
    }
}

impl TdxPaths {
    /// The running kernel's (`/`).
    pub fn system() -> Self {
        Self { root: PathBuf::from("/") }
    }

    /// Below `root` (simulated hardware).
    pub fn under(root: &Path) -> Self {
        Self { root: root.to_owned() }
    }

    /// Parses `/` (or empty: the system) or `sim:/dir` (simulated hardware below `dir`).
    pub fn parse(s: &str) -> Result<Self, HwIssuerError> {
        let bad = |reason| HwIssuerError::Argument { value: s.to_owned(), reason };
        match s.strip_prefix("sim:") {
            Some(p) if p.starts_with('/') => Ok(Self::under(Path::new(p))),
            Some(_) => Err(bad("a simulated TDX root must be an absolute path (sim:/…)")),
            None if s.is_empty() || s == "/" => Ok(Self::system()),
            None => Err(bad("expected / or sim:/path/to/simulated/root")),
        }
    }

    /// Whether this is simulated hardware (a root other than `/`).
    pub fn is_simulated(&self) -> bool {
        self.root != Path::new("/")
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The configfs-tsm report directory.
    pub fn tsm_report(&self) -> PathBuf {
        self.at(super::tsm::TSM_REPORT_DIR)
    }

    /// The TDX guest device.
    pub fn device(&self) -> PathBuf {
        self.at("dev/tdx_guest")
    }

    /// The measurement-register attributes (Linux 6.16+).
    pub fn measurements(&self) -> PathBuf {
        self.at("sys/class/misc/tdx_guest/measurements")
    }

    /// The ACPI CCEL table.
    pub fn ccel_table(&self) -> PathBuf {
        self.at("sys/firmware/acpi/tables/CCEL")
    }

    /// The CCEL log area.
    pub fn ccel_data(&self) -> PathBuf {
        self.at("sys/firmware/acpi/tables/data/CCEL")
    }

    /// Whether this is a TDX guest: the TDX guest device exists (its driver binds on TDX guests only; a
    /// configfs-tsm report directory alone says nothing: the module may be loaded without a provider).
    pub fn exists(&self) -> bool {
        self.device().exists()
    }
}

impl fmt::Display for TdxPaths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_simulated() {
            write!(f, "sim:{} (SIMULATED TDX hardware, test root)", self.root.display())
        } else {
            f.write_str("the TDX guest (configfs-tsm, /dev/tdx_guest)")
        }
    }
}

/// The quote generation service of the host, reached over vsock (Intel's `qgs_msg` protocol; the same one
/// QEMU speaks for `TDVMCALL<GetQuote>`): a 4-byte big-endian length, then the message.
///
/// ```text
/// header           major u16 = 1 · minor u16 = 1 · type u32 · size u32 (whole message) · error_code u32
/// GET_QUOTE_REQ    header (type 0) · report_size u32 · id_list_size u32 · TDREPORT · id list
/// GET_QUOTE_RESP   header (type 1) · selected_id_size u32 · quote_size u32 · selected id · quote
/// ```
pub mod qgs {
    /// The host's vsock CID.
    pub const VMADDR_CID_HOST: u32 = 2;
    /// The QGS port Intel's configuration uses.
    pub const QGS_VSOCK_PORT: u32 = 4050;
    /// Largest message accepted from the service.
    pub const MAX_MESSAGE_SIZE: usize = 64 * 1024;
    const HEADER: usize = 16;

    /// The length-prefixed GET_QUOTE_REQ for a TDREPORT.
    pub fn encode_request(tdreport: &[u8; 1024]) -> Vec<u8> {
        let size = (HEADER + 8 + tdreport.len()) as u32;
        let mut out = Vec::with_capacity(4 + size as usize);
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(tdreport.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(tdreport);
        out
    }

    /// The quote of a GET_QUOTE_RESP message (without the length prefix).
    pub fn decode_response(msg: &[u8]) -> Result<&[u8], &'static str> {
        if msg.len() > MAX_MESSAGE_SIZE {
            return Err("the QGS message exceeds MAX_MESSAGE_SIZE");
        }
        if msg.len() < HEADER + 8 {
            return Err("a truncated QGS message");
        }
        let u32_at = |o: usize| u32::from_le_bytes([msg[o], msg[o + 1], msg[o + 2], msg[o + 3]]);
        if u16::from_le_bytes([msg[0], msg[1]]) != 1 {
            return Err("an unknown QGS message major version");
        }
        if u32_at(4) != 1 {
            return Err("not a GET_QUOTE_RESP");
        }
        if u32_at(8) as usize != msg.len() {
            return Err("the QGS message size does not match");
        }
        if u32_at(12) != 0 {
            return Err("the quote generation service returned an error");
        }
        let id = u32_at(16) as usize;
        let quote = u32_at(20) as usize;
        let rest = &msg[HEADER + 8..];
        if id.checked_add(quote) != Some(rest.len()) || quote == 0 {
            return Err("the QGS quote size does not match the message");
        }
        Ok(&rest[id..])
    }
}

/// How quotes are obtained.
#[derive(Debug)]
enum QuoteSource {
    /// A configfs-tsm report entry.
    Tsm(TsmEntry),
    /// The TD report from the device, quoted by the host's quote generation service.
    Qgs { port: u32 },
}

/// An open TDX guest.
#[derive(Debug)]
pub struct TdxGuest {
    paths: TdxPaths,
    source: QuoteSource,
}

fn device_error(op: &'static str) -> impl FnOnce(std::io::Error) -> HwIssuerError {
    move |e| HwIssuerError::Device { op, reason: e.to_string() }
}

impl TdxGuest {
    /// Opens the TDX guest below `paths`: configfs-tsm where the kernel has it, else `/dev/tdx_guest` with
    /// the host's quote generation service. [`HwIssuerError::DeviceNotPresent`] where neither exists.
    pub fn open(paths: &TdxPaths) -> Result<Self, HwIssuerError> {
        if paths.is_simulated() {
            check_simulation_allowed(paths)?;
        }
        let tsm = paths.tsm_report();
        let source = if tsm.is_dir() {
            QuoteSource::Tsm(TsmEntry::create(&tsm, Provider::TdxGuest)?)
        } else if paths.device().exists() {
            QuoteSource::Qgs { port: qgs::QGS_VSOCK_PORT }
        } else {
            return Err(HwIssuerError::DeviceNotPresent { device: "the TDX guest (configfs-tsm or /dev/tdx_guest)" });
        };
        Ok(Self { paths: paths.clone(), source })
    }

    /// Where the guest's interfaces are.
    pub fn paths(&self) -> &TdxPaths {
        &self.paths
    }

    /// A TD quote whose REPORTDATA is `report_data`, checked to parse and carry it (without padding).
    pub fn quote(&self, report_data: &[u8; 64]) -> Result<Vec<u8>, HwIssuerError> {
        match &self.source {
            QuoteSource::Tsm(entry) => Ok(entry.request(report_data, &[])?.0),
            QuoteSource::Qgs { port } => {
                let report = self.td_report(report_data)?;
                let quote = qgs_quote(&report, *port)?;
                let parsed = TdQuote::parse_prefix(&quote)?;
                if parsed.body().report_data() != report_data {
                    return Err(HwIssuerError::Device {
                        op: "quote generation service",
                        reason: "the quote does not carry the requested REPORTDATA".into(),
                    });
                }
                Ok(parsed.as_bytes().to_vec())
            }
        }
    }

    /// The TDREPORT for `report_data` from `/dev/tdx_guest`.
    pub fn td_report(&self, report_data: &[u8; 64]) -> Result<[u8; 1024], HwIssuerError> {
        let device = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.paths.device())
            .map_err(device_error("opening /dev/tdx_guest"))?;
        let report =
            attest_tdx_ioctl::get_report0(&device, report_data).map_err(device_error("TDX_CMD_GET_REPORT0"))?;
        RawTdReportStruct::parse(&report)?;
        Ok(report)
    }

    /// RTMR0..3, read back from the TD report (the device's, else a quote's body).
    pub fn rtmrs(&self) -> Result<[[u8; 48]; 4], HwIssuerError> {
        if !self.paths.is_simulated() && self.paths.device().exists() {
            let report = self.td_report(&[0; 64])?;
            return Ok(RawTdReportStruct::parse(&report)?.rtmr);
        }
        let quote = self.quote(&[0; 64])?;
        Ok(*TdQuote::parse_prefix(&quote)?.body().rtmrs())
    }

    /// Extends RTMR `index` (2 or 3: the registers left to the guest's software) with `digest`:
    /// RTMR := SHA-384(RTMR ‖ digest). Needs the measurement-register attributes of Linux 6.16+.
    pub fn extend_rtmr(&self, index: u8, digest: &[u8; 48]) -> Result<(), HwIssuerError> {
        if !(2..=3).contains(&index) {
            return Err(HwIssuerError::Device {
                op: "extending an RTMR",
                reason: format!(
                    "RTMR{index} belongs to the firmware and boot loader; only RTMR2 and RTMR3 are the OS's"
                ),
            });
        }
        let path = self.paths.measurements().join(format!("rtmr{index}:sha384"));
        if !path.exists() {
            return Err(HwIssuerError::Device {
                op: "extending an RTMR",
                reason: format!("{} does not exist: this kernel cannot extend RTMRs (Linux 6.16+)", path.display()),
            });
        }
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).map_err(device_error("opening an RTMR"))?;
        file.write_all(digest).map_err(device_error("extending an RTMR"))
    }

    /// The written part of the CC event log (empty when the firmware published no CCEL table).
    pub fn event_log(&self) -> Result<Vec<u8>, HwIssuerError> {
        let table_path = self.paths.ccel_table();
        if !table_path.exists() {
            tracing::debug!(path = %table_path.display(), "no ACPI CCEL table: documents carry no CC event log");
            return Ok(Vec::new());
        }
        let table = read_bounded(&table_path, CCEL_TABLE_SIZE + 1)?;
        let table = CcelTable::parse(&table)?;
        let area = read_bounded(&self.paths.ccel_data(), MAX_CCEL_LOG_AREA + 1)?;
        Ok(written_log(attest_engine::crypto::default_provider(), &table, &area)?.to_vec())
    }

    /// Whether this is simulated hardware.
    pub fn is_simulated(&self) -> bool {
        self.paths.is_simulated()
    }
}

fn read_bounded(path: &Path, limit: usize) -> Result<Vec<u8>, HwIssuerError> {
    let file = std::fs::File::open(path).map_err(device_error("reading the CC event log"))?;
    let mut out = Vec::new();
    file.take(limit as u64).read_to_end(&mut out).map_err(device_error("reading the CC event log"))?;
    Ok(out)
}

/// A quote of `tdreport` from the host's quote generation service on vsock `port`.
fn qgs_quote(tdreport: &[u8; 1024], port: u32) -> Result<Vec<u8>, HwIssuerError> {
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::io::Write as _;
    let err = device_error("quote generation service (vsock)");
    let socket = Socket::new(Domain::VSOCK, Type::STREAM, None).map_err(device_error("opening a vsock socket"))?;
    let timeout = std::time::Duration::from_secs(30);
    socket.set_read_timeout(Some(timeout)).map_err(device_error("vsock"))?;
    socket.set_write_timeout(Some(timeout)).map_err(device_error("vsock"))?;
    socket.connect(&SockAddr::vsock(qgs::VMADDR_CID_HOST, port)).map_err(device_error("connecting to the QGS"))?;
    let mut stream: std::net::TcpStream = socket.into();
    stream.write_all(&qgs::encode_request(tdreport)).map_err(device_error("sending to the QGS"))?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).map_err(device_error("reading from the QGS"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > qgs::MAX_MESSAGE_SIZE {
        return Err(HwIssuerError::Device { op: "quote generation service", reason: "an oversized message".into() });
    }
    let mut msg = vec![0u8; len];
    stream.read_exact(&mut msg).map_err(err)?;
    qgs::decode_response(&msg)
        .map(<[u8]>::to_vec)
        .map_err(|reason| HwIssuerError::Device { op: "quote generation service", reason: reason.into() })
}

#[cfg(feature = "simulated-hardware")]
#[allow(clippy::unnecessary_wraps)] // the same signature as without the feature, which refuses
fn check_simulation_allowed(paths: &TdxPaths) -> Result<(), HwIssuerError> {
    tracing::warn!(root = %paths, "SIMULATED TDX hardware: quotes are signed by a test root");
    Ok(())
}

#[cfg(not(feature = "simulated-hardware"))]
fn check_simulation_allowed(paths: &TdxPaths) -> Result<(), HwIssuerError> {
    Err(HwIssuerError::Device {
        op: "opening the simulated TDX guest",
        reason: format!(
            "{paths}: this build cannot use simulated hardware (built without the feature `simulated-hardware`)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(TdxPaths::parse("/").unwrap(), TdxPaths::system());
        assert!(!TdxPaths::system().is_simulated());
        let sim = TdxPaths::parse("sim:/tmp/td").unwrap();
        assert!(sim.is_simulated());
        assert_eq!(sim.tsm_report(), Path::new("/tmp/td/sys/kernel/config/tsm/report"));
        assert_eq!(sim.ccel_data(), Path::new("/tmp/td/sys/firmware/acpi/tables/data/CCEL"));
        assert!(TdxPaths::parse("sim:tmp").is_err());
        assert!(TdxPaths::parse("/tmp").is_err());
        assert!(sim.to_string().contains("SIMULATED"));
    }

    #[test]
    fn qgs_messages() {
        let req = qgs::encode_request(&[7; 1024]);
        assert_eq!(u32::from_be_bytes(req[..4].try_into().unwrap()) as usize, req.len() - 4);
        assert_eq!(&req[4..8], &[1, 0, 1, 0]);
        let resp = |quote: &[u8], error: u32| {
            let size = (24 + quote.len()) as u32;
            let mut m = Vec::new();
            for v in [1u16, 1] {
                m.extend_from_slice(&v.to_le_bytes());
            }
            for v in [1u32, size, error, 0, quote.len() as u32] {
                m.extend_from_slice(&v.to_le_bytes());
            }
            m.extend_from_slice(quote);
            m
        };
        assert_eq!(qgs::decode_response(&resp(b"quote", 0)).unwrap(), b"quote");
        assert!(qgs::decode_response(&resp(b"quote", 5)).is_err());
        assert!(qgs::decode_response(&resp(b"", 0)).is_err());
        let good = resp(b"quote", 0);
        for n in 0..good.len() {
            assert!(qgs::decode_response(&good[..n]).is_err(), "{n}");
        }
    }

    #[test]
    fn a_missing_guest_is_not_present() {
        let dir = std::env::temp_dir().join(format!("attest-no-tdx-{}", std::process::id()));
        let err = TdxGuest::open(&TdxPaths::under(&dir)).unwrap_err();
        if cfg!(feature = "simulated-hardware") {
            assert!(matches!(err, HwIssuerError::DeviceNotPresent { .. }), "{err}");
        } else {
            assert!(err.to_string().contains("simulated-hardware"), "{err}");
        }
    }
}
