//! Builds the tests that need a service (Tacker's source distribution) to run when it is
//! there, ignored with the reason otherwise (see the `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&["tacker_source"]);
}
