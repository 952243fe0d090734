//! Turns the tests against a real Kubernetes control plane on when one is there at build time
//! (`scripts/test-env/kubernetes.sh start` prints the variables; `scripts/test.sh` starts it):
//! without `KUBECONFIG` they are compiled as `#[ignore = "needs ..."]`, and so are those that
//! need the test environment's simulated pods (KWOK stages: a readiness delay, pods that never
//! become Ready, crash-loop or cannot pull their image) without `VNFM_TEST_KUBE_READY_DELAY_MS`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(vnfm_test_kube)");
    println!("cargo::rustc-check-cfg=cfg(vnfm_test_kwok)");
    println!("cargo::rerun-if-env-changed=KUBECONFIG");
    println!("cargo::rerun-if-env-changed=VNFM_TEST_KUBE_READY_DELAY_MS");
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("KUBECONFIG") {
        println!("cargo::rustc-cfg=vnfm_test_kube");
        if set("VNFM_TEST_KUBE_READY_DELAY_MS") {
            println!("cargo::rustc-cfg=vnfm_test_kwok");
        }
    }
}
