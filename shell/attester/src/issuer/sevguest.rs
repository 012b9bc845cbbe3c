//! The SEV-SNP guest device: one request (`SNP_GET_EXT_REPORT`), two transports.
//!
//! ```text
//!   SnpIssuer ──► SnpGuestDevice::ext_report(REPORT_DATA, VMPL) ──► response checks, certificate table
//!                        │  (everything above this line is shared)
//!                        ▼
//!        SnpTransport ── Ioctl:      /dev/sev-guest, SNP_GET_EXT_REPORT through the `sev` crate (real hardware)
//!                     ├─ ConfigFs:   configfs-tsm (Linux 6.7+; `tsm:/sys/kernel/config/tsm/report`): privlevel,
//!                     │              inblob → outblob (report) + auxblob (certificate table), generation-checked
//!                     └─ Simulator:  a Unix socket to a simulator process that answers the same request with
//!                                    the same firmware structures (feature `simulated-hardware`)
//! ```
//!
//! **Why the split sits here.** The guest kernel turns `SNP_GET_EXT_REPORT` into an encrypted guest message
//! to the AMD secure processor; what comes back to user space is the firmware's MSG_REPORT_RSP and the
//! host's certificate table. A simulator cannot sit below the kernel without a simulated VM, so the lowest
//! layer we can swap is the request/response pair itself. Both transports therefore carry exactly the
//! firmware-level structures — MSG_REPORT_REQ in, MSG_REPORT_RSP and the GHCB certificate table out — and
//! everything above them (REPORT_DATA construction, response validation, certificate selection, the
//! document) is one code path. The simulator's wire framing is [`wire`]; the simulator itself lives in
//! `attest-hwsim` and signs with a generated test PKI that no release verifier trusts.
//!
//! Layouts (AMD, *SEV Secure Nested Paging Firmware ABI Specification*, doc. 56860, "MSG_REPORT_REQ" and
//! "MSG_REPORT_RSP"; GHCB spec doc. 56421, "SNP Extended Guest Request" certificate table):
//!
//! ```text
//! MSG_REPORT_REQ  0x00 REPORT_DATA[64] · 0x40 VMPL u32 · 0x44 reserved[28]                      = 96 bytes
//! MSG_REPORT_RSP  0x00 STATUS u32 · 0x04 REPORT_SIZE u32 · 0x08 reserved[24] · 0x20 REPORT[0x4A0] = 1216 bytes
//! cert table      { GUID[16] · offset u32 · length u32 }* · all-zero GUID entry; offsets from the table start
//! ```

use super::error::HwIssuerError;
use attest_engine::snp::{CertKind, REPORT_SIZE, encode_cert_table};
use core::fmt;
use sev::firmware::host::{CertTableEntry, CertType};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The SEV-SNP guest device node.
pub const SEV_GUEST: &str = "/dev/sev-guest";

/// SNP guest message version used (1: the only one every kernel accepts for report requests).
pub const MESSAGE_VERSION: u32 = 1;

/// Size of MSG_REPORT_REQ.
pub const REPORT_REQ_SIZE: usize = 96;
/// Size of MSG_REPORT_RSP (header and the report).
pub const REPORT_RSP_SIZE: usize = 0x20 + REPORT_SIZE;
pub use attest_engine::snp::MAX_CERT_TABLE_SIZE;

/// Where the guest device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnpDeviceAddr {
    /// The kernel's device node (`/dev/sev-guest`).
    Device(PathBuf),
    /// A simulator process listening on this Unix socket (tests and the demo only).
    Simulator(PathBuf),
    /// The configfs-tsm report directory (`tsm:/sys/kernel/config/tsm/report`, Linux 6.7+): reports through
    /// a report entry of provider `sev_guest` ([`crate::issuer::tsm`]).
    ConfigFs(PathBuf),
}

impl SnpDeviceAddr {
    /// Parses `/dev/sev-guest` (any absolute path: the device), `tsm:/sys/kernel/config/tsm/report`
    /// (configfs-tsm) or `sim:/path/to/socket` (a simulator).
    pub fn parse(s: &str) -> Result<Self, HwIssuerError> {
        let bad = |reason| HwIssuerError::Argument { value: s.to_owned(), reason };
        if let Some(p) = s.strip_prefix("tsm:") {
            if !p.starts_with('/') {
                return Err(bad("a configfs-tsm report directory must be an absolute path (tsm:/…)"));
            }
            return Ok(Self::ConfigFs(PathBuf::from(p)));
        }
        if let Some(p) = s.strip_prefix("sim:") {
            if !p.starts_with('/') {
                return Err(bad("a simulator socket must be an absolute path (sim:/…)"));
            }
            return Ok(Self::Simulator(PathBuf::from(p)));
        }
        if s.starts_with('/') {
            return Ok(Self::Device(PathBuf::from(s)));
        }
        Err(bad("expected a device path (/dev/sev-guest) or sim:/path/to/socket"))
    }

    /// Whether the device node or the simulator's socket exists.
    pub fn exists(&self) -> bool {
        match self {
            Self::Device(p) | Self::Simulator(p) | Self::ConfigFs(p) => p.exists(),
        }
    }

    /// Whether this is a simulator.
    pub fn is_simulated(&self) -> bool {
        matches!(self, Self::Simulator(_))
    }
}

impl Default for SnpDeviceAddr {
    fn default() -> Self {
        Self::Device(PathBuf::from(SEV_GUEST))
    }
}

impl fmt::Display for SnpDeviceAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Device(p) => write!(f, "{}", p.display()),
            Self::Simulator(p) => write!(f, "sim:{} (SIMULATED SEV-SNP hardware, test root)", p.display()),
            Self::ConfigFs(p) => write!(f, "tsm:{}", p.display()),
        }
    }
}

/// An extended report as a transport returns it.
#[derive(Clone, Debug)]
pub struct ExtReport {
    /// MSG_REPORT_RSP as the firmware wrote it.
    pub response: Vec<u8>,
    /// The host's certificate table in the GHCB layout (empty when the host supplies none); parsed above the
    /// transport by `attest_engine::snp::CertTable`.
    pub table: Vec<u8>,
}

/// The lowest layer: sends one MSG_REPORT_REQ and returns the firmware's answer. Implementations differ only
/// in how the bytes travel (see the module docs).
pub trait SnpTransport: Send + fmt::Debug {
    /// `SNP_GET_EXT_REPORT` with `request` (MSG_REPORT_REQ) and message version `version`.
    fn ext_report(&mut self, version: u32, request: &[u8; REPORT_REQ_SIZE]) -> Result<ExtReport, HwIssuerError>;
}

/// The kernel's `/dev/sev-guest` through the `sev` crate's ioctl wrapper.
struct Ioctl(sev::firmware::guest::Firmware);

impl fmt::Debug for Ioctl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Ioctl(/dev/sev-guest)")
    }
}

impl SnpTransport for Ioctl {
    fn ext_report(&mut self, version: u32, request: &[u8; REPORT_REQ_SIZE]) -> Result<ExtReport, HwIssuerError> {
        let (report_data, vmpl) = wire::split_request(request);
        // The `sev` crate builds MSG_REPORT_REQ from the same two fields and checks the response STATUS; it
        // returns the REPORT of MSG_REPORT_RSP, which is re-framed here so that both transports hand the same
        // structure to the shared checks.
        let (report, table) = self
            .0
            .get_ext_report(Some(version), Some(report_data), Some(vmpl))
            .map_err(|e| HwIssuerError::Device { op: "SNP_GET_EXT_REPORT", reason: e.to_string() })?;
        let mut response = vec![0u8; REPORT_RSP_SIZE];
        let size = u32::try_from(report.len()).unwrap_or(u32::MAX);
        response[4..8].copy_from_slice(&size.to_le_bytes());
        if report.len() != REPORT_SIZE {
            return Err(HwIssuerError::Device {
                op: "SNP_GET_EXT_REPORT",
                reason: format!("the firmware returned a report of {} bytes, not {REPORT_SIZE}", report.len()),
            });
        }
        response[0x20..].copy_from_slice(&report);
        // The `sev` crate parses the table the kernel filled; it is put back into the GHCB layout so that
        // one parser reads the tables of both transports.
        Ok(ExtReport { response, table: table.map(|t| reencode(&t)).unwrap_or_default() })
    }
}

/// A certificate table in the GHCB layout from the `sev` crate's parsed entries.
fn reencode(entries: &[CertTableEntry]) -> Vec<u8> {
    if entries.is_empty() {
        return Vec::new();
    }
    let kinds: Vec<(CertKind, &[u8])> = entries
        .iter()
        .map(|e| {
            let kind = match &e.cert_type {
                CertType::VCEK => CertKind::Vcek,
                CertType::VLEK => CertKind::Vlek,
                CertType::ASK => CertKind::Ask,
                CertType::ARK => CertKind::Ark,
                other => CertKind::Unknown(uuid::Uuid::try_from(other.clone()).map_or([0xFF; 16], |u| *u.as_bytes())),
            };
            (kind, e.data())
        })
        .collect();
    encode_cert_table(&kinds)
}

/// A configfs-tsm report entry of provider `sev_guest`: `privlevel` (the VMPL, decimal) and `inblob`
/// (REPORT_DATA) written, `outblob` (the report) and `auxblob` (the certificate table) read, the
/// generation checked ([`crate::issuer::tsm`]). The report is framed as MSG_REPORT_RSP for the shared checks.
#[derive(Debug)]
struct ConfigFs(crate::issuer::tsm::TsmEntry);

impl SnpTransport for ConfigFs {
    fn ext_report(&mut self, _version: u32, request: &[u8; REPORT_REQ_SIZE]) -> Result<ExtReport, HwIssuerError> {
        let (report_data, vmpl) = wire::split_request(request);
        let vmpl = vmpl.to_string();
        let (report, table) = self.0.request(&report_data, &[("privlevel", vmpl.as_bytes())])?;
        let report: &[u8; REPORT_SIZE] = report.as_slice().try_into().map_err(|_| HwIssuerError::Device {
            op: "configfs-tsm",
            reason: "the report is not 0x4A0 bytes".into(),
        })?;
        Ok(ExtReport { response: wire::encode_response(report).to_vec(), table })
    }
}

/// A simulator process behind a Unix socket (one connection per request, [`wire`] framing).
#[cfg(feature = "simulated-hardware")]
#[derive(Debug)]
struct Simulator(PathBuf);

#[cfg(feature = "simulated-hardware")]
impl SnpTransport for Simulator {
    fn ext_report(&mut self, version: u32, request: &[u8; REPORT_REQ_SIZE]) -> Result<ExtReport, HwIssuerError> {
        use std::io::{Read as _, Write as _};
        let err = |reason: String| HwIssuerError::Device { op: "simulated SNP_GET_EXT_REPORT", reason };
        let mut s = std::os::unix::net::UnixStream::connect(&self.0)
            .map_err(|e| err(format!("connecting to {}: {e}", self.0.display())))?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(30))).map_err(|e| err(e.to_string()))?;
        s.write_all(&wire::encode_request(version, request)).map_err(|e| err(e.to_string()))?;
        let mut reply = Vec::new();
        s.take(wire::MAX_REPLY_SIZE as u64 + 1).read_to_end(&mut reply).map_err(|e| err(e.to_string()))?;
        let (response, table) = wire::decode_reply(&reply).map_err(|e| err(e.to_owned()))?;
        Ok(ExtReport { response: response.to_vec(), table: table.to_vec() })
    }
}

/// An open SNP guest device (real or simulated). Requests are serialized: the firmware answers one guest
/// message at a time per VMPCK anyway.
#[derive(Debug)]
pub struct SnpGuestDevice {
    addr: SnpDeviceAddr,
    transport: Mutex<Box<dyn SnpTransport>>,
}

impl SnpGuestDevice {
    /// Opens the device at `addr`. [`HwIssuerError::DeviceNotPresent`] when the device node does not exist;
    /// a simulator address in a build without the feature `simulated-hardware` is refused.
    pub fn open(addr: &SnpDeviceAddr) -> Result<Self, HwIssuerError> {
        let transport: Box<dyn SnpTransport> = match addr {
            SnpDeviceAddr::Device(path) => {
                if !path.exists() {
                    return Err(HwIssuerError::DeviceNotPresent { device: SEV_GUEST });
                }
                Box::new(Ioctl(open_device(path)?))
            }
            SnpDeviceAddr::Simulator(path) => simulator(path)?,
            SnpDeviceAddr::ConfigFs(path) => Box::new(ConfigFs(crate::issuer::tsm::TsmEntry::create(
                path,
                crate::issuer::tsm::output::Provider::SevGuest,
            )?)),
        };
        Ok(Self { addr: addr.clone(), transport: Mutex::new(transport) })
    }

    /// A device over any transport (tests).
    pub fn with_transport(addr: SnpDeviceAddr, transport: Box<dyn SnpTransport>) -> Self {
        Self { addr, transport: Mutex::new(transport) }
    }

    /// Where the device is.
    pub fn addr(&self) -> &SnpDeviceAddr {
        &self.addr
    }

    /// An extended report with `report_data` at `vmpl`: the REPORT (0x4A0 bytes, parsed once to catch a
    /// malformed answer here rather than at the verifier) and the host's certificate table (GHCB layout,
    /// empty when there is none).
    pub fn ext_report(&self, report_data: &[u8; 64], vmpl: u32) -> Result<(Vec<u8>, Vec<u8>), HwIssuerError> {
        let request = wire::encode_report_req(report_data, vmpl);
        let ext = self
            .transport
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ext_report(MESSAGE_VERSION, &request)?;
        let report = wire::report_from_response(&ext.response)
            .map_err(|reason| HwIssuerError::Device { op: "reading MSG_REPORT_RSP", reason: reason.to_owned() })?;
        let parsed = attest_engine::snp::Report::parse(report)?;
        if parsed.report_data() != report_data {
            return Err(HwIssuerError::Device {
                op: "SNP_GET_EXT_REPORT",
                reason: "the report does not carry the requested REPORT_DATA".into(),
            });
        }
        Ok((report.to_vec(), ext.table))
    }
}

fn open_device(path: &Path) -> Result<sev::firmware::guest::Firmware, HwIssuerError> {
    if path != Path::new(SEV_GUEST) {
        // The `sev` crate opens the standard node only.
        return Err(HwIssuerError::Device {
            op: "opening the SEV-SNP guest device",
            reason: format!("{}: only {SEV_GUEST} is supported", path.display()),
        });
    }
    sev::firmware::guest::Firmware::open().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => HwIssuerError::DeviceNotPresent { device: SEV_GUEST },
        _ => HwIssuerError::Device { op: "opening /dev/sev-guest", reason: e.to_string() },
    })
}

#[cfg(feature = "simulated-hardware")]
fn simulator(path: &Path) -> Result<Box<dyn SnpTransport>, HwIssuerError> {
    if !path.exists() {
        return Err(HwIssuerError::Device {
            op: "opening the simulated SEV-SNP guest device",
            reason: format!("{}: no such socket", path.display()),
        });
    }
    tracing::warn!(socket = %path.display(), "SIMULATED SEV-SNP hardware: reports are signed by a test root");
    Ok(Box::new(Simulator(path.to_owned())))
}

#[cfg(not(feature = "simulated-hardware"))]
fn simulator(path: &Path) -> Result<Box<dyn SnpTransport>, HwIssuerError> {
    Err(HwIssuerError::Device {
        op: "opening the simulated SEV-SNP guest device",
        reason: format!(
            "sim:{}: this build cannot use simulated hardware (built without the feature `simulated-hardware`)",
            path.display()
        ),
    })
}

/// The simulator transport's framing, shared by the client here and the simulator in `attest-hwsim`:
///
/// ```text
/// request  "ASGQ" · message version u32le · MSG_REPORT_REQ (96)                              = 104 bytes
/// reply    "ASGR" · error u32le (0: success) · MSG_REPORT_RSP (1216) · table length u32le · table
/// ```
///
/// A non-zero error carries no further fields beyond a UTF-8 reason up to the end of the reply.
pub mod wire {
    use super::{MAX_CERT_TABLE_SIZE, REPORT_REQ_SIZE, REPORT_RSP_SIZE, REPORT_SIZE};

    /// Request magic.
    pub const REQUEST_MAGIC: &[u8; 4] = b"ASGQ";
    /// Reply magic.
    pub const REPLY_MAGIC: &[u8; 4] = b"ASGR";
    /// Size of a request.
    pub const REQUEST_SIZE: usize = 8 + REPORT_REQ_SIZE;
    /// Largest reply read (a response and the largest certificate table).
    pub const MAX_REPLY_SIZE: usize = 12 + REPORT_RSP_SIZE + MAX_CERT_TABLE_SIZE;

    /// MSG_REPORT_REQ for `report_data` at `vmpl`.
    pub fn encode_report_req(report_data: &[u8; 64], vmpl: u32) -> [u8; REPORT_REQ_SIZE] {
        let mut req = [0u8; REPORT_REQ_SIZE];
        req[..64].copy_from_slice(report_data);
        req[64..68].copy_from_slice(&vmpl.to_le_bytes());
        req
    }

    /// REPORT_DATA and VMPL of a MSG_REPORT_REQ.
    pub fn split_request(req: &[u8; REPORT_REQ_SIZE]) -> ([u8; 64], u32) {
        let mut data = [0u8; 64];
        data.copy_from_slice(&req[..64]);
        (data, u32::from_le_bytes([req[64], req[65], req[66], req[67]]))
    }

    /// A framed request.
    pub fn encode_request(version: u32, req: &[u8; REPORT_REQ_SIZE]) -> Vec<u8> {
        let mut out = Vec::with_capacity(REQUEST_SIZE);
        out.extend_from_slice(REQUEST_MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(req);
        out
    }

    /// The message version and MSG_REPORT_REQ of a framed request.
    pub fn decode_request(bytes: &[u8]) -> Result<(u32, [u8; REPORT_REQ_SIZE]), &'static str> {
        if bytes.len() != REQUEST_SIZE || &bytes[..4] != REQUEST_MAGIC {
            return Err("not a simulated SNP_GET_EXT_REPORT request");
        }
        let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let mut req = [0u8; REPORT_REQ_SIZE];
        req.copy_from_slice(&bytes[8..]);
        Ok((version, req))
    }

    /// A successful reply.
    pub fn encode_reply(response: &[u8; REPORT_RSP_SIZE], table: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + response.len() + table.len());
        out.extend_from_slice(REPLY_MAGIC);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(response);
        out.extend_from_slice(&u32::try_from(table.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(table);
        out
    }

    /// A failure reply with a reason.
    pub fn encode_error(code: u32, reason: &str) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(REPLY_MAGIC);
        out.extend_from_slice(&code.max(1).to_le_bytes());
        out.extend_from_slice(reason.as_bytes());
        out
    }

    /// MSG_REPORT_RSP and the certificate table of a reply.
    pub fn decode_reply(bytes: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
        if bytes.len() > MAX_REPLY_SIZE {
            return Err("the simulator's reply exceeds MAX_REPLY_SIZE");
        }
        if bytes.len() < 8 || &bytes[..4] != REPLY_MAGIC {
            return Err("not a simulated SNP_GET_EXT_REPORT reply");
        }
        if bytes[4..8] != [0; 4] {
            return Err("the simulated firmware refused the request");
        }
        let rest = &bytes[8..];
        if rest.len() < REPORT_RSP_SIZE + 4 {
            return Err("a truncated reply");
        }
        let (response, rest) = rest.split_at(REPORT_RSP_SIZE);
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let table = &rest[4..];
        if table.len() != len || len > MAX_CERT_TABLE_SIZE {
            return Err("the certificate table length does not match the reply");
        }
        Ok((response, table))
    }

    /// MSG_REPORT_RSP around a signed report (STATUS 0, REPORT_SIZE 0x4A0).
    pub fn encode_response(report: &[u8; REPORT_SIZE]) -> [u8; REPORT_RSP_SIZE] {
        let mut rsp = [0u8; REPORT_RSP_SIZE];
        rsp[4..8].copy_from_slice(&(REPORT_SIZE as u32).to_le_bytes());
        rsp[0x20..].copy_from_slice(report);
        rsp
    }

    /// The REPORT of a MSG_REPORT_RSP: STATUS must be 0 and REPORT_SIZE 0x4A0.
    pub fn report_from_response(rsp: &[u8]) -> Result<&[u8], &'static str> {
        if rsp.len() != REPORT_RSP_SIZE {
            return Err("MSG_REPORT_RSP has the wrong size");
        }
        if rsp[..4] != [0; 4] {
            return Err("MSG_REPORT_RSP STATUS is not success");
        }
        if u32::from_le_bytes([rsp[4], rsp[5], rsp[6], rsp[7]]) as usize != REPORT_SIZE {
            return Err("MSG_REPORT_RSP REPORT_SIZE is not 0x4A0");
        }
        Ok(&rsp[0x20..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(SnpDeviceAddr::parse("/dev/sev-guest").unwrap(), SnpDeviceAddr::default());
        assert_eq!(SnpDeviceAddr::parse("sim:/tmp/s").unwrap(), SnpDeviceAddr::Simulator("/tmp/s".into()));
        assert!(SnpDeviceAddr::parse("sim:relative").is_err());
        assert!(SnpDeviceAddr::parse("sev-guest").is_err());
        assert_eq!(
            SnpDeviceAddr::parse("tsm:/sys/kernel/config/tsm/report").unwrap(),
            SnpDeviceAddr::ConfigFs("/sys/kernel/config/tsm/report".into())
        );
        assert!(SnpDeviceAddr::parse("tsm:relative").is_err());
        assert!(SnpDeviceAddr::parse("sim:/tmp/s").unwrap().to_string().contains("SIMULATED"));
    }

    #[test]
    fn sev_entries_are_put_back_into_the_ghcb_layout() {
        let entries =
            vec![CertTableEntry::new(CertType::VCEK, vec![1, 2, 3]), CertTableEntry::new(CertType::ASK, vec![4; 10])];
        let table = reencode(&entries);
        let parsed = attest_engine::snp::CertTable::parse(&table).unwrap();
        assert_eq!(parsed.get(CertKind::Vcek), Some(&[1, 2, 3][..]));
        assert_eq!(parsed.get(CertKind::Ask), Some(&[4; 10][..]));
        assert!(reencode(&[]).is_empty());
    }

    #[test]
    fn wire_round_trip() {
        let req = wire::encode_report_req(&[7; 64], 2);
        assert_eq!(wire::split_request(&req), ([7; 64], 2));
        let framed = wire::encode_request(1, &req);
        assert_eq!(wire::decode_request(&framed).unwrap(), (1, req));
        assert!(wire::decode_request(&framed[1..]).is_err());

        let rsp = wire::encode_response(&[9; REPORT_SIZE]);
        assert_eq!(wire::report_from_response(&rsp).unwrap(), &[9; REPORT_SIZE]);
        let reply = wire::encode_reply(&rsp, b"table");
        assert_eq!(wire::decode_reply(&reply).unwrap(), (&rsp[..], &b"table"[..]));
        assert!(wire::decode_reply(&reply[..reply.len() - 1]).is_err());
        assert!(wire::decode_reply(&wire::encode_error(5, "no")).is_err());
        let mut failed = rsp;
        failed[0] = 0x16;
        assert!(wire::report_from_response(&failed).is_err());
    }

    #[test]
    fn simulator_addresses_need_the_feature() {
        let addr = SnpDeviceAddr::Simulator("/nonexistent/socket".into());
        let err = SnpGuestDevice::open(&addr).unwrap_err();
        if cfg!(feature = "simulated-hardware") {
            assert!(err.to_string().contains("no such socket"), "{err}");
        } else {
            assert!(err.to_string().contains("simulated-hardware"), "{err}");
        }
    }
}
