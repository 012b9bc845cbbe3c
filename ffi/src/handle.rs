//! The crate's only `unsafe` code: converting between opaque C handles and Rust values, reading caller
//! memory as slices, and writing out-parameters (the "Castable" pattern of rustls-ffi's `src/ffi.rs`).
//!
//! # Contract
//!
//! Every function here takes raw pointers that came from C through an exported `attest_*` function. They
//! are safe Rust functions (so callers need no `unsafe` block), which is sound only under the obligations
//! that `attest.h` states for the C caller, restated at each function:
//!
//! - a handle pointer is NULL or was returned by the matching `_new`/verify function and not yet freed, and
//!   is not freed while a call that uses it is running;
//! - an input `(ptr, len)` is NULL with `len == 0`, or points to `len` readable bytes (elements) that stay
//!   valid and unmodified for the duration of the call;
//! - an output buffer `(buf, len)` is NULL with `len == 0`, or points to `len` writable bytes;
//! - an out-parameter is NULL or points to writable, suitably aligned storage for its type.
//!
//! Nothing borrowed from the caller outlives the call: the slices returned here carry a lifetime chosen by
//! the caller of these helpers, which always ends before the exported function returns, and anything kept
//! (in a verdict, the verifier's caches) is copied first.
//!
//! NULL is checked here, so a NULL where a value is required becomes `None` (and the exported function
//! returns `ATTEST_RESULT_NULL_PARAMETER`) rather than undefined behaviour.

#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

use std::marker::PhantomData;
use std::sync::Arc;

/// How a handle type is owned on the Rust side.
pub(crate) trait Ownership {}

/// The handle is a `Box<RustType>` turned into a pointer: one owner (the C caller), freed once.
pub(crate) struct OwnershipBox;
impl Ownership for OwnershipBox {}

/// The handle is an `Arc<RustType>` turned into a pointer: shareable across threads; `_free` drops the
/// C caller's reference.
pub(crate) struct OwnershipArc;
impl Ownership for OwnershipArc {}

/// An opaque C handle type (a zero-sized marker struct) and the Rust type behind its pointer.
pub(crate) trait Castable {
    /// Box or Arc.
    type Ownership: Ownership;
    /// The Rust value the handle points to.
    type RustType;
}

/// Moves `value` into a new box and returns it as a handle pointer. Free it with [`free_box`].
pub(crate) fn box_into_ptr<C: Castable<Ownership = OwnershipBox>>(value: C::RustType) -> *mut C {
    Box::into_raw(Box::new(value)).cast()
}

/// Frees a handle made by [`box_into_ptr`]; NULL is ignored.
///
/// Caller's obligation (from C): `ptr` is NULL or came from [`box_into_ptr`] for the same `C`, and has not
/// been freed before; no other call uses it concurrently or afterwards.
pub(crate) fn free_box<C: Castable<Ownership = OwnershipBox>>(ptr: *mut C) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` is non-NULL and, by the caller's obligation, was produced by `Box::into_raw` of a
    // `Box<C::RustType>` in `box_into_ptr` and not freed since, so reconstructing the box takes back the
    // unique ownership exactly once.
    drop(unsafe { Box::from_raw(ptr.cast::<C::RustType>()) });
}

/// Turns an `Arc` into a handle pointer (the C caller owns one strong reference). Free it with
/// [`free_arc`].
pub(crate) fn arc_into_ptr<C: Castable<Ownership = OwnershipArc>>(value: Arc<C::RustType>) -> *const C {
    Arc::into_raw(value).cast()
}

/// Drops the C caller's reference of a handle made by [`arc_into_ptr`]; NULL is ignored.
///
/// Caller's obligation (from C): `ptr` is NULL or came from [`arc_into_ptr`] for the same `C` and its
/// reference has not been dropped before; no other call uses the handle concurrently or afterwards.
pub(crate) fn free_arc<C: Castable<Ownership = OwnershipArc>>(ptr: *const C) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` is non-NULL and, by the caller's obligation, was produced by `Arc::into_raw` of an
    // `Arc<C::RustType>` in `arc_into_ptr` whose reference the C caller still owns; `from_raw` takes that
    // reference back once and dropping it decrements the count.
    drop(unsafe { Arc::from_raw(ptr.cast::<C::RustType>()) });
}

/// Borrows the value behind a handle for the duration of one call; `None` for NULL.
///
/// Caller's obligation (from C): `ptr` is NULL or a live handle of type `C` (not freed before or during
/// the call). For Box handles the C caller does not use the handle from another thread while this call
/// mutates nothing through it (all accessors take `&`).
pub(crate) fn try_ref<'a, C: Castable>(ptr: *const C) -> Option<&'a C::RustType> {
    // SAFETY: by the caller's obligation a non-NULL `ptr` points to a live, properly aligned
    // `C::RustType` (it came from `Box::into_raw`/`Arc::into_raw` of one), which stays alive for the call;
    // only shared references are created, and `as_ref` maps NULL to `None`.
    unsafe { ptr.cast::<C::RustType>().as_ref() }
}

/// Borrows the caller's `(ptr, len)` input: `Some(&[])` for `(NULL, 0)`, `None` for NULL with a nonzero
/// length (or a length too large to be a real allocation).
///
/// Caller's obligation (from C): a non-NULL `ptr` points to `len` initialized `T`s, readable and not
/// modified during the call.
pub(crate) fn try_slice<'a, T>(ptr: *const T, len: usize) -> Option<&'a [T]> {
    if ptr.is_null() {
        return (len == 0).then_some(&[]);
    }
    if len.checked_mul(size_of::<T>()).is_none_or(|n| n > isize::MAX as usize) || !ptr.is_aligned() {
        return None;
    }
    // SAFETY: `ptr` is non-NULL and aligned (checked), the total size fits in `isize` (checked), and by
    // the caller's obligation it points to `len` initialized `T`s that stay valid and unmodified while the
    // returned borrow (scoped to the call) lives.
    Some(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A checked, non-NULL out-parameter. Created before any work is done (so NULL is reported up front) and
/// written only when the call succeeds.
pub(crate) struct OutPtr<'a, T> {
    ptr: *mut T,
    _call: PhantomData<&'a mut T>,
}

impl<T> OutPtr<'_, T> {
    /// Checks `ptr`; `None` for NULL or misaligned pointers.
    ///
    /// Caller's obligation (from C): a non-NULL `ptr` points to storage for a `T`, writable during the call.
    pub(crate) fn new(ptr: *mut T) -> Option<Self> {
        (!ptr.is_null() && ptr.is_aligned()).then_some(Self { ptr, _call: PhantomData })
    }

    /// Stores `value`, without reading or dropping what was there (C memory holds no Rust values).
    pub(crate) fn write(self, value: T) {
        // SAFETY: `ptr` is non-NULL and aligned (checked in `new`) and, by the caller's obligation, valid
        // for writes of a `T` for the duration of the call; `write` does not drop the old contents, which
        // are plain C data or uninitialized.
        unsafe { self.ptr.write(value) }
    }
}

/// A caller's output byte buffer `(buf, len)`.
pub(crate) struct OutBuf<'a> {
    ptr: *mut u8,
    len: usize,
    _call: PhantomData<&'a mut [u8]>,
}

impl OutBuf<'_> {
    /// Checks `(buf, len)`: NULL is allowed only with `len == 0` (a size query).
    ///
    /// Caller's obligation (from C): a non-NULL `buf` points to `len` bytes writable during the call.
    pub(crate) fn new(buf: *mut u8, len: usize) -> Option<Self> {
        if buf.is_null() && len != 0 || len > isize::MAX as usize {
            return None;
        }
        Some(Self { ptr: buf, len, _call: PhantomData })
    }

    /// The buffer's size.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `src` to the start of the buffer. `src` must fit (callers check [`Self::len`] first); a
    /// too-long `src` is refused with `false` and nothing written.
    pub(crate) fn copy_from(self, src: &[u8]) -> bool {
        if src.len() > self.len {
            return false;
        }
        if src.is_empty() {
            return true;
        }
        // SAFETY: `src` is non-empty and fits, so `len >= 1` and `ptr` is non-NULL (`new` allows NULL only
        // with `len == 0`); by the caller's obligation `ptr` is valid for `len >= src.len()` byte writes
        // during the call; `src` is Rust-owned memory, so the regions cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr, src.len()) };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Marker;
    impl Castable for Marker {
        type Ownership = OwnershipBox;
        type RustType = Vec<u8>;
    }
    struct Shared;
    impl Castable for Shared {
        type Ownership = OwnershipArc;
        type RustType = String;
    }

    #[test]
    fn box_roundtrip_and_null() {
        let p = box_into_ptr::<Marker>(vec![1, 2, 3]);
        assert_eq!(try_ref::<Marker>(p).unwrap(), &[1, 2, 3]);
        free_box(p);
        free_box::<Marker>(std::ptr::null_mut());
        assert!(try_ref::<Marker>(std::ptr::null()).is_none());
    }

    #[test]
    fn arc_roundtrip_shares() {
        let a = Arc::new("x".to_owned());
        let p = arc_into_ptr::<Shared>(Arc::clone(&a));
        assert_eq!(Arc::strong_count(&a), 2);
        assert_eq!(try_ref::<Shared>(p).unwrap(), "x");
        free_arc(p);
        assert_eq!(Arc::strong_count(&a), 1);
        free_arc::<Shared>(std::ptr::null());
    }

    #[test]
    fn slices() {
        let v = [1u8, 2, 3];
        assert_eq!(try_slice(v.as_ptr(), 3), Some(&v[..]));
        assert_eq!(try_slice::<u8>(std::ptr::null(), 0), Some(&[][..]));
        assert_eq!(try_slice::<u8>(std::ptr::null(), 1), None);
        assert_eq!(try_slice(v.as_ptr(), usize::MAX), None);
    }

    #[test]
    fn outputs() {
        let mut x = 0u32;
        OutPtr::new(&raw mut x).unwrap().write(7);
        assert_eq!(x, 7);
        assert!(OutPtr::<u32>::new(std::ptr::null_mut()).is_none());
        let mut buf = [0u8; 4];
        assert!(OutBuf::new(buf.as_mut_ptr(), 4).unwrap().copy_from(b"ab"));
        assert_eq!(&buf, b"ab\0\0");
        assert!(!OutBuf::new(buf.as_mut_ptr(), 4).unwrap().copy_from(b"abcde"));
        assert!(OutBuf::new(std::ptr::null_mut(), 0).unwrap().copy_from(b""));
        assert!(OutBuf::new(std::ptr::null_mut(), 1).is_none());
    }
}
