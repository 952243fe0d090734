//! Bad input and a misbehaving cluster: each failure names what went wrong, and a rollback
//! leaves nothing of the instance behind. On the real control plane of `KUBECONFIG` with the
//! test environment's simulated pods (`scripts/test-env/kubernetes.sh`; built ignored without
//! them, see `build.rs`), but for basic authentication, which kube-apiserver no longer offers.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::real::{Kube, Request, in_namespace};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResolvedVim, ResourceTarget};
use vnfm_types::LcmOperationType as Op;

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ${IMAGE}
";

const CONFIG: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: \"$MODE\"
  literal: \"$$HOME\"
";

fn vnfd() -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-web", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Web", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.Web",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "VDU1", "name": "web", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                      "minInstances": 1, "maxInstances": 3, "initialDelta": 1}],
            "scalingAspects": [{"id": "web_scale", "maxScaleLevel": 2, "stepDeltas": ["d1"],
                                "vduDeltas": {"VDU1": {"d1": 1}}}]
        }]
    }))
    .expect("vnfd")
}

fn files() -> Arc<MemArtifacts> {
    Arc::new(
        MemArtifacts::new()
            .with("Files/config.yaml", CONFIG)
            .with("Files/web.yaml", DEPLOYMENT),
    )
}

fn step() -> InfraStep {
    InfraStep::Instantiate {
        target: ResourceTarget {
            flavour_id: "simple".into(),
            vdu_instances: [("VDU1".to_string(), 2)].into(),
            ..Default::default()
        },
    }
}

/// The instantiate request in namespace `ns`, with `extra` additional parameters.
fn params(ns: &str, extra: Value) -> Value {
    let mut p = json!({
        "lcm-kubernetes-def-files": ["Files/config.yaml", "Files/web.yaml"],
        "namespace": ns,
        "IMAGE": "nginx:1.25",
        "MODE": "fast",
        // Simulated pods take a while to become Ready, a namespace seconds to be deleted.
        "readinessTimeoutSeconds": 60
    });
    if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"flavourId": "simple", "additionalParams": p})
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placeholders_are_substituted_with_types_and_escapes() {
    in_namespace("fail-ok", &[], |kube, ns| async move {
        let mut call = Call::new(vnfd(), files(), kube.vim.clone(), &ns);
        let out = call
            .run(&driver(), Op::Instantiate, step(), params(&ns, json!({})))
            .await
            .expect("instantiate");
        let cm = kube
            .object("v1", "ConfigMap", Some(&ns), "settings")
            .await
            .expect("config map");
        assert_eq!(cm["data"], json!({"mode": "fast", "literal": "$HOME"}));
        let dep = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("deployment");
        assert_eq!(
            dep["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.25"
        );
        assert_eq!(dep["spec"]["replicas"], 2);
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
        // Server-side apply with the driver's field manager.
        let writes: Vec<Request> = Kube::requests(&ns)
            .into_iter()
            .filter(|r| matches!(r.verb.as_str(), "create" | "update" | "patch") && r.code < 300)
            .collect();
        assert!(
            !writes.is_empty()
                && writes
                    .iter()
                    .all(|r| r.apply && r.field_manager.as_deref() == Some("vnfm")),
            "{writes:#?}"
        );
        // The same step again converges without error (idempotent).
        let again = call
            .run(&driver(), Op::Instantiate, step(), params(&ns, json!({})))
            .await
            .expect("instantiate again");
        assert_eq!(again.resources.vnfc_resource_info.len(), 2);
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_placeholder_fails_before_anything_is_applied() {
    in_namespace("fail-ph", &[], |kube, ns| async move {
        let mut call = Call::new(vnfd(), files(), kube.vim.clone(), &ns);
        let mut req = params(&ns, json!({}));
        req["additionalParams"]
            .as_object_mut()
            .expect("params")
            .remove("IMAGE");
        let err = call
            .run(&driver(), Op::Instantiate, step(), req)
            .await
            .expect_err("unknown placeholder");
        assert_eq!(err.kind(), "invalidInput");
        assert!(
            err.to_string().contains("Files/web.yaml") && err.to_string().contains("`$IMAGE`"),
            "{err}"
        );
        assert_eq!(Kube::writes(&ns), Vec::<String>::new());
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_object_with_the_same_name_is_not_taken_over() {
    in_namespace("fail-foreign", &[], |kube, ns| async move {
        kube.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await;
        kube.create(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": ns, "labels": {"owner": "someone-else"}},
        "data": {"mode": "theirs"}}))
            .await;
        let mut call = Call::new(vnfd(), files(), kube.vim.clone(), &ns);
        let err = call
            .run(&driver(), Op::Instantiate, step(), params(&ns, json!({})))
            .await
            .expect_err("collision");
        assert_eq!(err.kind(), "permanent");
        assert!(
            err.to_string()
                .contains(&format!("ConfigMap {ns}/settings"))
                && err.to_string().contains("not taken over"),
            "{err}"
        );
        assert!(
            !Kube::requests(&ns).iter().any(|r| r.apply),
            "nothing applied: {:#?}",
            Kube::requests(&ns)
        );
        let cm = kube
            .object("v1", "ConfigMap", Some(&ns), "settings")
            .await
            .expect("still there");
        assert_eq!(cm["data"]["mode"], "theirs");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_server_is_a_transient_failure() {
    crypto();
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let vim = ResolvedVim::new(
        "vim1",
        serde_json::from_value(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": format!("http://127.0.0.1:{port}")},
            "accessInfo": {"bearer_token": "secret-token-value"}
        }))
        .expect("vim"),
    );
    let mut call = Call::new(vnfd(), files(), vim, "inst-down");
    let err = call
        .run(
            &driver(),
            Op::Instantiate,
            step(),
            params("web-ns", json!({})),
        )
        .await
        .expect_err("unreachable");
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!err.to_string().contains("secret-token-value"));
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused_with_a_precise_error() {
    in_namespace("fail-401", &[], |kube, ns| async move {
        // A token the API server does not know (as when it expired or was revoked).
        let token = "0123456789abcdef-expired";
        let vim = kube.vim_with_access(json!({"bearer_token": token}));
        let mut call = Call::new(vnfd(), files(), vim, &ns);
        let err = call
            .run(&driver(), Op::Instantiate, step(), params(&ns, json!({})))
            .await
            .expect_err("401");
        assert_eq!(err.kind(), "permanent");
        assert!(
            err.to_string().contains("401 Unauthorized") && err.to_string().contains("`vim1`"),
            "{err}"
        );
        assert!(!err.to_string().contains(token));
    })
    .await;
}

/// On the emulator: kube-apiserver has not offered basic authentication since 1.19, but API
/// servers and proxies in front of clusters still do, and the VIM connection may name it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_authentication_works_where_a_token_does_not() {
    let emu = emulator().await;
    let token = emu.token();
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-basic");
    emu.revoke_token(&token);
    call.run(
        &driver(),
        Op::Instantiate,
        step(),
        params("web-ns", json!({})),
    )
    .await
    .expect_err("401");
    let basic = ResolvedVim::new(
        "vim1",
        serde_json::from_value(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": emu.url()},
            "accessInfo": {"username": "admin", "password": "admin-password"}
        }))
        .expect("vim"),
    );
    call.vims = vec![basic];
    call.run(
        &driver(),
        Op::Instantiate,
        step(),
        params("web-ns", json!({})),
    )
    .await
    .expect("basic auth");
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_that_never_becomes_ready_times_out_and_rolls_back_cleanly() {
    // Without a namespace in the request the driver makes `vnf-<instance id>`.
    in_namespace("vnf-stuck", &[], |kube, ns| async move {
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let mut call = Call::new(vnfd(), files(), kube.vim.clone(), &id);
        // A short readiness budget: the rollback's wait for the namespace to go (the namespace
        // controller takes seconds to empty it) has a budget of its own.
        let broken = json!({"IMAGE": Kube::failing_image(), "namespace": Value::Null,
        "readinessTimeoutSeconds": 5});
        let err = call
            .run(
                &driver(),
                Op::Instantiate,
                step(),
                params(&ns, broken.clone()),
            )
            .await
            .expect_err("never ready");
        assert_eq!(err.kind(), "timeout");
        let text = err.to_string();
        assert!(text.contains(&format!("Deployment {ns}/web")), "{text}");
        assert!(text.contains("0/2 replicas ready"), "{text}");
        assert!(text.contains("Available=False"), "{text}");
        assert!(text.contains("ImagePullBackOff"), "{text}");
        assert!(
            !kube
                .labelled("vnfm.io/vnf-instance-id", &id)
                .await
                .is_empty()
        );
        // Nothing was recorded (the step failed); the rollback finds the objects from the request.
        assert!(call.state.is_null());
        let req = params(&ns, broken);
        call.run(
            &driver(),
            Op::Instantiate,
            InfraStep::RollbackInstantiate,
            req,
        )
        .await
        .expect("rollback");
        let leaked = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(leaked.is_empty(), "leaked: {leaked:?}");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_of_an_hpa_scaled_workload_is_refused() {
    in_namespace("fail-hpa", &[], |kube, ns| async move {
        let hpa = "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 4
";
        let files = Arc::new(
            MemArtifacts::new()
                .with("Files/web.yaml", DEPLOYMENT)
                .with("Files/hpa.yaml", hpa),
        );
        let mut call = Call::new(vnfd(), files, kube.vim.clone(), &ns);
        let mut req = params(&ns, json!({}));
        req["additionalParams"]["lcm-kubernetes-def-files"] =
            json!(["Files/web.yaml", "Files/hpa.yaml"]);
        call.run(&driver(), Op::Instantiate, step(), req)
            .await
            .expect("instantiate");
        let dep = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("deployment");
        // Replicas are left to the HPA: the driver's apply does not own them (the controller
        // manager owns `status.replicas`).
        let owned: Vec<&Value> = dep["metadata"]["managedFields"]
            .as_array()
            .expect("managed fields")
            .iter()
            .filter(|m| m["manager"] == "vnfm")
            .collect();
        assert_eq!(owned.len(), 1, "{owned:?}");
        let owned = owned[0].to_string();
        assert!(!owned.contains("f:replicas"), "{owned}");
        let target = |n: u32| ResourceTarget {
            flavour_id: "simple".into(),
            vdu_instances: [("VDU1".to_string(), n)].into(),
            ..Default::default()
        };
        let err = call
            .run(
                &driver(),
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: "web_scale".into(),
                    scale_type: vnfm_types::ScaleType::ScaleOut,
                    steps: 1,
                    from: target(2),
                    target: target(3),
                },
                json!({"type": "SCALE_OUT", "aspectId": "web_scale"}),
            )
            .await
            .expect_err("hpa");
        assert!(
            err.to_string().contains("HorizontalPodAutoscaler web-hpa"),
            "{err}"
        );
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_wait() {
    in_namespace("fail-cancel", &[], |kube, ns| async move {
        let call = Call::new(vnfd(), files(), kube.vim.clone(), &ns);
        let mut req = call.request(
            Op::Instantiate,
            step(),
            params(
                &ns,
                json!({"readinessTimeoutSeconds": 30, "IMAGE": Kube::failing_image()}),
            ),
        );
        req.control = vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(60));
        let flag = req.control.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            flag.cancel();
        });
        let err = vnfm_driver_api::execute(&driver(), &req)
            .await
            .expect_err("cancelled");
        assert_eq!(err.kind(), "cancelled", "{err}");
    })
    .await;
}

/// What an observation of `call`'s instance reports: `(condition, pod, VNFC)` per condition.
async fn observed(
    d: &vnfm_infra_kubernetes::KubernetesDriver,
    call: &Call,
    ns: &str,
) -> Vec<(String, String, Option<String>)> {
    let req = vnfm_driver_api::ObserveRequest {
        instance: call.instance.clone(),
        vims: call.vims.clone(),
        driver_state: call.state.clone(),
        control: vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(20)),
    };
    let mut out: Vec<_> = vnfm_driver_api::InfraDriver::observe(d, &req)
        .await
        .expect("observe")
        .into_iter()
        .map(|c| {
            assert_eq!(c.resource.container_namespace.as_deref(), Some(ns));
            assert_eq!(c.resource.vim_connection_id.as_deref(), Some("vim1"));
            (c.condition, c.resource.resource_id, c.vnfc_resource_id)
        })
        .collect();
    out.sort();
    out
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_pod_is_observed_on_its_vnfc_until_healed() {
    in_namespace("fail-watch", &[], |kube, ns| async move {
        let d = driver();
        let mut call = Call::new(vnfd(), files(), kube.vim.clone(), &ns);
        let out = call
            .run(&d, Op::Instantiate, step(), params(&ns, json!({})))
            .await
            .expect("instantiate");
        assert_eq!(observed(&d, &call, &ns).await, []);

        // The simulated pod's containers start crashing (its replacement, without the label, runs).
        let pod = out.resources.vnfc_resource_info[0].id.clone();
        kube.label_pod(&ns, &pod, support::real::CRASH_LOOP, "true")
            .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let found = loop {
            let found = observed(&d, &call, &ns).await;
            if !found.is_empty() || tokio::time::Instant::now() > deadline {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            found,
            [(
                "CrashLoopBackOff".to_string(),
                pod.clone(),
                Some(pod.clone())
            )]
        );

        // Healing the VNFC replaces the pod: nothing is wrong any more.
        let heal = InfraStep::Heal {
            scope: vnfm_driver_api::HealScope::Vnfcs {
                vnfcs: vec![vnfm_driver_api::HealVnfc {
                    vnfc_info_id: None,
                    vnfc_resource_id: pod.clone(),
                    vdu_id: "VDU1".into(),
                }],
            },
        };
        let out = call
            .run(&d, Op::Heal, heal, json!({"vnfcInstanceId": [pod.clone()]}))
            .await
            .expect("heal");
        assert!(out.resources.vnfc_resource_info.iter().all(|v| v.id != pod));
        assert_eq!(observed(&d, &call, &ns).await, []);
    })
    .await;
}

/// Credentials that may not watch in all namespaces (a user who is `admin` of one namespace
/// only): the driver's shared watches are refused cluster-wide (403) and narrow to the
/// namespace; the wait, the infrastructure watch's look and the terminate work as with an
/// administrator's token.
#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_one_namespace_waits_and_observes_through_watches_of_that_namespace() {
    let kube = Kube::get();
    let ns = std::env::var("VNFM_TEST_KUBE_NS").expect("VNFM_TEST_KUBE_NS");
    let token_file = std::env::var("VNFM_TEST_KUBE_NS_TOKEN_FILE").expect("token file");
    let token = std::fs::read_to_string(&token_file).expect("token");
    let vim = kube.vim_with_access(json!({"bearer_token": token.trim()}));
    let id = format!("scoped-{}", std::process::id());
    let mut call = Call::new(vnfd(), files(), vim, &id);
    let d = driver();
    let out = call
        .run(&d, Op::Instantiate, step(), params(&ns, json!({})))
        .await
        .expect("instantiate with the namespace's token");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    let selector = format!("vnfm.io/vnf-instance-id={id}");
    let pods = kube.list("v1", "Pod", Some(&ns), &selector).await;
    assert_eq!(pods.len(), 2, "{pods:?}");
    for p in &pods {
        let ready = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(
            ready,
            "instantiate completed while {} was not Ready",
            p["metadata"]["name"]
        );
    }
    assert_eq!(observed(&d, &call, &ns).await, Vec::new());
    call.run(
        &d,
        Op::Terminate,
        InfraStep::Terminate {
            termination_type: vnfm_types::TerminationType::Forceful,
            graceful_timeout_seconds: None,
        },
        json!({"terminationType": "FORCEFUL"}),
    )
    .await
    .expect("terminate with the namespace's token");
    assert!(
        kube.list("v1", "Pod", Some(&ns), &selector)
            .await
            .is_empty()
    );
    assert!(
        kube.list("apps/v1", "Deployment", Some(&ns), &selector)
            .await
            .is_empty()
    );
}
