//! The verifying side: what a peer certificate must prove, checked in this order (each failure its own
//! [`Error`] variant):
//!
//! 1. it is a well-formed X.509 v3 certificate (the engine's borrowed DER view) — [`Error::MalformedCertificate`];
//! 2. its signature verifies under its own public key — [`Error::BadSelfSignature`];
//! 3. it carries an extension under the aTLS arc 1.3.9900 — [`Error::MissingExtension`] — whose OID one of
//!    our validators accepts — [`Error::UnknownOid`];
//! 4. its key was not accepted before by this verifier — [`Error::ReplayedCertificate`];
//! 5. the document validates for the nonce this side sent — [`Error::WrongNonce`], [`Error::AttestationFailed`];
//! 6. the document's user data is SHA-256 of the certificate's SubjectPublicKeyInfo, byte for byte as
//!    received — [`Error::KeyMismatch`].
//!
//! Then the key is remembered (bounded, oldest first out) so that the same certificate presented again is
//! named a replay even before its stale nonce is.

use super::attestation::{AttestationValidator, ValidationError};
use super::error::{Error, NonceChannel};
use super::nonce::Nonce;
use openssl::x509::X509Ref;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

/// DER content octets of the OID arc 1.3.9900 under which the attestation variants have their OIDs.
const ATTESTATION_ARC: [u8; 3] = [0x2B, 0xCD, 0x2C];
/// Default number of accepted keys remembered for replay detection.
pub const DEFAULT_REPLAY_CAPACITY: usize = 4096;
/// Largest attestation document accepted in a peer certificate's extension, checked before a byte of it is
/// decoded. The whole certificate is bounded already — the engine's DER reader refuses any value above
/// 64 KiB, and OpenSSL any certificate list above its `max_cert_list` (100 KiB) — so this is that bound
/// less room for the certificate around the document, stated where the document is taken out.
pub const MAX_DOCUMENT_SIZE: usize = 60 * 1024;

/// What a verified peer proved.
#[derive(Clone, Debug)]
pub struct PeerAttestation {
    /// The extension OID (the variant), dotted.
    pub oid: String,
    /// The encoded attestation document, as validated.
    pub document: Vec<u8>,
    /// SHA-256 of the certificate's SubjectPublicKeyInfo (= the document's user data): the key the peer
    /// proved possession of in this handshake.
    pub spki_sha256: [u8; 32],
    /// The node the verified evidence names (`Validated::node_identity`), when the validator derives one.
    pub identity: Option<attest_engine::variant::NodeIdentity>,
    /// The label of the accepted measurement set the evidence met (`Accepted::measurement_set`).
    pub measurement_set: Option<Arc<str>>,
}

/// Validators by OID plus the replay memory; shared by all connections of an acceptor or connector.
#[derive(Debug)]
pub struct Verifier {
    validators: Vec<Arc<dyn AttestationValidator>>,
    replay: Mutex<ReplayMemory>,
}

#[derive(Debug)]
struct ReplayMemory {
    seen: HashSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
    capacity: usize,
}

impl Verifier {
    /// A verifier accepting documents of these validators (tried by the certificate's OID).
    pub fn new(validators: Vec<Arc<dyn AttestationValidator>>) -> Self {
        Self::with_replay_capacity(validators, DEFAULT_REPLAY_CAPACITY)
    }

    /// As [`Verifier::new`], remembering the last `capacity` accepted keys.
    pub fn with_replay_capacity(validators: Vec<Arc<dyn AttestationValidator>>, capacity: usize) -> Self {
        let replay = ReplayMemory { seen: HashSet::new(), order: VecDeque::new(), capacity };
        Self { validators, replay: Mutex::new(replay) }
    }

    /// Checks `cert` for the `nonce` this side sent on `channel` (steps 1–6 of the module docs).
    pub fn verify(&self, cert: &X509Ref, nonce: &Nonce, channel: NonceChannel) -> Result<PeerAttestation, Error> {
        let der = cert.to_der()?;
        let parsed = attest_engine::x509::Certificate::from_der(&der)
            .map_err(|e| Error::MalformedCertificate { reason: e.to_string() })?;
        // The engine's provider (aws-lc-rs) over the received TBSCertificate: no OpenSSL key decoding or
        // EVP fetch per handshake.
        parsed
            .verify_signature_with(attest_engine::crypto::default_provider(), &parsed.public_key())
            .map_err(|_| Error::BadSelfSignature)?;

        let mut unknown = None;
        let mut found = None;
        for ext in parsed.extensions() {
            let ext = ext.map_err(|e| Error::MalformedCertificate { reason: e.to_string() })?;
            if !ext.oid.starts_with(&ATTESTATION_ARC) {
                continue;
            }
            let dotted = oid_to_dotted(ext.oid)
                .ok_or_else(|| Error::MalformedCertificate { reason: "an invalid extension OID".into() })?;
            match self.validators.iter().find(|v| v.oid() == dotted) {
                Some(v) if found.is_none() => found = Some((v.clone(), dotted, ext.value)),
                Some(_) => {}
                None => unknown = unknown.or(Some(dotted)),
            }
        }
        let (validator, oid, document) = match (found, unknown) {
            (Some(f), _) => f,
            (None, Some(oid)) => return Err(Error::UnknownOid { oid }),
            (None, None) => return Err(Error::MissingExtension),
        };
        if document.len() > MAX_DOCUMENT_SIZE {
            return Err(Error::MalformedCertificate {
                reason: format!(
                    "attestation document of {} bytes exceeds the limit of {MAX_DOCUMENT_SIZE}",
                    document.len()
                ),
            });
        }

        let spki_sha256 = attest_engine::crypto::default_provider().digests.sha256(parsed.spki());
        if self.memory().seen.contains(&spki_sha256) {
            return Err(Error::ReplayedCertificate { spki_sha256 });
        }
        let accepted = validator.validate_peer(document, nonce).map_err(|e| match e {
            ValidationError::NonceMismatch => Error::WrongNonce { channel },
            ValidationError::Rejected(source) => Error::AttestationFailed { oid: oid.clone(), source },
        })?;
        if accepted.user_data != spki_sha256 {
            return Err(Error::KeyMismatch { spki_sha256, user_data: accepted.user_data });
        }
        if !self.remember(spki_sha256) {
            // Two handshakes raced with the same certificate; the nonce check let at most one be genuine.
            return Err(Error::ReplayedCertificate { spki_sha256 });
        }
        Ok(PeerAttestation {
            oid,
            document: document.to_vec(),
            spki_sha256,
            identity: accepted.identity,
            measurement_set: accepted.measurement_set,
        })
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, ReplayMemory> {
        self.replay.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers an accepted key; false when it was already there.
    fn remember(&self, key: [u8; 32]) -> bool {
        let mut m = self.memory();
        if m.capacity == 0 {
            return true;
        }
        if !m.seen.insert(key) {
            return false;
        }
        m.order.push_back(key);
        while m.order.len() > m.capacity {
            if let Some(old) = m.order.pop_front() {
                m.seen.remove(&old);
            }
        }
        true
    }
}

/// Dotted text of DER OID content octets (X.690 §8.19); `None` when malformed.
///
/// Written here rather than taken from RustCrypto's `const-oid`: version 0.10.3 accepts non-minimal
/// subidentifiers (`2B 80 01` reads as `1.3.1`), which X.690 §8.19.2 forbids, so a padded encoding of a
/// variant's OID would name that variant; the test below refuses it (tried and measured when deduplicating).
pub fn oid_to_dotted(content: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value: u64 = 0;
    let mut continuing = false;
    for &b in content {
        if !continuing && b == 0x80 {
            return None; // a leading 0x80 octet: not minimal
        }
        value = value.checked_mul(128)?.checked_add(u64::from(b & 0x7F))?;
        continuing = b & 0x80 != 0;
        if !continuing {
            if arcs.is_empty() {
                // The first subidentifier is 40 × arc1 + arc2, with arc1 ∈ {0, 1, 2}.
                let first = (value / 40).min(2);
                arcs.extend([first, value - first * 40]);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    if continuing || arcs.is_empty() {
        return None;
    }
    Some(arcs.iter().map(u64::to_string).collect::<Vec<_>>().join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_decode_to_dotted_text() {
        let der = |dotted: &str| {
            let o = openssl::asn1::Asn1Object::from_str(dotted).unwrap();
            o.as_slice().to_vec()
        };
        for v in attest_engine::variant::Variant::ALL {
            assert_eq!(oid_to_dotted(&der(v.oid())).as_deref(), Some(v.oid()));
            assert!(der(v.oid()).starts_with(&ATTESTATION_ARC));
        }
        assert_eq!(oid_to_dotted(&der("2.5.29.19")).as_deref(), Some("2.5.29.19"));
        assert_eq!(oid_to_dotted(&der("1.3.9900.99.12345678")).as_deref(), Some("1.3.9900.99.12345678"));
        assert_eq!(oid_to_dotted(&[]), None);
        assert_eq!(oid_to_dotted(&[0x2B, 0x80, 0x01]), None);
        assert_eq!(oid_to_dotted(&[0x2B, 0x81]), None);
    }

    /// Accepts every document (binding whatever the caller says), counting calls: the size limit must
    /// stop an oversized document before any validator sees it.
    #[derive(Debug, Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl AttestationValidator for Counting {
        fn oid(&self) -> &str {
            attest_engine::variant::Variant::QemuVtpm.oid()
        }

        fn validate(&self, _: &[u8], _: &Nonce) -> Result<Vec<u8>, ValidationError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err(ValidationError::NonceMismatch)
        }
    }

    #[test]
    fn oversized_documents_are_refused_before_validation() {
        let counting = Arc::new(Counting::default());
        let verifier = Verifier::new(vec![counting.clone()]);
        let key = crate::cert::fresh_key().unwrap();
        let oid = attest_engine::variant::Variant::QemuVtpm.oid();
        let nonce = [7u8; 32];

        let big = crate::cert::build(&key, Some((oid, &vec![0u8; MAX_DOCUMENT_SIZE + 1]))).unwrap();
        let err = verifier.verify(&big, &nonce, NonceChannel::ServerName).unwrap_err();
        assert!(
            matches!(&err, Error::MalformedCertificate { reason } if reason.contains("exceeds the limit")),
            "{err}"
        );
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 0);

        // At the limit, the document reaches the validator.
        let limit = crate::cert::build(&key, Some((oid, &vec![0u8; MAX_DOCUMENT_SIZE]))).unwrap();
        let err = verifier.verify(&limit, &nonce, NonceChannel::ServerName).unwrap_err();
        assert!(matches!(err, Error::WrongNonce { .. }), "{err}");
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
