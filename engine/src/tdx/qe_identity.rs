//! QE Identity v2 of Intel's TD quoting enclave (Intel "PCS API v4", `GET /tdx/certification/v4/qe/identity`,
//! the `enclaveIdentity` object; id `"TD_QE"`, version 2): what the QE report must show, and its TCB levels
//! keyed by the QE's ISVSVN.

use super::status::TcbStatus;
use super::tcb_info::{RawIsvLevel, bad, check_levels, hex_array, time};
use crate::error::Error;
use crate::time::UnixTime;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    id: String,
    version: u32,
    issue_date: String,
    next_update: String,
    tcb_evaluation_data_number: u32,
    miscselect: String,
    miscselect_mask: String,
    attributes: String,
    attributes_mask: String,
    mrsigner: String,
    isvprodid: u16,
    tcb_levels: Vec<RawIsvLevel>,
}

/// One QE TCB level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QeTcbLevel {
    /// Minimum QE ISVSVN.
    pub isvsvn: u16,
    /// tcbDate.
    pub tcb_date: UnixTime,
    /// tcbStatus.
    pub status: TcbStatus,
    /// advisoryIDs.
    pub advisory_ids: Box<[Box<str>]>,
}

/// A decoded TD_QE identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QeIdentity {
    /// version (2).
    pub version: u32,
    /// issueDate.
    pub issue_date: UnixTime,
    /// nextUpdate.
    pub next_update: UnixTime,
    /// tcbEvaluationDataNumber.
    pub tcb_evaluation_data_number: u32,
    /// MISCSELECT, as the bytes of the report field (compared under the mask).
    pub miscselect: [u8; 4],
    /// MISCSELECT mask.
    pub miscselect_mask: [u8; 4],
    /// ATTRIBUTES (compared under the mask).
    pub attributes: [u8; 16],
    /// ATTRIBUTES mask.
    pub attributes_mask: [u8; 16],
    /// MRSIGNER.
    pub mrsigner: [u8; 32],
    /// ISVPRODID.
    pub isvprodid: u16,
    /// tcbLevels, in the order given (newest first).
    pub tcb_levels: Box<[QeTcbLevel]>,
}

impl QeIdentity {
    /// Decodes the `enclaveIdentity` JSON object (the signed text). Checks id `"TD_QE"` and version 2.
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        const W: &str = "QE Identity";
        let raw: Raw = serde_json::from_slice(json).map_err(|_| bad(W, "not a QE Identity v2 JSON object"))?;
        if raw.id != "TD_QE" {
            return Err(bad(W, "id is not \"TD_QE\""));
        }
        if raw.version != 2 {
            return Err(bad(W, "version is not 2"));
        }
        check_levels(raw.tcb_levels.len())?;
        let mut levels = Vec::with_capacity(raw.tcb_levels.len());
        for l in raw.tcb_levels {
            let (isvsvn, tcb_date, status, advisory_ids) = l.decode(W)?;
            levels.push(QeTcbLevel { isvsvn, tcb_date, status, advisory_ids });
        }
        Ok(Self {
            version: raw.version,
            issue_date: time(&raw.issue_date, W)?,
            next_update: time(&raw.next_update, W)?,
            tcb_evaluation_data_number: raw.tcb_evaluation_data_number,
            miscselect: hex_array(&raw.miscselect, W)?,
            miscselect_mask: hex_array(&raw.miscselect_mask, W)?,
            attributes: hex_array(&raw.attributes, W)?,
            attributes_mask: hex_array(&raw.attributes_mask, W)?,
            mrsigner: hex_array(&raw.mrsigner, W)?,
            isvprodid: raw.isvprodid,
            tcb_levels: levels.into(),
        })
    }
}
