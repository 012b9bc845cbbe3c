//! **Dangerous: test roots.** Trust anchors of *simulated* hardware — a generated AMD-like ARK with its
//! ASK/ASVK, a generated Google-like EK/AK CA, and a generated Intel-like SGX root with its TDX collateral — for the local demo and tests on machines without AMD
//! or Google hardware. Compiled only with the cargo feature `dangerous-test-roots`; a binary built without
//! it has no code that could trust anything but AMD's and Google's pinned roots, whatever its flags or
//! configuration say.
//!
//! A test-root directory (written by `attest-hwsim`, read here) holds:
//!
//! ```text
//! TEST-ROOTS-DO-NOT-TRUST      marker file; a directory without it is refused
//! snp/product                  "Milan", "Genoa" or "Turin"
//! snp/ark.der                  the test ARK
//! snp/ask.der, snp/asvk.der    the test ASK and/or ASVK (at least one)
//! snp/crl-vcek.der             optional: ARK-signed CRL for the VCEK chain, installed (CrlScope::Vcek)
//! snp/crl-vlek.der             optional: ARK-signed CRL for the VLEK chain, installed (CrlScope::Vlek)
//! gce/root.der                 optional: the Google-like EK/AK CA root
//! tdx/root.der                 optional: the Intel-like SGX root CA
//! tdx/collateral.json          with tdx/root.der: TCB Info, QE Identity and CRLs signed under it (bundle JSON)
//! ```
//!
//! Every verifier built from it says so: [`TestRoots::describe`] is logged at warning level by each
//! service at start, and services print it on every verdict they show.

use attest_engine::crypto::default_provider;
use attest_engine::gce::GceVerifier;
use attest_engine::snp::{CrlScope, OwnedTrustAnchors, Product, SnpVerifier};
use attest_engine::tdx::{Collateral, TdxVerifier};
use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

/// The marker file every test-root directory must contain.
pub const MARKER: &str = "TEST-ROOTS-DO-NOT-TRUST";
/// Largest file read from a test-root directory.
pub const MAX_TEST_ROOT_FILE: u64 = 64 * 1024;

/// Paths inside a test-root directory (the writer, `attest-hwsim`, uses the same names).
pub mod files {
    /// The product name.
    pub const SNP_PRODUCT: &str = "snp/product";
    /// The ARK.
    pub const SNP_ARK: &str = "snp/ark.der";
    /// The ASK.
    pub const SNP_ASK: &str = "snp/ask.der";
    /// The ASVK.
    pub const SNP_ASVK: &str = "snp/asvk.der";
    /// The VCEK-chain CRL.
    pub const SNP_CRL_VCEK: &str = "snp/crl-vcek.der";
    /// The VLEK-chain CRL.
    pub const SNP_CRL_VLEK: &str = "snp/crl-vlek.der";
    /// The GCE root.
    pub const GCE_ROOT: &str = "gce/root.der";
    /// The Intel-like root.
    pub const TDX_ROOT: &str = "tdx/root.der";
    /// The TDX collateral bundle (JSON) under the Intel-like root.
    pub const TDX_COLLATERAL: &str = "tdx/collateral.json";
}

/// A test-root directory could not be used.
#[derive(Debug)]
pub struct TestRootsError {
    /// The directory or file.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for TestRootsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "test roots {}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for TestRootsError {}

/// The verifiers of a test-root directory ([`TestRoots::verifiers`]).
#[derive(Debug)]
pub struct TestRootVerifiers {
    /// SEV-SNP: the test ARK's, or AMD's pinned roots.
    pub snp: SnpVerifier,
    /// GCE: the test Google-like root's, or Google's pinned roots.
    pub gce: GceVerifier,
    /// TDX: the test Intel-like root's with the test collateral; `None` without a TDX test root.
    pub tdx: Option<TdxVerifier>,
}

/// The loaded test roots.
#[derive(Clone, Debug)]
pub struct TestRoots {
    dir: PathBuf,
    snp: Option<OwnedTrustAnchors>,
    crls: Vec<(CrlScope, Vec<u8>)>,
    gce_root: Option<Vec<u8>>,
    tdx: Option<(Vec<u8>, Vec<u8>)>,
}

fn read_opt(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, TestRootsError> {
    use std::io::Read as _;
    let path = dir.join(name);
    let err = |reason: String| TestRootsError { path: path.clone(), reason };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e.to_string())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_TEST_ROOT_FILE + 1).read_to_end(&mut bytes).map_err(|e| err(e.to_string()))?;
    if bytes.len() as u64 > MAX_TEST_ROOT_FILE {
        return Err(err(format!("larger than {MAX_TEST_ROOT_FILE} bytes")));
    }
    Ok(Some(bytes))
}

impl TestRoots {
    /// Loads the test roots in `dir` (module docs). Fails without the marker file, without any root, or when
    /// the SNP part is incomplete. Logs a warning naming the directory.
    pub fn load(dir: &Path) -> Result<Self, TestRootsError> {
        let bad = |reason: &str| TestRootsError { path: dir.to_owned(), reason: reason.to_owned() };
        if !dir.join(MARKER).is_file() {
            return Err(bad("not a test-root directory (no TEST-ROOTS-DO-NOT-TRUST marker)"));
        }
        let ark = read_opt(dir, files::SNP_ARK)?;
        let snp = match ark {
            None => None,
            Some(ark) => {
                let product = read_opt(dir, files::SNP_PRODUCT)?.ok_or_else(|| bad("snp/product is missing"))?;
                let product = String::from_utf8_lossy(&product);
                let product = Product::from_name(product.trim()).ok_or_else(|| bad("snp/product names no product"))?;
                let ask = read_opt(dir, files::SNP_ASK)?;
                let asvk = read_opt(dir, files::SNP_ASVK)?;
                if ask.is_none() && asvk.is_none() {
                    return Err(bad("snp/ark.der without snp/ask.der or snp/asvk.der"));
                }
                Some(OwnedTrustAnchors {
                    product,
                    ark: Cow::Owned(ark),
                    ask: ask.map(Cow::Owned),
                    asvk: asvk.map(Cow::Owned),
                })
            }
        };
        let mut crls = Vec::new();
        for (scope, name) in [(CrlScope::Vcek, files::SNP_CRL_VCEK), (CrlScope::Vlek, files::SNP_CRL_VLEK)] {
            if let Some(der) = read_opt(dir, name)? {
                crls.push((scope, der));
            }
        }
        if snp.is_none() && !crls.is_empty() {
            return Err(bad("CRLs without snp/ark.der"));
        }
        let gce_root = read_opt(dir, files::GCE_ROOT)?;
        let tdx = match (read_opt(dir, files::TDX_ROOT)?, read_opt(dir, files::TDX_COLLATERAL)?) {
            (Some(root), Some(collateral)) => Some((root, collateral)),
            (None, None) => None,
            _ => return Err(bad("tdx/root.der and tdx/collateral.json come together")),
        };
        if snp.is_none() && gce_root.is_none() && tdx.is_none() {
            return Err(bad("neither snp/ark.der nor gce/root.der nor tdx/root.der"));
        }
        let roots = Self { dir: dir.to_owned(), snp, crls, gce_root, tdx };
        tracing::warn!(roots = %roots.describe(), "DANGEROUS: trusting TEST ROOTS of simulated hardware");
        Ok(roots)
    }

    /// One line for logs and verdicts: which test roots, from where.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = &self.snp {
            let mut chains = Vec::new();
            if a.ask.is_some() {
                chains.push("VCEK");
            }
            if a.asvk.is_some() {
                chains.push("VLEK");
            }
            parts.push(format!("a test AMD ARK ({} {})", a.product, chains.join("+")));
        }
        if !self.crls.is_empty() {
            parts.push(format!("{} test CRL(s)", self.crls.len()));
        }
        if self.gce_root.is_some() {
            parts.push("a test Google EK/AK CA".to_owned());
        }
        if self.tdx.is_some() {
            parts.push("a test Intel SGX root with TDX collateral".to_owned());
        }
        format!("SIMULATED hardware, test roots from {}: {}", self.dir.display(), parts.join(", "))
    }

    /// Whether an SNP test root is present.
    pub fn has_snp(&self) -> bool {
        self.snp.is_some()
    }

    /// An SNP verifier trusting only the test ARK, with the test CRLs installed. Fails when the directory has
    /// no SNP root or a CRL does not verify under it.
    pub fn snp_verifier(&self) -> Result<SnpVerifier, TestRootsError> {
        let bad = |reason: String| TestRootsError { path: self.dir.clone(), reason };
        let anchors = self.snp.clone().ok_or_else(|| bad("no SNP test root (snp/ark.der)".into()))?;
        let verifier = SnpVerifier::with_trust_anchors(default_provider(), vec![anchors]);
        if !self.crls.is_empty() {
            let crls: Vec<(CrlScope, &[u8])> = self.crls.iter().map(|(s, d)| (*s, d.as_slice())).collect();
            verifier.replace_crls(&crls).map_err(|e| bad(format!("installing the test CRLs: {e}")))?;
        }
        Ok(verifier)
    }

    /// A GCE verifier trusting only the test Google-like root; `None` without one.
    pub fn gce_verifier(&self) -> Option<GceVerifier> {
        self.gce_root.clone().map(|root| GceVerifier::with_trust_anchors(default_provider(), vec![root], Vec::new()))
    }

    /// The verifiers of these roots, as a verifier of simulated hardware builds them: the test ARK's (AMD's
    /// pinned roots where the directory has no SNP root), the test Google-like root's (Google's pinned roots
    /// without one) and the test Intel-like root's with its collateral installed (`None` without one).
    pub fn verifiers(&self) -> Result<TestRootVerifiers, TestRootsError> {
        let snp = if self.has_snp() { self.snp_verifier()? } else { SnpVerifier::new() };
        Ok(TestRootVerifiers { snp, gce: self.gce_verifier().unwrap_or_default(), tdx: self.tdx_verifier()? })
    }

    /// Whether an Intel-like TDX root is present.
    pub fn has_tdx(&self) -> bool {
        self.tdx.is_some()
    }

    /// A TDX verifier trusting only the test Intel-like root, with the test collateral installed; `None`
    /// without one. Fails when the collateral does not verify under the root.
    pub fn tdx_verifier(&self) -> Result<Option<TdxVerifier>, TestRootsError> {
        let Some((root, bundle)) = &self.tdx else { return Ok(None) };
        let bad = |reason: String| TestRootsError { path: self.dir.join(files::TDX_COLLATERAL), reason };
        let verifier = TdxVerifier::dangerous_with_root(default_provider(), root.clone());
        let collateral = Collateral::from_bundle_json(bundle).map_err(|e| bad(e.to_string()))?;
        verifier.set_collateral(&collateral).map_err(|e| bad(format!("installing the test collateral: {e}")))?;
        Ok(Some(verifier))
    }

    /// The directory the roots came from.
    pub fn directory(&self) -> &Path {
        &self.dir
    }
}
