//! Builds the tests that read the corpus (Tacker's sample packages, the ETSI API test suites)
//! to run when it is there, ignored with the reason otherwise (see the `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&["corpus"]);
}
