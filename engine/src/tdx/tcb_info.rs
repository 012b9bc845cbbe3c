//! TCB Info v3 for TDX (Intel "PCS API v4", `GET /tdx/certification/v4/tcb`, the `tcbInfo` object; id
//! `"TDX"`, version 3), decoded into fixed-width values for allocation-free TCB matching.
//!
//! Only the decoding lives here; the signature over the exact JSON text is verified by the collateral
//! verifier ([`super::collateral`]), and matching by [`super::tcb`].
//!
//! | field | meaning |
//! |---|---|
//! | `issueDate`, `nextUpdate` | validity window (RFC 3339 UTC) |
//! | `fmspc`, `pceId` | the platform the TCB Info applies to (hex) |
//! | `tdxModule` | `mrsigner` (48 bytes), `attributes` / `attributesMask` (8 bytes) of the TDX module when `TEE_TCB_SVN[1]` = 0 |
//! | `tdxModuleIdentities` | per module major version (`id` `"TDX_<major, 2 hex digits>"`): signer, attributes, and `tcbLevels` keyed by module ISVSVN (`TEE_TCB_SVN[0]`) |
//! | `tcbLevels` | sorted from the newest: 16 SGX components, PCESVN, 16 TDX components, `tcbDate`, `tcbStatus`, `advisoryIDs` |

use super::status::TcbStatus;
use crate::error::Error;
use crate::time::UnixTime;
use serde::Deserialize;

/// Most TCB levels accepted in one TCB Info or QE Identity (real ones list 3–20).
pub const MAX_TCB_LEVELS: usize = 128;
/// Most TDX module identities in one TCB Info (real ones list 2).
pub const MAX_TDX_MODULE_IDENTITIES: usize = 16;
/// Most advisory IDs on one TCB level (real levels list up to ≈30).
pub const MAX_ADVISORY_IDS: usize = 128;
/// Longest advisory ID accepted ("INTEL-SA-00837" is 14 characters).
pub const MAX_ADVISORY_ID_LEN: usize = 32;

pub(crate) fn bad(what: &'static str, reason: &'static str) -> Error {
    Error::Collateral { what, reason }
}

pub(crate) fn hex_array<const N: usize>(s: &str, what: &'static str) -> Result<[u8; N], Error> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).map_err(|_| bad(what, "hex field of the wrong length"))?;
    Ok(out)
}

pub(crate) fn time(s: &str, what: &'static str) -> Result<UnixTime, Error> {
    UnixTime::parse(s).ok_or(bad(what, "date is not RFC 3339 UTC (YYYY-MM-DDTHH:MM:SSZ)"))
}

pub(crate) fn advisories(ids: Vec<String>, what: &'static str) -> Result<Box<[Box<str>]>, Error> {
    if ids.len() > MAX_ADVISORY_IDS {
        return Err(Error::LimitExceeded {
            what: "advisory IDs per TCB level",
            limit: MAX_ADVISORY_IDS,
            found: ids.len(),
        });
    }
    if ids.iter().any(|i| i.len() > MAX_ADVISORY_ID_LEN || i.is_empty()) {
        return Err(bad(what, "advisory ID empty or too long"));
    }
    Ok(ids.into_iter().map(String::into_boxed_str).collect())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTcbInfo {
    id: String,
    version: u32,
    issue_date: String,
    next_update: String,
    fmspc: String,
    pce_id: String,
    tcb_type: u32,
    tcb_evaluation_data_number: u32,
    tdx_module: Option<RawModule>,
    #[serde(default)]
    tdx_module_identities: Vec<RawModuleIdentity>,
    tcb_levels: Vec<RawTcbLevel>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawModule {
    mrsigner: String,
    attributes: String,
    attributes_mask: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawModuleIdentity {
    id: String,
    mrsigner: String,
    attributes: String,
    attributes_mask: String,
    tcb_levels: Vec<RawIsvLevel>,
}

/// A TCB level keyed by an ISVSVN (TDX module identities and QE Identity share the shape).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawIsvLevel {
    tcb: RawIsvSvn,
    tcb_date: String,
    tcb_status: TcbStatus,
    #[serde(rename = "advisoryIDs", default)]
    advisory_ids: Vec<String>,
}

#[derive(Deserialize)]
struct RawIsvSvn {
    isvsvn: u16,
}

/// A decoded ISVSVN-keyed level: `(isvsvn, tcbDate, tcbStatus, advisoryIDs)`.
pub(crate) type IsvLevel = (u16, UnixTime, TcbStatus, Box<[Box<str>]>);

impl RawIsvLevel {
    /// The level's fields, dates and advisory IDs checked.
    pub(crate) fn decode(self, what: &'static str) -> Result<IsvLevel, Error> {
        Ok((self.tcb.isvsvn, time(&self.tcb_date, what)?, self.tcb_status, advisories(self.advisory_ids, what)?))
    }
}

/// Checks a level count against [`MAX_TCB_LEVELS`].
pub(crate) fn check_levels(n: usize) -> Result<(), Error> {
    if n > MAX_TCB_LEVELS {
        return Err(Error::LimitExceeded { what: "TCB levels", limit: MAX_TCB_LEVELS, found: n });
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTcbLevel {
    tcb: RawTcb,
    tcb_date: String,
    tcb_status: TcbStatus,
    #[serde(rename = "advisoryIDs", default)]
    advisory_ids: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTcb {
    sgxtcbcomponents: Vec<RawComponent>,
    pcesvn: u16,
    #[serde(default)]
    tdxtcbcomponents: Vec<RawComponent>,
}

#[derive(Deserialize)]
struct RawComponent {
    svn: u8,
}

/// The TDX module's expected signer and attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdxModule {
    /// Expected MRSIGNERSEAM.
    pub mrsigner: [u8; 48],
    /// Expected SEAMATTRIBUTES (under the mask).
    pub attributes: [u8; 8],
    /// Which SEAMATTRIBUTES bits are compared.
    pub attributes_mask: [u8; 8],
}

/// One TCB level of a TDX module identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleTcbLevel {
    /// Minimum module ISVSVN (`TEE_TCB_SVN[0]`).
    pub isvsvn: u8,
    /// tcbDate.
    pub tcb_date: UnixTime,
    /// tcbStatus.
    pub status: TcbStatus,
    /// advisoryIDs.
    pub advisory_ids: Box<[Box<str>]>,
}

/// A TDX module identity (`TDX_<major>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdxModuleIdentity {
    /// The module major version it applies to (`TEE_TCB_SVN[1]`).
    pub major: u8,
    /// Signer and attributes.
    pub module: TdxModule,
    /// Levels, newest first.
    pub tcb_levels: Box<[ModuleTcbLevel]>,
}

/// One platform TCB level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcbLevel {
    /// Minimum SGX TCB components 1–16 (compared with the PCK certificate's).
    pub sgx_components: [u8; 16],
    /// Minimum PCESVN.
    pub pce_svn: u16,
    /// Minimum TDX TCB components 1–16 (compared with TEE_TCB_SVN).
    pub tdx_components: [u8; 16],
    /// tcbDate.
    pub tcb_date: UnixTime,
    /// tcbStatus.
    pub status: TcbStatus,
    /// advisoryIDs.
    pub advisory_ids: Box<[Box<str>]>,
}

/// A decoded TDX TCB Info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcbInfo {
    /// version (3).
    pub version: u32,
    /// issueDate.
    pub issue_date: UnixTime,
    /// nextUpdate.
    pub next_update: UnixTime,
    /// fmspc.
    pub fmspc: [u8; 6],
    /// pceId.
    pub pce_id: [u8; 2],
    /// tcbType (0).
    pub tcb_type: u32,
    /// tcbEvaluationDataNumber.
    pub tcb_evaluation_data_number: u32,
    /// tdxModule.
    pub tdx_module: TdxModule,
    /// tdxModuleIdentities.
    pub tdx_module_identities: Box<[TdxModuleIdentity]>,
    /// tcbLevels, in the order given (newest first).
    pub tcb_levels: Box<[TcbLevel]>,
}

fn module(m: &RawModule, what: &'static str) -> Result<TdxModule, Error> {
    Ok(TdxModule {
        mrsigner: hex_array(&m.mrsigner, what)?,
        attributes: hex_array(&m.attributes, what)?,
        attributes_mask: hex_array(&m.attributes_mask, what)?,
    })
}

fn components(c: &[RawComponent], what: &'static str) -> Result<[u8; 16], Error> {
    if c.len() != 16 {
        return Err(bad(what, "a TCB level does not list exactly 16 components"));
    }
    let mut out = [0u8; 16];
    for (o, c) in out.iter_mut().zip(c) {
        *o = c.svn;
    }
    Ok(out)
}

impl TcbInfo {
    /// Decodes the `tcbInfo` JSON object (the signed text). Checks id `"TDX"`, version 3 and tcbType 0.
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        const W: &str = "TCB Info";
        let raw: RawTcbInfo = serde_json::from_slice(json).map_err(|_| bad(W, "not a TCB Info v3 JSON object"))?;
        if raw.id != "TDX" {
            return Err(bad(W, "id is not \"TDX\""));
        }
        if raw.version != 3 {
            return Err(bad(W, "version is not 3"));
        }
        if raw.tcb_type != 0 {
            return Err(bad(W, "tcbType is not 0"));
        }
        check_levels(raw.tcb_levels.len())?;
        if raw.tdx_module_identities.len() > MAX_TDX_MODULE_IDENTITIES {
            return Err(Error::LimitExceeded {
                what: "TDX module identities",
                limit: MAX_TDX_MODULE_IDENTITIES,
                found: raw.tdx_module_identities.len(),
            });
        }
        let tdx_module = module(raw.tdx_module.as_ref().ok_or(bad(W, "tdxModule is missing"))?, W)?;
        let mut identities = Vec::with_capacity(raw.tdx_module_identities.len());
        for m in raw.tdx_module_identities {
            let major =
                m.id.strip_prefix("TDX_")
                    .filter(|h| h.len() == 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(bad(W, "tdxModuleIdentities id is not TDX_<2 hex digits>"))?;
            if identities.iter().any(|i: &TdxModuleIdentity| i.major == major) {
                return Err(bad(W, "duplicate TDX module identity"));
            }
            check_levels(m.tcb_levels.len())?;
            let module = module(
                &RawModule { mrsigner: m.mrsigner, attributes: m.attributes, attributes_mask: m.attributes_mask },
                W,
            )?;
            let mut levels = Vec::with_capacity(m.tcb_levels.len());
            for l in m.tcb_levels {
                let (isvsvn, tcb_date, status, advisory_ids) = l.decode(W)?;
                let isvsvn = u8::try_from(isvsvn).map_err(|_| bad(W, "TDX module isvsvn above 255"))?;
                levels.push(ModuleTcbLevel { isvsvn, tcb_date, status, advisory_ids });
            }
            identities.push(TdxModuleIdentity { major, module, tcb_levels: levels.into() });
        }
        let mut levels = Vec::with_capacity(raw.tcb_levels.len());
        for l in raw.tcb_levels {
            levels.push(TcbLevel {
                sgx_components: components(&l.tcb.sgxtcbcomponents, W)?,
                pce_svn: l.tcb.pcesvn,
                tdx_components: components(&l.tcb.tdxtcbcomponents, W)?,
                tcb_date: time(&l.tcb_date, W)?,
                status: l.tcb_status,
                advisory_ids: advisories(l.advisory_ids, W)?,
            });
        }
        Ok(Self {
            version: raw.version,
            issue_date: time(&raw.issue_date, W)?,
            next_update: time(&raw.next_update, W)?,
            fmspc: hex_array(&raw.fmspc, W)?,
            pce_id: hex_array(&raw.pce_id, W)?,
            tcb_type: raw.tcb_type,
            tcb_evaluation_data_number: raw.tcb_evaluation_data_number,
            tdx_module,
            tdx_module_identities: identities.into(),
            tcb_levels: levels.into(),
        })
    }
}
