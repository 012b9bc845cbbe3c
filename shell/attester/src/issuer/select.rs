//! Choosing the issuer of a node: by name, or detected from the machine — never by falling back.
//!
//! Detection looks at what each cloud provisions (no network, no metadata service):
//!
//! | found | variant |
//! |---|---|
//! | the TDX guest device, an HCL report of TDX type and the HCL AK; nothing else | `azure-tdx` |
//! | the TDX guest device and nothing else (or no TPM at all) | `qemu-tdx` |
//! | vTPM NV 0x01400001 (HCL report, SNP type) and the HCL AK at 0x81000003; no SEV-SNP guest device, no GCE AK | `azure-sev-snp` |
//! | SEV-SNP guest device and a GCE AK (template + certificate in NV); no HCL report | `gcp-sev-snp` |
//! | SEV-SNP guest device whose reports are VLEK-signed; no GCE AK, no HCL report | `aws-sev-snp` |
//! | a GCE AK; no SEV-SNP guest device, no HCL report | `gcp-shielded-vm` |
//!
//! Anything else is an error that names everything found ([`HwIssuerError::Detection`]): two clouds' marks at
//! once, an SNP guest whose reports are VCEK-signed without a GCE AK (neither AWS nor GCP as we know them),
//! or a TPM and nothing else — `qemu-vtpm` (no confidential hardware) is never a detection result, because
//! choosing the variant without hardware evidence must be the operator's explicit decision.
//!
//! ```no_run
//! use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice};
//! let config = HardwareConfig::new("device:/dev/tpmrm0");
//! let issuer = NodeIssuer::open(VariantChoice::Auto, &config)?;
//! println!("attesting as {}", issuer.variant());
//! # Ok::<(), attest_attester::issuer::HwIssuerError>(())
//! ```

use super::error::HwIssuerError;
use super::gce::{GceAkKind, GceIssuer, gce_ak_present};
use super::sevguest::{SnpDeviceAddr, SnpGuestDevice};
use super::snp::SnpIssuer;
use super::tdguest::{TdxGuest, TdxPaths};
use super::tdx::{AzureTdxIssuer, QemuTdxIssuer, QuoteEndpoint};
use super::{AzureSnpIssuer, QemuVtpmIssuer};
use crate::tpm::nv::{AZURE_AK_HANDLE, AZURE_HCL_REPORT_NV_INDEX};
use crate::tpm::{AkConfig, Tpm};
use attest_engine::snp::SigningKey;
use attest_engine::variant::{AkTrust, Hardware, Variant};
use attest_proto::attest::v1::AttestationDocument;
use core::fmt;
use std::sync::Arc;

/// `--variant`: a name, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariantChoice {
    /// Detect from the machine (see the module docs).
    Auto,
    /// This variant.
    Fixed(Variant),
}

impl From<Option<Variant>> for VariantChoice {
    /// `None` is [`VariantChoice::Auto`].
    fn from(v: Option<Variant>) -> Self {
        v.map_or(Self::Auto, Self::Fixed)
    }
}

impl std::str::FromStr for VariantChoice {
    type Err = HwIssuerError;

    fn from_str(s: &str) -> Result<Self, HwIssuerError> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        Variant::from_name(s).map(Self::Fixed).ok_or_else(|| HwIssuerError::UnknownVariant { name: s.to_owned() })
    }
}

/// Where the node's evidence comes from.
#[derive(Clone, Debug)]
pub struct HardwareConfig {
    /// The TPM's TCTI (`device:/dev/tpmrm0` on a cloud VM, `swtpm:…` for swtpm).
    pub tcti: String,
    /// The SEV-SNP guest device.
    pub snp_device: SnpDeviceAddr,
    /// The VCEK/VLEK to send when the host's certificate table lacks it (SNP variants), or Azure's VCEK
    /// (DER, PEM or THIM's JSON document).
    pub snp_leaf: Option<Vec<u8>>,
    /// The TCG event log sent with every document (`qemu-vtpm`, `gcp-shielded-vm`).
    pub event_log: Option<Vec<u8>>,
    /// Which GCE AK (`None`: ECC when present, else RSA).
    pub gce_ak: Option<GceAkKind>,
    /// How the `qemu-vtpm` / SNP variants obtain their AK.
    pub ak: AkConfig,
    /// Where the TDX guest's interfaces are (`/`, or a simulated root).
    pub tdx: TdxPaths,
    /// Azure's TD quote endpoint (`azure-tdx`).
    pub tdx_quote_endpoint: QuoteEndpoint,
}

impl HardwareConfig {
    /// The TPM at `tcti`, the standard SEV-SNP guest device, nothing else configured.
    pub fn new(tcti: &str) -> Self {
        Self {
            tcti: tcti.to_owned(),
            snp_device: SnpDeviceAddr::default(),
            snp_leaf: None,
            event_log: None,
            gce_ak: None,
            ak: AkConfig::default(),
            tdx: TdxPaths::system(),
            tdx_quote_endpoint: QuoteEndpoint::default(),
        }
    }
}

/// What detection found on the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// The SEV-SNP guest device, when it exists.
    pub snp_device: Option<String>,
    /// Whether the SNP device signs with a VLEK (asked only when it matters).
    pub snp_signing_key: Option<SigningKey>,
    /// Azure's HCL report index.
    pub azure_hcl_report: bool,
    /// Azure's HCL AK.
    pub azure_ak: bool,
    /// Google's ECC AK (template and certificate).
    pub gce_ak_ecc: bool,
    /// Google's RSA AK (template and certificate).
    pub gce_ak_rsa: bool,
    /// A TDX guest interface (configfs-tsm or `/dev/tdx_guest`).
    pub tdx_guest: bool,
    /// The HCL report is of TDX type (Azure TDX).
    pub azure_hcl_tdx: bool,
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec!["a TPM".to_owned()];
        if let Some(d) = &self.snp_device {
            let key = match self.snp_signing_key {
                Some(SigningKey::Vlek) => " (VLEK-signed reports)",
                Some(SigningKey::Vcek) => " (VCEK-signed reports)",
                None => "",
            };
            parts.push(format!("the SEV-SNP guest device {d}{key}"));
        }
        if self.azure_hcl_report {
            parts.push("Azure's HCL report (NV 0x01400001)".into());
        }
        if self.azure_ak {
            parts.push("a key at Azure's AK handle 0x81000003".into());
        }
        if self.gce_ak_ecc {
            parts.push("Google's ECC AK (NV 0x01c10002/3)".into());
        }
        if self.gce_ak_rsa {
            parts.push("Google's RSA AK (NV 0x01c10000/1)".into());
        }
        if self.tdx_guest {
            parts.push("a TDX guest".into());
        }
        if self.azure_hcl_tdx {
            parts.push("an HCL report of TDX type".into());
        }
        f.write_str(&parts.join(", "))
    }
}

/// Detects the variant of this machine (module docs). `tpm` is the node's TPM; the SNP device is asked for
/// one report (REPORT_DATA all zero) only when its signing key decides between AWS and GCP.
pub fn detect(tpm: &mut Tpm, snp_device: &SnpDeviceAddr) -> Result<(Variant, Findings), HwIssuerError> {
    detect_with(tpm, snp_device, &TdxPaths::system())
}

/// [`detect`] with the TDX guest's interfaces at `tdx` (a simulated root in tests and the demo).
pub fn detect_with(
    tpm: &mut Tpm,
    snp_device: &SnpDeviceAddr,
    tdx: &TdxPaths,
) -> Result<(Variant, Findings), HwIssuerError> {
    let mut found = Findings {
        snp_device: snp_device.exists().then(|| snp_device.to_string()),
        azure_hcl_report: tpm.handle_exists(AZURE_HCL_REPORT_NV_INDEX)?,
        azure_ak: false,
        gce_ak_ecc: gce_ak_present(tpm, GceAkKind::Ecc)?,
        gce_ak_rsa: gce_ak_present(tpm, GceAkKind::Rsa)?,
        snp_signing_key: None,
        tdx_guest: tdx.exists(),
        azure_hcl_tdx: false,
    };
    if found.azure_hcl_report {
        found.azure_hcl_tdx = super::tdx::hcl_td_report(&tpm.nv_read(AZURE_HCL_REPORT_NV_INDEX)?).is_ok();
    }
    // Our own qemu-vtpm AK also lives at 0x81000003; it counts as Azure's only next to the HCL report.
    found.azure_ak = found.azure_hcl_report && tpm.handle_exists(AZURE_AK_HANDLE)?;
    let snp = found.snp_device.is_some();
    let gce = found.gce_ak_ecc || found.gce_ak_rsa;
    let azure = found.azure_hcl_report;
    let fail = |found: &Findings, reason: &'static str| HwIssuerError::Detection { found: found.to_string(), reason };
    if found.tdx_guest {
        return match (snp, azure, gce) {
            (false, true, false) if found.azure_ak && found.azure_hcl_tdx => Ok((Variant::AzureTdx, found)),
            (false, false, false) => Ok((Variant::QemuTdx, found)),
            _ => Err(fail(&found, "a TDX guest next to another platform's marks; pass --variant")),
        };
    }
    let variant = match (snp, azure, gce) {
        (false, true, false) if found.azure_ak && found.azure_hcl_tdx => {
            return Err(fail(&found, "an HCL report of TDX type without a TDX guest interface"));
        }
        (false, true, false) if found.azure_ak => Variant::AzureSevSnp,
        (false, true, false) => return Err(fail(&found, "an HCL report without the HCL AK at 0x81000003")),
        (true, false, true) => Variant::GcpSevSnp,
        (false, false, true) => Variant::GcpShieldedVm,
        (true, false, false) => {
            let device = SnpGuestDevice::open(snp_device)?;
            let (report, _) = device.ext_report(&[0; 64], super::snp::REPORT_VMPL)?;
            let key = attest_engine::snp::Report::parse(&report)?.signing_key();
            found.snp_signing_key = Some(key);
            match key {
                SigningKey::Vlek => Variant::AwsSevSnp,
                SigningKey::Vcek => {
                    return Err(fail(
                        &found,
                        "an SEV-SNP guest with VCEK-signed reports and no GCE AK is neither AWS (VLEK) nor GCP \
                         (GCE vTPM); pass --variant",
                    ));
                }
            }
        }
        (false, false, false) => {
            return Err(fail(
                &found,
                "no confidential-computing hardware found; to attest with the TPM alone, pass --variant qemu-vtpm",
            ));
        }
        _ => return Err(fail(&found, "the marks of more than one cloud; pass --variant")),
    };
    Ok((variant, found))
}

/// Which issuer serves a variant, as its row of the variant table says (how the AK is trusted × which
/// hardware): the one place that maps variants to evidence sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssuerKind {
    /// A TPM alone, its AK registered or pinned ([`QemuVtpmIssuer`]).
    Qemu,
    /// A fresh SEV-SNP report per attestation binding the vTPM's AK ([`SnpIssuer`]).
    Snp,
    /// Azure's paravisor vTPM: HCL report and HCL AK ([`AzureSnpIssuer`]).
    Azure,
    /// The GCE vTPM with Google's AK certificate ([`GceIssuer`]).
    Gce,
    /// A TD without a vTPM: TD quotes from the TDX guest ([`QemuTdxIssuer`]).
    QemuTdx,
    /// Azure's paravisor vTPM on TDX: HCL report, HCL AK, TD quote from the quote endpoint ([`AzureTdxIssuer`]).
    AzureTdx,
}

impl IssuerKind {
    /// The issuer of `variant`; `None` where the row pairs an AK trust with hardware no issuer serves.
    pub fn of(variant: Variant) -> Option<IssuerKind> {
        let info = variant.info();
        match (info.ak, info.hardware) {
            (AkTrust::Registry, Hardware::None) => Some(IssuerKind::Qemu),
            (AkTrust::FreshReportBinding, Hardware::SevSnp { .. }) => Some(IssuerKind::Snp),
            (AkTrust::HclRuntimeData, Hardware::SevSnp { .. }) => Some(IssuerKind::Azure),
            (AkTrust::ProviderCertificate, Hardware::None) => Some(IssuerKind::Gce),
            (AkTrust::NoAk, Hardware::Tdx) => Some(IssuerKind::QemuTdx),
            (AkTrust::HclRuntimeData, Hardware::Tdx) => Some(IssuerKind::AzureTdx),
            (AkTrust::Registry | AkTrust::ProviderCertificate, Hardware::SevSnp { .. } | Hardware::Tdx)
            | (AkTrust::HclRuntimeData | AkTrust::FreshReportBinding, Hardware::None)
            | (AkTrust::FreshReportBinding, Hardware::Tdx)
            | (AkTrust::NoAk, Hardware::None | Hardware::SevSnp { .. }) => None,
        }
    }
}

/// The issuer of a node, of whichever variant.
#[derive(Debug)]
pub enum NodeIssuer {
    /// `qemu-vtpm` (shared: AK registration uses it too).
    Qemu(Arc<QemuVtpmIssuer>),
    /// `aws-sev-snp`, `gcp-sev-snp`.
    Snp(SnpIssuer),
    /// `azure-sev-snp`.
    Azure(AzureSnpIssuer),
    /// `gcp-shielded-vm`.
    Gce(GceIssuer),
    /// `qemu-tdx` (no vTPM).
    QemuTdx(QemuTdxIssuer),
    /// `azure-tdx`.
    AzureTdx(AzureTdxIssuer),
}

impl NodeIssuer {
    /// Opens the issuer of `choice` with `config` (detecting the variant for [`VariantChoice::Auto`]; the
    /// detection is logged with everything it found).
    ///
    /// A variant without a vTPM (`qemu-tdx`) opens no TPM; detection (`Auto`) needs one, and falls back to
    /// the TDX guest alone when there is none.
    pub fn open(choice: VariantChoice, config: &HardwareConfig) -> Result<Self, HwIssuerError> {
        let (variant, tpm) = match choice {
            VariantChoice::Fixed(v) if !v.has_vtpm() => (v, None),
            VariantChoice::Fixed(v) => (v, Some(Tpm::open(&config.tcti)?)),
            VariantChoice::Auto => match Tpm::open(&config.tcti) {
                Ok(mut tpm) => {
                    let (v, found) = detect_with(&mut tpm, &config.snp_device, &config.tdx)?;
                    tracing::info!(variant = %v, found = %found, "attestation variant detected");
                    (v, Some(tpm))
                }
                Err(e) if config.tdx.exists() => {
                    tracing::info!(error = %e, "no TPM, a TDX guest: attesting as qemu-tdx");
                    (Variant::QemuTdx, None)
                }
                Err(e) => return Err(e.into()),
            },
        };
        let event_log = config.event_log.clone().unwrap_or_default();
        let kind = IssuerKind::of(variant).ok_or(HwIssuerError::UnsupportedVariant(variant))?;
        if kind == IssuerKind::QemuTdx {
            return Ok(Self::QemuTdx(QemuTdxIssuer::new(TdxGuest::open(&config.tdx)?)?));
        }
        let Some(mut tpm) = tpm else { return Err(HwIssuerError::UnsupportedVariant(variant)) };
        Ok(match kind {
            IssuerKind::QemuTdx => return Err(HwIssuerError::UnsupportedVariant(variant)),
            IssuerKind::AzureTdx => Self::AzureTdx(AzureTdxIssuer::new(tpm, config.tdx_quote_endpoint.clone())?),
            IssuerKind::Qemu => {
                let ek = tpm.ek_certificate().unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "no EK certificate; AK registration will not be possible");
                    Vec::new()
                });
                let issuer = QemuVtpmIssuer::new(tpm, config.ak)?.with_event_log(event_log).with_ek_certificate(ek);
                Self::Qemu(Arc::new(issuer))
            }
            IssuerKind::Snp => {
                let device = SnpGuestDevice::open(&config.snp_device)?;
                let mut issuer = SnpIssuer::new(variant, QemuVtpmIssuer::new(tpm, config.ak)?, device)?;
                if let Some(leaf) = &config.snp_leaf {
                    issuer = issuer.with_leaf_certificate(leaf)?;
                }
                Self::Snp(issuer)
            }
            IssuerKind::Azure => {
                let vcek = config.snp_leaf.as_deref().ok_or(HwIssuerError::MissingLeafCertificate {
                    want: "VCEK (Azure: THIM's document or the certificate)",
                })?;
                Self::Azure(AzureSnpIssuer::new(tpm, vcek)?)
            }
            IssuerKind::Gce => Self::Gce(GceIssuer::new(tpm, config.gce_ak)?.with_event_log(event_log)),
        })
    }

    /// The variant of the documents this issuer produces.
    pub fn variant(&self) -> Variant {
        match self {
            Self::Qemu(_) => Variant::QemuVtpm,
            Self::Snp(i) => i.variant(),
            Self::Azure(_) => Variant::AzureSevSnp,
            Self::Gce(_) => Variant::GcpShieldedVm,
            Self::QemuTdx(_) => Variant::QemuTdx,
            Self::AzureTdx(_) => Variant::AzureTdx,
        }
    }

    /// Whether the evidence comes from simulated hardware (a simulated SEV-SNP guest device).
    pub fn is_simulated(&self) -> bool {
        match self {
            Self::Snp(i) => i.device().addr().is_simulated(),
            Self::QemuTdx(i) => i.guest().is_simulated(),
            Self::AzureTdx(i) => i.is_simulated(),
            Self::Qemu(_) | Self::Azure(_) | Self::Gce(_) => false,
        }
    }

    /// The TDX guest of a `qemu-tdx` node: its node lock extends RTMR3 ([`super::tdguest::LOCK_RTMR`]) and reads
    /// it back from the TD report, as it has no vTPM.
    pub fn tdx_guest(&self) -> Option<&TdxGuest> {
        match self {
            Self::QemuTdx(i) => Some(i.guest()),
            _ => None,
        }
    }

    /// The `qemu-vtpm` issuer underneath, where AK registration applies (`qemu-vtpm` only).
    pub fn qemu(&self) -> Option<&Arc<QemuVtpmIssuer>> {
        match self {
            Self::Qemu(i) => Some(i),
            _ => None,
        }
    }

    /// Runs `f` with exclusive use of the node's TPM (the one the quotes come from);
    /// [`HwIssuerError::DeviceNotPresent`] for a variant without a vTPM (`qemu-tdx`: see
    /// [`NodeIssuer::tdx_guest`]).
    pub fn with_tpm<T>(&self, f: impl FnOnce(&mut Tpm) -> T) -> Result<T, HwIssuerError> {
        Ok(match self {
            Self::Qemu(i) => i.with_tpm(|tpm, _| f(tpm)),
            Self::Snp(i) => i.tpm_issuer().with_tpm(|tpm, _| f(tpm)),
            Self::Azure(i) => i.with_tpm(f),
            Self::Gce(i) => i.with_tpm(f),
            Self::AzureTdx(i) => i.with_tpm(f),
            Self::QemuTdx(_) => return Err(HwIssuerError::DeviceNotPresent { device: "a vTPM (qemu-tdx has none)" }),
        })
    }

    /// Issues a document for `nonce`, binding `user_data` and `instance_info`.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        match self {
            Self::Qemu(i) => Ok(i.issue(nonce, user_data, instance_info)?),
            Self::Snp(i) => i.issue(nonce, user_data, instance_info),
            Self::Azure(i) => i.issue(nonce, user_data, instance_info),
            Self::Gce(i) => i.issue(nonce, user_data, instance_info),
            Self::QemuTdx(i) => i.issue(nonce, user_data, instance_info),
            Self::AzureTdx(i) => i.issue(nonce, user_data, instance_info),
        }
    }
}

/// Documents of the node's variant, under that variant's OID.
impl attest_atls::AttestationIssuer for NodeIssuer {
    fn oid(&self) -> &str {
        self.variant().oid()
    }

    fn issue(&self, nonce: &attest_atls::nonce::Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, attest_atls::BoxError> {
        use prost::Message as _;
        Ok(NodeIssuer::issue(self, nonce, user_data, &[])?.encode_to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!("auto".parse::<VariantChoice>().unwrap(), VariantChoice::Auto);
        assert_eq!("aws-sev-snp".parse::<VariantChoice>().unwrap(), VariantChoice::Fixed(Variant::AwsSevSnp));
        let err = "azure".parse::<VariantChoice>().unwrap_err().to_string();
        assert!(err.contains("azure-sev-snp") && err.contains("auto"), "{err}");
    }

    #[test]
    fn findings_name_everything() {
        let f = Findings {
            snp_device: Some("/dev/sev-guest".into()),
            snp_signing_key: Some(SigningKey::Vcek),
            azure_hcl_report: true,
            azure_ak: true,
            gce_ak_ecc: true,
            gce_ak_rsa: false,
            tdx_guest: true,
            azure_hcl_tdx: false,
        };
        let text = f.to_string();
        for part in ["/dev/sev-guest", "VCEK-signed", "HCL report", "0x81000003", "ECC AK", "TDX guest"] {
            assert!(text.contains(part), "{text}");
        }
        assert!(!text.contains("RSA AK"));
    }
}
