//! Generic certificate path building and verification (RFC 5280 §6, reduced): for certificates whose issuers
//! are not AMD's pinned chains (TPM AK and EK certificates, KDS chains vetted before storing). AMD's own
//! chains go through [`crate::snp::SnpVerifier`].
//!
//! ```text
//!  leaf ──validity, EKU──► candidates = roots, then intermediates, whose subject is the leaf's issuer
//!                           for each (depth first, backtracking):
//!                             loop?  ── skip (a subject+key already in the path)
//!                             issuer checks: valid at the time, basicConstraints cA, keyUsage keyCertSign,
//!                                            pathLenConstraint ≥ intermediates below it, EKU (when present)
//!                             signature over the child's TBS (budget)
//!                             a root ──► done;  an intermediate ──► repeat one level up
//!  every candidate failed ──► the most specific error seen (see `rank`)
//! ```
//!
//! Names are compared byte for byte (RFC 5280 §7.1 allows binary comparison). Trust anchors are full
//! certificates and get the same issuer checks as intermediates (CA flag, keyCertSign, validity,
//! pathLenConstraint, EKU when present). Required extended key usage ([`PathOptions::required_eku`]) must be
//! listed by the leaf and by every issuer that has an extKeyUsage extension (as webpki and browsers chain
//! it); an absent extension does not restrict. anyExtendedKeyUsage is not a wildcard.
//!
//! Work is bounded (cf. webpki's `Budget`): [`MAX_PATH_DEPTH`] certificates per path,
//! [`MAX_SIGNATURE_CHECKS`] signature verifications and [`MAX_PATH_BUILD_STEPS`] candidate issuers
//! considered per call, and at most [`MAX_INTERMEDIATES`] intermediates given. Exhausting the budget ends the
//! search with [`Error::PathBudgetExceeded`].

use super::cert::Certificate;
use super::eku::KeyPurposeId;
use crate::crypto::CryptoProvider;
use crate::error::{CertRole, Error};
use crate::time::UnixTime;

/// Longest path (leaf, intermediates, root).
pub const MAX_PATH_DEPTH: usize = 6;
/// Most signature verifications one path build may try.
pub const MAX_SIGNATURE_CHECKS: usize = 32;
/// Most candidate issuers (name matches) one path build may consider, over all its backtracking.
pub const MAX_PATH_BUILD_STEPS: usize = 256;
/// Most intermediate certificates one path build accepts as input.
pub const MAX_INTERMEDIATES: usize = 16;

/// What a path must satisfy beyond the defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathOptions<'o> {
    /// The extended key usage the leaf is used for, if any: the leaf and every issuer with an extKeyUsage
    /// extension must list it.
    pub required_eku: Option<KeyPurposeId<'o>>,
}

/// A verified path: the leaf, the intermediates used (leaf's issuer first) and the root it chains to.
#[derive(Clone, Debug)]
pub struct VerifiedPath<'a> {
    /// The leaf.
    pub leaf: Certificate<'a>,
    /// The intermediates of the path, from the leaf's issuer up.
    pub intermediates: Vec<Certificate<'a>>,
    /// The trusted root that terminated the path.
    pub root: Certificate<'a>,
    /// Number of certificates in the path, root included.
    pub depth: usize,
}

/// Verifies `leaf` up to one of `roots` through any of `intermediates` at `time`, with no extended key usage
/// required ([`verify_path_with`]).
pub fn verify_path<'a>(
    provider: &CryptoProvider,
    leaf: &'a [u8],
    intermediates: &[&'a [u8]],
    roots: &[&'a [u8]],
    time: UnixTime,
) -> Result<VerifiedPath<'a>, Error> {
    verify_path_with(provider, leaf, intermediates, roots, time, &PathOptions::default())
}

/// Builds and verifies a path from `leaf` to one of `roots` through any of `intermediates` at `time`,
/// backtracking over candidate issuers (see the module documentation).
pub fn verify_path_with<'a>(
    provider: &CryptoProvider,
    leaf: &'a [u8],
    intermediates: &[&'a [u8]],
    roots: &[&'a [u8]],
    time: UnixTime,
    options: &PathOptions<'_>,
) -> Result<VerifiedPath<'a>, Error> {
    if intermediates.len() > MAX_INTERMEDIATES {
        return Err(Error::LimitExceeded {
            what: "intermediate certificates",
            limit: MAX_INTERMEDIATES,
            found: intermediates.len(),
        });
    }
    let leaf_cert = Certificate::from_der(leaf)?;
    leaf_cert.check_validity(time, CertRole::Leaf)?;
    check_eku(&leaf_cert, options, CertRole::Leaf, 0)?;
    let inters: Vec<Certificate<'a>> =
        intermediates.iter().map(|d| Certificate::from_der(d)).collect::<Result<_, _>>()?;
    let roots: Vec<Certificate<'a>> = roots.iter().map(|d| Certificate::from_der(d)).collect::<Result<_, _>>()?;
    let mut builder = Builder {
        provider,
        inters: &inters,
        roots: &roots,
        time,
        options,
        signatures: MAX_SIGNATURE_CHECKS,
        steps: MAX_PATH_BUILD_STEPS,
        best: None,
    };
    let mut path = vec![&leaf_cert];
    match builder.extend(&mut path)? {
        Some(root) => Ok(VerifiedPath {
            intermediates: path[1..].iter().map(|c| (*c).clone()).collect(),
            depth: path.len() + 1,
            leaf: leaf_cert.clone(),
            root: root.clone(),
        }),
        None => Err(builder.best.map_or(Error::UnknownIssuer { depth: 0 }, |(_, _, e)| e)),
    }
}

struct Builder<'b, 'a> {
    provider: &'b CryptoProvider,
    inters: &'b [Certificate<'a>],
    roots: &'b [Certificate<'a>],
    time: UnixTime,
    options: &'b PathOptions<'b>,
    signatures: usize,
    steps: usize,
    /// The most specific failure so far: (rank, depth, error).
    best: Option<(u8, usize, Error)>,
}

impl<'b, 'a> Builder<'b, 'a> {
    /// Extends `path` (leaf first) by an issuer of its last certificate; returns the root that completed it.
    /// `Err` only for budget exhaustion (fatal); dead ends are recorded in `best` and give `Ok(None)`.
    fn extend(&mut self, path: &mut Vec<&'b Certificate<'a>>) -> Result<Option<&'b Certificate<'a>>, Error> {
        let child = *path.last().expect("the path holds the leaf");
        let depth = path.len();
        let child_role = if depth == 1 { CertRole::Leaf } else { CertRole::Intermediate };
        let candidates = self
            .roots
            .iter()
            .map(|c| (CertRole::Root, c))
            .chain(self.inters.iter().map(|c| (CertRole::Intermediate, c)));
        let mut named = false;
        for (role, candidate) in candidates {
            if candidate.subject() != child.issuer() {
                continue;
            }
            // A subject and key already in the path would loop.
            if path.iter().any(|c| c.subject() == candidate.subject() && c.spki() == candidate.spki()) {
                continue;
            }
            named = true;
            self.steps = self.steps.checked_sub(1).ok_or(Error::PathBudgetExceeded)?;
            if depth + 1 > MAX_PATH_DEPTH {
                self.record(
                    depth,
                    Error::LimitExceeded { what: "certificate path length", limit: MAX_PATH_DEPTH, found: depth + 1 },
                );
                continue;
            }
            if let Err(e) = self.check_issuer(candidate, role, path) {
                self.record(depth, e);
                continue;
            }
            self.signatures = self.signatures.checked_sub(1).ok_or(Error::PathBudgetExceeded)?;
            if child
                .signature_algorithm()
                .verify(self.provider, &candidate.public_key(), child.tbs(), child.signature())
                .is_err()
            {
                self.record(depth, Error::CertSignatureInvalid { role: child_role });
                continue;
            }
            if role == CertRole::Root {
                return Ok(Some(candidate));
            }
            path.push(candidate);
            if let Some(root) = self.extend(path)? {
                return Ok(Some(root));
            }
            path.pop();
        }
        if !named {
            self.record(depth, Error::UnknownIssuer { depth: depth - 1 });
        }
        Ok(None)
    }

    /// The checks on a candidate issuer that do not involve the child's signature.
    fn check_issuer(
        &self,
        candidate: &Certificate<'_>,
        role: CertRole,
        path: &[&Certificate<'_>],
    ) -> Result<(), Error> {
        candidate.check_validity(self.time, role)?;
        if candidate.is_ca() != Some(true) || !candidate.may_sign_certificates() {
            return Err(Error::NotACa { role });
        }
        // Non-self-issued intermediates below the candidate (the leaf does not count), RFC 5280 §6.1.4 (l), (m).
        let below = path[1..].iter().filter(|c| c.subject() != c.issuer()).count();
        if let Some(max) = candidate.path_len_constraint()
            && (below as u64) > max
        {
            return Err(Error::PathLenConstraintViolated { role, path_len: max, intermediates_below: below });
        }
        check_eku(candidate, self.options, role, path.len())
    }

    fn record(&mut self, depth: usize, error: Error) {
        let r = rank(&error);
        if self.best.as_ref().is_none_or(|(br, bd, _)| (r, depth) > (*br, *bd)) {
            self.best = Some((r, depth, error));
        }
    }
}

/// A certificate with an extKeyUsage extension must list the required purpose (leaf and issuers alike).
fn check_eku(cert: &Certificate<'_>, options: &PathOptions<'_>, role: CertRole, depth: usize) -> Result<(), Error> {
    let (Some(required), Some(eku)) = (options.required_eku, cert.extended_key_usage()) else { return Ok(()) };
    if eku.permits(required) {
        return Ok(());
    }
    Err(Error::ExtendedKeyUsageNotPermitted { role, depth })
}

/// How far a failure got: when every candidate fails, the error of highest rank is reported (ties: the
/// deeper one), as webpki's `Error::rank`. An issuer that matched by name but is not usable says more than
/// a missing issuer; a bad signature by an otherwise valid issuer says the most.
fn rank(e: &Error) -> u8 {
    match e {
        Error::UnknownIssuer { .. } => 0,
        Error::NotACa { .. } => 2,
        Error::PathLenConstraintViolated { .. } => 3,
        Error::ExtendedKeyUsageNotPermitted { .. } => 4,
        Error::CertNotYetValid { .. } | Error::CertExpired { .. } => 5,
        Error::CertSignatureInvalid { .. } => 6,
        // A path too long for MAX_PATH_DEPTH, and anything else.
        _ => 1,
    }
}
