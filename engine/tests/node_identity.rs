//! The node identity of real evidence: what [`Validated::node_identity`] derives from what each
//! variant's verifier verified, for the identities that real documents carry in testdata — Azure's
//! `vmUniqueId` in the HCL runtime data of five real VMs (SEV-SNP and TDX), bound by their hardware reports,
//! and the GCE instance in Google's real AK certificate — and that a verified result without that part names
//! no node at all (the join service then refuses: nothing is bound to a guess).

mod common;
#[path = "common/gce_pb.rs"]
mod gce_pb;

use attest_engine::UnixTime;
use attest_engine::azure::{HardwareReportType, HclReport, RuntimeData};
use attest_engine::crypto::default_provider;
use attest_engine::error::Error;
use attest_engine::gce::instance::InstanceInfo;
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerifier};
use attest_engine::policy::LaunchPinning;
use attest_engine::variant::{IdentitySource, NodeIdentity, TABLE, Validated, Variant};

/// A verified result of `variant` that carries only the identity-bearing parts given.
fn validated(
    variant: Variant,
    vm_id: Option<[u8; 16]>,
    instance: Option<InstanceInfo<'_>>,
    ak_digest: Option<[u8; 32]>,
) -> Validated<'_> {
    Validated {
        variant,
        quote: None,
        snp: None,
        td: None,
        ccel: None,
        ak_basis: None,
        pcrs: Vec::new(),
        event_log_replayed: false,
        user_data: &[],
        instance,
        launch: LaunchPinning::NotApplicable,
        measurement_set: 0,
        ak_digest,
        vm_id,
    }
}

/// The `vmUniqueId` as the runtime data's JSON spells it.
fn vm_unique_id_text(var_data: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(var_data).unwrap();
    v["vm-configuration"]["vmUniqueId"].as_str().unwrap().to_owned()
}

#[test]
fn azure_vm_ids_of_real_vms_are_their_identities_and_bound_by_the_hardware_report() {
    let Some(dir) = common::testdata() else { return };
    let mut seen = Vec::new();
    for file in [
        "trustee-az-snp-vtpm/hcl-report.bin",
        "azure-cvm-tooling/hcl-report-snp.bin",
        "trustee-az-tdx-vtpm/hcl-report.bin",
        "azure-cvm-tooling/hcl-report-tdx.bin",
        "constellation-azure-tdx/hclreport.bin",
    ] {
        let bytes = common::read(&dir, file);
        let hcl = HclReport::parse(&bytes).unwrap();
        // The hardware report binds the runtime data (SNP: REPORT_DATA; TD: TDREPORT.report_data).
        let (variant, bound) = match hcl.report_type() {
            HardwareReportType::Snp => (Variant::AzureSevSnp, hcl.check_binding(default_provider()).is_ok()),
            HardwareReportType::Tdx => (
                Variant::AzureTdx,
                hcl.hardware_report()[128..160] == default_provider().digests.sha256(hcl.variable_data()),
            ),
        };
        assert!(bound, "{file}: the runtime data is not the one the hardware report binds");
        let runtime = RuntimeData::parse(hcl.variable_data()).unwrap();
        let id = validated(variant, runtime.vm_unique_id().copied(), None, None).node_identity().unwrap();
        let text = vm_unique_id_text(hcl.variable_data());
        assert_eq!(id.as_str(), format!("azure-vm:{}", text.to_ascii_lowercase()), "{file}");
        assert_eq!(id.source(), IdentitySource::HclVmId);
        assert!(id.source().per_vm());
        assert_eq!(NodeIdentity::parse(id.as_str()), Some(id.clone()), "{file}: the text form round-trips");
        assert!(!seen.contains(&id), "{file}: five VMs, five identities");
        seen.push(id);

        // Another VM id in the same runtime data is no longer what the hardware report binds: a guest (or its
        // host) cannot choose the identity without breaking the binding the verifier checks first.
        let at = bytes.windows(text.len()).position(|w| w == text.as_bytes()).unwrap();
        let mut forged = bytes.clone();
        forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
        let hcl = HclReport::parse(&forged).unwrap();
        let still_bound = match hcl.report_type() {
            HardwareReportType::Snp => hcl.check_binding(default_provider()).is_ok(),
            HardwareReportType::Tdx => {
                hcl.hardware_report()[128..160] == default_provider().digests.sha256(hcl.variable_data())
            }
        };
        assert!(!still_bound, "{file}: a changed vmUniqueId still bound");
    }

    // The same runtime data without a vmUniqueId names no node.
    let bytes = common::read(&dir, "trustee-az-snp-vtpm/hcl-report.bin");
    let hcl = HclReport::parse(&bytes).unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(hcl.variable_data()).unwrap();
    json["vm-configuration"].as_object_mut().unwrap().remove("vmUniqueId");
    let runtime = serde_json::to_vec(&json).unwrap();
    let runtime = RuntimeData::parse(&runtime).unwrap();
    assert!(runtime.vm_unique_id().is_none());
    for variant in [Variant::AzureSevSnp, Variant::AzureTdx] {
        assert!(matches!(
            validated(variant, None, None, Some([7; 32])).node_identity(),
            Err(Error::MissingEvidence { .. })
        ));
    }
}

#[test]
fn the_gce_instance_in_googles_real_ak_certificate_is_the_identity() {
    let Some(dir) = common::testdata() else { return };
    let parts = gce_pb::Parts::load(&common::read(&dir, "go-tpm-tools/gce-cos-85-no-nonce.pb"));
    let ev = parts.evidence().unwrap();
    let request = GceRequest { nonce: ExpectedNonce::DangerousNone, time: UnixTime::parse("2025-06-01").unwrap() };
    let ok = GceVerifier::new().verify(&ev, &request, &GcePolicy::default()).unwrap();
    let info = *ok.instance();
    let id = validated(Variant::GcpShieldedVm, None, Some(info), None).node_identity().unwrap();
    // The instance id 0x5E53E3FBBF8306C5 ("cos-test") under its project's number: not the name, which the
    // project's owner may reuse for another instance.
    assert_eq!(id.as_str(), format!("gce:{}/{}", info.project_number, 0x5E53_E3FB_BF83_06C5_u64));
    assert_eq!(id.source(), IdentitySource::ProviderInstance);
    assert_eq!(NodeIdentity::parse(id.as_str()), Some(id.clone()));
    // Without the certified instance there is no identity, whatever else the result holds.
    assert!(matches!(
        validated(Variant::GcpShieldedVm, Some([1; 16]), None, Some([7; 32])).node_identity(),
        Err(Error::MissingEvidence { .. })
    ));
}

#[test]
fn a_result_without_its_identity_part_names_no_node_in_any_variant() {
    for row in &TABLE {
        let e = validated(row.variant, None, None, None).node_identity();
        assert!(matches!(e, Err(Error::MissingEvidence { .. })), "{}: {e:?}", row.name);
    }
    // The AK digest names a node only where the table says the AK does, under the prefix of its trust path.
    let ak = [0xab; 32];
    for row in &TABLE {
        let id = validated(row.variant, None, None, Some(ak)).node_identity();
        match row.identity {
            IdentitySource::RegisteredAk => assert_eq!(id.unwrap().as_str(), format!("ak:{}", "ab".repeat(32))),
            IdentitySource::ReportBoundAk => {
                assert_eq!(id.unwrap().as_str(), format!("snp-ak:{}", "ab".repeat(32)));
            }
            _ => assert!(matches!(id, Err(Error::MissingEvidence { .. })), "{}", row.name),
        }
    }
}
