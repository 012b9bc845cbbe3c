//! A TD quote from configfs-tsm to verdict, on the simulated TD (`attest-hwsim`: an Intel-like PKI signs
//! the quotes; the configfs-tsm entry is served through FIFOs), all in one run:
//!
//! - `tdx_configfs/quote_itself`: what producing one quote costs the simulated platform (the quote body and
//!   two P-256 signatures: quote and QE report) — the quote itself;
//! - `tdx_configfs/tsm_request`: the attester's configfs-tsm request for one quote
//!   (`TsmEntry::request`: generation before, inblob, outblob, generation after, the output reader's checks)
//!   — the quote itself plus the file exchange and the reader;
//! - `tdx_configfs/reader_checks`: the output reader alone (`check_output`: both generations, the provider's
//!   blob parsed as a TD quote with 3000 bytes of padding, its REPORTDATA against the inblob), next to
//!   `tdx_configfs/quote_parse`, the quote parse it includes;
//! - `tdx_configfs/issue_and_validate`: `NodeIssuer::issue` for `qemu-tdx` (the same request, the document)
//!   and `Validator::validate` with the test collateral installed and the PCK chain cached (warm) — quote to
//!   verdict;
//! - `tdx_configfs/validate_only`: the warm validation of one such document alone.
//!
//! `tsm_request − quote_itself` is the simulated transport (FIFO opens and thread wake-ups; on a TD the
//! kernel's quote generation takes its place); the attester's own checks are `reader_checks`. The verdict
//! adds `validate_only` on top of the quote.

use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice};
use attest_attester::issuer::tsm::TsmEntry;
use attest_attester::issuer::tsm::output::{Provider, RawOutput, check_output};
use attest_attester::issuer::{TdxPaths, document, pcr_values};
use attest_engine::UnixTime;
use attest_engine::policy::Hex;
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tdx::{TdQuote, TdxPolicy};
use attest_engine::variant::{PcrPolicy, Validator, Variant};
use attest_hwsim::tdx::{DEFAULT_MRTD, SimulatedTd, TD_ATTRIBUTES, TdServer};
use attest_kds::test_roots::TestRoots;
use criterion::Criterion;
use std::hint::black_box;
use std::sync::Arc;

fn main() {
    let dir = attest_test_support::TempDir::new("bench-tdx-configfs");
    let (roots, root) = (dir.path().join("roots"), dir.path().join("root"));
    let td = Arc::new(SimulatedTd::provision(&roots, &root, DEFAULT_MRTD, TD_ATTRIBUTES).expect("simulated TD"));
    let _server = TdServer::start(&td).expect("TD server");
    let paths = TdxPaths::under(&root);
    let entry = TsmEntry::create(&paths.tsm_report(), Provider::TdxGuest).expect("report entry");
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = paths;
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).expect("qemu-tdx issuer");
    let tdx = TestRoots::load(&roots).expect("test roots").tdx_verifier().expect("collateral").expect("TDX root");
    let policy = TdxPolicy { mrtd: vec![Hex(DEFAULT_MRTD)], ..TdxPolicy::default() };
    let validator =
        Validator::new(Variant::QemuTdx, Arc::new(SnpVerifier::new()), SnpPolicy::default(), PcrPolicy::default())
            .with_tdx(Arc::new(tdx), policy);
    let now =
        UnixTime::from_secs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs());
    let nonce = [7u8; 32];
    let doc = issuer.issue(&nonce, b"user data", &[]).expect("document");
    let pcrs = pcr_values(&doc).unwrap();
    assert!(!validator.validate(&document(&doc, &pcrs), &nonce, now).expect("cold").td.unwrap().cache_hit());

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("tdx_configfs");
    g.bench_function("quote_itself", |b| b.iter(|| td.quote(black_box(&[1; 64]))));
    g.bench_function("tsm_request", |b| b.iter(|| entry.request(black_box(&[1; 64]), &[]).unwrap()));
    // The reader's checks alone, on the attributes one request left (and the quote parse they include).
    let (quote, _) = entry.request(&[1; 64], &[]).unwrap();
    let mut padded = quote.clone();
    padded.resize(quote.len() + 3000, 0);
    let raw =
        RawOutput { generation_before: b"41\n", generation_after: b"42\n", writes: 1, outblob: &padded, auxblob: b"" };
    g.bench_function("reader_checks", |b| {
        b.iter(|| check_output(Provider::TdxGuest, black_box(&[1; 64]), black_box(&raw)).unwrap());
    });
    g.bench_function("quote_parse", |b| b.iter(|| TdQuote::parse_prefix(black_box(&padded)).unwrap()));
    g.bench_function("issue_and_validate", |b| {
        b.iter(|| {
            let doc = issuer.issue(black_box(&nonce), b"user data", &[]).unwrap();
            let pcrs = pcr_values(&doc).unwrap();
            let ok = validator.validate(&document(&doc, &pcrs), &nonce, now).unwrap();
            assert!(ok.td.unwrap().cache_hit());
        });
    });
    g.bench_function("validate_only", |b| {
        b.iter(|| validator.validate(&document(black_box(&doc), &pcrs), &nonce, now).unwrap());
    });
    g.finish();
    c.final_summary();
}
