//! Vetting: nothing is returned or stored before the engine has verified it for the key it is stored under.
//!
//! | object | checks |
//! |---|---|
//! | VCEK | [`SnpVerifier::verify_chain_only`] at the current time (signature by the pinned ASK, names, validity, AMD extensions, product), then its hwID and SPLs equal the requested key's |
//! | VLEK | the same chain verification, and that it is a VLEK of the product |
//! | cert_chain | exactly two certificates, intermediate then ARK; the ARK is byte-identical to the pinned one; the intermediate chains to it at the current time ([`verify_path`]) and has AMD's name for the kind |
//! | CRL | signed by the product's pinned ARK ([`SnpVerifier::set_crl`] on a scratch verifier); thisUpdate not in the future |

use super::KdsError;
use super::key::{ChainKind, VcekKey};
use attest_engine::crypto::CryptoProvider;
use attest_engine::snp::{ChainRequest, OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier, VerifiedChain};
use attest_engine::x509::pem::parse_pem;
use attest_engine::x509::{Certificate, Crl, verify_path};
use attest_engine::{CertRole, UnixTime};

/// A vetted `cert_chain`: DER of the intermediate (ASK/ASVK) and the ARK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertChain {
    /// The ASK or ASVK.
    pub intermediate: Vec<u8>,
    /// The ARK (equal to the pinned one).
    pub ark: Vec<u8>,
}

/// What a vetted CRL says about its freshness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CrlDates {
    pub(crate) this_update: UnixTime,
    pub(crate) next_update: Option<UnixTime>,
}

impl CrlDates {
    /// Fresh: `now` is before nextUpdate (a CRL without nextUpdate is never fresh).
    pub(crate) fn is_fresh(&self, now: UnixTime) -> bool {
        self.next_update.is_some_and(|n| now < n)
    }
}

pub(crate) struct Vetter {
    provider: &'static CryptoProvider,
    anchors: Vec<OwnedTrustAnchors>,
    verifier: SnpVerifier,
}

impl Vetter {
    pub(crate) fn new(provider: &'static CryptoProvider, anchors: Vec<OwnedTrustAnchors>) -> Self {
        let verifier = SnpVerifier::with_trust_anchors(provider, anchors.clone()).with_cache_capacity(0);
        Self { provider, anchors, verifier }
    }

    fn anchor(&self, product: Product) -> Result<&OwnedTrustAnchors, KdsError> {
        self.anchors.iter().find(|a| a.product == product).ok_or(KdsError::Verification {
            object: "trust anchors",
            error: attest_engine::Error::UntrustedCertificate { role: CertRole::Ark, product },
        })
    }

    fn chain_only(
        &self,
        der: &[u8],
        product: Product,
        now: UnixTime,
        object: &'static str,
    ) -> Result<VerifiedChain, KdsError> {
        let req = ChainRequest { leaf: der, intermediate: None, root: None, product: None, time: now };
        let v = self
            .verifier
            .verify_chain_only(&req, &SnpPolicy::default())
            .map_err(|error| KdsError::Verification { object, error })?;
        if v.product != product {
            return Err(KdsError::ProductMismatch { expected: product, found: v.product });
        }
        Ok(v)
    }

    /// Vets a VCEK for `key` at `now`.
    pub(crate) fn vcek(&self, der: &[u8], key: &VcekKey, now: UnixTime) -> Result<VerifiedChain, KdsError> {
        let v = self.chain_only(der, key.product, now, "VCEK")?;
        if v.role != CertRole::Vcek {
            return Err(KdsError::Verification {
                object: "VCEK",
                error: attest_engine::Error::SigningKeyMismatch { report: CertRole::Vcek, certificate: v.role },
            });
        }
        let cert = Certificate::from_der(der).map_err(|error| KdsError::Verification { object: "VCEK", error })?;
        let ext = cert.amd_extensions().map_err(|error| KdsError::Verification { object: "VCEK", error })?;
        if ext.hw_id != Some(key.hw_id.as_bytes()) {
            return Err(KdsError::HwIdMismatch);
        }
        if v.tcb != key.tcb {
            return Err(KdsError::TcbMismatch { expected: key.tcb, found: v.tcb });
        }
        Ok(v)
    }

    /// Vets a VLEK of `product` at `now`.
    pub(crate) fn vlek(&self, der: &[u8], product: Product, now: UnixTime) -> Result<VerifiedChain, KdsError> {
        let v = self.chain_only(der, product, now, "VLEK")?;
        if v.role != CertRole::Vlek {
            return Err(KdsError::Verification {
                object: "VLEK",
                error: attest_engine::Error::SigningKeyMismatch { report: CertRole::Vlek, certificate: v.role },
            });
        }
        Ok(v)
    }

    /// Vets a `cert_chain` body (PEM, or the DER certificates of a table) at `now`.
    pub(crate) fn chain(
        &self,
        pem: &[u8],
        product: Product,
        kind: ChainKind,
        now: UnixTime,
    ) -> Result<CertChain, KdsError> {
        let blocks = parse_pem(pem).map_err(|error| KdsError::Verification { object: "cert_chain", error })?;
        let mut certs = blocks.into_iter().filter(|b| b.label == "CERTIFICATE").map(|b| b.der);
        let (Some(intermediate), Some(ark), None) = (certs.next(), certs.next(), certs.next()) else {
            return Err(KdsError::BadChain { reason: "not exactly two certificates (intermediate, ARK)" });
        };
        self.chain_der(intermediate, ark, product, kind, now)
    }

    pub(crate) fn chain_der(
        &self,
        intermediate: Vec<u8>,
        ark: Vec<u8>,
        product: Product,
        kind: ChainKind,
        now: UnixTime,
    ) -> Result<CertChain, KdsError> {
        let anchor = self.anchor(product)?;
        if ark != *anchor.ark {
            return Err(KdsError::BadChain { reason: "the ARK is not the pinned ARK of the product" });
        }
        verify_path(self.provider, &intermediate, &[], &[&anchor.ark], now)
            .map_err(|error| KdsError::Verification { object: "cert_chain", error })?;
        let cert = Certificate::from_der(&intermediate)
            .map_err(|error| KdsError::Verification { object: "cert_chain", error })?;
        if cert.is_ca() != Some(true) {
            return Err(KdsError::BadChain { reason: "the intermediate is not a CA" });
        }
        if cert.subject().common_name() != Some(kind.intermediate_common_name(product).as_str()) {
            return Err(KdsError::BadChain {
                reason: "the intermediate's name is not AMD's for this kind and product",
            });
        }
        Ok(CertChain { intermediate, ark })
    }

    /// Vets a CRL of `product` at `now` (signature and thisUpdate; freshness is the caller's question).
    pub(crate) fn crl(&self, der: &[u8], product: Product, now: UnixTime) -> Result<CrlDates, KdsError> {
        let scratch = SnpVerifier::with_trust_anchors(self.provider, vec![self.anchor(product)?.clone()]);
        scratch.set_crl(der).map_err(|error| KdsError::Verification { object: "CRL", error })?;
        let crl = Crl::from_der(der).map_err(|error| KdsError::Verification { object: "CRL", error })?;
        if crl.this_update() > now {
            return Err(KdsError::CrlNotYetValid { this_update: crl.this_update(), now });
        }
        Ok(CrlDates { this_update: crl.this_update(), next_update: crl.next_update() })
    }
}
