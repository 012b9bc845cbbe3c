//! Cryptographic primitives, injected as a struct of `&'static dyn` algorithm objects (the shape of
//! rustls' `CryptoProvider`), so the engine does not hard-wire a backend.
//!
//! Two providers ship: [`aws_lc_rs::PROVIDER`] (the default: P-384 verify measured at ≈0.2 ms on this
//! machine against ≈0.9 ms for ring and OpenSSL 3.0) and `ring::PROVIDER` (feature `ring`). Both are tested against the
//! same real evidence.

/// The provider code that is the same word for word for both backends: aws-lc-rs mirrors ring's `digest` and
/// `signature` API, so the SHA-2 digests, the RSA verifier and unparsed-key ECDSA verification are written once
/// and expanded in each provider module, where `digest` and `signature` name that backend's modules. What
/// differs (ECDSA key preparation: aws-lc-rs parses the key once, ring keeps the point) stays in the modules.
#[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
macro_rules! backend_glue {
    ($name:literal) => {
        #[derive(Debug)]
        struct Sha2;

        impl Digests for Sha2 {
            fn sha256(&self, data: &[u8]) -> [u8; 32] {
                let mut out = [0; 32];
                out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
                out
            }
            fn sha384(&self, data: &[u8]) -> [u8; 48] {
                let mut out = [0; 48];
                out.copy_from_slice(digest::digest(&digest::SHA384, data).as_ref());
                out
            }
            fn digest(&self, alg: HashAlgorithm, parts: &[&[u8]]) -> Digest {
                let mut ctx = digest::Context::new(match alg {
                    HashAlgorithm::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
                    HashAlgorithm::Sha256 => &digest::SHA256,
                    HashAlgorithm::Sha384 => &digest::SHA384,
                    HashAlgorithm::Sha512 => &digest::SHA512,
                });
                for p in parts {
                    ctx.update(p);
                }
                Digest::new(ctx.finish().as_ref())
            }
        }

        /// Verifies `sig` over `message` with the uncompressed `point` under `alg` (no key kept).
        fn verify_ecdsa(
            alg: &'static signature::EcdsaVerificationAlgorithm,
            point: &[u8],
            message: &[u8],
            sig: &[u8],
        ) -> Result<(), CryptoError> {
            signature::UnparsedPublicKey::new(alg, point).verify(message, sig).map_err(|_| CryptoError)
        }

        struct Rsa(&'static signature::RsaParameters);

        impl core::fmt::Debug for Rsa {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(concat!($name, " RSA"))
            }
        }

        impl RsaAlgorithm for Rsa {
            fn verify(&self, key: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
                signature::UnparsedPublicKey::new(self.0, key).verify(message, sig).map_err(|_| CryptoError)
            }
            fn verify_components(&self, n: &[u8], e: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
                signature::RsaPublicKeyComponents { n, e }.verify(self.0, message, sig).map_err(|_| CryptoError)
            }
        }
    };
}

#[cfg(feature = "aws-lc-rs")]
pub mod aws_lc_rs;
#[cfg(feature = "ring")]
pub mod ring;

use core::fmt;

/// A signature did not verify, or a key could not be used. Deliberately opaque (as ring's
/// `Unspecified`): the caller knows which object it was checking and reports that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CryptoError;

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cryptographic verification failed")
    }
}

/// SHA-2 digests.
pub trait Digests: Send + Sync + fmt::Debug {
    /// SHA-256 of `data`.
    fn sha256(&self, data: &[u8]) -> [u8; 32];
    /// SHA-384 of `data`.
    fn sha384(&self, data: &[u8]) -> [u8; 48];
    /// The digest with `alg` of the concatenation of `parts` (no allocation; used for PCR extends and
    /// multi-part messages).
    fn digest(&self, alg: HashAlgorithm, parts: &[&[u8]]) -> Digest;
}

/// A hash algorithm the engine can compute (TPM banks and signature schemes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    /// SHA-1 (legacy TPM banks only; refused unless explicitly allowed).
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl HashAlgorithm {
    /// Output length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            Self::Sha1 => 20,
            Self::Sha256 => 32,
            Self::Sha384 => 48,
            Self::Sha512 => 64,
        }
    }
    /// A short name ("sha256").
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Sha384 => "sha384",
            Self::Sha512 => "sha512",
        }
    }
}

/// A digest of up to 64 bytes, inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest {
    len: u8,
    buf: [u8; 64],
}

impl Digest {
    /// Copies `bytes` (at most 64).
    pub fn new(bytes: &[u8]) -> Self {
        let n = bytes.len().min(64);
        let mut buf = [0u8; 64];
        buf[..n].copy_from_slice(&bytes[..n]);
        Self { len: n as u8, buf }
    }
    /// All-zero digest of `alg`'s length.
    pub fn zero(alg: HashAlgorithm) -> Self {
        Self { len: alg.output_len() as u8, buf: [0; 64] }
    }
    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl AsRef<[u8]> for Digest {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A prepared (parsed and validated) ECDSA public key, cheap to use many times.
pub trait PreparedEcdsaKey: Send + Sync + fmt::Debug {
    /// Verifies a fixed-width `r ‖ s` signature (big-endian, each the curve's scalar width) over `message`,
    /// hashing with the hash bound to the key's algorithm.
    fn verify_fixed(&self, message: &[u8], signature: &[u8]) -> Result<(), CryptoError>;
}

/// ECDSA verification over one curve and hash.
pub trait EcdsaAlgorithm: Send + Sync + fmt::Debug {
    /// Parses an uncompressed SEC1 point (`04 ‖ X ‖ Y`) into a prepared key.
    fn prepare(&self, point: &[u8]) -> Result<Box<dyn PreparedEcdsaKey>, CryptoError>;
    /// Verifies an ASN.1 DER `Ecdsa-Sig-Value` over `message` (as in X.509 signatures).
    fn verify_asn1(&self, point: &[u8], message: &[u8], signature: &[u8]) -> Result<(), CryptoError>;
    /// Verifies a fixed-width `r ‖ s` signature without keeping a prepared key.
    fn verify_fixed(&self, point: &[u8], message: &[u8], signature: &[u8]) -> Result<(), CryptoError>;
}

/// RSA signature verification. Keys are PKCS#1 `RSAPublicKey` DER (the contents of the SPKI BIT STRING).
pub trait RsaAlgorithm: Send + Sync + fmt::Debug {
    /// Verifies `signature` over `message`.
    fn verify(&self, rsa_public_key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), CryptoError>;
    /// Verifies `signature` over `message` with a key given as big-endian modulus and exponent.
    fn verify_components(&self, n: &[u8], e: &[u8], message: &[u8], signature: &[u8]) -> Result<(), CryptoError>;
}

/// The algorithms the engine uses; every field is a static algorithm object.
#[derive(Debug, Clone, Copy)]
pub struct CryptoProvider {
    /// A short name for diagnostics ("aws-lc-rs", "ring").
    pub name: &'static str,
    /// SHA-256 / SHA-384.
    pub digests: &'static dyn Digests,
    /// ECDSA P-384 with SHA-384 (SNP report signatures, VCEK/VLEK keys).
    pub ecdsa_p384_sha384: &'static dyn EcdsaAlgorithm,
    /// ECDSA P-256 with SHA-256 (certificates signed with P-256 keys).
    pub ecdsa_p256_sha256: &'static dyn EcdsaAlgorithm,
    /// RSASSA-PSS with SHA-384, MGF1-SHA-384, salt length 48 (AMD ARK/ASK/ASVK signatures), 2048–8192 bits.
    pub rsa_pss_sha384: &'static dyn RsaAlgorithm,
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256, salt length 32, 2048–8192 bits.
    pub rsa_pss_sha256: &'static dyn RsaAlgorithm,
    /// RSASSA-PKCS1-v1_5 with SHA-256, 2048–8192 bits.
    pub rsa_pkcs1_sha256: &'static dyn RsaAlgorithm,
    /// RSASSA-PKCS1-v1_5 with SHA-384, 2048–8192 bits.
    pub rsa_pkcs1_sha384: &'static dyn RsaAlgorithm,
}

/// The default provider: aws-lc-rs when that feature is on, else ring.
#[cfg(feature = "aws-lc-rs")]
pub fn default_provider() -> &'static CryptoProvider {
    &aws_lc_rs::PROVIDER
}

/// The default provider: aws-lc-rs when that feature is on, else ring.
#[cfg(all(not(feature = "aws-lc-rs"), feature = "ring"))]
pub fn default_provider() -> &'static CryptoProvider {
    &ring::PROVIDER
}

#[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
compile_error!("attest-engine needs a crypto backend: enable the `aws-lc-rs` or `ring` feature");

/// Converts a SEV-SNP signature component (72 bytes, little-endian, zero above the 48 significant bytes)
/// into big-endian form in `out`. Returns `false` if the upper bytes are not zero (the value would not be a
/// P-384 scalar and those bytes would otherwise escape the signature check).
pub(crate) fn le72_to_be48(le: &[u8; 72], out: &mut [u8]) -> bool {
    debug_assert_eq!(out.len(), 48);
    for (dst, src) in out.iter_mut().zip(le[..48].iter().rev()) {
        *dst = *src;
    }
    le[48..].iter().all(|b| *b == 0)
}
