//! Signature and public-key algorithm identifiers (RFC 5280 §4.1.1.2, RFC 4055 §3.1, RFC 5480 §2.1.1).

use crate::crypto::{CryptoError, CryptoProvider};
use crate::der::{Reader, oid, tag};
use crate::error::Error;

/// A certificate or CRL signature algorithm the engine can verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureAlgorithm {
    /// RSASSA-PSS with SHA-384, MGF1-SHA-384, salt length 48, trailer field 1 — what AMD's KDS uses for
    /// every ARK, ASK, ASVK, VCEK and VLEK signature.
    RsaPssSha384,
    /// sha256WithRSAEncryption (PKCS #1 v1.5).
    RsaPkcs1Sha256,
    /// sha384WithRSAEncryption (PKCS #1 v1.5).
    RsaPkcs1Sha384,
    /// ecdsa-with-SHA384.
    EcdsaSha384,
    /// ecdsa-with-SHA256.
    EcdsaSha256,
}

impl SignatureAlgorithm {
    /// Parses an `AlgorithmIdentifier` value (the contents of the SEQUENCE).
    pub(crate) fn from_der(value: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(value, "AlgorithmIdentifier");
        let id = r.read(tag::OID)?;
        let alg = if id == oid::RSASSA_PSS {
            let mut params = r.sequence("RSASSA-PSS-params")?;
            check_pss_sha384(&mut params)?;
            params.finish()?;
            Self::RsaPssSha384
        } else if id == oid::SHA256_WITH_RSA || id == oid::SHA384_WITH_RSA {
            // RFC 4055 §5: parameters MUST be NULL (absent is tolerated by many; DER-strict here).
            if !r.read(tag::NULL)?.is_empty() {
                return Err(Error::UnsupportedAlgorithm { what: "RSA PKCS#1 parameters" });
            }
            if id == oid::SHA256_WITH_RSA { Self::RsaPkcs1Sha256 } else { Self::RsaPkcs1Sha384 }
        } else if id == oid::ECDSA_WITH_SHA384 {
            Self::EcdsaSha384
        } else if id == oid::ECDSA_WITH_SHA256 {
            Self::EcdsaSha256
        } else {
            return Err(Error::UnsupportedAlgorithm { what: "signature algorithm" });
        };
        r.finish()?;
        Ok(alg)
    }

    /// A stable name for display.
    pub fn name(self) -> &'static str {
        match self {
            Self::RsaPssSha384 => "RSASSA-PSS/SHA-384",
            Self::RsaPkcs1Sha256 => "RSA-PKCS1/SHA-256",
            Self::RsaPkcs1Sha384 => "RSA-PKCS1/SHA-384",
            Self::EcdsaSha384 => "ECDSA/SHA-384",
            Self::EcdsaSha256 => "ECDSA/SHA-256",
        }
    }

    /// Verifies `signature` over `message` with `key` using `provider`.
    pub(crate) fn verify(
        self,
        provider: &CryptoProvider,
        key: &PublicKey<'_>,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), CryptoError> {
        match (self, key) {
            (Self::RsaPssSha384, PublicKey::Rsa { pkcs1 }) => provider.rsa_pss_sha384.verify(pkcs1, message, signature),
            (Self::RsaPkcs1Sha256, PublicKey::Rsa { pkcs1 }) => {
                provider.rsa_pkcs1_sha256.verify(pkcs1, message, signature)
            }
            (Self::RsaPkcs1Sha384, PublicKey::Rsa { pkcs1 }) => {
                provider.rsa_pkcs1_sha384.verify(pkcs1, message, signature)
            }
            (Self::EcdsaSha384, PublicKey::EcP384 { point }) => {
                provider.ecdsa_p384_sha384.verify_asn1(point, message, signature)
            }
            (Self::EcdsaSha256, PublicKey::EcP256 { point }) => {
                provider.ecdsa_p256_sha256.verify_asn1(point, message, signature)
            }
            _ => Err(CryptoError),
        }
    }
}

/// Checks RSASSA-PSS-params for SHA-384 / MGF1-SHA-384 / salt 48 / trailer 1 (RFC 4055 §3.1).
fn check_pss_sha384(params: &mut Reader<'_>) -> Result<(), Error> {
    let unsupported =
        Error::UnsupportedAlgorithm { what: "RSASSA-PSS parameters (need SHA-384, MGF1-SHA-384, salt 48)" };
    // [0] hashAlgorithm
    let hash = params.read(tag::context(0)).map_err(|_| unsupported.clone())?;
    let mut h = Reader::new(hash, "PSS hashAlgorithm");
    if !is_sha384_alg_id(h.read(tag::SEQUENCE)?)? {
        return Err(unsupported);
    }
    h.finish()?;
    // [1] maskGenAlgorithm
    let mgf = params.read(tag::context(1)).map_err(|_| unsupported.clone())?;
    let mut m = Reader::new(mgf, "PSS maskGenAlgorithm");
    let mut mgf_alg = m.sequence("MGF AlgorithmIdentifier")?;
    if mgf_alg.read(tag::OID)? != oid::MGF1 || !is_sha384_alg_id(mgf_alg.read(tag::SEQUENCE)?)? {
        return Err(unsupported);
    }
    mgf_alg.finish()?;
    m.finish()?;
    // [2] saltLength
    let salt = params.read(tag::context(2)).map_err(|_| unsupported.clone())?;
    let mut s = Reader::new(salt, "PSS saltLength");
    if s.small_uint()? != 48 {
        return Err(unsupported);
    }
    s.finish()?;
    // [3] trailerField OPTIONAL (DEFAULT 1). DER omits defaults, but AMD's ARK/ASK/VCEK carry it
    // explicitly while VLEKs omit it: accept both, value 1 only.
    if let Some(trailer) = params.read_optional(tag::context(3))? {
        let mut t = Reader::new(trailer, "PSS trailerField");
        if t.small_uint()? != 1 {
            return Err(unsupported);
        }
        t.finish()?;
    }
    Ok(())
}

fn is_sha384_alg_id(value: &[u8]) -> Result<bool, Error> {
    let mut r = Reader::new(value, "hash AlgorithmIdentifier");
    if r.read(tag::OID)? != oid::SHA384 {
        return Ok(false);
    }
    // parameters: NULL or absent (RFC 4055 §2.1 allows both).
    if !r.is_empty() && !r.read(tag::NULL)?.is_empty() {
        return Ok(false);
    }
    r.finish()?;
    Ok(true)
}

/// A subject public key the engine can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublicKey<'a> {
    /// RSA: the PKCS #1 `RSAPublicKey` DER.
    Rsa {
        /// `RSAPublicKey` DER (modulus, exponent).
        pkcs1: &'a [u8],
    },
    /// ECDSA P-384: the uncompressed SEC1 point (97 bytes).
    EcP384 {
        /// `04 ‖ X ‖ Y`.
        point: &'a [u8],
    },
    /// ECDSA P-256: the uncompressed SEC1 point (65 bytes).
    EcP256 {
        /// `04 ‖ X ‖ Y`.
        point: &'a [u8],
    },
}

impl<'a> PublicKey<'a> {
    /// The bit length of an RSA key's modulus (its most significant set bit counts); `None` for EC keys.
    pub fn rsa_modulus_bits(&self) -> Option<u32> {
        let Self::Rsa { pkcs1 } = self else { return None };
        // Structure checked by `from_spki`: SEQUENCE { INTEGER modulus, INTEGER exponent }.
        let mut k = Reader::new(pkcs1, "RSAPublicKey");
        let modulus = k.sequence("RSAPublicKey").and_then(|mut s| s.integer()).ok()?;
        let first = modulus.iter().position(|b| *b != 0)?;
        let bytes = u32::try_from(modulus.len() - first).ok()?;
        Some(bytes * 8 - modulus[first].leading_zeros())
    }

    /// Parses a SubjectPublicKeyInfo value (the contents of the SEQUENCE).
    pub(crate) fn from_spki(value: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(value, "SubjectPublicKeyInfo");
        let mut alg = r.sequence("SPKI AlgorithmIdentifier")?;
        let key = r.bit_string_bytes()?;
        r.finish()?;
        let id = alg.read(tag::OID)?;
        let out = if id == oid::RSA_ENCRYPTION {
            if !alg.read(tag::NULL)?.is_empty() {
                return Err(Error::UnsupportedAlgorithm { what: "rsaEncryption parameters" });
            }
            // Structural check of RSAPublicKey ::= SEQUENCE { modulus, publicExponent }.
            let mut k = Reader::new(key, "RSAPublicKey");
            let mut seq = k.sequence("RSAPublicKey")?;
            seq.integer()?;
            seq.integer()?;
            seq.finish()?;
            k.finish()?;
            Self::Rsa { pkcs1: key }
        } else if id == oid::EC_PUBLIC_KEY {
            let curve = alg.read(tag::OID)?;
            let (want, out) = if curve == oid::SECP384R1 {
                (97, Self::EcP384 { point: key })
            } else if curve == oid::SECP256R1 {
                (65, Self::EcP256 { point: key })
            } else {
                return Err(Error::UnsupportedAlgorithm { what: "elliptic curve" });
            };
            if key.len() != want || key[0] != 0x04 {
                return Err(Error::UnsupportedAlgorithm { what: "EC point encoding (need uncompressed)" });
            }
            out
        } else {
            return Err(Error::UnsupportedAlgorithm { what: "public key algorithm" });
        };
        alg.finish()?;
        Ok(out)
    }
}
