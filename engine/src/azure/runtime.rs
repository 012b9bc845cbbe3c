//! The HCL runtime data ("variable data"): JSON claims whose SHA-256 the hardware report binds. It carries
//! the vTPM attestation key as a JWK with `kid` "HCLAkPub" (RFC 7517 / RFC 7518 §6.3 RSA keys).

use crate::error::Error;
use crate::tpm::AkPublic;
use base64::Engine as _;
use serde::Deserialize;

/// Largest runtime data accepted (Azure's NV index holds at most ~2 KiB of it today).
pub const MAX_RUNTIME_DATA: usize = 8 * 1024;
/// Largest RSA modulus accepted in a JWK (4096 bits).
pub const MAX_MODULUS: usize = 512;
/// Most keys in the `keys` array.
pub const MAX_KEYS: usize = 8;

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    keys: Vec<RawJwk<'a>>,
    #[serde(rename = "user-data", borrow, default)]
    user_data: Option<&'a str>,
    #[serde(rename = "vm-configuration", borrow, default)]
    vm_configuration: Option<RawVmConfiguration<'a>>,
}

/// The part of `vm-configuration` read here; the other claims (console, secure boot, TPM, time) are ignored.
#[derive(Deserialize)]
struct RawVmConfiguration<'a> {
    #[serde(rename = "vmUniqueId", borrow, default)]
    vm_unique_id: Option<&'a str>,
}

#[derive(Deserialize)]
struct RawJwk<'a> {
    #[serde(borrow)]
    kid: &'a str,
    #[serde(borrow)]
    kty: &'a str,
    #[serde(borrow, default)]
    n: Option<&'a str>,
    #[serde(borrow, default)]
    e: Option<&'a str>,
}

/// An RSA public key decoded from a JWK, held inline.
#[derive(Clone, Copy)]
pub struct RsaJwk {
    n: [u8; MAX_MODULUS],
    n_len: usize,
    e: u32,
}

impl core::fmt::Debug for RsaJwk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RsaJwk").field("bits", &(self.n_len * 8)).field("e", &self.e).finish_non_exhaustive()
    }
}

impl RsaJwk {
    /// The key as an attestation key.
    pub fn ak_public(&self) -> AkPublic<'_> {
        AkPublic::Rsa { modulus: &self.n[..self.n_len], exponent: self.e }
    }
}

/// Parsed runtime data.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeData {
    ak: RsaJwk,
    user_data: Option<[u8; 64]>,
    vm_unique_id: Option<[u8; 16]>,
}

/// Decodes a GUID in its text form (`8-4-4-4-12` hex digits, either case) into its 16 bytes as written
/// (text order, not Microsoft's mixed-endian layout: only equality matters here).
fn parse_guid(text: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = text.split('-').collect();
    if groups.iter().map(|g| g.len()).collect::<Vec<_>>() != [8, 4, 4, 4, 12] {
        return None;
    }
    let mut out = [0u8; 16];
    hex::decode_to_slice(groups.concat(), &mut out).ok()?;
    Some(out)
}

fn bad(reason: &'static str) -> Error {
    Error::RuntimeData { reason }
}

impl RuntimeData {
    /// Parses the JSON and decodes the "HCLAkPub" RSA key.
    pub fn parse(json: &[u8]) -> Result<Self, Error> {
        if json.len() > MAX_RUNTIME_DATA {
            return Err(Error::LimitExceeded { what: "HCL runtime data", limit: MAX_RUNTIME_DATA, found: json.len() });
        }
        let raw: Raw<'_> = serde_json::from_slice(json).map_err(|_| bad("not a JSON object with a keys array"))?;
        if raw.keys.len() > MAX_KEYS {
            return Err(Error::LimitExceeded { what: "runtime data keys", limit: MAX_KEYS, found: raw.keys.len() });
        }
        let mut found = raw.keys.iter().filter(|k| k.kid == "HCLAkPub");
        let jwk = found.next().ok_or(bad("no HCLAkPub key"))?;
        if found.next().is_some() {
            return Err(bad("more than one HCLAkPub key"));
        }
        if jwk.kty != "RSA" {
            return Err(bad("HCLAkPub is not an RSA key"));
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut n = [0u8; MAX_MODULUS];
        let n_len = b64
            .decode_slice(jwk.n.ok_or(bad("HCLAkPub lacks n"))?.as_bytes(), &mut n)
            .map_err(|_| bad("HCLAkPub n is not base64url of at most 4096 bits"))?;
        if !matches!(n_len, 256 | 384 | 512) || n[0] == 0 {
            return Err(bad("HCLAkPub modulus must be 2048, 3072 or 4096 bits"));
        }
        let mut e_buf = [0u8; 8];
        let e_len = b64
            .decode_slice(jwk.e.ok_or(bad("HCLAkPub lacks e"))?.as_bytes(), &mut e_buf)
            .map_err(|_| bad("HCLAkPub e is not base64url"))?;
        if e_len == 0 || e_len > 4 || e_buf[0] == 0 {
            return Err(bad("HCLAkPub exponent out of range"));
        }
        let e = e_buf[..e_len].iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
        let user_data = match raw.user_data {
            None => None,
            Some(hex) => {
                let mut out = [0u8; 64];
                hex::decode_to_slice(hex, &mut out).map_err(|_| bad("user-data is not 64 bytes of hex"))?;
                Some(out)
            }
        };
        let vm_unique_id = match raw.vm_configuration.and_then(|c| c.vm_unique_id) {
            None => None,
            Some(text) => Some(parse_guid(text).ok_or(bad("vmUniqueId is not a GUID"))?),
        };
        Ok(Self { ak: RsaJwk { n, n_len, e }, user_data, vm_unique_id })
    }

    /// The vTPM attestation key.
    pub fn ak(&self) -> &RsaJwk {
        &self.ak
    }

    /// The "user-data" claim (64 bytes), when present (TDX runtime data carries it).
    pub fn user_data(&self) -> Option<&[u8; 64]> {
        self.user_data.as_ref()
    }

    /// `vm-configuration.vmUniqueId`: the VM's identity as Azure's paravisor states it (a GUID, as 16 bytes in
    /// text order), when present.
    pub fn vm_unique_id(&self) -> Option<&[u8; 16]> {
        self.vm_unique_id.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids() {
        assert_eq!(
            parse_guid("B6C98C3B-4EC7-4DA6-BD2F-7D98D20D7B75").map(hex::encode).as_deref(),
            Some("b6c98c3b4ec74da6bd2f7d98d20d7b75")
        );
        assert_eq!(
            parse_guid("b6c98c3b-4ec7-4da6-bd2f-7d98d20d7b75"),
            parse_guid("B6C98C3B-4EC7-4DA6-BD2F-7D98D20D7B75")
        );
        for bad in [
            "",
            "B6C98C3B4EC74DA6BD2F7D98D20D7B75",
            "B6C98C3B-4EC7-4DA6-BD2F-7D98D20D7B7",
            "G6C98C3B-4EC7-4DA6-BD2F-7D98D20D7B75",
            "B6C98C3B-4EC7-4DA6-BD2F-7D98D20D7B75-",
        ] {
            assert_eq!(parse_guid(bad), None, "{bad:?}");
        }
    }
}
