//! Builds the tests that need a service (keystone, openstack_cli, otel_collector, kubernetes,
//! openstack, corpus, postgres, tacker_source, keycloak)
//! to run when it is there, ignored with the reason otherwise (see the `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&[
        "keystone",
        "openstack_cli",
        "otel_collector",
        "kubernetes",
        "openstack",
        "corpus",
        "postgres",
        "tacker_source",
        "keycloak",
    ]);
}
