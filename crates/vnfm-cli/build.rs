//! Link options of the `vnfm` program (the package commands and the hand-over to the other two
//! programs), which runs as a one-shot command:
//!
//! - a fixed-address executable: it starts without the dynamic loader relocating its 15,000
//!   address constants. `vnfm-server` and `vnfm-client`, which talk to the network, stay
//!   position-independent, with address-space layout randomisation;
//! - the functions a package validation runs laid out side by side (`vnfm.order`, written by
//!   `scripts/symbol-order.py`), so that it faults in a third of the program text instead of
//!   most of it. Names the list has and the program lacks are skipped;
//! - linked statically: the C library and GCC's unwinder (`libgcc_eh.a`) are linked in, so the
//!   program starts without the dynamic loader, which would otherwise map and bind `libc.so.6`
//!   and `libgcc_s.so.1` and run the latter's constructor (a dozen `cpuid` instructions, each a
//!   trap to the hypervisor on a virtual machine). The standard library asks the linker for
//!   `-lgcc_s`, `-lc`, `-lm` and the rest in dynamic mode; a directory searched first that holds
//!   archives of those names (`libgcc_s.a` is a copy of `libgcc_eh.a`, the others link to the C
//!   library's own archives) answers each request with the static archive. A static glibc
//!   cannot load name-service modules or plugins reliably, which `vnfm` never does: it reads
//!   packages and hands every network or plugin command over to `vnfm-server` or
//!   `vnfm-client`, which stay dynamically linked.
//!
//! Where the C compiler has no `libgcc_eh.a`, `vnfm` links `libgcc_s.so.1`; where the C
//! library has no static archives, `vnfm` links `libc.so.6`. Either case is a build warning,
//! not an error: the program is the same, it only starts slower.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The archives a static link of a Rust program with glibc needs, under the names the standard
/// library asks for (`-lc`, `-lm`, ...). Since glibc 2.34 the last four are empty stubs.
const C_LIBRARY_ARCHIVES: [&str; 6] = [
    "libc.a",
    "libm.a",
    "libpthread.a",
    "libdl.a",
    "librt.a",
    "libutil.a",
];

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
    println!("cargo:rerun-if-env-changed=CC");
    let Some(dir) = static_archive_dir() else {
        return;
    };
    println!("cargo:rustc-link-arg-bin=vnfm=-L{}", dir.display());
    if link_c_library_archives(&dir) {
        println!("cargo:rustc-link-arg-bin=vnfm=-static");
        // For the test that checks the program has no dynamic loader.
        println!("cargo:rustc-env=VNFM_LINKED_STATICALLY=1");
    } else {
        println!(
            "cargo:warning=no static C library archives: vnfm links libc.so.6 (the dynamic loader runs at every start)"
        );
    }
}

/// Where the C compiler finds `name`, if it has it.
fn compiler_file(name: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    // A compiler that does not know the file prints its bare name back.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}

/// A directory holding `libgcc_s.a`, a copy of the C compiler's `libgcc_eh.a`; `None` when
/// the target is not GNU/Linux, the compiler has no `libgcc_eh.a` (or is not
/// GCC-compatible), or the copy cannot be made.
fn static_archive_dir() -> Option<PathBuf> {
    if !std::env::var("TARGET").ok()?.ends_with("-linux-gnu") {
        return None;
    }
    let Some(archive) = compiler_file("libgcc_eh.a") else {
        println!(
            "cargo:warning=no libgcc_eh.a: vnfm links libgcc_s.so.1 (one more library to load at start)"
        );
        return None;
    };
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-archives");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::copy(&archive, dir.join("libgcc_s.a")).ok()?;
    Some(dir)
}

/// Links every C library archive into `dir`; false (and `dir` left without any) unless the C
/// compiler has them all, since one library found as a shared object would give a static
/// program a dynamic dependency it cannot load.
fn link_c_library_archives(dir: &Path) -> bool {
    let remove_all = || {
        for name in C_LIBRARY_ARCHIVES {
            let _ = std::fs::remove_file(dir.join(name));
        }
    };
    // Links of an earlier build (or another compiler) go first: `symlink` does not replace.
    remove_all();
    let Some(found) = C_LIBRARY_ARCHIVES
        .iter()
        .map(|name| compiler_file(name))
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    let linked = C_LIBRARY_ARCHIVES
        .iter()
        .zip(&found)
        .all(|(name, path)| std::os::unix::fs::symlink(path, dir.join(name)).is_ok());
    if !linked {
        remove_all();
    }
    linked
}
