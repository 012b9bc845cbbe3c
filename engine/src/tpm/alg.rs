//! TPM_ALG_ID values (TPM 2.0 Library Part 2 §6.3; TCG Algorithm Registry).

use crate::crypto::HashAlgorithm;
use crate::error::Error;

/// TPM_ALG_RSA.
pub const TPM_ALG_RSA: u16 = 0x0001;
/// TPM_ALG_SHA1.
pub const TPM_ALG_SHA1: u16 = 0x0004;
/// TPM_ALG_SHA256.
pub const TPM_ALG_SHA256: u16 = 0x000B;
/// TPM_ALG_SHA384.
pub const TPM_ALG_SHA384: u16 = 0x000C;
/// TPM_ALG_SHA512.
pub const TPM_ALG_SHA512: u16 = 0x000D;
/// TPM_ALG_NULL.
pub const TPM_ALG_NULL: u16 = 0x0010;
/// TPM_ALG_RSASSA (PKCS #1 v1.5).
pub const TPM_ALG_RSASSA: u16 = 0x0014;
/// TPM_ALG_RSAPSS.
pub const TPM_ALG_RSAPSS: u16 = 0x0016;
/// TPM_ALG_ECDSA.
pub const TPM_ALG_ECDSA: u16 = 0x0018;
/// TPM_ALG_ECC.
pub const TPM_ALG_ECC: u16 = 0x0023;
/// TPM_ECC_NIST_P256.
pub const TPM_ECC_NIST_P256: u16 = 0x0003;
/// TPM_ECC_NIST_P384.
pub const TPM_ECC_NIST_P384: u16 = 0x0004;

/// Maps a TPM hash algorithm id to a [`HashAlgorithm`].
pub fn hash_from_tpm(id: u16, what: &'static str) -> Result<HashAlgorithm, Error> {
    match id {
        TPM_ALG_SHA1 => Ok(HashAlgorithm::Sha1),
        TPM_ALG_SHA256 => Ok(HashAlgorithm::Sha256),
        TPM_ALG_SHA384 => Ok(HashAlgorithm::Sha384),
        TPM_ALG_SHA512 => Ok(HashAlgorithm::Sha512),
        _ => Err(Error::UnsupportedTpmAlgorithm { what, id }),
    }
}

/// The TPM algorithm id of a [`HashAlgorithm`].
pub fn hash_to_tpm(alg: HashAlgorithm) -> u16 {
    match alg {
        HashAlgorithm::Sha1 => TPM_ALG_SHA1,
        HashAlgorithm::Sha256 => TPM_ALG_SHA256,
        HashAlgorithm::Sha384 => TPM_ALG_SHA384,
        HashAlgorithm::Sha512 => TPM_ALG_SHA512,
    }
}
