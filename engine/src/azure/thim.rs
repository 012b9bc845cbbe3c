//! Azure's THIM certificate document, as the IMDS endpoint `/metadata/THIM/amd/certification` returns it
//! and Azure SNP bundles carry it next to the HCL report:
//!
//! ```json
//! {"vcekCert": "-----BEGIN CERTIFICATE-----…", "certificateChain": "-----BEGIN CERTIFICATE-----… (ASK) … (ARK)",
//!  "tcbm": "…", "cacheControl": "…"}
//! ```
//!
//! Only `vcekCert` and `certificateChain` are read; both are PEM. Nothing here is trusted: the certificate
//! supply vets the VCEK like any other. Malformed documents are [`Error::EvidenceFormat`] or
//! [`Error::LimitExceeded`].

use crate::error::Error;
use crate::snp::CarriedCerts;
use crate::x509::pem::parse_pem;
use std::borrow::Cow;

const FORMAT: &str = "Azure THIM certificate document";

/// Largest THIM document accepted (a real one is about 6.5 KiB).
pub const MAX_THIM_SIZE: usize = 64 * 1024;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Thim {
    vcek_cert: String,
    #[serde(default)]
    certificate_chain: Option<String>,
}

/// Decodes a THIM document into the certificates it carries (VCEK, and ASK/ARK from the chain).
pub fn parse_thim(json: &[u8]) -> Result<CarriedCerts<'static>, Error> {
    if json.len() > MAX_THIM_SIZE {
        return Err(Error::LimitExceeded { what: "THIM document size", limit: MAX_THIM_SIZE, found: json.len() });
    }
    let doc: Thim = serde_json::from_slice(json)
        .map_err(|_| Error::EvidenceFormat { format: FORMAT, reason: "not JSON with a vcekCert string" })?;
    let certs = |pem: &str| -> Result<Vec<Vec<u8>>, Error> {
        let blocks =
            parse_pem(pem.as_bytes()).map_err(|_| Error::EvidenceFormat { format: FORMAT, reason: "malformed PEM" })?;
        Ok(blocks.into_iter().filter(|b| b.label == "CERTIFICATE").map(|b| b.der).collect())
    };
    let mut vcek = certs(&doc.vcek_cert)?;
    if vcek.len() != 1 {
        return Err(Error::EvidenceFormat { format: FORMAT, reason: "vcekCert must hold exactly one certificate" });
    }
    let mut chain = doc.certificate_chain.as_deref().map(certs).transpose()?.unwrap_or_default().into_iter();
    let intermediate = chain.next();
    let ark = chain.next();
    if chain.next().is_some() {
        return Err(Error::EvidenceFormat { format: FORMAT, reason: "certificateChain holds more than ASK and ARK" });
    }
    Ok(CarriedCerts {
        vcek: vcek.pop().map(Cow::Owned),
        vlek: None,
        intermediate: intermediate.map(Cow::Owned),
        ark: ark.map(Cow::Owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn pem(der: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")
    }

    fn doc(vcek: &str, chain: Option<&str>) -> Vec<u8> {
        let mut m = serde_json::Map::new();
        m.insert("vcekCert".into(), vcek.into());
        if let Some(c) = chain {
            m.insert("certificateChain".into(), c.into());
        }
        m.insert("tcbm".into(), "5D06000000000002".into());
        serde_json::Value::Object(m).to_string().into_bytes()
    }

    #[test]
    fn reads_the_vcek_and_the_chain() {
        let chain = pem(b"ask") + &pem(b"ark");
        let c = parse_thim(&doc(&pem(b"vcek"), Some(&chain))).unwrap();
        assert_eq!(c.vcek.as_deref(), Some(&b"vcek"[..]));
        assert_eq!(c.intermediate.as_deref(), Some(&b"ask"[..]));
        assert_eq!(c.ark.as_deref(), Some(&b"ark"[..]));
        assert_eq!(c.vlek, None);
        let c = parse_thim(&doc(&pem(b"vcek"), None)).unwrap();
        assert_eq!((c.intermediate, c.ark), (None, None));
    }

    #[test]
    fn refusals() {
        let malformed = |json: &[u8]| matches!(parse_thim(json), Err(Error::EvidenceFormat { format: FORMAT, .. }));
        assert!(malformed(b"not json"));
        assert!(malformed(br#"{"certificateChain": ""}"#));
        assert!(malformed(&doc("", None)), "no certificate in vcekCert");
        assert!(malformed(&doc(&(pem(b"a") + &pem(b"b")), None)), "two certificates in vcekCert");
        let three = pem(b"1") + &pem(b"2") + &pem(b"3");
        assert!(malformed(&doc(&pem(b"vcek"), Some(&three))), "more than ASK and ARK");
        assert!(malformed(&doc("-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n", None)));
        let big = doc(&pem(&vec![0x30; MAX_THIM_SIZE]), None);
        assert!(matches!(parse_thim(&big), Err(Error::LimitExceeded { limit: MAX_THIM_SIZE, .. })));
    }
}
