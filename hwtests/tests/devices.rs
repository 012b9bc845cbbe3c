//! Tests against real devices: `/dev/tpmrm0` (the kernel's TPM resource manager) and `/dev/sev-guest`.
//! Each test runs only when its device exists; otherwise it prints `SKIP: <device> not present` and passes.
//! Nothing here writes to the TPM's NV: the AK is re-created from its template for each use and flushed.

use attest_attester::issuer::{QemuVtpmIssuer, document, pcr_values};
use attest_attester::tpm::{AkConfig, AkStorage, Tpm};
use attest_engine::crypto::HashAlgorithm;
use attest_engine::variant::{AkBasis, PcrPolicy, StaticAkRegistry};
use attest_hwtests::device_present;
use attest_hwtests::support::{now, random32, validator};
use attest_registration::{EkCaBundle, ak_digest};
use std::sync::Arc;

const TPMRM0: &str = "/dev/tpmrm0";
const SEV_GUEST: &str = "/dev/sev-guest";

fn transient_ak() -> AkConfig {
    AkConfig { storage: AkStorage::Transient, ..AkConfig::default() }
}

#[test]
fn tpmrm0_quote_validates() {
    if !device_present(TPMRM0) {
        return;
    }
    let tpm = Tpm::open(&format!("device:{TPMRM0}")).expect("open /dev/tpmrm0 (permissions? the tss group)");
    let issuer = QemuVtpmIssuer::new(tpm, transient_ak()).expect("create the AK");
    let digest = ak_digest(issuer.attestation_key().tpm2b_public()).unwrap();
    let v = validator(Arc::new(StaticAkRegistry(vec![(digest, AkBasis::Pinned)])), PcrPolicy::default());
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user data", b"").expect("quote");
    let pcrs = pcr_values(&doc).unwrap();
    let ok = v.validate(&document(&doc, &pcrs), &nonce, now()).expect("the engine accepts the device's quote");
    assert_eq!(ok.ak_basis, Some(AkBasis::Pinned));
    assert!((0..24).all(|i| ok.quote.as_ref().unwrap().pcr(HashAlgorithm::Sha256, i).is_some()));
    assert!(v.validate(&document(&doc, &pcrs), &random32(), now()).is_err());
}

#[test]
fn tpmrm0_credential_activation_round_trips() {
    if !device_present(TPMRM0) {
        return;
    }
    let mut tpm = Tpm::open(&format!("device:{TPMRM0}")).unwrap();
    let ek = tpm.ek_public().expect("the RSA-2048 EK from the default template");
    let ak = tpm.attestation_key(transient_ak()).unwrap();
    let secret = random32();
    let challenge = attest_registration::make_credential(&ek.to_pkey().unwrap(), ak.name(), &secret).unwrap();
    assert_eq!(*tpm.activate_credential(&ak, &challenge).unwrap(), secret);

    // The EK certificate, when the manufacturer provisioned one, certifies the same key. Its chain needs the
    // manufacturer's CA: set ATTEST_EK_CA_BUNDLE to a PEM file to check it.
    match tpm.ek_certificate() {
        Ok(cert) => {
            let x = openssl::x509::X509::from_der(&cert).unwrap();
            assert_eq!(x.public_key().unwrap().rsa().unwrap().n().to_vec(), ek.modulus);
            match std::env::var_os("ATTEST_EK_CA_BUNDLE") {
                Some(bundle) => {
                    let ca = EkCaBundle::from_files(&[bundle]).unwrap();
                    ca.verify(&cert, &[]).expect("EK certificate chains to ATTEST_EK_CA_BUNDLE");
                }
                None => println!("SKIP: EK chain check (ATTEST_EK_CA_BUNDLE not set)"),
            }
        }
        Err(e) => println!("SKIP: no RSA-2048 EK certificate in NV 0x01c00002 ({e})"),
    }
}

#[test]
fn sev_guest_device_opens() {
    if !device_present(SEV_GUEST) {
        return;
    }
    // Only checks that the device is usable by this user; the SNP issuer itself is exercised in snp_devices.rs.
    match std::fs::OpenOptions::new().read(true).write(true).open(SEV_GUEST) {
        Ok(_) => println!("{SEV_GUEST} opens read/write"),
        Err(e) => panic!("{SEV_GUEST} exists but cannot be opened: {e}"),
    }
}
