//! The key service (`docs/ARCHITECTURE.md`, "Keys"): known-answer tests of the HKDF derivations (expected values computed
//! independently with `openssl kdf … HKDF`, OpenSSL 3.0), the master-secret formats, every refusal with its gRPC
//! code over a real mutual-TLS connection on 127.0.0.1, concurrency, and the `key-service` binary, whose captured
//! logs are scanned for the secret and the derived keys. Who may connect at all is `tests/keyservice_tls.rs`.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use attest_grpc::{Channel, ChannelConfig, Code, Metadata, Router, Server, ServerConfig, Status};
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsAcceptor, KmsConnector, TlsFiles, generate_pki};
use attest_keyservice::{
    KeyRequestError, KeyService, MAX_DATA_KEY_ID_LENGTH, MAX_DATA_KEY_LENGTH, MasterSecret, MasterSecretError,
    cluster_id, derive_data_key, hkdf_sha256, measurement_secret, state_disk_key,
};
use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

/// The KAT master key: bytes 0x00..=0x1f.
fn kat_key() -> Vec<u8> {
    (0u8..32).collect()
}

/// The KAT master salt: bytes 0xa0..=0xbf.
fn kat_salt() -> Vec<u8> {
    (0xa0u8..0xc0).collect()
}

fn kat_secret() -> MasterSecret {
    MasterSecret::new(Zeroizing::new(kat_key()), Zeroizing::new(kat_salt())).unwrap()
}

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

// ---------------------------------------------------------------------------------------------------------------
// Known answers.

#[test]
fn hkdf_sha256_rfc5869_vectors() {
    // RFC 5869 A.1 (test case 1) and A.3 (test case 3: empty salt and info).
    let okm = hkdf_sha256(&[0x0b; 22], &h("000102030405060708090a0b0c"), &h("f0f1f2f3f4f5f6f7f8f9"), 42).unwrap();
    assert_eq!(
        hex::encode(&*okm),
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    );
    let okm = hkdf_sha256(&[0x0b; 22], &[], &[], 42).unwrap();
    assert_eq!(
        hex::encode(&*okm),
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
    );
    // RFC limits: 0 and more than 255 × 32 bytes are not HKDF outputs.
    assert!(hkdf_sha256(&[1; 32], &[], b"x", 0).is_none());
    assert!(hkdf_sha256(&[1; 32], &[], b"x", 255 * 32).is_some());
    assert!(hkdf_sha256(&[1; 32], &[], b"x", 255 * 32 + 1).is_none());
}

#[test]
fn state_disk_key_known_answer() {
    // openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt hexkey:000102…1f -kdfopt hexsalt:a0a1…bf
    //   -kdfopt hexinfo:<hex of "key-3c7bbc4b-8e2f-4f53-9d1f-6a2d4e0b7c11"> HKDF
    let key = state_disk_key(&kat_secret(), "3c7bbc4b-8e2f-4f53-9d1f-6a2d4e0b7c11").unwrap();
    assert_eq!(hex::encode(&*key), "aebb3ea5bf947c26893129f1b222dcc041169a4ef01f051d9fa6996cb9c7d5f9");
}

#[test]
fn measurement_secret_and_cluster_id_known_answers() {
    // info = "key-measurementSecret".
    let ms = measurement_secret(&kat_secret());
    assert_eq!(hex::encode(&*ms), "7420076e98cec75bf0de6a6e8b35c9e6a4e6c8fc3772a036bbfb035a509bf4bf");
    // IKM = the measurement secret above, salt = 0x55 × 32, info = "key-clusterID".
    let id = cluster_id(&ms, &[0x55; 32]);
    assert_eq!(hex::encode(id), "5da650e0d65b509ad6b77f586280d02d61eabaf0a93e1d06206ffe0c51cd07f6");
}

#[test]
fn empty_salt_multi_block_known_answer() {
    // No salt given to openssl (and, identically, 32 zero bytes: RFC 5869 §2.2), info = "key-x", L = 100.
    let secret = MasterSecret::new(Zeroizing::new(kat_key()), Zeroizing::new(Vec::new())).unwrap();
    let key = derive_data_key(&secret, "x", 100).unwrap();
    assert_eq!(
        hex::encode(&*key),
        "0ab8f7c2adea313b1a6fb3190bc259e5684594a8d3b92817e4781242a3fa1eb56c88054e3c589b31b09440e45cb81c50c7a3462608\
         6e89fa838ff20e9928c5867d3cdbf5661380781ea53e306c0249f86614505e83fe02fe82fbfafd04d9bf155c6751dd"
    );
}

#[test]
fn largest_key_known_answer() {
    // L = 4096, info = "key-big"; openssl's output piped through sha256sum.
    let key = derive_data_key(&kat_secret(), "big", MAX_DATA_KEY_LENGTH).unwrap();
    assert_eq!(key.len(), 4096);
    assert_eq!(
        hex::encode(openssl::sha::sha256(&key)),
        "d6097f0d65cebdcdc11ccda12aa2e38ea15d90e91947309c19aa2aa94a13dffa"
    );
}

#[test]
fn deterministic_and_distinct() {
    let a = kat_secret();
    let b = kat_secret();
    assert_eq!(*derive_data_key(&a, "disk-1", 32).unwrap(), *derive_data_key(&b, "disk-1", 32).unwrap());
    let ids = ["disk-1", "disk-2", "Disk-1", "measurementSecret", "clusterID", "key-disk-1", "disk-1 "];
    let keys: Vec<Vec<u8>> = ids.iter().map(|id| derive_data_key(&a, id, 32).unwrap().to_vec()).collect();
    for i in 0..keys.len() {
        for j in i + 1..keys.len() {
            assert_ne!(keys[i], keys[j], "{} vs {}", ids[i], ids[j]);
        }
    }
    // Another salt or another key gives other keys.
    let other_salt = MasterSecret::new(Zeroizing::new(kat_key()), Zeroizing::new(vec![0; 32])).unwrap();
    assert_ne!(*derive_data_key(&other_salt, "disk-1", 32).unwrap(), keys[0]);
    let mut k = kat_key();
    k[0] ^= 1;
    let other_key = MasterSecret::new(Zeroizing::new(k), Zeroizing::new(kat_salt())).unwrap();
    assert_ne!(*derive_data_key(&other_key, "disk-1", 32).unwrap(), keys[0]);
    // HKDF-Expand is a stream: a shorter key is a prefix of a longer one with the same id.
    assert_eq!(*derive_data_key(&a, "disk-1", 16).unwrap(), keys[0][..16]);
    // The cluster id depends on both inputs.
    assert_ne!(cluster_id(&[1; 32], &[2; 32]), cluster_id(&[1; 32], &[3; 32]));
    assert_ne!(cluster_id(&[1; 32], &[2; 32]), cluster_id(&[4; 32], &[2; 32]));
}

#[test]
fn request_validation() {
    let s = kat_secret();
    assert_eq!(derive_data_key(&s, "", 32).unwrap_err(), KeyRequestError::EmptyId);
    assert_eq!(derive_data_key(&s, "x", 0).unwrap_err(), KeyRequestError::ZeroLength);
    assert_eq!(derive_data_key(&s, "x", 4097).unwrap_err(), KeyRequestError::LengthTooLarge { len: 4097 });
    let long = "a".repeat(MAX_DATA_KEY_ID_LENGTH + 1);
    assert_eq!(derive_data_key(&s, &long, 32).unwrap_err(), KeyRequestError::IdTooLong { len: 257 });
    assert!(derive_data_key(&s, &long[1..], 32).is_ok());
    assert!(state_disk_key(&s, "").is_err());
}

// ---------------------------------------------------------------------------------------------------------------
// Master secret: formats, the length floor, redaction.

fn tmp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("keyservice");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

/// Every textual form in which `bytes` could leak.
fn encodings(bytes: &[u8]) -> Vec<String> {
    vec![
        hex::encode(bytes),
        hex::encode_upper(bytes),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        format!("{bytes:?}"),
        format!("{bytes:x?}"),
    ]
}

fn assert_no_leak(text: &str, secret: &[u8], what: &str) {
    for enc in encodings(secret) {
        assert!(!text.contains(&enc), "{what} leaks {enc}:\n{text}");
    }
    if secret.len() >= 8 {
        let raw = secret;
        assert!(!text.as_bytes().windows(raw.len()).any(|w| w == raw), "{what} leaks the raw bytes");
    }
}

#[test]
fn short_master_secret_refused() {
    for len in [0, 1, 15] {
        let err = MasterSecret::new(Zeroizing::new(vec![7; len]), Zeroizing::new(Vec::new())).unwrap_err();
        assert!(matches!(err, MasterSecretError::TooShort { len: l } if l == len), "{err:?}");
        assert!(err.to_string().contains("at least 16"), "{err}");
    }
    assert!(MasterSecret::new(Zeroizing::new(vec![7; 16]), Zeroizing::new(Vec::new())).is_ok());
    // In every format.
    let short = b"0123456789abcde";
    let path = tmp_file("short-raw", short);
    assert!(matches!(MasterSecret::from_file(&path), Err(MasterSecretError::TooShort { len: 15 })));
    let json = format!("{{\"key\":\"{}\",\"salt\":\"\"}}", STANDARD.encode(short));
    assert!(matches!(MasterSecret::from_json(&json), Err(MasterSecretError::TooShort { len: 15 })));
    let uri = format!("kms://cluster-kms?key={}", URL_SAFE.encode(short));
    assert!(matches!(MasterSecret::from_kms_uri(&uri), Err(MasterSecretError::TooShort { len: 15 })));
}

#[test]
fn file_formats() {
    let key: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37).wrapping_add(200)).collect();
    let salt: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(11) ^ 0x5a).collect();
    let expected = derive_data_key(
        &MasterSecret::new(Zeroizing::new(key.clone()), Zeroizing::new(salt.clone())).unwrap(),
        "probe",
        32,
    )
    .unwrap();
    let probe = |s: &MasterSecret| derive_data_key(s, "probe", 32).unwrap();

    // JSON (Constellation's constellation-mastersecret.json), with whitespace around it.
    let json =
        format!("{{\n  \"key\": \"{}\",\n  \"salt\": \"{}\"\n}}\n", STANDARD.encode(&key), STANDARD.encode(&salt));
    let s = MasterSecret::from_file(&tmp_file("json", json.as_bytes())).unwrap();
    assert_eq!((s.key(), s.salt()), (&key[..], &salt[..]));
    assert_eq!(*probe(&s), *expected);
    // to_json round-trips.
    assert_eq!(MasterSecret::from_json(&s.to_json()).unwrap().key(), &key[..]);

    // KMS URI, in a file and as given; URL-safe padded (Constellation), standard percent-encoded, unpadded.
    let uri = s.to_kms_uri();
    assert!(uri.starts_with("kms://cluster-kms?key="), "format");
    let s2 = MasterSecret::from_file(&tmp_file("uri", format!("{}\n", *uri).as_bytes())).unwrap();
    assert_eq!(*probe(&s2), *expected);
    let pct = |t: String| t.replace('+', "%2B").replace('/', "%2F").replace('=', "%3D");
    let std_uri = format!("kms://cluster-kms?key={}&salt={}", pct(STANDARD.encode(&key)), pct(STANDARD.encode(&salt)));
    assert_eq!(*probe(&MasterSecret::from_kms_uri(&std_uri).unwrap()), *expected);
    let nopad =
        format!("kms://cluster-kms/?salt={}&key={}", URL_SAFE_NO_PAD.encode(&salt), URL_SAFE_NO_PAD.encode(&key));
    assert_eq!(*probe(&MasterSecret::from_kms_uri(&nopad).unwrap()), *expected);
    // Salt omitted = empty salt.
    let nosalt = MasterSecret::from_kms_uri(&format!("kms://cluster-kms?key={}", URL_SAFE.encode(&key))).unwrap();
    assert!(nosalt.salt().is_empty());
    let nosalt_json = MasterSecret::from_json(&format!("{{\"key\":\"{}\"}}", STANDARD.encode(&key))).unwrap();
    assert!(nosalt_json.salt().is_empty());

    // Raw bytes: the whole file, empty salt.
    let s3 = MasterSecret::from_file(&tmp_file("raw", &key)).unwrap();
    assert_eq!((s3.key(), s3.salt()), (&key[..], &[][..]));
    let text = b"a passphrase of some length\n";
    let s4 = MasterSecret::from_file(&tmp_file("raw-text", text)).unwrap();
    assert_eq!(s4.key(), text);
}

#[test]
fn malformed_secrets_refused_without_leaking() {
    let key = b"SECRETSECRETSECRETSECRET-0123456";
    let b64 = STANDARD.encode(key);
    let cases: Vec<(String, &str)> = vec![
        (format!("{{\"key\": \"{b64}\", \"salt\": 5}}"), "JSON"),
        (format!("{{\"key\": \"{b64}\", \"pepper\": \"\"}}"), "JSON"),
        (format!("{{\"key\": \"{b64}\",}}"), "JSON"),
        (format!("{{\"key\": \"{b64}!\"}}"), "base64"),
        (format!("{{\"key\": \"{b64}\", \"salt\": \"%%%\"}}"), "base64"),
        (format!("kms://cluster-kms?key={b64}&salt=&key={b64}"), "twice"),
        (format!("kms://cluster-kms?key={b64}&pepper=x"), "unknown query parameter"),
        (format!("kms://cluster-kms?key={b64}#frag"), "fragment"),
        (format!("kms://other?key={b64}"), "expected kms://cluster-kms"),
        ("kms://cluster-kms?salt=AAAA".to_owned(), "key parameter is missing"),
        (format!("kms://cluster-kms?key={b64}%4"), "percent"),
        (format!("kms://cluster-kms?key&salt={b64}"), "no value"),
        (format!("kms://cluster-kms?key={}", &b64[1..]), "base64"),
    ];
    for (contents, expect) in cases {
        let err = MasterSecret::from_file(&tmp_file("bad", contents.as_bytes())).unwrap_err();
        let shown = format!("{err} / {err:?}");
        assert!(shown.contains(expect), "{contents}: {shown}");
        assert_no_leak(&shown, key, "error");
        assert!(!shown.contains(&b64[..12]), "{shown}");
    }
    let missing = MasterSecret::from_file(&PathBuf::from("/nonexistent/master-secret")).unwrap_err();
    assert!(matches!(missing, MasterSecretError::Io { .. }), "{missing}");
    let big = tmp_file("big", &vec![b'a'; 64 * 1024 + 1]);
    assert!(matches!(MasterSecret::from_file(&big), Err(MasterSecretError::FileTooLarge { .. })));
}

#[test]
fn debug_is_redacted() {
    let s = kat_secret();
    let service = KeyService::new(kat_secret());
    for shown in [format!("{s:?}"), format!("{s:#?}"), format!("{service:?}")] {
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_no_leak(&shown, &kat_key(), "Debug");
        assert_no_leak(&shown, &kat_salt(), "Debug");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Over gRPC on 127.0.0.1.

/// One key-service PKI for the whole test binary (generated once).
fn pki() -> &'static PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("keyservice-pki-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        generate_pki(&dir).unwrap();
        dir
    })
}

async fn start_service(secret: MasterSecret) -> (Server, SocketAddr) {
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(secret)));
    let server = Server::new(router, ServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let acceptor = Arc::new(KmsAcceptor::new(&TlsFiles::server_in(pki()), &[]).unwrap());
    let addr = attest_keyservice::tls::serve(&server, listener, acceptor).unwrap();
    (server, addr)
}

/// The join service's side of the connection: mutual TLS with its client certificate.
async fn connect(addr: SocketAddr, config: ChannelConfig) -> Result<Channel, Status> {
    KmsConnector::new(&TlsFiles::client_in(pki()), KEY_SERVICE_NAME).unwrap().connect(addr, config).await
}

async fn get(channel: &Channel, id: &str, length: u32) -> Result<Vec<u8>, Status> {
    let request = GetDataKeyRequest { data_key_id: id.to_owned(), length };
    channel
        .unary::<_, GetDataKeyResponse>(
            paths::KMS_GET_DATA_KEY,
            request,
            Metadata::new(),
            Some(Duration::from_secs(20)),
        )
        .await
        .map(|r| r.message.data_key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_success_and_every_refusal() {
    let (server, addr) = start_service(kat_secret()).await;
    let channel = connect(addr, ChannelConfig::default()).await.unwrap();

    let key = get(&channel, "3c7bbc4b-8e2f-4f53-9d1f-6a2d4e0b7c11", 32).await.unwrap();
    assert_eq!(hex::encode(&key), "aebb3ea5bf947c26893129f1b222dcc041169a4ef01f051d9fa6996cb9c7d5f9");
    let ms = get(&channel, "measurementSecret", 32).await.unwrap();
    assert_eq!(ms, *measurement_secret(&kat_secret()));
    // The limits themselves are accepted.
    assert_eq!(get(&channel, "big", 4096).await.unwrap().len(), 4096);
    assert_eq!(get(&channel, &"i".repeat(MAX_DATA_KEY_ID_LENGTH), 1).await.unwrap().len(), 1);

    let refusals: [(&str, u32, &str); 5] = [
        ("", 32, "data_key_id is empty"),
        ("x", 0, "length is 0"),
        ("x", 4097, "exceeds the limit of 4096"),
        ("x", u32::MAX, "exceeds the limit of 4096"),
        (&"i".repeat(MAX_DATA_KEY_ID_LENGTH + 1), 32, "the limit is 256"),
    ];
    for (id, length, message) in refusals {
        let status = get(&channel, id, length).await.unwrap_err();
        assert_eq!(status.code, Code::InvalidArgument, "{id:.10} {length}: {status}");
        assert!(status.message.contains(message), "{status}");
    }
    // A message that is not a GetDataKeyRequest (field 1 as a varint) is the router's INTERNAL.
    let bogus = GetDataKeyResponse { data_key: vec![0xff; 3] };
    let status = channel
        .unary::<_, GetDataKeyResponse>(paths::KMS_GET_DATA_KEY, bogus, Metadata::new(), None)
        .await
        .unwrap_err();
    assert_eq!(status.code, Code::Internal, "{status}");
    // Another method of kms.API does not exist.
    let status = channel
        .unary::<_, GetDataKeyResponse>("/kms.API/GetMasterKey", GetDataKeyRequest::default(), Metadata::new(), None)
        .await
        .unwrap_err();
    assert_eq!(status.code, Code::Unimplemented);

    assert!(server.shutdown(Duration::from_secs(5)).await);
    // After shutdown: UNAVAILABLE for a new connection.
    let status = connect(addr, ChannelConfig { connect_timeout: Duration::from_secs(2), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(status.code, Code::Unavailable, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_requests() {
    let (server, addr) = start_service(kat_secret()).await;
    let shared = connect(addr, ChannelConfig::default()).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..50u32 {
        // Half share one connection (50 / 2 concurrent HTTP/2 streams), half open their own.
        let channel = if i % 2 == 0 { Some(shared.clone()) } else { None };
        tasks.push(tokio::spawn(async move {
            let channel = match channel {
                Some(c) => c,
                None => connect(addr, ChannelConfig::default()).await.unwrap(),
            };
            let id = format!("disk-{i}");
            let length = 16 + i;
            (id.clone(), length, get(&channel, &id, length).await)
        }));
    }
    let secret = kat_secret();
    let mut seen = std::collections::HashSet::new();
    for task in tasks {
        let (id, length, key) = task.await.unwrap();
        let key = key.unwrap_or_else(|s| panic!("{id}: {s}"));
        assert_eq!(key, *derive_data_key(&secret, &id, length as usize).unwrap(), "{id}");
        assert!(seen.insert(key[..16].to_vec()), "{id}: duplicate key");
    }
    assert_eq!(seen.len(), 50);
    assert!(server.shutdown(Duration::from_secs(5)).await);
}

// ---------------------------------------------------------------------------------------------------------------
// The binary.

const BIN: &str = env!("CARGO_BIN_EXE_key-service");

/// The binary's TLS flags for the test PKI.
fn tls_args() -> Vec<std::ffi::OsString> {
    let files = TlsFiles::server_in(pki());
    vec![
        "--tls-ca".into(),
        files.ca.into(),
        "--tls-cert".into(),
        files.cert.into(),
        "--tls-key".into(),
        files.key.into(),
    ]
}

/// Collects a pipe on a thread of its own, so the child never blocks on a full pipe.
fn collect(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        out
    })
}

#[test]
fn binary_serves_and_never_logs_secrets() {
    // A secret that looks random; JSON file with key and salt.
    let key = openssl::sha::sha256(b"attest key-service log-scan test key");
    let salt = openssl::sha::sha256(b"attest key-service log-scan test salt");
    let json = format!("{{\"key\":\"{}\",\"salt\":\"{}\"}}", STANDARD.encode(key), STANDARD.encode(salt));
    let path = tmp_file("bin-secret.json", json.as_bytes());

    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--log-level", "trace", "--master-secret"])
        .arg(&path)
        .args(tls_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = collect(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr: SocketAddr =
        first.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{first:?}")).parse().unwrap();
    let stdout = collect(stdout);

    let secret = MasterSecret::new(Zeroizing::new(key.to_vec()), Zeroizing::new(salt.to_vec())).unwrap();
    let ids = ["3c7bbc4b-8e2f-4f53-9d1f-6a2d4e0b7c11", "measurementSecret", "a", "big"];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let derived: Vec<Vec<u8>> = runtime.block_on(async {
        let channel = connect(addr, ChannelConfig::default()).await.unwrap();
        let mut derived = Vec::new();
        for (id, len) in ids.iter().zip([32u32, 32, 16, 4096]) {
            let got = get(&channel, id, len).await.unwrap();
            assert_eq!(got, *derive_data_key(&secret, id, len as usize).unwrap());
            derived.push(got);
        }
        for (id, len) in [("", 32u32), ("x", 0), ("x", 5000)] {
            assert_eq!(get(&channel, id, len).await.unwrap_err().code, Code::InvalidArgument);
        }
        derived
    });

    // SIGTERM (the child we started, by its pid): graceful shutdown, exit 0.
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "{exit:?}");
    let logs = [stdout.join().unwrap(), stderr.join().unwrap()].concat();
    let logs = String::from_utf8_lossy(&logs).into_owned();

    // The logs are real: startup, each request, the refusals and the shutdown are in them.
    for expected in ["master secret loaded", "listening", "measurementSecret", "request refused", "SIGTERM", "stopped"]
    {
        assert!(logs.contains(expected), "missing {expected:?} in:\n{logs}");
    }
    assert_no_leak(&logs, &key, "logs");
    assert_no_leak(&logs, &salt, "logs");
    for d in &derived {
        assert_no_leak(&logs, d, "logs");
    }
    // Nor the file's text.
    assert!(!logs.contains(&STANDARD.encode(key)[..16]));
    drop(runtime);
}

#[test]
fn binary_exit_codes() {
    // A short secret: exit 3, the reason in the log, not the bytes.
    let short = b"only15bytes-abc";
    let path = tmp_file("bin-short", short);
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--master-secret"])
        .arg(&path)
        .args(tls_args())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(text.contains("at least 16"), "{text}");
    assert!(!text.contains("only15bytes"), "{text}");
    // A missing file: exit 3.
    let out = Command::new(BIN).args(["--master-secret", "/nonexistent/secret"]).args(tls_args()).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    // Usage errors: exit 2.
    let out = Command::new(BIN).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN)
        .args(["--listen", "not-an-address", "--master-secret", "x"])
        .args(tls_args())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // No TLS files: a usage error (there is no plaintext mode).
    let key_path = tmp_file("bin-no-tls", &[9u8; 32]);
    let out = Command::new(BIN).args(["--listen", "127.0.0.1:0", "--master-secret"]).arg(&key_path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // A key that is not the certificate's: exit 3.
    let files = TlsFiles::server_in(pki());
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--master-secret"])
        .arg(&key_path)
        .arg("--tls-ca")
        .arg(&files.ca)
        .arg("--tls-cert")
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(pki().join("join-service.key"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not belong"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A port already taken: exit 1.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let key_path = tmp_file("bin-ok", &[9u8; 32]);
    let out = Command::new(BIN)
        .args(["--listen", &taken.local_addr().unwrap().to_string(), "--master-secret"])
        .arg(&key_path)
        .args(tls_args())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}
