//! A protobuf `attest.v1.AttestationDocument`, read as the CLI and the C library read it
//! (`attest_proto::document::decode`: prost, and a document must name its variant) → the engine's borrowed
//! `Document` (the one bridge, `attest_proto::document`, that the shell and the C library use too) → every
//! variant's `Validator`; must never panic.
//!
//! Validators, all at 2025-06-01 with the default SNP policy and nonce [`NONCE`]:
//! - `qemu-vtpm` with an empty AK registry (what a fresh verifier has: every AK is refused after its
//!   TPM2B_PUBLIC is parsed and checked);
//! - `qemu-vtpm` with a registry that trusts **every** AK, so that documents get past the AK lookup into
//!   quote verification, the PCR policy and the event-log replay (the committed synthetic seeds in
//!   `fuzz/corpus/attestation_document/` validate completely with it);
//! - `aws-sev-snp`, `gcp-sev-snp` and `azure-sev-snp` with AMD's real roots;
//! - `qemu-tdx` and `azure-tdx` with Intel's real root, an MRTD allow-list and no collateral installed (so a
//!   document gets as far as the TD quote's parse and PCK chain and must then be refused), under the default
//!   TDX policy otherwise. A TDX document that validates here would be a finding.
#![no_main]

use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tdx::{TdxPolicy, TdxVerifier};
use attest_engine::variant::{AkBasis, AkRegistry, PcrExpectation, PcrPolicy, StaticAkRegistry, Validator, Variant};
use attest_proto::document::{decode, pcr_values, view};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::{Arc, LazyLock};

/// The verifier's nonce the synthetic seeds were issued for.
const NONCE: &[u8] = b"attest-fuzz-nonce";

/// Trusts every AK (fuzzing only: it lets inputs reach the quote and event-log checks).
#[derive(Debug)]
struct TrustAll;

impl AkRegistry for TrustAll {
    fn lookup(&self, _: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::Pinned)
    }
}

static VALIDATORS: LazyLock<Vec<Validator>> = LazyLock::new(|| {
    let snp = Arc::new(SnpVerifier::new());
    // PCR 0 expected (warn-only, mismatching) and PCR 8 enforced: both policy paths run. PCR 8 is what the
    // synthetic seeds quote there, SHA-256("pcr" ‖ 8) (shell/attester/examples/fuzz_documents.rs), so they validate.
    let mut pcr8 = [0u8; 32];
    pcr8.copy_from_slice(default_provider().digests.digest(HashAlgorithm::Sha256, &[b"pcr", &[8]]).as_bytes());
    let pcrs = PcrPolicy {
        entries: vec![
            PcrExpectation { index: 0, expected: [0; 32], warn_only: true },
            PcrExpectation { index: 8, expected: pcr8, warn_only: false },
        ],
    };
    let v = |variant| Validator::new(variant, snp.clone(), SnpPolicy::default(), pcrs.clone());
    let tdx = Arc::new(TdxVerifier::new());
    let mut tdx_policy = TdxPolicy::default();
    tdx_policy.mrtd.push(attest_engine::policy::Hex([0; 48]));
    let t = |variant, pcrs: PcrPolicy| {
        Validator::new(variant, snp.clone(), SnpPolicy::default(), pcrs).with_tdx(tdx.clone(), tdx_policy.clone())
    };
    vec![
        v(Variant::QemuVtpm).with_ak_registry(Arc::new(StaticAkRegistry::default())),
        v(Variant::QemuVtpm).with_ak_registry(Arc::new(TrustAll)),
        v(Variant::AwsSevSnp),
        v(Variant::GcpSevSnp),
        v(Variant::AzureSevSnp),
        t(Variant::QemuTdx, PcrPolicy::default()),
        t(Variant::AzureTdx, pcrs.clone()),
    ]
});
static TIME: LazyLock<UnixTime> = LazyLock::new(|| UnixTime::parse("2025-06-01T00:00:00Z").unwrap());

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = decode(data) else { return };
    let Ok(pcrs) = pcr_values(&doc) else { return };
    let view = view(&doc, &pcrs);
    for v in VALIDATORS.iter() {
        if let Ok(ok) = v.validate(&view, NONCE, *TIME) {
            assert!(ok.td.is_none(), "a TD quote validated without collateral");
            black_box((ok.variant, ok.ak_basis, &ok.pcrs, ok.event_log_replayed, ok.user_data));
            if let Some(q) = &ok.quote {
                black_box((q.attest().pcr_digest(), q.pcr(HashAlgorithm::Sha256, 0)));
            }
            black_box(ok.snp.map(|s| s.cache_hit()));
        }
    }
});
