//! Quote verification: the AK's signature over the TPMS_ATTEST bytes as received, the nonce in extraData,
//! and pcrDigest against the presented PCR values in selection order.
//!
//! pcrDigest is computed with the signing scheme's hash over the concatenated PCR values of every selected
//! bank (TPM 2.0 Part 3 §18.4, TPM2_Quote), so a SHA-1 bank quoted by an RSASSA-SHA256 key still has a
//! SHA-256 pcrDigest. SHA-1 banks and SHA-1 signature hashes are refused unless the caller allows SHA-1
//! banks; SHA-1 signatures are never accepted.

use super::attest::{Attest, PCR_COUNT};
use super::public::{AkPublic, EccCurve, SigScheme};
use super::signature::TpmSignature;
use crate::crypto::{CryptoProvider, HashAlgorithm, RsaAlgorithm};
use crate::error::{Bytes, Error};

/// Most banks presented at once (SHA-1, SHA-256, SHA-384, SHA-512).
pub const MAX_BANKS: usize = 4;

/// PCR values of one bank, by index (an empty slice means "not presented").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcrBank<'a> {
    /// The bank.
    pub alg: HashAlgorithm,
    /// Values by PCR index.
    pub values: [&'a [u8]; PCR_COUNT],
}

/// PCR values presented with a quote (borrowed, fixed-size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcrValues<'a> {
    banks: [Option<PcrBank<'a>>; MAX_BANKS],
}

impl<'a> PcrValues<'a> {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets PCR `index` of bank `alg`. Fails for an index ≥ 24 or a value of the wrong length.
    pub fn set(&mut self, alg: HashAlgorithm, index: usize, value: &'a [u8]) -> Result<(), Error> {
        if index >= PCR_COUNT {
            return Err(Error::LimitExceeded { what: "PCR index", limit: PCR_COUNT - 1, found: index });
        }
        if value.len() != alg.output_len() {
            return Err(Error::PcrValueMissing { bank: alg, pcr: index as u8 });
        }
        let slot = self
            .banks
            .iter()
            .position(|b| b.is_some_and(|b| b.alg == alg))
            .or_else(|| self.banks.iter().position(Option::is_none));
        let slot = slot.ok_or(Error::LimitExceeded { what: "PCR banks", limit: MAX_BANKS, found: MAX_BANKS + 1 })?;
        let bank = self.banks[slot].get_or_insert(PcrBank { alg, values: [&[]; PCR_COUNT] });
        bank.values[index] = value;
        Ok(())
    }

    /// The value of PCR `index` in bank `alg`, if presented.
    pub fn get(&self, alg: HashAlgorithm, index: usize) -> Option<&'a [u8]> {
        self.banks
            .iter()
            .flatten()
            .find(|b| b.alg == alg)
            .and_then(|b| b.values.get(index))
            .copied()
            .filter(|v| !v.is_empty())
    }
}

/// How the quote's signature was delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuoteSignature<'a> {
    /// A marshalled TPMT_SIGNATURE (what TPM2_Quote returns).
    Tpmt(&'a [u8]),
    /// Bare RSA signature bytes with the scheme stated out of band (Azure's vTPM quote bundles).
    RsaRaw {
        /// The scheme.
        scheme: SigScheme,
        /// The signature bytes.
        sig: &'a [u8],
    },
}

/// One quote verification's input. `'a` is the lifetime of what the verified quote keeps borrowing (the
/// attest bytes and PCR values); `'k` that of the key and nonce, used only during verification.
#[derive(Clone, Copy, Debug)]
pub struct QuoteRequest<'a, 'k> {
    /// TPMS_ATTEST as received.
    pub attest: &'a [u8],
    /// The signature as received.
    pub signature: QuoteSignature<'a>,
    /// The attestation key (already trusted by the caller's AK policy).
    pub ak: AkPublic<'k>,
    /// The AK's own scheme when known (from its TPMT_PUBLIC); the signature must use it.
    pub ak_scheme: Option<SigScheme>,
    /// The presented PCR values.
    pub pcrs: &'a PcrValues<'a>,
    /// The expected extraData, exactly.
    pub nonce: &'k [u8],
    /// Accept SHA-1 PCR banks in the selection.
    pub allow_sha1: bool,
}

/// A quote whose signature, nonce and PCR digest verified.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedQuote<'a> {
    attest: Attest<'a>,
    pcrs: &'a PcrValues<'a>,
}

impl<'a> VerifiedQuote<'a> {
    /// The quote's fields.
    pub fn attest(&self) -> &Attest<'a> {
        &self.attest
    }
    /// A quoted PCR value: present only if the quote selected it (so policy never sees unquoted values).
    pub fn pcr(&self, alg: HashAlgorithm, index: usize) -> Option<&'a [u8]> {
        let selected = self
            .attest
            .pcr_selection()
            .banks()
            .any(|(bank, bits)| bank == alg && index < PCR_COUNT && bits & (1 << index) != 0);
        if selected { self.pcrs.get(alg, index) } else { None }
    }
}

/// Verifies a quote. Allocation-free.
pub fn verify_quote<'a>(provider: &CryptoProvider, req: &QuoteRequest<'a, '_>) -> Result<VerifiedQuote<'a>, Error> {
    let attest = Attest::parse(req.attest)?;
    let sig = match req.signature {
        QuoteSignature::Tpmt(bytes) => TpmSignature::parse(bytes)?,
        QuoteSignature::RsaRaw { scheme: scheme @ (SigScheme::RsaSsa(_) | SigScheme::RsaPss(_)), sig } => {
            TpmSignature::Rsa { scheme, sig }
        }
        QuoteSignature::RsaRaw { .. } => {
            return Err(Error::UnsupportedTpmAlgorithm { what: "raw signature scheme (RSA only)", id: 0 });
        }
    };
    let scheme = sig.scheme();
    if let Some(want) = req.ak_scheme
        && want != scheme
    {
        return Err(Error::UnsupportedTpmAlgorithm { what: "signature scheme differs from the AK's scheme", id: 0 });
    }
    let hash = scheme.hash();
    if hash == HashAlgorithm::Sha1 {
        return Err(Error::Sha1Refused);
    }
    verify_signature(provider, &req.ak, &sig, req.attest)?;

    if attest.extra_data() != req.nonce {
        return Err(Error::NonceMismatch { expected: Bytes::new(req.nonce), found: Bytes::new(attest.extra_data()) });
    }

    // pcrDigest over the selected values, in selection order.
    let mut parts: [&[u8]; PCR_COUNT * MAX_BANKS] = [&[]; PCR_COUNT * MAX_BANKS];
    let mut n = 0;
    for (bank, bits) in attest.pcr_selection().banks() {
        if bank == HashAlgorithm::Sha1 && !req.allow_sha1 {
            return Err(Error::Sha1Refused);
        }
        for pcr in (0..PCR_COUNT).filter(|i| bits & (1 << i) != 0) {
            let value = req.pcrs.get(bank, pcr).ok_or(Error::PcrValueMissing { bank, pcr: pcr as u8 })?;
            if n == parts.len() {
                return Err(Error::LimitExceeded { what: "selected PCRs", limit: parts.len(), found: n + 1 });
            }
            parts[n] = value;
            n += 1;
        }
    }
    let computed = provider.digests.digest(hash, &parts[..n]);
    if computed.as_bytes() != attest.pcr_digest() {
        return Err(Error::PcrDigestMismatch {
            computed: Bytes::new(computed.as_bytes()),
            quoted: Bytes::new(attest.pcr_digest()),
        });
    }
    Ok(VerifiedQuote { attest, pcrs: req.pcrs })
}

fn rsa_alg(provider: &CryptoProvider, scheme: SigScheme) -> Result<&'static dyn RsaAlgorithm, Error> {
    match scheme {
        SigScheme::RsaSsa(HashAlgorithm::Sha256) => Ok(provider.rsa_pkcs1_sha256),
        SigScheme::RsaSsa(HashAlgorithm::Sha384) => Ok(provider.rsa_pkcs1_sha384),
        SigScheme::RsaPss(HashAlgorithm::Sha256) => Ok(provider.rsa_pss_sha256),
        SigScheme::RsaPss(HashAlgorithm::Sha384) => Ok(provider.rsa_pss_sha384),
        _ => Err(Error::UnsupportedTpmAlgorithm { what: "RSA signature scheme/hash", id: 0 }),
    }
}

/// Verifies a TPM signature over `message` with `ak`.
pub(crate) fn verify_signature(
    provider: &CryptoProvider,
    ak: &AkPublic<'_>,
    sig: &TpmSignature<'_>,
    message: &[u8],
) -> Result<(), Error> {
    match (ak, sig) {
        (AkPublic::Rsa { modulus, exponent }, TpmSignature::Rsa { scheme, sig }) => {
            let alg = rsa_alg(provider, *scheme)?;
            let e = exponent.to_be_bytes();
            let e = &e[e.iter().position(|b| *b != 0).unwrap_or(3)..];
            alg.verify_components(modulus, e, message, sig).map_err(|_| Error::QuoteSignatureInvalid)
        }
        (AkPublic::Ecc { curve, x, y }, TpmSignature::Ecdsa { scheme, r, s }) => {
            let (alg, n) = match (curve, scheme.hash()) {
                (EccCurve::P256, HashAlgorithm::Sha256) => (provider.ecdsa_p256_sha256, 32),
                (EccCurve::P384, HashAlgorithm::Sha384) => (provider.ecdsa_p384_sha384, 48),
                _ => return Err(Error::UnsupportedTpmAlgorithm { what: "ECDSA curve/hash pairing", id: 0 }),
            };
            let mut point = [0u8; 97];
            point[0] = 0x04;
            point[1..=n].copy_from_slice(x);
            point[n + 1..=2 * n].copy_from_slice(y);
            let mut fixed = [0u8; 96];
            left_pad(r, &mut fixed[..n])?;
            left_pad(s, &mut fixed[n..2 * n])?;
            alg.verify_fixed(&point[..=2 * n], message, &fixed[..2 * n]).map_err(|_| Error::QuoteSignatureInvalid)
        }
        _ => Err(Error::QuoteSignatureInvalid),
    }
}

/// Copies a big-endian integer into `out`, left-padded with zeros; leading zeros in `v` are allowed.
fn left_pad(v: &[u8], out: &mut [u8]) -> Result<(), Error> {
    let v = &v[v.iter().position(|b| *b != 0).unwrap_or(v.len())..];
    if v.len() > out.len() {
        return Err(Error::QuoteSignatureInvalid);
    }
    let off = out.len() - v.len();
    out[off..].copy_from_slice(v);
    Ok(())
}
