//! # attest-openssl-ext
//!
//! The two OpenSSL 1.1.1/3.x calls that aTLS (`docs/ARCHITECTURE.md`, "aTLS") needs on the **client** side and that
//! rust-openssl 0.10 (and openssl-sys 0.9) do not bind, declared here with safe wrappers:
//!
//! | OpenSSL call | wrapper | why aTLS needs it |
//! |---|---|---|
//! | `SSL_get_client_CA_list` | [`client_ca_list`] | the server's nonce travels as the CommonName of the single "acceptable CA" name in its CertificateRequest; the client reads it here |
//! | `SSL_CTX_set_cert_cb` | [`set_cert_callback`] | OpenSSL calls back when the server requests a certificate, so the client can produce its attestation certificate *after* it learned the server's nonce (and it may suspend the handshake while it does) |
//!
//! Everything else aTLS needs is in rust-openssl already (per-connection `SslRef::set_client_ca_list`, the
//! servername callback, `set_certificate` / `set_private_key`).
//!
//! # Unsafe policy
//!
//! This is the only crate outside `ffi/` with unsafe code (`docs/ARCHITECTURE.md`, "Crates"). The workspace forbids
//! `unsafe_code`; this crate denies it in its `Cargo.toml` and allows it here, at the root, under
//! `clippy::undocumented_unsafe_blocks` and `unsafe_op_in_unsafe_fn`: every unsafe block carries a
//! `// SAFETY:` comment stating the proof obligation it discharges. There are three: one per call, and the
//! conversion of the callback's `SSL *` into an `&mut SslRef`.

#![deny(missing_docs, clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]
#![allow(unsafe_code)]

use foreign_types::ForeignTypeRef;
use openssl::ex_data::Index;
use openssl::ssl::{SslContext, SslContextBuilder, SslRef};
use openssl::stack::StackRef;
use openssl::x509::X509Name;
use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

mod sys {
    use std::ffi::{c_int, c_void};

    /// `int (*cb)(SSL *ssl, void *arg)` of `SSL_CTX_set_cert_cb` (OpenSSL `ssl.h`).
    pub(crate) type CertCb = unsafe extern "C" fn(ssl: *mut openssl_sys::SSL, arg: *mut c_void) -> c_int;

    // Both exist in OpenSSL ≥ 1.0.2 and in LibreSSL/BoringSSL with these exact prototypes (`ssl.h`):
    //   STACK_OF(X509_NAME) *SSL_get_client_CA_list(const SSL *s);
    //   void SSL_CTX_set_cert_cb(SSL_CTX *c, int (*cb)(SSL *ssl, void *arg), void *arg);
    // libssl itself is linked by openssl-sys.
    unsafe extern "C" {
        pub(crate) fn SSL_get_client_CA_list(s: *const openssl_sys::SSL) -> *mut openssl_sys::stack_st_X509_NAME;
        pub(crate) fn SSL_CTX_set_cert_cb(ctx: *mut openssl_sys::SSL_CTX, cb: Option<CertCb>, arg: *mut c_void);
    }
}

/// The CA names a TLS **client** received in the server's CertificateRequest (TLS 1.2
/// `certificate_authorities` field, TLS 1.3 `certificate_authorities` extension), or `None` when the server
/// sent none or has not requested a certificate (yet).
///
/// On a **server** this returns the list the server will send (set per connection with
/// `SslRef::set_client_ca_list`, else the context's). The names borrow from `ssl` and are valid until the
/// handshake state changes; read them inside the certificate callback ([`set_cert_callback`]) or after the
/// handshake.
pub fn client_ca_list(ssl: &SslRef) -> Option<&StackRef<X509Name>> {
    // SAFETY: `ssl.as_ptr()` is a valid, live `SSL *` for the lifetime of the borrow `&SslRef` (rust-openssl's
    // `ForeignTypeRef` invariant). `SSL_get_client_CA_list` only reads the SSL and returns either NULL or a
    // pointer to a `STACK_OF(X509_NAME)` owned by the SSL (client: `s3.tmp.peer_ca_names`; server: the
    // connection's or its SSL_CTX's list) — never a new reference for the caller to free.
    let stack = unsafe { sys::SSL_get_client_CA_list(ssl.as_ptr()) };
    if stack.is_null() {
        return None;
    }
    // SAFETY: `stack` is non-null and points to a `STACK_OF(X509_NAME)` owned by the SSL (above), so it
    // lives as long as the SSL does; tying the returned `&StackRef` to the `&SslRef` borrow means it cannot be
    // used after the SSL is freed, nor across a `&mut SslRef` call that could replace the list (the shared
    // borrow forbids it). `StackRef<X509Name>` is the rust-openssl view of exactly this C type.
    Some(unsafe { StackRef::from_ptr(stack) })
}

/// What a certificate callback ([`set_cert_callback`]) tells OpenSSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertCallbackResult {
    /// Carry on: the certificate and key are set (or deliberately none is sent). Returns 1.
    Ready,
    /// Suspend the handshake: `SSL_do_handshake` (and `SslStream::connect`/`accept`) returns
    /// `SSL_ERROR_WANT_X509_LOOKUP` ([`want_x509_lookup`]); call it again once the certificate is
    /// ready, and OpenSSL calls the callback again. Returns -1.
    Retry,
    /// Abort the handshake with an `internal_error` alert. Returns 0.
    Fail,
}

/// The handshake error code of a suspended certificate callback, `SSL_ERROR_WANT_X509_LOOKUP` (rust-openssl
/// has no `ErrorCode` constant for it).
pub fn want_x509_lookup() -> openssl::ssl::ErrorCode {
    openssl::ssl::ErrorCode::from_raw(openssl_sys::SSL_ERROR_WANT_X509_LOOKUP)
}

impl CertCallbackResult {
    fn to_raw(self) -> c_int {
        match self {
            Self::Ready => 1,
            Self::Retry => -1,
            Self::Fail => 0,
        }
    }
}

type CertFn = dyn Fn(&mut SslRef) -> CertCallbackResult + Send + Sync + 'static;

/// The closure registered on an SSL_CTX (in its ex_data, so it lives and dies with the context).
#[derive(Clone)]
struct CertCallback(Arc<CertFn>);

fn cert_callback_index() -> Option<Index<SslContext, CertCallback>> {
    static INDEX: OnceLock<Option<Index<SslContext, CertCallback>>> = OnceLock::new();
    *INDEX.get_or_init(|| SslContext::new_ex_index::<CertCallback>().ok())
}

/// Registers `callback` as the context's certificate callback (`SSL_CTX_set_cert_cb`).
///
/// OpenSSL calls it on a **client** when the server sends a CertificateRequest — after the server's
/// certificate was verified and the acceptable-CA names ([`client_ca_list`]) are known — and on a
/// **server** while it processes the ClientHello (after the servername callback), before it picks its
/// certificate. In it, set the certificate and key with `SslRef::set_certificate` / `set_private_key`.
/// Returning [`CertCallbackResult::Retry`] suspends the handshake (see there).
///
/// The callback replaces any earlier one on this context. A panic inside it is caught and fails the
/// handshake ([`CertCallbackResult::Fail`]) instead of unwinding into C.
///
/// Fails only when OpenSSL cannot allocate an ex_data index.
pub fn set_cert_callback<F>(builder: &mut SslContextBuilder, callback: F) -> Result<(), openssl::error::ErrorStack>
where
    F: Fn(&mut SslRef) -> CertCallbackResult + Send + Sync + 'static,
{
    let index = cert_callback_index().ok_or_else(openssl::error::ErrorStack::get)?;
    builder.set_ex_data(index, CertCallback(Arc::new(callback)));
    // SAFETY: `builder.as_ptr()` is the live `SSL_CTX *` the builder owns. `raw_cert_cb` has exactly the
    // prototype OpenSSL calls (`int (*)(SSL *, void *)`), never unwinds (it catches panics), and does not use
    // `arg`, so passing NULL is fine. The closure it runs is found through the SSL's context ex_data set just
    // above, which the SSL_CTX owns and frees with itself — it outlives every SSL created from the context.
    unsafe { sys::SSL_CTX_set_cert_cb(builder.as_ptr(), Some(raw_cert_cb), std::ptr::null_mut()) };
    Ok(())
}

/// The C trampoline of [`set_cert_callback`].
///
/// # Safety
/// OpenSSL calls it with a valid `SSL *` during a handshake on that SSL, on the thread running the handshake
/// and with no other reference to the SSL in use (the handshake function is the only caller).
unsafe extern "C" fn raw_cert_cb(ssl: *mut openssl_sys::SSL, _arg: *mut c_void) -> c_int {
    if ssl.is_null() {
        return CertCallbackResult::Fail.to_raw();
    }
    // SAFETY: `ssl` is non-null and, per this function's contract (OpenSSL's callback contract), a valid SSL
    // exclusively used by the handshake that called us for the duration of this call, so a unique `&mut SslRef`
    // over it for that duration aliases nothing live in Rust (the `SslStream`'s own `&mut` is suspended inside
    // `SSL_do_handshake`).
    let ssl = unsafe { SslRef::from_ptr_mut(ssl) };
    let Some(index) = cert_callback_index() else { return CertCallbackResult::Fail.to_raw() };
    // Clone the Arc so the shared borrow of the context ends before the callback takes `&mut SslRef`. If the
    // SSL's context was swapped (SSL_set_SSL_CTX), OpenSSL swapped the callback with it, so looking it up on
    // the current context finds the one OpenSSL meant to call; a context without one fails closed.
    let Some(CertCallback(callback)) = ssl.ssl_context().ex_data(index).cloned() else {
        return CertCallbackResult::Fail.to_raw();
    };
    catch_unwind(AssertUnwindSafe(|| callback(ssl))).unwrap_or(CertCallbackResult::Fail).to_raw()
}

#[cfg(test)]
mod tests;
