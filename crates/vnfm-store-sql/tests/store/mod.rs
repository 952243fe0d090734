//! Behaviour of the store, written once against `Arc<dyn Store>` and run on SQLite (temp file)
//! and PostgreSQL (`VNFM_TEST_POSTGRES_URL`; ignored, saying so, when it was unset at build time).

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use vnfm_store::SubscriptionStore;

use futures_util::StreamExt;
use serde_json::json;
use vnfm_store::{
    Conflict, InstanceQuery, JournalStep, Lease, NameFilter, NewOutboxRow, OpOccQuery,
    OutboxStatus, OutboxSummary, PackageRecord, PkgmSubscriptionRecord, ProjectScope, StepOutcome,
    StepRecord, Store, StoreError, SubscriptionRecord, Timestamp, Version, VimRecord,
    canonical_filter, canonical_pkgm_filter,
};
use vnfm_types::{
    InstantiationState, LccnSubscription, LcmOperationStateType as S, LcmOperationType,
    SubscriptionId, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOccId, VnfdId,
};

use common::{TestDb, in_state, instance, op_occ};

macro_rules! store_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = super::TestDb::sqlite().await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[vnfm_test_env::needs(postgres)]
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = super::TestDb::postgres().await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

const T0: Timestamp = Timestamp(1_000_000);

fn lease(owner: &str, until: Timestamp) -> Lease {
    Lease::new(owner, until)
}

fn step(name: &str, outcome: StepOutcome) -> JournalStep {
    JournalStep::new(name, outcome, T0, &json!({"step": name}))
}

fn note(sub: &str, n: i64, not_before: Timestamp) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new(sub),
        callback_uri: format!("http://nfvo/callback/{sub}"),
        payload: json!({"notificationType": "VnfLcmOperationOccurrenceNotification", "n": n}),
        not_before,
        // A queue of its own: these rows are independent of each other.
        ordering_key: format!("key-{n}"),
        traceparent: None,
    }
}

/// Row `n` in queue `key` of subscription `sub`.
fn queued(sub: &str, key: &str, n: i64) -> NewOutboxRow {
    NewOutboxRow {
        ordering_key: key.into(),
        ..note(sub, n, Timestamp(0))
    }
}

fn numbers(rows: &[vnfm_store::OutboxRow]) -> Vec<i64> {
    rows.iter()
        .filter_map(|r| r.payload["n"].as_i64())
        .collect()
}

/// A record_step from `from` (at `version`) to `to`, by `owner`, writing nothing else.
fn transition(
    occ: &vnfm_types::VnfLcmOpOcc,
    from: vnfm_types::LcmOperationStateType,
    to: vnfm_types::LcmOperationStateType,
    version: Version,
    owner: &str,
) -> StepRecord {
    StepRecord {
        occ: in_state(occ, to),
        expected_state: from,
        expected_version: version,
        owner: owner.into(),
        journal: None,
        instance: None,
        outbox: Vec::new(),
        data: Vec::new(),
    }
}

async fn outbox_all(store: &dyn Store) -> Vec<vnfm_store::OutboxRow> {
    store.outbox_pending_rows(None, 1000).await.unwrap()
}

fn assert_busy(err: StoreError, holder: &str, state: vnfm_types::LcmOperationStateType) {
    match &err {
        StoreError::Conflict(Conflict::InstanceBusy {
            op_occ_id,
            state: s,
            ..
        }) => {
            assert_eq!(op_occ_id.as_str(), holder);
            assert_eq!(*s, state);
            let msg = err.to_string();
            assert!(msg.contains(holder), "{msg}");
            assert!(msg.contains(vnfm_store::state_str(state)), "{msg}");
        }
        other => panic!("expected InstanceBusy by {holder}, got {other:?}"),
    }
}

mod alone;
mod begin;
mod database;
mod idempotency;
mod instances;
mod leases;
mod op_occs;
mod outbox;
mod packages;
mod subscriptions;
mod vims;
