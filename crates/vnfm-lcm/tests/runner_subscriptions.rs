//! Notifications reach the subscriptions whose filters match, through the production router:
//! filters on the instance's VNFD, product or name are evaluated for identifier creation (the
//! instance is not stored yet) and deletion (it is gone afterwards) too.

use crate::runner_support;

use std::sync::Arc;

use runner_support::*;
use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver};
use vnfm_lcm::secrets::Keyring;
use vnfm_lcm::subscriptions::{CreateOptions, Subscriptions};
use vnfm_lcm::{InlineVimDirectory, Lcm, MemoryCatalog};
use vnfm_types::{CreateVnfRequest, LccnSubscriptionRequest};

async fn outbox(store: &Arc<dyn vnfm_store::Store>) -> Vec<(String, Value)> {
    store
        .outbox_pending_rows(None, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.callback_uri, r.payload))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifier_notifications_match_filters_on_the_instance() {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
    let subs = Subscriptions::new(store.clone(), keyring, callback_sender());
    let hello = hello_vnfd();
    let opts = CreateOptions::default();
    let sub = |v: Value| -> LccnSubscriptionRequest { serde_json::from_value(v).unwrap() };
    subs.create(
        &sub(json!({
            "callbackUri": "http://127.0.0.1:1/hello",
            "filter": {
                "vnfInstanceSubscriptionFilter": {"vnfdIds": [hello.descriptor_id]},
                "notificationTypes": ["VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification"]
            }
        })),
        &opts,
    )
    .await
    .unwrap();
    subs.create(
        &sub(json!({
            "callbackUri": "http://127.0.0.1:1/other-product",
            "filter": {"vnfInstanceSubscriptionFilter": {
                "vnfProductsFromProviders": [{"vnfProvider": "Someone Else"}]
            }}
        })),
        &opts,
    )
    .await
    .unwrap();

    let catalog = MemoryCatalog::new();
    catalog.insert(hello.clone(), Arc::new(MemArtifacts::new()));
    let lcm = Lcm::builder(
        store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(subs.router()),
        Arc::new(catalog),
    )
    .infra_driver(Arc::new(MemoryInfraDriver::new()))
    .build();

    let instance = lcm
        .create_vnf_identifier(CreateVnfRequest {
            vnfd_id: hello.descriptor_id.clone().into(),
            vnf_instance_name: Some("web-1".into()),
            vnf_instance_description: None,
            metadata: None,
        })
        .await
        .unwrap();
    let rows = outbox(&store).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, "http://127.0.0.1:1/hello");
    assert_eq!(
        rows[0].1["notificationType"],
        "VnfIdentifierCreationNotification"
    );
    assert_eq!(rows[0].1["vnfInstanceId"], instance.id.as_str());

    lcm.delete_vnf_identifier(&instance.id).await.unwrap();
    let rows = outbox(&store).await;
    let deletions: Vec<_> = rows
        .iter()
        .filter(|(_, p)| p["notificationType"] == "VnfIdentifierDeletionNotification")
        .collect();
    assert_eq!(deletions.len(), 1, "{rows:?}");
    assert_eq!(deletions[0].0, "http://127.0.0.1:1/hello");
}

/// The HTTP implementation of the callback port.
fn callback_sender() -> std::sync::Arc<dyn vnfm_driver_api::CallbackSender> {
    vnfm_outbound::install_crypto_provider();
    std::sync::Arc::new(
        vnfm_outbound::HttpCallbackSender::new(std::time::Duration::from_secs(5)).unwrap(),
    )
}
