//! Finds the in-tree plugin libraries ([`vnfm_test_env::built`]) and makes fake ones.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The built library of plugin `name` (`noop`, `hello`, `probe`, `k8s_cluster`).
pub fn library(name: &str) -> PathBuf {
    let dir = vnfm_test_env::built(&[
        "vnfm-plugin-noop",
        "vnfm-plugin-hello",
        "vnfm-plugin-probe",
        "vnfm-plugin-k8s-cluster",
    ]);
    let p = dir.join(format!("libvnfm_plugin_{name}.so"));
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// Hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).expect("library readable"),
    ))
}

/// The runner binary built for these tests.
pub fn runner() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vnfm-plugin-runner"))
}

/// Source of a fake plugin library, compiled with `--cfg abi1` (a library built with the SDK
/// of ABI version 1), `--cfg abi3` (a library of a future ABI version) or `--cfg sdk9` (ABI 2,
/// built with SDK 9.0.0, answering the handshake).
const FAKE: &str = r##"
#![allow(unsafe_code, dead_code)]
#[repr(C)]
pub struct RawStr { ptr: *const u8, len: usize }
#[repr(C)]
pub struct RawBuf { ptr: *mut u8, len: usize }
#[repr(C)]
pub struct Header {
    abi_version: u32,
    sdk_version: RawStr,
    name: RawStr,
    version: RawStr,
    call: unsafe extern "C" fn(*const u8, *const u8, usize) -> RawBuf,
    free: unsafe extern "C" fn(RawBuf),
}
// SAFETY: the header is never written after it is built and its pointers point into static
// strings and functions, so sharing it between threads is sound.
unsafe impl Sync for Header {}
const HELLO: &str = r#"{"type":"hello","abiVersion":2,"sdkVersion":"9.0.0","name":"sdk9","version":"1.0.0"}"#;
unsafe extern "C" fn call(_: *const u8, _: *const u8, _: usize) -> RawBuf {
    // Static bytes: `free` below does nothing.
    RawBuf { ptr: HELLO.as_ptr() as *mut u8, len: HELLO.len() }
}
unsafe extern "C" fn free(_: RawBuf) {}
const fn s(v: &'static str) -> RawStr { RawStr { ptr: v.as_ptr(), len: v.len() } }
#[cfg(abi1)]
static HEADER: Header = Header { abi_version: 1, sdk_version: s("0.1.0"), name: s("old"), version: s("1.0.0"), call, free };
#[cfg(abi3)]
static HEADER: Header = Header { abi_version: 3, sdk_version: s("3.0.0"), name: s("future"), version: s("1.0.0"), call, free };
#[cfg(sdk9)]
static HEADER: Header = Header { abi_version: 2, sdk_version: s("9.0.0"), name: s("sdk9"), version: s("1.0.0"), call, free };
#[unsafe(no_mangle)]
pub extern "C" fn vnfm_mgmt_driver_v1() -> *const Header { &HEADER }
"##;

/// Compiles the fake library for `cfg` (`abi1`, `abi3` or `sdk9`) into `dir`.
pub fn fake_library(dir: &Path, cfg: &str) -> PathBuf {
    let src = dir.join("fake.rs");
    std::fs::write(&src, FAKE).expect("write fake source");
    let out = dir.join(format!("libfake_{cfg}.so"));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let status = Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "cdylib",
            "--cfg",
            cfg,
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("rustc runs");
    assert!(status.success(), "compiling the fake library failed");
    out
}
