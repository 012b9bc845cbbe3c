//! The SEV-SNP and Azure issuers on real devices: `/dev/sev-guest` with `/dev/tpmrm0` (AWS/GCP SNP
//! instances) and the Azure paravisor's vTPM (`/dev/tpmrm0` with NV index 0x01400001). Each test runs only
//! when its device exists; otherwise it prints `SKIP: …` and passes. Two tests run everywhere: opening a
//! missing `/dev/sev-guest` is the typed `DeviceNotPresent` error, and so is a swtpm without Azure's NV
//! index. The launch measurement of a real guest is not known here, so these validators waive launch
//! pinning explicitly (`dangerous_allow_unpinned_launch`); the simulated-hardware tests in `attest-hwsim`
//! pin it.
//!
//! Environment: `ATTEST_SNP_VARIANT` = `aws-sev-snp` (default) or `gcp-sev-snp`; `ATTEST_SNP_LEAF` = a
//! VCEK/VLEK file (DER or PEM) for hosts whose certificate table is empty; `ATTEST_AZURE_VCEK` = the VCEK
//! from Azure's THIM endpoint (required for the Azure test).

use attest_attester::issuer::snp::SEV_GUEST;
use attest_attester::issuer::{
    AzureSnpIssuer, HwIssuerError, QemuVtpmIssuer, SnpDeviceAddr, SnpGuestDevice, SnpIssuer, document, pcr_values,
};
use attest_attester::tpm::{AkConfig, AkStorage, Tpm};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::variant::{PcrPolicy, Validator, Variant};
use attest_hwtests::support::{now, random32};
use attest_hwtests::{Swtpm, device_present};
use std::sync::Arc;

const TPMRM0: &str = "/dev/tpmrm0";

fn transient_ak() -> AkConfig {
    AkConfig { storage: AkStorage::Transient, ..AkConfig::default() }
}

fn snp_variant() -> Variant {
    std::env::var("ATTEST_SNP_VARIANT").ok().and_then(|v| Variant::from_name(&v)).unwrap_or(Variant::AwsSevSnp)
}

fn waived_launch() -> SnpPolicy {
    SnpPolicy { dangerous_allow_unpinned_launch: true, ..SnpPolicy::default() }
}

#[test]
fn missing_sev_guest_is_device_not_present() {
    if std::path::Path::new(SEV_GUEST).exists() {
        println!("SKIP: {SEV_GUEST} is present (this test checks the error off SNP hardware)");
        return;
    }
    match SnpGuestDevice::open(&SnpDeviceAddr::default()) {
        Err(HwIssuerError::DeviceNotPresent { device }) => assert_eq!(device, SEV_GUEST),
        other => panic!("expected DeviceNotPresent, got {other:?}"),
    }
}

#[test]
fn swtpm_without_hcl_report_is_not_an_azure_vtpm() {
    let sw = Swtpm::start().expect("start swtpm");
    let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
    match AzureSnpIssuer::new(tpm, b"") {
        Err(HwIssuerError::DeviceNotPresent { device }) => assert!(device.contains("0x01400001"), "{device}"),
        other => panic!("expected DeviceNotPresent, got {other:?}"),
    }
}

#[test]
fn sev_guest_snp_document_validates() {
    if !device_present(SEV_GUEST) || !device_present(TPMRM0) {
        return;
    }
    let variant = snp_variant();
    let tpm = Tpm::open(&format!("device:{TPMRM0}")).expect("open /dev/tpmrm0");
    let issuer = QemuVtpmIssuer::new(tpm, transient_ak()).expect("AK");
    let device = SnpGuestDevice::open(&SnpDeviceAddr::default()).expect("open /dev/sev-guest");
    let mut issuer = SnpIssuer::new(variant, issuer, device).expect("SNP issuer");
    if let Some(leaf) = std::env::var_os("ATTEST_SNP_LEAF") {
        issuer = issuer.with_leaf_certificate(&std::fs::read(leaf).expect("ATTEST_SNP_LEAF")).expect("leaf");
    }
    let nonce = random32();
    let doc = match issuer.issue(&nonce, b"user data", b"") {
        Err(HwIssuerError::MissingLeafCertificate { want }) => {
            println!("SKIP: no {want} from the host; set ATTEST_SNP_LEAF to validate");
            return;
        }
        other => other.expect("issue"),
    };
    let v = Validator::new(variant, Arc::new(SnpVerifier::new()), waived_launch(), PcrPolicy::default());
    let pcrs = pcr_values(&doc).unwrap();
    let ok = v.validate(&document(&doc, &pcrs), &nonce, now()).expect("the engine accepts the device's document");
    assert!(ok.snp.is_some());
    assert!(v.validate(&document(&doc, &pcrs), &random32(), now()).is_err(), "another nonce is refused");
}

#[test]
fn azure_vtpm_document_validates() {
    if !device_present(TPMRM0) {
        return;
    }
    let Some(vcek) = std::env::var_os("ATTEST_AZURE_VCEK") else {
        println!("SKIP: ATTEST_AZURE_VCEK not set");
        return;
    };
    let tpm = Tpm::open(&format!("device:{TPMRM0}")).expect("open /dev/tpmrm0");
    let issuer = match AzureSnpIssuer::new(tpm, &std::fs::read(vcek).expect("ATTEST_AZURE_VCEK")) {
        Err(HwIssuerError::DeviceNotPresent { device }) => {
            println!("SKIP: {device} not present");
            return;
        }
        other => other.expect("open the Azure vTPM"),
    };
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user data", b"").expect("issue");
    let v = Validator::new(Variant::AzureSevSnp, Arc::new(SnpVerifier::new()), waived_launch(), PcrPolicy::default());
    let pcrs = pcr_values(&doc).unwrap();
    let ok = v.validate(&document(&doc, &pcrs), &nonce, now()).expect("the engine accepts the vTPM's document");
    assert!(ok.snp.is_some());
    assert!(v.validate(&document(&doc, &pcrs), &random32(), now()).is_err(), "another nonce is refused");
}
