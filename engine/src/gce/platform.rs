//! The GCE platform facts carried by a verified event log: the virtual firmware version
//! (`EV_S_CRTM_VERSION`) and the confidential-computing technology (`EV_NONHOST_INFO`, "GCE NonHostInfo").
//!
//! Google's virtual firmware measures both into PCR 0 before the PCR 0 separator. The event type is not
//! covered by any digest, so an event counts only if its digest (in the bank that was replayed against a
//! verified quote) is the hash of its data, and only events before the first PCR 0 separator count. An
//! event that carries separator data under another type, or a separator whose digest is not the hash of
//! `00000000`/`FFFFFFFF`, makes the log unusable (the "event log disclosure" pitfall: an attacker relabels
//! a measured event to hide or forge a separator). Google documents the same rules in go-tpm-tools.
//!
//! ```text
//! EV_S_CRTM_VERSION  data = UTF-16LE "GCE Virtual Firmware v<N>" NUL
//! EV_NONHOST_INFO    data = "GCE NonHostInfo\0" (16 bytes) ‖ technology (1 byte) ‖ reserved (15 bytes)
//! ```

use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::Error;
use crate::tpm::eventlog::{AlgorithmId, EventLog, EventType};

/// The signature that starts a GCE NonHostInfo event.
pub const NONHOST_INFO_SIGNATURE: &[u8; 16] = b"GCE NonHostInfo\0";

/// The confidential-computing technology a GCE VM runs under (go-tpm-tools `GCEConfidentialTechnology`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfidentialTechnology {
    /// A Shielded VM without memory encryption (0).
    None,
    /// AMD SEV (1).
    AmdSev,
    /// AMD SEV-ES (2).
    AmdSevEs,
    /// AMD SEV-SNP (4).
    AmdSevSnp,
    /// Intel TDX (5).
    IntelTdx,
}

impl ConfidentialTechnology {
    /// The value of the NonHostInfo technology byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::None),
            1 => Some(Self::AmdSev),
            2 => Some(Self::AmdSevEs),
            4 => Some(Self::AmdSevSnp),
            5 => Some(Self::IntelTdx),
            _ => None,
        }
    }

    /// A stable name ("amd-sev-snp").
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::AmdSev => "amd-sev",
            Self::AmdSevEs => "amd-sev-es",
            Self::AmdSevSnp => "amd-sev-snp",
            Self::IntelTdx => "intel-tdx",
        }
    }
}

/// Platform facts read from the verified log's PCR 0 events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PlatformState<'a> {
    /// The GCE virtual firmware version, when the S-CRTM version string is Google's.
    pub gce_firmware_version: Option<u32>,
    /// The raw S-CRTM version event data (any vendor), when measured.
    #[serde(skip)]
    pub scrtm_version: Option<&'a [u8]>,
    /// The technology from the NonHostInfo event; `None` when the log has no such event.
    pub technology: Option<ConfidentialTechnology>,
}

/// Reads the platform facts from `log`'s PCR 0 events, using the digests of `bank` (which the caller has
/// replayed against a verified quote).
pub fn platform_state<'a>(
    provider: &CryptoProvider,
    log: &EventLog<'a>,
    bank: HashAlgorithm,
) -> Result<PlatformState<'a>, Error> {
    let alg = AlgorithmId::from_hash(bank);
    let separators = [provider.digests.digest(bank, &[&[0u8; 4]]), provider.digests.digest(bank, &[&[0xFFu8; 4]])];
    let mut out = PlatformState::default();
    for event in log.events() {
        if event.pcr_index() != 0 || event.event_type() == EventType::EV_NO_ACTION {
            continue;
        }
        let digest =
            event.digest(alg).ok_or(Error::EventLog { offset: event.offset(), reason: "no digest for the bank" })?;
        let verified = provider.digests.digest(bank, &[event.data()]).as_bytes() == digest;
        let looks_like_separator = separators.iter().any(|s| s.as_bytes() == digest);
        if event.event_type() == EventType::EV_SEPARATOR || looks_like_separator {
            let bad = |reason| Err(Error::EventLog { offset: event.offset(), reason });
            if event.event_type() != EventType::EV_SEPARATOR {
                return bad("PCR 0 event carries separator data under another event type");
            }
            if !verified || !matches!(event.data(), [0, 0, 0, 0] | [0xFF, 0xFF, 0xFF, 0xFF]) {
                return bad("PCR 0 separator is not the hash of 00000000 or FFFFFFFF");
            }
            // Nothing after the separator describes the platform.
            break;
        }
        if event.event_type() == EventType::EV_S_CRTM_VERSION {
            if !verified {
                return Err(Error::EventLog {
                    offset: event.offset(),
                    reason: "S-CRTM version digest is not the hash of its data",
                });
            }
            out.scrtm_version = Some(event.data());
            out.gce_firmware_version = gce_firmware_version(event.data());
        } else if event.event_type() == EventType::EV_NONHOST_INFO {
            if !verified {
                return Err(Error::EventLog {
                    offset: event.offset(),
                    reason: "NonHostInfo digest is not the hash of its data",
                });
            }
            if let Some(rest) = event.data().strip_prefix(NONHOST_INFO_SIGNATURE) {
                let byte = *rest.first().ok_or(Error::EventLog {
                    offset: event.offset(),
                    reason: "NonHostInfo lacks the technology byte",
                })?;
                out.technology = Some(ConfidentialTechnology::from_byte(byte).ok_or(Error::EventLog {
                    offset: event.offset(),
                    reason: "NonHostInfo names an unknown confidential technology",
                })?);
            }
        }
    }
    Ok(out)
}

/// Parses UTF-16LE `"GCE Virtual Firmware v<N>"` with a terminating NUL into N.
fn gce_firmware_version(data: &[u8]) -> Option<u32> {
    const PREFIX: &str = "GCE Virtual Firmware v";
    if !data.len().is_multiple_of(2) || data.len() > 128 {
        return None;
    }
    let mut units = data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    for expected in PREFIX.encode_utf16() {
        if units.next()? != expected {
            return None;
        }
    }
    let mut version: u32 = 0;
    let mut digits = 0;
    for u in units.by_ref() {
        match u {
            0 => return (digits > 0 && units.next().is_none()).then_some(version),
            0x30..=0x39 => {
                version = version.checked_mul(10)?.checked_add(u32::from(u - 0x30))?;
                digits += 1;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn firmware_version_strings() {
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v1\0")), Some(1));
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v20\0")), Some(20));
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v1")), None, "NUL required");
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v\0")), None);
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v1\0\0")), None);
        assert_eq!(gce_firmware_version(&utf16("EDK II\0")), None);
        assert_eq!(gce_firmware_version(&utf16("GCE Virtual Firmware v99999999999\0")), None, "overflow");
        assert_eq!(gce_firmware_version(&[0x47]), None);
    }

    #[test]
    fn technology_bytes() {
        assert_eq!(ConfidentialTechnology::from_byte(1), Some(ConfidentialTechnology::AmdSev));
        assert_eq!(ConfidentialTechnology::from_byte(3), None, "value 3 is reserved");
        assert_eq!(ConfidentialTechnology::from_byte(4).map(ConfidentialTechnology::name), Some("amd-sev-snp"));
    }
}
