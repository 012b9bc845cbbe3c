//! # attest-ffi
//!
//! The C ABI of `attest-engine` (model: rustls-ffi). The header `ffi/include/attest.h` is generated from
//! this crate by cbindgen 0.29.0 (`ffi/gen-header.sh`; CI fails when it is stale), the library installs
//! with a pkg-config file (`make -C ffi install PREFIX=…`), and `ffi/go` wraps it for Go.
//!
//! ```c
//! const attest_verifier *v = NULL;
//! attest_verifier_new(&v);                                   // AMD roots built in, strict policy
//! attest_verifier_set_policy_json(v, json, json_len);        // optional
//! attest_verdict *verdict = NULL;
//! attest_result rc = attest_verifier_verify_snp(v, report, 0x4A0, vcek, vcek_len, NULL, 0,
//!                                               nonce_hash, 64, ATTEST_TIME_NOW, &verdict);
//! if (rc != ATTEST_RESULT_OK) { /* rejected: attest_verifier_last_error(v, buf, sizeof buf, &n) */ }
//! attest_bytes m; attest_verdict_measurement(verdict, &m);  // valid until attest_verdict_free
//! attest_verdict_free(verdict);
//! attest_verifier_free(v);
//! ```
//!
//! # Conventions
//!
//! - **Handles** are opaque: `attest_verifier` (an `Arc`: thread-safe, share one verifier across threads)
//!   and `attest_verdict` (a `Box`: one owner). Each has `_free`, which accepts NULL.
//! - **Inputs** are `(const uint8_t *ptr, size_t len)`; optional inputs are `(NULL, 0)`. Nothing is kept
//!   after a call returns: whatever outlives the call (verdict contents, remembered certificates, CRLs,
//!   policies) is copied.
//! - **Results**: every function that can fail returns `attest_result` (`uint32_t`), a stable code in
//!   ranges per domain ([`result`] has the table; `attest_result_is_*_error` classify by range). A NULL
//!   where a pointer is required gives `ATTEST_RESULT_NULL_PARAMETER`; a Rust panic is caught and gives
//!   `ATTEST_RESULT_PANIC`.
//! - **Out-parameters** are written only on success. The one exception is `*out_n` of the text
//!   functions, which reports the size needed together with `ATTEST_RESULT_INSUFFICIENT_SIZE`.
//! - **A verdict exists only for accepted evidence** ([`verdict`]): rejection is a non-OK code, and the
//!   verdict out-parameter stays untouched.
//! - **Text** (`attest_result_text`, `attest_verifier_last_error`) is copied into a caller buffer
//!   `(char *buf, size_t len, size_t *out_n)`, UTF-8, not NUL-terminated. Detailed errors are per thread
//!   ([`boundary`]).
//! - **Borrowed outputs** (`attest_str`, `attest_bytes`) point into the verdict and are valid until
//!   `attest_verdict_free`; check names and product/signer/variant names are static.
//! - **Time** is an explicit trusted time in seconds since 1970; `ATTEST_TIME_NOW` (0) reads the clock.
//! - **Nonces** must not be empty: the quote and document verifications refuse an empty nonce with
//!   `ATTEST_RESULT_NONCE_REQUIRED` unless `flags` holds `ATTEST_VERIFY_ALLOW_EMPTY_NONCE`.
//!
//! # Unsafe code
//!
//! Only `src/handle.rs` contains `unsafe` blocks (handle casts, caller slices, out-parameter writes), each with a
//! `// SAFETY:` comment. Every exported function carries `#[allow(unsafe_code)]` because rustc counts
//! `#[unsafe(no_mangle)]` (exporting an unmangled symbol) as unsafe code; those bodies hold no `unsafe`
//! block, which `tests/unsafe_confined.rs` checks.

pub mod boundary;
mod document;
mod handle;
pub mod result;
pub mod verdict;
pub mod verifier;

pub use result::attest_result;
pub use verdict::{
    attest_bytes, attest_check, attest_evidence_kind, attest_outcome, attest_str, attest_tcb, attest_verdict,
    attest_verdict_accepted, attest_verdict_ak_basis, attest_verdict_cache_hit, attest_verdict_check,
    attest_verdict_check_count, attest_verdict_check_outcome, attest_verdict_checks, attest_verdict_free,
    attest_verdict_kind, attest_verdict_measurement, attest_verdict_pcr, attest_verdict_product,
    attest_verdict_report_data, attest_verdict_reported_tcb, attest_verdict_signer, attest_verdict_snp_report,
    attest_verdict_variant,
};
pub use verifier::{
    ATTEST_QUOTE_SIGNATURE_RSAPSS_SHA256, ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, ATTEST_QUOTE_SIGNATURE_TPMT,
    ATTEST_TIME_NOW, ATTEST_VERIFY_ALLOW_EMPTY_NONCE, attest_pcr_value, attest_result_text, attest_verifier,
    attest_verifier_free, attest_verifier_last_error, attest_verifier_new, attest_verifier_pin_ak,
    attest_verifier_set_crl, attest_verifier_set_policy_json, attest_verifier_verify_azure_snp,
    attest_verifier_verify_document, attest_verifier_verify_snp, attest_verifier_verify_tpm_quote, attest_version,
};
