//! TPMT_SIGNATURE (TPM 2.0 Library Part 2 §11.3.4): RSASSA, RSAPSS and ECDSA.

use super::alg::{TPM_ALG_ECDSA, TPM_ALG_RSAPSS, TPM_ALG_RSASSA, hash_from_tpm};
use super::public::SigScheme;
use super::reader::{MAX_TPM2B, Reader};
use crate::error::Error;

/// Largest ECC parameter (P-521 would be 66; we accept up to P-384's 48 plus slack for leading zeros).
const MAX_ECC_PARAMETER: usize = 66;

/// A parsed TPMT_SIGNATURE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpmSignature<'a> {
    /// RSASSA-PKCS1-v1_5 or RSASSA-PSS: the signature bytes.
    Rsa {
        /// The scheme with its hash.
        scheme: SigScheme,
        /// The signature (TPM2B_PUBLIC_KEY_RSA contents).
        sig: &'a [u8],
    },
    /// ECDSA: r and s, big-endian (possibly shorter than the curve size).
    Ecdsa {
        /// The scheme with its hash.
        scheme: SigScheme,
        /// signatureR.
        r: &'a [u8],
        /// signatureS.
        s: &'a [u8],
    },
}

impl<'a> TpmSignature<'a> {
    /// Parses a TPMT_SIGNATURE; the input must hold exactly one.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes, "TPMT_SIGNATURE");
        let alg = r.u16()?;
        let hash_id = r.u16()?;
        let out = match alg {
            TPM_ALG_RSASSA | TPM_ALG_RSAPSS => {
                let hash = hash_from_tpm(hash_id, "signature hash")?;
                let scheme = if alg == TPM_ALG_RSASSA { SigScheme::RsaSsa(hash) } else { SigScheme::RsaPss(hash) };
                Self::Rsa { scheme, sig: r.tpm2b(MAX_TPM2B)? }
            }
            TPM_ALG_ECDSA => {
                let hash = hash_from_tpm(hash_id, "signature hash")?;
                let sr = r.tpm2b(MAX_ECC_PARAMETER)?;
                let ss = r.tpm2b(MAX_ECC_PARAMETER)?;
                Self::Ecdsa { scheme: SigScheme::Ecdsa(hash), r: sr, s: ss }
            }
            id => return Err(Error::UnsupportedTpmAlgorithm { what: "TPMT_SIGNATURE.sigAlg", id }),
        };
        r.finish()?;
        Ok(out)
    }

    /// The signature scheme.
    pub fn scheme(&self) -> SigScheme {
        match self {
            Self::Rsa { scheme, .. } | Self::Ecdsa { scheme, .. } => *scheme,
        }
    }
}
