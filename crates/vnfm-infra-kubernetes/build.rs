//! The tests against a Kubernetes cluster are built to run when one is there at build time
//! (`#[vnfm_test_env::needs(kubeconfig)]`: any cluster of `KUBECONFIG`; `needs(kwok)`: the test
//! environment's control plane with KWOK's simulated pods, printed by
//! `scripts/test-env/kubernetes.sh start`), and so are those that need the Helm SDK library
//! (`needs(helm)`) or read the corpus of Tacker's sample packages (`needs(corpus)`); otherwise they are listed ignored with the reason, and under `CI` they
//! are built to run and fail when the service is missing (see `vnfm-test-env`).

fn main() {
    vnfm_test_env::build_script(&["kubeconfig", "kwok", "helm", "corpus"]);
}
