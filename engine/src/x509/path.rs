//! Generic certificate path verification (RFC 5280 §6, reduced): for TPM AK and EK certificates, whose
//! issuers are not AMD's pinned chains. Names are matched byte for byte, every issuer must be a CA allowed
//! to sign certificates, every certificate must be valid at the trusted time, and the path must end in one
//! of the caller's trusted roots. Path building is bounded by [`MAX_PATH_DEPTH`] and
//! [`MAX_SIGNATURE_CHECKS`] (cf. webpki's `Budget`).

use super::cert::Certificate;
use crate::crypto::CryptoProvider;
use crate::error::{CertRole, Error};
use crate::time::UnixTime;

/// Longest path (leaf, intermediates, root).
pub const MAX_PATH_DEPTH: usize = 6;
/// Most signature verifications one path build may try.
pub const MAX_SIGNATURE_CHECKS: usize = 32;

/// A verified path: the leaf and the root it chains to.
#[derive(Clone, Debug)]
pub struct VerifiedPath<'a> {
    /// The leaf.
    pub leaf: Certificate<'a>,
    /// The trusted root that terminated the path.
    pub root: Certificate<'a>,
    /// Number of certificates in the path, root included.
    pub depth: usize,
}

/// Verifies `leaf` up to one of `roots` through any of `intermediates` at `time`.
pub fn verify_path<'a>(
    provider: &CryptoProvider,
    leaf: &'a [u8],
    intermediates: &[&'a [u8]],
    roots: &[&'a [u8]],
    time: UnixTime,
) -> Result<VerifiedPath<'a>, Error> {
    let leaf_cert = Certificate::from_der(leaf)?;
    leaf_cert.check_validity(time, CertRole::Leaf)?;
    let inters: Vec<Certificate<'a>> =
        intermediates.iter().map(|d| Certificate::from_der(d)).collect::<Result<_, _>>()?;
    let roots: Vec<Certificate<'a>> = roots.iter().map(|d| Certificate::from_der(d)).collect::<Result<_, _>>()?;
    let mut budget = MAX_SIGNATURE_CHECKS;
    let mut current = leaf_cert.clone();
    for depth in 0..MAX_PATH_DEPTH {
        // A trusted root that issued `current`?
        for root in &roots {
            if issued_by(provider, &current, root, &mut budget)? {
                root.check_validity(time, CertRole::Root)?;
                return Ok(VerifiedPath { leaf: leaf_cert, root: root.clone(), depth: depth + 2 });
            }
        }
        let mut next = None;
        for inter in &inters {
            if inter.der() != current.der() && issued_by(provider, &current, inter, &mut budget)? {
                next = Some(inter.clone());
                break;
            }
        }
        let Some(next) = next else { return Err(Error::UnknownIssuer { depth }) };
        next.check_validity(time, CertRole::Intermediate)?;
        current = next;
    }
    Err(Error::PathBudgetExceeded)
}

/// Whether `issuer` issued `cert`: names match, the issuer is a CA allowed to sign certificates, and the
/// signature verifies.
fn issued_by(
    provider: &CryptoProvider,
    cert: &Certificate<'_>,
    issuer: &Certificate<'_>,
    budget: &mut usize,
) -> Result<bool, Error> {
    if cert.issuer() != issuer.subject() || issuer.is_ca() != Some(true) || !issuer.may_sign_certificates() {
        return Ok(false);
    }
    if *budget == 0 {
        return Err(Error::PathBudgetExceeded);
    }
    *budget -= 1;
    Ok(cert.signature_algorithm().verify(provider, &issuer.public_key(), cert.tbs(), cert.signature()).is_ok())
}
