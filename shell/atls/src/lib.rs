//! # attest-atls
//!
//! Attested TLS: attestation inside TLS certificates, TLS 1.3 only, no CA (`docs/ARCHITECTURE.md`, "aTLS").
//!
//! **May depend on:** `attest-engine` (its validator interface), `attest-proto` (the document it carries),
//! `attest-grpc` (serving and calling gRPC over aTLS, [`grpc`]), OpenSSL and `attest-openssl-ext`.
//! **Must not depend on:** evidence sources (TPM, SEV-SNP devices: they implement [`AttestationIssuer`] in
//! `attest-attester`), AK registries, the KDS client, or any service.
//!
//!
//! The party that attests makes a **fresh self-signed certificate per handshake** (a new P-256 key, a
//! five-minute validity) whose X.509 extension — OID = the variant's ([`Variant::oid`]) — holds the
//! protobuf `AttestationDocument`, with `user_data = SHA-256(SubjectPublicKeyInfo DER)` ([`cert`]).
//! Each verifying side sends a nonce ([`nonce`]):
//!
//! | nonce of | travels as | read by the attester in |
//! |---|---|---|
//! | the client | TLS ServerName: standard base64 of 32 random bytes | the servername callback |
//! | the server | CommonName (base64) of the single acceptable-CA name in the CertificateRequest | the certificate callback (`SSL_get_client_CA_list`) |
//!
//! The verifying side checks the certificate's self-signature, the document against its nonce, and the
//! key hash ([`verify`]); each failure is its own [`Error`] variant and aborts the handshake with a TLS
//! alert, which the other side reports as [`Error::AlertReceived`].
//!
//! # Modes
//!
//! | mode | server | client |
//! |---|---|---|
//! | client-side verification (the server attests) | `AtlsAcceptor::new(Some(issuer), None)` | `AtlsConnector::new(None, Some(verifier))` |
//! | server-side verification (the client attests) | `AtlsAcceptor::new(None, Some(verifier))` | `AtlsConnector::new(Some(issuer), None)` |
//! | mutual | `AtlsAcceptor::new(Some(issuer), Some(verifier))` | `AtlsConnector::new(Some(issuer), Some(verifier))` |
//!
//! The side that does not attest still presents (server) a plain fresh self-signed certificate, or (client)
//! none. Issuers and validators plug in through [`AttestationIssuer`] / [`AttestationValidator`]; this crate
//! provides [`EngineValidator`] (an engine `Validator` with its AK registry); the issuers are in
//! `attest-attester`.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use attest_atls::*;
//! # async fn f(issuer: Arc<dyn AttestationIssuer>, validator: Arc<dyn AttestationValidator>) -> Result<(), Error> {
//! let acceptor = AtlsAcceptor::new(Some(issuer), None)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let addr = listener.local_addr().unwrap();
//! tokio::spawn(async move {
//!     let (tcp, _) = listener.accept().await.unwrap();
//!     let tls = acceptor.accept(tcp).await?; // an AsyncRead + AsyncWrite stream, ALPN h2
//!     Ok::<_, Error>(tls)
//! });
//! let connector = AtlsConnector::new(None, Some(Arc::new(Verifier::new(vec![validator]))))?;
//! let tls = connector.connect(tokio::net::TcpStream::connect(addr).await.unwrap()).await?;
//! assert_eq!(tls.alpn_protocol(), Some(&b"h2"[..]));
//! let proved = tls.peer_attestation().unwrap(); // OID, document bytes, key hash
//! # Ok(()) }
//! ```
//!
//! Every refused handshake — relayed or stale documents (wrong nonce), replayed certificates, swapped keys,
//! refused attestations, TLS below 1.3 — is counted by reason and logged at the default level with the peer's
//! address, rate-limited ([`refusal`]).
//!
//! Protocol details and the choices made (suspending the handshake while the TPM quotes, validation
//! inside the handshake, no resumption, the TLS 1.3 client-certificate timing) are in [`conn`] and
//! [`error`].
//!
//! [`Variant::oid`]: attest_engine::variant::Variant::oid

#![forbid(unsafe_code)]

pub mod attestation;
pub mod cert;
pub mod conn;
pub mod error;
pub mod grpc;
pub mod nonce;
pub mod refusal;
pub mod verify;
pub mod x509;

pub use attestation::{
    Accepted, AttestationIssuer, AttestationValidator, EngineValidator, FirstUseRecorder, ValidationError,
};
pub use conn::{ALPN_H2, AtlsAcceptor, AtlsConnector, AtlsStream, MAX_CONCURRENT_ISSUES};
pub use error::{BoxError, Error, NonceChannel};
pub use refusal::{HandshakeRefusals, RefusalReason};
pub use verify::{PeerAttestation, Verifier};
