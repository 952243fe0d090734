//! Builds the tests that need the test cloud or the corpus (Tacker's sample packages) to run
//! when they are there, ignored with the reason otherwise (see the `vnfm-test-env` crate).
fn main() {
    vnfm_test_env::build_script(&["openstack", "corpus"]);
}
