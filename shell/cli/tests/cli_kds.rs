//! `attest kds fetch|prefill` against a local KDS serving the real certificates of `$ATTEST_TESTDATA`.

// The KDS stand-in of attest-kds's own tests (a test fixture with no place in a public API; see
// attest-kds's tests/kds_support for what it serves).
#[path = "../../kds/tests/kds_support/mod.rs"]
mod kds_support;

use kds_support::{KdsServer, assert_store_clean, first_cert, now, temp_store, vcek_id};

#[test]
fn cli_fetch_and_prefill() {
    let Some(data) = kds_support::testdata() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(KdsServer::start(&data));
    let store = temp_store("cli");
    let bin = env!("CARGO_BIN_EXE_attest");
    let run = |args: &[&str]| std::process::Command::new(bin).args(args).output().unwrap();
    let report = data.join("virtee-sev/report_milan.hex");
    let (report, s) = (report.to_str().unwrap(), store.to_str().unwrap());
    // `attest kds fetch` of the Milan report / `attest kds prefill` for Milan, into the store, with `more`.
    let fetch = |more: &[&str]| {
        run(&[&["kds", "fetch", "--report", report, "--product", "milan", "--store", s], more].concat())
    };
    let prefill = |more: &[&str]| run(&[&["kds", "prefill", "--store", s, "--product", "milan"], more].concat());
    let out = fetch(&["--base-url", &server.base_url, "--skip-crl", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["items"][0]["source"], "kds", "{v}");
    assert!(stderr.contains("[1] VCEK Milan"), "{stderr}");
    // Without --skip-crl the (absent) CRL is a failure: exit 1, the rest still stored.
    let out = fetch(&["--base-url", &server.base_url]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    // Prefill by chip id and TCB, both TCB forms.
    let go = vcek_id(&first_cert(&data, "go-sev-guest/vcek.testcer"));
    let out = prefill(&[
        "--chip-id",
        &go.hw_id_hex,
        "--tcb",
        "0x4405000000000002",
        "--tcb",
        "bl=2,tee=0,snp=5,ucode=68",
        "--base-url",
        &server.base_url,
        "--skip-crl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Offline verification afterwards: fetch --offline finds everything in the store.
    let out = fetch(&["--offline", "--skip-crl"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ok (store)"));
    // Without --store: $ATTEST_KDS_STORE, else $XDG_CACHE_HOME/attest/kds (here a link to the filled store;
    // an empty cache finds nothing offline).
    let offline = ["kds", "fetch", "--report", report, "--product", "milan", "--offline", "--skip-crl"];
    let bare = || {
        let mut c = std::process::Command::new(bin);
        c.args(offline).env_remove("ATTEST_KDS_STORE").env_remove("XDG_CACHE_HOME");
        c
    };
    let out = bare().env("ATTEST_KDS_STORE", s).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let xdg = temp_store("cli-xdg");
    std::fs::create_dir_all(xdg.join("attest")).unwrap();
    std::os::unix::fs::symlink(&store, xdg.join("attest").join("kds")).unwrap();
    let out = bare().env("XDG_CACHE_HOME", &xdg).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let empty = temp_store("cli-xdg-empty");
    let out = bare().env("XDG_CACHE_HOME", &empty).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(xdg);
    let _ = std::fs::remove_dir_all(empty);
    // Usage errors exit 2.
    let out = prefill(&["--chip-id", "zz", "--tcb", "0x1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(assert_store_clean(&store, now()).len(), 3);
    std::fs::remove_dir_all(store).unwrap();
}
