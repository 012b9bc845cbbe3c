//! What `attest init` and `attest verify` trust before they verify a node, shared with the services
//! (`attest_trust`): the measurements file only with a valid signature (or the explicit waiver
//! `--dangerously-skip-measurements-signature`), an SNP-based or TDX variant only with a pinned launch
//! measurement (MEASUREMENT, or MRTD) (or `--dangerous-allow-unpinned-launch`), and AMD's CRLs loaded from the KDS store (then KDS) for the SNP
//! variants, fresh unless `--allow-stale-crl`. Every waiver is printed as a warning and named in the verdict
//! (`trust.waivers` in JSON output).

use std::path::Path;
use std::sync::Arc;

use super::UsageError;
use attest_engine::variant::Variant;
use attest_trust::{Expected, Trust, TrustArgs, ValidatorFactory};

/// Everything a verifying command prepared before it touches the network.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// What the measurements expect of the variant.
    pub(crate) expected: Expected,
    /// The factory of the variant's validator: its SNP verifier with the CRLs installed (SNP variants) and
    /// the SNP policy with the flags' waivers.
    pub(crate) factory: ValidatorFactory,
    /// What is trusted and waived, for the verdict.
    pub(crate) trust: Trust,
}

/// Loads the measurements at `path` under `args` (signature or waiver), checks `variant`'s launch pinning
/// under the SNP policy in `snp_policy` (or the defaults) and loads the CRLs it needs into `factory`'s SNP
/// verifier (AMD's, from the KDS store; none with `test_roots`, whose verifier holds the test PKI's). Any
/// refusal is a usage error: the command does not start.
pub(crate) fn prepare(
    args: &TrustArgs,
    variant: Variant,
    path: &Path,
    snp_policy: Option<&Path>,
    factory: ValidatorFactory,
    test_roots: bool,
    rt: &tokio::runtime::Runtime,
) -> Result<Prepared, UsageError> {
    let loaded = args
        .measurements_trust()
        .and_then(|t| t.load(path))
        .map_err(|e| UsageError::new(format!("--measurements: {e}")))?;
    if loaded.signature == attest_trust::SignatureState::DangerouslyUnsigned {
        eprintln!(
            "attest: WARNING: the measurements file is not signature-checked (--dangerously-skip-measurements-signature)"
        );
    }
    let policy = args.snp_policy(snp_policy).map_err(|e| UsageError::new(e.to_string()))?;
    let factory = ValidatorFactory { snp_policy: policy, ..factory };
    let expected = factory.expected_in(variant, &loaded.document).map_err(|e| match e {
        attest_trust::FactoryError::Measurements { source, .. } => {
            UsageError::new(format!("{}: {source}", path.display()))
        }
        other => UsageError::new(other.to_string()),
    })?;
    // A TDX variant's launch is pinned by its TDX policy's MRTD: the measurements file's (qemu-tdx, measured by
    // its TD registers) or the policy file's; the others' by their SNP policy, or not at all.
    let probe = if variant.info().launch == attest_engine::variant::LaunchPin::TdxMrtd {
        factory.validator(variant, expected.clone()).map_err(|e| UsageError::new(e.to_string()))?
    } else {
        factory.launch_probe(variant)
    };
    let launch = attest_trust::check_launch([&probe]).map_err(|e| UsageError::new(e.to_string()))?;
    if launch.iter().any(|(_, l)| *l == attest_engine::LaunchPinning::DangerouslyUnpinned) {
        eprintln!(
            "attest: WARNING: {variant}: the launch measurement is not pinned (--dangerous-allow-unpinned-launch)"
        );
    }
    // With test roots (simulated hardware) the CRLs are the test PKI's, installed from their directory; AMD's
    // KDS has none for it.
    let crl_variants: &[Variant] = if test_roots { &[] } else { &[variant] };
    let keeper = rt
        .block_on(args.revocation(Arc::clone(&factory.snp), crl_variants, &factory.snp_policy))
        .map_err(|e| UsageError::new(e.to_string()))?;
    let trust =
        Trust { measurements: loaded.signature, launch, revocation: (!keeper.wanted().is_empty()).then_some(keeper) };
    if trust.revocation_state().is_waived() {
        eprintln!("attest: WARNING: revocation {} (--allow-stale-crl)", trust.revocation_state().name());
    }
    Ok(Prepared { expected, factory, trust })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// A measurements map in a fresh directory (unsigned: these tests exercise the other checks).
    fn measurements(tag: &str) -> (attest_test_support::TempDir, std::path::PathBuf) {
        let dir = attest_test_support::TempDir::new(tag);
        let path = dir.path().join("m.json");
        std::fs::write(&path, format!(r#"{{"4":{{"expected":"{}","warnOnly":false}}}}"#, "11".repeat(32))).unwrap();
        (dir, path)
    }

    #[test]
    fn unsigned_measurements_refuse_to_start_unless_waived() {
        let (_d, path) = measurements("cli-trust-unsigned");
        let e = prepare(&TrustArgs::default(), Variant::QemuVtpm, &path, None, ValidatorFactory::new(), false, &rt())
            .unwrap_err();
        assert!(e.0.contains("must be signed"), "{e}");
        let waived = TrustArgs { dangerously_skip_measurements_signature: true, ..TrustArgs::default() };
        let p = prepare(&waived, Variant::QemuVtpm, &path, None, ValidatorFactory::new(), false, &rt()).unwrap();
        assert_eq!(p.trust.waivers(), ["measurements-unsigned"]);
        let Expected::Pcrs(pcrs) = p.expected else { panic!("qemu-vtpm is measured by PCRs") };
        assert_eq!(pcrs.entries.len(), 1);
    }

    #[test]
    fn snp_variants_refuse_to_start_without_a_pinned_launch() {
        let (_d, path) = measurements("cli-trust-launch");
        let base = TrustArgs {
            dangerously_skip_measurements_signature: true,
            kds_url: "offline".into(),
            ..TrustArgs::default()
        };
        for variant in [Variant::AzureSevSnp, Variant::AwsSevSnp, Variant::GcpSevSnp] {
            let e = prepare(&base, variant, &path, None, ValidatorFactory::new(), false, &rt()).unwrap_err();
            assert!(e.0.contains("pins no launch measurement"), "{variant}: {e}");
            // Waived, the launch check passes; CRLs then have to load (none offline without a store).
            let waived = TrustArgs { dangerous_allow_unpinned_launch: true, ..base.clone() };
            let e = prepare(&waived, variant, &path, None, ValidatorFactory::new(), false, &rt()).unwrap_err();
            assert!(e.0.contains("AMD CRLs"), "{variant}: {e}");
        }
    }
}
