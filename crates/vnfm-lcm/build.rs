//! Builds the tests that need a service (PostgreSQL, the corpus, the OpenStack client's Python)
//! to run when it is there, ignored with the reason otherwise (see the `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&["postgres", "corpus", "openstack_cli"]);
}
