//! Bad input and a misbehaving cluster: each failure names what went wrong, and a rollback
//! leaves nothing of the instance behind.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
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

fn params(extra: Value) -> Value {
    let mut p = json!({
        "lcm-kubernetes-def-files": ["Files/config.yaml", "Files/web.yaml"],
        "namespace": "web-ns",
        "IMAGE": "nginx:1.25",
        "MODE": "fast",
        "readinessTimeoutSeconds": 2
    });
    if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"flavourId": "simple", "additionalParams": p})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placeholders_are_substituted_with_types_and_escapes() {
    let emu = emulator().await;
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-ok");
    let out = call
        .run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect("instantiate");
    let cm = emu
        .object("v1", "ConfigMap", Some("web-ns"), "settings")
        .expect("config map");
    assert_eq!(cm["data"], json!({"mode": "fast", "literal": "$HOME"}));
    let dep = emu
        .object("apps/v1", "Deployment", Some("web-ns"), "web")
        .expect("deployment");
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    assert_eq!(dep["spec"]["replicas"], 2);
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    // Server-side apply with the driver's field manager.
    let managers: Vec<String> = emu
        .log()
        .iter()
        .filter(|e| e.verb == "apply")
        .filter_map(|e| e.field_manager.clone())
        .collect();
    assert!(!managers.is_empty() && managers.iter().all(|m| m == "vnfm"));
    // The same step again converges without error (idempotent).
    let again = call
        .run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect("instantiate again");
    assert_eq!(again.resources.vnfc_resource_info.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_placeholder_fails_before_anything_is_applied() {
    let emu = emulator().await;
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-ph");
    let mut req = params(json!({}));
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
    assert!(emu.objects_with_verb("apply").is_empty());
    assert!(emu.objects_with_verb("create").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_object_with_the_same_name_is_not_taken_over() {
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    emu.put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "web-ns", "labels": {"owner": "someone-else"}},
        "data": {"mode": "theirs"}}))
    .expect("foreign config map");
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-foreign");
    let err = call
        .run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect_err("collision");
    assert_eq!(err.kind(), "permanent");
    assert!(
        err.to_string().contains("ConfigMap web-ns/settings")
            && err.to_string().contains("not taken over"),
        "{err}"
    );
    assert!(emu.objects_with_verb("apply").is_empty(), "nothing applied");
    let cm = emu
        .object("v1", "ConfigMap", Some("web-ns"), "settings")
        .expect("still there");
    assert_eq!(cm["data"]["mode"], "theirs");
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
        .run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect_err("unreachable");
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!err.to_string().contains("secret-token-value"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused_with_a_precise_error() {
    let emu = emulator().await;
    let token = emu.token();
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-401");
    emu.revoke_token(&token);
    let err = call
        .run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect_err("401");
    assert_eq!(err.kind(), "permanent");
    assert!(
        err.to_string().contains("401 Unauthorized") && err.to_string().contains("`vim1`"),
        "{err}"
    );
    assert!(!err.to_string().contains(&token));
    // Basic authentication works where the token does not.
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
    call.run(&driver(), Op::Instantiate, step(), params(json!({})))
        .await
        .expect("basic auth");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_that_never_becomes_ready_times_out_and_rolls_back_cleanly() {
    let emu = emulator().await;
    emu.fail_image("nginx:broken");
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-stuck");
    let err = call
        .run(
            &driver(),
            Op::Instantiate,
            step(),
            params(json!({"IMAGE": "nginx:broken", "namespace": Value::Null})),
        )
        .await
        .expect_err("never ready");
    assert_eq!(err.kind(), "timeout");
    let text = err.to_string();
    assert!(text.contains("Deployment vnf-inst-stuck/web"), "{text}");
    assert!(text.contains("0/2 replicas ready"), "{text}");
    assert!(text.contains("Available=False"), "{text}");
    assert!(
        !emu.labelled("vnfm.io/vnf-instance-id", "inst-stuck")
            .is_empty()
    );
    // Nothing was recorded (the step failed); the rollback finds the objects from the request.
    assert!(call.state.is_null());
    let req = params(json!({"IMAGE": "nginx:broken", "namespace": Value::Null}));
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::RollbackInstantiate,
        req,
    )
    .await
    .expect("rollback");
    assert!(
        emu.labelled("vnfm.io/vnf-instance-id", "inst-stuck")
            .is_empty(),
        "leaked: {:?}",
        emu.labelled("vnfm.io/vnf-instance-id", "inst-stuck")
    );
    assert!(
        emu.object("v1", "Namespace", None, "vnf-inst-stuck")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_of_an_hpa_scaled_workload_is_refused() {
    let emu = emulator().await;
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
    let mut call = Call::new(vnfd(), files, vim(&emu), "inst-hpa");
    let mut req = params(json!({}));
    req["additionalParams"]["lcm-kubernetes-def-files"] =
        json!(["Files/web.yaml", "Files/hpa.yaml"]);
    call.run(&driver(), Op::Instantiate, step(), req)
        .await
        .expect("instantiate");
    let dep = emu
        .object("apps/v1", "Deployment", Some("web-ns"), "web")
        .expect("deployment");
    // Replicas are left to the HPA: the driver's apply does not own them.
    let owned = dep["metadata"]["managedFields"].to_string();
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_wait() {
    let emu = emulator().await;
    emu.never_ready("Deployment", "web");
    let call = Call::new(vnfd(), files(), vim(&emu), "inst-cancel");
    let mut req = call.request(
        Op::Instantiate,
        step(),
        params(json!({"readinessTimeoutSeconds": 30})),
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
}

/// What an observation of `call`'s instance reports: `(condition, pod, VNFC)` per condition.
async fn observed(
    d: &vnfm_infra_kubernetes::KubernetesDriver,
    call: &Call,
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
            assert_eq!(c.resource.container_namespace.as_deref(), Some("web-ns"));
            assert_eq!(c.resource.vim_connection_id.as_deref(), Some("vim1"));
            (c.condition, c.resource.resource_id, c.vnfc_resource_id)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_pod_is_observed_on_its_vnfc_until_healed() {
    let emu = emulator().await;
    let d = driver();
    let mut call = Call::new(vnfd(), files(), vim(&emu), "inst-watch");
    let out = call
        .run(&d, Op::Instantiate, step(), params(json!({})))
        .await
        .expect("instantiate");
    assert_eq!(observed(&d, &call).await, []);

    let pod = out.resources.vnfc_resource_info[0].id.clone();
    assert!(emu.crash_loop("web-ns", &pod));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let found = loop {
        let found = observed(&d, &call).await;
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
    assert_eq!(observed(&d, &call).await, []);
}
