//! The aws-lc-rs provider (default).

use super::{
    CryptoError, CryptoProvider, Digest, Digests, EcdsaAlgorithm, HashAlgorithm, PreparedEcdsaKey, RsaAlgorithm,
};
use aws_lc_rs::{digest, signature};

/// The aws-lc-rs provider.
pub static PROVIDER: CryptoProvider = CryptoProvider {
    name: "aws-lc-rs",
    digests: &Sha2,
    ecdsa_p384_sha384: &Ecdsa { fixed: &signature::ECDSA_P384_SHA384_FIXED, asn1: &signature::ECDSA_P384_SHA384_ASN1 },
    ecdsa_p256_sha256: &Ecdsa { fixed: &signature::ECDSA_P256_SHA256_FIXED, asn1: &signature::ECDSA_P256_SHA256_ASN1 },
    rsa_pss_sha384: &Rsa(&signature::RSA_PSS_2048_8192_SHA384),
    rsa_pss_sha256: &Rsa(&signature::RSA_PSS_2048_8192_SHA256),
    rsa_pkcs1_sha256: &Rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
    rsa_pkcs1_sha384: &Rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
};

backend_glue!("aws-lc-rs");

struct Ecdsa {
    fixed: &'static signature::EcdsaVerificationAlgorithm,
    asn1: &'static signature::EcdsaVerificationAlgorithm,
}

impl core::fmt::Debug for Ecdsa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("aws-lc-rs ECDSA")
    }
}

struct Prepared(signature::ParsedPublicKey);

impl core::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("aws-lc-rs prepared ECDSA key")
    }
}

impl PreparedEcdsaKey for Prepared {
    fn verify_fixed(&self, message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        self.0.verify_sig(message, sig).map_err(|_| CryptoError)
    }
}

impl EcdsaAlgorithm for Ecdsa {
    fn prepare(&self, point: &[u8]) -> Result<Box<dyn PreparedEcdsaKey>, CryptoError> {
        let key = signature::ParsedPublicKey::new(self.fixed, point).map_err(|_| CryptoError)?;
        Ok(Box::new(Prepared(key)))
    }
    fn verify_asn1(&self, point: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        verify_ecdsa(self.asn1, point, message, sig)
    }
    fn verify_fixed(&self, point: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
        verify_ecdsa(self.fixed, point, message, sig)
    }
}
