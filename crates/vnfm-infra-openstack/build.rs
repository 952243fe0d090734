//! Finds Tacker's sample packages (`shared/corpus/tacker` in the nearest directory above the
//! crate that has it) for the tests: `VNFM_TACKER_CORPUS` is their path, and the cfg
//! `vnfm_tacker_corpus` is set when they are there (the tests that run them on the test cloud
//! are ignored, with the reason, without them). The tests on the test cloud are built to run
//! when it is there, ignored with the reason otherwise (see the `vnfm-test-env` crate).
fn main() {
    vnfm_test_env::build_script(&["openstack"]);
    println!("cargo::rustc-check-cfg=cfg(vnfm_tacker_corpus)");
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = manifest
        .ancestors()
        .map(|a| a.join("shared/corpus/tacker"))
        .find(|c| c.is_dir());
    let corpus = found
        .clone()
        .unwrap_or_else(|| manifest.join("../../../shared/corpus/tacker"));
    println!("cargo::rustc-env=VNFM_TACKER_CORPUS={}", corpus.display());
    println!("cargo::rerun-if-changed={}", corpus.display());
    if found.is_some() {
        println!("cargo::rustc-cfg=vnfm_tacker_corpus");
    }
}
