//! A simulated Azure paravisor: provisions a TPM (swtpm) the way Azure's paravisor provisions a confidential
//! VM's vTPM at boot, so that the `azure-sev-snp` issuer reads it exactly as on Azure.
//!
//! ```text
//!  AK (RSA-2048 restricted signing) ──TPM2_EvictControl──► persistent 0x81000003
//!  runtime data = {"keys":[{"kid":"HCLAkPub","kty":"RSA","n":…,"e":…}], "vm-configuration":{…}}
//!  REPORT_DATA  = SHA-256(runtime data) ‖ 0³²                        (attest_engine::azure::hcl_report_data)
//!  SNP report   ◄── the simulated SEV-SNP device, VMPL 0 (the paravisor's level)
//!  HCL report   = header ‖ SNP report ‖ IGVM request header ‖ runtime data ──TPM2_NV_Write──► NV 0x01400001
//! ```

use attest_attester::issuer::SnpGuestDevice;
use attest_attester::issuer::azure::{AZURE_AK_HANDLE, HCL_REPORT_NV_INDEX};
use attest_attester::issuer::snp::HwIssuerError;
use attest_attester::tpm::{AkAlgorithm, AkConfig, AkStorage, Tpm};
use attest_engine::crypto::default_provider;
use attest_engine::tpm::{AkPublic, TpmtPublic};
use attest_test_support::tpm::{base64url, hcl_report, runtime_json_for_vm};

/// What the simulated paravisor provisioned.
#[derive(Clone, Debug)]
pub struct AzureVtpm {
    /// The HCL AK's TPM2B_PUBLIC.
    pub ak_public: Vec<u8>,
    /// The HCL report written to NV 0x01400001.
    pub hcl_report: Vec<u8>,
}

/// The AK as the JWK Azure's runtime data carries ("HCLAkPub").
pub fn hcl_ak_jwk(ak_tpm2b_public: &[u8]) -> Result<String, HwIssuerError> {
    let public = TpmtPublic::parse_tpm2b(ak_tpm2b_public)?;
    let AkPublic::Rsa { modulus, exponent } = public.key() else {
        return Err(HwIssuerError::Device { op: "building HCLAkPub", reason: "the HCL AK is RSA".into() });
    };
    let e = if exponent == 0 { 65_537 } else { exponent };
    let e = e.to_be_bytes();
    let first = e.iter().position(|b| *b != 0).unwrap_or(3);
    Ok(format!(
        r#"{{"kid":"HCLAkPub","key_ops":["sign"],"kty":"RSA","e":"{}","n":"{}"}}"#,
        base64url(&e[first..]),
        base64url(modulus)
    ))
}

/// The vmUniqueId of the VM whose HCL AK is `ak_tpm2b_public`. Each VM has its own (the node identity of the
/// Azure variants): derived from the AK, so a re-provisioned VM keeps its id.
pub fn vm_unique_id(ak_tpm2b_public: &[u8]) -> String {
    let d = default_provider().digests.sha256(ak_tpm2b_public);
    let h = hex::encode_upper(&d[..16]);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// Provisions `tpm` as Azure's paravisor does, with the SNP report from `device`.
pub fn provision(tpm: &mut Tpm, device: &SnpGuestDevice) -> Result<AzureVtpm, HwIssuerError> {
    let config = AkConfig { algorithm: AkAlgorithm::Rsa2048, storage: AkStorage::Persistent(AZURE_AK_HANDLE) };
    let ak = tpm.attestation_key(config)?;
    let runtime = runtime_json_for_vm(&[&hcl_ak_jwk(ak.tpm2b_public())?], &vm_unique_id(ak.tpm2b_public()));
    let report_data = attest_engine::azure::hcl_report_data(default_provider(), &runtime);
    let (report, _) = device.ext_report(&report_data, 0)?;
    let report: [u8; attest_test_support::REPORT_LEN] = report.try_into().map_err(|_| HwIssuerError::Device {
        op: "simulated paravisor",
        reason: "the SNP report is not 0x4A0 bytes".into(),
    })?;
    let mut hcl = hcl_report(&report, &runtime);
    // Azure's index is 2600 bytes with zero padding; swtpm (libtpms) caps NV indices at 2048 bytes, so the
    // simulated index ends with the runtime data (the reader takes the runtime data's own size).
    hcl.truncate(32 + attest_test_support::REPORT_LEN + 20 + runtime.len());
    tpm.nv_define_and_write(HCL_REPORT_NV_INDEX, &hcl)?;
    Ok(AzureVtpm { ak_public: ak.tpm2b_public().to_vec(), hcl_report: hcl })
}
