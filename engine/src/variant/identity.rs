//! The node a validated document speaks for: what the verifier may bind a node's disk, name and role to.
//!
//! Which part of the evidence identifies the node is the variant table's `identity` column
//! ([`IdentitySource`], with the reasons in [`super::TABLE`]'s docs); this module turns a [`Validated`] into
//! that identity in one place, [`Validated::node_identity`]. Everything it reads was verified (a registered
//! or report-bound AK, runtime data the hardware report binds, Google's AK certificate, Intel's PCK
//! certificate); nothing comes from a request field.
//!
//! Text form: `<prefix>:<value>` ([`IdentitySource::prefix`]), lower-case, at most
//! [`MAX_IDENTITY_TEXT`] bytes:
//!
//! | source | text |
//! |---|---|
//! | registered AK | `ak:<hex SHA-256 of the AK's TPMT_PUBLIC>` |
//! | report-bound AK | `snp-ak:<hex SHA-256 of the AK's TPMT_PUBLIC>` |
//! | Azure VM id | `azure-vm:<vmUniqueId, lower-case GUID>` |
//! | GCE instance | `gce:<project number>/<instance id>` |
//! | TDX platform | `tdx-ppid:<hex PPID>` |

use super::Validated;
use super::table::IdentitySource;
use crate::error::Error;
use core::fmt;

/// Longest text form of a [`NodeIdentity`] accepted by [`NodeIdentity::parse`] (the longest form produced is
/// `snp-ak:` plus 64 hex digits, 71 bytes).
pub const MAX_IDENTITY_TEXT: usize = 128;

/// What identifies a node in its verified evidence.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeIdentity {
    text: String,
}

impl NodeIdentity {
    fn new(source: IdentitySource, value: &str) -> NodeIdentity {
        NodeIdentity { text: format!("{}:{value}", source.prefix()) }
    }

    /// Where the identity comes from.
    pub fn source(&self) -> IdentitySource {
        let prefix = self.text.split_once(':').map_or("", |(p, _)| p);
        SOURCES.into_iter().find(|s| s.prefix() == prefix).unwrap_or(IdentitySource::RegisteredAk)
    }

    /// The text form (`<prefix>:<value>`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Parses the text form: a known prefix, then 1.. characters of `[0-9a-f/-]`; `None` otherwise (also
    /// above [`MAX_IDENTITY_TEXT`] bytes).
    pub fn parse(text: &str) -> Option<NodeIdentity> {
        if text.len() > MAX_IDENTITY_TEXT {
            return None;
        }
        let (prefix, value) = text.split_once(':')?;
        let known = SOURCES.iter().any(|s| s.prefix() == prefix);
        let charset = value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'/' || b == b'-');
        (known && !value.is_empty() && charset).then(|| NodeIdentity { text: text.to_owned() })
    }
}

const SOURCES: [IdentitySource; 5] = [
    IdentitySource::RegisteredAk,
    IdentitySource::HclVmId,
    IdentitySource::ReportBoundAk,
    IdentitySource::ProviderInstance,
    IdentitySource::TdxPlatform,
];

impl fmt::Display for NodeIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn guid_text(b: &[u8; 16]) -> String {
    let h = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

impl Validated<'_> {
    /// The node this document speaks for, from the part of the verified evidence the variant's `identity`
    /// column names. [`Error::MissingEvidence`] when the evidence lacks it (e.g. Azure runtime data without
    /// `vmUniqueId`): a verifier that binds secrets to identities must then refuse.
    pub fn node_identity(&self) -> Result<NodeIdentity, Error> {
        let source = self.variant.info().identity;
        let value = match source {
            IdentitySource::RegisteredAk | IdentitySource::ReportBoundAk => {
                hex::encode(self.ak_digest.ok_or(Error::MissingEvidence { what: "the AK (node identity)" })?)
            }
            IdentitySource::HclVmId => guid_text(
                self.vm_id
                    .as_ref()
                    .ok_or(Error::MissingEvidence { what: "vmUniqueId in the HCL runtime data (node identity)" })?,
            ),
            IdentitySource::ProviderInstance => {
                let i = self
                    .instance
                    .as_ref()
                    .ok_or(Error::MissingEvidence { what: "the GCE instance information (node identity)" })?;
                format!("{}/{}", i.project_number, i.instance_id)
            }
            IdentitySource::TdxPlatform => hex::encode(
                self.td.as_ref().ok_or(Error::MissingEvidence { what: "the TD quote (node identity)" })?.pck().ppid,
            ),
        };
        Ok(NodeIdentity::new(source, &value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_parse_and_refuse() {
        let ak = NodeIdentity::new(IdentitySource::RegisteredAk, &"ab".repeat(32));
        assert_eq!(NodeIdentity::parse(ak.as_str()), Some(ak.clone()));
        assert_eq!(ak.source(), IdentitySource::RegisteredAk);
        let vm = NodeIdentity::new(IdentitySource::HclVmId, &guid_text(&[0xb6; 16]));
        assert_eq!(NodeIdentity::parse(vm.as_str()).map(|v| v.source()), Some(IdentitySource::HclVmId));
        let gce = NodeIdentity::new(IdentitySource::ProviderInstance, "1234/5678");
        assert_eq!(NodeIdentity::parse(gce.as_str()), Some(gce));
        for bad in ["", "ak:", "ak", "xx:ab", "ak:AB", "ak:ab cd", "ak:ab\n", &format!("ak:{}", "a".repeat(200))] {
            assert_eq!(NodeIdentity::parse(bad), None, "{bad:?}");
        }
        for s in SOURCES {
            assert!(s.prefix().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
    }
}
