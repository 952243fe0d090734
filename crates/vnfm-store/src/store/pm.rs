//! PM jobs and thresholds (one port generic over [`PmResource`]), and the reports of the jobs.

use super::Result;
use crate::model::{NewOutboxRow, Page, PmResource, StoredPm, Version};
use async_trait::async_trait;
use vnfm_types::{PmJob, Threshold};

/// The resources of one PM kind `T` (PM jobs, thresholds): one table each, the same verbs.
/// Reach it through [`crate::Store`] with `store.pm::<PmJob>()`.
#[async_trait]
pub trait PmResourceStore<T: PmResource>: Send + Sync {
    /// Stores a new resource at [`crate::Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if
    /// the id is taken.
    async fn create_pm(&self, record: &StoredPm<T>) -> Result<Version> {
        self.create_pm_keyed(record, None).await
    }

    /// [`PmResourceStore::create_pm`] that also commits `key`, if given, with the resource's id
    /// in the same transaction; [`crate::Conflict::KeyTaken`] (nothing written) when another
    /// request committed the key first.
    async fn create_pm_keyed(
        &self,
        record: &StoredPm<T>,
        key: Option<&crate::PendingKey>,
    ) -> Result<Version>;

    /// The resource and its version.
    async fn get_pm(&self, id: &str) -> Result<Option<(StoredPm<T>, Version)>>;

    /// Replaces the resource if its version is still `expected` and enqueues `notify` in the
    /// same transaction; returns the new version.
    async fn update_pm(
        &self,
        record: &StoredPm<T>,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the resource, its reports (of a PM job) and its pending notifications (outbox
    /// rows whose subscription id is the resource's; dead rows stay).
    async fn delete_pm(&self, id: &str) -> Result<()>;

    /// One page of the resources, ordered by id.
    async fn list_pm(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(StoredPm<T>, Version)>>;
}

/// PM jobs, their reports, and thresholds. Part of [`crate::Store`].
#[async_trait]
pub trait PmStore: PmResourceStore<PmJob> + PmResourceStore<Threshold> {
    /// In one transaction: stores `report`, replaces its job with `job` if the job's version
    /// is still `expected`, deletes the job's reports `dropped` and enqueues `notify`; returns
    /// the job's new version.
    async fn add_pm_report(
        &self,
        report: &crate::PmReportRecord,
        job: &crate::PmJobRecord,
        expected: Version,
        dropped: &[String],
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// The report `id` of PM job `job_id`.
    async fn get_pm_report(&self, job_id: &str, id: &str) -> Result<Option<crate::PmReportRecord>>;
}

impl dyn crate::Store + '_ {
    /// The port of the PM resources of kind `T`: `store.pm::<Threshold>().get_pm(id)`.
    pub fn pm<T: PmResource>(&self) -> &dyn PmResourceStore<T> {
        T::port(self)
    }
}

impl dyn PmStore + '_ {
    /// The port of the PM resources of kind `T`: `store.pm::<Threshold>().get_pm(id)`.
    pub fn pm<T: PmResource>(&self) -> &dyn PmResourceStore<T> {
        T::port(self)
    }
}

impl dyn crate::PmManagerStore + '_ {
    /// The port of the PM resources of kind `T`: `store.pm::<Threshold>().get_pm(id)`.
    pub fn pm<T: PmResource>(&self) -> &dyn PmResourceStore<T> {
        T::port(self)
    }
}
