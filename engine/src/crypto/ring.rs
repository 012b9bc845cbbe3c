//! The ring provider (alternative backend).

use super::{
    CryptoError, CryptoProvider, Digest, Digests, EcdsaAlgorithm, HashAlgorithm, PreparedEcdsaKey, RsaAlgorithm,
};
use ring::{digest, signature};

/// The ring provider.
pub static PROVIDER: CryptoProvider = CryptoProvider {
    name: "ring",
    digests: &Sha2,
    ecdsa_p384_sha384: &Ecdsa {
        fixed: &signature::ECDSA_P384_SHA384_FIXED,
        asn1: &signature::ECDSA_P384_SHA384_ASN1,
        point_len: 97,
    },
    ecdsa_p256_sha256: &Ecdsa {
        fixed: &signature::ECDSA_P256_SHA256_FIXED,
        asn1: &signature::ECDSA_P256_SHA256_ASN1,
        point_len: 65,
    },
    rsa_pss_sha384: &Rsa(&signature::RSA_PSS_2048_8192_SHA384),
    rsa_pss_sha256: &Rsa(&signature::RSA_PSS_2048_8192_SHA256),
    rsa_pkcs1_sha256: &Rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
    rsa_pkcs1_sha384: &Rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
};

backend_glue!("ring");

struct Ecdsa {
    fixed: &'static signature::EcdsaVerificationAlgorithm,
    asn1: &'static signature::EcdsaVerificationAlgorithm,
    point_len: usize,
}

impl core::fmt::Debug for Ecdsa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ring ECDSA")
    }
}

/// ring has no parsed-key type for ECDSA; the prepared key keeps the validated point inline.
struct Prepared {
    alg: &'static signature::EcdsaVerificationAlgorithm,
    point: [u8; 97],
    len: usize,
}

impl core::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ring prepared ECDSA key")
    }
}

impl PreparedEcdsaKey for Prepared {
    fn verify_fixed(&self, message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        verify_ecdsa(self.alg, &self.point[..self.len], message, sig)
    }
}

impl EcdsaAlgorithm for Ecdsa {
    fn prepare(&self, point: &[u8]) -> Result<Box<dyn PreparedEcdsaKey>, CryptoError> {
        if point.len() != self.point_len || point.first() != Some(&0x04) {
            return Err(CryptoError);
        }
        let mut buf = [0u8; 97];
        buf[..point.len()].copy_from_slice(point);
        Ok(Box::new(Prepared { alg: self.fixed, point: buf, len: point.len() }))
    }
    fn verify_asn1(&self, point: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        verify_ecdsa(self.asn1, point, message, sig)
    }
    fn verify_fixed(&self, point: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        verify_ecdsa(self.fixed, point, message, sig)
    }
}
