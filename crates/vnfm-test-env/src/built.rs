//! The workspace's plugin libraries and binaries that tests load or run as their own
//! processes ([`built`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::checkout;

/// The variable naming a directory that holds the workspace's plugin libraries and binaries
/// built already, under their usual names (`libvnfm_plugin_hello.so`, `vnfm`, ...);
/// `scripts/test-programs.py` sets it to what the build of the test programs produced.
pub const BUILT_DIR_VAR: &str = "VNFM_TEST_BUILT_DIR";

/// The directory holding the libraries and binaries of the workspace's `packages`. With
/// [`BUILT_DIR_VAR`] set, that directory, as it is: a `cargo build` of a few packages
/// resolves the dependencies' features for those packages only, so it would build much of
/// the workspace again, differently from the test build that made them. Without it, the
/// test's own cargo builds them (once per test process and set of packages; a no-op when they
/// are fresh) in the test's target directory and profile, and answers that profile's
/// directory.
pub fn built(packages: &[&str]) -> PathBuf {
    if let Some(dir) = std::env::var_os(BUILT_DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    static BUILT: Mutex<BTreeSet<Vec<String>>> = Mutex::new(BTreeSet::new());
    let profile = profile_dir();
    let key: Vec<String> = packages.iter().map(|p| p.to_string()).collect();
    let mut done = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(&key) {
        return profile;
    }
    let target = profile.parent().expect("target/<profile>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--target-dir"])
        .arg(target)
        .current_dir(checkout());
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    for p in packages {
        cmd.arg("-p").arg(p);
    }
    let status = cmd.status().expect("cargo runs");
    assert!(status.success(), "building {packages:?} failed");
    done.insert(key);
    profile
}

/// `target/<profile>` of the running test program (`target/<profile>/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test program path");
    exe.parent()
        .and_then(Path::parent)
        .expect("a test program is at target/<profile>/deps/<test>")
        .to_path_buf()
}
