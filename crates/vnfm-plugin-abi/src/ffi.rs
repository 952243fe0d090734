//! The C side of the boundary: the header a plugin library exports and the host's services.
//!
//! A plugin library exports one symbol, [`ENTRY_SYMBOL`] (`vnfm_mgmt_driver_v1`), a function
//! without arguments that returns a pointer to a static [`PluginHeader`]. Everything else goes
//! through two function pointers of the header:
//!
//! - [`PluginHeader::call`] takes a serialized [`Request`](crate::protocol::Request) (JSON)
//!   and returns a serialized [`Response`](crate::protocol::Response) in a buffer the plugin
//!   allocated;
//! - [`PluginHeader::free`] releases such a buffer. Memory is freed by the side that allocated
//!   it: the plugin frees what it returned, the host frees what its [`HostApi`] returned.
//!
//! During a call the plugin may call back into the host through the [`HostApi`] it was given
//! (read a package file, log, poll cancellation). The host's functions may be called from any
//! thread of the plugin, but only until `call` returns.
//!
//! The header's first field, [`PluginHeader::abi_version`], is the only one whose position is
//! fixed forever, and the entry symbol's name never changes (its `v1` names this entry
//! convention, not the ABI version): a host reads the `u32` first and refuses a library whose
//! ABI version it does not accept ([`crate::is_supported`]) before it reads any other field.
//! The first call is then a handshake ([`Request::Hello`](crate::protocol::Request::Hello)).

// The boundary itself: raw pointers and foreign functions, documented per item.
#![allow(unsafe_code)]

use std::ffi::c_void;

/// Name of the symbol a plugin exports, NUL-terminated for `dlsym`.
pub const ENTRY_SYMBOL: &[u8] = b"vnfm_mgmt_driver_v1\0";

/// The type of the exported entry symbol.
pub type EntryFn = unsafe extern "C" fn() -> *const PluginHeader;

/// A string owned by the plugin library (static data: the library is never unloaded).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawStr {
    /// First byte of the UTF-8 text.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl RawStr {
    /// A `RawStr` pointing at static text.
    pub const fn from_static(s: &'static str) -> Self {
        RawStr {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The text, or `None` when it is not valid UTF-8 or the pointer is null.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a`.
    pub unsafe fn as_str<'a>(&self) -> Option<&'a str> {
        if self.ptr.is_null() {
            return None;
        }
        // SAFETY: the caller guarantees `ptr..ptr+len` is readable for `'a`.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        std::str::from_utf8(bytes).ok()
    }
}

/// A byte buffer handed across the boundary. It is freed by the `free` function of the side
/// that allocated it, exactly once.
#[repr(C)]
#[derive(Debug)]
pub struct RawBuf {
    /// First byte (null for an empty buffer).
    pub ptr: *mut u8,
    /// Length in bytes (equal to the allocation's capacity).
    pub len: usize,
}

impl RawBuf {
    /// An empty buffer (nothing to free).
    pub const fn empty() -> Self {
        RawBuf {
            ptr: std::ptr::null_mut(),
            len: 0,
        }
    }

    /// Hands `bytes` over; release it with [`RawBuf::free_owned`] in the same library.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let boxed = bytes.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed) as *mut u8;
        RawBuf { ptr, len }
    }

    /// Copies the bytes out.
    ///
    /// # Safety
    /// `ptr` must be null or point to `len` readable bytes.
    pub unsafe fn to_vec(&self) -> Vec<u8> {
        if self.ptr.is_null() {
            return Vec::new();
        }
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }

    /// Frees a buffer made by [`RawBuf::from_vec`] in this same library.
    ///
    /// # Safety
    /// The buffer must come from `from_vec` of this copy of the crate (the same library) and
    /// not have been freed.
    pub unsafe fn free_owned(self) {
        if self.ptr.is_null() {
            return;
        }
        let slice = std::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
        // SAFETY: `from_vec` made this pointer with `Box::into_raw` of a boxed slice of `len`.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// `call`: runs one request. `host` is valid for the duration of the call.
pub type CallFn =
    unsafe extern "C" fn(host: *const HostApi, request: *const u8, request_len: usize) -> RawBuf;

/// `free`: releases a buffer the same side allocated.
pub type FreeFn = unsafe extern "C" fn(buf: RawBuf);

/// What a plugin library describes itself with. The first field never moves.
#[repr(C)]
#[derive(Debug)]
pub struct PluginHeader {
    /// The [`ABI_VERSION`](crate::ABI_VERSION) the plugin was built for. Always first.
    pub abi_version: u32,
    /// The version of the SDK the plugin was built with (informational: compatibility is
    /// decided by `abi_version` alone).
    pub sdk_version: RawStr,
    /// The plugin's name (its package name).
    pub name: RawStr,
    /// The plugin's version (its package version).
    pub version: RawStr,
    /// Runs one request.
    pub call: CallFn,
    /// Frees a buffer returned by `call`.
    pub free: FreeFn,
}

// SAFETY: a header only points at static, immutable data of a library that is never unloaded,
// and at functions that may be called from any thread.
unsafe impl Sync for PluginHeader {}
// SAFETY: as above.
unsafe impl Sync for RawStr {}
// SAFETY: as above.
unsafe impl Send for RawStr {}

/// `read_file` result: the file's bytes are in `out`.
pub const READ_OK: i32 = 0;
/// `read_file` result: the package has no such file; `out` holds a UTF-8 message.
pub const READ_NOT_FOUND: i32 = 1;
/// `read_file` result: reading failed; `out` holds a UTF-8 message.
pub const READ_ERROR: i32 = 2;

/// Log levels of [`HostApi::log`] (and of [`LogRecord`](crate::log::LogRecord)).
pub mod level {
    /// An error.
    pub const ERROR: u32 = 1;
    /// A warning.
    pub const WARN: u32 = 2;
    /// Progress information.
    pub const INFO: u32 = 3;
    /// Details for debugging.
    pub const DEBUG: u32 = 4;
    /// Very detailed tracing.
    pub const TRACE: u32 = 5;
}

/// The services the host offers a plugin during a call.
#[repr(C)]
#[derive(Debug)]
pub struct HostApi {
    /// Opaque host data, passed back to every function.
    pub ctx: *const c_void,
    /// Reads the package file at the `/`-separated, package-relative `path` into `out`
    /// (released with `free`); returns [`READ_OK`], [`READ_NOT_FOUND`] or [`READ_ERROR`].
    pub read_file: unsafe extern "C" fn(
        ctx: *const c_void,
        path: *const u8,
        len: usize,
        out: *mut RawBuf,
    ) -> i32,
    /// Records a log line (UTF-8) at a [`level`].
    pub log: unsafe extern "C" fn(ctx: *const c_void, level: u32, msg: *const u8, len: usize),
    /// Non-zero once the operation occurrence has been cancelled or the hook's deadline passed.
    pub is_cancelled: unsafe extern "C" fn(ctx: *const c_void) -> u32,
    /// Frees a buffer the host returned.
    pub free: FreeFn,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_round_trip() {
        let b = RawBuf::from_vec(b"hello".to_vec());
        // SAFETY: freshly made by from_vec.
        assert_eq!(unsafe { b.to_vec() }, b"hello");
        // SAFETY: made by from_vec above, freed once.
        unsafe { b.free_owned() };
        // SAFETY: empty buffers are valid.
        unsafe { RawBuf::empty().free_owned() };
    }
}
