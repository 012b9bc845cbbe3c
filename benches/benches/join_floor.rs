//! The cryptographic floor of one join on the join service's side, next to the service's own
//! code for the parts it can be compared with.
//!
//! `join_floor/all` performs, raw (aws-lc-rs) and back to back, exactly the cryptography one join costs the
//! join service with `benches/join-load`'s fixture (mutual aTLS, TLS 1.3 with OpenSSL's first suite
//! TLS_AES_256_GCM_SHA384 and X25519, P-256 aTLS keys, ECC P-256 AKs, a P-256 cluster CA, P-256 kubelet
//! keys). Each step is also a benchmark of its own:
//!
//! | benchmark | one join needs |
//! |---|---|
//! | `x25519` | the server's TLS 1.3 key share: one X25519 key generation and one agreement |
//! | `tls13_schedule` | the TLS 1.3 key schedule with SHA-384: 3 HKDF-Extract, 11 HKDF-Expand-Label, 2 Finished HMACs, the transcript hash over the handshake messages (both certificates included) |
//! | `server_credential` | the service's aTLS certificate: a fresh P-256 key, SHA-256 of its SPKI (the document's user data), the ECDSA self-signature |
//! | `server_certificate_verify` | the service's TLS 1.3 CertificateVerify: one ECDSA P-256 signature |
//! | `client_certificate_verify` | the client's CertificateVerify: one ECDSA P-256 verification |
//! | `client_cert_self_signature` | the client certificate's self-signature: one ECDSA P-256 verification of its TBSCertificate |
//! | `quote` | the client's quote as the join validates it: SHA-256 of its SPKI (key binding), the quote nonce (SHA-256), the AK digest (SHA-256 of TPMT_PUBLIC), the pcrDigest (SHA-256 of 24 values), the ECDSA P-256 verification of TPMS_ATTEST |
//! | `csr_signature` | the kubelet CSR's self-signature: one ECDSA P-256 verification |
//! | `kubelet_signature` | the kubelet certificate: SHA-1 of the key (SKI), one ECDSA P-256 signature with the cluster CA's key |
//! | `ssh_ca` | the SSH CA key from its seed (Ed25519), as every ticket carries the CA's public key |
//! | `records` | AES-256-GCM of the aTLS records: the request in, the ticket out |
//! | `key_service_mtls` | the three key-service calls over the kept mutual-TLS connection: AES-256-GCM of three requests and three responses (the handshake is once per service, not per join) |
//! | `randomness` | the service's nonce (32 bytes), token (22), serials (16 + 16) |
//! | `all` | everything above, back to back |
//! | `key_service_hkdf` | (the key service's process, not the join service's) three HKDF-SHA256 derivations |
//!
//! The TPM quote of the service's own attestation runs on its TPM (here a swtpm process), not on the join
//! service's CPU; `benches/join-load/run.sh` reports the swtpm's CPU per join separately.
//!
//! `join_service/ticket_csr_and_certificate` is the service's code for the CSR and the kubelet certificate
//! (`ClusterCa::check_kubelet_csr` + `sign_kubelet`), to put beside `csr_signature + kubelet_signature`.
//!
//! `benches/join-load/run.sh` reads `all`'s median from `target/criterion/join_floor/all/new/estimates.json`
//! and prints the measured CPU per join as a multiple of it.

use attest_atls::cert;
use attest_benches::joinload::{self, fixture};
use attest_engine::x509::{Certificate, CertificationRequest};
use attest_k8s::ClusterCa;
use attest_test_support::TempDir;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey as AgreementKey, X25519};
use aws_lc_rs::digest::{self, SHA1_FOR_LEGACY_USE_ONLY, SHA256, SHA384};
use aws_lc_rs::hkdf::{HKDF_SHA256, HKDF_SHA384, Salt};
use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING,
    EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey,
};
use criterion::Criterion;
use std::hint::black_box;

/// The inputs of one join, made once: real sizes from the load generator's fixture.
struct Join {
    rng: SystemRandom,
    /// A client certificate (DER) as the load generator makes it: P-256 key, software-AK document.
    client_cert: Vec<u8>,
    /// The service's certificate of the same shape (its document is larger in reality: an RSA AK quote).
    server_cert_len: usize,
    /// The kubelet CSR (DER).
    csr: Vec<u8>,
    /// TPMS_ATTEST of the client's quote, its raw r‖s signature and the AK point.
    attest: Vec<u8>,
    quote_sig: Vec<u8>,
    ak_point: Vec<u8>,
    /// The AK's TPMT_PUBLIC (the registry digest) and the 24 quoted PCR values.
    ak_public: Vec<u8>,
    pcrs: Vec<[u8; 32]>,
    /// The client's CertificateVerify: its key's point, the signed content, the signature.
    client_point: Vec<u8>,
    cv_message: Vec<u8>,
    cv_sig: Vec<u8>,
    /// Keys of the service: its CA's and a peer share for X25519.
    ca_key: EcdsaKeyPair,
    peer_share: Vec<u8>,
    /// The ticket as sent and the request as received (bytes), and the SSH CA seed.
    ticket_len: usize,
    request_len: usize,
    ssh_seed: [u8; 32],
    aead: LessSafeKey,
}

fn setup() -> Option<(Join, ClusterCa, TempDir)> {
    let dir = TempDir::new("join-floor");
    joinload::write_fixture(dir.path(), 1, attest_test_support::tpm::AkKind::EccP256).ok()?;
    let issuer = joinload::load_issuers(dir.path()).ok()?.remove(0);
    let nonce = [7u8; 32];
    let client = cert::attested(&*issuer, &nonce).ok()?;
    let client_cert = client.certificate.to_der().ok()?;
    let server_cert_len = client_cert.len();
    let node = joinload::node_requests(1).ok()?.remove(0);
    let document = issuer.document(&nonce, &[0u8; 32]);
    let tpm = document.tpm?;
    let rng = SystemRandom::new();
    // A P-256 key standing in for the AK (same algorithm, same message): the raw verification of the quote.
    let ak = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).ok()?;
    let quote_sig = ak.sign(&rng, &tpm.quote_attest).ok()?.as_ref().to_vec();
    let client_key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).ok()?;
    // TLS 1.3 CertificateVerify content: 64 spaces, the context string, 0, the transcript hash (SHA-384).
    let mut cv_message = vec![0x20; 64];
    cv_message.extend_from_slice(b"TLS 1.3, client CertificateVerify\0");
    cv_message.extend_from_slice(digest::digest(&SHA384, &client_cert).as_ref());
    let cv_sig = client_key.sign(&rng, &cv_message).ok()?.as_ref().to_vec();
    let ca_key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).ok()?;
    let peer = EphemeralPrivateKey::generate(&X25519, &rng).ok()?;
    let peer_share = peer.compute_public_key().ok()?.as_ref().to_vec();
    let ca = ClusterCa::load(&dir.path().join(fixture::PKI_DIR)).ok()?;
    let ticket_len = 2 * 32 + 32 + ca.sign_kubelet(&ca.check_kubelet_csr(&node.csr).ok()?).ok()?.len() + 300;
    let join = Join {
        rng,
        client_cert,
        server_cert_len,
        csr: node.csr,
        attest: tpm.quote_attest.clone(),
        quote_sig,
        ak_point: ak.public_key().as_ref().to_vec(),
        ak_public: tpm.ak_public.clone(),
        pcrs: tpm.pcrs.iter().map(|p| <[u8; 32]>::try_from(&p.value[..]).unwrap_or([0; 32])).collect(),
        client_point: client_key.public_key().as_ref().to_vec(),
        cv_message,
        cv_sig,
        ca_key,
        peer_share,
        ticket_len,
        request_len: 120 + 260,
        ssh_seed: [0x33; 32],
        aead: LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[0x11; 32]).ok()?),
    };
    Some((join, ca, dir))
}

fn x25519(j: &Join) {
    let key = EphemeralPrivateKey::generate(&X25519, &j.rng).unwrap();
    black_box(key.compute_public_key().unwrap());
    let peer = AgreementKey::new(&X25519, &j.peer_share);
    agreement::agree_ephemeral(key, peer, (), |secret| {
        black_box(secret);
        Ok(())
    })
    .unwrap();
}

/// RFC 8446 §7.1 with SHA-384: Extract(early), Derive-Secret → Extract(handshake), two traffic secrets,
/// Derive-Secret → Extract(master), two application traffic secrets, key+IV for four directions/phases
/// (written as 11 expands in all), two Finished HMACs, and the transcript hash.
fn tls13_schedule(j: &Join) {
    let transcript_len = 300 + 100 + 40 + 120 + j.server_cert_len + j.client_cert.len() + 2 * 120 + 2 * 60;
    let mut transcript = digest::Context::new(&SHA384);
    transcript.update(&j.client_cert[..j.client_cert.len().min(transcript_len)]);
    transcript.update(&vec![0u8; transcript_len.saturating_sub(j.client_cert.len())]);
    let hash = transcript.finish();
    let mut secret = [0u8; 48];
    let mut prk = Salt::new(HKDF_SHA384, &[]).extract(&[0; 48]);
    for phase in 0..3 {
        for _ in 0..if phase == 2 { 3 } else { 4 } {
            prk.expand(&[hash.as_ref()], HKDF_SHA384).unwrap().fill(&mut secret).unwrap();
        }
        prk = Salt::new(HKDF_SHA384, &secret).extract(&[0; 48]);
    }
    for _ in 0..2 {
        let key = hmac::Key::new(hmac::HMAC_SHA384, &secret);
        black_box(hmac::sign(&key, hash.as_ref()));
    }
}

fn server_credential(j: &Join) -> EcdsaKeyPair {
    let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
    black_box(digest::digest(&SHA256, key.public_key().as_ref()));
    black_box(key.sign(&j.rng, &j.client_cert[..j.server_cert_len.min(j.client_cert.len())]).unwrap());
    key
}

fn server_certificate_verify(j: &Join, key: &EcdsaKeyPair) {
    black_box(key.sign(&j.rng, &j.cv_message).unwrap());
}

fn client_certificate_verify(j: &Join) {
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &j.client_point).verify(&j.cv_message, &j.cv_sig).unwrap();
}

fn client_cert_self_signature(j: &Join) {
    let c = Certificate::from_der(&j.client_cert).unwrap();
    let attest_engine::x509::PublicKey::EcP256 { point } = c.public_key() else { panic!("P-256") };
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point).verify(c.tbs(), c.signature()).unwrap();
}

fn quote(j: &Join) {
    black_box(digest::digest(&SHA256, &j.client_cert[..91.min(j.client_cert.len())]));
    let mut nonce = digest::Context::new(&SHA256);
    nonce.update(&[0u8; 32]);
    nonce.update(&[7u8; 32]);
    black_box(nonce.finish());
    black_box(digest::digest(&SHA256, &j.ak_public));
    let mut pcrs = digest::Context::new(&SHA256);
    for p in &j.pcrs {
        pcrs.update(p);
    }
    black_box(pcrs.finish());
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &j.ak_point).verify(&j.attest, &j.quote_sig).unwrap();
}

fn csr_signature(j: &Join) {
    let csr = CertificationRequest::from_der(&j.csr).unwrap();
    let attest_engine::x509::PublicKey::EcP256 { point } = csr.public_key().unwrap() else { panic!("P-256") };
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point).verify(csr.info(), csr.signature()).unwrap();
}

fn kubelet_signature(j: &Join) {
    black_box(digest::digest(&SHA1_FOR_LEGACY_USE_ONLY, &j.client_point));
    black_box(j.ca_key.sign(&j.rng, &j.csr).unwrap());
}

fn ssh_ca(j: &Join) {
    let key = Ed25519KeyPair::from_seed_unchecked(&j.ssh_seed).unwrap();
    black_box(key.public_key().as_ref());
}

fn seal(j: &Join, len: usize) {
    let mut buf = vec![0u8; len];
    let nonce = Nonce::assume_unique_for_key([0; 12]);
    let _ = black_box(j.aead.seal_in_place_separate_tag(nonce, Aad::from([0u8; 5]), &mut buf).unwrap());
}

fn records(j: &Join) {
    seal(j, j.request_len);
    seal(j, j.ticket_len);
}

fn key_service_mtls(j: &Join) {
    for _ in 0..3 {
        seal(j, 9 + 5 + 60 + 40); // HTTP/2 HEADERS (HPACK-indexed) + DATA with GetDataKeyRequest
        seal(j, 9 + 5 + 40 + 30); // the response
    }
}

fn randomness(j: &Join) {
    let mut buf = [0u8; 32 + 22 + 16 + 16];
    j.rng.fill(&mut buf).unwrap();
    black_box(buf);
}

fn key_service_hkdf() {
    let prk = Salt::new(HKDF_SHA256, &[0x17; 32]).extract(&[0x42; 32]);
    for id in [&b"key-2b0c0f6e-6bd1-4d7f-9d1b-0a5f6a1c2d3e"[..], b"key-measurementSecret", b"key-ca_emergency_ssh"] {
        let mut out = [0u8; 32];
        prk.expand(&[id], HKDF_SHA256).unwrap().fill(&mut out).unwrap();
        black_box(out);
    }
}

fn all(j: &Join) {
    x25519(j);
    tls13_schedule(j);
    let key = server_credential(j);
    server_certificate_verify(j, &key);
    client_certificate_verify(j);
    client_cert_self_signature(j);
    quote(j);
    csr_signature(j);
    kubelet_signature(j);
    ssh_ca(j);
    records(j);
    key_service_mtls(j);
    randomness(j);
}

fn benches(c: &mut Criterion) {
    let Some((j, ca, _dir)) = setup() else {
        eprintln!("NOTICE: join_floor: the fixture could not be written; skipped");
        return;
    };
    let mut g = c.benchmark_group("join_floor");
    g.bench_function("x25519", |b| b.iter(|| x25519(&j)));
    g.bench_function("tls13_schedule", |b| b.iter(|| tls13_schedule(&j)));
    g.bench_function("server_credential", |b| b.iter(|| server_credential(&j)));
    let key = server_credential(&j);
    g.bench_function("server_certificate_verify", |b| b.iter(|| server_certificate_verify(&j, &key)));
    g.bench_function("client_certificate_verify", |b| b.iter(|| client_certificate_verify(&j)));
    g.bench_function("client_cert_self_signature", |b| b.iter(|| client_cert_self_signature(&j)));
    g.bench_function("quote", |b| b.iter(|| quote(&j)));
    g.bench_function("csr_signature", |b| b.iter(|| csr_signature(&j)));
    g.bench_function("kubelet_signature", |b| b.iter(|| kubelet_signature(&j)));
    g.bench_function("ssh_ca", |b| b.iter(|| ssh_ca(&j)));
    g.bench_function("records", |b| b.iter(|| records(&j)));
    g.bench_function("key_service_mtls", |b| b.iter(|| key_service_mtls(&j)));
    g.bench_function("randomness", |b| b.iter(|| randomness(&j)));
    g.bench_function("all", |b| b.iter(|| all(&j)));
    g.bench_function("key_service_hkdf", |b| b.iter(key_service_hkdf));
    g.finish();

    let mut g = c.benchmark_group("join_service");
    g.bench_function("ticket_csr_and_certificate", |b| {
        b.iter(|| black_box(ca.sign_kubelet(&ca.check_kubelet_csr(&j.csr).unwrap()).unwrap()));
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
