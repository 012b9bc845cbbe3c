//! A borrowed view of an X.509 v2 CRL (RFC 5280 §5), as AMD's KDS publishes per product
//! (`/vcek/v1/{product}/crl`, signed by the ARK).

use super::alg::SignatureAlgorithm;
use super::cert::{MAX_SERIAL_LEN, read_time};
use super::name::Name;
use crate::der::{Reader, tag};
use crate::error::Error;
use crate::time::UnixTime;

/// Most revoked entries accepted in one CRL (AMD's CRLs list a handful; bounded also by the DER size limit).
pub const MAX_CRL_ENTRIES: usize = 4096;

/// A parsed CRL borrowing from its DER encoding.
#[derive(Clone, Debug)]
pub struct Crl<'a> {
    tbs: &'a [u8],
    signature_algorithm: SignatureAlgorithm,
    signature: &'a [u8],
    issuer: Name<'a>,
    this_update: UnixTime,
    next_update: Option<UnixTime>,
    revoked: &'a [u8],
    entries: usize,
}

impl<'a> Crl<'a> {
    /// Parses a DER CRL; the input must hold exactly one CRL.
    pub fn from_der(der: &'a [u8]) -> Result<Self, Error> {
        let mut outer = Reader::new(der, "CertificateList");
        let mut list = outer.sequence("CertificateList")?;
        outer.finish()?;
        let (tbs_value, tbs) = list.read_tlv(tag::SEQUENCE)?;
        let (outer_alg_value, outer_alg) = list.read_tlv(tag::SEQUENCE)?;
        let signature = list.bit_string_bytes()?;
        list.finish()?;

        let mut t = Reader::new(tbs_value, "TBSCertList");
        if t.peek_tag() == Some(tag::INTEGER) && t.small_uint()? != 1 {
            return Err(Error::UnsupportedAlgorithm { what: "CRL version (need v2)" });
        }
        if t.read_tlv(tag::SEQUENCE)?.1 != outer_alg {
            return Err(Error::Der {
                structure: "CertificateList",
                offset: 0,
                reason: "signature algorithm differs from TBSCertList.signature",
            });
        }
        let signature_algorithm = SignatureAlgorithm::from_der(outer_alg_value)?;
        let issuer = Name::from_tlv(t.read_tlv(tag::SEQUENCE)?.1)?;
        let this_update = read_time(&mut t)?;
        let next_update = match t.peek_tag() {
            Some(tag::UTC_TIME | tag::GENERALIZED_TIME) => Some(read_time(&mut t)?),
            _ => None,
        };
        let revoked = t.read_optional(tag::SEQUENCE)?.unwrap_or(&[]);
        if let Some(exts) = t.read_optional(tag::context(0))? {
            check_extensions(exts, "crlExtensions")?;
        }
        t.finish()?;

        // Validate every entry once, so lookups cannot fail later.
        let mut entries = 0;
        let mut r = Reader::new(revoked, "revokedCertificates");
        while !r.is_empty() {
            entries += 1;
            if entries > MAX_CRL_ENTRIES {
                return Err(Error::LimitExceeded { what: "CRL entries", limit: MAX_CRL_ENTRIES, found: entries });
            }
            let mut e = r.sequence("revokedCertificate")?;
            let serial = e.integer()?;
            if serial.len() > MAX_SERIAL_LEN {
                return Err(Error::LimitExceeded {
                    what: "serial number length",
                    limit: MAX_SERIAL_LEN,
                    found: serial.len(),
                });
            }
            read_time(&mut e)?;
            if let Some(exts) = e.read_optional(tag::SEQUENCE)? {
                check_extension_list(exts, "crlEntryExtensions")?;
            }
            e.finish()?;
        }

        Ok(Self { tbs, signature_algorithm, signature, issuer, this_update, next_update, revoked, entries })
    }

    /// The `TBSCertList` TLV as received (what the issuer signed).
    pub fn tbs(&self) -> &'a [u8] {
        self.tbs
    }
    /// The signature algorithm.
    pub fn signature_algorithm(&self) -> SignatureAlgorithm {
        self.signature_algorithm
    }
    /// The signature bytes.
    pub fn signature(&self) -> &'a [u8] {
        self.signature
    }
    /// The issuer name.
    pub fn issuer(&self) -> Name<'a> {
        self.issuer
    }
    /// thisUpdate.
    pub fn this_update(&self) -> UnixTime {
        self.this_update
    }
    /// nextUpdate, if present.
    pub fn next_update(&self) -> Option<UnixTime> {
        self.next_update
    }
    /// Number of revoked entries.
    pub fn len(&self) -> usize {
        self.entries
    }
    /// Whether the CRL lists no certificate.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The freshness rule every CRL use follows (the AMD and Intel CRLs alike): usable from thisUpdate
    /// through nextUpdate inclusive; a CRL without nextUpdate is never fresh (RFC 5280 §5.1.2.5 makes it
    /// mandatory for conforming issuers).
    pub fn check_freshness(&self, time: UnixTime) -> Result<(), Error> {
        check_window(self.this_update, self.next_update, time)
    }

    /// Whether a certificate with serial content octets `serial` is listed.
    pub fn is_revoked(&self, serial: &[u8]) -> bool {
        self.revoked_serials().any(|s| s == serial)
    }

    /// The serial numbers (INTEGER content octets) of the revoked entries.
    pub fn revoked_serials(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut r = Reader::new(self.revoked, "revokedCertificates");
        core::iter::from_fn(move || {
            if r.is_empty() {
                return None;
            }
            // Entries were validated in `from_der`; a failure here cannot happen, and ends iteration.
            let mut e = r.sequence("revokedCertificate").ok()?;
            e.integer().ok()
        })
    }
}

/// [`Crl::check_freshness`] for a CRL's recorded times.
pub(crate) fn check_window(this_update: UnixTime, next_update: Option<UnixTime>, time: UnixTime) -> Result<(), Error> {
    if time < this_update {
        return Err(Error::CrlNotYetValid { time, this_update });
    }
    match next_update {
        Some(n) if time <= n => Ok(()),
        next_update => Err(Error::CrlStale { time, next_update }),
    }
}

fn check_extensions(explicit: &[u8], what: &'static str) -> Result<(), Error> {
    let mut r = Reader::new(explicit, what);
    let list = r.read(tag::SEQUENCE)?;
    r.finish()?;
    check_extension_list(list, what)
}

/// Rejects unknown critical extensions (RFC 5280 §5.2, §5.3): a CRL that says "you must understand X" cannot
/// be used for revocation decisions by a reader that does not.
fn check_extension_list(list: &[u8], what: &'static str) -> Result<(), Error> {
    let mut r = Reader::new(list, what);
    while !r.is_empty() {
        let mut e = r.sequence("Extension")?;
        e.read(tag::OID)?;
        let critical = if e.peek_tag() == Some(tag::BOOLEAN) { e.boolean()? } else { false };
        e.read(tag::OCTET_STRING)?;
        e.finish()?;
        if critical {
            return Err(Error::UnsupportedCriticalExtension);
        }
    }
    Ok(())
}
