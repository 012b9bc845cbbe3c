//! Attestation variants in the C ABI: one stable code per variant (`ATTEST_VARIANT_*`), and the functions
//! that turn codes into names and back. Every code, name and C constant comes from the engine's variant table
//! (`attest_engine::variant::TABLE`, column `ffi_code`); the constants below are generated from it by
//! `tests/variant_codes.rs` (which also writes the Go constants, `go/variants.go`) and fail that test when
//! stale. Codes are never reused; 0 is no variant.
//!
//! `attest_verifier_verify_document` takes the variant's name, as documents carry it; C callers may keep
//! codes and ask [`attest_variant_name`] for the name.

use crate::boundary::guard;
use crate::handle::{OutPtr, try_slice};
use crate::result::attest_result;
use crate::verdict::attest_str;
use attest_engine::variant::Variant;

// BEGIN GENERATED: variant codes (tests/variant_codes.rs; ATTEST_REGENERATE=1 rewrites)
/// `qemu-vtpm`: QEMU/KVM or swtpm vTPM, no confidential hardware; AK by credential activation or pin.
pub const ATTEST_VARIANT_QEMU_VTPM: u32 = 1;
/// `azure-sev-snp`: Azure SEV-SNP CVM: HCL report (VCEK) binds the paravisor vTPM's AK.
pub const ATTEST_VARIANT_AZURE_SEV_SNP: u32 = 2;
/// `aws-sev-snp`: AWS SEV-SNP instance: a fresh VLEK-signed report binds the vTPM's AK and the nonce.
pub const ATTEST_VARIANT_AWS_SEV_SNP: u32 = 3;
/// `gcp-sev-snp`: GCP SEV-SNP instance: a fresh VCEK-signed report binds the vTPM's AK and the nonce.
pub const ATTEST_VARIANT_GCP_SEV_SNP: u32 = 4;
/// `gcp-shielded-vm`: GCE Shielded/Confidential VM: the vTPM's AK certified by Google's CA.
pub const ATTEST_VARIANT_GCP_SHIELDED_VM: u32 = 5;
/// `azure-tdx`: Azure TDX CVM: the TD quote binds the HCL runtime data with the paravisor vTPM's AK.
pub const ATTEST_VARIANT_AZURE_TDX: u32 = 6;
/// `qemu-tdx`: QEMU/KVM TD without a vTPM: the TD quote binds the nonce; MRTD and RTMRs are measured.
pub const ATTEST_VARIANT_QEMU_TDX: u32 = 7;
// END GENERATED: variant codes

/// The name of the variant with code `code` ("qemu-vtpm", …; static storage) into `*out`.
/// `ATTEST_RESULT_UNSUPPORTED_VARIANT` for a code this library does not know.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_variant_name(code: u32, out: *mut attest_str) -> attest_result {
    guard(|| {
        let out = OutPtr::new(out).ok_or(attest_result::NullParameter)?;
        let variant = Variant::from_ffi_code(code).ok_or(attest_result::UnsupportedVariant)?;
        out.write(attest_str::new(variant.name()));
        Ok(())
    })
}

/// The code of the variant named `(name, name_len)` (UTF-8, exactly as documents carry it) into `*out`.
/// `ATTEST_RESULT_UNSUPPORTED_VARIANT` for a name this library does not know.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_variant_code(name: *const u8, name_len: usize, out: *mut u32) -> attest_result {
    guard(|| {
        if name.is_null() {
            return Err(attest_result::NullParameter);
        }
        let name = try_slice(name, name_len).ok_or(attest_result::NullParameter)?;
        let out = OutPtr::new(out).ok_or(attest_result::NullParameter)?;
        let variant =
            std::str::from_utf8(name).ok().and_then(Variant::from_name).ok_or(attest_result::UnsupportedVariant)?;
        out.write(variant.info().ffi_code);
        Ok(())
    })
}

/// The number of variants this library knows; their codes are those of the `ATTEST_VARIANT_*` constants.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_variant_count() -> usize {
    attest_engine::variant::TABLE.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip_for_every_row() {
        for row in &attest_engine::variant::TABLE {
            let mut s = attest_str { data: std::ptr::null(), len: 0 };
            assert_eq!(attest_variant_name(row.ffi_code, &raw mut s), attest_result::Ok);
            assert_eq!(s.len, row.name.len());
            let mut code = 0u32;
            assert_eq!(attest_variant_code(row.name.as_ptr(), row.name.len(), &raw mut code), attest_result::Ok);
            assert_eq!(code, row.ffi_code);
        }
        let mut s = attest_str { data: std::ptr::null(), len: 0 };
        assert_eq!(attest_variant_name(0, &raw mut s), attest_result::UnsupportedVariant);
        let mut code = 0u32;
        assert_eq!(attest_variant_code(b"azure".as_ptr(), 5, &raw mut code), attest_result::UnsupportedVariant);
        assert_eq!(code, 0, "out-parameters are written only on success");
        assert_eq!(attest_variant_count(), attest_engine::variant::TABLE.len());
    }
}
