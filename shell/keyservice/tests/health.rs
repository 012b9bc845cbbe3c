//! The key service's health check (`--health-listen`, `attest_keyservice::health`): the `key-service` binary
//! answers `grpc.health.v1.Health/Check` over plaintext HTTP/2 (what the kubelet's gRPC probe speaks) with
//! SERVING, `NOT_FOUND` for a service it does not have, and nothing else on that port — `kms.API` stays
//! behind mutual TLS.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use attest_grpc::{Channel, ChannelConfig, Code, Metadata};
use attest_keyservice::MasterSecret;
use attest_keyservice::health::{HEALTH_CHECK_PATH, HealthCheckRequest, HealthCheckResponse, ServingStatus};
use attest_keyservice::tls::{PkiOutcome, generate_pki};
use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;
use zeroize::Zeroizing;

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(10));

#[tokio::test]
async fn health_check_over_plaintext_only_says_serving() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kms-health-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(generate_pki(&dir).unwrap(), PkiOutcome::Created);
    let secret = MasterSecret::new(Zeroizing::new(vec![7; 32]), Zeroizing::new(vec![1; 32])).unwrap();
    std::fs::write(dir.join("master-secret.json"), secret.to_json().as_bytes()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_key-service"))
        .args(["--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0", "--master-secret"])
        .arg(dir.join("master-secret.json"))
        .arg("--tls-ca")
        .arg(dir.join("ca.crt"))
        .arg("--tls-cert")
        .arg(dir.join("key-service.crt"))
        .arg("--tls-key")
        .arg(dir.join("key-service.key"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let kms = lines.next().unwrap().unwrap();
    let health = lines.next().unwrap().unwrap();
    assert!(kms.starts_with("listening on "), "{kms}");
    let health: std::net::SocketAddr = health.strip_prefix("health on ").expect("health line").parse().unwrap();

    let channel = Channel::connect(health, ChannelConfig::default()).await.unwrap();
    for service in ["", "kms.API"] {
        let r = channel
            .unary::<_, HealthCheckResponse>(
                HEALTH_CHECK_PATH,
                HealthCheckRequest { service: service.into() },
                Metadata::new(),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(r.message.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let unknown = channel
        .unary::<_, HealthCheckResponse>(
            HEALTH_CHECK_PATH,
            HealthCheckRequest { service: "join.API".into() },
            Metadata::new(),
            TIMEOUT,
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code, Code::NotFound);
    // The plaintext port serves the health check only: no key is reachable there.
    let key = channel
        .unary::<_, GetDataKeyResponse>(
            paths::KMS_GET_DATA_KEY,
            GetDataKeyRequest { data_key_id: "k".into(), length: 32 },
            Metadata::new(),
            TIMEOUT,
        )
        .await
        .unwrap_err();
    assert_eq!(key.code, Code::Unimplemented, "{key}");

    // SIGTERM: a graceful stop.
    Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}
