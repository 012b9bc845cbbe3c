//! The verifier side: [`RegistrationService`] serves `attest.v1.AkRegistration` (the attester pushes), and
//! [`register_remote`] drives an attester's `attest.v1.CredentialActivation` (the verifier pulls). Both record
//! into a [`FileAkRegistry`] through [`AkRegistrar`].

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use attest_proto::attest::v1::{
    ActivateRequest, ActivateResponse, BeginRegistrationRequest, BeginRegistrationResponse,
    CompleteRegistrationRequest, CompleteRegistrationResponse, GetIdentityRequest, GetIdentityResponse,
};
use attest_proto::paths;

use crate::credential::MAX_CREDENTIAL;
use crate::rpc_error::{RegistrationError, status_for};
use crate::{AkRegistrar, CredentialChallenge, EkCaBundle, FileAkRegistry, PendingRegistration};
use crate::{CALL_TIMEOUT, MAX_CREDENTIAL_BLOB_LEN};
use attest_grpc::admission::PeerKey;
use attest_grpc::{Channel, Metadata, Request, Response, Router, Service, Status};

/// Most registrations waiting for their `Complete` at once. A `Begin` costs the server an EK chain check and
/// an RSA-OAEP encryption and keeps ≈ 100 bytes; 1024 is far above what a cluster's nodes need at once and
/// bounds what a flood of `Begin`s can hold.
pub const MAX_PENDING_REGISTRATIONS: usize = 1024;
/// Most pending registrations of one caller (a source IPv4 address or IPv6 /64): a node registers one AK,
/// retrying at most a few times; a caller beyond this sheds its own oldest registration.
pub const MAX_PENDING_PER_PEER: usize = 16;
/// Most pending registrations of one EK certificate *from one caller*. An EK certificate is public (any
/// process on a node reads it from the TPM), so a limit per EK alone would let anyone who read a node's
/// certificate crowd that node out of its own registrations; per EK and caller, a flood with someone
/// else's EK only ever sheds the flooder's own entries.
pub const MAX_PENDING_PER_EK: usize = 2;
/// How long a pending registration can be completed. One TPM2_ActivateCredential takes well under a second on
/// swtpm and a few seconds on a slow hardware TPM; a minute leaves room for a loaded node.
pub const REGISTRATION_TTL: Duration = Duration::from_secs(60);
/// Bytes of a registration id (random; 128 bits cannot be guessed).
pub const REGISTRATION_ID_LEN: usize = 16;
/// Largest EK certificate accepted. NV indices for EK certificates are typically limited to 2048 bytes
/// (`TPM_PT_NV_INDEX_MAX` of common TPMs); twice that leaves room for long manufacturer names.
pub const MAX_EK_CERTIFICATE_LEN: usize = 4096;
/// Largest AK TPM2B_PUBLIC accepted: an RSA-4096 public area with a SHA-512 authPolicy is ≈ 600 bytes.
pub const MAX_AK_PUBLIC_LEN: usize = 1024;

type RegistrationId = [u8; REGISTRATION_ID_LEN];

struct Pending {
    registration: PendingRegistration,
    expires: Instant,
    peer: PeerKey,
    ek: [u8; 32],
    /// Admission order (for "oldest first").
    seq: u64,
}

/// The pending registrations and who holds them.
#[derive(Default)]
struct Table {
    entries: HashMap<RegistrationId, Pending>,
    /// Entry ids by admission order.
    order: BTreeMap<u64, RegistrationId>,
    next_seq: u64,
}

impl Table {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn insert(&mut self, id: RegistrationId, mut p: Pending) {
        p.seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(p.seq, id);
        self.entries.insert(id, p);
    }

    fn remove(&mut self, id: &RegistrationId) -> Option<Pending> {
        let p = self.entries.remove(id)?;
        self.order.remove(&p.seq);
        Some(p)
    }

    /// Drops expired entries.
    fn sweep(&mut self, now: Instant) {
        let expired: Vec<RegistrationId> =
            self.entries.iter().filter(|(_, p)| p.expires <= now).map(|(id, _)| *id).collect();
        for id in expired {
            self.remove(&id);
        }
    }

    /// The oldest entry matching `f`.
    fn oldest(&self, f: impl Fn(&Pending) -> bool) -> Option<RegistrationId> {
        self.order.values().find(|id| self.entries.get(*id).is_some_and(&f)).copied()
    }

    /// The caller holding the most entries, and how many.
    fn heaviest(&self) -> Option<(PeerKey, usize)> {
        let mut counts: HashMap<PeerKey, usize> = HashMap::new();
        for p in self.entries.values() {
            *counts.entry(p.peer).or_default() += 1;
        }
        counts.into_iter().max_by_key(|&(_, n)| n)
    }
}

/// The caller of requests that came without an address (in-process calls).
fn unknown_peer() -> PeerKey {
    PeerKey::of(&SocketAddr::from(([0, 0, 0, 0], 0)))
}

/// `attest.v1.AkRegistration`: registers the AKs of attesters that push their identity, after credential
/// activation against an EK certificate from the configured CA bundle.
pub struct RegistrationService {
    registry: Arc<FileAkRegistry>,
    ca: EkCaBundle,
    pending: Mutex<Table>,
    ttl: Duration,
    max_pending: usize,
    shed: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RegistrationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrationService")
            .field("registry", &self.registry.path())
            .field("ca", &self.ca)
            .field("pending", &self.pending())
            .field("ttl", &self.ttl)
            .field("max_pending", &self.max_pending)
            .field("shed", &self.shed_count())
            .finish()
    }
}

impl RegistrationService {
    /// A service recording into `registry` the AKs proved to live with an EK certified under `ca`.
    pub fn new(registry: Arc<FileAkRegistry>, ca: EkCaBundle) -> Self {
        Self {
            registry,
            ca,
            pending: Mutex::new(Table::default()),
            ttl: REGISTRATION_TTL,
            max_pending: MAX_PENDING_REGISTRATIONS,
            shed: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Lets pending registrations live for `ttl` instead of [`REGISTRATION_TTL`].
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Keeps at most `max` pending registrations instead of [`MAX_PENDING_REGISTRATIONS`].
    #[must_use]
    pub fn with_max_pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }

    /// The registry AKs are recorded in.
    pub fn registry(&self) -> &Arc<FileAkRegistry> {
        &self.registry
    }

    /// Registrations begun and not yet completed (expired ones included until they are swept).
    pub fn pending(&self) -> usize {
        self.table().len()
    }

    /// Pending registrations begun from `peer` (its IPv4 address or IPv6 /64).
    pub fn pending_from(&self, peer: SocketAddr) -> usize {
        let key = PeerKey::of(&peer);
        self.table().entries.values().filter(|p| p.peer == key).count()
    }

    /// Pending registrations shed so far to make room (module docs of `crate`, "Pending registrations").
    pub fn shed_count(&self) -> u64 {
        self.shed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The limits and the table's state, as Prometheus samples (for the join service's `/metrics`).
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let pending = self.pending();
        let _ = writeln!(
            out,
            "# HELP attest_registration_limit Limits of the AK registration service's pending table (docs/LIMITS.md).\n\
             # TYPE attest_registration_limit gauge\n\
             attest_registration_limit{{limit=\"max_pending\"}} {}\n\
             attest_registration_limit{{limit=\"max_pending_per_peer\"}} {MAX_PENDING_PER_PEER}\n\
             attest_registration_limit{{limit=\"max_pending_per_ek\"}} {MAX_PENDING_PER_EK}\n\
             attest_registration_limit{{limit=\"ttl_seconds\"}} {}\n\
             # HELP attest_registration_pending Registrations begun and not completed.\n\
             # TYPE attest_registration_pending gauge\nattest_registration_pending {pending}\n\
             # HELP attest_registration_shed_total Pending registrations shed to make room for another caller's or \
             the same caller's newer one.\n# TYPE attest_registration_shed_total counter\n\
             attest_registration_shed_total {}",
            self.max_pending,
            self.ttl.as_secs_f64(),
            self.shed_count()
        );
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Begin` from the caller at `peer` (`None`: an in-process call): checks the EK certificate and the AK,
    /// makes the credential, keeps the pending registration — shedding, where a limit is reached, the
    /// caller's own oldest entry for this EK, else the caller's own oldest entry, else (table full) the
    /// oldest entry of the caller holding the most (module docs of `crate`, "Pending registrations").
    ///
    /// Errors: `INVALID_ARGUMENT` (oversized fields, EK certificate not from the CA bundle, an AK without the
    /// attributes of an attestation key).
    pub fn begin(
        &self,
        request: &BeginRegistrationRequest,
        peer: Option<SocketAddr>,
    ) -> Result<BeginRegistrationResponse, Status> {
        if request.ek_certificate.len() > MAX_EK_CERTIFICATE_LEN {
            return Err(Status::invalid_argument(format!("EK certificate above {MAX_EK_CERTIFICATE_LEN} bytes")));
        }
        if request.ak_public.len() > MAX_AK_PUBLIC_LEN {
            return Err(Status::invalid_argument(format!("AK public area above {MAX_AK_PUBLIC_LEN} bytes")));
        }
        let registrar = AkRegistrar::new(self.ca.clone(), &self.registry);
        let (challenge, registration) =
            registrar.challenge(&request.ek_certificate, &request.ak_public).map_err(|e| {
                tracing::info!(error = %e, "registration: begin refused");
                status_for(&e, "making the credential")
            })?;
        let mut id = [0u8; REGISTRATION_ID_LEN];
        openssl::rand::rand_bytes(&mut id).map_err(|_| Status::internal("random number generator failed"))?;
        let now = Instant::now();
        let peer = peer.map_or_else(unknown_peer, |a| PeerKey::of(&a));
        let ek = openssl::sha::sha256(&request.ek_certificate);
        let mut table = self.table();
        self.make_room(&mut table, now, peer, &ek);
        tracing::debug!(ak_digest = %hex::encode(registration.ak_digest()), %peer, "registration: challenge issued");
        table.insert(id, Pending { registration, expires: now + self.ttl, peer, ek, seq: 0 });
        let CredentialChallenge { credential_blob, encrypted_secret } = challenge;
        Ok(BeginRegistrationResponse { registration_id: id.to_vec(), credential_blob, encrypted_secret })
    }

    /// Makes room for an entry of `peer` for EK `ek` (see [`RegistrationService::begin`]).
    fn make_room(&self, table: &mut Table, now: Instant, peer: PeerKey, ek: &[u8; 32]) {
        let shed = |table: &mut Table, id: Option<RegistrationId>, why: &'static str| {
            if let Some(p) = id.and_then(|id| table.remove(&id)) {
                self.shed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(peer = %p.peer, why, "registration: pending registration shed");
            }
        };
        let same_ek = table.entries.values().filter(|p| p.peer == peer && p.ek == *ek).count();
        if same_ek >= MAX_PENDING_PER_EK {
            let id = table.oldest(|p| p.peer == peer && p.ek == *ek);
            shed(table, id, "the caller's limit for this EK");
        }
        if table.entries.values().filter(|p| p.peer == peer).count() >= MAX_PENDING_PER_PEER {
            let id = table.oldest(|p| p.peer == peer);
            shed(table, id, "the caller's limit");
        }
        if table.len() >= self.max_pending {
            table.sweep(now);
        }
        if table.len() >= self.max_pending {
            let heaviest = table.heaviest().map(|(p, _)| p);
            let id = table.oldest(|p| Some(p.peer) == heaviest);
            tracing::warn!(max = self.max_pending, "registration: pending table full");
            shed(table, id, "the table is full: the oldest of the caller holding the most");
        }
    }

    /// Takes the pending registration named `id` out of the table (single use).
    ///
    /// Errors: `INVALID_ARGUMENT` (not an id's length), `NOT_FOUND` (unknown, already completed or swept),
    /// `FAILED_PRECONDITION` (expired).
    fn take(&self, id: &[u8]) -> Result<PendingRegistration, Status> {
        let id: RegistrationId =
            id.try_into().map_err(|_| Status::invalid_argument("a registration id is 16 bytes"))?;
        let pending = self
            .table()
            .remove(&id)
            .ok_or_else(|| Status::not_found("unknown registration id (completed, expired or shed)"))?;
        if pending.expires <= Instant::now() {
            return Err(Status::failed_precondition("the registration expired; begin again"));
        }
        Ok(pending.registration)
    }

    /// `Complete`: consumes the pending registration and, if the secret is right (constant-time compare),
    /// records the AK. Blocks on the registry file write (call it from a blocking thread).
    ///
    /// Errors: `INVALID_ARGUMENT` (an id that is not 16 bytes), `NOT_FOUND` (unknown, already completed or
    /// swept), `FAILED_PRECONDITION` (expired), `INVALID_ARGUMENT` (oversized secret),
    /// `PERMISSION_DENIED` (wrong secret), `INTERNAL` (registry write failed).
    pub fn complete(&self, request: &CompleteRegistrationRequest) -> Result<CompleteRegistrationResponse, Status> {
        let registration = self.take(&request.registration_id)?;
        if request.secret.len() > MAX_CREDENTIAL {
            return Err(Status::invalid_argument(format!("a credential secret is at most {MAX_CREDENTIAL} bytes")));
        }
        let ak_digest = *registration.ak_digest();
        let registrar = AkRegistrar::new(self.ca.clone(), &self.registry);
        match registrar.complete(registration, &request.secret) {
            Ok(digest) => {
                tracing::info!(ak_digest = %hex::encode(digest), "registration: AK registered (credential activation)");
                Ok(CompleteRegistrationResponse { ak_digest: digest.to_vec() })
            }
            Err(e) => {
                tracing::info!(ak_digest = %hex::encode(ak_digest), error = %e, "registration: complete refused");
                Err(status_for(&e, "recording the AK"))
            }
        }
    }
}

impl Service for RegistrationService {
    fn register(self: Arc<Self>, router: &mut Router) {
        let this = Arc::clone(&self);
        router.unary(paths::REGISTRATION_BEGIN, move |request: Request<BeginRegistrationRequest>| {
            let this = Arc::clone(&this);
            // An EK chain check and one RSA-OAEP encryption (public key): well under a millisecond.
            async move { this.begin(&request.message, request.remote_addr).map(Response::new) }
        });
        router.unary(paths::REGISTRATION_COMPLETE, move |request: Request<CompleteRegistrationRequest>| {
            let this = Arc::clone(&self);
            async move {
                // The registry write fsyncs a file and its directory: off the async threads.
                tokio::task::spawn_blocking(move || this.complete(&request.message))
                    .await
                    .map_err(|_| Status::internal("registration task failed"))?
                    .map(Response::new)
            }
        });
    }
}

/// Registers the AK of the attester behind `channel` (which serves `attest.v1.CredentialActivation`) into
/// `registry`, trusting EK certificates under `ca`. Returns the AK digest (SHA-256 of its TPMT_PUBLIC).
///
/// The registry file write at the end blocks briefly (fsync); this is meant for command-line tools and
/// one-off registrations, not for a server's hot path.
pub async fn register_remote(
    channel: &Channel,
    ca: &EkCaBundle,
    registry: &FileAkRegistry,
) -> Result<[u8; 32], RegistrationError> {
    let identity: GetIdentityResponse = call(channel, paths::ACTIVATION_GET_IDENTITY, GetIdentityRequest {}).await?;
    if identity.ek_certificate.len() > MAX_EK_CERTIFICATE_LEN || identity.ak_public.len() > MAX_AK_PUBLIC_LEN {
        return Err(RegistrationError::BadResponse { what: "an oversized EK certificate or AK public area" });
    }
    let registrar = AkRegistrar::new(ca.clone(), registry);
    let (challenge, pending) =
        registrar.challenge(&identity.ek_certificate, &identity.ak_public).map_err(RegistrationError::from_check)?;
    let request =
        ActivateRequest { credential_blob: challenge.credential_blob, encrypted_secret: challenge.encrypted_secret };
    let answer: ActivateResponse = call(channel, paths::ACTIVATION_ACTIVATE, request).await?;
    let answer = zeroize::Zeroizing::new(answer.secret);
    if answer.len() > MAX_CREDENTIAL {
        return Err(RegistrationError::BadResponse { what: "an oversized credential secret" });
    }
    registrar.complete(pending, &answer).map_err(RegistrationError::from_check)
}

/// A unary registration call with [`CALL_TIMEOUT`].
pub async fn call<Req, Resp>(channel: &Channel, method: &'static str, request: Req) -> Result<Resp, RegistrationError>
where
    Req: prost::Message,
    Resp: prost::Message + Default,
{
    channel
        .unary(method, request, Metadata::new(), Some(CALL_TIMEOUT))
        .await
        .map(|r| r.message)
        .map_err(|status| RegistrationError::Rpc { method, status })
}

// Keep the two limits consistent: a credential blob carries a TPM2B_DIGEST of at most MAX_CREDENTIAL bytes.
const _: () = assert!(MAX_CREDENTIAL_BLOB_LEN >= 2 + 2 + 32 + 2 + MAX_CREDENTIAL);
