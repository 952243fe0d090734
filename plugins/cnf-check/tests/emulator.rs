//! The `instantiate_end` hook run as the VNFM runs it (SDK `HookHarness`) against the
//! emulated Kubernetes API server (`vnfm-kube-emulator`, real HTTP on loopback): it passes
//! once the Service exists and the Deployment is available, and fails with a transient error
//! (so a retry checks again) while either is missing or not ready.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vnfm_kube_emulator::{Emulator, EmulatorConfig};
use vnfm_plugin_cnf_check::CnfCheck;
use vnfm_plugin_sdk::VimConnection;
use vnfm_plugin_sdk::protocol::{ErrorKind, WireError};
use vnfm_plugin_sdk::testing::HookHarness;

const NS: &str = "web-cnf";

/// The emulator on a runtime of its own (the hook blocks the test thread on the plugin's
/// runtime, so the server must not depend on it).
struct Cluster {
    emu: Emulator,
    _rt: tokio::runtime::Runtime,
}

impl Cluster {
    fn start() -> Cluster {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let emu = rt
            .block_on(Emulator::start(EmulatorConfig::default()))
            .unwrap();
        Cluster { emu, _rt: rt }
    }

    fn vim(&self, token: &str) -> VimConnection {
        serde_json::from_value(json!({
            "vimId": "vnf-a-cluster",
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": self.emu.url()},
            "accessInfo": {"bearer_token": token}
        }))
        .unwrap()
    }

    fn put(&self, obj: Value) {
        self.emu.put_object(obj).unwrap();
    }

    fn namespace(&self, ns: &str) {
        self.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }

    fn service(&self, ns: &str) {
        self.put(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}
        }));
    }

    fn deployment(&self, ns: &str) {
        self.put(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "web", "image": "nginx:1.27-alpine"}]}}
            }
        }));
    }

    /// Waits until the emulated controller reports the Deployment `Available` (`want`).
    fn wait_available(&self, ns: &str, want: bool) {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let available = self
                .emu
                .object("apps/v1", "Deployment", Some(ns), "web")
                .and_then(|d| {
                    d.pointer("/status/conditions")?
                        .as_array()?
                        .iter()
                        .find(|c| c["type"] == "Available")
                        .map(|c| c["status"] == "True")
                })
                .unwrap_or(false);
            if available == want {
                return;
            }
            assert!(
                Instant::now() < until,
                "the emulator never reported Deployment {ns}/web Available={want}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn harness(vim: VimConnection, params: Value) -> HookHarness<CnfCheck> {
    let inputs = json!({"service": "web", "deployment": "web"});
    HookHarness::new(CnfCheck)
        .instance(json!({"id": "6C1E-inst"}))
        .request(json!({"flavourId": "simple", "additionalParams": params}))
        .inputs(inputs.as_object().unwrap().clone())
        .vim("k8s", vim)
}

fn fails(h: &HookHarness<CnfCheck>) -> WireError {
    h.run("instantiate_end").expect_err("the check must fail")
}

#[test]
fn passes_when_the_service_exists_and_the_deployment_is_available() {
    let c = Cluster::start();
    c.namespace(NS);
    c.service(NS);
    c.deployment(NS);
    c.wait_available(NS, true);
    let h = harness(c.vim(&c.emu.token()), json!({"namespace": NS}));
    let out = h.run("instantiate_end").expect("the check passes");
    let seen = &out.metadata.expect("a record")["cnfCheck"];
    assert_eq!(seen["namespace"], NS);
    assert_eq!(seen["service"], "web");
    assert_eq!(seen["deployment"], "web");
    assert_eq!(seen["availableReplicas"], 1);
    // It only reads: two GETs, nothing written.
    let verbs: Vec<String> = c
        .emu
        .log()
        .iter()
        .filter(|e| e.path.contains("/namespaces/web-cnf/"))
        .map(|e| format!("{} {}", e.verb, e.object()))
        .collect();
    assert_eq!(
        verbs,
        ["get Service/web-cnf/web", "get Deployment/web-cnf/web"]
    );
    assert!(
        h.logs().iter().any(|l| l.message.contains("is available")),
        "{:?}",
        h.logs()
    );
}

#[test]
fn fails_transiently_when_the_service_is_missing() {
    let c = Cluster::start();
    c.namespace(NS);
    c.deployment(NS);
    c.wait_available(NS, true);
    let h = harness(c.vim(&c.emu.token()), json!({"namespace": NS}));
    let err = fails(&h);
    assert_eq!(err.kind, ErrorKind::Transient, "{}", err.message);
    assert!(
        err.message.contains("Service web-cnf/web does not exist"),
        "{}",
        err.message
    );
    // The Service appears (a retry of the operation): the check passes.
    c.service(NS);
    h.run("instantiate_end").expect("passes on retry");
}

#[test]
fn fails_transiently_while_the_deployment_is_not_available() {
    let c = Cluster::start();
    c.emu.never_ready("Deployment", "web");
    c.namespace(NS);
    c.service(NS);
    c.deployment(NS);
    // Wait until the controller has looked at it, so the condition is there and False.
    c.wait_available(NS, false);
    let until = Instant::now() + Duration::from_secs(20);
    while c
        .emu
        .object("apps/v1", "Deployment", Some(NS), "web")
        .and_then(|d| d.pointer("/status/conditions").cloned())
        .is_none()
    {
        assert!(
            Instant::now() < until,
            "no status from the emulated controller"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let h = harness(c.vim(&c.emu.token()), json!({"namespace": NS}));
    let err = fails(&h);
    assert_eq!(err.kind, ErrorKind::Transient, "{}", err.message);
    assert!(
        err.message
            .contains("Deployment web-cnf/web is not available")
            && err.message.contains("0 of 1 replicas available")
            && err.message.contains("Available=False"),
        "{}",
        err.message
    );
    c.emu.allow_ready("Deployment", "web");
    c.wait_available(NS, true);
    h.run("instantiate_end").expect("passes once available");
}

#[test]
fn a_missing_deployment_is_transient_too() {
    let c = Cluster::start();
    c.namespace(NS);
    c.service(NS);
    let err = fails(&harness(c.vim(&c.emu.token()), json!({"namespace": NS})));
    assert_eq!(err.kind, ErrorKind::Transient);
    assert!(
        err.message
            .contains("Deployment web-cnf/web does not exist"),
        "{}",
        err.message
    );
}

#[test]
fn without_a_namespace_parameter_it_looks_where_the_driver_deploys() {
    let c = Cluster::start();
    let ns = "vnf-6c1e-inst";
    c.namespace(ns);
    c.service(ns);
    c.deployment(ns);
    c.wait_available(ns, true);
    let out = harness(c.vim(&c.emu.token()), json!({}))
        .run("instantiate_end")
        .expect("found in the default namespace");
    assert_eq!(out.metadata.unwrap()["cnfCheck"]["namespace"], ns);
}

#[test]
fn a_refused_token_is_permanent_and_not_shown() {
    let c = Cluster::start();
    c.namespace(NS);
    c.service(NS);
    let token = "not-a-valid-token-5f1e";
    let err = fails(&harness(c.vim(token), json!({"namespace": NS})));
    assert_eq!(err.kind, ErrorKind::Permanent, "{}", err.message);
    assert!(
        err.message
            .contains("refused the credentials of VIM connection `k8s` (401)"),
        "{}",
        err.message
    );
    assert!(!err.message.contains(token));
}

#[test]
fn an_unreachable_api_server_is_transient() {
    let c = Cluster::start();
    let url = c.emu.url();
    c.emu.stop();
    drop(c);
    let vim: VimConnection = serde_json::from_value(json!({
        "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": {"endpoint": url},
        "accessInfo": {"bearer_token": "t"}
    }))
    .unwrap();
    let err = fails(&harness(vim, json!({"namespace": NS})));
    assert_eq!(err.kind, ErrorKind::Transient, "{}", err.message);
    assert!(err.message.contains("cannot be reached"), "{}", err.message);
}

#[test]
fn an_instance_without_a_kubernetes_vim_is_invalid_input() {
    let vim: VimConnection = serde_json::from_value(json!({
        "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": "http://127.0.0.1:1/v3"}
    }))
    .unwrap();
    let h = HookHarness::new(CnfCheck)
        .instance(json!({"id": "i"}))
        .vim("vim1", vim);
    let err = fails(&h);
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message
            .contains("vim1 (ETSINFV.OPENSTACK_KEYSTONE.V_3)"),
        "{}",
        err.message
    );
}

#[test]
fn a_ca_certificate_that_is_not_pem_is_invalid_input() {
    let vim: VimConnection = serde_json::from_value(json!({
        "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": {"endpoint": "https://127.0.0.1:1", "ssl_ca_cert": "not a certificate"},
        "accessInfo": {"bearer_token": "t"}
    }))
    .unwrap();
    let err = fails(&harness(vim, json!({"namespace": NS})));
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{}", err.message);
    assert!(
        err.message
            .contains("interfaceInfo.ssl_ca_cert of VIM connection `k8s`"),
        "{}",
        err.message
    );
}
