//! `attest recover` refuses a node that does not attest: a recovery endpoint that completes TLS without an
//! attestation never receives the master secret (its handler counts calls: none). The swtpm-backed success
//! and the refusal of a node with other measurements are in `hwtests/tests/lifecycle.rs`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use attest_atls::AtlsAcceptor;
use attest_grpc::{Response, Router, Server, ServerConfig};
use attest_keyservice::MasterSecret;
use attest_proto::paths;
use attest_proto::recover::{RecoverMessage, RecoverResponse};
use common::{attest, scratch};

#[test]
fn recovery_refuses_a_node_that_does_not_attest() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let (server, addr) = rt.block_on(async move {
        let mut router = Router::new();
        router.unary(paths::RECOVER_RECOVER, move |_r: attest_grpc::Request<RecoverMessage>| {
            seen.fetch_add(1, Ordering::SeqCst);
            async { Ok(Response::new(RecoverResponse {})) }
        });
        let server = Server::new(router, ServerConfig::default());
        // TLS whose server certificate carries no attestation: the node does not attest (it would verify a
        // client, with no validator at all).
        let verifier = Arc::new(attest_atls::Verifier::new(vec![]));
        let acceptor = Arc::new(AtlsAcceptor::new(None, Some(verifier)).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = attest_atls::grpc::serve(&server, listener, acceptor).unwrap();
        (server, addr)
    });

    let measurements = scratch("recover-measurements.json");
    std::fs::write(
        &measurements,
        format!("{{\"15\": {{\"expected\": \"{}\", \"warnOnly\": false}}}}", "00".repeat(32)),
    )
    .unwrap();
    let registry = scratch("recover-registry.json");
    std::fs::write(&registry, "{\"version\": 1, \"aks\": []}").unwrap();
    let secret_path = scratch("recover-master-secret.json");
    let _ = std::fs::remove_file(&secret_path);
    assert_eq!(
        attest(std::path::Path::new("."), &["secret", "new", "--out", &secret_path.display().to_string()]).code,
        0
    );
    let secret = MasterSecret::from_file(&secret_path).unwrap();

    let endpoint = addr.to_string();
    let measurements_arg = measurements.display().to_string();
    let secret_arg = secret_path.display().to_string();
    // `attest recover` of this node with the AK registry `ak_registry`, then `extra`.
    let recover = |ak_registry: &str, extra: &[&str]| {
        let mut argv = vec![
            "recover",
            "--endpoint",
            &endpoint,
            "--measurements",
            &measurements_arg,
            "--ak-registry",
            ak_registry,
            "--master-secret",
            &secret_arg,
        ];
        argv.extend_from_slice(extra);
        attest(std::path::Path::new("."), &argv)
    };

    let run = recover(
        &registry.display().to_string(),
        // What is tested is the node's attestation; the measurements' signature is waived, by name.
        &["--json", "--dangerously-skip-measurements-signature"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let v = run.json();
    assert_eq!(v["outcome"], "refused", "{run:?}");
    assert_eq!(v["recovered"], false);
    assert!(v["error"].as_str().unwrap().contains("extension"), "no attestation in its certificate: {run:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the master secret was never sent");
    for shown in [&run.stdout, &run.stderr] {
        assert!(!shown.contains(&hex::encode(secret.key())) && !shown.contains(&*secret.to_kms_uri()));
    }

    // A registry file that does not exist is a usage error, before any connection.
    let missing = recover("/nonexistent/registry.json", &["--dangerously-skip-measurements-signature"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    rt.block_on(server.shutdown(std::time::Duration::from_secs(1)));
    for f in [measurements, registry, secret_path] {
        let _ = std::fs::remove_file(f);
    }
}
