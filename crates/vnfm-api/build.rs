//! Builds the tests that need a service (PostgreSQL, Keystone, Prometheus, the corpus, Tacker's
//! source distribution, Keycloak) to run when it is there, ignored with the reason otherwise
//! (see the `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&[
        "postgres",
        "keystone",
        "prometheus",
        "corpus",
        "tacker_source",
        "keycloak",
    ]);
}
