//! Finds Tacker's sample packages for the tests (`VNFM_TACKER_CORPUS`, the cfg
//! `vnfm_tacker_corpus`: the tests that run them on the test cloud are ignored, with the
//! reason, without them). The tests on the test cloud are built to run when it is there,
//! ignored with the reason otherwise (see the `vnfm-test-env` crate).
fn main() {
    vnfm_test_env::build_script(&["openstack"]);
    vnfm_test_env::tacker_corpus_build_script();
}
