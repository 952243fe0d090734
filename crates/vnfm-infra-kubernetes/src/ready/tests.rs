use super::*;
use serde_json::json;

fn object(rv: &str, instance: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n", "resourceVersion": rv,
            "labels": {INSTANCE_LABEL: instance}}}))
    .expect("object")
}

#[test]
fn a_cached_object_is_trusted_only_once_it_has_caught_up_with_the_steps_write() {
    let at = |v: &str| Written::At(Some(v.to_string()));
    // Comparable versions (Kubernetes 1.35+): older is stale, same or newer current.
    assert_eq!(
        cached(&object("99", "i"), "i", Some(&at("100"))),
        Cached::Stale
    );
    assert!(matches!(
        cached(&object("100", "i"), "i", Some(&at("100"))),
        Cached::Current(_)
    ));
    assert!(matches!(
        cached(&object("1000", "i"), "i", Some(&at("100"))),
        Cached::Current(_)
    ));
    // Opaque versions: equal is the write itself; anything else cannot be told from the
    // cache (a read decides), never taken as current.
    assert!(matches!(
        cached(&object("b2", "i"), "i", Some(&at("b2"))),
        Cached::Current(_)
    ));
    assert_eq!(
        cached(&object("a1", "i"), "i", Some(&at("b2"))),
        Cached::Unknown
    );
    assert_eq!(
        cached(&object("0100", "i"), "i", Some(&at("99"))),
        Cached::Unknown
    );
    // Another instance's object is never the one waited for; nothing written: current.
    assert_eq!(
        cached(&object("100", "j"), "i", Some(&at("1"))),
        Cached::Stale
    );
    assert!(matches!(
        cached(&object("x", "i"), "i", None),
        Cached::Current(_)
    ));
}

#[test]
fn deployment_readiness_needs_the_observed_generation_and_all_replicas() {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"generation": 2}, "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}});
    assert!(
        matches!(readiness("apps", "Deployment", &d), Readiness::Pending(ref w) if w.contains("generation 2"))
    );
    d["status"]["observedGeneration"] = json!(2);
    assert_eq!(readiness("apps", "Deployment", &d), Readiness::Ready);
    // A scale-in's removed pod still exits.
    d["status"]["terminatingReplicas"] = json!(1);
    assert!(
        matches!(readiness("apps", "Deployment", &d), Readiness::Pending(ref w) if w.contains("1 terminating"))
    );
    d["status"]["terminatingReplicas"] = json!(0);
    assert_eq!(readiness("apps", "Deployment", &d), Readiness::Ready);
    d["status"]["readyReplicas"] = json!(1);
    d["status"]["conditions"] =
        json!([{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]);
    let Readiness::Pending(why) = readiness("apps", "Deployment", &d) else {
        panic!()
    };
    assert!(
        why.contains("1/2") && why.contains("Available=False (MinimumReplicasUnavailable)"),
        "{why}"
    );
    d["status"]["conditions"] = json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "too slow"}]);
    assert!(matches!(
        readiness("apps", "Deployment", &d),
        Readiness::Failed(_)
    ));
}

#[test]
fn pods_jobs_claims_and_crds() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending",
        "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "bad image"}}}]}});
    let Readiness::Pending(why) = readiness("", "Pod", &pod) else {
        panic!()
    };
    assert!(why.contains("ImagePullBackOff"), "{why}");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
    assert_eq!(readiness("batch", "Job", &job), Readiness::Ready);
    let failed = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
    assert!(
        matches!(readiness("batch", "Job", &failed), Readiness::Failed(ref w) if w.contains("BackoffLimitExceeded"))
    );
    let pvc =
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}});
    assert_eq!(
        readiness("", "PersistentVolumeClaim", &pvc),
        Readiness::Ready
    );
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "status": {}});
    assert!(matches!(
        readiness("apiextensions.k8s.io", "CustomResourceDefinition", &crd),
        Readiness::Pending(_)
    ));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    assert_eq!(readiness("", "ConfigMap", &cm), Readiness::Ready);
    assert!(service_ready(&[
        &json!({"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]})
    ]));
    assert!(!service_ready(&[&json!({"endpoints": []})]));
}
