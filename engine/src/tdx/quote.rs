//! The DCAP TD quote, versions 4 and 5 (Intel "TDX DCAP Quoting Library API", Appendix A.3 "Version 4 Quote
//! Format" and A.4 "Version 5 Quote Format"), parsed into borrowed views.
//!
//! ```text
//! v4: header [48] ‖ TD report body 1.0 [584]                                  ‖ sig_data_len u32 ‖ sig_data
//! v5: header [48] ‖ body_type u16 (2 = TDX 1.0, 3 = TDX 1.5) ‖ body_size u32 ‖ body ‖ sig_data_len u32 ‖ sig_data
//!
//! sig_data (A.3.8 "Quote Signature Data"):
//!   quote signature [64] (ECDSA P-256 r ‖ s over header ‖ body-with-v5-prefix, i.e. every byte before sig_data_len)
//!   attestation public key [64] (x ‖ y)
//!   certification data: type u16 = 6 (QE report certification data), size u32, then (A.3.11):
//!     QE report [384] ‖ QE report signature [64] (by the PCK key) ‖ QE auth data size u16 ‖ QE auth data
//!     ‖ certification data: type u16 = 5 (PCK certificate chain, PEM), size u32, data
//! ```
//!
//! Every length read from the quote is checked against its container and against a named limit
//! ([`MAX_SIGNATURE_DATA_SIZE`], [`MAX_QE_AUTH_DATA_SIZE`], [`MAX_PCK_CHAIN_SIZE`], [`MAX_QUOTE_INPUT_SIZE`]);
//! every nested structure must be consumed exactly.
//!
//! # Where the quote ends, and trailing bytes
//!
//! The quote ends where its signature data ends: `sig_data_len` defines it. Real quotes often arrive with
//! bytes after that end — fixed-size buffers from the quote-generation service padded with zeros (Azure
//! hands out 5006-byte buffers for 4936-byte quotes, GCE 8000-byte ones), or test junk. Those bytes are
//! covered by no signature and carry no meaning. [`TdQuote::parse`] is strict and refuses them
//! ([`Error::TrailingData`]); [`TdQuote::parse_prefix`] accepts them and reports their count, and
//! [`TdQuote::trailing`] classifies them, so that the caller's policy decides
//! (`TdxPolicy::trailing_bytes`: by default zero padding is accepted and anything else refused).

use super::body::{RawTdReport10, RawTdReport15, TD_REPORT10_SIZE, TD_REPORT15_SIZE, TdReport};
use super::header::{ATT_KEY_TYPE_ECDSA_P256, HEADER_SIZE, Header, INTEL_QE_VENDOR_ID, RawHeader, TEE_TYPE_TDX};
use super::qe_report::{QE_REPORT_SIZE, QeReport, RawQeReport};
use crate::error::Error;
use zerocopy::FromBytes;

/// Largest input accepted by [`TdQuote::parse_prefix`] (quote and trailing bytes together): 64 KiB.
/// Source: real quotes are 4.9–5.0 KiB, and the largest padded buffer seen (GCE) is 8000 bytes.
pub const MAX_QUOTE_INPUT_SIZE: usize = 64 * 1024;
/// Largest `sig_data_len`: 16 KiB. Source: Intel's TD QE writes 128 bytes of signature and key, a 384-byte QE
/// report and signature, 32 bytes of auth data and a PEM PCK chain of ≈3.7 KiB; ≈4.3 KiB in all.
pub const MAX_SIGNATURE_DATA_SIZE: usize = 16 * 1024;
/// Largest QE authentication data: 512 bytes. Source: Intel's TD QE writes 32 bytes (the field is a u16).
pub const MAX_QE_AUTH_DATA_SIZE: usize = 512;
/// Largest PEM PCK certificate chain (certification data type 5): 12 KiB. Source: Intel's three-certificate
/// chains are ≈3.7 KiB of PEM.
pub const MAX_PCK_CHAIN_SIZE: usize = 12 * 1024;

/// Certification data type 5: the PCK certificate chain, PEM (leaf, PCK CA, root).
pub const CERT_DATA_PCK_CHAIN: u16 = 5;
/// Certification data type 6: QE report certification data.
pub const CERT_DATA_QE_REPORT: u16 = 6;
/// Quote v5 body type 2: TDX 1.0 TD report body.
pub const BODY_TYPE_TDX10: u16 = 2;
/// Quote v5 body type 3: TDX 1.5 TD report body.
pub const BODY_TYPE_TDX15: u16 = 3;

/// What follows the quote in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trailing {
    /// Nothing: the input is exactly the quote.
    None,
    /// `n` zero bytes (a padded buffer).
    ZeroPadding(usize),
    /// `n` bytes of which at least one is not zero.
    Other(usize),
}

impl Trailing {
    /// How many bytes followed the quote.
    pub fn len(self) -> usize {
        match self {
            Self::None => 0,
            Self::ZeroPadding(n) | Self::Other(n) => n,
        }
    }
    /// Whether nothing followed.
    pub fn is_empty(self) -> bool {
        self == Self::None
    }
}

/// A parsed TD quote, borrowing from the input.
#[derive(Clone, Copy, Debug)]
pub struct TdQuote<'a> {
    bytes: &'a [u8],
    trailing: Trailing,
    header: Header<'a>,
    body: TdReport<'a>,
    signed_len: usize,
    signature: &'a [u8; 64],
    attestation_key: &'a [u8; 64],
    qe_report: QeReport<'a>,
    qe_report_signature: &'a [u8; 64],
    qe_auth_data: &'a [u8],
    pck_chain: &'a [u8],
}

/// A cursor over the quote; every read names the structure for the error.
struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, structure: &'static str) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.input.len()).ok_or(Error::Truncated {
            structure,
            needed: self.pos.saturating_add(n),
            found: self.input.len(),
        })?;
        let s = &self.input[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u16(&mut self, structure: &'static str) -> Result<u16, Error> {
        let b = self.take(2, structure)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, structure: &'static str) -> Result<u32, Error> {
        let b = self.take(4, structure)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn array<const N: usize>(&mut self, structure: &'static str) -> Result<&'a [u8; N], Error> {
        Ok(self.take(N, structure)?.try_into().expect("take returned N bytes"))
    }
    /// A length-prefixed region bounded by `limit`.
    fn bounded(&mut self, len: usize, limit: usize, what: &'static str) -> Result<&'a [u8], Error> {
        if len > limit {
            return Err(Error::LimitExceeded { what, limit, found: len });
        }
        self.take(len, what)
    }
    fn finish(&self, structure: &'static str, offset: usize) -> Result<(), Error> {
        if self.pos == self.input.len() {
            Ok(())
        } else {
            Err(Error::TdxQuote { structure, offset: offset + self.pos, reason: "size field exceeds its contents" })
        }
    }
}

fn unsupported(field: &'static str, found: impl Into<u64>) -> Error {
    Error::TdxUnsupported { field, found: found.into() }
}

impl<'a> TdQuote<'a> {
    /// Parses a quote that must fill `bytes` exactly.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let quote = Self::parse_prefix(bytes)?;
        match quote.trailing {
            Trailing::None => Ok(quote),
            t => Err(Error::TrailingData { structure: "TDX quote", extra: t.len() }),
        }
    }

    /// Parses the quote at the start of `bytes`; bytes after its end are accepted and classified
    /// ([`Self::trailing`]), never interpreted.
    pub fn parse_prefix(bytes: &'a [u8]) -> Result<Self, Error> {
        if bytes.len() > MAX_QUOTE_INPUT_SIZE {
            return Err(Error::LimitExceeded {
                what: "TDX quote input size",
                limit: MAX_QUOTE_INPUT_SIZE,
                found: bytes.len(),
            });
        }
        let mut c = Cursor { input: bytes, pos: 0 };
        let header = RawHeader::ref_from_bytes(c.take(HEADER_SIZE, "TDX quote header")?).expect("48 bytes");
        let header = Header(header);
        let version = header.version();
        if version != 4 && version != 5 {
            return Err(unsupported("version", version));
        }
        if header.att_key_type() != ATT_KEY_TYPE_ECDSA_P256 {
            return Err(unsupported("attestation key type", header.att_key_type()));
        }
        if header.tee_type() != TEE_TYPE_TDX {
            return Err(unsupported("TEE type", header.tee_type()));
        }
        if header.qe_vendor_id() != &INTEL_QE_VENDOR_ID {
            return Err(Error::TdxQuote { structure: "header", offset: 0x0C, reason: "QE vendor is not Intel" });
        }
        let body_len = if version == 4 {
            TD_REPORT10_SIZE
        } else {
            let body_type = c.u16("TDX quote v5 body type")?;
            let size = c.u32("TDX quote v5 body size")? as usize;
            let want = match body_type {
                BODY_TYPE_TDX10 => TD_REPORT10_SIZE,
                BODY_TYPE_TDX15 => TD_REPORT15_SIZE,
                t => return Err(unsupported("body type", t)),
            };
            if size != want {
                return Err(Error::TdxQuote {
                    structure: "v5 body descriptor",
                    offset: HEADER_SIZE + 2,
                    reason: "body size does not match the body type",
                });
            }
            want
        };
        let body_bytes = c.take(body_len, "TD report body")?;
        let body = match body_len {
            TD_REPORT15_SIZE => {
                let ext = RawTdReport15::ref_from_bytes(body_bytes).expect("648 bytes");
                TdReport { base: &ext.base, ext: Some(ext) }
            }
            _ => TdReport { base: RawTdReport10::ref_from_bytes(body_bytes).expect("584 bytes"), ext: None },
        };
        let signed_len = c.pos;
        let sig_len = c.u32("signature data length")? as usize;
        let sig_start = c.pos;
        let sig_data = c.bounded(sig_len, MAX_SIGNATURE_DATA_SIZE, "TDX quote signature data length")?;
        let end = c.pos;
        let trailing = match &bytes[end..] {
            [] => Trailing::None,
            rest if rest.iter().all(|b| *b == 0) => Trailing::ZeroPadding(rest.len()),
            rest => Trailing::Other(rest.len()),
        };

        // Signature data.
        let mut s = Cursor { input: sig_data, pos: 0 };
        let signature = s.array::<64>("quote signature")?;
        let attestation_key = s.array::<64>("attestation key")?;
        let cert_type = s.u16("certification data type")?;
        if cert_type != CERT_DATA_QE_REPORT {
            return Err(unsupported("certification data type", cert_type));
        }
        let cert_len = s.u32("certification data size")? as usize;
        let cert_data = s.bounded(cert_len, MAX_SIGNATURE_DATA_SIZE, "TDX certification data size")?;
        s.finish("signature data", sig_start)?;

        // QE report certification data.
        let cert_start = sig_start + 134;
        let mut q = Cursor { input: cert_data, pos: 0 };
        let qe_bytes = q.take(QE_REPORT_SIZE, "QE report")?;
        let qe_report = QeReport { raw: RawQeReport::ref_from_bytes(qe_bytes).expect("384 bytes"), bytes: qe_bytes };
        let qe_report_signature = q.array::<64>("QE report signature")?;
        let auth_len = usize::from(q.u16("QE authentication data size")?);
        let qe_auth_data = q.bounded(auth_len, MAX_QE_AUTH_DATA_SIZE, "QE authentication data size")?;
        let inner_type = q.u16("PCK certification data type")?;
        if inner_type != CERT_DATA_PCK_CHAIN {
            return Err(unsupported("PCK certification data type", inner_type));
        }
        let chain_len = q.u32("PCK certification data size")? as usize;
        let pck_chain = q.bounded(chain_len, MAX_PCK_CHAIN_SIZE, "PCK certificate chain size")?;
        q.finish("QE report certification data", cert_start)?;

        Ok(Self {
            bytes: &bytes[..end],
            trailing,
            header,
            body,
            signed_len,
            signature,
            attestation_key,
            qe_report,
            qe_report_signature,
            qe_auth_data,
            pck_chain,
        })
    }

    /// The quote's bytes, without anything that followed it.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// What followed the quote in the input.
    pub fn trailing(&self) -> Trailing {
        self.trailing
    }
    /// The header.
    pub fn header(&self) -> Header<'a> {
        self.header
    }
    /// The quote version (4 or 5).
    pub fn version(&self) -> u16 {
        self.header.version()
    }
    /// The TD report body.
    pub fn body(&self) -> TdReport<'a> {
        self.body
    }
    /// What the attestation key signed: every byte before the signature data length, as received
    /// (header, the v5 body descriptor, and the body).
    pub fn signed_bytes(&self) -> &'a [u8] {
        &self.bytes[..self.signed_len]
    }
    /// The quote signature, `r ‖ s` big-endian.
    pub fn signature(&self) -> &'a [u8; 64] {
        self.signature
    }
    /// The attestation public key, `x ‖ y`.
    pub fn attestation_key(&self) -> &'a [u8; 64] {
        self.attestation_key
    }
    /// The QE report.
    pub fn qe_report(&self) -> QeReport<'a> {
        self.qe_report
    }
    /// The QE report signature by the PCK key, `r ‖ s`.
    pub fn qe_report_signature(&self) -> &'a [u8; 64] {
        self.qe_report_signature
    }
    /// The QE authentication data.
    pub fn qe_auth_data(&self) -> &'a [u8] {
        self.qe_auth_data
    }
    /// The PCK certificate chain as PEM text (certification data type 5), as received.
    pub fn pck_chain_pem(&self) -> &'a [u8] {
        self.pck_chain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A structurally valid v4 quote with `chain` as its PCK chain.
    pub(crate) fn synthetic(version: u16, body_type: Option<u16>, chain: &[u8]) -> Vec<u8> {
        let mut q = Vec::new();
        q.extend(version.to_le_bytes());
        q.extend(ATT_KEY_TYPE_ECDSA_P256.to_le_bytes());
        q.extend(TEE_TYPE_TDX.to_le_bytes());
        q.extend([0u8; 4]);
        q.extend(INTEL_QE_VENDOR_ID);
        q.extend([0u8; 20]);
        let body_len = match body_type {
            Some(BODY_TYPE_TDX15) => TD_REPORT15_SIZE,
            _ => TD_REPORT10_SIZE,
        };
        if let Some(t) = body_type {
            q.extend(t.to_le_bytes());
            q.extend((body_len as u32).to_le_bytes());
        }
        q.extend(vec![0u8; body_len]);
        let cert_len = QE_REPORT_SIZE + 64 + 2 + 32 + 6 + chain.len();
        let sig_len = 128 + 6 + cert_len;
        q.extend((sig_len as u32).to_le_bytes());
        q.extend([1u8; 128]);
        q.extend(CERT_DATA_QE_REPORT.to_le_bytes());
        q.extend((cert_len as u32).to_le_bytes());
        q.extend([0u8; QE_REPORT_SIZE + 64]);
        q.extend(32u16.to_le_bytes());
        q.extend([2u8; 32]);
        q.extend(CERT_DATA_PCK_CHAIN.to_le_bytes());
        q.extend((chain.len() as u32).to_le_bytes());
        q.extend(chain);
        q
    }

    #[test]
    fn versions_and_bodies() {
        let v4 = synthetic(4, None, b"chain");
        let q = TdQuote::parse(&v4).unwrap();
        assert_eq!(q.signed_bytes().len(), HEADER_SIZE + TD_REPORT10_SIZE);
        assert_eq!(q.pck_chain_pem(), b"chain");
        assert_eq!(q.qe_auth_data(), &[2u8; 32]);
        let v5 = synthetic(5, Some(BODY_TYPE_TDX15), b"chain");
        let q = TdQuote::parse(&v5).unwrap();
        assert_eq!(q.signed_bytes().len(), HEADER_SIZE + 6 + TD_REPORT15_SIZE);
        assert!(q.body().mr_service_td().is_some());
        let v5 = synthetic(5, Some(BODY_TYPE_TDX10), b"chain");
        assert!(TdQuote::parse(&v5).unwrap().body().tee_tcb_svn2().is_none());
        let bad = synthetic(5, Some(1), b"chain");
        assert!(matches!(TdQuote::parse(&bad), Err(Error::TdxUnsupported { field: "body type", found: 1 })));
        let mut bad = synthetic(4, None, b"chain");
        bad[0] = 3;
        assert!(matches!(TdQuote::parse(&bad), Err(Error::TdxUnsupported { field: "version", found: 3 })));
    }

    #[test]
    fn trailing_bytes() {
        let mut q = synthetic(4, None, b"chain");
        let n = q.len();
        q.extend([0u8; 70]);
        assert!(matches!(TdQuote::parse(&q), Err(Error::TrailingData { extra: 70, .. })));
        let p = TdQuote::parse_prefix(&q).unwrap();
        assert_eq!(p.trailing(), Trailing::ZeroPadding(70));
        assert_eq!(p.as_bytes().len(), n);
        q.push(1);
        assert_eq!(TdQuote::parse_prefix(&q).unwrap().trailing(), Trailing::Other(71));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let q = synthetic(5, Some(BODY_TYPE_TDX15), b"chain");
        for n in 0..q.len() {
            assert!(TdQuote::parse_prefix(&q[..n]).is_err(), "prefix {n}");
        }
    }
}
