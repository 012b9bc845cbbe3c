//! The node's hardware on the command line (cargo feature `cli`): one set of flags for every binary that
//! attests as the node it runs on — the bootstrapper (init, join, rejoin, recovery and verify endpoints) and
//! the join service (which proves itself to joining nodes with its control-plane node's evidence) — and the
//! [`NodeIssuer`] they open.
//!
//! ```text
//! [--tpm TCTI] [--snp-device /dev/sev-guest|tsm:/dir|sim:/path] [--snp-leaf FILE] [--event-log FILE]
//!     [--tdx-root /|sim:/dir] [--tdx-quote-endpoint URL]
//! ```
//!
//! The variant flag is each binary's own (the bootstrapper's `--variant`, the join service's
//! `--node-variant`, where `--variant` names the variants it admits); both take `auto` (detected from the
//! machine, [`super::select`]) or a variant of the table, and the issuer follows from the variant's row
//! ([`super::IssuerKind::of`]).

use super::error::HwIssuerError;
use super::select::{HardwareConfig, NodeIssuer, VariantChoice};
use super::sevguest::SnpDeviceAddr;
use super::tdguest::TdxPaths;
use super::tdx::QuoteEndpoint;
use std::path::{Path, PathBuf};

/// The TPM of a node when `--tpm` is not given: the kernel's resource manager.
pub const DEFAULT_TCTI: &str = "device:/dev/tpmrm0";

/// Where a node's evidence comes from (flatten it into a binary's arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct HardwareArgs {
    /// TPM TCTI: device:/dev/tpmrm0 (the kernel's resource manager, a cloud VM's vTPM) or
    /// swtpm:host=127.0.0.1,port=N. Not opened for a variant without a vTPM (qemu-tdx).
    #[arg(long, value_name = "TCTI", default_value = DEFAULT_TCTI)]
    pub tpm: String,
    /// SEV-SNP guest device: /dev/sev-guest, or sim:/path (a simulator; builds with dangerous-test-roots only).
    #[arg(long, default_value = "/dev/sev-guest", value_parser = SnpDeviceAddr::parse, value_name = "DEVICE")]
    pub snp_device: SnpDeviceAddr,
    /// VCEK/VLEK (DER or PEM) sent when the host's certificate table lacks it; on Azure the VCEK (THIM's
    /// JSON document or the certificate).
    #[arg(long, value_name = "FILE")]
    pub snp_leaf: Option<PathBuf>,
    /// TCG event log sent with every attestation (qemu-vtpm, gcp-shielded-vm), e.g.
    /// /sys/kernel/security/tpm0/binary_bios_measurements.
    #[arg(long, value_name = "FILE")]
    pub event_log: Option<PathBuf>,
    /// The TDX guest's interfaces: / (the kernel's configfs-tsm, /dev/tdx_guest, RTMRs and CCEL table), or
    /// sim:/dir (a simulator; builds with dangerous-test-roots only).
    #[arg(long, default_value = "/", value_parser = TdxPaths::parse, value_name = "ROOT")]
    pub tdx_root: TdxPaths,
    /// Azure's TD quote endpoint (azure-tdx) [default: http://169.254.169.254/acc/tdquote]; another one is
    /// a simulator's (builds with dangerous-test-roots only).
    #[arg(long, value_parser = QuoteEndpoint::parse, value_name = "URL")]
    pub tdx_quote_endpoint: Option<QuoteEndpoint>,
}

impl HardwareArgs {
    /// The hardware configuration of these flags, with the files they name read now.
    pub fn config(&self) -> Result<HardwareConfig, HwIssuerError> {
        let read =
            |p: &Path| std::fs::read(p).map_err(|source| HwIssuerError::ConfigFile { path: p.to_owned(), source });
        let mut config = HardwareConfig::new(&self.tpm);
        config.snp_device = self.snp_device.clone();
        config.snp_leaf = self.snp_leaf.as_deref().map(read).transpose()?;
        config.event_log = self.event_log.as_deref().map(read).transpose()?;
        config.tdx = self.tdx_root.clone();
        if let Some(endpoint) = &self.tdx_quote_endpoint {
            config.tdx_quote_endpoint = endpoint.clone();
        }
        Ok(config)
    }

    /// Whether these flags name simulated hardware (an SNP device simulator, a simulated TDX root, a stand-in
    /// of Azure's quote endpoint): only builds with the feature dangerous-test-roots may use it.
    pub fn is_simulated(&self) -> bool {
        self.snp_device.is_simulated()
            || self.tdx_root.is_simulated()
            || self.tdx_quote_endpoint.as_ref().is_some_and(|e| !e.is_azure())
    }

    /// Opens the node's issuer of `choice` on this hardware ([`NodeIssuer::open`]).
    pub fn open(&self, choice: VariantChoice) -> Result<NodeIssuer, HwIssuerError> {
        NodeIssuer::open(choice, &self.config()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Args {
        #[command(flatten)]
        hw: HardwareArgs,
    }

    #[test]
    fn flags_parse_and_files_are_read_with_their_path_in_the_error() {
        let a = Args::try_parse_from(["x", "--tpm", "swtpm:port=1", "--snp-device", "sim:/s"]).unwrap();
        assert_eq!(a.hw.snp_device, SnpDeviceAddr::Simulator("/s".into()));
        assert_eq!(Args::try_parse_from(["x"]).unwrap().hw.tpm, DEFAULT_TCTI, "the kernel's resource manager");
        assert!(Args::try_parse_from(["x", "--tpm", "t", "--snp-device", "relative"]).is_err());
        let a = Args::try_parse_from(["x", "--tpm", "t", "--snp-leaf", "/nonexistent/leaf.der"]).unwrap();
        let err = a.hw.config().unwrap_err();
        assert!(matches!(&err, HwIssuerError::ConfigFile { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/leaf.der"), "{err}");
        assert!(std::error::Error::source(&err).is_some());
    }
}
