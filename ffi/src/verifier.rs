//! `attest_verifier`: AMD trust roots, the SNP policy, the verified-chain cache and the verify calls.
//!
//! The verifier is an `Arc` behind the handle and is `Send + Sync`: share one across threads; every call
//! takes `const attest_verifier *`. Configuration calls (`set_policy_json`, `set_crl`, `pin_ak`) swap their
//! value atomically; a verification already running keeps the values it started with.
//!
//! # Certificates "from the cache"
//!
//! The engine caches verified VCEK/VLEK chains by the SHA-256 of the certificate, so a caller that passes
//! the same certificate again gets a warm verify (one P-384 check). In addition the verifier remembers, for
//! each accepted report, which certificate signed it, keyed by (CHIP_ID, REPORTED_TCB, SIGNING_KEY), in a
//! bounded FIFO ([`ATTEST_LEAF_STORE_CAPACITY`]); a later report from the same chip at the same TCB may then be
//! verified with no certificate at all (`leaf = NULL, leaf_len = 0`). A miss is
//! `ATTEST_RESULT_CERTIFICATE_NOT_CACHED`: fetch the VCEK (the shell's KDS client) and pass it.

use crate::boundary::{self, guard, guard_value, with_last_error, write_text};
use crate::document;
use crate::handle::{Castable, OutPtr, OwnershipArc, arc_into_ptr, free_arc, try_ref, try_slice};
use crate::result::attest_result;
use crate::verdict::{Verdict, attest_evidence_kind, attest_outcome, attest_verdict};
use attest_engine::azure::{AzureSnpRequest, verify_azure_snp};
use attest_engine::crypto::HashAlgorithm;
use attest_engine::ear::{Appraisal, CheckOutcome};
use attest_engine::formats::azure::{AzureHardware, AzureVtpmEvidence, UserData, verify_azure_snp_evidence};
use attest_engine::formats::snp::SnpEvidence;
use attest_engine::formats::tpm::{AkKey, AzureQuoteBin, HexQuote, TrusteeTpmEvidence};
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerdict, GceVerifier};
use attest_engine::snp::{Report, SnpPolicy, SnpRequest, SnpVerifier};
use attest_engine::tdx::{TdxPolicy, TdxVerifier};
use attest_engine::tpm::alg::hash_from_tpm;
use attest_engine::tpm::{AkPublic, PcrValues, QuoteRequest, QuoteSignature, SigScheme, TpmtPublic, verify_quote};
use attest_engine::variant::{AkBasis, PcrOutcome, StaticAkRegistry, Variant};
use attest_engine::x509::pem::{certificates_from_pem_or_der, parse_pem};
use attest_engine::{Error, LaunchPinning, UnixTime};
use attest_validators::{FactoryError, ValidatorFactory};
use serde_json::Map;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_char;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// Certificates remembered for verification without a certificate (see the module docs).
pub const ATTEST_LEAF_STORE_CAPACITY: usize = 256;

/// Use the current system time as the trusted time (`time` argument of the verify calls).
pub const ATTEST_TIME_NOW: u64 = 0;

/// `flags` of the quote and document verifications: accept an empty nonce (NULL, 0). Without it an empty
/// nonce is refused with `ATTEST_RESULT_NONCE_REQUIRED`: evidence verified for no nonce proves nothing about
/// freshness (a recorded quote replays forever). Set it only for evidence that was produced without a nonce
/// on purpose (e.g. recorded test vectors).
pub const ATTEST_VERIFY_ALLOW_EMPTY_NONCE: u32 = 1;

/// `flags` of `attest_verifier_verify_azure_evidence`: do not check the HCL runtime data's `user-data` of v2
/// evidence (without it, v2 evidence needs the expected 64 bytes).
pub const ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA: u32 = 2;

/// `format` of `attest_verifier_verify_tpm_evidence`: trustee's TPM evidence JSON (AK and quote together;
/// pass no AK).
pub const ATTEST_TPM_EVIDENCE_TRUSTEE_JSON: u32 = 0;
/// `format`: az-cvm-vtpm's bincode quote bundle (bare RSASSA-SHA256 signature, TPMS_ATTEST, SHA-256 PCRs).
pub const ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE: u32 = 1;
/// `format`: trustee's hex quote JSON `{signature, message, pcrs}` (bare RSASSA-SHA256 signature).
pub const ATTEST_TPM_EVIDENCE_HEX_JSON: u32 = 2;

/// `signature_format`: a marshalled TPMT_SIGNATURE, as TPM2_Quote returns it.
pub const ATTEST_QUOTE_SIGNATURE_TPMT: u32 = 0;
/// `signature_format`: bare RSASSA-PKCS1-v1_5 / SHA-256 signature bytes (Azure vTPM quote bundles).
pub const ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256: u32 = 1;
/// `signature_format`: bare RSASSA-PSS / SHA-256 signature bytes.
pub const ATTEST_QUOTE_SIGNATURE_RSAPSS_SHA256: u32 = 2;

/// A verifier (opaque): AMD roots, SNP policy, caches. Thread-safe; free with `attest_verifier_free`.
#[allow(non_camel_case_types)]
pub struct attest_verifier {
    _private: [u8; 0],
}

impl Castable for attest_verifier {
    type Ownership = OwnershipArc;
    type RustType = Verifier;
}

/// One presented PCR value. Plain data (no pointers), so Go can pass a slice of them to C directly.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attest_pcr_value {
    /// The bank's TPM_ALG_ID (0x000B SHA-256, 0x000C SHA-384, 0x000D SHA-512; SHA-1 0x0004 is refused).
    pub hash_alg: u16,
    /// The PCR index, 0..=23.
    pub index: u8,
    /// Number of valid bytes in `value` (the bank's digest size).
    pub value_len: u8,
    /// The value, left-aligned.
    pub value: [u8; 64],
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct LeafKey {
    chip_id: [u8; 64],
    reported_tcb: u64,
    vlek: bool,
}

impl LeafKey {
    fn of(report: &Report<'_>) -> Self {
        Self {
            chip_id: *report.chip_id(),
            reported_tcb: report.reported_tcb(),
            vlek: report.signing_key().role() == attest_engine::CertRole::Vlek,
        }
    }
}

#[derive(Default)]
struct LeafStore {
    map: HashMap<LeafKey, Arc<[u8]>>,
    order: VecDeque<LeafKey>,
}

impl LeafStore {
    fn get(&self, key: &LeafKey) -> Option<Arc<[u8]>> {
        self.map.get(key).cloned()
    }

    fn remember(&mut self, key: LeafKey, der: &[u8]) {
        if self.map.get(&key).is_some_and(|d| **d == *der) {
            return;
        }
        if self.map.insert(key, der.into()).is_none() {
            self.order.push_back(key);
            while self.order.len() > ATTEST_LEAF_STORE_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

/// The Rust value behind `attest_verifier`.
pub struct Verifier {
    snp: Arc<SnpVerifier>,
    policy: RwLock<Arc<SnpPolicy>>,
    gce: Arc<GceVerifier>,
    gce_policy: RwLock<Arc<GcePolicy>>,
    pinned_aks: RwLock<Arc<StaticAkRegistry>>,
    leaves: Mutex<LeafStore>,
    /// Intel's pinned root and the installed TDX collateral (`attest_verifier_set_tdx_collateral`).
    pub(crate) tdx: Arc<TdxVerifier>,
    pub(crate) tdx_policy: RwLock<Arc<TdxPolicy>>,
}

impl Verifier {
    fn new() -> Self {
        Self::with_tdx_verifier(TdxVerifier::new())
    }

    /// A verifier whose TD quotes are verified by `tdx` (Intel's root in production; a test root in the
    /// crate's unit tests).
    pub(crate) fn with_tdx_verifier(tdx: TdxVerifier) -> Self {
        Self {
            snp: Arc::new(SnpVerifier::new()),
            policy: RwLock::new(Arc::new(SnpPolicy::default())),
            gce: Arc::new(GceVerifier::new()),
            gce_policy: RwLock::new(Arc::new(GcePolicy::default())),
            pinned_aks: RwLock::new(Arc::new(StaticAkRegistry::default())),
            leaves: Mutex::new(LeafStore::default()),
            tdx: Arc::new(tdx),
            tdx_policy: RwLock::new(Arc::new(TdxPolicy::default())),
        }
    }

    fn policy(&self) -> Arc<SnpPolicy> {
        Arc::clone(&self.policy.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn tdx_policy(&self) -> Arc<TdxPolicy> {
        Arc::clone(&self.tdx_policy.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn gce_policy(&self) -> Arc<GcePolicy> {
        Arc::clone(&self.gce_policy.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The validator factory of documents: this verifier's SNP, TDX and GCE verifiers and current policies,
    /// and its pinned AKs as the registry.
    fn factory(&self) -> ValidatorFactory {
        ValidatorFactory {
            snp: Arc::clone(&self.snp),
            snp_policy: (*self.policy()).clone(),
            snp_policies: HashMap::new(),
            tdx: Arc::clone(&self.tdx),
            tdx_policy: (*self.tdx_policy()).clone(),
            gce: Arc::clone(&self.gce),
            gce_policy: (*self.gce_policy()).clone(),
            ak_registry: Some(Arc::clone(&self.pinned_aks.read().unwrap_or_else(PoisonError::into_inner)) as _),
        }
    }
}

// The handle is shared across threads by C and Go callers: the type behind it must be Send + Sync.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Verifier>();
    send_sync::<Verdict>();
};

/// A failed call: its code and the detailed message for `attest_verifier_last_error`.
pub(crate) struct Failure {
    pub(crate) code: attest_result,
    pub(crate) message: String,
    /// The engine's error, when the failure is one (for the refusal's result object).
    pub(crate) error: Option<Error>,
    /// The checks the verifier recorded before it stopped (the refusal's result object keeps them, as the
    /// CLI's does); empty when it records none.
    pub(crate) checks: Vec<(&'static str, CheckOutcome)>,
}

impl Failure {
    /// An engine error with the checks recorded before it.
    pub(crate) fn with_checks(error: Error, checks: Vec<(&'static str, CheckOutcome)>) -> Self {
        Self { checks, ..error.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self { code: (&e).into(), message: e.to_string(), error: Some(e), checks: Vec::new() }
    }
}

impl From<attest_result> for Failure {
    fn from(code: attest_result) -> Self {
        Self { code, message: code.text().to_owned(), error: None, checks: Vec::new() }
    }
}

impl From<attest_measurements::Error> for Failure {
    fn from(e: attest_measurements::Error) -> Self {
        Self {
            code: attest_result::MeasurementsFile,
            message: format!("measurements file: {e}"),
            error: None,
            checks: Vec::new(),
        }
    }
}

impl From<FactoryError> for Failure {
    fn from(e: FactoryError) -> Self {
        match e {
            FactoryError::Measurements { source, .. } => source.into(),
            other => misuse(&other.to_string()),
        }
    }
}

impl From<document::DocError> for Failure {
    fn from(e: document::DocError) -> Self {
        match e {
            document::DocError::Engine(e) => e.into(),
            document::DocError::Malformed(message) => Self {
                code: attest_result::DocumentMalformed,
                message,
                error: Some(Error::EvidenceFormat {
                    format: "attestation document",
                    reason: "a malformed message or field",
                }),
                checks: Vec::new(),
            },
        }
    }
}

pub(crate) fn misuse(what: &str) -> Failure {
    Failure { code: attest_result::InvalidParameter, message: what.to_owned(), error: None, checks: Vec::new() }
}

/// Runs a verifier call: panic boundary, NULL verifier check, per-thread detailed error.
pub(crate) fn call(v: *const attest_verifier, f: impl FnOnce(&Verifier) -> Result<(), Failure>) -> attest_result {
    guard(|| {
        let verifier = try_ref(v).ok_or(attest_result::NullParameter)?;
        let outcome = f(verifier).map_err(|e| (e.code, e.message));
        match boundary::record(v as usize, outcome) {
            attest_result::Ok => Ok(()),
            code => Err(code),
        }
    })
}

/// An input `(ptr, len)`; NULL with a nonzero length is `NULL_PARAMETER`.
pub(crate) fn input<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], Failure> {
    try_slice(ptr, len).ok_or_else(|| Failure::from(attest_result::NullParameter))
}

/// A required, non-empty input.
pub(crate) fn required<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        return Err(Failure {
            code: attest_result::NullParameter,
            message: format!("{what} is NULL"),
            error: None,
            checks: Vec::new(),
        });
    }
    input(ptr, len)
}

/// Checks `flags` (only `ATTEST_VERIFY_ALLOW_EMPTY_NONCE` is defined) and refuses an empty nonce without it.
fn check_nonce(nonce: &[u8], flags: u32) -> Result<(), Failure> {
    check_nonce_with(nonce, flags, 0)
}

/// [`check_nonce`] where the call also defines the flag bits `extra`.
fn check_nonce_with(nonce: &[u8], flags: u32, extra: u32) -> Result<(), Failure> {
    if flags & !(ATTEST_VERIFY_ALLOW_EMPTY_NONCE | extra) != 0 {
        return Err(misuse("unknown flags"));
    }
    if nonce.is_empty() && flags & ATTEST_VERIFY_ALLOW_EMPTY_NONCE == 0 {
        return Err(Failure {
            code: attest_result::NonceRequired,
            message: "the nonce is empty; pass ATTEST_VERIFY_ALLOW_EMPTY_NONCE to verify evidence without freshness"
                .to_owned(),
            error: None,
            checks: Vec::new(),
        });
    }
    Ok(())
}

pub(crate) fn out_param<'a, T>(ptr: *mut T) -> Result<OutPtr<'a, T>, Failure> {
    OutPtr::new(ptr).ok_or_else(|| Failure::from(attest_result::NullParameter))
}

pub(crate) fn trusted_time(time: u64) -> Result<UnixTime, Failure> {
    if time != ATTEST_TIME_NOW {
        return Ok(UnixTime::from_secs(time));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| misuse("system clock before 1970"))?;
    Ok(UnixTime::from_secs(now.as_secs()))
}

/// A leaf certificate (borrowed DER or decoded PEM) and the certificates that followed it in a PEM.
type LeafAndChain<'a> = (Cow<'a, [u8]>, Vec<Vec<u8>>);

/// A certificate input: DER (borrowed) or PEM (the first CERTIFICATE block, with the following blocks as
/// the chain).
fn leaf_and_chain(leaf: &[u8]) -> Result<LeafAndChain<'_>, Failure> {
    if leaf.first() == Some(&0x30) {
        return Ok((Cow::Borrowed(leaf), Vec::new()));
    }
    let mut certs = certificates_from_pem_or_der(leaf)?.into_iter();
    let first = certs.next().ok_or(Error::Pem { reason: "no CERTIFICATE block" })?;
    Ok((Cow::Owned(first), certs.collect()))
}

fn chain_certs(leaf_extras: Vec<Vec<u8>>, chain: &[u8]) -> Result<Vec<Vec<u8>>, Failure> {
    let certs = if chain.is_empty() { leaf_extras } else { certificates_from_pem_or_der(chain)? };
    if certs.len() > 2 {
        return Err(misuse("the chain holds more than an intermediate (ASK/ASVK) and a root (ARK)"));
    }
    Ok(certs)
}

fn signature(bytes: &[u8], format: u32) -> Result<QuoteSignature<'_>, Failure> {
    let sha256 = HashAlgorithm::Sha256;
    Ok(match format {
        ATTEST_QUOTE_SIGNATURE_TPMT => QuoteSignature::Tpmt(bytes),
        ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256 => {
            QuoteSignature::RsaRaw { scheme: SigScheme::RsaSsa(sha256), sig: bytes }
        }
        ATTEST_QUOTE_SIGNATURE_RSAPSS_SHA256 => {
            QuoteSignature::RsaRaw { scheme: SigScheme::RsaPss(sha256), sig: bytes }
        }
        _ => return Err(misuse("unknown signature_format")),
    })
}

/// The presented PCR values, borrowed from the caller's array for the duration of the call.
fn pcr_values(pcrs: &[attest_pcr_value]) -> Result<PcrValues<'_>, Failure> {
    let mut out = PcrValues::new();
    for p in pcrs {
        let alg = hash_from_tpm(p.hash_alg, "PCR bank")?;
        let value =
            p.value.get(..usize::from(p.value_len)).ok_or_else(|| misuse("attest_pcr_value.value_len above 64"))?;
        let index = usize::from(p.index);
        if out.get(alg, index).is_some() {
            return Err(misuse("the same PCR is presented twice"));
        }
        out.set(alg, index, value)?;
    }
    Ok(out)
}

/// The verdict of a verified Azure SNP vTPM bundle: the SNP checks, the AK binding, the quote.
fn azure_verdict(ok: &attest_engine::azure::VerifiedAzureSnp<'_>) -> Verdict {
    Verdict::new(attest_evidence_kind::AzureSnp)
        .with_snp(&ok.snp)
        .check("ak_binding", attest_outcome::Passed)
        .with_quote(&ok.quote)
}

pub(crate) fn write_verdict(out: OutPtr<'_, *mut attest_verdict>, verdict: Verdict) {
    out.write(crate::handle::box_into_ptr::<attest_verdict>(verdict));
}

/// What a verify function verifies, for its result objects (schema `attest-result/1`, the same the CLI's
/// `--json` prints: `attest_engine::ear::Appraisal::result_json`).
pub(crate) struct Subject {
    /// The result's `verifier` (`snp`, `tdx`, `tpm`, `azure`, `gce`, `document`).
    pub(crate) verifier: &'static str,
    /// The result's `evidence`.
    pub(crate) what: &'static str,
    /// The check that malformed input fails.
    pub(crate) structure: &'static str,
}

pub(crate) const SNP: Subject = Subject { verifier: "snp", what: "SEV-SNP report", structure: "report_structure" };
pub(crate) const TPM: Subject = Subject { verifier: "tpm", what: "TPM quote", structure: "quote_structure" };
pub(crate) const AZURE: Subject =
    Subject { verifier: "azure", what: "Azure SNP vTPM evidence", structure: "evidence_structure" };
pub(crate) const DOCUMENT: Subject =
    Subject { verifier: "document", what: "attestation document", structure: "document_structure" };
pub(crate) const GCE: Subject =
    Subject { verifier: "gce", what: "GCE vTPM attestation (go-tpm-tools)", structure: "attestation_structure" };
pub(crate) const TDX: Subject = Subject { verifier: "tdx", what: "TDX quote", structure: "quote_structure" };

/// [`call`] for a verification: records its result object for `attest_verifier_last_result_json` — the
/// refusal's here, an acceptance's in [`finish`] — and clears a stale one when the call failed before
/// the engine judged anything (a NULL or an invalid parameter).
pub(crate) fn verify_call(
    v: *const attest_verifier,
    subject: &'static Subject,
    time: u64,
    f: impl FnOnce(&Verifier) -> Result<(), Failure>,
) -> attest_result {
    call(v, |verifier| {
        let key = std::ptr::from_ref(verifier) as usize;
        boundary::record_result(key, None);
        let r = f(verifier);
        if let Err(Failure { error: Some(e), checks, .. }) = &r {
            let time = trusted_time(time).unwrap_or(UnixTime::from_secs(time));
            let a = Appraisal::failed(subject.verifier, e, subject.structure, checks.clone());
            boundary::record_result(
                key,
                Some(a.result_json(subject.verifier, subject.what, &Map::new(), time).to_string()),
            );
        }
        r
    })
}

/// Writes an accepted verdict with its result object (also recorded for `attest_verifier_last_result_json`).
pub(crate) fn finish(
    v: &Verifier,
    out: OutPtr<'_, *mut attest_verdict>,
    verdict: Verdict,
    appraisal: &Appraisal,
    subject: &Subject,
    time: UnixTime,
) {
    let json = appraisal.result_json(subject.verifier, subject.what, &Map::new(), time).to_string();
    boundary::record_result(std::ptr::from_ref(v) as usize, Some(json.clone()));
    write_verdict(out, verdict.with_result(json));
}

// ---- Lifecycle and configuration ----------------------------------------------------------------------

/// Creates a verifier with AMD's Milan, Genoa and Turin roots, the default (strict) SNP policy, and empty
/// caches. On success `*out` holds the handle; free it with `attest_verifier_free`.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_new(out: *mut *mut attest_verifier) -> attest_result {
    guard(|| {
        let out = OutPtr::new(out).ok_or(attest_result::NullParameter)?;
        out.write(arc_into_ptr::<attest_verifier>(Arc::new(Verifier::new())).cast_mut());
        Ok(())
    })
}

/// Frees a verifier. NULL is ignored. No call may use the verifier concurrently or afterwards; verdicts
/// it produced stay valid.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_free(verifier: *const attest_verifier) {
    guard_value((), || free_arc(verifier));
}

/// Replaces the SNP policy with one parsed from JSON (`(json, json_len)`, UTF-8; the engine's
/// `SnpPolicy` fields, unknown keys rejected, missing keys take the strict defaults; `{}` is the default
/// policy). On error the previous policy stays. Applies to SNP, Azure and document verifications.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_set_policy_json(
    verifier: *const attest_verifier,
    json: *const u8,
    json_len: usize,
) -> attest_result {
    call(verifier, |v| {
        let json = required(json, json_len, "json")?;
        let text = std::str::from_utf8(json).map_err(|_| misuse("policy JSON is not UTF-8"))?;
        let policy = SnpPolicy::from_json(text)?;
        *v.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
        Ok(())
    })
}

/// Installs an ARK-signed CRL (DER or PEM `X509 CRL`) for the product whose ARK signed it, replacing that
/// product's previous CRL, and clears the verified-chain cache.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_set_crl(
    verifier: *const attest_verifier,
    crl: *const u8,
    crl_len: usize,
) -> attest_result {
    call(verifier, |v| {
        let crl = required(crl, crl_len, "crl")?;
        let der = if crl.first() == Some(&0x30) {
            Cow::Borrowed(crl)
        } else {
            let block = parse_pem(crl)?.into_iter().find(|b| b.label == "X509 CRL");
            Cow::Owned(block.ok_or(Error::Pem { reason: "no X509 CRL block" })?.der)
        };
        v.snp.set_crl(&der)?;
        Ok(())
    })
}

/// Trusts an attestation key for `qemu-vtpm` documents (which have no hardware report to bind the AK):
/// `(tpm2b_public, len)` is the AK's TPM2B_PUBLIC, as in the document. Recorded with the basis "pinned".
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_pin_ak(
    verifier: *const attest_verifier,
    tpm2b_public: *const u8,
    tpm2b_public_len: usize,
) -> attest_result {
    call(verifier, |v| {
        let bytes = required(tpm2b_public, tpm2b_public_len, "tpm2b_public")?;
        let tpmt = TpmtPublic::parse_tpm2b(bytes)?;
        tpmt.check_attestation_key()?;
        let digest = v.snp.provider().digests.sha256(tpmt.as_bytes());
        let mut pins = v.pinned_aks.write().unwrap_or_else(PoisonError::into_inner);
        if !pins.0.iter().any(|(d, _)| *d == digest) {
            let mut next = (**pins).clone();
            next.0.push((digest, AkBasis::Pinned));
            *pins = Arc::new(next);
        }
        Ok(())
    })
}

/// This thread's detailed message for the most recent failed call on `verifier` (e.g. "VCEK expired: valid
/// until …"), into `(buf, len)` as UTF-8 without a NUL terminator, its length in `*out_n`. Empty when
/// this thread's most recent call on the verifier succeeded. Per thread: threads sharing a verifier see
/// only their own failures. `ATTEST_RESULT_INSUFFICIENT_SIZE` (with the size needed in `*out_n`) when
/// the buffer is too small.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_last_error(
    verifier: *const attest_verifier,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> attest_result {
    guard(|| {
        try_ref(verifier).ok_or(attest_result::NullParameter)?;
        with_last_error(verifier as usize, |msg| write_text(msg, buf, len, out_n))
    })
}

/// This thread's result object of its most recent verification on `verifier`, accepted or refused: one
/// JSON object of schema `attest-result/1` (`schemas/result-v1.schema.json`; the same the CLI's `--json`
/// prints), into `(buf, len)` as UTF-8 without a NUL terminator, its length in `*out_n`. A refusal's object
/// names the failed check, whether the input was malformed or refused, and the policy key that governs
/// the check. Empty when the thread's most recent call on the verifier judged no evidence (a NULL or
/// invalid parameter). `ATTEST_RESULT_INSUFFICIENT_SIZE` (with the size needed in `*out_n`) when the
/// buffer is too small.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_last_result_json(
    verifier: *const attest_verifier,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> attest_result {
    guard(|| {
        try_ref(verifier).ok_or(attest_result::NullParameter)?;
        boundary::with_last_result(verifier as usize, |json| write_text(json, buf, len, out_n))
    })
}

/// The static description of result code `code` (any `uint32_t`; unknown codes get "unknown result
/// code"), into `(buf, len)` without a NUL terminator, its length in `*out_n`.
/// `ATTEST_RESULT_INSUFFICIENT_SIZE` (with the size needed in `*out_n`) when the buffer is too small.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_text(code: u32, buf: *mut c_char, len: usize, out_n: *mut usize) -> attest_result {
    guard(|| {
        let text = attest_result::from_u32(code).map_or("unknown result code", attest_result::text);
        write_text(text, buf, len, out_n)
    })
}

/// The library version, a static NUL-terminated string.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_version() -> *const c_char {
    concat!("attest-ffi ", env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ---- Verification -------------------------------------------------------------------------------------

/// Verifies an SEV-SNP report against the AMD roots and the verifier's policy.
///
/// - `report`: the SEV-SNP report as the CLI reads it (`attest_engine::formats::snp::SnpEvidence`): the
///   0x4A0-byte ATTESTATION_REPORT, the report followed by its 20-byte IGVM request-data header, or an Azure
///   HCL report (then REPORT_DATA must bind the HCL runtime data). Other lengths are refused
///   (`ATTEST_RESULT_TRUNCATED`, `ATTEST_RESULT_TRAILING_DATA`, …).
/// - `leaf`: the VCEK or VLEK, DER or PEM (a PEM may carry the ASK/ASVK and ARK after the leaf); NULL with
///   `leaf_len = 0` verifies with the certificate remembered for this chip and TCB (see the module docs).
/// - `chain`: optional (NULL, 0) ASK/ASVK [+ ARK], DER or PEM; the pinned ones are used when absent.
/// - `report_data`: optional (NULL, 0) expected REPORT_DATA, exactly 64 bytes (e.g. a nonce hash).
/// - `time`: the trusted time, seconds since 1970 (UTC); `ATTEST_TIME_NOW` (0) uses the system clock.
///
/// On success `*out` holds a new verdict (free with `attest_verdict_free`); on failure nothing is written
/// and the code says why (`attest_verifier_last_error` has the details).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_snp(
    verifier: *const attest_verifier,
    report: *const u8,
    report_len: usize,
    leaf: *const u8,
    leaf_len: usize,
    chain: *const u8,
    chain_len: usize,
    report_data: *const u8,
    report_data_len: usize,
    time: u64,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &SNP, time, |v| {
        let raw = required(report, report_len, "report")?;
        let leaf = input(leaf, leaf_len)?;
        let chain = input(chain, chain_len)?;
        let report_data = input(report_data, report_data_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;

        let cached = if leaf.is_empty() {
            let key = LeafKey::of(&Report::parse(SnpEvidence::parse(raw)?.report())?);
            let hit = v.leaves.lock().unwrap_or_else(PoisonError::into_inner).get(&key);
            Some(hit.ok_or(attest_result::CertificateNotCached)?)
        } else {
            None
        };
        let (leaf, extras) = match &cached {
            Some(der) => (Cow::Borrowed(&**der), Vec::new()),
            None => leaf_and_chain(leaf)?,
        };
        let chain = chain_certs(extras, chain)?;
        // The engine's one SNP entry point, as the CLI's: raw, + IGVM request-data header, or an HCL report.
        let evidence = SnpEvidence::parse(raw)?;
        let req = SnpRequest {
            report: evidence.report(),
            leaf: &leaf,
            intermediate: chain.first().map(Vec::as_slice),
            root: chain.get(1).map(Vec::as_slice),
            product: None,
            report_data: (!report_data.is_empty()).then_some(report_data),
            time,
        };
        let mut verdict = attest_engine::snp::Verdict::default();
        let ok = evidence.verify(&v.snp, &req, &v.policy(), &mut verdict).map_err(|e| {
            Failure::with_checks(e, verdict.iter().map(|(c, o)| (c.name(), CheckOutcome::from(o))).collect())
        })?;
        if cached.is_none() {
            v.leaves.lock().unwrap_or_else(PoisonError::into_inner).remember(LeafKey::of(ok.report()), &leaf);
        }
        let mut appraisal = Appraisal::from_snp(&ok);
        if evidence.hcl().is_some() {
            appraisal.checks.push(("hcl_runtime_data_binding", CheckOutcome::Passed));
        }
        finish(v, out, Verdict::new(attest_evidence_kind::Snp).with_snp(&ok), &appraisal, &SNP, time);
        Ok(())
    })
}

/// Verifies a TPM 2.0 quote.
///
/// - `ak`: the attestation key the caller trusts: SubjectPublicKeyInfo DER, PEM `PUBLIC KEY`, or the AK's
///   TPM2B_PUBLIC (which must be a restricted signing key; its scheme must match the signature's).
/// - `attest`: TPMS_ATTEST as returned by TPM2_Quote; `signature` in `signature_format`
///   (`ATTEST_QUOTE_SIGNATURE_*`).
/// - `pcrs`: the presented PCR values (`pcrs_len` entries); every PCR the quote selects must be present.
/// - `nonce`: the expected extraData, exactly. Empty (NULL, 0) only with `ATTEST_VERIFY_ALLOW_EMPTY_NONCE` in
///   `flags`; otherwise `ATTEST_RESULT_NONCE_REQUIRED`.
/// - `flags`: 0 or `ATTEST_VERIFY_ALLOW_EMPTY_NONCE`; other bits are `ATTEST_RESULT_INVALID_PARAMETER`.
///
/// SHA-1 banks are refused. On success `*out` holds a new verdict with the quoted SHA-256 PCRs.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_tpm_quote(
    verifier: *const attest_verifier,
    ak: *const u8,
    ak_len: usize,
    attest: *const u8,
    attest_len: usize,
    signature_bytes: *const u8,
    signature_len: usize,
    signature_format: u32,
    pcrs: *const attest_pcr_value,
    pcrs_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &TPM, ATTEST_TIME_NOW, |v| {
        let ak = required(ak, ak_len, "ak")?;
        let attest = required(attest, attest_len, "attest")?;
        let sig = required(signature_bytes, signature_len, "signature")?;
        let pcrs = input(pcrs, pcrs_len)?;
        let nonce = input(nonce, nonce_len)?;
        let out = out_param(out)?;
        check_nonce(nonce, flags)?;

        let pem_der;
        let tpmt;
        let (key, scheme) = if ak.starts_with(b"-----BEGIN") {
            let block = parse_pem(ak)?.into_iter().find(|b| b.label == "PUBLIC KEY");
            pem_der = block.ok_or(Error::Pem { reason: "no PUBLIC KEY block" })?.der;
            (AkPublic::from_spki_der(&pem_der)?, None)
        } else if ak.first() == Some(&0x30) {
            (AkPublic::from_spki_der(ak)?, None)
        } else {
            tpmt = TpmtPublic::parse_tpm2b(ak)?;
            tpmt.check_attestation_key()?;
            (tpmt.key(), tpmt.scheme())
        };
        let pcrs = pcr_values(pcrs)?;
        let req = QuoteRequest {
            attest,
            signature: signature(sig, signature_format)?,
            ak: key,
            ak_scheme: scheme,
            pcrs: &pcrs,
            nonce,
            allow_sha1: false,
        };
        let ok = verify_quote(v.snp.provider(), &req)?;
        let appraisal = Appraisal::from_quote(&ok, true, !nonce.is_empty());
        let now = trusted_time(ATTEST_TIME_NOW)?;
        finish(v, out, Verdict::new(attest_evidence_kind::TpmQuote).with_quote(&ok), &appraisal, &TPM, now);
        Ok(())
    })
}

/// Verifies an Azure SEV-SNP vTPM bundle: the HCL report's SNP report (against `vcek`, DER or PEM with
/// optional chain, and the verifier's policy), its binding of the runtime data, the HCLAkPub attestation
/// key in it, and the vTPM quote by that key over `pcrs` with extraData = `nonce` (empty only with
/// `ATTEST_VERIFY_ALLOW_EMPTY_NONCE` in `flags`). `signature_format` is usually
/// `ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256` (Azure's bundles carry bare signatures). On success `*out` holds a
/// verdict with the SNP and quote parts.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_azure_snp(
    verifier: *const attest_verifier,
    hcl_report: *const u8,
    hcl_report_len: usize,
    vcek: *const u8,
    vcek_len: usize,
    attest: *const u8,
    attest_len: usize,
    signature_bytes: *const u8,
    signature_len: usize,
    signature_format: u32,
    pcrs: *const attest_pcr_value,
    pcrs_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    time: u64,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &AZURE, time, |v| {
        let hcl = required(hcl_report, hcl_report_len, "hcl_report")?;
        let vcek = required(vcek, vcek_len, "vcek")?;
        let attest = required(attest, attest_len, "attest")?;
        let sig = required(signature_bytes, signature_len, "signature")?;
        let pcrs = input(pcrs, pcrs_len)?;
        let nonce = input(nonce, nonce_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;
        check_nonce(nonce, flags)?;

        let (vcek, extras) = leaf_and_chain(vcek)?;
        let pcrs = pcr_values(pcrs)?;
        let req = AzureSnpRequest {
            hcl_report: hcl,
            vcek: &vcek,
            intermediate: extras.first().map(Vec::as_slice),
            attest,
            signature: signature(sig, signature_format)?,
            pcrs: &pcrs,
            quote_nonce: nonce,
            time,
        };
        let ok = verify_azure_snp(&v.snp, &req, &v.policy())?;
        finish(v, out, azure_verdict(&ok), &Appraisal::from_azure_snp(&ok, !nonce.is_empty()), &AZURE, time);
        Ok(())
    })
}

/// Validates an attestation document (the protobuf `attest.v1.AttestationDocument`, as sent in aTLS
/// certificates) for the attestation variant named `(variant, variant_len)` (e.g. "qemu-vtpm";
/// `attest_variant_name` gives the name of an `ATTEST_VARIANT_*` code) against the expected values of a
/// measurements file (`(measurements, measurements_len)`, JSON or YAML, Constellation format; required and
/// never empty) and the verifier's policies, for the verifier's `nonce` at the trusted `time`. An empty nonce
/// needs `ATTEST_VERIFY_ALLOW_EMPTY_NONCE` in `flags`.
///
/// `qemu-vtpm` documents need their AK pinned first (`attest_verifier_pin_ak`). The SNP variants need a
/// policy that pins the launch (`measurements` or `id_key_digests`) or sets `dangerous_allow_unpinned_launch`
/// (else `ATTEST_RESULT_LAUNCH_UNPINNED`). The TDX variants need the platform's collateral installed
/// (`attest_verifier_set_tdx_collateral`) and verify the TD quote under the verifier's TDX policy; for
/// `qemu-tdx` (no vTPM) the measurements file holds the TD's measurements in Constellation's layout —
/// 0 = MRTD, 1–4 = RTMR0–3, 48-byte values, enforced — which replace those of the TDX policy (MRTD is then
/// pinned); `azure-tdx` documents are measured by their vTPM PCRs like the other variants and need an MRTD
/// in the TDX policy (or its waiver). The measurements file is parsed on every call (≈ µs for a release
/// file). On success `*out` holds a verdict with the SNP part (SNP variants), the TD quote part (TDX
/// variants: every TDX check, `attest_verdict_tdx_*`), the quote (vTPM variants), `ak_trust`, `event_log`,
/// `ccel_replay` (TDX variants), `launch_measurement` (passed when pinned, waived under the waiver), and one
/// `pcr_<n>` check per expected PCR (outcome `ATTEST_OUTCOME_WARNED` for warn-only mismatches).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_document(
    verifier: *const attest_verifier,
    variant: *const u8,
    variant_len: usize,
    document_bytes: *const u8,
    document_len: usize,
    measurements: *const u8,
    measurements_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    time: u64,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &DOCUMENT, time, |v| {
        let variant = required(variant, variant_len, "variant")?;
        let doc_bytes = required(document_bytes, document_len, "document")?;
        let measurements = required(measurements, measurements_len, "measurements")?;
        let nonce = input(nonce, nonce_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;
        check_nonce(nonce, flags)?;

        let variant = std::str::from_utf8(variant).ok().and_then(Variant::from_name).ok_or_else(|| Failure {
            code: attest_result::UnsupportedVariant,
            message: format!("unsupported attestation variant {:?}", String::from_utf8_lossy(variant)),
            error: None,
            checks: Vec::new(),
        })?;
        let measurements = attest_measurements::parse_any(measurements)?;
        let factory = v.factory();
        let expected = factory.expected(variant, &measurements)?;
        let doc = document::decode(doc_bytes)?;
        let pcrs = document::pcr_values(&doc)?;
        let view = document::view(&doc, &pcrs);
        let ok = factory.validator(variant, expected)?.validate(&view, nonce, time)?;

        let mut verdict = Verdict::new(attest_evidence_kind::Document);
        if let Some(snp) = &ok.snp {
            verdict = verdict.with_snp(snp);
        }
        if let Some(td) = &ok.td {
            let ccel = if ok.ccel.is_some() { attest_outcome::Passed } else { attest_outcome::Waived };
            verdict = verdict.with_tdx(td).check("ccel_replay", ccel);
        }
        if let Some(quote) = &ok.quote {
            verdict = verdict.check("ak_trust", attest_outcome::Passed).with_quote(quote);
            let log = if ok.event_log_replayed { attest_outcome::Passed } else { attest_outcome::Waived };
            verdict = verdict.check("event_log", log);
        }
        match ok.launch {
            LaunchPinning::Measurement | LaunchPinning::IdKey => {
                verdict = verdict.check("launch_measurement", attest_outcome::Passed);
            }
            LaunchPinning::DangerouslyUnpinned => verdict = verdict.check("launch_measurement", attest_outcome::Waived),
            LaunchPinning::NotApplicable => {}
        }
        for (index, outcome) in &ok.pcrs {
            let o = match outcome {
                PcrOutcome::Match => attest_outcome::Passed,
                PcrOutcome::MismatchWarnOnly => attest_outcome::Warned,
            };
            verdict = verdict.check(format!("pcr_{index}"), o);
        }
        let verdict =
            verdict.with_variant(ok.variant.name(), ok.ak_basis.map(AkBasis::name)).with_instance(ok.instance.as_ref());
        finish(v, out, verdict, &Appraisal::from_validated(&ok), &DOCUMENT, time);
        Ok(())
    })
}

/// Replaces the GCE policy (used by `attest_verifier_verify_gce` and `gcp-shielded-vm` documents) with one
/// parsed from JSON: the engine's `GcePolicy` fields (`allow_sha1`, `require_event_log`,
/// `require_production`, `allowed_projects`, `allowed_technologies`), unknown keys rejected, missing keys at
/// their secure defaults (`{}`: production VM and an event log required). On error the previous policy stays.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_set_gce_policy_json(
    verifier: *const attest_verifier,
    json: *const u8,
    json_len: usize,
) -> attest_result {
    call(verifier, |v| {
        let json = required(json, json_len, "json")?;
        let policy: GcePolicy = serde_json::from_slice(json).map_err(|e| Failure {
            code: attest_result::PolicyFile,
            message: format!("GCE policy JSON: {e}"),
            error: None,
            checks: Vec::new(),
        })?;
        *v.gce_policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
        Ok(())
    })
}

/// Verifies a GCE Shielded VM / Confidential VM attestation as go-tpm-tools produces it (the encoded
/// `Attestation` protobuf): the AK certificate against Google's pinned EK/AK CA roots, its key = the AK,
/// every quote (signature, extraData = `nonce`, PCR digest), the event log replayed, and the verifier's GCE
/// policy. An empty nonce (evidence made without one) needs `ATTEST_VERIFY_ALLOW_EMPTY_NONCE` and is
/// recorded as a waived `nonce` check. On success `*out` holds a verdict (kind `ATTEST_EVIDENCE_KIND_GCE`) with
/// the GCE checks, the SHA-256 PCRs and the instance (`attest_verdict_gce_instance`).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_gce(
    verifier: *const attest_verifier,
    attestation: *const u8,
    attestation_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    time: u64,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &GCE, time, |v| {
        let bytes = required(attestation, attestation_len, "attestation")?;
        let nonce = input(nonce, nonce_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;
        check_nonce(nonce, flags)?;
        let att = attest_proto::gce::decode(bytes)?;
        let ev = attest_proto::gce::evidence(&att)?;
        let expected = if nonce.is_empty() { ExpectedNonce::DangerousNone } else { ExpectedNonce::Exactly(nonce) };
        let mut verdict = GceVerdict::default();
        let ok =
            v.gce.verify_recording(&ev, &GceRequest { nonce: expected, time }, &v.gce_policy(), &mut verdict).map_err(
                |e| Failure::with_checks(e, verdict.iter().map(|(c, o)| (c.name(), CheckOutcome::from(o))).collect()),
            )?;
        finish(v, out, Verdict::new(attest_evidence_kind::Gce).with_gce(&ok), &Appraisal::from_gce(&ok), &GCE, time);
        Ok(())
    })
}

/// Verifies Azure SEV-SNP vTPM evidence in trustee's JSON layouts (`az-snp-vtpm` v0, v1, v2): as
/// `attest_verifier_verify_azure_snp` on the parts it carries, plus, for v2, the HCL runtime data's
/// `user-data`: `(user_data, 64)` is what it must hold; v2 evidence without it needs
/// `ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA` in `flags` (else `ATTEST_RESULT_INVALID_PARAMETER`, before
/// anything is verified). `nonce` is the vTPM quote's extraData (empty only with
/// `ATTEST_VERIFY_ALLOW_EMPTY_NONCE`). Azure TDX evidence is `ATTEST_RESULT_INVALID_PARAMETER` (its TD quote
/// needs Intel's collateral). On success `*out` holds a verdict of kind `ATTEST_EVIDENCE_KIND_AZURE_SNP`.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_azure_evidence(
    verifier: *const attest_verifier,
    json: *const u8,
    json_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    user_data: *const u8,
    user_data_len: usize,
    time: u64,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &AZURE, time, |v| {
        let json = required(json, json_len, "json")?;
        let nonce = input(nonce, nonce_len)?;
        let user_data = input(user_data, user_data_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;
        check_nonce_with(nonce, flags, ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA)?;
        let ev = AzureVtpmEvidence::from_json(json)?;
        if ev.hardware != AzureHardware::Snp {
            return Err(misuse("Azure TDX evidence: its TD quote needs Intel's collateral"));
        }
        let expected: Option<&[u8; 64]> = match user_data {
            [] => None,
            u => Some(u.try_into().map_err(|_| misuse("user_data must be 64 bytes"))?),
        };
        let want = match expected {
            Some(u) => UserData::Exactly(u),
            None if flags & ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA != 0 => UserData::DangerousIgnore,
            // Asked before anything is verified, as the CLI does (`--user-data`): a usage error, not a refusal.
            None if ev.version >= 2 => {
                return Err(misuse(&format!(
                    "v{} evidence binds its REPORT_DATA in the HCL runtime data's user-data: pass the 64 expected \
                     bytes as user_data, or ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA in flags to skip that check",
                    ev.version
                )));
            }
            None => UserData::NotRequired,
        };
        let pcrs = ev.quote.pcr_values()?;
        let ok = verify_azure_snp_evidence(&v.snp, &ev, &pcrs, nonce, want, time, &v.policy())?;
        let (verdict, user_data) = match want {
            UserData::Exactly(_) => {
                (azure_verdict(&ok).check("user_data", attest_outcome::Passed), CheckOutcome::Passed)
            }
            UserData::NotRequired | UserData::DangerousIgnore => {
                (azure_verdict(&ok).check("user_data", attest_outcome::Waived), CheckOutcome::Waived)
            }
        };
        let mut appraisal = Appraisal::from_azure_snp(&ok, !nonce.is_empty());
        appraisal.checks.push(("user_data", user_data));
        finish(v, out, verdict, &appraisal, &AZURE, time);
        Ok(())
    })
}

/// Verifies a TPM quote given in another tool's format (`format`, `ATTEST_TPM_EVIDENCE_*`): trustee's TPM
/// evidence JSON (which carries the AK: pass `ak` NULL, 0), az-cvm-vtpm's bincode bundle or trustee's hex
/// quote JSON (both need `ak`: SubjectPublicKeyInfo DER/PEM, TPM2B_PUBLIC or TPMT_PUBLIC). The quote's
/// extraData must equal `nonce` (empty only with `ATTEST_VERIFY_ALLOW_EMPTY_NONCE`). The AK is the caller's
/// statement: nothing here certifies it. On success `*out` holds a verdict of kind `ATTEST_EVIDENCE_KIND_TPM_QUOTE`.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn attest_verifier_verify_tpm_evidence(
    verifier: *const attest_verifier,
    format: u32,
    evidence: *const u8,
    evidence_len: usize,
    ak: *const u8,
    ak_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    flags: u32,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &TPM, ATTEST_TIME_NOW, |v| {
        let evidence = required(evidence, evidence_len, "evidence")?;
        let ak = input(ak, ak_len)?;
        let nonce = input(nonce, nonce_len)?;
        let out = out_param(out)?;
        check_nonce(nonce, flags)?;
        let (key, parts) = match format {
            ATTEST_TPM_EVIDENCE_TRUSTEE_JSON => {
                if !ak.is_empty() {
                    return Err(misuse("trustee TPM evidence carries its AK: pass ak NULL, 0"));
                }
                let ev = TrusteeTpmEvidence::from_json(evidence)?;
                (ev.ak, ev.quote)
            }
            ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE | ATTEST_TPM_EVIDENCE_HEX_JSON => {
                if ak.is_empty() {
                    return Err(misuse("this format needs the AK"));
                }
                let parts = if format == ATTEST_TPM_EVIDENCE_HEX_JSON {
                    HexQuote::from_json(evidence)?
                } else {
                    AzureQuoteBin::parse(evidence)?.to_parts()?
                };
                (AkKey::parse(ak)?, parts)
            }
            _ => return Err(misuse("unknown format")),
        };
        let pcrs = parts.pcr_values()?;
        let ok = verify_quote(v.snp.provider(), &parts.request(&pcrs, &key, nonce)?)?;
        // The AK came with the evidence (or from the caller as part of it): nothing here vouches for it.
        let appraisal = Appraisal::from_quote(&ok, false, !nonce.is_empty());
        let now = trusted_time(ATTEST_TIME_NOW)?;
        finish(v, out, Verdict::new(attest_evidence_kind::TpmQuote).with_quote(&ok), &appraisal, &TPM, now);
        Ok(())
    })
}
