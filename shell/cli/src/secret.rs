//! `attest secret new`: creates a cluster master secret file before anything else runs (the key service
//! loads it; `attest init` sends it to the first node as its KMS URI). `attest secret key-service-pki`:
//! creates the cluster-internal CA and certificates of the key service's mutual TLS
//! (`attest_keyservice::tls`); `attest init` creates the same when it finds none.
//!
//! The key and salt (32 bytes each) come from the OS random number generator; the file is Constellation-
//! style JSON (`{"key": base64, "salt": base64}`), written atomically with mode 0600. An existing file is
//! never overwritten: losing a master secret loses every disk key derived from it.

use super::init::generate_master_secret;
use super::node::write_private;
use super::{Status, UsageError};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// `attest secret …`
#[derive(Subcommand, Debug)]
pub enum SecretCommand {
    /// Create a new master secret file (refuses to overwrite an existing one).
    New(NewArgs),
    /// Create the key service's mutual-TLS PKI: a CA, the key service's and the join service's certificates
    /// (an existing complete PKI is kept).
    KeyServicePki(PkiArgs),
}

/// `attest secret key-service-pki`
#[derive(Args, Debug)]
pub struct PkiArgs {
    /// The directory (ca.crt, ca.key, key-service.crt/.key, join-service.crt/.key; keys mode 0600).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `attest secret new`
#[derive(Args, Debug)]
pub struct NewArgs {
    /// Where to write the master secret (JSON, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Runs `attest secret …`.
pub fn run(cmd: &SecretCommand, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    match cmd {
        SecretCommand::New(args) => new(args, stdout),
        SecretCommand::KeyServicePki(args) => key_service_pki(args, stdout),
    }
}

fn key_service_pki(args: &PkiArgs, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    let outcome = attest_keyservice::tls::generate_pki(&args.out)
        .map_err(|e| UsageError::new(format!("key-service PKI: {e}")))?;
    let what = match outcome {
        attest_keyservice::tls::PkiOutcome::Created => "created",
        attest_keyservice::tls::PkiOutcome::Existing => "kept (already complete)",
    };
    let _ = writeln!(stdout, "key-service PKI {what} in {}", args.out.display());
    Ok(Status::Accepted)
}

fn new(args: &NewArgs, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    if args.out.exists() {
        return Err(UsageError::new(format!(
            "{} already exists; a master secret is never overwritten",
            args.out.display()
        )));
    }
    let secret = generate_master_secret()?;
    write_private(&args.out, secret.to_json().as_bytes())
        .map_err(|e| UsageError::new(format!("writing the master secret {}: {e}", args.out.display())))?;
    // The path only: never a byte of the secret.
    let _ = writeln!(stdout, "master secret written to {}", args.out.display());
    Ok(Status::Accepted)
}
