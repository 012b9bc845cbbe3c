//! `gcp-shielded-vm`: a GCE Shielded VM or Confidential VM whose vTPM AK is certified by Google's EK/AK CA.
//!
//! The document is the usual one (TPM2B_PUBLIC of the AK, quote, PCRs, optional event log), plus the AK
//! certificate in `TpmEvidence.ak_certificate`, optionally followed by intermediate CA certificates (DER,
//! concatenated; DER is self-delimiting). The AK is trusted because:
//!
//! 1. the certificate chains to Google's pinned roots at the trusted time ([`GceVerifier`]);
//! 2. it certifies exactly the AK, and carries Google's instance-information extension (zone, project,
//!    instance), which the validated result reports ([`super::Validated::instance`]);
//! 3. the quote's qualifiedSigner is the AK's qualified name as an endorsement- or owner-hierarchy
//!    primary key, as Google's AKs are (so every byte of the presented TPM2B_PUBLIC is the TPM's);
//! 4. the GCE policy holds ([`GcePolicy`]: production VM by default, optional project and technology
//!    allow-lists; the technology comes from the event log's NonHostInfo event, so a technology
//!    allow-list requires a log).
//!
//! Freshness is the variant-independent rule (extraData = SHA-256(instance_info ‖ SHA-256(user_data ‖
//! nonce))). `instance_info` stays opaque here: the certified identity is the extension's.
//!
//! Relation to Constellation: its `gcp-sev-es` variant attests the same vTPM, but trusts the AK by asking
//! the Compute Engine API for the instance's signing key. This variant needs no API access (the
//! certificate is offline-verifiable) and does not claim a memory-encryption technology unless the policy
//! requires one.

use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::Error;
use crate::gce::verify::{check_instance_policy, check_qualified_signer, check_technology};
use crate::gce::{CertifiedAk, GcePolicy, GceVerifier, MAX_INTERMEDIATES};
use crate::time::UnixTime;
use crate::tpm::eventlog::EventLog;
use crate::tpm::{TpmtPublic, VerifiedQuote};

/// The intermediates after the AK certificate, and how many there are.
type Intermediates<'a> = ([&'a [u8]; MAX_INTERMEDIATES], usize);

/// The AK certificate of a document, split into the leaf and its intermediates.
fn split_certificates(bytes: &[u8]) -> Result<(&[u8], Intermediates<'_>), Error> {
    let mut rest = bytes;
    let leaf = next_der(&mut rest)?;
    let mut inters: [&[u8]; MAX_INTERMEDIATES] = [&[]; MAX_INTERMEDIATES];
    let mut n = 0;
    while !rest.is_empty() {
        let slot = inters.get_mut(n).ok_or(Error::LimitExceeded {
            what: "intermediates after the AK certificate",
            limit: MAX_INTERMEDIATES,
            found: n + 1,
        })?;
        *slot = next_der(&mut rest)?;
        n += 1;
    }
    Ok((leaf, (inters, n)))
}

/// Takes one DER TLV (a certificate) off the front of `rest`.
fn next_der<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], Error> {
    let mut r = crate::der::Reader::new(rest, "AK certificate list");
    let (_, _, whole) = r.read_any()?;
    *rest = &rest[whole.len()..];
    Ok(whole)
}

/// Establishes the AK of a `gcp-shielded-vm` document: steps 1, 2 and the instance part of 4.
pub(super) fn certify_ak<'a>(
    gce: &GceVerifier,
    policy: &GcePolicy,
    ak: &TpmtPublic<'_>,
    certificates: &'a [u8],
    time: UnixTime,
) -> Result<CertifiedAk<'a>, Error> {
    if certificates.is_empty() {
        return Err(Error::MissingEvidence { what: "the AK certificate" });
    }
    let (leaf, (inters, n)) = split_certificates(certificates)?;
    let certified = gce.verify_ak_certificate(ak, leaf, &inters[..n], time)?;
    check_instance_policy(policy, &certified.instance)?;
    Ok(certified)
}

/// Steps 3 and the technology part of 4, once the quote has verified.
pub(super) fn check_quote(
    provider: &CryptoProvider,
    policy: &GcePolicy,
    ak: &TpmtPublic<'_>,
    quote: &VerifiedQuote<'_>,
    event_log: &[u8],
) -> Result<(), Error> {
    check_qualified_signer(provider, ak, quote.attest().qualified_signer())?;
    if !policy.allowed_technologies.is_empty() {
        if event_log.is_empty() {
            return Err(Error::MissingEvidence { what: "the TCG event log (the technology allow-list needs it)" });
        }
        // The caller replays the log against the quote (SHA-256 bank); the facts come from that bank.
        let log = EventLog::parse(event_log)?;
        let platform = crate::gce::platform::platform_state(provider, &log, HashAlgorithm::Sha256)?;
        check_technology(policy, platform.technology)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_lists_split_on_der_boundaries() {
        let a = [0x30, 0x01, 0xAA];
        let b = [0x30, 0x02, 0xBB, 0xCC];
        let both: Vec<u8> = a.iter().chain(b.iter()).copied().collect();
        let (leaf, (inters, n)) = split_certificates(&both).unwrap();
        assert_eq!((leaf, &inters[..n]), (&a[..], &[&b[..]][..]));
        let (leaf, (_, n)) = split_certificates(&a).unwrap();
        assert_eq!((leaf, n), (&a[..], 0));
        assert!(split_certificates(&both[..4]).is_err(), "truncated second certificate");
        let many: Vec<u8> = a.iter().copied().cycle().take(3 * (MAX_INTERMEDIATES + 2)).collect();
        assert!(matches!(split_certificates(&many), Err(Error::LimitExceeded { .. })));
    }
}
