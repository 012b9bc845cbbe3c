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
