//! Handshake-level tests over loopback TCP: a real OpenSSL server sends a CertificateRequest with one
//! acceptable-CA name, and the client reads it and answers from the certificate callback.

use super::{CertCallbackResult, client_ca_list, set_cert_callback, want_x509_lookup};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    HandshakeError, Ssl, SslAcceptor, SslConnector, SslConnectorBuilder, SslMethod, SslStream, SslVerifyMode,
    SslVersion,
};
use openssl::stack::{Stack, StackRef};
use openssl::x509::{X509, X509Name, X509NameBuilder};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

fn name(cn: &str) -> X509Name {
    let mut b = X509NameBuilder::new().unwrap();
    b.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
    b.build()
}

fn self_signed(cn: &str) -> (X509, PKey<Private>) {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    let mut serial = BigNum::new().unwrap();
    serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
    b.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
    b.set_subject_name(&name(cn)).unwrap();
    b.set_issuer_name(&name(cn)).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    (b.build(), key)
}

/// What the server saw: the client certificate's CN (if any), or the handshake error.
type ServerOutcome = Result<Option<String>, HandshakeError<TcpStream>>;

/// Runs one server handshake on a fresh loopback port; the server asks for a client certificate naming
/// `ca_cn` as the single acceptable CA (per connection, as aTLS does), accepts any certificate, and reports
/// what it got.
fn server(version: SslVersion, ca_cn: &'static str) -> (u16, thread::JoinHandle<ServerOutcome>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (cert, key) = self_signed("server");
        let mut ctx = SslAcceptor::mozilla_modern_v5(SslMethod::tls()).unwrap();
        ctx.set_min_proto_version(Some(version)).unwrap();
        ctx.set_max_proto_version(Some(version)).unwrap();
        ctx.set_certificate(&cert).unwrap();
        ctx.set_private_key(&key).unwrap();
        ctx.set_verify_callback(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT, |_, _| true);
        let ctx = ctx.build().into_context();
        let (tcp, _) = listener.accept().unwrap();
        let mut ssl = Ssl::new(&ctx).unwrap();
        let mut names = Stack::new().unwrap();
        names.push(name(ca_cn)).unwrap();
        ssl.set_client_ca_list(names);
        // The server's own view of the list it sends.
        let own: Vec<String> = client_ca_list(&ssl).unwrap().iter().map(cn).collect();
        assert_eq!(own, vec![ca_cn.to_owned()]);
        ssl.accept(tcp).map(|s| s.ssl().peer_certificate().map(|c| cn(c.subject_name())))
    });
    (port, handle)
}

fn cn(n: &openssl::x509::X509NameRef) -> String {
    n.entries_by_nid(Nid::COMMONNAME).next().unwrap().data().to_string().unwrap()
}

fn client_ctx(version: SslVersion) -> SslConnectorBuilder {
    let mut ctx = SslConnector::builder(SslMethod::tls()).unwrap();
    ctx.set_min_proto_version(Some(version)).unwrap();
    ctx.set_max_proto_version(Some(version)).unwrap();
    ctx.set_verify(SslVerifyMode::NONE);
    ctx
}

fn connect(ctx: SslConnectorBuilder, port: u16) -> Result<SslStream<TcpStream>, HandshakeError<TcpStream>> {
    let ctx = ctx.build().into_context();
    let ssl = Ssl::new(&ctx).unwrap();
    ssl.connect(TcpStream::connect(("127.0.0.1", port)).unwrap())
}

/// The callback reads the server's acceptable-CA name and answers with a certificate named after it.
fn reads_the_ca_name_inside_the_callback(version: SslVersion) {
    let (port, srv) = server(version, "bm9uY2Ugb2YgdGhlIHNlcnZlcg==");
    let mut ctx = client_ctx(version);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen2 = seen.clone();
    set_cert_callback(&mut ctx, move |ssl| {
        let names: Vec<String> = client_ca_list(ssl).map(|s| s.iter().map(cn).collect()).unwrap_or_default();
        let Some(first) = names.first() else { return CertCallbackResult::Fail };
        let (cert, key) = self_signed(&format!("answer to {first}"));
        ssl.set_certificate(&cert).unwrap();
        ssl.set_private_key(&key).unwrap();
        *seen2.lock().unwrap() = names;
        CertCallbackResult::Ready
    })
    .unwrap();
    let stream = connect(ctx, port).expect("handshake");
    // After the handshake the names are still readable.
    let after: Vec<String> = client_ca_list(stream.ssl()).unwrap().iter().map(cn).collect();
    assert_eq!(after, vec!["bm9uY2Ugb2YgdGhlIHNlcnZlcg==".to_owned()]);
    assert_eq!(*seen.lock().unwrap(), after);
    drop(stream);
    assert_eq!(
        srv.join().unwrap().expect("server handshake"),
        Some("answer to bm9uY2Ugb2YgdGhlIHNlcnZlcg==".to_owned())
    );
}

#[test]
fn client_reads_ca_names_and_answers_from_the_callback_tls13() {
    reads_the_ca_name_inside_the_callback(SslVersion::TLS1_3);
}

#[test]
fn client_reads_ca_names_and_answers_from_the_callback_tls12() {
    reads_the_ca_name_inside_the_callback(SslVersion::TLS1_2);
}

#[test]
fn retry_suspends_the_handshake_until_the_certificate_is_ready() {
    for version in [SslVersion::TLS1_2, SslVersion::TLS1_3] {
        let (port, srv) = server(version, "later");
        let mut ctx = client_ctx(version);
        let calls = Arc::new(Mutex::new(0u32));
        // The first call suspends; the second takes the certificate the caller produced meanwhile.
        type Slot = Arc<Mutex<Option<(X509, PKey<Private>)>>>;
        let slot: Slot = Arc::new(Mutex::new(None));
        let (calls2, slot2) = (calls.clone(), slot.clone());
        set_cert_callback(&mut ctx, move |ssl| {
            *calls2.lock().unwrap() += 1;
            let Some((cert, key)) = slot2.lock().unwrap().take() else { return CertCallbackResult::Retry };
            ssl.set_certificate(&cert).unwrap();
            ssl.set_private_key(&key).unwrap();
            CertCallbackResult::Ready
        })
        .unwrap();
        let mid = match connect(ctx, port) {
            Err(HandshakeError::Failure(mid)) if mid.error().code() == want_x509_lookup() => mid,
            Err(e) => panic!("expected a suspended handshake, got {e}"),
            Ok(_) => panic!("the handshake did not suspend"),
        };
        *slot.lock().unwrap() = Some(self_signed("produced while suspended"));
        let stream = match mid.handshake() {
            Ok(s) => s,
            Err(e) => panic!("resumed handshake: {e}"),
        };
        assert_eq!(*calls.lock().unwrap(), 2);
        drop(stream);
        assert_eq!(srv.join().unwrap().expect("server handshake"), Some("produced while suspended".to_owned()));
    }
}

#[test]
fn fail_aborts_the_handshake_on_both_sides() {
    let (port, srv) = server(SslVersion::TLS1_3, "x");
    let mut ctx = client_ctx(SslVersion::TLS1_3);
    set_cert_callback(&mut ctx, |_| CertCallbackResult::Fail).unwrap();
    let err = connect(ctx, port).map(|_| ()).expect_err("the callback failed the handshake");
    assert!(err.to_string().contains("cert cb error") || err.to_string().contains("callback"), "{err}");
    let server_err = srv.join().unwrap().expect_err("the server sees an alert");
    assert!(server_err.to_string().contains("alert"), "{server_err}");
}

#[test]
fn a_panicking_callback_fails_the_handshake_instead_of_unwinding_into_c() {
    let (port, srv) = server(SslVersion::TLS1_3, "x");
    let mut ctx = client_ctx(SslVersion::TLS1_3);
    set_cert_callback(&mut ctx, |_| panic!("boom")).unwrap();
    assert!(connect(ctx, port).is_err());
    assert!(srv.join().unwrap().is_err());
}

#[test]
fn no_certificate_request_means_no_callback_and_no_names() {
    // A server that does not ask for a certificate: the client's callback never runs and the list is empty.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let srv = thread::spawn(move || {
        let (cert, key) = self_signed("server");
        let mut ctx = SslAcceptor::mozilla_modern_v5(SslMethod::tls()).unwrap();
        ctx.set_certificate(&cert).unwrap();
        ctx.set_private_key(&key).unwrap();
        let acceptor = ctx.build();
        let (tcp, _) = listener.accept().unwrap();
        acceptor.accept(tcp).map(|_| ()).map_err(|e| e.to_string())
    });
    let mut ctx = client_ctx(SslVersion::TLS1_3);
    let called = Arc::new(Mutex::new(false));
    let called2 = called.clone();
    set_cert_callback(&mut ctx, move |_| {
        *called2.lock().unwrap() = true;
        CertCallbackResult::Fail
    })
    .unwrap();
    let stream = connect(ctx, port).expect("handshake");
    assert!(!*called.lock().unwrap());
    assert!(client_ca_list(stream.ssl()).is_none_or(StackRef::is_empty));
    drop(stream);
    srv.join().unwrap().unwrap();
}

#[test]
fn the_server_side_callback_runs_before_the_certificate_is_chosen() {
    // On a server the callback runs while the ClientHello is processed and can see the SNI.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let srv = thread::spawn(move || {
        let mut ctx = SslAcceptor::mozilla_modern_v5(SslMethod::tls()).unwrap();
        set_cert_callback(&mut ctx, |ssl| {
            let sni = ssl.servername(openssl::ssl::NameType::HOST_NAME).unwrap_or("none").to_owned();
            let (cert, key) = self_signed(&sni);
            ssl.set_certificate(&cert).unwrap();
            ssl.set_private_key(&key).unwrap();
            CertCallbackResult::Ready
        })
        .unwrap();
        let acceptor = ctx.build();
        let (tcp, _) = listener.accept().unwrap();
        acceptor.accept(tcp).map(|_| ()).map_err(|e| e.to_string())
    });
    let ctx = client_ctx(SslVersion::TLS1_3).build().into_context();
    let mut ssl = Ssl::new(&ctx).unwrap();
    // Standard base64 with '+', '/' and '=' goes through OpenSSL's SNI untouched.
    ssl.set_hostname("a+b/c==").unwrap();
    let stream = ssl.connect(TcpStream::connect(("127.0.0.1", port)).unwrap()).expect("handshake");
    assert_eq!(cn(stream.ssl().peer_certificate().unwrap().subject_name()), "a+b/c==");
    drop(stream);
    srv.join().unwrap().unwrap();
}
