//! X.509 v2 CRLs issued by the ARK, like the ones KDS serves at `/vcek/v1/<Product>/crl`.

use crate::der;
use crate::pki::{
    DEFAULT_NOT_AFTER, DEFAULT_NOT_BEFORE, TestPki, amd_name, extension, rsa_pss_sha384_alg_id, rsa_pss_sign, signed,
};

/// What goes into a CRL; build with [`TestPki::issue_crl`].
#[derive(Clone, Debug)]
pub struct CrlSpec {
    this_update: i64,
    next_update: Option<i64>,
    revoked: Vec<(Vec<u8>, i64)>,
    crl_number: Option<u64>,
    authority_key_identifier: bool,
    explicit_trailer_field: bool,
}

impl Default for CrlSpec {
    fn default() -> Self {
        CrlSpec {
            this_update: DEFAULT_NOT_BEFORE,
            next_update: Some(DEFAULT_NOT_AFTER),
            revoked: Vec::new(),
            crl_number: Some(1),
            authority_key_identifier: true,
            explicit_trailer_field: true,
        }
    }
}

impl CrlSpec {
    /// Same as `CrlSpec::default()`: thisUpdate 2020-01-01, nextUpdate 2049-01-01, nothing
    /// revoked, CRL number 1, with an authority key identifier.
    pub fn new() -> Self {
        Self::default()
    }

    /// thisUpdate in Unix seconds.
    pub fn this_update(mut self, unix_seconds: i64) -> Self {
        self.this_update = unix_seconds;
        self
    }

    /// nextUpdate in Unix seconds.
    pub fn next_update(mut self, unix_seconds: i64) -> Self {
        self.next_update = Some(unix_seconds);
        self
    }

    /// Leaves out nextUpdate (allowed by the ASN.1, forbidden to conforming CAs).
    pub fn no_next_update(mut self) -> Self {
        self.next_update = None;
        self
    }

    /// Adds a revoked certificate: its serial (unsigned big-endian bytes) and revocation time.
    pub fn revoke(mut self, serial: impl Into<Vec<u8>>, revocation_time: i64) -> Self {
        self.revoked.push((serial.into(), revocation_time));
        self
    }

    /// The cRLNumber extension value, or `None` to leave it out.
    pub fn crl_number(mut self, number: Option<u64>) -> Self {
        self.crl_number = number;
        self
    }

    /// Whether to add an authorityKeyIdentifier extension naming the ARK key (default yes).
    pub fn authority_key_identifier(mut self, include: bool) -> Self {
        self.authority_key_identifier = include;
        self
    }

    /// Whether the RSASSA-PSS parameters spell out the default trailerField (default yes).
    pub fn pss_trailer_field(mut self, explicit: bool) -> Self {
        self.explicit_trailer_field = explicit;
        self
    }
}

impl TestPki {
    /// Issues an X.509 v2 CRL (RFC 5280 §5) signed by the ARK with RSASSA-PSS/SHA-384, issuer
    /// `ARK-<Product>`. `revokedCertificates` is omitted when nothing is revoked, as RFC 5280
    /// requires; entries carry no extensions.
    pub fn issue_crl(&self, spec: &CrlSpec) -> Vec<u8> {
        let alg = rsa_pss_sha384_alg_id(spec.explicit_trailer_field);
        let mut parts: Vec<Vec<u8>> =
            vec![der::integer_u64(1), alg.clone(), amd_name(&self.ark_common_name()), der::time(spec.this_update)];
        if let Some(next) = spec.next_update {
            parts.push(der::time(next));
        }
        if !spec.revoked.is_empty() {
            let entries: Vec<Vec<u8>> = spec
                .revoked
                .iter()
                .map(|(serial, when)| der::sequence(&[&der::integer_unsigned(serial), &der::time(*when)]))
                .collect();
            let entries: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
            parts.push(der::sequence(&entries));
        }
        let mut exts = Vec::new();
        if spec.authority_key_identifier {
            let aki = der::sequence(&[&der::implicit(0, false, &self.ark_key_identifier())]);
            exts.push(extension("2.5.29.35", false, &aki));
        }
        if let Some(number) = spec.crl_number {
            exts.push(extension("2.5.29.20", false, &der::integer_u64(number)));
        }
        if !exts.is_empty() {
            let exts: Vec<&[u8]> = exts.iter().map(Vec::as_slice).collect();
            parts.push(der::explicit(0, &der::sequence(&exts)));
        }
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let tbs = der::sequence(&parts);
        let signature = rsa_pss_sign(&self.ark_key, &tbs);
        signed(&tbs, &alg, &signature)
    }
}
