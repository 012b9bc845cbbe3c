//! Google's instance-information extension (OID 1.3.6.1.4.1.11129.2.1.21) of GCE AK and EK certificates.
//!
//! Google's CA writes into every vTPM AK certificate which VM the key belongs to. The extension value is
//! a DER SEQUENCE (field order as the certificates carry it; names as go-tpm-tools' `GCEInstanceInfo`):
//!
//! ```text
//! GceInstanceInfo ::= SEQUENCE {
//!     zone            UTF8String,            -- e.g. "us-central1-a"
//!     projectNumber   INTEGER,
//!     projectId       UTF8String,            -- e.g. "my-project" or "google.com:my-project"
//!     instanceId      INTEGER,
//!     instanceName    UTF8String,
//!     securityProperties [0] EXPLICIT SEQUENCE {
//!         securityVersion [0] EXPLICIT INTEGER OPTIONAL,
//!         isProduction    [1] EXPLICIT BOOLEAN OPTIONAL,
//!         ...             [2]..[n] EXPLICIT BOOLEAN OPTIONAL  -- further flags, meaning unpublished
//!     } OPTIONAL
//! }
//! ```
//!
//! The values are signed by Google's CA together with the AK, so once the certificate path verifies they
//! identify the VM. The copy go-tpm-tools may also put in the `Attestation` message (field 4) is not
//! signed; the verifier only compares it with this one.

use crate::der::{Reader, tag};
use crate::error::Error;

/// 1.3.6.1.4.1.11129.2.1.21 (Google's arc 11129 = `D6 79`), DER content octets.
pub(crate) const INSTANCE_INFO_OID: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0xD6, 0x79, 0x02, 0x01, 0x15];

/// UTF8String tag (X.680 §41).
const UTF8_STRING: u8 = 0x0C;

/// Most security-property flags read after `securityVersion` and `isProduction` (`[2]`..`[n]`).
pub const MAX_SECURITY_FLAGS: usize = 8;

/// The security properties Google's CA records for the instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SecurityProperties {
    /// `[0]` securityVersion.
    pub security_version: Option<u64>,
    /// `[1]` isProduction: the vTPM runs on Google's production infrastructure.
    pub is_production: Option<bool>,
    /// `[2]`.. further flags, by tag number minus two (`None` when absent). Their meaning is not published.
    pub flags: [Option<bool>; MAX_SECURITY_FLAGS],
}

/// The decoded instance information, borrowing the certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InstanceInfo<'a> {
    /// The zone, e.g. `us-central1-a`.
    pub zone: &'a str,
    /// The project number.
    pub project_number: u64,
    /// The project id.
    pub project_id: &'a str,
    /// The instance id.
    pub instance_id: u64,
    /// The instance name.
    pub instance_name: &'a str,
    /// The security properties, when the certificate carries them.
    pub security: Option<SecurityProperties>,
}

fn bad(reason: &'static str) -> Error {
    Error::GceInstanceInfo { reason }
}

fn utf8<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<&'a str, Error> {
    let v = r.read(UTF8_STRING).map_err(|_| bad(what))?;
    core::str::from_utf8(v).map_err(|_| bad("a string is not valid UTF-8"))
}

impl<'a> InstanceInfo<'a> {
    /// Decodes the extension value (the contents of the extnValue OCTET STRING).
    pub fn from_der(value: &'a [u8]) -> Result<Self, Error> {
        let mut outer = Reader::new(value, "GceInstanceInfo");
        let mut seq = outer.sequence("GceInstanceInfo").map_err(|_| bad("not a SEQUENCE"))?;
        outer.finish().map_err(|_| bad("bytes after the SEQUENCE"))?;
        let zone = utf8(&mut seq, "zone is not a UTF8String")?;
        let project_number = seq.small_uint().map_err(|_| bad("projectNumber is not a non-negative INTEGER"))?;
        let project_id = utf8(&mut seq, "projectId is not a UTF8String")?;
        let instance_id = seq.small_uint().map_err(|_| bad("instanceId is not a non-negative INTEGER"))?;
        let instance_name = utf8(&mut seq, "instanceName is not a UTF8String")?;
        let security = match seq.read_optional(tag::context(0)).map_err(|_| bad("malformed securityProperties"))? {
            Some(v) => Some(security_properties(v)?),
            None => None,
        };
        seq.finish().map_err(|_| bad("unexpected field after securityProperties"))?;
        Ok(Self { zone, project_number, project_id, instance_id, instance_name, security })
    }
}

fn security_properties(explicit: &[u8]) -> Result<SecurityProperties, Error> {
    let mut wrapper = Reader::new(explicit, "securityProperties");
    let mut seq = wrapper.sequence("securityProperties").map_err(|_| bad("securityProperties is not a SEQUENCE"))?;
    wrapper.finish().map_err(|_| bad("bytes after securityProperties"))?;
    let mut out = SecurityProperties::default();
    let mut last: Option<u8> = None;
    while !seq.is_empty() {
        let t = seq.peek_tag().unwrap_or(0);
        // Context-specific, constructed ([n] EXPLICIT), increasing tag numbers (DER order of a SEQUENCE).
        if t & 0xE0 != 0xA0 {
            return Err(bad("securityProperties member is not an [n] EXPLICIT field"));
        }
        let n = t & 0x1F;
        if last.is_some_and(|l| n <= l) {
            return Err(bad("securityProperties fields out of order or repeated"));
        }
        last = Some(n);
        let inner = seq.read(t).map_err(|_| bad("malformed securityProperties field"))?;
        let mut r = Reader::new(inner, "securityProperties field");
        match n {
            0 => out.security_version = Some(r.small_uint().map_err(|_| bad("securityVersion is not an INTEGER"))?),
            1 => out.is_production = Some(r.boolean().map_err(|_| bad("isProduction is not a BOOLEAN"))?),
            n => {
                let slot = out.flags.get_mut(usize::from(n) - 2).ok_or(Error::LimitExceeded {
                    what: "GCE security property flags",
                    limit: MAX_SECURITY_FLAGS,
                    found: usize::from(n) - 1,
                })?;
                *slot = Some(r.boolean().map_err(|_| bad("a security flag is not a BOOLEAN"))?);
            }
        }
        r.finish().map_err(|_| bad("bytes after a securityProperties value"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extension value of the AK certificate in go-tpm-tools' `gce-cos-85-no-nonce.pb` (a public test
    /// vector: the VM `cos-test` in a Google test project).
    const COS85: &str = "306a0c0d75732d63656e7472616c312d6102051b5a475c690c1c676f6f676c652e636f6d3a7775616c652d6763702d7465\
                         7374696e6702085e53e3fbbf8306c50c08636f732d74657374a020301ea003020100a1030101ffa203010100a30301\
                         0100a403010100a503010100";

    #[test]
    fn decodes_a_real_extension() {
        let der = hex::decode(COS85).unwrap();
        let info = InstanceInfo::from_der(&der).unwrap();
        assert_eq!(info.zone, "us-central1-a");
        assert_eq!(info.project_id, "google.com:wuale-gcp-testing");
        assert_eq!(info.project_number, 0x1B_5A47_5C69);
        assert_eq!(info.instance_id, 0x5E53_E3FB_BF83_06C5);
        assert_eq!(info.instance_name, "cos-test");
        let sec = info.security.unwrap();
        assert_eq!(sec.security_version, Some(0));
        assert_eq!(sec.is_production, Some(true));
        assert_eq!(sec.flags[..4], [Some(false); 4]);
        assert_eq!(sec.flags[4..], [None; 4]);
    }

    #[test]
    fn refuses_malformed_values() {
        let der = hex::decode(COS85).unwrap();
        // Every truncation fails (the outer length no longer matches), and so does trailing data.
        for n in 0..der.len() {
            assert!(InstanceInfo::from_der(&der[..n]).is_err(), "truncated at {n}");
        }
        let mut long = der.clone();
        long.push(0);
        assert!(InstanceInfo::from_der(&long).is_err());
        // A negative project number; a zone that is not a UTF8String.
        let mut neg = der.clone();
        neg[19] = 0x9B;
        assert!(InstanceInfo::from_der(&neg).is_err());
        let mut ia5 = der.clone();
        ia5[2] = 0x16;
        assert!(matches!(InstanceInfo::from_der(&ia5), Err(Error::GceInstanceInfo { .. })));
        // Minimal values: empty strings, zero numbers; security properties in order, then swapped.
        let ordered = hex::decode("301a0c000201000c000201000c00a00c300aa003020100a1030101ff").unwrap();
        let info = InstanceInfo::from_der(&ordered).unwrap();
        assert_eq!((info.zone, info.project_number, info.security.unwrap().is_production), ("", 0, Some(true)));
        let swapped = hex::decode("301a0c000201000c000201000c00a00c300aa1030101ffa003020100").unwrap();
        assert!(InstanceInfo::from_der(&swapped).is_err());
    }
}
