//! # attest-tdx-ioctl
//!
//! The one request of the Linux TDX guest device that no file interface offers on older kernels:
//! `TDX_CMD_GET_REPORT0` on `/dev/tdx_guest` (Linux 6.2+, `include/uapi/linux/tdx-guest.h`), which returns
//! the TD's TDREPORT (1024 bytes) for 64 bytes of REPORTDATA through `TDCALL[TDG.MR.REPORT]`.
//!
//! ```text
//! struct tdx_report_req { __u8 reportdata[64]; __u8 tdreport[1024]; }          1088 bytes
//! TDX_CMD_GET_REPORT0 = _IOWR('T', 1, struct tdx_report_req)                    0xC440_5401
//! ```
//!
//! The attester uses it where configfs-tsm is missing (quotes then come from the quote generation service
//! with this report) and to read the RTMRs back from the TD report. Everything else of TDX attestation is
//! plain file or socket I/O in `attest-attester`.
//!
//! **Why a crate of its own.** An ioctl needs `unsafe` (the kernel writes through a raw pointer); no
//! maintained crate binds this request for user space (Intel's `tdx-guest` crate issues TDCALLs from inside
//! a TD kernel or firmware, not from Linux user space). The workspace forbids unsafe code outside `ffi/` and
//! `shell/openssl-ext`; this crate, like `openssl-ext`, denies it in its `Cargo.toml` and allows it at its
//! root under `clippy::undocumented_unsafe_blocks` and `unsafe_op_in_unsafe_fn`. It has exactly one unsafe
//! block, with its proof obligation stated next to it.
//!
//! **May depend on:** `libc`. **Must not depend on:** any workspace crate.

#![deny(missing_docs, clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]
#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::AsRawFd;

/// Length of REPORTDATA (`TDX_REPORTDATA_LEN`).
pub const TDX_REPORTDATA_LEN: usize = 64;
/// Length of a TDREPORT (`TDX_REPORT_LEN`).
pub const TDX_REPORT_LEN: usize = 1024;

/// `struct tdx_report_req`: the kernel reads `reportdata` and writes `tdreport`.
#[repr(C)]
struct TdxReportReq {
    reportdata: [u8; TDX_REPORTDATA_LEN],
    tdreport: [u8; TDX_REPORT_LEN],
}

const _: () = assert!(size_of::<TdxReportReq>() == TDX_REPORTDATA_LEN + TDX_REPORT_LEN);

/// `_IOWR(type, nr, size)` of `include/uapi/asm-generic/ioctl.h`: direction read|write (3) in bits 30–31,
/// the size in bits 16–29, the type in bits 8–15, the number in bits 0–7.
const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    (3 << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32
}

/// `TDX_CMD_GET_REPORT0`.
pub const TDX_CMD_GET_REPORT0: u32 = iowr(b'T', 1, size_of::<TdxReportReq>());

/// The TDREPORT for `report_data` from the TDX guest device opened as `device` (read-write).
///
/// Fails with the device's errno: `ENOTTY` for a file that is not the TDX guest device, `EINVAL`/`EIO` as
/// the kernel documents for TDCALL failures.
pub fn get_report0(device: &File, report_data: &[u8; TDX_REPORTDATA_LEN]) -> std::io::Result<[u8; TDX_REPORT_LEN]> {
    let mut req = TdxReportReq { reportdata: *report_data, tdreport: [0; TDX_REPORT_LEN] };
    // SAFETY: `device` is an open file, so its descriptor is valid for the duration of the call. The request
    // number encodes `size_of::<TdxReportReq>()` and read-write direction; the kernel reads and writes at
    // most that many bytes through the pointer, which points to `req`, a live, exclusively borrowed,
    // `#[repr(C)]` value of exactly that size and layout (two byte arrays, alignment 1). `req` outlives the
    // call and nothing else aliases it. A descriptor of any other file fails with ENOTTY and touches nothing.
    let rc = unsafe { libc::ioctl(device.as_raw_fd(), libc::Ioctl::from(TDX_CMD_GET_REPORT0), &raw mut req) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(req.tdreport)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_number_is_the_kernels() {
        // _IOWR('T', 1, struct tdx_report_req) with sizeof = 1088 (0x440).
        assert_eq!(TDX_CMD_GET_REPORT0, 0xC440_5401);
    }

    #[test]
    fn another_file_is_refused_and_nothing_is_returned() {
        for path in ["/dev/null", "/dev/zero"] {
            let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
            let e = get_report0(&f, &[7; 64]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "{path}: {e}");
        }
        let f = tempfile_in_tmp();
        assert_eq!(get_report0(&f, &[0; 64]).unwrap_err().raw_os_error(), Some(libc::ENOTTY));
    }

    fn tempfile_in_tmp() -> File {
        let path = std::env::temp_dir().join(format!("attest-tdx-ioctl-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        f
    }
}
