//! Faults of the API server that a real one cannot be made to produce on demand, injected by
//! the emulator (`vnfm-kube-emulator`, its only use left besides basic authentication): a
//! `500` or `503` in the middle of an apply, watches that end with `410 Gone`, a request and a
//! watch left without an answer. Each test says what it needs from the emulator.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_kube_emulator::Emulator;
use vnfm_types::LcmOperationType as Op;

const CONFIG: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
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
                      "minInstances": 1, "maxInstances": 3, "initialDelta": 2}]
        }]
    }))
    .expect("vnfd")
}

fn call(emu: &Emulator, id: &str) -> Call {
    let files = Arc::new(
        MemArtifacts::new()
            .with("Files/config.yaml", CONFIG)
            .with("Files/web.yaml", DEPLOYMENT),
    );
    Call::new(vnfd(), files, vim(emu), id)
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

fn params() -> serde_json::Value {
    json!({"flavourId": "simple", "additionalParams": {
        "lcm-kubernetes-def-files": ["Files/config.yaml", "Files/web.yaml"],
        "namespace": "web-ns"}})
}

/// The requests with `verb` on `kind` answered `code` (any success for 200).
fn answered(emu: &Emulator, verb: &str, kind: &str, code: u16) -> usize {
    emu.log()
        .iter()
        .filter(|e| e.verb == verb && e.kind == kind)
        .filter(|e| e.code == code || (code == 200 && (200..300).contains(&e.code)))
        .count()
}

/// On the emulator: a real API server answers 500 when etcd or an admission webhook fails,
/// which a test cannot make it do for one request. The step fails naming the object and the
/// answer, as retryable, and running it again converges: everything applied once, ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_in_the_middle_of_an_apply_fails_the_step_clearly_and_a_retry_completes() {
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    let mut c = call(&emu, "inst-500");
    emu.fail_next("patch", "Deployment", 500, 1);
    let err = c
        .run(&driver(), Op::Instantiate, step(), params())
        .await
        .expect_err("500");
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("Deployment web-ns/web")
            && text.contains("500")
            && text.contains("InternalError"),
        "{text}"
    );
    // What was applied before the fault is there; the Deployment is not.
    assert!(
        emu.object("v1", "ConfigMap", Some("web-ns"), "settings")
            .is_some()
    );
    assert!(
        emu.object("apps/v1", "Deployment", Some("web-ns"), "web")
            .is_none()
    );
    // The same step again completes and applies each object once more, nothing twice over.
    let out = c
        .run(&driver(), Op::Instantiate, step(), params())
        .await
        .expect("retry");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    assert_eq!(emu.objects("v1", "ConfigMap").len(), 1);
    assert_eq!(emu.objects("apps/v1", "Deployment").len(), 1);
    assert_eq!(answered(&emu, "apply", "Deployment", 200), 1);
}

/// On the emulator: a real API server answers 503 while it is overloaded or its storage is
/// unavailable, on no test's demand. The client retries such answers (kube-rs' retry of
/// 429/503/504) and the step completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_in_the_middle_of_an_apply_is_retried_and_the_step_completes() {
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    let mut c = call(&emu, "inst-503");
    emu.fail_next("patch", "Deployment", 503, 2);
    let out = c
        .run(&driver(), Op::Instantiate, step(), params())
        .await
        .expect("instantiate through two 503s");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    assert_eq!(answered(&emu, "patch", "Deployment", 503), 2);
    assert_eq!(answered(&emu, "apply", "Deployment", 200), 1);
}

/// On the emulator: a real API server ends a watch with `410 Gone` only when the watch has
/// fallen behind its history, which a test cannot bring about at a chosen moment. The
/// readiness wait's watch lists again and goes on; the step completes once the pods are
/// Ready, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_ends_with_410_gone_lists_again_and_the_wait_goes_on() {
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    emu.never_ready("Deployment", "web");
    let mut c = call(&emu, "inst-410");
    let d = Arc::new(driver());
    let step_task = {
        let d = d.clone();
        tokio::spawn(async move {
            let out = c.run(&d, Op::Instantiate, step(), params()).await;
            (c, out)
        })
    };
    // Until the wait watches the Deployment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while answered(&emu, "watch", "Deployment", 200) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no watch of Deployments"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lists = answered(&emu, "list", "Deployment", 200);
    emu.expire_watches();
    // Another list follows the 410 (the watcher starts over), and the step still waits.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while answered(&emu, "list", "Deployment", 200) == lists {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no list after the 410"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !step_task.is_finished(),
        "completed while the pods were not Ready"
    );
    emu.allow_ready("Deployment", "web");
    let (_, out) = step_task.await.expect("task");
    let out = out.expect("instantiate after the 410");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
}

/// On the emulator: a real API server answers every request it gets, slow or not; one that
/// never answers (its storage stalled, a middlebox swallowing the connection) cannot be
/// brought about for one chosen request (`Emulator::hold_next`). The step fails within the
/// driver's request budget, naming the request, the server and the VIM, as retryable; the
/// same step again completes, with every object once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_left_unanswered_fails_the_step_within_the_request_budget_and_a_retry_completes()
{
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    let mut c = call(&emu, "inst-held");
    let d = driver().with_request_timeout(Duration::from_secs(2));
    emu.hold_next("patch", "Deployment", 1);
    let err = c
        .run(&d, Op::Instantiate, step(), params())
        .await
        .expect_err("no answer");
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("did not answer within 2s")
            && text.contains("applying Deployment web-ns/web")
            && text.contains(&emu.url())
            && text.contains(&format!("VIM connection `{}`", c.vims[0].connection_id)),
        "{text}"
    );
    // The server answers again: the same step completes, nothing lost or doubled.
    let out = c
        .run(&d, Op::Instantiate, step(), params())
        .await
        .expect("retry");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    assert_eq!(answered(&emu, "apply", "Deployment", 200), 1);
    emu.release_held();
    assert_eq!(emu.objects("v1", "ConfigMap").len(), 1);
    assert_eq!(emu.objects("apps/v1", "Deployment").len(), 1);
    assert_eq!(
        emu.objects("v1", "Pod")
            .iter()
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
            .count(),
        2
    );
}

/// On the emulator, for the reason above: the list a readiness watch starts with is left
/// without an answer. The wait fails at its readiness budget saying that the watch never had
/// its list answered, by which server and VIM, as retryable; once the server answers, the same
/// step completes when the pods are Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_left_unanswered_fails_the_wait_naming_it_and_a_retry_completes() {
    let emu = emulator().await;
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web-ns"}}),
    )
    .expect("namespace");
    let mut c = call(&emu, "inst-held-watch");
    let d = driver();
    emu.hold_next("list", "Deployment", 1);
    let mut short = params();
    short["additionalParams"]["readinessTimeoutSeconds"] = json!(2);
    let err = c
        .run(&d, Op::Instantiate, step(), short)
        .await
        .expect_err("no answer to the watch's list");
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("the watch of Deployment objects never had its list answered")
            && text.contains(&emu.url())
            && text.contains(&format!("VIM connection `{}`", c.vims[0].connection_id)),
        "{text}"
    );
    emu.release_held();
    let out = c
        .run(&d, Op::Instantiate, step(), params())
        .await
        .expect("retry");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2));
    assert_eq!(emu.objects("apps/v1", "Deployment").len(), 1);
}
