//! Builds the tests that read the corpus (Tacker's sample packages) or Tacker's source
//! distribution to run when they are there,
//! ignored with the reason otherwise (see the `vnfm-test-env` crate).
fn main() {
    vnfm_test_env::build_script(&["corpus", "tacker_source"]);
}
