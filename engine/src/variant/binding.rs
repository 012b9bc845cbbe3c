//! Freshness inside the TEE: the REPORT_DATA an SEV-SNP report carries in the `aws-sev-snp` and
//! `gcp-sev-snp` variants.
//!
//! On AWS and GCP the vTPM runs outside the guest's TEE: the host holds the attestation key (AK) and can sign
//! any quote with it. A quote's nonce therefore proves nothing about the guest; only the SNP report, which
//! the AMD secure processor signs for the guest, can. So the guest requests a **fresh report for every
//! attestation**, and its REPORT_DATA covers both the AK and this attestation's nonce. A report recorded
//! once and replayed next to freshly signed quotes is refused ([`crate::Error::FreshnessBindingMismatch`]).
//!
//! # Wire contract (attester and verifier)
//!
//! ```text
//! REPORT_DATA (all 64 bytes) = SHA-512( LABEL ‖ u64be(len(AK)) ‖ AK ‖ QUOTE_NONCE )
//!
//!   LABEL        the 34 ASCII bytes "attest sev-snp vtpm report-data v1" followed by one 0x00 byte
//!                (SNP_VTPM_REPORT_DATA_LABEL, 35 bytes, fixed)
//!   len(AK)      the byte length of AK as an unsigned 64-bit big-endian integer
//!   AK           the AK's TPM2B_PUBLIC exactly as the document carries it (its own 2-byte size included)
//!   QUOTE_NONCE  the 32-byte extraData the quote of the same attestation carries:
//!                SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))  (Validator::quote_nonce)
//! ```
//!
//! Every part has a fixed length or an explicit length, so no two different (AK, nonce) pairs hash the same
//! input; the label separates this use of SHA-512 from every other (the former rule, SHA-512(AK), included).
//! Binding the quote's extraData rather than the raw nonce also binds the user data (aTLS: the hash of the
//! TLS key) and the instance info into the hardware-signed report.
//!
//! The attester (the shell's SNP issuer) computes [`snp_vtpm_report_data`] for each request, asks
//! `/dev/sev-guest` for a report with it, and quotes with the same QUOTE_NONCE.
//!
//! # The other variants
//!
//! - `azure-sev-snp`: the vTPM runs inside the TEE (in the paravisor at VMPL 0), so its AK is the guest's own
//!   key, never the host's. The SNP report binds the AK through the HCL runtime data
//!   ([`crate::azure::hcl_report_data`]); the quote, signed inside the TEE, binds the nonce. A host cannot sign
//!   a fresh quote with that key, so a replayed HCL report is useless without the matching fresh quote.
//! - `qemu-vtpm`: no TEE; the nonce is in the quote, and the AK is trusted only through the AK registry.

use crate::crypto::{CryptoProvider, HashAlgorithm};

/// The domain-separation label at the start of the hashed input (see the module documentation).
pub const SNP_VTPM_REPORT_DATA_LABEL: &[u8; 35] = b"attest sev-snp vtpm report-data v1\0";

/// The REPORT_DATA an SNP report must carry in the `aws-sev-snp` / `gcp-sev-snp` variants: SHA-512 over the
/// label, the AK's TPM2B_PUBLIC (length-prefixed) and this attestation's quote nonce. See the module
/// documentation for the exact contract.
pub fn snp_vtpm_report_data(provider: &CryptoProvider, ak_tpm2b_public: &[u8], quote_nonce: &[u8; 32]) -> [u8; 64] {
    let len = (ak_tpm2b_public.len() as u64).to_be_bytes();
    let digest = provider
        .digests
        .digest(HashAlgorithm::Sha512, &[SNP_VTPM_REPORT_DATA_LABEL, &len, ak_tpm2b_public, quote_nonce]);
    let mut out = [0u8; 64];
    out.copy_from_slice(digest.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::default_provider;

    #[test]
    fn label_is_ascii_and_nul_terminated() {
        let (text, nul) = SNP_VTPM_REPORT_DATA_LABEL.split_at(34);
        assert!(text.is_ascii() && nul == [0]);
    }

    #[test]
    fn every_input_changes_the_binding() {
        let p = default_provider();
        let base = snp_vtpm_report_data(p, b"\x00\x03ak!", &[7; 32]);
        assert_ne!(base, snp_vtpm_report_data(p, b"\x00\x03ak?", &[7; 32]));
        assert_ne!(base, snp_vtpm_report_data(p, b"\x00\x03ak!", &[8; 32]));
        // Moving a byte between the AK and the nonce changes the length prefix, hence the input.
        let mut nonce = [7u8; 32];
        nonce[0] = b'!';
        assert_ne!(base, snp_vtpm_report_data(p, b"\x00\x03ak", &nonce));
        // Independent of the former AK-only rule.
        assert_ne!(&base[..], p.digests.digest(HashAlgorithm::Sha512, &[b"\x00\x03ak!"]).as_bytes());
    }
}
