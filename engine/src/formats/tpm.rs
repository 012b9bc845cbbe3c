//! TPM quotes as separate parts, and the TPM evidence layouts of trustee and azure-cvm-tooling.

use super::{bad, base64_bytes, check_json_size, hex_bytes};
use crate::crypto::HashAlgorithm;
use crate::error::Error;
use crate::tpm::attest::PCR_COUNT;
use crate::tpm::{AkPublic, PcrValues, QuoteRequest, QuoteSignature, SigScheme, TpmtPublic};
use serde::Deserialize;

/// Largest AK input (a PEM RSA-4096 SubjectPublicKeyInfo is ≈800 bytes; a TPM2B_PUBLIC ≈600).
pub const MAX_AK_INPUT_SIZE: usize = 4096;
/// Largest quote signature field (RSA-4096: 512 bytes; a TPMT_SIGNATURE adds 6).
pub const MAX_SIGNATURE_SIZE: usize = 1024;
/// Largest TPMS_ATTEST field (a quote over four banks is ≈200 bytes; TPM2B fields bound it further).
pub const MAX_ATTEST_SIZE: usize = 1024;

/// An attestation key read from one of the usual encodings, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AkKey {
    /// A SubjectPublicKeyInfo (DER, or decoded from a PEM "PUBLIC KEY" block).
    Spki(Vec<u8>),
    /// A TPMT_PUBLIC (the TPM2B_PUBLIC's size prefix removed when there was one).
    Tpmt(Vec<u8>),
}

impl AkKey {
    /// Reads an AK from PEM ("PUBLIC KEY"), DER SubjectPublicKeyInfo, TPM2B_PUBLIC or TPMT_PUBLIC. The
    /// encoding is recognised by structure, not guessed: PEM armour, a DER SEQUENCE that parses as an
    /// SPKI, a u16 size equal to the rest's length, else TPMT_PUBLIC (which must then parse).
    pub fn parse(input: &[u8]) -> Result<Self, Error> {
        if input.len() > MAX_AK_INPUT_SIZE {
            return Err(Error::LimitExceeded { what: "AK input", limit: MAX_AK_INPUT_SIZE, found: input.len() });
        }
        let text = input.trim_ascii_start();
        if text.starts_with(b"-----BEGIN") {
            let blocks = crate::x509::pem::parse_pem(input)?;
            let mut keys = blocks.into_iter().filter(|b| b.label == "PUBLIC KEY");
            let der = keys.next().ok_or(Error::Pem { reason: "no PUBLIC KEY block" })?.der;
            if keys.next().is_some() {
                return Err(Error::Pem { reason: "more than one PUBLIC KEY block" });
            }
            AkPublic::from_spki_der(&der)?;
            return Ok(Self::Spki(der));
        }
        if input.first() == Some(&0x30) && AkPublic::from_spki_der(input).is_ok() {
            return Ok(Self::Spki(input.to_vec()));
        }
        if let [hi, lo, rest @ ..] = input
            && usize::from(u16::from_be_bytes([*hi, *lo])) == rest.len()
        {
            TpmtPublic::parse(rest)?;
            return Ok(Self::Tpmt(rest.to_vec()));
        }
        TpmtPublic::parse(input)?;
        Ok(Self::Tpmt(input.to_vec()))
    }

    /// The key.
    pub fn public(&self) -> Result<AkPublic<'_>, Error> {
        match self {
            Self::Spki(der) => AkPublic::from_spki_der(der),
            Self::Tpmt(t) => Ok(TpmtPublic::parse(t)?.key()),
        }
    }

    /// The TPMT_PUBLIC when the key came as one (then its scheme and attributes are known).
    pub fn tpmt(&self) -> Option<Result<TpmtPublic<'_>, Error>> {
        match self {
            Self::Tpmt(t) => Some(TpmtPublic::parse(t)),
            Self::Spki(_) => None,
        }
    }

    /// The signing scheme bound to the key, when it came as a TPMT_PUBLIC.
    pub fn scheme(&self) -> Result<Option<SigScheme>, Error> {
        Ok(match self.tpmt() {
            Some(t) => t?.scheme(),
            None => None,
        })
    }
}

/// A quote given as its parts (as `tpm2_quote -m attest -s sig -o pcrs` writes them), owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpmQuoteParts {
    /// TPMS_ATTEST as the TPM returned it.
    pub attest: Vec<u8>,
    /// TPMT_SIGNATURE, or a bare RSA signature (see [`TpmQuoteParts::raw_rsa`]).
    pub signature: Vec<u8>,
    /// When set, `signature` is a bare RSA signature with this scheme (Azure's vTPM bundles).
    pub raw_rsa: Option<SigScheme>,
    /// PCR values of one bank, by index (empty = not presented).
    pub bank: HashAlgorithm,
    /// The values, PCR 0 first; at most 24.
    pub pcrs: Vec<Vec<u8>>,
}

impl TpmQuoteParts {
    /// Parts with a marshalled TPMT_SIGNATURE; `pcrs` are the bank's values from PCR 0 on.
    pub fn new(attest: Vec<u8>, signature: Vec<u8>, bank: HashAlgorithm, pcrs: Vec<Vec<u8>>) -> Result<Self, Error> {
        if attest.len() > MAX_ATTEST_SIZE {
            return Err(Error::LimitExceeded { what: "TPMS_ATTEST", limit: MAX_ATTEST_SIZE, found: attest.len() });
        }
        if signature.len() > MAX_SIGNATURE_SIZE {
            return Err(Error::LimitExceeded {
                what: "quote signature",
                limit: MAX_SIGNATURE_SIZE,
                found: signature.len(),
            });
        }
        if pcrs.len() > PCR_COUNT {
            return Err(Error::LimitExceeded { what: "PCR values", limit: PCR_COUNT, found: pcrs.len() });
        }
        Ok(Self { attest, signature, raw_rsa: None, bank, pcrs })
    }

    /// The PCR table the quote request borrows (values of the wrong length are errors).
    pub fn pcr_values(&self) -> Result<PcrValues<'_>, Error> {
        let mut out = PcrValues::new();
        for (i, v) in self.pcrs.iter().enumerate() {
            if !v.is_empty() {
                out.set(self.bank, i, v)?;
            }
        }
        Ok(out)
    }

    /// The signature as the quote verifier takes it.
    pub fn signature(&self) -> QuoteSignature<'_> {
        match self.raw_rsa {
            Some(scheme) => QuoteSignature::RsaRaw { scheme, sig: &self.signature },
            None => QuoteSignature::Tpmt(&self.signature),
        }
    }

    /// A quote request for `ak` and `nonce` (extraData, exactly). SHA-1 banks stay refused.
    pub fn request<'a, 'k>(
        &'a self,
        pcrs: &'a PcrValues<'a>,
        ak: &'k AkKey,
        nonce: &'k [u8],
    ) -> Result<QuoteRequest<'a, 'k>, Error> {
        Ok(QuoteRequest {
            attest: &self.attest,
            signature: self.signature(),
            ak: ak.public()?,
            ak_scheme: ak.scheme()?,
            pcrs,
            nonce,
            allow_sha1: false,
        })
    }
}

/// trustee's generic TPM evidence: `{"ak_public": base64 SPKI DER, "tpm_quote": {"message": base64
/// TPMS_ATTEST, "signature": base64 TPMT_SIGNATURE, "pcrs": [hex SHA-256 values, PCR 0 first]}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrusteeTpmEvidence {
    /// The AK.
    pub ak: AkKey,
    /// The quote.
    pub quote: TpmQuoteParts,
}

const TRUSTEE_TPM: &str = "trustee TPM evidence";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrusteeTpm<'a> {
    #[serde(borrow)]
    ak_public: &'a str,
    #[serde(borrow)]
    tpm_quote: RawTrusteeQuote<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrusteeQuote<'a> {
    #[serde(borrow)]
    message: &'a str,
    #[serde(borrow)]
    signature: &'a str,
    #[serde(borrow)]
    pcrs: Vec<&'a str>,
}

impl TrusteeTpmEvidence {
    /// Reads the JSON document.
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        check_json_size(TRUSTEE_TPM, json)?;
        let raw: RawTrusteeTpm<'_> =
            serde_json::from_slice(json).map_err(|_| bad(TRUSTEE_TPM, "not the expected JSON object"))?;
        if raw.tpm_quote.pcrs.len() > PCR_COUNT {
            return Err(Error::LimitExceeded { what: "PCR values", limit: PCR_COUNT, found: raw.tpm_quote.pcrs.len() });
        }
        let ak = AkKey::parse(&base64_bytes(TRUSTEE_TPM, raw.ak_public)?)?;
        let pcrs = raw.tpm_quote.pcrs.iter().map(|p| hex_bytes(TRUSTEE_TPM, p)).collect::<Result<_, _>>()?;
        let quote = TpmQuoteParts::new(
            base64_bytes(TRUSTEE_TPM, raw.tpm_quote.message)?,
            base64_bytes(TRUSTEE_TPM, raw.tpm_quote.signature)?,
            HashAlgorithm::Sha256,
            pcrs,
        )?;
        Ok(Self { ak, quote })
    }
}

/// trustee's hex quote (`tpm-quote-v1.json`, and the `tpm_quote` of Azure evidence v1/v2):
/// `{"signature": hex, "message": hex, "pcrs": [hex SHA-256 values]}`; the signature is a bare
/// RSASSA-PKCS1-v1_5/SHA-256 signature, as Azure's vTPM makes it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHexQuote {
    signature: String,
    message: String,
    pcrs: Vec<String>,
}

/// A quote in trustee's hex JSON form.
pub struct HexQuote;

const HEX_QUOTE: &str = "trustee TPM quote (hex)";

impl HexQuote {
    /// Reads `{"signature", "message", "pcrs"}` in hex.
    pub fn from_json(json: &[u8]) -> Result<TpmQuoteParts, Error> {
        check_json_size(HEX_QUOTE, json)?;
        let raw: RawHexQuote =
            serde_json::from_slice(json).map_err(|_| bad(HEX_QUOTE, "not the expected JSON object"))?;
        raw.into_parts()
    }
}

impl RawHexQuote {
    pub(crate) fn into_parts(self) -> Result<TpmQuoteParts, Error> {
        if self.pcrs.len() > PCR_COUNT {
            return Err(Error::LimitExceeded { what: "PCR values", limit: PCR_COUNT, found: self.pcrs.len() });
        }
        let pcrs = self.pcrs.iter().map(|p| hex_bytes(HEX_QUOTE, p)).collect::<Result<_, _>>()?;
        azure_parts(hex_bytes(HEX_QUOTE, &self.message)?, hex_bytes(HEX_QUOTE, &self.signature)?, pcrs)
    }
}

/// The parts of an Azure vTPM quote: bare RSASSA-SHA256 signature, SHA-256 PCRs.
pub(crate) fn azure_parts(attest: Vec<u8>, sig: Vec<u8>, pcrs: Vec<Vec<u8>>) -> Result<TpmQuoteParts, Error> {
    let mut parts = TpmQuoteParts::new(attest, sig, HashAlgorithm::Sha256, pcrs)?;
    parts.raw_rsa = Some(SigScheme::RsaSsa(HashAlgorithm::Sha256));
    Ok(parts)
}

/// azure-cvm-tooling's quote bundle (`az-cvm-vtpm` `Quote`, bincode 1 fixed-width encoding), borrowed:
///
/// ```text
/// u64 LE length ‖ signature (bare RSASSA-SHA256) ‖ u64 LE length ‖ TPMS_ATTEST ‖ u64 LE count ‖ count × 32-byte SHA-256 PCRs
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AzureQuoteBin<'a> {
    /// The signature.
    pub signature: &'a [u8],
    /// TPMS_ATTEST.
    pub attest: &'a [u8],
    pcrs: &'a [u8],
}

const AZURE_QUOTE_BIN: &str = "az-cvm-vtpm quote (bincode)";

impl<'a> AzureQuoteBin<'a> {
    /// Parses a whole bundle; trailing bytes are an error.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut rest = bytes;
        let signature = take_prefixed(&mut rest, MAX_SIGNATURE_SIZE, "signature length")?;
        let attest = take_prefixed(&mut rest, MAX_ATTEST_SIZE, "TPMS_ATTEST length")?;
        let count = take_u64(&mut rest)?;
        if count > PCR_COUNT as u64 {
            return Err(Error::LimitExceeded {
                what: "PCR count",
                limit: PCR_COUNT,
                found: usize::try_from(count).unwrap_or(usize::MAX),
            });
        }
        let n = count as usize * 32;
        if rest.len() != n {
            return Err(bad(
                AZURE_QUOTE_BIN,
                if rest.len() < n { "truncated PCR values" } else { "bytes after the PCR values" },
            ));
        }
        Ok(Self { signature, attest, pcrs: rest })
    }

    /// The SHA-256 PCR values, PCR 0 first.
    pub fn pcrs(&self) -> impl ExactSizeIterator<Item = &'a [u8]> {
        self.pcrs.chunks_exact(32)
    }

    /// The PCR table (borrowing the bundle).
    pub fn pcr_values(&self) -> PcrValues<'a> {
        let mut out = PcrValues::new();
        for (i, v) in self.pcrs().enumerate() {
            // At most 24 values of 32 bytes: cannot fail.
            let _ = out.set(HashAlgorithm::Sha256, i, v);
        }
        out
    }

    /// The signature as the quote verifier takes it.
    pub fn signature(&self) -> QuoteSignature<'a> {
        QuoteSignature::RsaRaw { scheme: SigScheme::RsaSsa(HashAlgorithm::Sha256), sig: self.signature }
    }

    /// The owned parts.
    pub fn to_parts(&self) -> Result<TpmQuoteParts, Error> {
        azure_parts(self.attest.to_vec(), self.signature.to_vec(), self.pcrs().map(<[u8]>::to_vec).collect())
    }
}

fn take_u64(rest: &mut &[u8]) -> Result<u64, Error> {
    let (head, tail) = rest.split_at_checked(8).ok_or(bad(AZURE_QUOTE_BIN, "truncated length"))?;
    *rest = tail;
    Ok(u64::from_le_bytes(head.try_into().unwrap_or_default()))
}

fn take_prefixed<'a>(rest: &mut &'a [u8], limit: usize, what: &'static str) -> Result<&'a [u8], Error> {
    let n = take_u64(rest)?;
    let n = usize::try_from(n).ok().filter(|n| *n <= limit).ok_or(Error::LimitExceeded {
        what,
        limit,
        found: usize::try_from(n).unwrap_or(usize::MAX),
    })?;
    let (head, tail) = rest.split_at_checked(n).ok_or(bad(AZURE_QUOTE_BIN, "truncated field"))?;
    *rest = tail;
    Ok(head)
}
