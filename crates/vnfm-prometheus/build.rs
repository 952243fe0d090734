//! Turns the tests against real Prometheus and Alertmanager on when the test environment is
//! there at build time (`scripts/test-env/prometheus.sh start` prints the variables): without
//! `VNFM_TEST_PROMETHEUS_URL` and `VNFM_TEST_ALERTMANAGER_URL` they are compiled as
//! `#[ignore = "needs ..."]`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(vnfm_test_prometheus)");
    println!("cargo::rerun-if-env-changed=VNFM_TEST_PROMETHEUS_URL");
    println!("cargo::rerun-if-env-changed=VNFM_TEST_ALERTMANAGER_URL");
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("VNFM_TEST_PROMETHEUS_URL") && set("VNFM_TEST_ALERTMANAGER_URL") {
        println!("cargo::rustc-cfg=vnfm_test_prometheus");
    }
}
