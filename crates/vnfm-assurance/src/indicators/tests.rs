//! VNF indicators over a real (SQLite) store, a catalog with one VNFD and a settable metrics
//! source: evaluation, change-only notification with filters, pushed values, and the values
//! that stop applying.

use std::sync::Arc;

use serde_json::{Value, json};
use vnfm_descriptor::vnfd::Vnfd;
use vnfm_driver_api::FixedAnswer;
use vnfm_driver_api::artifact::NoArtifacts;
use vnfm_driver_api::metrics::StaticMetrics;
use vnfm_store::{ProjectScope, Store, Version};
use vnfm_store_sql::SqliteStore;
use vnfm_types::{VnfIndicatorSubscriptionRequest, VnfInstance};

use super::*;
use vnfm_lcm::MemoryCatalog;
use vnfm_lcm::subscriptions::CreateOptions;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    metrics: StaticMetrics,
    indicators: IndicatorManager,
}

fn vnfd() -> Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Web", "softwareVersion": "1.0", "vnfmInfo": [],
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_3", "vnfNodeType": "acme.Web",
        "entryDefinitions": "Definitions/web.yaml", "flavours": [],
        "indicators": [
            {"id": "load", "name": "Session load", "source": "vnf",
             "promql": "sum(sessions{vnf_instance_id=\"${vnf_instance_id}\"})"},
            {"id": "health", "source": "em"}
        ]
    }))
    .unwrap()
}

fn instance(id: &str, state: &str) -> VnfInstance {
    let mut v = json!({
        "id": id, "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Web",
        "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": state,
        "_links": {"self": {"href": format!("/vnflcm/v2/vnf_instances/{id}")}}
    });
    if state == "INSTANTIATED" {
        v["instantiatedVnfInfo"] = json!({"flavourId": "simple", "vnfState": "STARTED"});
    }
    serde_json::from_value(v).unwrap()
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let catalog = Arc::new(MemoryCatalog::new());
    catalog.insert(vnfd(), Arc::new(NoArtifacts));
    let metrics = StaticMetrics::new(&[]);
    let indicators = IndicatorManager::new(
        store.clone(),
        keyring,
        Arc::new(FixedAnswer(204)),
        catalog,
        Some(Arc::new(metrics.clone())),
    );
    store
        .create_instance(&instance("i1", "INSTANTIATED"), &[])
        .await
        .unwrap();
    store
        .create_instance(&instance("i2", "INSTANTIATED"), &[])
        .await
        .unwrap();
    Fixture {
        _dir: dir,
        store,
        metrics,
        indicators,
    }
}

/// The pending outbox as (subscription id, payload).
async fn outbox(store: &dyn Store) -> Vec<(String, Value)> {
    store
        .outbox_pending_rows(None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.subscription_id.to_string(), r.payload))
        .collect()
}

async fn subscribe(f: &Fixture, filter: Value) -> String {
    let request: VnfIndicatorSubscriptionRequest = serde_json::from_value(json!({
        "filter": filter, "callbackUri": "http://127.0.0.1:9/ind"
    }))
    .unwrap();
    f.indicators
        .subscriptions()
        .create(
            &request,
            &CreateOptions {
                allow_duplicates: true,
                ..CreateOptions::default()
            },
        )
        .await
        .unwrap()
        .subscription()
        .id
        .to_string()
}

#[tokio::test]
async fn a_changed_value_is_stored_and_notified_once_to_the_subscriptions_that_select_it() {
    let f = fixture().await;
    let all = subscribe(&f, json!({})).await;
    let only_i2 = subscribe(
        &f,
        json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["i2"]}}),
    )
    .await;
    let other_indicator = subscribe(&f, json!({"indicatorIds": ["health"]})).await;

    // No data yet: nothing stored, nothing sent.
    let done = f.indicators.evaluate_all().await.unwrap();
    assert_eq!(done, collector::Evaluated::default());
    assert!(outbox(&*f.store).await.is_empty());

    f.metrics.set(Some(12.0));
    let done = f.indicators.evaluate_all().await.unwrap();
    assert_eq!(done.changed, 2, "load of i1 and of i2");
    let i1 = f
        .indicators
        .get(&VnfInstanceId::new("i1"), "load")
        .await
        .unwrap();
    assert_eq!(i1.value, json!(12.0));
    assert_eq!(i1.name.as_deref(), Some("Session load"));
    assert_eq!(i1.links.self_.href, "/vnfind/v1/indicators/i1/load");
    let rows = outbox(&*f.store).await;
    let to = |sub: &str| {
        rows.iter()
            .filter(|(s, _)| s == sub)
            .map(|(_, p)| p["vnfInstanceId"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(to(&all), ["i1", "i2"]);
    assert_eq!(to(&only_i2), ["i2"]);
    assert!(to(&other_indicator).is_empty());
    let (_, body) = &rows[0];
    assert_eq!(
        body["notificationType"],
        "VnfIndicatorValueChangeNotification"
    );
    assert_eq!(body["vnfIndicatorId"], "load");
    assert_eq!(body["value"], json!(12.0));
    assert_eq!(
        body["_links"]["subscription"]["href"],
        format!("/vnfind/v1/subscriptions/{all}")
    );

    // The same value again: no change, no notification.
    let done = f.indicators.evaluate_all().await.unwrap();
    assert_eq!(done.changed, 0);
    assert_eq!(outbox(&*f.store).await.len(), rows.len());
}

#[tokio::test]
async fn pushed_values_need_a_declared_indicator_of_an_instantiated_instance() {
    let f = fixture().await;
    let i1 = VnfInstanceId::new("i1");
    assert!(f.indicators.set(&i1, "health", json!("OK")).await.unwrap());
    assert!(!f.indicators.set(&i1, "health", json!("OK")).await.unwrap());
    assert_eq!(
        f.indicators.get(&i1, "health").await.unwrap().value,
        json!("OK")
    );
    let err = f
        .indicators
        .set(&i1, "nope", json!(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nope") && err.contains("load, health"),
        "{err}"
    );
    let err = f
        .indicators
        .set(&VnfInstanceId::new("ghost"), "health", json!(1))
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::NotFound { .. }), "{err}");
    assert!(matches!(
        f.indicators
            .list(
                &ProjectScope::All,
                Some(&VnfInstanceId::new("ghost")),
                None,
                10
            )
            .await,
        Err(LcmError::NotFound { .. })
    ));
}

#[tokio::test]
async fn values_of_an_instance_no_longer_instantiated_are_dropped() {
    let f = fixture().await;
    f.metrics.set(Some(3.0));
    f.indicators.evaluate_all().await.unwrap();
    let i1 = VnfInstanceId::new("i1");
    f.indicators.set(&i1, "health", json!("OK")).await.unwrap();
    let page = f
        .indicators
        .list(&ProjectScope::All, None, None, 10)
        .await
        .unwrap();
    let keys: Vec<(String, String)> = page
        .items
        .iter()
        .map(|i| (i.vnf_instance_id.to_string(), i.id.clone()))
        .collect();
    assert_eq!(
        keys,
        [
            ("i1".into(), "health".into()),
            ("i1".into(), "load".into()),
            ("i2".into(), "load".into())
        ]
    );
    // Paging by marker walks the same rows.
    let first = f
        .indicators
        .list(&ProjectScope::All, None, None, 2)
        .await
        .unwrap();
    let rest = f
        .indicators
        .list(&ProjectScope::All, None, first.next.as_deref(), 2)
        .await
        .unwrap();
    assert_eq!(first.items.len() + rest.items.len(), 3);
    assert_eq!(rest.items[0].vnf_instance_id.as_str(), "i2");

    // i1 is terminated: its values go at the next evaluation.
    let (mut inst, version) = f.store.get_instance(&i1).await.unwrap().unwrap();
    inst.instantiation_state = InstantiationState::NotInstantiated;
    inst.instantiated_vnf_info = None;
    let _: Version = f.store.update_instance(&inst, version).await.unwrap();
    let done = f.indicators.evaluate_all().await.unwrap();
    assert_eq!(done.dropped, 2);
    let left = f
        .indicators
        .list(&ProjectScope::All, Some(&i1), None, 10)
        .await
        .unwrap();
    assert!(left.items.is_empty());
}
