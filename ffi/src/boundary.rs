//! The panic boundary every exported function runs inside, and the per-thread detailed error.
//!
//! A panic must never unwind into C (undefined behaviour), so each exported body runs in
//! [`catch_unwind`]: functions returning `attest_result` return `ATTEST_RESULT_PANIC`, the others a
//! documented neutral value (NULL, 0, false). Out-parameters are written only on success, so a caught panic
//! leaves them untouched.
//!
//! # Detailed errors
//!
//! Result codes are stable and coarse; the engine's message ("VCEK expired: valid until …") is kept per
//! thread: each verifier call records `(verifier, code, message)` on failure and clears the record on
//! success. [`attest_verifier_last_error`](crate::attest_verifier_last_error) reads it back on the same
//! thread. Thread-local rather than inside the verifier so that threads sharing one verifier never see each
//! other's failures. (Go callers lock the goroutine to its OS thread around the pair of calls.)

use crate::handle::{OutBuf, OutPtr};
use crate::result::attest_result;
use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The most recent failure of a verifier call on this thread.
pub(crate) struct LastError {
    /// Address of the verifier the failing call used (identity only; never dereferenced).
    pub(crate) verifier: usize,
    /// The message.
    pub(crate) message: String,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
    /// The result object (JSON) of this thread's most recent verification, by verifier address.
    static LAST_RESULT: RefCell<Option<(usize, String)>> = const { RefCell::new(None) };
}

/// Records the result object of a verification on `verifier` (`None`: the call produced none).
pub(crate) fn record_result(verifier: usize, json: Option<String>) {
    LAST_RESULT.with(|slot| *slot.borrow_mut() = json.map(|j| (verifier, j)));
}

/// Calls `f` with this thread's most recent result object for `verifier` ("" when there is none).
pub(crate) fn with_last_result<T>(verifier: usize, f: impl FnOnce(&str) -> T) -> T {
    LAST_RESULT.with(|slot| {
        let slot = slot.borrow();
        f(slot.as_ref().filter(|(v, _)| *v == verifier).map_or("", |(_, j)| j.as_str()))
    })
}

/// Records the outcome of a verifier call for [`with_last_error`].
pub(crate) fn record(verifier: usize, outcome: Result<(), (attest_result, String)>) -> attest_result {
    LAST_ERROR.with(|slot| match outcome {
        Ok(()) => {
            slot.borrow_mut().take();
            attest_result::Ok
        }
        Err((code, message)) => {
            *slot.borrow_mut() = Some(LastError { verifier, message });
            code
        }
    })
}

/// Calls `f` with this thread's last failure message for `verifier` ("" when the thread's most recent call
/// on it succeeded, or its most recent failing call used another verifier).
pub(crate) fn with_last_error<T>(verifier: usize, f: impl FnOnce(&str) -> T) -> T {
    LAST_ERROR.with(|slot| {
        let slot = slot.borrow();
        f(slot.as_ref().filter(|e| e.verifier == verifier).map_or("", |e| e.message.as_str()))
    })
}

/// Runs `f` inside the panic boundary; `Err` codes pass through, a panic becomes `ATTEST_RESULT_PANIC`.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), attest_result>) -> attest_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => attest_result::Ok,
        Ok(Err(code)) => code,
        Err(_) => attest_result::Panic,
    }
}

/// Runs `f` inside the panic boundary for functions that return a plain value; a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Copies `text` into `(buf, len)` and its length into `*out_n`. Not NUL-terminated. A too-small buffer
/// (including the size query `buf = NULL, len = 0`) returns `ATTEST_RESULT_INSUFFICIENT_SIZE` with the
/// size needed in `*out_n` and nothing written to `buf`.
pub(crate) fn write_text(text: &str, buf: *mut c_char, len: usize, out_n: *mut usize) -> Result<(), attest_result> {
    let out_n = OutPtr::new(out_n).ok_or(attest_result::NullParameter)?;
    let buf = OutBuf::new(buf.cast(), len).ok_or(attest_result::NullParameter)?;
    if text.len() > buf.len() {
        out_n.write(text.len());
        return Err(attest_result::InsufficientSize);
    }
    buf.copy_from(text.as_bytes());
    out_n.write(text.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_are_caught() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(guard(|| panic!("boom")), attest_result::Panic);
        assert!(!guard_value(false, || panic!("boom")));
        std::panic::set_hook(prev);
        assert_eq!(guard(|| Err(attest_result::NullParameter)), attest_result::NullParameter);
        assert_eq!(guard(|| Ok(())), attest_result::Ok);
    }

    #[test]
    fn last_error_is_per_verifier_and_cleared_on_success() {
        assert_eq!(record(1, Err((attest_result::CertExpired, "expired".into()))), attest_result::CertExpired);
        with_last_error(1, |m| assert_eq!(m, "expired"));
        with_last_error(2, |m| assert_eq!(m, ""));
        std::thread::spawn(|| with_last_error(1, |m| assert_eq!(m, ""))).join().unwrap();
        assert_eq!(record(1, Ok(())), attest_result::Ok);
        with_last_error(1, |m| assert_eq!(m, ""));
    }
}
