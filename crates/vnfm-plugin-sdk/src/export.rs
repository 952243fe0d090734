//! The glue [`export_mgmt_driver!`](crate::export_mgmt_driver) expands to: request decoding,
//! panic catching, and the host services over the C ABI. Not for direct use.

// The plugin side of the boundary: every unsafe block says why it is sound.
#![allow(unsafe_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::HookContext;
use crate::abi::{self, HostApi, RawBuf};
use crate::context::{ReadFailure, Services};
use crate::driver::{MgmtDriver, dispatch};
use crate::protocol::{ErrorKind, PluginHello, Request, Response, WireError};

/// Decodes one request, runs it against `driver` and encodes the response. Panics in the
/// driver (including its constructor) become [`ErrorKind::Panic`] errors.
pub(crate) fn handle_request<'d, D: MgmtDriver>(
    driver: &dyn Fn() -> &'d D,
    request: &[u8],
    services: &dyn Services,
    name: &str,
    version: &str,
) -> Vec<u8> {
    let response = catch_unwind(AssertUnwindSafe(|| {
        match serde_json::from_slice::<Request>(request) {
            Err(e) => Response::Error(WireError {
                kind: ErrorKind::Protocol,
                message: format!("the plugin cannot read the host's request: {e}"),
            }),
            Ok(Request::Hello(_)) => Response::Hello(PluginHello {
                abi_version: abi::ABI_VERSION,
                sdk_version: abi::SDK_VERSION.to_string(),
                name: name.to_string(),
                version: version.to_string(),
                observes: driver().observes(),
            }),
            Ok(Request::Hook(req)) => {
                let ctx = HookContext::new(*req, services);
                match dispatch(driver(), &ctx) {
                    Ok(out) => Response::Hook(Box::new(out)),
                    Err(e) => Response::Error(e.to_wire()),
                }
            }
        }
    }))
    .unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-text panic payload".to_string());
        Response::Error(WireError {
            kind: ErrorKind::Panic,
            message: format!("the plugin panicked: {what}"),
        })
    });
    serde_json::to_vec(&response).unwrap_or_else(|e| {
        // Only a driver output holding non-JSON data (a map with non-string keys) gets here.
        let fallback = Response::Error(WireError {
            kind: ErrorKind::Protocol,
            message: format!("the plugin's response cannot be encoded: {e}"),
        });
        serde_json::to_vec(&fallback).unwrap_or_default()
    })
}

/// The host's services reached through a [`HostApi`].
struct FfiServices(*const HostApi);

// SAFETY: the ABI requires the host's functions to be callable from any thread for the
// duration of the call, and the pointer is only used during the call.
unsafe impl Sync for FfiServices {}

impl FfiServices {
    fn api(&self) -> Option<&HostApi> {
        // SAFETY: the host passes a pointer valid for the duration of the call (or null).
        unsafe { self.0.as_ref() }
    }
}

impl Services for FfiServices {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, ReadFailure> {
        let Some(api) = self.api() else {
            return Err(ReadFailure::Failed("the host offers no file access".into()));
        };
        let mut out = RawBuf::empty();
        // SAFETY: `path` is valid for the call; `out` is a valid place for the host to write.
        let status = unsafe { (api.read_file)(api.ctx, path.as_ptr(), path.len(), &mut out) };
        // SAFETY: the host filled `out` with a buffer of its own (or left it empty).
        let bytes = unsafe { out.to_vec() };
        // SAFETY: the buffer came from the host; it is released by the host's `free`, once.
        unsafe { (api.free)(out) };
        match status {
            abi::READ_OK => Ok(bytes),
            abi::READ_NOT_FOUND => Err(ReadFailure::NotFound(
                String::from_utf8_lossy(&bytes).into_owned(),
            )),
            _ => Err(ReadFailure::Failed(
                String::from_utf8_lossy(&bytes).into_owned(),
            )),
        }
    }

    fn log(&self, level: u32, message: &str) {
        if let Some(api) = self.api() {
            // SAFETY: `message` is valid for the call.
            unsafe { (api.log)(api.ctx, level, message.as_ptr(), message.len()) };
        }
    }

    fn is_cancelled(&self) -> bool {
        match self.api() {
            // SAFETY: a plain call with the host's own context.
            Some(api) => unsafe { (api.is_cancelled)(api.ctx) != 0 },
            None => false,
        }
    }
}

/// The body of a plugin's `call`.
///
/// # Safety
/// `request` must point to `len` readable bytes and `host` must be null or valid for the call.
#[doc(hidden)]
pub unsafe fn call<D: MgmtDriver>(
    driver: &dyn Fn() -> &'static D,
    host: *const HostApi,
    request: *const u8,
    len: usize,
    name: &str,
    version: &str,
) -> RawBuf {
    let bytes: &[u8] = if request.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(request, len) }
    };
    let services = FfiServices(host);
    RawBuf::from_vec(handle_request(driver, bytes, &services, name, version))
}

/// A plugin's `free`.
///
/// # Safety
/// `buf` must have been returned by this library's `call` and not freed before.
#[doc(hidden)]
pub unsafe extern "C" fn free(buf: RawBuf) {
    // SAFETY: guaranteed by the caller.
    unsafe { buf.free_owned() }
}

/// Exports a [`MgmtDriver`] implementation as this library's plugin entry point
/// (`vnfm_mgmt_driver_v1`). Use it once, in a `cdylib` crate:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyDriver;
/// impl vnfm_plugin_sdk::MgmtDriver for MyDriver {}
/// vnfm_plugin_sdk::export_mgmt_driver!(MyDriver);
/// ```
///
/// The type is built with `Default::default()` on the first call, or with the constructor
/// given as a second argument: `export_mgmt_driver!(MyDriver, MyDriver::new)`. The plugin's
/// name and version are the crate's package name and version.
#[macro_export]
macro_rules! export_mgmt_driver {
    ($ty:ty) => {
        $crate::export_mgmt_driver!($ty, <$ty as ::core::default::Default>::default);
    };
    ($ty:ty, $ctor:expr) => {
        /// The plugin entry point (generated by `export_mgmt_driver!`).
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn vnfm_mgmt_driver_v1() -> *const $crate::abi::PluginHeader {
            fn driver() -> &'static $ty {
                static DRIVER: ::std::sync::OnceLock<$ty> = ::std::sync::OnceLock::new();
                DRIVER.get_or_init(|| ($ctor)())
            }
            unsafe extern "C" fn call(
                host: *const $crate::abi::HostApi,
                request: *const u8,
                len: usize,
            ) -> $crate::abi::RawBuf {
                // SAFETY: the host passes a request buffer and services valid for the call.
                unsafe {
                    $crate::export::call::<$ty>(
                        &driver,
                        host,
                        request,
                        len,
                        env!("CARGO_PKG_NAME"),
                        env!("CARGO_PKG_VERSION"),
                    )
                }
            }
            static HEADER: $crate::abi::PluginHeader = $crate::abi::PluginHeader {
                abi_version: $crate::abi::ABI_VERSION,
                sdk_version: $crate::abi::RawStr::from_static($crate::abi::SDK_VERSION),
                name: $crate::abi::RawStr::from_static(env!("CARGO_PKG_NAME")),
                version: $crate::abi::RawStr::from_static(env!("CARGO_PKG_VERSION")),
                call,
                free: $crate::export::free,
            };
            &HEADER
        }
    };
}
