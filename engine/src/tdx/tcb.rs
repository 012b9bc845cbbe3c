//! TCB evaluation of a TD quote, as Intel specifies it (Intel "TDX DCAP Quote Verification Library",
//! §"Platform TCB level", and the PCS API v4 TCB Info v3 semantics):
//!
//! 1. The TCB Info must be for the PCK certificate's platform: its FMSPC and PCE-ID equal the certificate's.
//! 2. **QE**: the QE report must match the QE Identity (MRSIGNER, ISVPRODID, MISCSELECT and ATTRIBUTES under
//!    their masks); the QE's TCB level is the first level whose ISVSVN the QE report's ISVSVN meets.
//! 3. **TDX module**: `TEE_TCB_SVN[1]` is the module's major version. When it is non-zero, the identity
//!    `TDX_<major>` of `tdxModuleIdentities` applies (no such identity: no TCB level), and the module's level
//!    is the first of that identity's levels whose ISVSVN `TEE_TCB_SVN[0]` meets; when it is zero, the base
//!    `tdxModule` applies and has no levels. Either way MRSIGNERSEAM must equal the identity's `mrsigner`, and
//!    SEAMATTRIBUTES its `attributes` under `attributesMask`.
//! 4. **Platform**: the first TCB level (in the order Intel lists them, newest first) such that every SGX
//!    component and the PCESVN of the PCK certificate is at least the level's, and every TDX component of
//!    TEE_TCB_SVN is at least the level's — components 0 and 1 excepted when `TEE_TCB_SVN[1]` is non-zero, as
//!    the module identity judges those.
//! 5. The status is the platform's, converged with the module's and then the QE's ([`TcbStatus::converge`]).
//!    A TDX 1.5 quote is evaluated again with TEE_TCB_SVN2 (the module running now), which must also meet a
//!    level, and the two are combined ([`TcbStatus::with_current`]).
//! 6. The advisory IDs are those of the platform, module and QE levels, without repetition.
//!
//! Matching only compares integers held in the verified collateral: it allocates nothing.

use super::body::TdReport;
use super::pck::SgxExtensions;
use super::qe_identity::QeIdentity;
use super::qe_report::QeReport;
use super::status::TcbStatus;
use super::tcb_info::{TcbInfo, TdxModule};
use crate::error::{Bytes, Error};

/// The levels a quote matched, and its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcbEvaluation {
    /// The final status.
    pub status: TcbStatus,
    /// The platform level's status (before convergence).
    pub platform_status: TcbStatus,
    /// Index of the matched platform level in `tcbLevels`.
    pub platform_level: usize,
    /// The TDX module identity (its index in `tdxModuleIdentities`) and level index, when `TEE_TCB_SVN[1]` ≠ 0.
    pub module_level: Option<(usize, usize)>,
    /// Index of the matched QE level.
    pub qe_level: usize,
    /// TDX 1.5: the status of the current TCB (TEE_TCB_SVN2), converged with the QE's.
    pub current_status: Option<TcbStatus>,
}

impl TcbEvaluation {
    /// The advisory IDs of the matched levels (platform, module, QE), each once.
    pub fn advisory_ids<'c>(&self, tcb_info: &'c TcbInfo, qe: &'c QeIdentity) -> impl Iterator<Item = &'c str> + 'c {
        let platform = tcb_info.tcb_levels.get(self.platform_level).map(|l| &*l.advisory_ids).unwrap_or_default();
        let module = self
            .module_level
            .and_then(|(i, l)| tcb_info.tdx_module_identities.get(i)?.tcb_levels.get(l))
            .map(|l| &*l.advisory_ids)
            .unwrap_or_default();
        let qe_ids = qe.tcb_levels.get(self.qe_level).map(|l| &*l.advisory_ids).unwrap_or_default();
        let lists: [&'c [Box<str>]; 3] = [platform, module, qe_ids];
        lists.into_iter().enumerate().flat_map(move |(n, list)| {
            list.iter().enumerate().filter_map(move |(i, id)| {
                let earlier = lists[..n].iter().any(|l| l.contains(id)) || list[..i].contains(id);
                (!earlier).then_some(&**id)
            })
        })
    }
}

fn masked_eq(a: &[u8], b: &[u8], mask: &[u8]) -> bool {
    a.iter().zip(b).zip(mask).all(|((a, b), m)| a & m == b & m)
}

/// Checks the QE report against the QE Identity and returns the index of its TCB level.
pub fn check_qe(qe_identity: &QeIdentity, qe: &QeReport<'_>) -> Result<usize, Error> {
    let mismatch = |field| Error::IdentityMismatch { what: "QE identity", field };
    if qe.mr_signer() != &qe_identity.mrsigner {
        return Err(mismatch("MRSIGNER"));
    }
    if qe.isv_prod_id() != qe_identity.isvprodid {
        return Err(mismatch("ISVPRODID"));
    }
    if !masked_eq(&qe.misc_select().to_le_bytes(), &qe_identity.miscselect, &qe_identity.miscselect_mask) {
        return Err(mismatch("MISCSELECT"));
    }
    if !masked_eq(qe.attributes(), &qe_identity.attributes, &qe_identity.attributes_mask) {
        return Err(mismatch("ATTRIBUTES"));
    }
    qe_identity.tcb_levels.iter().position(|l| qe.isv_svn() >= l.isvsvn).ok_or(Error::TcbLevelNotFound { what: "QE" })
}

/// The TDX module identity that applies to `tee_tcb_svn`: the base module (index `None`) or `TDX_<major>`.
fn module_identity<'c>(tcb_info: &'c TcbInfo, tee_tcb_svn: &[u8; 16]) -> Result<(&'c TdxModule, Option<usize>), Error> {
    match tee_tcb_svn[1] {
        0 => Ok((&tcb_info.tdx_module, None)),
        major => tcb_info
            .tdx_module_identities
            .iter()
            .position(|m| m.major == major)
            .map(|i| (&tcb_info.tdx_module_identities[i].module, Some(i)))
            .ok_or(Error::TcbLevelNotFound { what: "TDX module" }),
    }
}

/// Checks MRSIGNERSEAM and SEAMATTRIBUTES against the module identity selected by `TEE_TCB_SVN[1]`.
pub fn check_module_identity(tcb_info: &TcbInfo, body: &TdReport<'_>) -> Result<(), Error> {
    let (module, _) = module_identity(tcb_info, body.tee_tcb_svn())?;
    if body.mr_signer_seam() != &module.mrsigner {
        return Err(Error::IdentityMismatch { what: "TDX module identity", field: "MRSIGNERSEAM" });
    }
    if !masked_eq(body.seam_attributes(), &module.attributes, &module.attributes_mask) {
        return Err(Error::IdentityMismatch { what: "TDX module identity", field: "SEAMATTRIBUTES" });
    }
    Ok(())
}

/// The platform level and the module level met by `tee_tcb_svn`, the platform's status and their converged
/// status.
struct Matched {
    level: usize,
    module_level: Option<(usize, usize)>,
    platform_status: TcbStatus,
    status: TcbStatus,
}

fn platform(tcb_info: &TcbInfo, pck: &SgxExtensions, tee_tcb_svn: &[u8; 16]) -> Result<Matched, Error> {
    let skip = if tee_tcb_svn[1] > 0 { 2 } else { 0 };
    let level = tcb_info
        .tcb_levels
        .iter()
        .position(|l| {
            pck.tcb_components.iter().zip(&l.sgx_components).all(|(have, need)| have >= need)
                && pck.pce_svn >= l.pce_svn
                && tee_tcb_svn.iter().zip(&l.tdx_components).skip(skip).all(|(have, need)| have >= need)
        })
        .ok_or(Error::TcbLevelNotFound { what: "platform" })?;
    let platform_status = tcb_info.tcb_levels[level].status;
    let (_, identity) = module_identity(tcb_info, tee_tcb_svn)?;
    let (module_level, status) = match identity {
        None => (None, platform_status),
        Some(i) => {
            let levels = &tcb_info.tdx_module_identities[i].tcb_levels;
            let l = levels
                .iter()
                .position(|l| tee_tcb_svn[0] >= l.isvsvn)
                .ok_or(Error::TcbLevelNotFound { what: "TDX module" })?;
            (Some((i, l)), platform_status.converge(levels[l].status))
        }
    };
    Ok(Matched { level, module_level, platform_status, status })
}

/// Evaluates the TCB of a quote whose PCK certificate says `pck`, against verified collateral.
pub fn evaluate(
    tcb_info: &TcbInfo,
    qe_identity: &QeIdentity,
    pck: &SgxExtensions,
    body: &TdReport<'_>,
    qe: &QeReport<'_>,
) -> Result<TcbEvaluation, Error> {
    if tcb_info.fmspc != pck.fmspc {
        return Err(Error::CollateralMismatch {
            field: "FMSPC",
            evidence: Bytes::new(&pck.fmspc),
            collateral: Bytes::new(&tcb_info.fmspc),
        });
    }
    if tcb_info.pce_id != pck.pce_id {
        return Err(Error::CollateralMismatch {
            field: "PCE-ID",
            evidence: Bytes::new(&pck.pce_id),
            collateral: Bytes::new(&tcb_info.pce_id),
        });
    }
    let qe_level = check_qe(qe_identity, qe)?;
    let qe_status = qe_identity.tcb_levels[qe_level].status;
    check_module_identity(tcb_info, body)?;
    let Matched { level: platform_level, module_level, platform_status, status } =
        platform(tcb_info, pck, body.tee_tcb_svn())?;
    let mut status = status.converge(qe_status);
    let current_status = match body.tee_tcb_svn2() {
        None => None,
        Some(svn2) => {
            let current = platform(tcb_info, pck, svn2)?.status.converge(qe_status);
            if current == TcbStatus::Revoked {
                status = TcbStatus::Revoked;
            }
            Some(current)
        }
    };
    if let Some(current) = current_status {
        status = status.with_current(current);
    }
    Ok(TcbEvaluation { status, platform_status, platform_level, module_level, qe_level, current_status })
}
