//! `attest admission issue`: the operator's one-time admission of a node to the control plane
//! (`attest_trust::admission`). A control-plane join needs one — the request's flag alone gets nothing.
//!
//! ```text
//!  attest verify --endpoint NODE … --json      → "identity": "ak:…"   (what the node's evidence names)
//!  attest admission issue --key OPERATOR.pem --identity ak:… --node-name node-4 --valid-for 1h -o DIR/node-4.json
//!  (the join service reads DIR: --admissions DIR --admission-public-key OPERATOR.pub)
//! ```
//!
//! The admission names exactly one attested identity and one kubelet node name, expires, and is used once
//! (the join service records its random id). Exit statuses: 0 written; 2 unusable input.

use super::measurements::sign::{load_p256_key, now, parse_duration, sign_der};
use super::{Status, UsageError};
use attest_engine::UnixTime;
use attest_engine::variant::NodeIdentity;
use attest_trust::admission::{ADMISSION_ID_LEN, Admission};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `attest admission …`
#[derive(Debug, Subcommand)]
pub enum AdmissionCommand {
    /// Sign a one-time control-plane admission for one attested node and name.
    Issue(IssueArgs),
}

/// `issue` arguments.
#[derive(Debug, Args)]
pub struct IssueArgs {
    /// The operator's signing key (PEM, EC P-256 private key); the join service verifies with its public half.
    #[arg(long)]
    pub key: PathBuf,
    /// The node's identity as its verified evidence names it (`attest verify --json`: `identity`).
    #[arg(long)]
    pub identity: String,
    /// The kubelet node name the node joins under.
    #[arg(long)]
    pub node_name: String,
    /// How long the admission stays valid (e.g. `1h`, `2d`).
    #[arg(long, default_value = "1h")]
    pub valid_for: String,
    /// The admission file to write (into the join service's admissions directory).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Runs an `admission` command.
pub fn run(cmd: &AdmissionCommand) -> Result<Status, UsageError> {
    match cmd {
        AdmissionCommand::Issue(a) => issue(a),
    }
}

fn issue(a: &IssueArgs) -> Result<Status, UsageError> {
    let identity = NodeIdentity::parse(&a.identity).ok_or_else(|| {
        UsageError::new(format!("--identity {:?}: not a node identity (e.g. ak:<64 hex>)", a.identity))
    })?;
    if a.node_name.is_empty()
        || a.node_name.len() > attest_trust::membership::MAX_NODE_NAME_LEN
        || !a.node_name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(UsageError::new(format!("--node-name {:?}: not a DNS-1123 name", a.node_name)));
    }
    let mut id = [0u8; ADMISSION_ID_LEN];
    openssl::rand::rand_bytes(&mut id).map_err(|e| UsageError::new(format!("random number generator: {e}")))?;
    let admission = Admission {
        id: hex::encode(id),
        identity,
        node_name: a.node_name.clone(),
        expires: UnixTime::from_secs(now().as_secs().saturating_add(parse_duration(&a.valid_for)?)),
    };
    let key = load_p256_key(&a.key)?;
    let payload = admission.payload();
    let file = Admission::envelope(&payload, &sign_der(&key, &payload)?);
    // What the join service will do with it, under the key's public half.
    let public = key
        .public_key_to_pem()
        .ok()
        .and_then(|p| attest_measurements::VerifyingKey::from_pem(&p).ok())
        .ok_or_else(|| UsageError::new("the signing key's public half is not P-256"))?;
    Admission::verify(&file, &public, now())
        .map_err(|e| UsageError::new(format!("the admission does not verify: {e}")))?;
    attest_util::fs::write_atomic(&a.output, &file, attest_util::fs::PUBLIC_FILE_MODE)
        .map_err(|e| UsageError::new(format!("{}: {e}", a.output.display())))?;
    eprintln!(
        "attest: admission {} for {} as {:?} (control plane, once, until {}) written to {}",
        admission.id,
        admission.identity,
        admission.node_name,
        admission.expires,
        a.output.display()
    );
    Ok(Status::Accepted)
}
