use super::*;

fn deployments(s: &Store) -> ResourceType {
    s.registry
        .by_kind("apps/v1", "Deployment")
        .cloned()
        .unwrap()
}

fn dep(replicas: i64, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "labels": {"a": "b"}},
           "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
}

#[test]
fn apply_creates_then_updates_and_removes_dropped_fields() {
    let mut s = Store::new();
    let rt = deployments(&s);
    let (o, changed) = s
        .apply(
            &rt,
            Some("ns"),
            "web",
            dep(2, "nginx"),
            "vnfm",
            false,
            false,
        )
        .unwrap();
    assert!(changed);
    assert_eq!(o["metadata"]["generation"], 1);
    let rv1 = o["metadata"]["resourceVersion"].clone();
    // Same config again: nothing changes, not even the resourceVersion.
    let (o, changed) = s
        .apply(
            &rt,
            Some("ns"),
            "web",
            dep(2, "nginx"),
            "vnfm",
            false,
            false,
        )
        .unwrap();
    assert!(!changed);
    assert_eq!(o["metadata"]["resourceVersion"], rv1);
    // Dropping a label the manager owned removes it.
    let mut c = dep(3, "nginx");
    c["metadata"]["labels"] = json!({});
    let (o, _) = s
        .apply(&rt, Some("ns"), "web", c, "vnfm", false, false)
        .unwrap();
    assert_eq!(o["spec"]["replicas"], 3);
    assert_eq!(o["metadata"]["generation"], 2);
    assert!(o["metadata"]["labels"].get("a").is_none());
}

#[test]
fn apply_conflicts_with_another_manager_unless_forced() {
    let mut s = Store::new();
    let rt = deployments(&s);
    s.apply(&rt, Some("ns"), "web", dep(2, "nginx"), "a", false, false)
        .unwrap();
    let e = s
        .apply(&rt, Some("ns"), "web", dep(3, "nginx"), "b", false, false)
        .unwrap_err();
    assert_eq!(e.code, 409);
    assert!(e.message.contains(".spec.replicas"), "{}", e.message);
    // Same values: shared ownership, no conflict.
    s.apply(&rt, Some("ns"), "web", dep(2, "nginx"), "b", false, false)
        .unwrap();
    let (o, _) = s
        .apply(&rt, Some("ns"), "web", dep(3, "nginx"), "b", true, false)
        .unwrap();
    assert_eq!(o["spec"]["replicas"], 3);
}

#[test]
fn a_resource_version_in_an_apply_or_a_delete_is_a_precondition() {
    let mut s = Store::new();
    let rt = deployments(&s);
    let (o, _) = s
        .apply(&rt, Some("ns"), "web", dep(1, "nginx"), "a", false, false)
        .unwrap();
    let rv = o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // The current resourceVersion: applied.
    let mut c = dep(2, "nginx");
    c["metadata"]["resourceVersion"] = json!(rv);
    let (o, _) = s
        .apply(&rt, Some("ns"), "web", c, "a", true, false)
        .unwrap();
    let now = o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(now, rv);
    // A stale one: 409 Conflict, nothing written.
    let mut c = dep(3, "nginx");
    c["metadata"]["resourceVersion"] = json!(rv);
    let e = s
        .apply(&rt, Some("ns"), "web", c, "a", true, false)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "Conflict"));
    assert!(e.message.contains("has been modified"), "{}", e.message);
    assert_eq!(
        s.get(&rt.storage_key(), "ns", "web").unwrap()["spec"]["replicas"],
        2
    );
    // On an object that does not exist: 404.
    let mut c = dep(1, "nginx");
    c["metadata"]["name"] = json!("other");
    c["metadata"]["resourceVersion"] = json!("1");
    let e = s
        .apply(&rt, Some("ns"), "other", c, "a", true, false)
        .unwrap_err();
    assert_eq!(e.code, 404);
    // Delete preconditions.
    let e = check_preconditions(&s, &rt, "ns", "web", Some(&rv), None).unwrap_err();
    assert_eq!((e.code, e.reason), (409, "Conflict"));
    assert!(
        e.message.contains(&format!("({rv})")) && e.message.contains(&format!("({now})")),
        "{}",
        e.message
    );
    let e = check_preconditions(&s, &rt, "ns", "web", None, Some("nope")).unwrap_err();
    assert!(e.message.contains("UID"), "{}", e.message);
    check_preconditions(&s, &rt, "ns", "web", Some(&now), None).unwrap();
    assert_eq!(
        check_preconditions(&s, &rt, "ns", "gone", Some(&now), None)
            .unwrap_err()
            .code,
        404
    );
}

#[test]
fn update_checks_resource_version_and_keeps_status() {
    let mut s = Store::new();
    let rt = deployments(&s);
    let (o, _) = s
        .apply(
            &rt,
            Some("ns"),
            "web",
            dep(1, "nginx"),
            "vnfm",
            false,
            false,
        )
        .unwrap();
    let mut st = o.clone();
    st["status"] = json!({"readyReplicas": 1});
    s.update(&rt, Some("ns"), "web", st, "ctl", true, false)
        .unwrap();
    let mut stale = o.clone();
    stale["spec"]["replicas"] = json!(5);
    let e = s
        .update(&rt, Some("ns"), "web", stale, "kubectl", false, true)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "Conflict"));
    let cur = s.get(&rt.storage_key(), "ns", "web").unwrap().clone();
    let mut next = cur.clone();
    next["spec"]["replicas"] = json!(4);
    next["status"] = json!({});
    let o = s
        .update(&rt, Some("ns"), "web", next, "kubectl", false, true)
        .unwrap();
    assert_eq!(o["status"]["readyReplicas"], 1);
    assert_eq!(o["spec"]["replicas"], 4);
}
