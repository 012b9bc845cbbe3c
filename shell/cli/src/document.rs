//! `attest document verify`: this project's own attestation document — as a node sends it inside its aTLS
//! certificate — for a variant, a measurements file and the nonce the verifier sent: everything the join
//! service checks in a handshake (`attest_engine::variant::Validator`), offline.
//!
//! The input is the encoded `AttestationDocument` protobuf, or the aTLS certificate itself (PEM or DER):
//! then the certificate's self-signature is checked, the document is taken from its extension (whose OID
//! names the variant), and the document's user data must be SHA-256 of the certificate's
//! SubjectPublicKeyInfo, as in a handshake. The AK is trusted per variant: `qemu-vtpm` through an AK
//! registry (`--ak-registry`, as `attest init` writes it), the SNP variants through the SNP report (AMD's
//! roots; `--snp-policy` must pin the launch), `gcp-shielded-vm` through Google's AK certificate.

use super::evidence::{NonceArgs, OutputArgs, Rejection, Subject};
use super::node::VariantArgs;
use super::{Status, UsageError, input};
use attest_engine::ear::Appraisal;
use attest_engine::variant::{AkRegistry, AkTrust, StaticAkRegistry, Variant};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// `attest document` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DocumentCommand {
    /// Verify an attestation document (or the aTLS certificate carrying it) for a variant and measurements.
    Verify(VerifyArgs),
}

/// Arguments of `attest document verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The encoded AttestationDocument, or an aTLS certificate (PEM or DER) carrying one.
    pub document: PathBuf,
    /// Expected measurements (JSON or YAML map, or a release list with the variant's entry).
    #[arg(long)]
    pub measurements: PathBuf,
    /// The AK registry (qemu-vtpm; as written by `attest init`).
    #[arg(long, value_name = "FILE")]
    pub ak_registry: Option<PathBuf>,
    /// The variant and what its validator needs.
    #[command(flatten)]
    pub node: VariantArgs,
    /// The nonce the verifier sent (aTLS: the 32 bytes, hex).
    #[command(flatten)]
    pub nonce: NonceArgs,
    /// Time and output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs an `attest document` subcommand.
pub fn run(cmd: DocumentCommand) -> Result<Status, UsageError> {
    match cmd {
        DocumentCommand::Verify(a) => verify(&a),
    }
}

/// The document and, when it came in a certificate, the certificate's OID and SPKI hash.
struct Input {
    document: Vec<u8>,
    certificate: Option<(String, [u8; 32])>,
}

/// A certificate's attestation extension and SPKI hash, after its self-signature verified.
fn from_certificate(der: &[u8]) -> Result<Input, UsageError> {
    let x509 = openssl::x509::X509::from_der(der).map_err(|e| UsageError(format!("not a certificate: {e}")))?;
    let key = x509.public_key().map_err(|e| UsageError(e.to_string()))?;
    if !x509.verify(&key).unwrap_or(false) {
        return Err(UsageError::new("the certificate's self-signature does not verify"));
    }
    let cert = attest_engine::x509::Certificate::from_der(der).map_err(|e| UsageError(e.to_string()))?;
    let mut found = None;
    for ext in cert.extensions() {
        let ext = ext.map_err(|e| UsageError(e.to_string()))?;
        let Some(oid) = attest_atls::verify::oid_to_dotted(ext.oid) else { continue };
        if Variant::from_oid(&oid).is_some() {
            if found.is_some() {
                return Err(UsageError::new("more than one attestation extension"));
            }
            found = Some((oid, ext.value.to_vec()));
        }
    }
    let (oid, document) =
        found.ok_or_else(|| UsageError::new("no attestation extension (OID of a variant under 1.3.9900)"))?;
    Ok(Input { document, certificate: Some((oid, openssl::sha::sha256(cert.spki()))) })
}

fn read_input(path: &std::path::Path) -> Result<Input, UsageError> {
    let bytes = input::read_file(path, "DOCUMENT")?;
    let bad = |e: String| UsageError::new(format!("DOCUMENT {}: {e}", path.display()));
    if bytes.trim_ascii_start().starts_with(b"-----BEGIN") {
        let certs = attest_engine::x509::pem::certificates_from_pem_or_der(&bytes).map_err(|e| bad(e.to_string()))?;
        let [der] = <[Vec<u8>; 1]>::try_from(certs).map_err(|_| bad("expected one certificate".into()))?;
        return from_certificate(&der).map_err(|e| bad(e.0));
    }
    // A DER certificate parses as one; an AttestationDocument never does (its first field is a string).
    if attest_engine::x509::Certificate::from_der(&bytes).is_ok() {
        return from_certificate(&bytes).map_err(|e| bad(e.0));
    }
    Ok(Input { document: bytes, certificate: None })
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    let output = a.output.resolve()?;
    let nonce = a.nonce.bytes()?;
    let input = read_input(&a.document)?;
    if let Some((oid, _)) = &input.certificate
        && oid != a.node.variant.oid()
    {
        return Err(UsageError::new(format!(
            "the certificate carries a {} document (OID {oid}); give --variant {}",
            Variant::from_oid(oid).map_or("unknown", Variant::name),
            Variant::from_oid(oid).map_or("?", Variant::name),
        )));
    }
    let variant = a.node.variant;
    let node = a.node.offline_validator(&a.measurements, || match &a.ak_registry {
        Some(path) => Ok(super::node::open_registry(path)? as Arc<dyn AkRegistry>),
        None if variant.info().ak == AkTrust::Registry => {
            Err(UsageError::new(format!("{variant} documents need --ak-registry (the AKs trusted by registration)")))
        }
        None => Ok(Arc::new(StaticAkRegistry::default())),
    })?;
    let mut subject = Subject::new(
        "document",
        a.node.variant.name(),
        format!(
            "{} attestation document{}",
            a.node.variant,
            if input.certificate.is_some() { " (aTLS certificate)" } else { "" }
        ),
        format!("DOCUMENT {}", a.document.display()),
    );
    subject.structure_check = "document_structure";
    if let Some(r) = &node.test_roots {
        subject.facts.insert("WARNING".into(), json!(r));
    }
    if nonce.is_none() {
        subject.facts.insert("nonce".into(), json!("none (DANGEROUS: the document can be a replay)"));
    }
    // A document that does not decode is malformed input (exit 2); a handshake refuses it as well.
    let decoded = attest_proto::document::decode(&input.document).map_err(|e| attest_engine::Error::EvidenceFormat {
        format: "attestation document",
        reason: match e {
            attest_proto::document::DocumentError::NoVariant => "names no attestation variant (empty or all-default)",
            _ => "not a valid protobuf message",
        },
    });
    let result = decoded.and_then(|doc| {
        let pcrs = attest_proto::document::pcr_values(&doc).map_err(|e| match e {
            attest_proto::document::DocumentError::Engine(e) => e,
            _ => attest_engine::Error::EvidenceFormat { format: "attestation document", reason: "malformed PCR table" },
        })?;
        let view = attest_proto::document::view(&doc, &pcrs);
        let ok = node.validator.validate(&view, nonce.as_deref().unwrap_or_default(), output.time)?;
        if let Some((_, spki)) = &input.certificate
            && ok.user_data != spki
        {
            // Well-formed evidence bound to another key: a refusal, as in a handshake.
            return Err(attest_engine::Error::PlatformPolicy {
                check: "certificate_binding",
                expected: attest_engine::error::Value::Text(
                    "the document's user data = SHA-256 of the certificate's key",
                ),
                found: attest_engine::error::Value::Text("another value"),
            });
        }
        Ok(Appraisal::from_validated(&ok))
    });
    output.report(&subject, result.map_err(Rejection::from), nonce.as_deref())
}
