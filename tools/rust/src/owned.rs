//! [`Owned`]: a handle of the C library (a ring, a mask, a snapshot, ...)
//! owned by one Rust value and freed once, when it is dropped; and the
//! caller-allocated structs the library fills ([`sized`]).

use std::os::raw::c_int;
use std::ptr::NonNull;

use crate::ffi;

// `unsafe impl Marker for ffi::T {}` for each T, under the SAFETY comment
// written above the call.
macro_rules! unsafe_marks {
    ($marker:ident: $($handle:ident),+ $(,)?) => {
        $(unsafe impl $marker for ffi::$handle {})+
    };
}

/// A C object type and the library's call that frees it.
///
/// # Safety
///
/// `free` is the library's free call of this type.
pub(crate) unsafe trait Free {
    /// # Safety
    ///
    /// `raw` is a live handle of this type, freed here once.
    unsafe fn free(raw: *mut Self);
}

/// A C object type whose handle may be moved to and used from any thread
/// through `&`: what makes the Rust value that owns one `Send + Sync`.
///
/// # Safety
///
/// The library documents the calls made through `&` thread-safe.
pub(crate) unsafe trait ThreadSafe: Free {}

macro_rules! free_with {
    ($($name:ident: $free:ident),* $(,)?) => {$(
        // SAFETY: the library's free call of the type.
        unsafe impl Free for ffi::$name {
            unsafe fn free(raw: *mut Self) {
                ffi::$free(raw)
            }
        }
    )*};
}

free_with! {
    chash_builder: chash_builder_free,
    chash_ring: chash_ring_free,
    chash_node_mask: chash_node_mask_free,
    chash_availability: chash_availability_free,
    chash_migration: chash_migration_free,
    chash_snapshot: chash_snapshot_free,
    chash_reloader: chash_reloader_free,
}

// SAFETY, each: a ring is immutable once built and its lookups are
// documented thread-safe; a mask is plain memory that `&` calls only read
// (changes take `&mut`); an availability's publish and lookups, a
// migration's lookups and controls (lock-free) and a reloader's calls (they
// serialize) are documented thread-safe; a snapshot is immutable and
// documented usable from any number of threads. A builder is none of these.
unsafe_marks!(ThreadSafe: chash_ring, chash_node_mask, chash_availability, chash_migration,
              chash_snapshot, chash_reloader);

/// A live handle, owned here alone: freed once, in Drop.
pub(crate) struct Owned<T: Free>(NonNull<T>);

// SAFETY: the handle is owned here alone, and ThreadSafe says its `&`
// calls may run from any thread.
unsafe impl<T: ThreadSafe> Send for Owned<T> {}
unsafe impl<T: ThreadSafe> Sync for Owned<T> {}

impl<T: Free> Owned<T> {
    /// The handle a call wrote to its out-pointer, when the call returned
    /// `code` CHASH_OK; else `code`.
    ///
    /// # Safety
    ///
    /// When `code` is CHASH_OK, `out` is a new handle no one else frees.
    pub(crate) unsafe fn new(code: c_int, out: *mut T) -> Result<Owned<T>, c_int> {
        match NonNull::new(out) {
            Some(raw) if code == ffi::CHASH_OK => Ok(Owned(raw)),
            _ => Err(code),
        }
    }

    pub(crate) fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }

    /// Gives the handle up without freeing it: for a call that consumes it.
    pub(crate) fn into_raw(self) -> *mut T {
        std::mem::ManuallyDrop::new(self).as_ptr()
    }
}

impl<T: Free> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: a live handle owned here alone, freed once.
        unsafe { T::free(self.0.as_ptr()) }
    }
}

/// A caller-allocated struct the library fills: its leading `size` field
/// says which version of the struct the caller has.
///
/// # Safety
///
/// All zeros is a valid value of the type (integers, floats, arrays of
/// them, raw pointers), and its first field is the `u32` size.
pub(crate) unsafe trait OutStruct: Sized {}

// SAFETY: plain data with a leading u32 size (generated from the header,
// whose every one of these structs begins with `uint32_t size`).
// chash_ring_options is an input struct of the same shape: `sized` makes its
// every-default value.
unsafe_marks!(OutStruct: chash_memory_usage, chash_ring_options, chash_ring_stats,
              chash_snapshot_info, chash_reload_result, chash_reload_report);

/// The struct zeroed, its `size` set to its own size.
pub(crate) fn sized<T: OutStruct>() -> T {
    // SAFETY: all zeros is a valid T (OutStruct's contract).
    let mut out: T = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<T>() as u32;
    // SAFETY: T starts with its u32 size (OutStruct's contract), and `out`
    // is at least 4 bytes and 4-byte aligned.
    unsafe { std::ptr::addr_of_mut!(out).cast::<u32>().write(size) };
    out
}
