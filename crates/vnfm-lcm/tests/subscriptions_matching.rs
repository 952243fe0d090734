//! `LifecycleChangeNotificationsFilter` matching, attribute by attribute and combined, and the
//! per-subscription payload.

use serde_json::{Value, json};
use vnfm_lcm::subscriptions::{NotificationContext, matches, payload_for};
use vnfm_types::links::SolLinks;
use vnfm_types::{LccnNotification, LccnSubscription, LifecycleChangeNotificationsFilter};

fn op_occ(operation: &str, state: &str, instance: &str) -> LccnNotification {
    LccnNotification::from_value(json!({
        "id": "n1", "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "", "timeStamp": "2024-01-01T00:00:00Z",
        "notificationStatus": "RESULT", "operationState": state,
        "vnfInstanceId": instance, "operation": operation, "isAutomaticInvocation": false,
        "vnfLcmOpOccId": "o1",
        "affectedVnfcs": [{"id": "c1", "vduId": "VDU1", "changeType": "ADDED",
                           "computeResource": {"resourceId": "srv-1"}}],
        "changedInfo": {"vnfInstanceName": "renamed"},
        "_links": {"vnfInstance": {"href": "/i"}, "subscription": {"href": ""},
                   "vnfLcmOpOcc": {"href": "/o"}}
    }))
    .unwrap()
}

fn identifier(kind: &str, instance: &str) -> LccnNotification {
    LccnNotification::from_value(json!({
        "id": "n2", "notificationType": kind, "subscriptionId": "",
        "timeStamp": "2024-01-01T00:00:00Z", "vnfInstanceId": instance,
        "_links": {"vnfInstance": {"href": "/i"}, "subscription": {"href": ""}}
    }))
    .unwrap()
}

fn created(instance: &str) -> LccnNotification {
    identifier("VnfIdentifierCreationNotification", instance)
}

fn deleted(instance: &str) -> LccnNotification {
    identifier("VnfIdentifierDeletionNotification", instance)
}

fn ctx() -> NotificationContext {
    NotificationContext {
        vnfd_id: Some("vnfd-a".into()),
        vnf_provider: Some("Acme".into()),
        vnf_product_name: Some("Router".into()),
        vnf_software_version: Some("2.0".into()),
        vnfd_version: Some("1.1".into()),
        vnf_instance_name: Some("edge-1".into()),
    }
}

fn filter(v: Value) -> LifecycleChangeNotificationsFilter {
    serde_json::from_value(v).unwrap()
}

fn check(f: Value, n: &LccnNotification, c: &NotificationContext) -> bool {
    matches(Some(&filter(f)), n, c)
}

#[test]
fn no_filter_and_empty_filter_match_everything() {
    let c = ctx();
    for n in [
        op_occ("INSTANTIATE", "STARTING", "i1"),
        created("i1"),
        deleted("i1"),
    ] {
        assert!(matches(None, &n, &c));
        assert!(check(json!({}), &n, &c));
        assert!(matches(None, &n, &NotificationContext::default()));
        // Empty lists select nothing extra, exactly like absent attributes.
        assert!(check(
            json!({"notificationTypes": [], "operationTypes": [], "operationStates": [],
                   "vnfInstanceSubscriptionFilter": {"vnfdIds": [], "vnfInstanceIds": [],
                       "vnfInstanceNames": [], "vnfProductsFromProviders": []}}),
            &n,
            &c
        ));
    }
}

#[test]
fn notification_types_are_alternatives() {
    let c = ctx();
    let f = json!({"notificationTypes": ["VnfIdentifierCreationNotification",
                                         "VnfIdentifierDeletionNotification"]});
    assert!(check(f.clone(), &created("i1"), &c));
    assert!(check(f.clone(), &deleted("i1"), &c));
    assert!(!check(f, &op_occ("SCALE", "COMPLETED", "i1"), &c));
    let f = json!({"notificationTypes": ["VnfLcmOperationOccurrenceNotification"]});
    assert!(check(f.clone(), &op_occ("SCALE", "COMPLETED", "i1"), &c));
    assert!(!check(f.clone(), &created("i1"), &c));
    assert!(!check(f, &deleted("i1"), &c));
}

#[test]
fn operation_types_and_states_constrain_operation_occurrences_only() {
    let c = ctx();
    let f = json!({"operationTypes": ["INSTANTIATE", "TERMINATE"]});
    assert!(check(
        f.clone(),
        &op_occ("INSTANTIATE", "STARTING", "i"),
        &c
    ));
    assert!(check(f.clone(), &op_occ("TERMINATE", "COMPLETED", "i"), &c));
    assert!(!check(f.clone(), &op_occ("SCALE", "COMPLETED", "i"), &c));
    assert!(
        check(f.clone(), &created("i"), &c),
        "identifier notifications pass"
    );

    let f = json!({"operationStates": ["COMPLETED", "FAILED_TEMP"]});
    assert!(check(f.clone(), &op_occ("SCALE", "COMPLETED", "i"), &c));
    assert!(check(f.clone(), &op_occ("HEAL", "FAILED_TEMP", "i"), &c));
    assert!(!check(f.clone(), &op_occ("HEAL", "PROCESSING", "i"), &c));
    assert!(check(f, &deleted("i"), &c));

    // Across attributes: AND.
    let f = json!({"operationTypes": ["INSTANTIATE"], "operationStates": ["COMPLETED"]});
    let table = [
        ("INSTANTIATE", "COMPLETED", true),
        ("INSTANTIATE", "STARTING", false),
        ("SCALE", "COMPLETED", false),
        ("SCALE", "STARTING", false),
    ];
    for (op, st, want) in table {
        assert_eq!(
            check(f.clone(), &op_occ(op, st, "i"), &c),
            want,
            "{op} {st}"
        );
    }
    let f = json!({"notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
                   "operationTypes": ["INSTANTIATE"]});
    assert!(!check(f.clone(), &created("i"), &c));
    assert!(check(f, &op_occ("INSTANTIATE", "ROLLED_BACK", "i"), &c));
}

#[test]
fn instance_ids_names_and_vnfd_ids() {
    let c = ctx();
    let n = op_occ("SCALE", "COMPLETED", "i1");
    let by_id = json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["i0", "i1"]}});
    assert!(check(by_id.clone(), &n, &c));
    assert!(!check(
        by_id.clone(),
        &op_occ("SCALE", "COMPLETED", "i2"),
        &c
    ));
    // The id comes from the notification, so it matches without any context.
    assert!(check(
        by_id,
        &created("i1"),
        &NotificationContext::default()
    ));

    let by_name = json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceNames": ["x", "edge-1"]}});
    assert!(check(by_name.clone(), &n, &c));
    let unnamed = NotificationContext {
        vnf_instance_name: None,
        ..ctx()
    };
    assert!(!check(by_name.clone(), &n, &unnamed));
    let other = NotificationContext {
        vnf_instance_name: Some("edge-2".into()),
        ..ctx()
    };
    assert!(!check(by_name, &n, &other));

    let by_vnfd = json!({"vnfInstanceSubscriptionFilter": {"vnfdIds": ["vnfd-b", "vnfd-a"]}});
    assert!(check(by_vnfd.clone(), &n, &c));
    assert!(!check(by_vnfd.clone(), &n, &NotificationContext::default()));
    let other = NotificationContext {
        vnfd_id: Some("vnfd-c".into()),
        ..ctx()
    };
    assert!(!check(by_vnfd, &n, &other));

    // Several instance attributes: AND.
    let both = json!({"vnfInstanceSubscriptionFilter": {"vnfdIds": ["vnfd-a"],
                                                        "vnfInstanceIds": ["i9"]}});
    assert!(!check(both, &n, &c));
}

#[test]
fn products_from_providers_nest_provider_product_version_vnfd_version() {
    let c = ctx();
    let n = op_occ("INSTANTIATE", "COMPLETED", "i1");
    let p = |v: Value| json!({"vnfInstanceSubscriptionFilter": {"vnfProductsFromProviders": v}});
    let table: Vec<(Value, bool)> = vec![
        (json!([{"vnfProvider": "Acme"}]), true),
        (json!([{"vnfProvider": "Other"}]), false),
        (
            json!([{"vnfProvider": "Other"}, {"vnfProvider": "Acme"}]),
            true,
        ),
        (json!([{"vnfProvider": "Acme", "vnfProducts": []}]), true),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router"}]}]),
            true,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Firewall"}]}]),
            false,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [
                {"vnfProductName": "Firewall"}, {"vnfProductName": "Router"}]}]),
            true,
        ),
        // The product must belong to the provider it is listed under.
        (
            json!([{"vnfProvider": "Other", "vnfProducts": [{"vnfProductName": "Router"}]}]),
            false,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "2.0"}]}]}]),
            true,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "1.0"}]}]}]),
            false,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "1.0"}, {"vnfSoftwareVersion": "2.0"}]}]}]),
            true,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "2.0", "vnfdVersions": ["1.0", "1.1"]}]}]}]),
            true,
        ),
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "2.0", "vnfdVersions": ["1.0"]}]}]}]),
            false,
        ),
        // The VNFD version must belong to the software version it is listed under.
        (
            json!([{"vnfProvider": "Acme", "vnfProducts": [{"vnfProductName": "Router",
                "versions": [{"vnfSoftwareVersion": "1.0", "vnfdVersions": ["1.1"]},
                             {"vnfSoftwareVersion": "2.0", "vnfdVersions": ["9"]}]}]}]),
            false,
        ),
    ];
    for (f, want) in table {
        assert_eq!(check(p(f.clone()), &n, &c), want, "{f}");
    }
    // Without instance information nothing product-specific matches.
    assert!(!check(
        p(json!([{"vnfProvider": "Acme"}])),
        &n,
        &NotificationContext::default()
    ));
}

#[test]
fn all_attribute_groups_combine_with_and() {
    let c = ctx();
    let f = json!({
        "notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
        "operationTypes": ["SCALE"],
        "operationStates": ["COMPLETED"],
        "vnfInstanceSubscriptionFilter": {"vnfdIds": ["vnfd-a"], "vnfInstanceNames": ["edge-1"]}
    });
    assert!(check(f.clone(), &op_occ("SCALE", "COMPLETED", "i1"), &c));
    assert!(!check(f.clone(), &op_occ("SCALE", "FAILED", "i1"), &c));
    assert!(!check(f.clone(), &op_occ("HEAL", "COMPLETED", "i1"), &c));
    assert!(!check(f.clone(), &created("i1"), &c));
    let renamed = NotificationContext {
        vnf_instance_name: Some("edge-9".into()),
        ..ctx()
    };
    assert!(!check(f, &op_occ("SCALE", "COMPLETED", "i1"), &renamed));
}

fn subscription(verbosity: Option<&str>) -> LccnSubscription {
    let mut v = json!({"id": "sub-1", "callbackUri": "http://nfvo/cb",
                       "_links": {"self": {"href": "https://vnfm/vnflcm/v2/subscriptions/sub-1"}}});
    if let Some(x) = verbosity {
        v["verbosity"] = json!(x);
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn payload_names_the_subscription_and_applies_verbosity() {
    let n = op_occ("SCALE", "COMPLETED", "i1");
    let full = payload_for(&n, &subscription(None), &SolLinks::default()).unwrap();
    assert_eq!(full["subscriptionId"], json!("sub-1"));
    assert_eq!(
        full["_links"]["subscription"]["href"],
        json!("https://vnfm/vnflcm/v2/subscriptions/sub-1")
    );
    assert_eq!(full["_links"]["vnfLcmOpOcc"]["href"], json!("/o"));
    assert_eq!(full["verbosity"], json!("FULL"));
    assert!(full.get("affectedVnfcs").is_some() && full.get("changedInfo").is_some());
    // The payload is still a valid notification.
    assert!(LccnNotification::from_value(full).is_ok());

    let short = payload_for(&n, &subscription(Some("SHORT")), &SolLinks::default()).unwrap();
    assert_eq!(short["verbosity"], json!("SHORT"));
    assert!(short.get("affectedVnfcs").is_none() && short.get("changedInfo").is_none());
    assert_eq!(short["operationState"], json!("COMPLETED"));

    let id = payload_for(
        &created("i1"),
        &subscription(Some("SHORT")),
        &SolLinks::default(),
    )
    .unwrap();
    assert_eq!(id["subscriptionId"], json!("sub-1"));
    assert!(id.get("verbosity").is_none());
}

#[test]
fn subscriptions_made_through_v1_get_the_v1_shape() {
    let n = op_occ("SCALE", "COMPLETED", "i1");
    let sub: LccnSubscription = serde_json::from_value(json!({
        "id": "sub-1", "callbackUri": "http://nfvo/cb",
        "_links": {"self": {"href": "/vnflcm/v1/subscriptions/sub-1"}}
    }))
    .unwrap();
    let body = payload_for(&n, &sub, &SolLinks::default()).unwrap();
    assert!(body.get("verbosity").is_none(), "{body:#}");
    assert_eq!(body["subscriptionId"], json!("sub-1"));
    assert_eq!(
        body["_links"]["subscription"]["href"],
        json!("/vnflcm/v1/subscriptions/sub-1")
    );
    serde_json::from_value::<vnfm_types::v1::VnfLcmOperationOccurrenceNotification>(body)
        .expect("a v2.6.1 notification");
    let v2 = payload_for(&n, &subscription(None), &SolLinks::default()).unwrap();
    assert_eq!(v2["verbosity"], json!("FULL"));
}
