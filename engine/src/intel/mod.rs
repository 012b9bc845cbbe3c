//! Intel's pinned trust anchor for SGX/TDX attestation: the Intel SGX Root CA.
//!
//! Every PCK certificate chain (PCK → PCK Platform/Processor CA → root), the TCB Signing chain (TCB Signing
//! → root) and both CRL issuers (root CA CRL, PCK CA CRL) end in this one self-signed P-256 certificate.
//! It is compiled in as DER (generated: `roots.rs`), never read from evidence: a chain whose last
//! certificate is not byte-identical to it is refused ([`crate::Error::UntrustedIntelRoot`]).

mod roots;

/// The Intel SGX Root CA, DER (CN "Intel SGX Root CA", valid 2018-05-21 → 2049-12-31).
pub const SGX_ROOT_CA: &[u8] = roots::INTEL_SGX_ROOT_CA;

/// SHA-256 of [`SGX_ROOT_CA`].
pub const SGX_ROOT_CA_SHA256: [u8; 32] = roots::INTEL_SGX_ROOT_CA_SHA256;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x509::Certificate;

    #[test]
    fn root_is_self_signed_ca() {
        let p = crate::crypto::default_provider();
        assert_eq!(p.digests.sha256(SGX_ROOT_CA), SGX_ROOT_CA_SHA256);
        let c = Certificate::from_der(SGX_ROOT_CA).unwrap();
        assert_eq!(c.subject(), c.issuer());
        assert_eq!(c.is_ca(), Some(true));
        c.signature_algorithm().verify(p, &c.public_key(), c.tbs(), c.signature()).unwrap();
    }
}
