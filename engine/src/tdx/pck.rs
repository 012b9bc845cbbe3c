//! The SGX extension of Intel's PCK certificates (Intel "SGX PCK Certificate and Certificate Revocation
//! List Profile Specification", §1.5 "Intel SGX PCK Certificate: Intel SGX Extensions"), OID
//! 1.2.840.113741.1.13.1: a SEQUENCE of `{ OID, value }` pairs.
//!
//! | arc under .13.1 | name | value |
//! |---|---|---|
//! | .1 | PPID | OCTET STRING (16) |
//! | .2 | TCB | SEQUENCE of `{ OID, value }`: .2.1–.2.16 SGX TCB component SVNs (INTEGER 0–255), .2.17 PCESVN (INTEGER 0–65535), .2.18 CPUSVN (OCTET STRING 16) |
//! | .3 | PCE-ID | OCTET STRING (2) |
//! | .4 | FMSPC | OCTET STRING (6) |
//! | .5 | SGX Type | ENUMERATED (0 standard, 1 scalable, 2 scalable with integrity) |
//! | .6 | Platform Instance ID | OCTET STRING (16), Platform CA certificates only |
//! | .7 | Configuration | SEQUENCE of `{ OID, BOOLEAN }`: .7.1 dynamic platform, .7.2 cached keys, .7.3 SMT enabled |
//!
//! PPID, TCB, PCE-ID, FMSPC and SGX Type are required; a duplicate of any entry is an error. The CPUSVN
//! must equal the 16 component SVNs in order (it is their concatenation, and TCB matching reads the
//! components; a certificate where the two disagree is malformed).

use crate::der::{Reader, tag};
use crate::error::Error;
use crate::x509::Certificate;

/// 1.2.840.113741.1.13.1, DER content octets.
pub(crate) const SGX_EXTENSION_OID: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF8, 0x4D, 0x01, 0x0D, 0x01];
/// Most entries walked in the SGX extension or one of its nested sequences (the profile defines 7 and 18).
pub const MAX_SGX_EXTENSION_ENTRIES: usize = 32;
const ENUMERATED: u8 = 0x0A;

/// The platform facts a PCK certificate carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgxExtensions {
    /// PPID (platform provisioning id).
    pub ppid: [u8; 16],
    /// SGX TCB components 1–16.
    pub tcb_components: [u8; 16],
    /// PCESVN.
    pub pce_svn: u16,
    /// CPUSVN.
    pub cpu_svn: [u8; 16],
    /// PCE-ID.
    pub pce_id: [u8; 2],
    /// FMSPC (family-model-stepping-platform-custom SKU): selects the TCB Info.
    pub fmspc: [u8; 6],
    /// SGX type.
    pub sgx_type: u8,
    /// Platform instance id (PCK certificates issued by the Platform CA).
    pub platform_instance_id: Option<[u8; 16]>,
    /// Configuration: (dynamic platform, cached keys, SMT enabled), each when present.
    pub configuration: [Option<bool>; 3],
}

fn bad(field: &'static str, reason: &'static str) -> Error {
    Error::SgxExtension { field, reason }
}

/// Walks a SEQUENCE of `{ OID, value }`, calling `f(last_arc_path_after_prefix, value_tlv_reader)`.
fn entries<'a>(
    value: &'a [u8],
    prefix: &[u8],
    field: &'static str,
    mut f: impl FnMut(&'a [u8], &mut Reader<'a>) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut outer = Reader::new(value, "SGX extension");
    let mut seq = outer.sequence("SGX extension")?;
    outer.finish()?;
    let mut n = 0;
    while !seq.is_empty() {
        n += 1;
        if n > MAX_SGX_EXTENSION_ENTRIES {
            return Err(Error::LimitExceeded {
                what: "SGX extension entries",
                limit: MAX_SGX_EXTENSION_ENTRIES,
                found: n,
            });
        }
        let mut e = seq.sequence("SGX extension entry")?;
        let oid = e.read(tag::OID)?;
        let arc = oid.strip_prefix(prefix).ok_or(bad(field, "entry OID outside the SGX arc"))?;
        f(arc, &mut e)?;
        e.finish()?;
    }
    Ok(())
}

fn octets<const N: usize>(r: &mut Reader<'_>, field: &'static str) -> Result<[u8; N], Error> {
    r.read(tag::OCTET_STRING)?.try_into().map_err(|_| bad(field, "wrong length"))
}

fn uint(r: &mut Reader<'_>, field: &'static str, max: u64) -> Result<u64, Error> {
    let v = r.small_uint().map_err(|_| bad(field, "not a non-negative INTEGER"))?;
    if v > max {
        return Err(bad(field, "value out of range"));
    }
    Ok(v)
}

fn set<T>(slot: &mut Option<T>, v: T, field: &'static str) -> Result<(), Error> {
    if slot.replace(v).is_some() {
        return Err(bad(field, "duplicate entry"));
    }
    Ok(())
}

impl SgxExtensions {
    /// Decodes the SGX extension of a PCK certificate.
    pub fn from_cert(cert: &Certificate<'_>) -> Result<Self, Error> {
        let mut found = None;
        for ext in cert.extensions() {
            let ext = ext?;
            if ext.oid == SGX_EXTENSION_OID {
                set(&mut found, ext.value, "SGX extension")?;
            }
        }
        Self::from_der(found.ok_or(bad("SGX extension", "missing from the PCK certificate"))?)
    }

    /// Decodes the extension value (the contents of extnValue).
    pub fn from_der(value: &[u8]) -> Result<Self, Error> {
        let (mut ppid, mut tcb, mut pce_id, mut fmspc, mut sgx_type, mut piid) = (None, None, None, None, None, None);
        let mut configuration = [None; 3];
        let mut config_seen = false;
        entries(value, SGX_EXTENSION_OID, "SGX extension", |arc, r| match arc {
            [0x01] => set(&mut ppid, octets::<16>(r, "PPID")?, "PPID"),
            [0x02] => set(&mut tcb, Self::tcb(r.read_tlv(tag::SEQUENCE)?.1)?, "TCB"),
            [0x03] => set(&mut pce_id, octets::<2>(r, "PCE-ID")?, "PCE-ID"),
            [0x04] => set(&mut fmspc, octets::<6>(r, "FMSPC")?, "FMSPC"),
            [0x05] => {
                let v = r.read(ENUMERATED)?;
                let t = match v {
                    [t @ 0..=2] => *t,
                    _ => return Err(bad("SGX Type", "not 0, 1 or 2")),
                };
                set(&mut sgx_type, t, "SGX Type")
            }
            [0x06] => set(&mut piid, octets::<16>(r, "Platform Instance ID")?, "Platform Instance ID"),
            [0x07] => {
                if config_seen {
                    return Err(bad("Configuration", "duplicate entry"));
                }
                config_seen = true;
                let tlv = r.read_tlv(tag::SEQUENCE)?.1;
                let mut prefix = [0u8; 16];
                prefix[..SGX_EXTENSION_OID.len()].copy_from_slice(SGX_EXTENSION_OID);
                prefix[SGX_EXTENSION_OID.len()] = 0x07;
                entries(tlv, &prefix[..=SGX_EXTENSION_OID.len()], "Configuration", |arc, r| {
                    if let [i @ 0x01..=0x03] = arc {
                        let b = r.boolean()?;
                        set(&mut configuration[usize::from(i - 1)], b, "Configuration")
                    } else {
                        r.read_any().map(|_| ())
                    }
                })
            }
            // Later profile versions may add entries; they are not interpreted.
            _ => r.read_any().map(|_| ()),
        })?;
        let (tcb_components, pce_svn, cpu_svn) = tcb.ok_or(bad("TCB", "missing"))?;
        Ok(Self {
            ppid: ppid.ok_or(bad("PPID", "missing"))?,
            tcb_components,
            pce_svn,
            cpu_svn,
            pce_id: pce_id.ok_or(bad("PCE-ID", "missing"))?,
            fmspc: fmspc.ok_or(bad("FMSPC", "missing"))?,
            sgx_type: sgx_type.ok_or(bad("SGX Type", "missing"))?,
            platform_instance_id: piid,
            configuration,
        })
    }

    /// The TCB entry: 16 components, PCESVN, CPUSVN.
    fn tcb(tlv: &[u8]) -> Result<([u8; 16], u16, [u8; 16]), Error> {
        let mut comps = [None; 16];
        let (mut pce_svn, mut cpu_svn) = (None, None);
        let mut prefix = [0u8; 16];
        prefix[..SGX_EXTENSION_OID.len()].copy_from_slice(SGX_EXTENSION_OID);
        prefix[SGX_EXTENSION_OID.len()] = 0x02;
        entries(tlv, &prefix[..=SGX_EXTENSION_OID.len()], "TCB", |arc, r| match arc {
            [i @ 0x01..=0x10] => set(&mut comps[usize::from(i - 1)], uint(r, "TCB component", 255)? as u8, "TCB"),
            [0x11] => set(&mut pce_svn, uint(r, "PCESVN", 0xFFFF)? as u16, "PCESVN"),
            [0x12] => set(&mut cpu_svn, octets::<16>(r, "CPUSVN")?, "CPUSVN"),
            _ => r.read_any().map(|_| ()),
        })?;
        let mut out = [0u8; 16];
        for (o, c) in out.iter_mut().zip(comps) {
            *o = c.ok_or(bad("TCB", "a component SVN is missing"))?;
        }
        let cpu_svn = cpu_svn.ok_or(bad("CPUSVN", "missing"))?;
        if cpu_svn != out {
            return Err(bad("CPUSVN", "differs from the component SVNs"));
        }
        Ok((out, pce_svn.ok_or(bad("PCESVN", "missing"))?, cpu_svn))
    }
}
