//! `attest verify`: remote attestation of a running node. Opens an aTLS connection to the node and verifies
//! its certificate's attestation for the node's variant (`--variant`) — the AK (registry for `qemu-vtpm`,
//! SNP report for the SNP variants, Google's certificate for `gcp-shielded-vm`), the PCRs against the
//! measurements file (whose signature is verified first: `crate::trust`), the quote (and, on AWS/GCP SNP,
//! the fresh report) against a fresh nonce, the certificate key against the quote — then closes it; no RPC
//! is made. The verdict names every waiver in effect.
//!
//! With `--service grpc|http` the node's verify service is asked instead, and `--cluster-id` adds the check of
//! the variant's lock register (PCR 15, or RTMR3 on a TD without a vTPM) ([`super::verifysvc`]).
//!
//! Exit statuses: 0 verified; 1 refused (with the reason) or unreachable; 2 usage.

use super::node::{self, CONNECT_TIMEOUT, reason, verifying_connector};
use super::{Status, UsageError};
use attest_trust::TrustArgs;
use clap::Args;
use serde_json::json;
use std::io::Write;
use tokio::net::TcpStream;

/// `attest verify` arguments.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The node (its aTLS endpoint), its measurements and the AK registry.
    #[command(flatten)]
    pub target: node::NodeTarget,
    /// The node's variant and what its validator needs.
    #[command(flatten)]
    pub node: node::VariantArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Measurements signature, launch pinning, CRLs and their waivers.
    #[command(flatten)]
    pub trust: TrustArgs,
    /// Also require the variant's lock register (PCR 15; RTMR3, measurement index 4, on qemu-tdx) to hold this
    /// cluster id (64 hex digits, as `attest init` printed it): the node is bound to this cluster. Replaces the
    /// measurements file's entry for that register.
    #[arg(long, value_name = "HEX")]
    pub cluster_id: Option<String>,
    /// How to reach the node: an aTLS handshake with the endpoint, or the node's verify service (gRPC on
    /// port 30081, HTTP on 30080 in a cluster).
    #[arg(long, value_enum, default_value = "atls")]
    pub service: super::verifysvc::VerifyVia,
}

/// Runs `attest verify`; the verdict goes to `stdout`.
pub fn run(args: &VerifyArgs, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    let addr = node::resolve(&args.target.endpoint)?;
    let rt = super::runtime()?;
    let cluster_id = args.cluster_id.as_deref().map(super::verifysvc::parse_cluster_id).transpose()?;
    let (validator, trust) = args.node.validator(
        &args.trust,
        &args.target.measurements,
        || args.target.registry(args.node.variant),
        &rt,
        cluster_id.as_ref(),
    )?;
    if args.service != super::verifysvc::VerifyVia::Atls {
        return super::verifysvc::run(
            &args.target.endpoint,
            args.service,
            args.json,
            addr,
            validator,
            &trust,
            cluster_id.as_ref(),
            stdout,
        );
    }
    let (connector, recorder) =
        verifying_connector(validator).map_err(|e| UsageError::new(format!("aTLS set-up: {e}")))?;
    let outcome: Result<(), (bool, String)> = rt.block_on(async {
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| (false, format!("connecting to {addr}: timed out")))?
            .map_err(|e| (false, format!("connecting to {addr}: {e}")))?;
        let tls = tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(tcp))
            .await
            .map_err(|_| (false, "the aTLS handshake timed out".to_owned()))?
            .map_err(|e| (true, reason(&e)))?;
        drop(tls);
        Ok(())
    });
    let (status, verdict) = match (outcome, recorder.last()) {
        (Ok(()), Some(summary)) => (Status::Accepted, Ok(summary)),
        (Ok(()), None) => (Status::Rejected, Err((false, "the handshake verified no attestation".to_owned()))),
        (Err(e), _) => (Status::Rejected, Err(e)),
    };
    match verdict {
        Ok(summary) => {
            if args.json {
                let mut v = summary.to_json();
                v["verified"] = json!(true);
                v["endpoint"] = json!(args.target.endpoint);
                v["trust"] = trust.to_json();
                v["result"] = recorder.last_result().unwrap_or_default();
                let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                let _ = writeln!(
                    stdout,
                    "VERIFIED {}\n{}\nmeasurements {} (signature)\nwaivers      {}",
                    args.target.endpoint,
                    summary.describe(),
                    trust.measurements.name(),
                    trust.waivers_field()
                );
            }
        }
        Err((attested, reason)) => {
            let kind = if attested { "REFUSED" } else { "UNREACHABLE" };
            if args.json {
                let v = json!({"verified": false, "endpoint": args.target.endpoint, "refused": attested, "error": reason,
                    "trust": trust.to_json(), "result": recorder.last_result()});
                let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                let _ = writeln!(stdout, "{kind} {}", args.target.endpoint);
            }
            eprintln!("attest: {kind}: {reason}");
        }
    }
    Ok(status)
}
