//! Performance management: [`PmResourceStore`] (PM jobs, thresholds) and [`PmStore`] (reports)
//! on the statements of `crate::sql::pm`.

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{NewOutboxRow, Page, PendingKey, PmResource, Result, StoredPm, Version};

use super::{Database, SqlStore};
use crate::sql::outbox;

#[async_trait]
impl<D: Database, T: PmResource> PmResourceStore<T> for SqlStore<D> {
    async fn create_pm_keyed(
        &self,
        record: &StoredPm<T>,
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let id = record.resource.id().to_owned();
        let record = record.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { crate::sql::pm::create(tx, &record).await })
        })
        .await
    }

    async fn get_pm(&self, id: &str) -> Result<Option<(StoredPm<T>, Version)>> {
        on_reader!(self, |c| crate::sql::pm::get(c, id).await)
    }

    async fn update_pm(
        &self,
        record: &StoredPm<T>,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::pm::update(
            tx, &record, expected, &notify
        )
        .await)
        .await
    }

    async fn delete_pm(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        in_transaction!(self, |tx| crate::sql::pm::delete::<_, T>(tx, &id).await).await
    }

    async fn list_pm(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(StoredPm<T>, Version)>> {
        on_reader!(self, |c| crate::sql::pm::page_of(c, after, limit).await)
    }
}

#[async_trait]
impl<D: Database> PmStore for SqlStore<D> {
    async fn add_pm_report(
        &self,
        report: &vnfm_store::PmReportRecord,
        job: &vnfm_store::PmJobRecord,
        expected: Version,
        dropped: &[String],
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (report, job) = (report.clone(), job.clone());
        let (dropped, notify) = (dropped.to_vec(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::pm::add_report(
            tx, &report, &job, expected, &dropped, &notify
        )
        .await)
        .await
    }

    async fn get_pm_report(
        &self,
        job_id: &str,
        id: &str,
    ) -> Result<Option<vnfm_store::PmReportRecord>> {
        on_reader!(self, |c| crate::sql::pm::report(c, job_id, id).await)
    }
}
