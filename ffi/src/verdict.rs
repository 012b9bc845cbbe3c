//! `attest_verdict`: the owned result of an accepted verification, read through accessors.
//!
//! A verdict exists only for accepted evidence: every verify function returns a non-OK code for a
//! rejection and then writes no verdict (fail closed: a caller that ignores the code holds NULL, not a
//! "rejected" object it might forget to inspect). [`attest_verdict_accepted`] is therefore true for every
//! verdict; warn-only PCR mismatches are accepted and show up as checks with outcome
//! `ATTEST_OUTCOME_WARNED`.
//!
//! The verdict owns copies of everything it reports (the SNP report, quoted PCRs), so it stays valid after
//! the verifier is freed. Borrowed outputs (`attest_str`, `attest_bytes`) point into the verdict and are
//! valid until `attest_verdict_free`.

use crate::boundary::{guard, guard_value};
use crate::handle::{Castable, OutPtr, OwnershipBox, free_box, try_ref};
use crate::result::attest_result;
use attest_engine::crypto::HashAlgorithm;
use attest_engine::policy::Outcome;
use attest_engine::snp::{REPORT_SIZE, Report, TcbVersion, VerifiedReport};
use attest_engine::tdx::VerifiedTdQuote;
use attest_engine::tpm::VerifiedQuote;
use std::borrow::Cow;
use std::ffi::c_char;

/// An accepted verification's result (opaque). Free with `attest_verdict_free`.
#[allow(non_camel_case_types)]
pub struct attest_verdict {
    _private: [u8; 0],
}

impl Castable for attest_verdict {
    type Ownership = OwnershipBox;
    type RustType = Verdict;
}

/// A borrowed UTF-8 string (not NUL-terminated): `len` bytes at `data`. Valid as long as its source (the
/// verdict, or forever for static names) is.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attest_str {
    /// The bytes (never NULL; may be dangling when `len` is 0).
    pub data: *const c_char,
    /// The length in bytes.
    pub len: usize,
}

impl attest_str {
    pub(crate) fn new(s: &str) -> Self {
        Self { data: s.as_ptr().cast(), len: s.len() }
    }
}

/// A borrowed byte string: `len` bytes at `data`, valid until the verdict it came from is freed.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attest_bytes {
    /// The bytes (never NULL; may be dangling when `len` is 0).
    pub data: *const u8,
    /// The length in bytes.
    pub len: usize,
}

impl attest_bytes {
    fn new(b: &[u8]) -> Self {
        Self { data: b.as_ptr(), len: b.len() }
    }
}

/// A decoded TCB version (SNP ABI spec, TCB_VERSION). `fmc` is meaningful only when `has_fmc` (Turin).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct attest_tcb {
    /// Boot loader SPL.
    pub bootloader: u8,
    /// TEE SPL.
    pub tee: u8,
    /// SNP firmware SPL.
    pub snp: u8,
    /// Microcode SPL.
    pub microcode: u8,
    /// FMC SPL (Turin).
    pub fmc: u8,
    /// Whether the product has an FMC component (Turin).
    pub has_fmc: bool,
}

impl From<TcbVersion> for attest_tcb {
    fn from(t: TcbVersion) -> Self {
        Self {
            bootloader: t.bootloader,
            tee: t.tee,
            snp: t.snp,
            microcode: t.microcode,
            fmc: t.fmc.unwrap_or(0),
            has_fmc: t.fmc.is_some(),
        }
    }
}

/// What happened to one check.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum attest_outcome {
    /// Not reached (does not occur in verdicts of accepted evidence; kept for completeness).
    NotRun = 0,
    /// Checked and satisfied.
    Passed = 1,
    /// Not checked: the policy does not ask for it, or it does not apply.
    Waived = 2,
    /// Checked, not satisfied, and accepted because the expectation is warn-only (measurements files).
    Warned = 3,
}

impl From<Outcome> for attest_outcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::NotRun => Self::NotRun,
            Outcome::Passed => Self::Passed,
            Outcome::Waived => Self::Waived,
        }
    }
}

/// Which verify function produced a verdict.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum attest_evidence_kind {
    /// `attest_verifier_verify_snp`.
    Snp = 1,
    /// `attest_verifier_verify_tpm_quote`.
    TpmQuote = 2,
    /// `attest_verifier_verify_azure_snp`.
    AzureSnp = 3,
    /// `attest_verifier_verify_document`.
    Document = 4,
    /// `attest_verifier_verify_td_quote`.
    TdQuote = 5,
    /// `attest_verifier_verify_gce`.
    Gce = 6,
}

/// The VM a GCE verdict's AK certificate names (Google's instance-information extension). The strings are
/// borrowed from the verdict (valid until `attest_verdict_free`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attest_gce_instance {
    /// The zone, e.g. `us-central1-a`.
    pub zone: attest_str,
    /// The project id.
    pub project_id: attest_str,
    /// The project number.
    pub project_number: u64,
    /// The instance name.
    pub instance_name: attest_str,
    /// The instance id.
    pub instance_id: u64,
}

/// The GCE part of a verdict, owned.
#[derive(Debug)]
pub(crate) struct GceFacts {
    zone: String,
    project_id: String,
    project_number: u64,
    instance_name: String,
    instance_id: u64,
}

/// The SNP part of a verdict, owned.
#[derive(Debug)]
pub(crate) struct SnpFacts {
    report: Box<[u8]>,
    product: &'static str,
    signer: &'static str,
    tcb: TcbVersion,
    cache_hit: bool,
}

/// The TDX part of a verdict, owned.
#[derive(Debug)]
pub(crate) struct TdxFacts {
    tcb_status: &'static str,
    advisory_ids: Vec<Box<str>>,
    fmspc: [u8; 6],
    body: Box<[u8]>,
}

/// The Rust value behind `attest_verdict`.
#[derive(Debug)]
pub struct Verdict {
    kind: attest_evidence_kind,
    checks: Vec<(Cow<'static, str>, attest_outcome)>,
    snp: Option<SnpFacts>,
    tdx: Option<TdxFacts>,
    /// Quoted SHA-256 PCR values by index (`None`: not quoted).
    pcrs: Option<Box<[Option<[u8; 32]>; 24]>>,
    variant: Option<&'static str>,
    ak_basis: Option<&'static str>,
    gce: Option<GceFacts>,
    /// The result object (schema `attest-result/1`).
    result: String,
}

impl Verdict {
    pub(crate) fn new(kind: attest_evidence_kind) -> Self {
        Self {
            kind,
            checks: Vec::new(),
            snp: None,
            tdx: None,
            pcrs: None,
            variant: None,
            ak_basis: None,
            gce: None,
            result: String::new(),
        }
    }

    /// Sets the result object.
    pub(crate) fn with_result(mut self, json: String) -> Self {
        self.result = json;
        self
    }

    /// Adds the SNP report's facts and every SNP check.
    pub(crate) fn with_snp(mut self, v: &VerifiedReport<'_>) -> Self {
        let bytes = v.report().as_bytes();
        debug_assert_eq!(bytes.len(), REPORT_SIZE);
        self.checks.extend(v.verdict().iter().map(|(c, o)| (Cow::Borrowed(c.name()), o.into())));
        self.snp = Some(SnpFacts {
            report: bytes.into(),
            product: v.product().name(),
            signer: v.signer().name(),
            tcb: v.reported_tcb(),
            cache_hit: v.cache_hit(),
        });
        self
    }

    /// Adds the quote's checks and its quoted SHA-256 PCRs.
    pub(crate) fn with_quote(mut self, q: &VerifiedQuote<'_>) -> Self {
        for name in ["tpm_quote_signature", "tpm_nonce", "tpm_pcr_digest"] {
            self.checks.push((Cow::Borrowed(name), attest_outcome::Passed));
        }
        let mut pcrs = Box::new([None; 24]);
        for (i, slot) in pcrs.iter_mut().enumerate() {
            *slot = q.pcr(HashAlgorithm::Sha256, i).and_then(|v| v.try_into().ok());
        }
        self.pcrs = Some(pcrs);
        self
    }

    /// Adds a GCE verification's checks, its SHA-256 PCRs and the certified instance.
    pub(crate) fn with_gce(mut self, g: &attest_engine::gce::VerifiedGce<'_>) -> Self {
        self.checks.extend(g.verdict().iter().map(|(c, o)| (Cow::Borrowed(c.name()), o.into())));
        let mut pcrs = Box::new([None; 24]);
        for (i, slot) in pcrs.iter_mut().enumerate() {
            *slot = g.pcr(HashAlgorithm::Sha256, i).and_then(|v| v.try_into().ok());
        }
        self.pcrs = Some(pcrs);
        self.with_instance(Some(g.instance()))
    }

    /// Adds the instance a `gcp-shielded-vm` document's AK certificate names.
    pub(crate) fn with_instance(mut self, i: Option<&attest_engine::gce::InstanceInfo<'_>>) -> Self {
        self.gce = i.map(|i| GceFacts {
            zone: i.zone.to_owned(),
            project_id: i.project_id.to_owned(),
            project_number: i.project_number,
            instance_name: i.instance_name.to_owned(),
            instance_id: i.instance_id,
        });
        self
    }

    /// Adds a named check.
    pub(crate) fn check(mut self, name: impl Into<Cow<'static, str>>, outcome: attest_outcome) -> Self {
        self.checks.push((name.into(), outcome));
        self
    }

    /// Adds the TD quote's facts and every TDX check.
    pub(crate) fn with_tdx(mut self, q: &VerifiedTdQuote<'_>) -> Self {
        self.checks.extend(q.verdict().iter().map(|(c, o)| (Cow::Borrowed(c.name()), o.into())));
        let body = q.body();
        let header = q.quote().header();
        // The TD report body as received: it follows the 48-byte header (v4) or the header and the
        // 6-byte body descriptor (v5).
        let start = if header.version() == 5 { 48 + 6 } else { 48 };
        let len = if body.tee_tcb_svn2().is_some() { 648 } else { 584 };
        let bytes = q.quote().as_bytes().get(start..start + len).unwrap_or_default();
        self.tdx = Some(TdxFacts {
            tcb_status: q.tcb_status().name(),
            advisory_ids: q.advisory_ids().map(Box::from).collect(),
            fmspc: q.pck().fmspc,
            body: bytes.into(),
        });
        self
    }

    /// Sets the variant and AK basis of a document verdict.
    pub(crate) fn with_variant(mut self, variant: &'static str, ak_basis: Option<&'static str>) -> Self {
        self.variant = Some(variant);
        self.ak_basis = ak_basis;
        self
    }

    fn tdx(&self) -> Result<&TdxFacts, attest_result> {
        self.tdx.as_ref().ok_or(attest_result::NotAvailable)
    }

    fn snp(&self) -> Result<&SnpFacts, attest_result> {
        self.snp.as_ref().ok_or(attest_result::NotAvailable)
    }

    /// The stored report, parsed again (a borrowed view; it verified when the verdict was made).
    fn report(&self) -> Result<Report<'_>, attest_result> {
        Report::parse(&self.snp()?.report).map_err(|_| attest_result::Panic)
    }
}

/// Reads one item of a verdict into `out` (written only on success).
fn read<T>(
    verdict: *const attest_verdict,
    out: *mut T,
    f: impl FnOnce(&Verdict) -> Result<T, attest_result>,
) -> attest_result {
    guard(|| {
        let v = try_ref(verdict).ok_or(attest_result::NullParameter)?;
        let out = OutPtr::new(out).ok_or(attest_result::NullParameter)?;
        out.write(f(v)?);
        Ok(())
    })
}

/// The verdict's result object: one JSON object of schema `attest-result/1`
/// (`schemas/result-v1.schema.json`, the same the CLI's `--json` prints), into `(buf, len)` as UTF-8 without
/// a NUL terminator, its length in `*out_n`. `ATTEST_RESULT_INSUFFICIENT_SIZE` (with the size needed in
/// `*out_n`) when the buffer is too small.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_json(
    verdict: *const attest_verdict,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> attest_result {
    guard(|| {
        let v = try_ref(verdict).ok_or(attest_result::NullParameter)?;
        crate::boundary::write_text(&v.result, buf, len, out_n)
    })
}

/// Frees a verdict. NULL is ignored. Everything borrowed from it becomes invalid.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_free(verdict: *mut attest_verdict) {
    guard_value((), || free_box(verdict));
}

/// Whether the evidence was accepted: true for every verdict (see the module docs); false for NULL.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_accepted(verdict: *const attest_verdict) -> bool {
    guard_value(false, || try_ref(verdict).is_some())
}

/// Which verify function produced the verdict (`attest_evidence_kind`); 0 for NULL.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_kind(verdict: *const attest_verdict) -> u32 {
    guard_value(0, || try_ref(verdict).map_or(0, |v| v.kind as u32))
}

/// Number of checks in the verdict; 0 for NULL.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_check_count(verdict: *const attest_verdict) -> usize {
    guard_value(0, || try_ref(verdict).map_or(0, |v| v.checks.len()))
}

/// Check number `index` (0-based, in the order they ran): its stable snake_case name (borrowed, valid until
/// `attest_verdict_free`) and outcome. `ATTEST_RESULT_NOT_AVAILABLE` past the end.
///
/// Names: the engine's SNP checks (`report_signature`, `measurement`, …), then for quotes
/// `tpm_quote_signature`, `tpm_nonce`, `tpm_pcr_digest`; Azure adds `ak_binding`; documents add `ak_trust`,
/// `event_log`, `launch_measurement` (SNP variants; waived under `dangerous_allow_unpinned_launch`) and one
/// `pcr_<n>` per expected PCR.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_check(
    verdict: *const attest_verdict,
    index: usize,
    out_name: *mut attest_str,
    out_outcome: *mut attest_outcome,
) -> attest_result {
    guard(|| {
        let v = try_ref(verdict).ok_or(attest_result::NullParameter)?;
        let name = OutPtr::new(out_name).ok_or(attest_result::NullParameter)?;
        let outcome = OutPtr::new(out_outcome).ok_or(attest_result::NullParameter)?;
        let (n, o) = v.checks.get(index).ok_or(attest_result::NotAvailable)?;
        name.write(attest_str::new(n));
        outcome.write(*o);
        Ok(())
    })
}

/// One check of a verdict, as `attest_verdict_checks` copies it out.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attest_check {
    /// The check's stable snake_case name, borrowed until `attest_verdict_free`.
    pub name: attest_str,
    /// Its outcome.
    pub outcome: attest_outcome,
}

/// Copies every check (in order) into the caller's array `(out, len)` in one call and stores their number in
/// `*out_n`. `ATTEST_RESULT_INSUFFICIENT_SIZE` (with the number needed in `*out_n`, the array untouched)
/// when `len` is too small; `(NULL, 0)` queries the number. Names are borrowed until `attest_verdict_free`.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_checks(
    verdict: *const attest_verdict,
    out: *mut attest_check,
    len: usize,
    out_n: *mut usize,
) -> attest_result {
    guard(|| {
        let v = try_ref(verdict).ok_or(attest_result::NullParameter)?;
        let n = OutPtr::new(out_n).ok_or(attest_result::NullParameter)?;
        if out.is_null() && len != 0 {
            return Err(attest_result::NullParameter);
        }
        if len < v.checks.len() {
            n.write(v.checks.len());
            return Err(attest_result::InsufficientSize);
        }
        for (i, (name, outcome)) in v.checks.iter().enumerate() {
            let slot = OutPtr::new(out.wrapping_add(i)).ok_or(attest_result::NullParameter)?;
            slot.write(attest_check { name: attest_str::new(name), outcome: *outcome });
        }
        n.write(v.checks.len());
        Ok(())
    })
}

/// The outcome of the check named `name` (`(ptr, len)`, UTF-8). `ATTEST_RESULT_NOT_AVAILABLE` when the
/// verdict has no such check.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_check_outcome(
    verdict: *const attest_verdict,
    name: *const u8,
    name_len: usize,
    out_outcome: *mut attest_outcome,
) -> attest_result {
    read(verdict, out_outcome, |v| {
        let name = crate::handle::try_slice(name, name_len).ok_or(attest_result::NullParameter)?;
        v.checks.iter().find(|(n, _)| n.as_bytes() == name).map(|(_, o)| *o).ok_or(attest_result::NotAvailable)
    })
}

/// REPORTED_TCB of the SNP report (equal to the VCEK/VLEK's TCB). `ATTEST_RESULT_NOT_AVAILABLE` for
/// verdicts without an SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_reported_tcb(verdict: *const attest_verdict, out: *mut attest_tcb) -> attest_result {
    read(verdict, out, |v| Ok(v.snp()?.tcb.into()))
}

/// MEASUREMENT (48 bytes), borrowed until `attest_verdict_free`. `ATTEST_RESULT_NOT_AVAILABLE` without an
/// SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_measurement(verdict: *const attest_verdict, out: *mut attest_bytes) -> attest_result {
    read(verdict, out, |v| Ok(attest_bytes::new(v.report()?.measurement())))
}

/// REPORT_DATA (64 bytes), borrowed until `attest_verdict_free`. `ATTEST_RESULT_NOT_AVAILABLE` without an
/// SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_report_data(verdict: *const attest_verdict, out: *mut attest_bytes) -> attest_result {
    read(verdict, out, |v| Ok(attest_bytes::new(v.report()?.report_data())))
}

/// The whole verified SNP report (0x4A0 bytes, SNP ABI spec layout) for fields without an accessor,
/// borrowed until `attest_verdict_free`. `ATTEST_RESULT_NOT_AVAILABLE` without an SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_snp_report(verdict: *const attest_verdict, out: *mut attest_bytes) -> attest_result {
    read(verdict, out, |v| Ok(attest_bytes::new(&v.snp()?.report)))
}

/// The AMD product ("Milan", "Genoa", "Turin"; static storage). `ATTEST_RESULT_NOT_AVAILABLE` without an
/// SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_product(verdict: *const attest_verdict, out: *mut attest_str) -> attest_result {
    read(verdict, out, |v| Ok(attest_str::new(v.snp()?.product)))
}

/// The report's signer ("VCEK" or "VLEK"; static storage). `ATTEST_RESULT_NOT_AVAILABLE` without an SNP
/// report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_signer(verdict: *const attest_verdict, out: *mut attest_str) -> attest_result {
    read(verdict, out, |v| Ok(attest_str::new(v.snp()?.signer)))
}

/// Whether the VCEK/VLEK came from the verifier's verified-chain cache (a warm verify). False for NULL and
/// for verdicts without an SNP report.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_cache_hit(verdict: *const attest_verdict) -> bool {
    guard_value(false, || try_ref(verdict).and_then(|v| v.snp.as_ref()).is_some_and(|s| s.cache_hit))
}

/// The quoted SHA-256 value of PCR `index` (32 bytes, borrowed until `attest_verdict_free`).
/// `ATTEST_RESULT_NOT_AVAILABLE` when the verdict has no quote or the quote did not select that PCR.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_pcr(
    verdict: *const attest_verdict,
    index: u32,
    out: *mut attest_bytes,
) -> attest_result {
    read(verdict, out, |v| {
        let pcrs = v.pcrs.as_ref().ok_or(attest_result::NotAvailable)?;
        let value = usize::try_from(index).ok().and_then(|i| pcrs.get(i)).and_then(Option::as_ref);
        value.map(|p| attest_bytes::new(p)).ok_or(attest_result::NotAvailable)
    })
}

/// The attestation variant of a document verdict ("azure-sev-snp", …; static storage).
/// `ATTEST_RESULT_NOT_AVAILABLE` for other verdicts.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_variant(verdict: *const attest_verdict, out: *mut attest_str) -> attest_result {
    read(verdict, out, |v| v.variant.map(attest_str::new).ok_or(attest_result::NotAvailable))
}

/// Why the attestation key of a document verdict is trusted ("hardware-report", "pinned", …; static
/// storage). `ATTEST_RESULT_NOT_AVAILABLE` for other verdicts.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_ak_basis(verdict: *const attest_verdict, out: *mut attest_str) -> attest_result {
    read(verdict, out, |v| v.ak_basis.map(attest_str::new).ok_or(attest_result::NotAvailable))
}

/// The TCB status of a verdict with a TD quote ("UpToDate", "SWHardeningNeeded", "ConfigurationNeeded",
/// "ConfigurationAndSWHardeningNeeded", "OutOfDate", "OutOfDateConfigurationNeeded"; static storage), as
/// Intel's collateral rates the platform, TDX module and QE. `ATTEST_RESULT_NOT_AVAILABLE` without a TD
/// quote.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_tdx_tcb_status(verdict: *const attest_verdict, out: *mut attest_str) -> attest_result {
    read(verdict, out, |v| Ok(attest_str::new(v.tdx()?.tcb_status)))
}

/// Number of advisory IDs (e.g. "INTEL-SA-00837") of the TCB levels the TD quote matched; each was allowed
/// by the policy. 0 for NULL and for verdicts without a TD quote.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_tdx_advisory_count(verdict: *const attest_verdict) -> usize {
    guard_value(0, || try_ref(verdict).and_then(|v| v.tdx.as_ref()).map_or(0, |t| t.advisory_ids.len()))
}

/// Advisory ID number `index` (0-based), borrowed until `attest_verdict_free`. `ATTEST_RESULT_NOT_AVAILABLE`
/// past the end or without a TD quote.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_tdx_advisory_id(
    verdict: *const attest_verdict,
    index: usize,
    out: *mut attest_str,
) -> attest_result {
    read(verdict, out, |v| {
        v.tdx()?.advisory_ids.get(index).map(|s| attest_str::new(s)).ok_or(attest_result::NotAvailable)
    })
}

/// The FMSPC of the TD quote's platform (6 bytes, from its PCK certificate), borrowed until
/// `attest_verdict_free`. `ATTEST_RESULT_NOT_AVAILABLE` without a TD quote.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_tdx_fmspc(verdict: *const attest_verdict, out: *mut attest_bytes) -> attest_result {
    read(verdict, out, |v| Ok(attest_bytes::new(&v.tdx()?.fmspc)))
}

/// The verified TD report body as received (584 bytes for TDX 1.0, 648 for TDX 1.5), borrowed until
/// `attest_verdict_free`. Offsets (Intel TDX DCAP quote format, "TD Quote Body"): TEE_TCB_SVN 0, MRSEAM 16,
/// MRSIGNERSEAM 64, SEAMATTRIBUTES 112, TDATTRIBUTES 120, XFAM 128, MRTD 136, MRCONFIGID 184, MROWNER 232,
/// MROWNERCONFIG 280, RTMR0–3 328/376/424/472, REPORTDATA 520; TDX 1.5 adds TEE_TCB_SVN2 584 and
/// MRSERVICETD 600. `ATTEST_RESULT_NOT_AVAILABLE` without a TD quote.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_td_report(verdict: *const attest_verdict, out: *mut attest_bytes) -> attest_result {
    read(verdict, out, |v| Ok(attest_bytes::new(&v.tdx()?.body)))
}

/// The VM a GCE verdict (`attest_verifier_verify_gce`, or a `gcp-shielded-vm` document) certifies.
/// `ATTEST_RESULT_NOT_AVAILABLE` for other verdicts.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verdict_gce_instance(
    verdict: *const attest_verdict,
    out: *mut attest_gce_instance,
) -> attest_result {
    read(verdict, out, |v| {
        let g = v.gce.as_ref().ok_or(attest_result::NotAvailable)?;
        Ok(attest_gce_instance {
            zone: attest_str::new(&g.zone),
            project_id: attest_str::new(&g.project_id),
            project_number: g.project_number,
            instance_name: attest_str::new(&g.instance_name),
            instance_id: g.instance_id,
        })
    })
}
