//! Builds the tests that need Keycloak (the authorization server whose tokens the outgoing
//! calls carry) to run when it is there, ignored with the reason otherwise (see the
//! `vnfm-test-env` crate).

fn main() {
    vnfm_test_env::build_script(&["keycloak"]);
}
