//! `attest recover`: hand a rebooted node that cannot reach any join service the cluster's master secret, so
//! it can reopen its state disk (`recover.API/Recover`, `docs/ARCHITECTURE.md`, "Node lifecycle").
//!
//! ```text
//!  aTLS to the node's recovery endpoint (port 9999 in a cluster); the node attests:
//!    AK from the registry, PCRs against the measurements (PCR 15 = 0: a rebooted node), fresh nonce,
//!    certificate key bound ──refused──▶ REFUSED, exit 1: the master secret is never sent
//!  Recover{kms_uri = the master secret as a KMS URI, storage_uri}
//!    ok ──▶ RECOVERED, exit 0      a status ──▶ FAILED with it, exit 1
//! ```
//!
//! The master secret goes only over a connection whose peer proved, in this handshake, that it runs the
//! expected measurements with a registered AK; it is never printed.
//!
//! Exit statuses: 0 recovered; 1 refused (the node's attestation) or failed (network, the node's answer);
//! 2 usage.

use super::node::{self, CONNECT_TIMEOUT, reason, verifying_connector};
use super::{Status, UsageError};
use attest_atls::grpc::{ConnectError, connect};
use attest_grpc::{ChannelConfig, Metadata};
use attest_keyservice::MasterSecret;
use attest_proto::paths;
use attest_proto::recover::{RecoverMessage, RecoverResponse};
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// The storage URI sent (no remote storage: Constellation's "no-op" store, as `attest init` sends).
pub const STORAGE_URI: &str = "storage://no-op";

/// `attest recover` arguments.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The node (its recovery endpoint), its measurements and the AK registry.
    #[command(flatten)]
    pub target: node::NodeTarget,
    /// The master secret file (as `attest init` or `attest secret new` wrote it).
    #[arg(long)]
    pub master_secret: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The node's variant and what its validator needs.
    #[command(flatten)]
    pub node: node::VariantArgs,
    /// Measurements signature, launch pinning, CRLs and their waivers.
    #[command(flatten)]
    pub trust: attest_trust::TrustArgs,
}

/// How a recovery ended.
#[derive(Debug)]
enum Outcome {
    Recovered,
    /// The node's attestation was refused (nothing was sent).
    Refused(String),
    /// Network trouble or the node's own error.
    Failed(String),
}

/// Runs `attest recover`; the verdict goes to `stdout`.
pub fn run(args: &RecoverArgs, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    let addr = node::resolve(&args.target.endpoint)?;
    let master =
        MasterSecret::from_file(&args.master_secret).map_err(|e| UsageError::new(format!("--master-secret: {e}")))?;
    let rt = super::runtime()?;
    let (validator, _trust) = args.node.validator(
        &args.trust,
        &args.target.measurements,
        || args.target.registry(args.node.variant),
        &rt,
        None,
    )?;
    let (connector, recorder) =
        verifying_connector(validator).map_err(|e| UsageError::new(format!("aTLS set-up: {e}")))?;
    let outcome = rt.block_on(async {
        let config = ChannelConfig { connect_timeout: CONNECT_TIMEOUT, ..ChannelConfig::default() };
        let (channel, peer) = match connect(addr, &connector, config).await {
            Ok(v) => v,
            Err(ConnectError::Atls(e)) => return Outcome::Refused(reason(&e)),
            Err(e) => return Outcome::Failed(reason(&e)),
        };
        if peer.is_none() || recorder.last().is_none() {
            return Outcome::Refused("the node presented no verified attestation".into());
        }
        let message = RecoverMessage { kms_uri: master.to_kms_uri().to_string(), storage_uri: STORAGE_URI.into() };
        match channel
            .unary::<_, RecoverResponse>(paths::RECOVER_RECOVER, message, Metadata::new(), Some(CONNECT_TIMEOUT))
            .await
        {
            Ok(_) => Outcome::Recovered,
            Err(status) => Outcome::Failed(status.to_string()),
        }
    });
    let summary = recorder.last();
    let (status, kind, error) = match &outcome {
        Outcome::Recovered => (Status::Accepted, "RECOVERED", None),
        Outcome::Refused(e) => (Status::Rejected, "REFUSED", Some(e.as_str())),
        Outcome::Failed(e) => (Status::Rejected, "FAILED", Some(e.as_str())),
    };
    if args.json {
        let mut v = json!({"recovered": matches!(outcome, Outcome::Recovered), "endpoint": args.target.endpoint,
            "outcome": kind.to_lowercase(), "error": error});
        if let Some(s) = &summary {
            v["attestation"] = s.to_json();
        }
        let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let _ = writeln!(stdout, "{kind} {}", args.target.endpoint);
        if let (Outcome::Recovered, Some(s)) = (&outcome, &summary) {
            let _ = writeln!(stdout, "{}", s.describe());
        }
    }
    if let Some(e) = error {
        eprintln!("attest: {kind}: {e}");
    }
    Ok(status)
}
