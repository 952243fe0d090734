//! The alarms: [`AlarmStore`] on the statements of `crate::sql::alarms`.

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{NewOutboxRow, Page, ProjectScope, Result, Version};
use vnfm_types::VnfInstanceId;

use super::{Database, SqlStore};
use crate::sql::outbox;

#[async_trait]
impl<D: Database> AlarmStore for SqlStore<D> {
    async fn create_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::alarms::create(
            tx, &record, &notify
        )
        .await)
        .await
    }

    async fn update_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::alarms::update(
            tx, &record, expected, &notify
        )
        .await)
        .await
    }

    async fn get_alarm(&self, id: &str) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::get(c, id).await)
    }

    async fn open_alarm(
        &self,
        dedup_key: &str,
    ) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::open_by_key(c, dedup_key)
            .await)
    }

    async fn open_alarms(
        &self,
        instance: Option<&VnfInstanceId>,
    ) -> Result<Vec<(vnfm_store::AlarmRecord, Version)>> {
        let instance = instance.map(|i| i.to_string());
        on_reader!(self, |c| crate::sql::alarms::open(c, instance.as_deref())
            .await)
    }

    async fn list_alarms(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::page_of(
            c, scope, after, limit
        )
        .await)
    }
}
