//! Verifying the join service before anything it hands out is believed (mutual aTLS on join).
//!
//! A node that accepted a ticket from whoever answered would take a disk key an attacker chose and lock
//! itself (PCR 15, or a TD's RTMR3) for good. So the join client checks the join service the way the join service checks it — against
//! the same measurements file (signature-checked, [`attest_trust`]), with the validator of the service's
//! variant from the one [`ValidatorFactory`] — and only then asks for a ticket:
//!
//! ```text
//!  aTLS handshake (mutual): this node attests; the join service attests with its node's hardware (its variant)
//!     │ its document fails the measurements / launch / revocation / nonce / key checks ──► refused (no call made)
//!     ▼
//!  AK trust of the service's variant (its row of the variant table):
//!     registry (qemu-vtpm): trusted only after TPM2 credential activation over this very connection
//!     │ (GetIdentity, MakeCredential against its EK certificate, which must chain to --join-service-ek-ca;
//!     │  the activated AK must be the one that signed this handshake) ──────────────────────────────► refused
//!     every other variant: proven in the handshake by the evidence itself — a fresh SNP report binding the
//!     AK and this handshake's nonce (aws-sev-snp, gcp-sev-snp), the HCL report's runtime data (azure-*),
//!     Google's AK certificate (gcp-shielded-vm), the TD quote's REPORTDATA (qemu-tdx); no EK certificate
//!     and no EK CA involved
//!     ▼
//!  IssueJoinTicket on the same connection ──► ticket checks ──► cluster id = HKDF(measurement secret, salt)
//!     │ the service's attested lock register (its variant's: quoted PCR 15, or its TD quote's RTMR3) ≠ that
//!     │ register bound to the cluster id: it is not a node of the cluster whose keys it hands out ──► refused
//!     ▼
//!  lock (PCR 15 / RTMR3), disk, state …
//! ```
//!
//! Which variants a join service may attest with is the node's configuration (the bootstrapper's
//! `--join-service-variant`, by default the node's own variant: a join service runs on a control-plane node
//! of the cluster and attests with that node's hardware). A variant not configured has no validator, so a
//! service cannot fall back to a weaker variant's path (say, an SNP node's join service presenting a bare
//! `qemu-vtpm` document): the handshake finds no validator for its OID.
//!
//! The lock register of the service's variant (the variant table's `lock` column: PCR 15 wherever there is a
//! vTPM, RTMR3 — measurement index 4 — on a TD without one) is left out of the handshake's expectations for
//! the join service: a join service necessarily runs on a bootstrapped control-plane node, whose lock
//! register holds its cluster id, which this node learns only from the ticket — and then checks exactly (the
//! last step above). A refusal at any step leaves the node
//! untouched: no lock, no state, no key kept.

use std::sync::Arc;

use attest_atls::{AtlsConnector, AttestationIssuer, EngineValidator, PeerAttestation, Verifier};
use attest_engine::crypto::{Digest, default_provider};
use attest_engine::tdx::TdQuote;
use attest_engine::variant::{AkBasis, AkRegistry, AkTrust, LockRegister, Variant};
use attest_grpc::Channel;
use attest_measurements::Document;
use attest_proto::attest::v1::AttestationDocument;
use attest_registration::{EkCaBundle, FileAkRegistry, ak_digest, register_remote};
use attest_trust::{Trust, ValidatorFactory};
use prost::Message as _;

/// TPM_ALG_SHA256: the PCR bank the cluster binding is read from (vTPM variants).
const SHA256_BANK: u32 = 0x000B;

/// Why the join service is not trusted (or the verification cannot be set up).
#[derive(Debug)]
pub enum ServerTrustError {
    /// The measurements file has no entry for a variant, or an unusable one.
    Measurements {
        /// The variant.
        variant: Variant,
        /// The measurements crate's reason.
        reason: String,
    },
    /// A `qemu-vtpm` join service can be trusted only through its EK certificate; none was configured.
    NoEkCa,
    /// No variant configured.
    NoVariants,
    /// The join service's AK could not be registered by credential activation, or the AK it activated is not
    /// the one that signed its attestation.
    Activation(String),
    /// The verified attestation cannot be read back (cannot happen for a document the validator accepted).
    Document(String),
    /// The join service's lock register is not this cluster's: it is not a bootstrapped node of the cluster
    /// whose ticket it issued.
    NotInCluster {
        /// The register (its variant's: PCR 15, RTMR3).
        register: Option<LockRegister>,
        /// What the register would hold on a node of the ticket's cluster.
        expected: Option<Box<Digest>>,
        /// What the join service attested (`None`: it attested no such register).
        found: Option<Box<Digest>>,
    },
}

impl std::fmt::Display for ServerTrustError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Measurements { variant, reason } => write!(f, "measurements for {variant}: {reason}"),
            Self::NoEkCa => f.write_str(
                "verifying a qemu-vtpm join service needs the CA of its TPM's EK certificate (--join-service-ek-ca)",
            ),
            Self::NoVariants => f.write_str("no join service variant configured"),
            Self::Activation(e) => write!(f, "the join service's AK is not trusted: {e}"),
            Self::Document(e) => write!(f, "the join service's attestation: {e}"),
            Self::NotInCluster { register, expected, found } => write!(
                f,
                "the join service's {} is {} but a node of this ticket's cluster has {}: it is not a node of the \
                 cluster whose keys it hands out",
                register.map_or_else(|| "lock register".to_owned(), |r| r.to_string()),
                found.as_ref().map_or_else(|| "not attested".to_owned(), |d| hex::encode(d.as_bytes())),
                expected.as_ref().map_or_else(|| "(unknown variant)".to_owned(), |d| hex::encode(d.as_bytes()))
            ),
        }
    }
}

impl std::error::Error for ServerTrustError {}

/// An AK registry that admits any AK *provisionally*: the handshake's quote, nonce, key binding and PCRs are
/// checked under the AK the service presents, and [`JoinServiceTrust::establish`] then requires that AK to be
/// proven by credential activation over the same connection before anything is sent on it.
#[derive(Debug)]
struct PendingActivation;

impl AkRegistry for PendingActivation {
    fn lookup(&self, _ak_digest: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::TrustOnFirstUse)
    }
}

/// What the join service proved on the connection a ticket came over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerProof {
    /// Its variant.
    pub variant: Option<Variant>,
    /// SHA-256 of its AK's TPMT_PUBLIC.
    pub ak_digest: Option<[u8; 32]>,
    /// How its AK is trusted (credential activation for `qemu-vtpm`, the hardware report for SNP variants).
    pub ak_basis: Option<AkBasis>,
    /// Its attested lock register (its node's cluster binding; its variant's register: the quoted SHA-256
    /// PCR 15, or its TD quote's RTMR3).
    pub lock: Option<Digest>,
}

impl ServerProof {
    /// Reads the proof from the service's verified attestation.
    pub fn of(peer: &PeerAttestation) -> Result<ServerProof, ServerTrustError> {
        let doc = AttestationDocument::decode(&peer.document[..])
            .map_err(|e| ServerTrustError::Document(format!("not an attestation document: {e}")))?;
        let variant = Variant::from_oid(&peer.oid);
        let tpm = doc.tpm.as_ref();
        let ak_digest = tpm.filter(|t| !t.ak_public.is_empty()).and_then(|t| ak_digest(&t.ak_public).ok());
        // The PCR values in a verified document are the quoted ones (the engine recomputed the quote's
        // pcrDigest from exactly these values); the RTMRs are the verified TD quote's.
        let lock = variant.and_then(|v| match v.info().lock {
            LockRegister::Pcr(i) => tpm.and_then(|t| {
                t.pcrs
                    .iter()
                    .find(|p| p.hash_alg == SHA256_BANK && p.index == u32::from(i))
                    .and_then(|p| LockRegister::Pcr(i).value(&p.value))
            }),
            LockRegister::Rtmr(i) => doc.tdx.as_ref().and_then(|t| {
                let quote = TdQuote::parse_prefix(&t.quote).ok()?;
                quote.body().rtmrs().get(usize::from(i)).map(|v| Digest::new(v))
            }),
        });
        // An AK trusted through a registry (`qemu-vtpm`) is trusted only once `establish` has activated it.
        let ak_basis = variant.and_then(|v| match v.info().ak {
            AkTrust::Registry | AkTrust::NoAk => None,
            AkTrust::HclRuntimeData | AkTrust::FreshReportBinding => Some(AkBasis::HardwareReport),
            AkTrust::ProviderCertificate => Some(AkBasis::CertifiedByProvider),
        });
        Ok(ServerProof { variant, ak_digest, ak_basis, lock })
    }

    /// Checks that the service runs on a node of the cluster `cluster_id` (its variant's lock register holds
    /// that id: [`LockRegister::bound`]).
    pub fn check_cluster(&self, cluster_id: &[u8; 32]) -> Result<(), ServerTrustError> {
        let register = self.variant.map(|v| v.info().lock);
        let expected = register.map(|r| r.bound(default_provider(), cluster_id));
        if expected.is_some() && self.lock == expected {
            Ok(())
        } else {
            Err(ServerTrustError::NotInCluster {
                register,
                expected: expected.map(Box::new),
                found: self.lock.map(Box::new),
            })
        }
    }
}

/// How a joining node verifies the join service (the checks are described in `join/server_trust.rs`).
#[derive(Debug)]
pub struct JoinServiceTrust {
    verifier: Arc<Verifier>,
    variants: Vec<Variant>,
    ek_ca: Option<EkCaBundle>,
    trust: Arc<Trust>,
}

/// What proves a join service's AK, by the variant's AK trust (its row of the variant table).
fn ak_proof(variant: Variant) -> &'static str {
    match variant.info().ak {
        AkTrust::Registry => "TPM2 credential activation against its EK certificate (--join-service-ek-ca)",
        AkTrust::HclRuntimeData => "the HCL runtime data its hardware report binds",
        AkTrust::FreshReportBinding => "a fresh hardware report binding the AK and this handshake's nonce",
        AkTrust::ProviderCertificate => "the cloud provider's AK certificate",
        AkTrust::NoAk => "no AK: the hardware quote binds the handshake",
    }
}

impl JoinServiceTrust {
    /// Verification of a join service of `variants` against `measurements` (each variant's lock register left
    /// out, see the module docs), with the validators `factory` builds (its SNP verifier with the CRLs loaded, its policies), the
    /// AK of a variant trusted through a registry (`qemu-vtpm`) by credential activation against `ek_ca`.
    /// `ek_ca` is needed for such a variant only ([`ServerTrustError::NoEkCa`] without it); the other variants
    /// prove their AK in the evidence and never read it. `trust` is reported with every outcome.
    pub fn new(
        variants: &[Variant],
        measurements: &Document,
        factory: &ValidatorFactory,
        ek_ca: Option<EkCaBundle>,
        trust: Arc<Trust>,
    ) -> Result<JoinServiceTrust, ServerTrustError> {
        if variants.is_empty() {
            return Err(ServerTrustError::NoVariants);
        }
        // The registry admits the presented AK provisionally; `establish` requires its activation.
        let factory = ValidatorFactory { ak_registry: Some(Arc::new(PendingActivation)), ..factory.clone() };
        let mut validators: Vec<Arc<dyn attest_atls::AttestationValidator>> = Vec::new();
        for &variant in variants {
            if variant.info().ak == AkTrust::Registry && ek_ca.is_none() {
                return Err(ServerTrustError::NoEkCa);
            }
            // Every accepted set of the variant (several during a rolling upgrade): a join service meeting any
            // of them is believed.
            let validator = factory
                .expected_sets(variant, measurements)
                .and_then(|sets| {
                    let sets = sets.into_iter().map(|(_, e)| e.without_lock(variant.info().lock)).collect();
                    factory.validator_accepting(variant, sets)
                })
                .map_err(|e| ServerTrustError::Measurements { variant, reason: attest_util::error_chain(&e) })?;
            validators.push(Arc::new(EngineValidator::new(validator)));
        }
        Ok(JoinServiceTrust {
            verifier: Arc::new(Verifier::new(validators)),
            variants: variants.to_vec(),
            ek_ca,
            trust,
        })
    }

    /// What is trusted and waived (for the log).
    pub fn trust(&self) -> &Arc<Trust> {
        &self.trust
    }

    /// How a join service of each configured variant is trusted, one clause per variant (for the log):
    /// `aws-sev-snp: its SNP report binds the AK and the nonce`.
    pub fn describe(&self) -> String {
        self.variants.iter().map(|&v| format!("{v}: {}", ak_proof(v))).collect::<Vec<_>>().join("; ")
    }

    /// The mutual connector: this node attests with `issuer`, the service is verified.
    pub fn connector(&self, issuer: Arc<dyn AttestationIssuer>) -> Result<AtlsConnector, attest_atls::Error> {
        AtlsConnector::new(Some(issuer), Some(Arc::clone(&self.verifier)))
    }

    /// After the handshake verified `peer`: for `qemu-vtpm`, registers its AK by credential activation over
    /// `channel` (in memory) and requires it to be the AK that signed the handshake. Returns what the service
    /// proved.
    pub async fn establish(&self, channel: &Channel, peer: &PeerAttestation) -> Result<ServerProof, ServerTrustError> {
        let mut proof = ServerProof::of(peer)?;
        if proof.variant.is_some_and(|v| v.info().ak == AkTrust::Registry) {
            let ca = self.ek_ca.as_ref().ok_or(ServerTrustError::NoEkCa)?;
            let registry = FileAkRegistry::in_memory();
            let activated = register_remote(channel, ca, &registry)
                .await
                .map_err(|e| ServerTrustError::Activation(e.to_string()))?;
            if Some(activated) != proof.ak_digest {
                return Err(ServerTrustError::Activation(
                    "the AK proven by credential activation is not the AK of the service's attestation".into(),
                ));
            }
            proof.ak_basis = Some(AkBasis::CredentialActivation);
        }
        Ok(proof)
    }
}
