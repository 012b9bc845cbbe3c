//! Interop with grpc-go from Debian's golang-google-grpc-dev (1.33), built in GOPATH mode with no module
//! downloads: shell/grpc/tests/interop/go/main.go calls our server. Without Go or the package the test prints a
//! NOTICE and passes, except under CI=true, where it fails.

mod grpc_support;

use std::time::Duration;

use attest_grpc::ServerConfig;
use grpc_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_go_client_against_our_server() {
    let Some(go) = go() else { return };
    // GOPATH = <tmp>:/usr/share/gocode, our package at <tmp>/src/grpcinterop. The build cache persists in the
    // target directory so that reruns take seconds.
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("grpc-go-interop");
    let pkg = tmp.join("src/grpcinterop");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::copy(interop_dir().join("go/main.go"), pkg.join("main.go")).unwrap();
    let bin = tmp.join("grpcinterop");
    let mut build = tokio::process::Command::new(&go);
    build
        .args(["build", "-o"])
        .arg(&bin)
        .arg("grpcinterop")
        .env("GO111MODULE", "off")
        .env("GOPATH", format!("{}:/usr/share/gocode", tmp.display()))
        .env("GOCACHE", tmp.join("cache"))
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .current_dir(&tmp);
    let (ok, _) = run_peer(build, Duration::from_secs(400)).await;
    assert!(ok, "go build failed");

    let t = start(ServerConfig::default()).await;
    let mut run = tokio::process::Command::new(&bin);
    run.arg(t.addr.to_string());
    let (ok, stdout) = run_peer(run, Duration::from_secs(120)).await;
    assert!(ok, "grpc-go client reported failures");
    assert!(stdout.contains(" passed, 0 failed"));
    assert!(t.server.shutdown(Duration::from_secs(5)).await);
}
