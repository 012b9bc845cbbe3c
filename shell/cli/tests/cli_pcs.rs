//! `attest pcs fetch|prefill` against a local HTTPS PCS serving the real go-tdx-guest bodies, then
//! `attest tdx verify` with the bundle `fetch` wrote, and with the store alone (offline).

// The PCS stand-in of attest-kds's own tests (a test fixture with no place in a public API; see
// attest-kds's tests/pcs_support for what it serves).
#[path = "../../kds/tests/pcs_support/mod.rs"]
mod pcs_support;

use attest_test_support::TempDir;
use pcs_support::PcsServer;
use serde_json::Value;

#[test]
fn cli_fetch_prefill_and_verify() {
    let Some(data) = pcs_support::testdata() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(PcsServer::start(&data));
    let tmp = TempDir::new("cli-pcs");
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, openssl::x509::X509::from_der(&server.ca_der).unwrap().to_pem().unwrap()).unwrap();
    let store = tmp.path().join("store");
    let bundle = tmp.path().join("bundle.json");
    let (ca, s, b) = (ca.to_str().unwrap(), store.to_str().unwrap(), bundle.to_str().unwrap());
    let quote = data.join("trustee-tdx/tdx_quote_4.dat");
    let quote = quote.to_str().unwrap();
    let online = ["--base-url", &server.base_url, "--certs-url", &server.base_url, "--tls-ca", ca];
    let bin = env!("CARGO_BIN_EXE_attest");
    let run = |args: &[&str]| std::process::Command::new(bin).args(args).output().unwrap();

    // fetch by quote: the set is verified and stored; the machine's clock is past the 2023 collateral's
    // window, so it is reported as not fresh (exit 1), and the bundle is written all the same.
    let out = run(&[&["pcs", "fetch", "--quote", quote, "--store", s, "--bundle", b, "--json"], &online[..]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"][0]["source"], "pcs", "{v}");
    assert_eq!(v["items"][0]["fresh"], false, "{v}");
    assert_eq!(v["items"][0]["expires"], "2023-07-08T07:24:59Z", "{v}");
    assert_eq!(server.total(), 4);

    // The bundle verifies the quote at the collateral's time.
    let policy = tmp.path().join("debug.toml");
    std::fs::write(&policy, "allow_debug = true").unwrap();
    let policy = policy.to_str().unwrap();
    let verify = |collateral: &str| {
        run(&["tdx", "verify", quote, "--collateral", collateral, "--policy", policy, "--at", "2023-07-01", "--json"])
    };
    let out = verify(b);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));

    // prefill from the store alone (offline), by FMSPC and by quote: nothing is fetched.
    let out =
        run(&["pcs", "prefill", "--store", s, "--offline", "--fmspc", "50806f000000", "--from-quote", quote, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"].as_array().unwrap().len(), 1, "one platform: {v}");
    assert_eq!(v["items"][0]["source"], "store", "{v}");
    assert_eq!(server.total(), 4);
    // fetch offline with --bundle: the same bundle, from the store.
    let again = tmp.path().join("again.json");
    let out = run(&[
        "pcs",
        "fetch",
        "--fmspc",
        "50806f000000",
        "--store",
        s,
        "--offline",
        "--bundle",
        again.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "not fresh now: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&bundle).unwrap());
    // An FMSPC PCS does not know: exit 1, nothing written.
    let out = run(&[&["pcs", "fetch", "--fmspc", "00806f050000", "--store", s], &online[..]].concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
    // Usage errors.
    for args in [
        vec!["pcs", "fetch", "--store", s],
        vec!["pcs", "fetch", "--fmspc", "5080", "--store", s],
        vec!["pcs", "fetch", "--quote", "/nonexistent", "--store", s],
        vec!["pcs", "prefill", "--store", s],
    ] {
        assert_eq!(run(&args).status.code(), Some(2), "{args:?}");
    }
}
