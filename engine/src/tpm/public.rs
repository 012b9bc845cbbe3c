//! TPMT_PUBLIC / TPM2B_PUBLIC (TPM 2.0 Library Part 2 §12.2) of attestation keys, and the key forms the
//! engine verifies quotes with.

use super::alg::{
    TPM_ALG_ECC, TPM_ALG_ECDSA, TPM_ALG_NULL, TPM_ALG_RSA, TPM_ALG_RSAPSS, TPM_ALG_RSASSA, TPM_ECC_NIST_P256,
    TPM_ECC_NIST_P384, hash_from_tpm,
};
use super::reader::{MAX_TPM2B, Reader};
use crate::crypto::HashAlgorithm;
use crate::error::Error;

/// TPMA_OBJECT bits (Part 2 §8.3).
pub mod attributes {
    /// fixedTPM.
    pub const FIXED_TPM: u32 = 1 << 1;
    /// fixedParent.
    pub const FIXED_PARENT: u32 = 1 << 4;
    /// sensitiveDataOrigin.
    pub const SENSITIVE_DATA_ORIGIN: u32 = 1 << 5;
    /// userWithAuth.
    pub const USER_WITH_AUTH: u32 = 1 << 6;
    /// restricted.
    pub const RESTRICTED: u32 = 1 << 16;
    /// decrypt.
    pub const DECRYPT: u32 = 1 << 17;
    /// sign / encrypt.
    pub const SIGN: u32 = 1 << 18;
}

/// An elliptic curve usable for attestation keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EccCurve {
    /// NIST P-256.
    P256,
    /// NIST P-384.
    P384,
}

impl EccCurve {
    /// Coordinate size in bytes.
    pub fn coordinate_len(self) -> usize {
        match self {
            Self::P256 => 32,
            Self::P384 => 48,
        }
    }
}

/// The signing scheme bound to a key or used by a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigScheme {
    /// RSASSA-PKCS1-v1_5.
    RsaSsa(HashAlgorithm),
    /// RSASSA-PSS.
    RsaPss(HashAlgorithm),
    /// ECDSA.
    Ecdsa(HashAlgorithm),
}

impl SigScheme {
    /// The scheme's hash.
    pub fn hash(self) -> HashAlgorithm {
        match self {
            Self::RsaSsa(h) | Self::RsaPss(h) | Self::Ecdsa(h) => h,
        }
    }
}

/// An attestation key's public part, borrowed from whatever carried it (TPMT_PUBLIC, SPKI DER, JWK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AkPublic<'a> {
    /// RSA: big-endian modulus and public exponent.
    Rsa {
        /// Modulus, big-endian.
        modulus: &'a [u8],
        /// Public exponent.
        exponent: u32,
    },
    /// ECC: big-endian affine coordinates.
    Ecc {
        /// The curve.
        curve: EccCurve,
        /// X coordinate.
        x: &'a [u8],
        /// Y coordinate.
        y: &'a [u8],
    },
}

impl<'a> AkPublic<'a> {
    /// Reads an RSA or EC key from a SubjectPublicKeyInfo DER (e.g. a PEM "PUBLIC KEY").
    pub fn from_spki_der(der: &'a [u8]) -> Result<Self, Error> {
        use crate::der::{Reader as Der, oid, tag};
        let mut outer = Der::new(der, "SubjectPublicKeyInfo");
        let mut spki = outer.sequence("SubjectPublicKeyInfo")?;
        outer.finish()?;
        let mut alg = spki.sequence("AlgorithmIdentifier")?;
        let key = spki.bit_string_bytes()?;
        spki.finish()?;
        let id = alg.read(tag::OID)?;
        if id == oid::RSA_ENCRYPTION {
            let mut k = Der::new(key, "RSAPublicKey");
            let mut seq = k.sequence("RSAPublicKey")?;
            let n = seq.integer()?;
            let e = seq.small_uint()?;
            seq.finish()?;
            k.finish()?;
            let modulus = n.strip_prefix(&[0]).unwrap_or(n);
            let exponent = u32::try_from(e).map_err(|_| Error::UnsupportedAlgorithm { what: "RSA exponent" })?;
            Ok(Self::Rsa { modulus, exponent })
        } else if id == oid::EC_PUBLIC_KEY {
            let c = alg.read(tag::OID)?;
            let curve = if c == oid::SECP256R1 {
                EccCurve::P256
            } else if c == oid::SECP384R1 {
                EccCurve::P384
            } else {
                return Err(Error::UnsupportedAlgorithm { what: "elliptic curve" });
            };
            let n = curve.coordinate_len();
            match key {
                [0x04, rest @ ..] if rest.len() == 2 * n => Ok(Self::Ecc { curve, x: &rest[..n], y: &rest[n..] }),
                _ => Err(Error::UnsupportedAlgorithm { what: "EC point encoding (need uncompressed)" }),
            }
        } else {
            Err(Error::UnsupportedAlgorithm { what: "public key algorithm" })
        }
    }
}

/// A parsed TPMT_PUBLIC.
#[derive(Clone, Copy, Debug)]
pub struct TpmtPublic<'a> {
    raw: &'a [u8],
    name_alg: u16,
    attributes: u32,
    scheme: Option<SigScheme>,
    key: AkPublic<'a>,
    key_bits: u16,
}

/// Largest authPolicy digest (SHA-512).
const MAX_AUTH_POLICY: usize = 64;

impl<'a> TpmtPublic<'a> {
    /// Parses a TPM2B_PUBLIC (u16 size, then TPMT_PUBLIC); the input must hold exactly that.
    pub fn parse_tpm2b(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes, "TPM2B_PUBLIC");
        let inner = r.tpm2b(MAX_TPM2B)?;
        r.finish()?;
        Self::parse(inner)
    }

    /// Parses a TPMT_PUBLIC (RSA or ECC signing keys); the input must hold exactly that.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes, "TPMT_PUBLIC");
        let type_alg = r.u16()?;
        let name_alg = r.u16()?;
        let attributes = r.u32()?;
        r.tpm2b(MAX_AUTH_POLICY)?;
        // TPMT_SYM_DEF_OBJECT: must be NULL for a signing key.
        if r.u16()? != TPM_ALG_NULL {
            return Err(Error::AkAttributes { attributes, reason: "signing key with a symmetric algorithm" });
        }
        let (scheme, key, key_bits) = match type_alg {
            TPM_ALG_RSA => {
                let scheme = read_scheme(&mut r)?;
                let key_bits = r.u16()?;
                let exponent = match r.u32()? {
                    0 => 65_537,
                    e => e,
                };
                let modulus = r.tpm2b(MAX_TPM2B)?;
                if modulus.len() * 8 != usize::from(key_bits) {
                    return Err(r.err("modulus size differs from keyBits"));
                }
                (scheme, AkPublic::Rsa { modulus, exponent }, key_bits)
            }
            TPM_ALG_ECC => {
                let scheme = read_scheme(&mut r)?;
                let curve = match r.u16()? {
                    TPM_ECC_NIST_P256 => EccCurve::P256,
                    TPM_ECC_NIST_P384 => EccCurve::P384,
                    id => return Err(Error::UnsupportedTpmAlgorithm { what: "ECC curve", id }),
                };
                // TPMT_KDF_SCHEME: NULL for signing keys.
                let kdf = r.u16()?;
                if kdf != TPM_ALG_NULL {
                    r.u16()?;
                }
                let x = r.tpm2b(MAX_TPM2B)?;
                let y = r.tpm2b(MAX_TPM2B)?;
                let n = curve.coordinate_len();
                if x.len() != n || y.len() != n {
                    return Err(r.err("ECC point coordinates of the wrong size"));
                }
                (scheme, AkPublic::Ecc { curve, x, y }, (n * 8) as u16)
            }
            id => return Err(Error::UnsupportedTpmAlgorithm { what: "TPMT_PUBLIC.type", id }),
        };
        r.finish()?;
        Ok(Self { raw: bytes, name_alg, attributes, scheme, key, key_bits })
    }

    /// The marshalled TPMT_PUBLIC as received (what a TPM Name hashes).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
    /// nameAlg.
    pub fn name_alg(&self) -> u16 {
        self.name_alg
    }
    /// objectAttributes.
    pub fn attributes(&self) -> u32 {
        self.attributes
    }
    /// The signing scheme bound to the key, if any.
    pub fn scheme(&self) -> Option<SigScheme> {
        self.scheme
    }
    /// The public key.
    pub fn key(&self) -> AkPublic<'a> {
        self.key
    }
    /// Key size in bits.
    pub fn key_bits(&self) -> u16 {
        self.key_bits
    }

    /// Checks the attributes of an attestation key: restricted, sign, not decrypt, fixedTPM, fixedParent,
    /// sensitiveDataOrigin (TPM 2.0 Part 1 §25.2.3 "Restricted Signing Keys"), and RSA 2048/3072 or
    /// ECC P-256/P-384.
    pub fn check_attestation_key(&self) -> Result<(), Error> {
        use attributes::{DECRYPT, FIXED_PARENT, FIXED_TPM, RESTRICTED, SENSITIVE_DATA_ORIGIN, SIGN};
        let a = self.attributes;
        let fail = |reason| Err(Error::AkAttributes { attributes: a, reason });
        if a & RESTRICTED == 0 {
            return fail("not restricted");
        }
        if a & SIGN == 0 {
            return fail("not a signing key");
        }
        if a & DECRYPT != 0 {
            return fail("also a decryption key");
        }
        if a & (FIXED_TPM | FIXED_PARENT) != FIXED_TPM | FIXED_PARENT {
            return fail("not fixedTPM and fixedParent");
        }
        if a & SENSITIVE_DATA_ORIGIN == 0 {
            return fail("not generated in the TPM (sensitiveDataOrigin clear)");
        }
        if let AkPublic::Rsa { .. } = self.key
            && !matches!(self.key_bits, 2048 | 3072)
        {
            return fail("RSA attestation keys must be 2048 or 3072 bits");
        }
        Ok(())
    }
}

/// TPMT_RSA_SCHEME / TPMT_ECC_SCHEME: scheme id, and a hash when not NULL.
fn read_scheme(r: &mut Reader<'_>) -> Result<Option<SigScheme>, Error> {
    let scheme = r.u16()?;
    if scheme == TPM_ALG_NULL {
        return Ok(None);
    }
    let hash = hash_from_tpm(r.u16()?, "key scheme hash")?;
    match scheme {
        TPM_ALG_RSASSA => Ok(Some(SigScheme::RsaSsa(hash))),
        TPM_ALG_RSAPSS => Ok(Some(SigScheme::RsaPss(hash))),
        TPM_ALG_ECDSA => Ok(Some(SigScheme::Ecdsa(hash))),
        id => Err(Error::UnsupportedTpmAlgorithm { what: "key signing scheme", id }),
    }
}
