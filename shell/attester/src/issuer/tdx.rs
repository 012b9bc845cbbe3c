//! The TDX issuers: `qemu-tdx` (a TD quote, no vTPM) and `azure-tdx` (the paravisor's vTPM and a TD quote of
//! its HCL report's TD report).
//!
//! ```text
//! qemu-tdx   REPORTDATA = SHA-256(user_data ‖ nonce) ‖ 0³²            (attest_engine::variant::tdx::qemu_report_data)
//!            document   = { variant, tdx { quote, event_log (CCEL, written part) }, instance_info, user_data }
//!
//! azure-tdx  HCL report  = NV 0x01400001: header ‖ TDREPORT (REPORTDATA = SHA-256(runtime data) ‖ 0³²) ‖ …
//!            TD quote    = POST {"report": base64url(TDREPORT)} to the paravisor's quote endpoint
//!                          (http://169.254.169.254/acc/tdquote) → {"quote": base64url(quote)}
//!            vTPM quote  = by the HCL AK (0x81000003), extraData = SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))
//!            document    = { variant, tpm { quote, pcrs }, hcl_report, tdx { quote }, instance_info, user_data }
//! ```
//!
//! `qemu-tdx` has no vTPM: the node lock's binding lives in RTMR3 ([`super::tdguest::LOCK_RTMR`],
//! [`QemuTdxIssuer::guest`]), read back from the TD report. The TD quote of an Azure HCL report is the same
//! for every attestation of a boot (the vTPM quote carries the nonce), so it is fetched once per HCL report
//! and kept.
//!
//! The quote endpoint's format is the one Azure's guest attestation library and Microsoft's `az-tdx-vtpm`
//! crate use: `POST /acc/tdquote`, `Content-Type: application/json`, body `{"report":"<base64url of the
//! 1024-byte TD report, unpadded>"}`; the answer (200) is `{"quote":"<base64url of the quote>"}`. It is
//! reached without a proxy, with bounded time and size ([`QuoteEndpoint`]).

use super::azure::{AZURE_AK_HANDLE, HCL_REPORT_NV_INDEX, VtpmQuote};
use super::error::HwIssuerError;
use super::tdguest::TdxGuest;
use crate::tpm::{AttestationKey, PcrMask, QuotedPcrs, Tpm};
use attest_engine::azure::HclReport;
use attest_engine::azure::hcl::HardwareReportType;
use attest_engine::crypto::default_provider;
use attest_engine::tdx::TdQuote;
use attest_engine::tdx::tdreport::{RawTdReportStruct, TDREPORT_SIZE};
use attest_engine::variant::tdx::qemu_report_data;
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, TdxEvidence};
use base64::Engine as _;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

/// Issues `qemu-tdx` documents from a TDX guest.
#[derive(Debug)]
pub struct QemuTdxIssuer {
    guest: TdxGuest,
    event_log: Vec<u8>,
}

impl QemuTdxIssuer {
    /// An issuer over `guest`, sending its CC event log (read now: the firmware's log does not change).
    pub fn new(guest: TdxGuest) -> Result<Self, HwIssuerError> {
        let event_log = guest.event_log()?;
        Ok(Self { guest, event_log })
    }

    /// The TDX guest (quotes, RTMR extension and read-back for the node lock).
    pub fn guest(&self) -> &TdxGuest {
        &self.guest
    }

    /// The CC event log sent with every document (empty without a CCEL table).
    pub fn event_log(&self) -> &[u8] {
        &self.event_log
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data`.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let report_data = qemu_report_data(default_provider(), user_data, nonce);
        let quote = self.guest.quote(&report_data)?;
        Ok(AttestationDocument {
            variant: Variant::QemuTdx.name().to_owned(),
            tpm: None,
            snp: None,
            tdx: Some(TdxEvidence { quote, event_log: self.event_log.clone() }),
            hcl_report: Vec::new(),
            instance_info: instance_info.to_vec(),
            user_data: user_data.to_vec(),
        })
    }
}

/// Largest response read from the quote endpoint.
pub const MAX_QUOTE_RESPONSE_SIZE: usize = 256 * 1024;
/// Connect timeout of the quote endpoint.
pub const QUOTE_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Read/write timeout of the quote endpoint.
pub const QUOTE_IO_TIMEOUT: Duration = Duration::from_secs(30);

/// The paravisor's quote endpoint (Azure's instance metadata address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuoteEndpoint {
    addr: SocketAddr,
    path: String,
}

/// Azure's: `http://169.254.169.254/acc/tdquote`.
pub const AZURE_QUOTE_ENDPOINT: &str = "169.254.169.254:80";
/// The path of Azure's quote endpoint.
pub const AZURE_QUOTE_PATH: &str = "/acc/tdquote";

impl Default for QuoteEndpoint {
    fn default() -> Self {
        Self {
            addr: AZURE_QUOTE_ENDPOINT.parse().unwrap_or_else(|_| SocketAddr::from(([169, 254, 169, 254], 80))),
            path: AZURE_QUOTE_PATH.to_owned(),
        }
    }
}

impl QuoteEndpoint {
    /// Parses `http://IP:PORT/path` (the default is Azure's; any other needs the feature
    /// `simulated-hardware`: a stand-in of the endpoint is simulated hardware).
    pub fn parse(s: &str) -> Result<Self, HwIssuerError> {
        let bad = |reason| HwIssuerError::Argument { value: s.to_owned(), reason };
        let rest = s.strip_prefix("http://").ok_or_else(|| bad("expected http://IP:PORT/path"))?;
        let (host, path) = rest.split_once('/').ok_or_else(|| bad("no path"))?;
        let addr: SocketAddr = if host.contains(':') { host.parse() } else { format!("{host}:80").parse() }
            .map_err(|_| bad("the host must be IP:PORT"))?;
        let endpoint = Self { addr, path: format!("/{path}") };
        if endpoint != Self::default() && !cfg!(feature = "simulated-hardware") {
            return Err(bad(
                "a quote endpoint other than Azure's is simulated hardware (built without the feature `simulated-hardware`)",
            ));
        }
        Ok(endpoint)
    }

    /// Whether this is Azure's endpoint.
    pub fn is_azure(&self) -> bool {
        *self == Self::default()
    }

    /// The quote of `td_report` (a TDREPORT_STRUCT).
    pub fn quote(&self, td_report: &[u8]) -> Result<Vec<u8>, HwIssuerError> {
        let err = |reason: String| HwIssuerError::Device { op: "the TD quote endpoint", reason };
        let body = serde_json::json!({ "report": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(td_report) })
            .to_string();
        let mut stream = TcpStream::connect_timeout(&self.addr, QUOTE_CONNECT_TIMEOUT)
            .map_err(|e| err(format!("{}: {e}", self.addr)))?;
        stream.set_read_timeout(Some(QUOTE_IO_TIMEOUT)).map_err(|e| err(e.to_string()))?;
        stream.set_write_timeout(Some(QUOTE_IO_TIMEOUT)).map_err(|e| err(e.to_string()))?;
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.path,
            self.addr.ip(),
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(|e| err(e.to_string()))?;
        let mut response = Vec::new();
        stream.take(MAX_QUOTE_RESPONSE_SIZE as u64 + 1).read_to_end(&mut response).map_err(|e| err(e.to_string()))?;
        if response.len() > MAX_QUOTE_RESPONSE_SIZE {
            return Err(err(format!("the response exceeds {MAX_QUOTE_RESPONSE_SIZE} bytes")));
        }
        let body = http_body(&response).map_err(|r| err(r.to_owned()))?;
        decode_quote_response(&body).map_err(|r| err(r.to_owned()))
    }
}

/// The body of a complete HTTP/1.1 response with status 200 (Content-Length, chunked, or up to the close).
pub fn http_body(response: &[u8]) -> Result<Vec<u8>, &'static str> {
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete HTTP response head")?;
    let head = core::str::from_utf8(&response[..end]).map_err(|_| "the HTTP response head is not text")?;
    let rest = &response[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    let code = status.split(' ').nth(1).ok_or("no HTTP status")?;
    if !status.starts_with("HTTP/1.") {
        return Err("not an HTTP/1.x response");
    }
    if code != "200" {
        return Err("the quote endpoint did not answer 200 OK");
    }
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = Vec::new();
        let mut rest = rest;
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or("a truncated chunk")?;
            let size = core::str::from_utf8(&rest[..line_end]).map_err(|_| "a malformed chunk size")?;
            let size = usize::from_str_radix(size.split(';').next().unwrap_or_default().trim(), 16)
                .map_err(|_| "a malformed chunk size")?;
            rest = &rest[line_end + 2..];
            if size == 0 {
                return Ok(out);
            }
            if rest.len() < size + 2 {
                return Err("a truncated chunk");
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    }
    match header("content-length") {
        Some(len) => {
            let len: usize = len.parse().map_err(|_| "a malformed Content-Length")?;
            if rest.len() < len {
                return Err("a truncated HTTP body");
            }
            Ok(rest[..len].to_vec())
        }
        None => Ok(rest.to_vec()),
    }
}

/// The quote in the endpoint's JSON answer (`{"quote": base64url}`, padded or not).
pub fn decode_quote_response(body: &[u8]) -> Result<Vec<u8>, &'static str> {
    #[derive(serde::Deserialize)]
    struct Response {
        quote: String,
    }
    let r: Response = serde_json::from_slice(body).map_err(|_| "the answer is not {\"quote\": …}")?;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let quote = engine.decode(r.quote.trim()).map_err(|_| "the quote is not base64url")?;
    TdQuote::parse_prefix(&quote).map_err(|_| "the endpoint's quote does not parse")?;
    Ok(quote)
}

/// The TD report inside an HCL report of TDX type.
pub fn hcl_td_report(hcl_report: &[u8]) -> Result<&[u8], HwIssuerError> {
    let hcl = HclReport::parse(hcl_report)?;
    if hcl.report_type() != HardwareReportType::Tdx {
        return Err(HwIssuerError::Device { op: "reading the HCL report", reason: "not a TDX HCL report".into() });
    }
    let td_report = &hcl.hardware_report()[..TDREPORT_SIZE];
    RawTdReportStruct::parse(td_report)?;
    Ok(td_report)
}

/// Issues `azure-tdx` documents from the paravisor's vTPM and quote endpoint.
#[derive(Debug)]
pub struct AzureTdxIssuer {
    tpm: Mutex<Tpm>,
    ak: AttestationKey,
    endpoint: QuoteEndpoint,
    /// The last HCL report and its TD quote.
    quoted: Mutex<Option<(Vec<u8>, Vec<u8>)>>,
}

impl AzureTdxIssuer {
    /// An issuer over `tpm` (the HCL report at NV 0x01400001 must be of TDX type, the HCL AK at 0x81000003)
    /// and the quote `endpoint`.
    pub fn new(mut tpm: Tpm, endpoint: QuoteEndpoint) -> Result<Self, HwIssuerError> {
        if !tpm.handle_exists(HCL_REPORT_NV_INDEX)? {
            return Err(HwIssuerError::DeviceNotPresent { device: "vTPM NV index 0x01400001 (HCL report)" });
        }
        if !tpm.handle_exists(AZURE_AK_HANDLE)? {
            return Err(HwIssuerError::DeviceNotPresent { device: "vTPM persistent key 0x81000003 (HCL AK)" });
        }
        hcl_td_report(&tpm.nv_read(HCL_REPORT_NV_INDEX)?)?;
        let ak = tpm.existing_attestation_key(AZURE_AK_HANDLE)?;
        Ok(Self { tpm: Mutex::new(tpm), ak, endpoint, quoted: Mutex::new(None) })
    }

    /// Runs `f` with exclusive use of the TPM.
    pub fn with_tpm<T>(&self, f: impl FnOnce(&mut Tpm) -> T) -> T {
        f(&mut self.tpm.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Whether the quote endpoint is a simulated stand-in.
    pub fn is_simulated(&self) -> bool {
        !self.endpoint.is_azure()
    }

    /// The HCL report now and the TD quote of its TD report (fetched once per HCL report).
    pub fn hcl_and_td_quote(&self) -> Result<(Vec<u8>, Vec<u8>), HwIssuerError> {
        let hcl = self.with_tpm(|tpm| tpm.nv_read(HCL_REPORT_NV_INDEX))?;
        let mut cached = self.quoted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((h, q)) = cached.as_ref()
            && *h == hcl
        {
            return Ok((hcl, q.clone()));
        }
        let td_report = hcl_td_report(&hcl)?;
        let quote = self.endpoint.quote(td_report)?;
        let parsed = TdQuote::parse_prefix(&quote)?;
        if parsed.body().report_data()[..] != td_report[128..192] {
            return Err(HwIssuerError::Device {
                op: "the TD quote endpoint",
                reason: "the quote is not of the HCL report's TD report (REPORTDATA differs)".into(),
            });
        }
        let quote = parsed.as_bytes().to_vec();
        *cached = Some((hcl.clone(), quote.clone()));
        Ok((hcl, quote))
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` and `instance_info`.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let extra = Validator::quote_nonce(default_provider(), instance_info, user_data, nonce);
        let (hcl_report, td_quote) = self.hcl_and_td_quote()?;
        let QuotedPcrs { quote, values } = self.with_tpm(|tpm| tpm.consistent_quote(&self.ak, PcrMask::ALL, &extra))?;
        let quote = VtpmQuote {
            attest: quote.attest,
            signature: quote.signature,
            pcrs: values.iter().map(|(_, v)| *v).collect(),
        };
        Ok(azure_tdx_document(hcl_report, td_quote, quote, instance_info, user_data))
    }
}

/// An `azure-tdx` document from its parts.
pub fn azure_tdx_document(
    hcl_report: Vec<u8>,
    td_quote: Vec<u8>,
    quote: VtpmQuote,
    instance_info: &[u8],
    user_data: &[u8],
) -> AttestationDocument {
    AttestationDocument {
        tdx: Some(TdxEvidence { quote: td_quote, event_log: Vec::new() }),
        hcl_report,
        ..super::tpm_document(Variant::AzureTdx, super::azure::vtpm_evidence(quote), instance_info, user_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_bodies() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\nabcdEXTRA";
        assert_eq!(http_body(ok).unwrap(), b"abcd");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(http_body(chunked).unwrap(), b"abcde");
        let close = b"HTTP/1.0 200 OK\r\n\r\n{}";
        assert_eq!(http_body(close).unwrap(), b"{}");
        for bad in [
            &b"HTTP/1.1 500 Internal\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"SSH-2.0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n",
        ] {
            assert!(http_body(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn quote_responses() {
        assert!(decode_quote_response(b"{\"quote\": \"!!\"}").is_err());
        assert!(decode_quote_response(b"{\"report\": \"AAAA\"}").is_err());
        assert!(decode_quote_response(b"{\"quote\": \"AAAA\"}").is_err(), "three zero bytes are no quote");
        assert!(decode_quote_response(b"not json").is_err());
    }

    #[test]
    fn endpoints() {
        assert!(QuoteEndpoint::parse("http://169.254.169.254/acc/tdquote").unwrap().is_azure());
        let local = QuoteEndpoint::parse("http://127.0.0.1:8080/acc/tdquote");
        assert_eq!(local.is_ok(), cfg!(feature = "simulated-hardware"));
        assert!(QuoteEndpoint::parse("https://169.254.169.254/acc/tdquote").is_err());
        assert!(QuoteEndpoint::parse("http://example.com/acc/tdquote").is_err());
    }
}
