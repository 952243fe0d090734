//! Link options of the `vnfm` program (the package commands and the hand-over to the other two
//! programs), which runs as a one-shot command:
//!
//! - a fixed-address executable: it starts without the dynamic loader relocating its 15,000
//!   address constants. `vnfm-server` and `vnfm-client`, which talk to the network, stay
//!   position-independent, with address-space layout randomisation;
//! - the functions a package validation runs laid out side by side (`vnfm.order`, written by
//!   `scripts/symbol-order.py`), so that it faults in a third of the program text instead of
//!   most of it. Names the list has and the program lacks are skipped;
//! - the unwinder linked in from GCC's static `libgcc_eh.a` instead of loading `libgcc_s.so.1`:
//!   one shared library fewer to map and bind at every start, and no run of its constructor,
//!   which identifies the CPU with a dozen `cpuid` instructions (each a trap to the hypervisor
//!   on a virtual machine). The standard library asks the linker for `-lgcc_s`; a directory
//!   searched first that holds `libgcc_s.a` (a copy of `libgcc_eh.a`) answers that request with
//!   the static archive. Where the C compiler has no `libgcc_eh.a`, `vnfm` links
//!   `libgcc_s.so.1` as before.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rustc-link-arg-bin=vnfm=-no-pie");
    let order =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("vnfm.order");
    println!("cargo:rerun-if-changed={}", order.display());
    println!(
        "cargo:rustc-link-arg-bin=vnfm=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bin=vnfm=-Wl,--no-warn-symbol-ordering");
    if let Some(dir) = static_unwinder_dir() {
        println!("cargo:rustc-link-arg-bin=vnfm=-L{}", dir.display());
    }
}

/// A directory holding `libgcc_s.a`, a copy of the C compiler's `libgcc_eh.a`; `None` when
/// the compiler has none (or is not GCC-compatible) or the copy cannot be made.
fn static_unwinder_dir() -> Option<PathBuf> {
    let target = std::env::var("TARGET").ok()?;
    if !target.ends_with("-linux-gnu") {
        return None;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    println!("cargo:rerun-if-env-changed=CC");
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    // A compiler that does not know the file prints its bare name back.
    let archive = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if !out.status.success() || !archive.is_absolute() || !archive.is_file() {
        println!(
            "cargo:warning=no libgcc_eh.a: vnfm links libgcc_s.so.1 (one more library to load at start)"
        );
        return None;
    }
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-unwinder");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::copy(&archive, dir.join("libgcc_s.a")).ok()?;
    Some(dir)
}
