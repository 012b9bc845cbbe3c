//! PEM decoding (RFC 7468) for certificate chains and CRLs handed over as text. Not on the hot path: the
//! decoded DER is owned, and callers parse it with [`super::Certificate::from_der`].

use crate::error::Error;
use base64::Engine as _;

/// Most PEM blocks read from one input (an AMD `cert_chain` has two).
pub const MAX_PEM_BLOCKS: usize = 16;

/// One decoded PEM block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PemBlock {
    /// The label, e.g. `CERTIFICATE` or `X509 CRL`.
    pub label: String,
    /// The decoded bytes.
    pub der: Vec<u8>,
}

/// Decodes every PEM block in `text`; text outside blocks is ignored (as `openssl` does).
pub fn parse_pem(text: &[u8]) -> Result<Vec<PemBlock>, Error> {
    let bad = |reason| Error::Pem { reason };
    let text = core::str::from_utf8(text).map_err(|_| bad("not UTF-8 text"))?;
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")) else {
            continue;
        };
        if out.len() == MAX_PEM_BLOCKS {
            return Err(Error::LimitExceeded { what: "PEM blocks", limit: MAX_PEM_BLOCKS, found: out.len() + 1 });
        }
        let mut b64 = String::new();
        let end = format!("-----END {label}-----");
        let mut closed = false;
        for l in lines.by_ref() {
            let l = l.trim();
            if l == end {
                closed = true;
                break;
            }
            if l.contains(':') {
                return Err(bad("PEM headers are not supported"));
            }
            b64.push_str(l);
            if b64.len() > crate::der::MAX_LEN * 2 {
                return Err(bad("PEM block too large"));
            }
        }
        if !closed {
            return Err(bad("missing END line"));
        }
        let der =
            base64::engine::general_purpose::STANDARD.decode(b64.as_bytes()).map_err(|_| bad("invalid base64"))?;
        out.push(PemBlock { label: label.to_owned(), der });
    }
    Ok(out)
}

/// Returns the DER of every `CERTIFICATE` block in `input` when it is PEM, or `input` itself as one DER
/// certificate when it starts with a DER SEQUENCE tag.
pub fn certificates_from_pem_or_der(input: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    if input.first() == Some(&0x30) {
        return Ok(vec![input.to_vec()]);
    }
    let certs: Vec<Vec<u8>> =
        parse_pem(input)?.into_iter().filter(|b| b.label == "CERTIFICATE").map(|b| b.der).collect();
    if certs.is_empty() {
        return Err(Error::Pem { reason: "no CERTIFICATE block" });
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks() {
        let text = b"junk\n-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
        let blocks = parse_pem(text).unwrap();
        assert_eq!(blocks, vec![PemBlock { label: "CERTIFICATE".into(), der: vec![0, 1, 2] }]);
        assert!(parse_pem(b"-----BEGIN X-----\nAAEC\n").is_err());
        assert!(parse_pem(b"-----BEGIN X-----\n!!!!\n-----END X-----\n").is_err());
        assert!(certificates_from_pem_or_der(b"nothing").is_err());
    }
}
