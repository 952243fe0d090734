//! Loading a plugin library and calling it over the C ABI (in this process).
//!
//! This module holds the host's unsafe code. Its invariants:
//! - a library is loaded once and never unloaded (the `libloading::Library` is leaked), so the
//!   header, its strings and its functions stay valid for the life of the process;
//! - the ABI version is read (as the header's first `u32`) before any other field, so a
//!   library built for another ABI is refused without interpreting its layout (the host
//!   accepts exactly [`vnfm_plugin_abi::ACCEPTED_ABI_VERSIONS`]);
//! - every buffer is freed by the side that allocated it: the plugin's `free` for responses,
//!   [`host_free`] for what the host's callbacks hand out;
//! - host callbacks never unwind into the plugin (panics are caught and become errors).

// The host side of the C ABI.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use vnfm_plugin_abi::ffi::{self as abi, ENTRY_SYMBOL, EntryFn, HostApi, PluginHeader, RawBuf};
use vnfm_plugin_abi::protocol::{HostHello, PluginHello, Request, Response};
use vnfm_plugin_abi::{ABI_VERSION, is_supported};

use crate::HostError;

/// What the host offers a plugin during one call.
pub trait CallServices: Send + Sync {
    /// A package file: `Ok(bytes)`, or `Err((status, message))` with a `READ_*` status.
    fn read_file(&self, path: &str) -> Result<Vec<u8>, (i32, String)>;
    /// A log line from the plugin.
    fn log(&self, level: u32, message: &str);
    /// Whether the call has been cancelled.
    fn is_cancelled(&self) -> bool;
}

/// Services for calls that need none (the handshake).
pub struct NoServices;

impl CallServices for NoServices {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, (i32, String)> {
        Err((
            abi::READ_ERROR,
            format!("no package is available during the handshake (asked for `{path}`)"),
        ))
    }

    fn log(&self, _level: u32, _message: &str) {}

    fn is_cancelled(&self) -> bool {
        false
    }
}

/// A loaded plugin library that passed the ABI version check and the handshake.
#[derive(Debug)]
pub struct Library {
    header: &'static PluginHeader,
    path: PathBuf,
    hello: PluginHello,
}

/// The handshake request the host sends.
pub fn host_hello() -> Request {
    Request::Hello(HostHello {
        abi_version: ABI_VERSION,
        host: format!("vnfm-plugin-host {}", env!("CARGO_PKG_VERSION")),
    })
}

/// Checks a handshake answer: the plugin's ABI version must be one the host accepts (the
/// SDK version it reports is informational).
pub fn check_hello(path: &Path, response: Response) -> Result<PluginHello, HostError> {
    match response {
        Response::Hello(h) if is_supported(h.abi_version) => Ok(h),
        Response::Hello(h) => Err(HostError::AbiMismatch {
            path: path.to_path_buf(),
            found: h.abi_version,
            expected: ABI_VERSION,
        }),
        Response::Error(e) => Err(HostError::Protocol {
            plugin: path.display().to_string(),
            message: format!("the handshake failed: {}", e.message),
        }),
        Response::Hook(_) => Err(HostError::Protocol {
            plugin: path.display().to_string(),
            message: "the plugin answered the handshake with a hook result".into(),
        }),
    }
}

impl Library {
    /// Loads the library at `path`, checks its ABI version and shakes hands.
    ///
    /// Loading runs the library's initialisers in this process: only load libraries whose
    /// digest has been checked against the VNFD.
    pub fn open(path: &Path) -> Result<Library, HostError> {
        // SAFETY: loading a library runs its initialisers; the caller has checked that it is
        // the library the VNFD names (by SHA-256). The handle is leaked below: never unloaded.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| HostError::Load {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        // SAFETY: the symbol's type is the one the ABI defines for `vnfm_mgmt_driver_v1`.
        let entry: EntryFn = match unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL) } {
            Ok(sym) => *sym,
            Err(_) => {
                return Err(HostError::MissingSymbol {
                    path: path.to_path_buf(),
                });
            }
        };
        // Never unloaded: the header and functions must outlive every call and detached
        // thread, and unloading Rust libraries with thread-locals is unsound.
        std::mem::forget(lib);
        // SAFETY: the entry point takes no arguments and returns a pointer to static data.
        let ptr = unsafe { entry() };
        if ptr.is_null() {
            return Err(HostError::Protocol {
                plugin: path.display().to_string(),
                message: "the entry point returned no header".into(),
            });
        }
        // SAFETY: every ABI version starts the header with the `u32` ABI version; nothing else
        // is read before it has been checked.
        let found = unsafe { std::ptr::read(ptr.cast::<u32>()) };
        if !is_supported(found) {
            return Err(HostError::AbiMismatch {
                path: path.to_path_buf(),
                found,
                expected: ABI_VERSION,
            });
        }
        // SAFETY: an accepted ABI version means the pointer is to a static `PluginHeader` of
        // this crate's layout.
        let header: &'static PluginHeader = unsafe { &*ptr };
        // SAFETY: the header's strings are static data of the never-unloaded library.
        let sdk = unsafe { header.sdk_version.as_str() }.unwrap_or("(unreadable)");
        let mut lib = Library {
            header,
            path: path.to_path_buf(),
            hello: PluginHello {
                abi_version: found,
                sdk_version: sdk.to_string(),
                // SAFETY: as above.
                name: unsafe { header.name.as_str() }
                    .unwrap_or("unnamed")
                    .to_string(),
                // SAFETY: as above.
                version: unsafe { header.version.as_str() }
                    .unwrap_or("0.0.0")
                    .to_string(),
                observes: false,
            },
        };
        let response = lib.call(&host_hello(), &NoServices)?;
        lib.hello = check_hello(path, response)?;
        Ok(lib)
    }

    /// The plugin's handshake answer (name, version, SDK version).
    pub fn hello(&self) -> &PluginHello {
        &self.hello
    }

    /// The library file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends `request`, returns the plugin's answer.
    pub fn call(
        &self,
        request: &Request,
        services: &dyn CallServices,
    ) -> Result<Response, HostError> {
        let bytes = serde_json::to_vec(request).map_err(|e| self.protocol(e.to_string()))?;
        let out = self.call_raw(&bytes, services);
        serde_json::from_slice(&out)
            .map_err(|e| self.protocol(format!("the plugin's answer cannot be read: {e}")))
    }

    fn protocol(&self, message: String) -> HostError {
        HostError::Protocol {
            plugin: self.hello.name.clone(),
            message,
        }
    }

    /// Sends raw request bytes, returns the raw answer.
    pub fn call_raw(&self, request: &[u8], services: &dyn CallServices) -> Vec<u8> {
        let holder: &dyn CallServices = services;
        let ctx = (&holder as *const &dyn CallServices).cast::<c_void>();
        let api = HostApi {
            ctx,
            read_file: host_read_file,
            log: host_log,
            is_cancelled: host_is_cancelled,
            free: host_free,
        };
        // SAFETY: `api` and `request` outlive the call; the plugin catches its own panics.
        let buf = unsafe { (self.header.call)(&api, request.as_ptr(), request.len()) };
        // SAFETY: the plugin returned a buffer of its own, valid until freed.
        let out = unsafe { buf.to_vec() };
        // SAFETY: freed once, by the plugin's own `free`.
        unsafe { (self.header.free)(buf) };
        out
    }
}

/// Calls `api.ctx`'s services. Panics are caught: they must not unwind into the plugin.
fn with_services<T>(ctx: *const c_void, fallback: T, f: impl FnOnce(&dyn CallServices) -> T) -> T {
    if ctx.is_null() {
        return fallback;
    }
    // SAFETY: `ctx` is the `&&dyn CallServices` built by `call_raw`, alive during the call.
    let services: &dyn CallServices = unsafe { *ctx.cast::<&dyn CallServices>() };
    catch_unwind(AssertUnwindSafe(|| f(services))).unwrap_or(fallback)
}

/// Copies `len` bytes at `ptr` into a string (lossy); empty for a null pointer.
///
/// # Safety
/// `ptr` must be null or point to `len` readable bytes.
unsafe fn text(ptr: *const u8, len: usize) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(ptr, len) }).into_owned()
}

unsafe extern "C" fn host_read_file(
    ctx: *const c_void,
    path: *const u8,
    len: usize,
    out: *mut RawBuf,
) -> i32 {
    // SAFETY: the plugin passes its path buffer, valid for this call.
    let path = unsafe { text(path, len) };
    let (status, bytes) = with_services(
        ctx,
        (abi::READ_ERROR, b"the host failed while reading".to_vec()),
        |s| match s.read_file(&path) {
            Ok(b) => (abi::READ_OK, b),
            Err((status, message)) => (status, message.into_bytes()),
        },
    );
    if !out.is_null() {
        // SAFETY: `out` is a valid place the plugin gave us; the buffer is freed by host_free.
        unsafe { out.write(RawBuf::from_vec(bytes)) };
    }
    status
}

unsafe extern "C" fn host_log(ctx: *const c_void, level: u32, msg: *const u8, len: usize) {
    // SAFETY: the plugin passes its message buffer, valid for this call.
    let message = unsafe { text(msg, len) };
    with_services(ctx, (), |s| s.log(level, &message));
}

unsafe extern "C" fn host_is_cancelled(ctx: *const c_void) -> u32 {
    with_services(ctx, 0, |s| u32::from(s.is_cancelled()))
}

/// Frees a buffer a host callback handed out.
///
/// # Safety
/// `buf` must come from a host callback (made by `RawBuf::from_vec` in this library).
pub unsafe extern "C" fn host_free(buf: RawBuf) {
    // SAFETY: guaranteed by the caller.
    unsafe { buf.free_owned() }
}
