//! Credential protection (TPM 2.0 Library Part 1 §24 "Credential Protection"; Part 3 §12.5/§12.6
//! TPM2_ActivateCredential / TPM2_MakeCredential): the verifier encrypts a secret so that only the TPM that
//! holds a given EK *and* has an object with a given Name loaded can recover it.
//!
//! The verifier side, [`make_credential`], runs in software (OpenSSL), for an RSA-2048 EK made from the TCG
//! default template L-1 (nameAlg SHA-256, symmetric AES-128-CFB):
//!
//! ```text
//! seed          random, |SHA-256| = 32 bytes
//! encSecret     RSA-OAEP(EK, seed; hash SHA-256, MGF1-SHA-256, label "IDENTITY\0")  (Part 1 §B.10.3, §24.4)
//! symKey        KDFa(SHA-256, seed, "STORAGE", akName, "", 128)                       (§24.4)
//! encIdentity   AES-128-CFB(symKey, IV = 0, TPM2B_DIGEST(secret))                      (§24.4)
//! hmacKey       KDFa(SHA-256, seed, "INTEGRITY", "", "", 256)                          (§24.5)
//! outerHMAC     HMAC-SHA256(hmacKey, encIdentity ‖ akName)                            (§24.5)
//! credential    TPM2B_ID_OBJECT { TPM2B_DIGEST(outerHMAC) ‖ encIdentity }
//! ```
//!
//! KDFa is the SP 800-108 counter-mode KDF with HMAC (Part 1 §11.4.10.2): for i = 1, 2, …
//! `HMAC(key, [i]₃₂ ‖ label ‖ 0x00 ‖ contextU ‖ contextV ‖ [bits]₃₂)`, truncated to `bits`.
//!
//! The attester side, `Tpm::activate_credential` in `attest-attester`, runs TPM2_ActivateCredential with the AK (USER role,
//! password session) and the EK (ADMIN role: a policy session satisfying PolicySecret(TPM_RH_ENDORSEMENT)).

use super::Error;
use openssl::bn::BigNum;
use openssl::encrypt::Encrypter;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, PKeyRef, Public};
use openssl::rsa::{Padding, Rsa};
use openssl::sign::Signer;
use openssl::symm::{Cipher, encrypt};
use zeroize::Zeroizing;

/// TPM_ALG_SHA256, the nameAlg prefix of a SHA-256 Name.
const TPM_ALG_SHA256: [u8; 2] = [0x00, 0x0B];
/// Largest credential: a TPM2B_DIGEST holds at most a SHA-512 digest.
pub const MAX_CREDENTIAL: usize = 64;

/// An encrypted credential for one EK and one object Name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CredentialChallenge {
    /// TPM2B_ID_OBJECT (with its 2-byte size).
    pub credential_blob: Vec<u8>,
    /// TPM2B_ENCRYPTED_SECRET (with its 2-byte size).
    pub encrypted_secret: Vec<u8>,
}

/// An OpenSSL RSA public key from a big-endian modulus and an exponent.
pub fn rsa_public_key(modulus: &[u8], exponent: u32) -> Result<PKey<Public>, Error> {
    let rsa = Rsa::from_public_components(BigNum::from_slice(modulus)?, BigNum::from_u32(exponent)?)?;
    Ok(PKey::from_rsa(rsa)?)
}

/// KDFa (TPM 2.0 Part 1 §11.4.10.2) with HMAC-SHA256; `label` without its terminating zero (added here).
pub fn kdfa_sha256(
    key: &[u8],
    label: &str,
    context_u: &[u8],
    context_v: &[u8],
    bits: u32,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    if bits == 0 || !bits.is_multiple_of(8) {
        return Err(Error::InvalidArgument { what: "KDFa output must be a positive number of whole bytes" });
    }
    let want = (bits / 8) as usize;
    let hmac_key = PKey::hmac(key)?;
    let mut out = Zeroizing::new(Vec::with_capacity(want + 32));
    let mut counter = 1u32;
    while out.len() < want {
        let mut s = Signer::new(MessageDigest::sha256(), &hmac_key)?;
        s.update(&counter.to_be_bytes())?;
        s.update(label.as_bytes())?;
        s.update(&[0])?;
        s.update(context_u)?;
        s.update(context_v)?;
        s.update(&bits.to_be_bytes())?;
        out.extend_from_slice(&Zeroizing::new(s.sign_to_vec()?));
        counter += 1;
    }
    out.truncate(want);
    Ok(out)
}

/// Makes a credential for `secret` that only the TPM holding the RSA-2048 `ek` can activate, and only for
/// an object named `ak_name` (nameAlg SHA-256: 0x000B ‖ 32 bytes).
pub fn make_credential(ek: &PKeyRef<Public>, ak_name: &[u8], secret: &[u8]) -> Result<CredentialChallenge, Error> {
    let seed = Zeroizing::new({
        let mut s = vec![0u8; 32];
        openssl::rand::rand_bytes(&mut s)?;
        s
    });
    make_credential_with_seed(ek, ak_name, secret, &seed)
}

/// [`make_credential`] with a caller-chosen seed (for known-answer tests; the seed must be secret and
/// random in real use).
pub(crate) fn make_credential_with_seed(
    ek: &PKeyRef<Public>,
    ak_name: &[u8],
    secret: &[u8],
    seed: &[u8],
) -> Result<CredentialChallenge, Error> {
    let rsa = ek.rsa().map_err(|_| Error::InvalidArgument { what: "the EK is not an RSA key" })?;
    if rsa.size() != 256 {
        return Err(Error::InvalidArgument { what: "only RSA-2048 EKs (template L-1) are supported" });
    }
    if ak_name.len() != 34 || ak_name[..2] != TPM_ALG_SHA256 {
        return Err(Error::InvalidArgument { what: "the AK Name must be a SHA-256 Name (0x000B ‖ 32 bytes)" });
    }
    if secret.is_empty() || secret.len() > MAX_CREDENTIAL {
        return Err(Error::InvalidArgument { what: "the credential must be 1..=64 bytes" });
    }

    // encSecret: RSA-OAEP with the EK's nameAlg and the label "IDENTITY\0".
    let mut enc = Encrypter::new(ek)?;
    enc.set_rsa_padding(Padding::PKCS1_OAEP)?;
    enc.set_rsa_oaep_md(MessageDigest::sha256())?;
    enc.set_rsa_mgf1_md(MessageDigest::sha256())?;
    enc.set_rsa_oaep_label(b"IDENTITY\0")?;
    let mut enc_secret = vec![0u8; enc.encrypt_len(seed)?];
    let n = enc.encrypt(seed, &mut enc_secret)?;
    enc_secret.truncate(n);

    // encIdentity: AES-128-CFB over TPM2B_DIGEST(secret).
    let sym_key = kdfa_sha256(seed, "STORAGE", ak_name, &[], 128)?;
    let mut plain = Zeroizing::new(Vec::with_capacity(2 + secret.len()));
    plain.extend_from_slice(&(secret.len() as u16).to_be_bytes());
    plain.extend_from_slice(secret);
    let enc_identity = encrypt(Cipher::aes_128_cfb128(), &sym_key, Some(&[0u8; 16]), &plain)?;

    // outerHMAC over encIdentity ‖ Name.
    let hmac_key = kdfa_sha256(seed, "INTEGRITY", &[], &[], 256)?;
    let hmac_key = PKey::hmac(&hmac_key)?;
    let mut signer = Signer::new(MessageDigest::sha256(), &hmac_key)?;
    signer.update(&enc_identity)?;
    signer.update(ak_name)?;
    let outer_hmac = signer.sign_to_vec()?;

    let mut id_object = Vec::with_capacity(2 + 2 + outer_hmac.len() + enc_identity.len());
    id_object.extend_from_slice(&(outer_hmac.len() as u16).to_be_bytes());
    id_object.extend_from_slice(&outer_hmac);
    id_object.extend_from_slice(&enc_identity);
    Ok(CredentialChallenge { credential_blob: super::tpm2b(&id_object)?, encrypted_secret: super::tpm2b(&enc_secret)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kdfa_lengths_and_determinism() {
        let a = kdfa_sha256(b"seed", "STORAGE", b"name", b"", 128).unwrap();
        let b = kdfa_sha256(b"seed", "STORAGE", b"name", b"", 128).unwrap();
        assert_eq!(a.len(), 16);
        assert_eq!(*a, *b);
        let long = kdfa_sha256(b"seed", "INTEGRITY", b"", b"", 512).unwrap();
        assert_eq!(long.len(), 64);
        assert_ne!(*kdfa_sha256(b"seed", "INTEGRITY", b"", b"", 256).unwrap(), *a);
        assert!(kdfa_sha256(b"seed", "X", b"", b"", 7).is_err());
    }

    #[test]
    fn kdfa_first_block_is_one_hmac() {
        // With bits = 256 the output is exactly HMAC(key, 00000001 ‖ "INTEGRITY" ‖ 00 ‖ 00000100).
        let key = [7u8; 32];
        let mut msg = vec![0, 0, 0, 1];
        msg.extend_from_slice(b"INTEGRITY\0");
        msg.extend_from_slice(&256u32.to_be_bytes());
        let mut s = Signer::new(MessageDigest::sha256(), &PKey::hmac(&key).unwrap()).unwrap();
        s.update(&msg).unwrap();
        assert_eq!(*kdfa_sha256(&key, "INTEGRITY", b"", b"", 256).unwrap(), s.sign_to_vec().unwrap());
    }

    #[test]
    fn shapes_and_argument_checks() {
        let rsa = Rsa::generate(2048).unwrap();
        let ek = PKey::public_key_from_der(&rsa.public_key_to_der().unwrap()).unwrap();
        let mut name = vec![0x00, 0x0B];
        name.extend_from_slice(&[1u8; 32]);
        let c = make_credential(&ek, &name, &[9u8; 32]).unwrap();
        // TPM2B_ID_OBJECT: size, TPM2B_DIGEST(32-byte HMAC), encIdentity (2 + 32 bytes).
        assert_eq!(c.credential_blob.len(), 2 + 2 + 32 + 34);
        assert_eq!(&c.credential_blob[..4], &[0, 68, 0, 32]);
        assert_eq!(c.encrypted_secret.len(), 2 + 256);
        assert!(make_credential(&ek, &name[..33], &[1]).is_err());
        assert!(make_credential(&ek, &name, &[]).is_err());
        assert!(make_credential(&ek, &name, &[0; 65]).is_err());
        let small = Rsa::generate(1024).unwrap();
        let small = PKey::public_key_from_der(&small.public_key_to_der().unwrap()).unwrap();
        assert!(make_credential(&small, &name, &[1]).is_err());
    }

    #[test]
    fn decrypt_in_software_round_trips() {
        // Play the TPM's part of TPM2_ActivateCredential in software.
        let rsa = Rsa::generate(2048).unwrap();
        let private = PKey::from_rsa(rsa.clone()).unwrap();
        let ek = PKey::public_key_from_der(&rsa.public_key_to_der().unwrap()).unwrap();
        let mut name = vec![0x00, 0x0B];
        name.extend_from_slice(&[3u8; 32]);
        let secret = b"0123456789abcdef0123456789abcdef";
        let c = make_credential(&ek, &name, secret).unwrap();

        let mut dec = openssl::encrypt::Decrypter::new(&private).unwrap();
        dec.set_rsa_padding(Padding::PKCS1_OAEP).unwrap();
        dec.set_rsa_oaep_md(MessageDigest::sha256()).unwrap();
        dec.set_rsa_mgf1_md(MessageDigest::sha256()).unwrap();
        dec.set_rsa_oaep_label(b"IDENTITY\0").unwrap();
        let enc = &c.encrypted_secret[2..];
        let mut seed = vec![0u8; dec.decrypt_len(enc).unwrap()];
        let n = dec.decrypt(enc, &mut seed).unwrap();
        seed.truncate(n);
        assert_eq!(seed.len(), 32);

        let blob = &c.credential_blob[2..];
        let (hmac, enc_identity) = (&blob[2..34], &blob[34..]);
        let hmac_key = kdfa_sha256(&seed, "INTEGRITY", &[], &[], 256).unwrap();
        let mut s = Signer::new(MessageDigest::sha256(), &PKey::hmac(&hmac_key).unwrap()).unwrap();
        s.update(enc_identity).unwrap();
        s.update(&name).unwrap();
        assert_eq!(s.sign_to_vec().unwrap(), hmac);
        let key = kdfa_sha256(&seed, "STORAGE", &name, &[], 128).unwrap();
        let plain = openssl::symm::decrypt(Cipher::aes_128_cfb128(), &key, Some(&[0u8; 16]), enc_identity).unwrap();
        assert_eq!(&plain[..2], &[0, 32]);
        assert_eq!(&plain[2..], secret);
    }
}
