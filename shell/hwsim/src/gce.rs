//! A simulated GCE vTPM: a TPM (swtpm) provisioned as Google provisions a Shielded VM's vTPM — an AK
//! template and an AK certificate from a Google-like CA at Google's NV indices — plus a measured boot whose
//! TCG event log the issuer sends.
//!
//! ```text
//!  template (restricted signing ECC P-256 or RSA-2048) ──NV_Write──► 0x01c10003 / 0x01c10001
//!  TPM2_CreatePrimary(endorsement, template) ──► AK ──Google-like CA──► AK certificate (instance extension)
//!                                                                  ──NV_Write──► 0x01c10002 / 0x01c10000
//!  measured boot: a typical firmware log + the image's events ──TPM2_PCR_Extend──► PCRs; the log ──► a file
//! ```
//!
//! The CA lives in the test-root directory (`gce/root.der` for verifiers, `gce/ca.pkcs8` for later
//! provisioning runs), created on first use.

use attest_attester::issuer::gce::GceAkKind;
use attest_attester::issuer::snp::HwIssuerError;
use attest_attester::tpm::{AkAlgorithm, Tpm, ak_template_bytes};
use attest_engine::tpm::{AkPublic, TpmtPublic};
use attest_kds::test_roots::{MARKER, files};
use attest_test_support::gce::{GoogleLikeCa, InstanceSpec, p256_spki, rsa_spki};
use attest_test_support::tpm::{EventLogBuilder, event_type};
use std::path::Path;

/// The CA's private key in the test-root directory.
pub const CA_KEY_FILE: &str = "gce/ca.pkcs8";
/// The CA's common name.
pub const CA_NAME: &str = "attest-hwsim TEST Google-like EK/AK CA root";

fn io(op: &'static str) -> impl Fn(std::io::Error) -> HwIssuerError {
    move |e| HwIssuerError::Device { op, reason: e.to_string() }
}

/// The Google-like CA of the test-root directory `dir`, created (and its root written) when absent.
pub fn ca(dir: &Path) -> Result<GoogleLikeCa, HwIssuerError> {
    let (root, key) = (dir.join(files::GCE_ROOT), dir.join(CA_KEY_FILE));
    if let (Ok(der), Ok(pkcs8)) = (std::fs::read(&root), std::fs::read(&key)) {
        return GoogleLikeCa::from_parts(der, &pkcs8, CA_NAME)
            .ok_or(HwIssuerError::Device { op: "reading the test CA", reason: "the key does not parse".into() });
    }
    let ca = GoogleLikeCa::root(CA_NAME);
    std::fs::create_dir_all(dir.join("gce")).map_err(io("creating the test-root directory"))?;
    std::fs::write(dir.join(MARKER), crate::BANNER).map_err(io("writing the marker"))?;
    std::fs::write(&key, ca.pkcs8()).map_err(io("writing the test CA key"))?;
    std::fs::write(&root, &ca.der).map_err(io("writing the test CA root"))?;
    Ok(ca)
}

/// The SubjectPublicKeyInfo of an AK's TPMT_PUBLIC.
fn spki(tpmt_public: &[u8]) -> Result<Vec<u8>, HwIssuerError> {
    Ok(match TpmtPublic::parse(tpmt_public)?.key() {
        AkPublic::Rsa { modulus, exponent } => {
            let e = if exponent == 0 { 65_537u32 } else { exponent }.to_be_bytes();
            rsa_spki(modulus, &e[e.iter().position(|b| *b != 0).unwrap_or(3)..])
        }
        AkPublic::Ecc { x, y, .. } => p256_spki(&[&[4u8][..], x, y].concat()),
    })
}

/// Provisions `tpm` as a GCE vTPM named by `instance`, with the CA of the test-root directory `dir`, and runs
/// a measured boot: a typical firmware log plus one EV_IPL event per `(pcr, data)` of `image`. Returns the
/// event log (what `/sys/kernel/security/tpm0/binary_bios_measurements` would hold).
pub fn provision(
    tpm: &mut Tpm,
    dir: &Path,
    instance: &InstanceSpec,
    kind: GceAkKind,
    image: &[(u8, Vec<u8>)],
) -> Result<Vec<u8>, HwIssuerError> {
    let ca = ca(dir)?;
    let (cert_index, template_index) = kind.nv_indices();
    let alg = match kind {
        GceAkKind::Ecc => AkAlgorithm::EccP256,
        GceAkKind::Rsa => AkAlgorithm::Rsa2048,
    };
    let template = ak_template_bytes(alg)?;
    tpm.nv_define_and_write(template_index, &template)?;
    let ak = tpm.attestation_key_from_template(&template)?;
    let cert = ca.ak_certificate(&spki(ak.tpmt_public())?, instance);
    tpm.nv_define_and_write(cert_index, &cert)?;

    let mut log = EventLogBuilder::typical_boot();
    for (pcr, data) in image {
        log = log.event(*pcr, event_type::EV_IPL, data);
    }
    measure(tpm, log.bytes())?;
    Ok(log.into_bytes())
}

/// Extends every measured event of a crypto-agile log (SHA-256 only, as [`EventLogBuilder`] writes) into
/// the TPM.
fn measure(tpm: &mut Tpm, log: &[u8]) -> Result<(), HwIssuerError> {
    let bad = || HwIssuerError::Device { op: "replaying the boot log", reason: "malformed log".into() };
    let u32_at = |at: usize| -> Result<u32, HwIssuerError> {
        Ok(u32::from_le_bytes(log.get(at..at + 4).ok_or_else(bad)?.try_into().map_err(|_| bad())?))
    };
    // The first event is the TCG_PCClientPCREvent Spec ID header: PCR, type, SHA-1 digest (20), size, data.
    let mut at = 28 + u32_at(28)? as usize + 4;
    while at < log.len() {
        let pcr = u8::try_from(u32_at(at)?).map_err(|_| bad())?;
        let kind = u32_at(at + 4)?;
        // count (1) · algorithm (SHA-256) · digest[32] · size · data
        let digest: [u8; 32] = log.get(at + 14..at + 46).ok_or_else(bad)?.try_into().map_err(|_| bad())?;
        let size = u32_at(at + 46)? as usize;
        if kind != event_type::EV_NO_ACTION {
            tpm.extend_pcr(pcr, &digest)?;
        }
        at += 50 + size;
    }
    Ok(())
}
