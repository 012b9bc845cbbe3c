//! EAR tokens: the engine's EAR claims set (`attest_engine::ear::claims`) signed as a JWT (RFC 7519, JWS
//! compact serialization, RFC 7515) with the user's EC key: ES256 for a P-256 key, ES384 for a P-384 key
//! (RFC 7518 §3.4: the signature is R ‖ S, each left-padded to the curve size, not DER).
//!
//! ```text
//! BASE64URL({"alg":"ES256","typ":"JWT"}) . BASE64URL(claims JSON) . BASE64URL(R ‖ S)
//! ```

use super::UsageError;
use base64::Engine as _;
use openssl::ec::EcKey;
use openssl::ecdsa::EcdsaSig;
use openssl::nid::Nid;
use openssl::pkey::Private;
use serde_json::{Value, json};
use std::path::Path;

/// A signing key for EAR tokens.
pub(crate) struct EarKey {
    key: EcKey<Private>,
    alg: &'static str,
    size: usize,
}

impl std::fmt::Debug for EarKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EarKey").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl EarKey {
    /// Reads a PEM EC private key (SEC 1 or PKCS #8) on P-256 or P-384.
    pub(crate) fn from_pem_file(path: &Path) -> Result<Self, UsageError> {
        let bad = |m: String| UsageError::new(format!("--ear-key {}: {m}", path.display()));
        let pem = super::input::read_file(path, "--ear-key")?;
        let pkey = openssl::pkey::PKey::private_key_from_pem(&pem).map_err(|_| bad("not a PEM private key".into()))?;
        let key = pkey.ec_key().map_err(|_| bad("not an EC key (ES256: P-256, ES384: P-384)".into()))?;
        let (alg, size) = match key.group().curve_name() {
            Some(Nid::X9_62_PRIME256V1) => ("ES256", 32),
            Some(Nid::SECP384R1) => ("ES384", 48),
            _ => return Err(bad("the curve is neither P-256 (ES256) nor P-384 (ES384)".into())),
        };
        Ok(Self { key, alg, size })
    }

    /// `claims` as a signed JWT.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, UsageError> {
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let header = json!({"alg": self.alg, "typ": "JWT"});
        let input = format!("{}.{}", b64(header.to_string().as_bytes()), b64(claims.to_string().as_bytes()));
        let digest = match self.alg {
            "ES256" => openssl::sha::sha256(input.as_bytes()).to_vec(),
            _ => openssl::sha::sha384(input.as_bytes()).to_vec(),
        };
        let sig = EcdsaSig::sign(&digest, &self.key).map_err(|e| UsageError::new(format!("signing the EAR: {e}")))?;
        let mut raw = vec![0u8; 2 * self.size];
        let (r, s) = (sig.r().to_vec(), sig.s().to_vec());
        raw[self.size - r.len()..self.size].copy_from_slice(&r);
        raw[2 * self.size - s.len()..].copy_from_slice(&s);
        Ok(format!("{input}.{}", b64(&raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_with_openssl() {
        for (nid, alg, size) in [(Nid::X9_62_PRIME256V1, "ES256", 32), (Nid::SECP384R1, "ES384", 48)] {
            let group = openssl::ec::EcGroup::from_curve_name(nid).unwrap();
            let key = EcKey::generate(&group).unwrap();
            let ear = EarKey { key: key.clone(), alg, size };
            let token = ear.sign(&json!({"iat": 1})).unwrap();
            let parts: Vec<&str> = token.split('.').collect();
            assert_eq!(parts.len(), 3);
            let d = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap();
            let header: Value = serde_json::from_slice(&d(parts[0])).unwrap();
            assert_eq!(header["alg"], alg);
            let raw = d(parts[2]);
            assert_eq!(raw.len(), 2 * size);
            let sig = EcdsaSig::from_private_components(
                openssl::bn::BigNum::from_slice(&raw[..size]).unwrap(),
                openssl::bn::BigNum::from_slice(&raw[size..]).unwrap(),
            )
            .unwrap();
            let input = format!("{}.{}", parts[0], parts[1]);
            let digest = if size == 32 {
                openssl::sha::sha256(input.as_bytes()).to_vec()
            } else {
                openssl::sha::sha384(input.as_bytes()).to_vec()
            };
            assert!(sig.verify(&digest, &key).unwrap());
            // Flipping a claim byte breaks it.
            let tampered = format!("{}.{}x", parts[0], parts[1]);
            let digest = openssl::sha::sha256(tampered.as_bytes());
            assert!(size == 48 || !sig.verify(&digest, &key).unwrap());
        }
    }
}
