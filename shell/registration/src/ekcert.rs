//! EK certificate verification against a configured CA bundle (verifier side, OpenSSL).
//!
//! The bundle holds the TPM manufacturers' root CAs and any intermediates (PEM). For swtpm that is the
//! local CA `swtpm_localca` creates: `swtpm-localca-rootca-cert.pem` (root) and `issuercert.pem` (the
//! intermediate that signs EK certificates) in its `statedir` — `/var/lib/swtpm-localca/` with Debian's
//! default `/etc/swtpm-localca.conf`, or a directory of your own via `swtpm_setup --config`.
//!
//! What is checked: the chain to a trusted root (signatures, validity at the given time or now, CA basic
//! constraints, key usage of the issuers), and that the certified key is RSA-2048 (the only EK type
//! credential protection here supports). OpenSSL's purpose checks are not applied: EK certificates carry
//! the TCG EKU 2.23.133.8.1 and a critical directoryName subjectAltName (TPM manufacturer, model,
//! version; EK Credential Profile §3.2.9), neither of which is a TLS purpose.

use super::Error;
use openssl::pkey::{PKey, Public};
use openssl::stack::Stack;
use openssl::x509::store::{X509Store, X509StoreBuilder};
use openssl::x509::verify::X509VerifyFlags;
use openssl::x509::{X509, X509StoreContext};
use std::path::Path;
use std::sync::Arc;

/// Trusted EK certificate issuers. Cheap to clone (the store is shared; it is immutable once built).
#[derive(Clone)]
pub struct EkCaBundle {
    store: Arc<X509Store>,
    count: usize,
}

impl core::fmt::Debug for EkCaBundle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EkCaBundle").field("certificates", &self.count).finish_non_exhaustive()
    }
}

impl EkCaBundle {
    /// A bundle from PEM text holding one or more certificates (roots and intermediates). Self-signed
    /// certificates are trust anchors; the others are only used to build chains to them.
    pub fn from_pem(pem: &[u8]) -> Result<Self, Error> {
        let certs = X509::stack_from_pem(pem)?;
        if certs.is_empty() {
            return Err(Error::EkCertificate { reason: "the CA bundle holds no certificate".into() });
        }
        let mut b = X509StoreBuilder::new()?;
        for c in &certs {
            b.add_cert(c.clone())?;
        }
        // X509_V_FLAG_X509_STRICT: refuse malformed certificates rather than work around them.
        b.set_flags(X509VerifyFlags::X509_STRICT)?;
        Ok(Self { store: Arc::new(b.build()), count: certs.len() })
    }

    /// A bundle from PEM files (each may hold several certificates).
    pub fn from_files<P: AsRef<Path>>(paths: &[P]) -> Result<Self, Error> {
        let mut pem = Vec::new();
        for p in paths {
            let p = p.as_ref();
            let data = std::fs::read(p).map_err(|source| Error::Io { path: p.to_owned(), source })?;
            pem.extend_from_slice(&data);
            pem.push(b'\n');
        }
        Self::from_pem(&pem)
    }

    /// The bundle of a swtpm local CA directory (`swtpm-localca-rootca-cert.pem` + `issuercert.pem`).
    pub fn from_swtpm_localca(dir: &Path) -> Result<Self, Error> {
        Self::from_files(&[dir.join("swtpm-localca-rootca-cert.pem"), dir.join("issuercert.pem")])
    }

    /// Number of certificates in the bundle.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the bundle is empty (never true for a constructed bundle).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Verifies the EK certificate `der` (with optional extra intermediates, DER) and returns its RSA-2048
    /// public key.
    pub fn verify(&self, der: &[u8], intermediates: &[&[u8]]) -> Result<PKey<Public>, Error> {
        // Exactly one DER SEQUENCE, nothing after it (the engine's DER reader: definite, minimal lengths).
        let mut outer = attest_engine::der::Reader::new(der, "EK certificate");
        if outer.read(attest_engine::der::tag::SEQUENCE).and_then(|_| outer.finish()).is_err() {
            return Err(Error::EkCertificate { reason: "not exactly one DER certificate".into() });
        }
        let cert = X509::from_der(der).map_err(|e| Error::EkCertificate { reason: format!("malformed: {e}") })?;
        let mut chain = Stack::new()?;
        for i in intermediates {
            chain.push(
                X509::from_der(i)
                    .map_err(|e| Error::EkCertificate { reason: format!("malformed intermediate: {e}") })?,
            )?;
        }
        let mut ctx = X509StoreContext::new()?;
        let (ok, reason) = ctx.init(&self.store, &cert, &chain, |c| {
            let ok = c.verify_cert()?;
            Ok((ok, c.error().error_string().to_owned()))
        })?;
        if !ok {
            return Err(Error::EkCertificate { reason });
        }
        let key = cert.public_key()?;
        match key.rsa() {
            Ok(rsa) if rsa.size() == 256 => Ok(key),
            _ => Err(Error::EkCertificate { reason: "the certified key is not RSA-2048".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_bundle_is_refused() {
        assert!(EkCaBundle::from_pem(b"").is_err());
    }
}
