//! PM jobs, their reports, and thresholds.

use super::Result;
use crate::model::{NewOutboxRow, Page, Version};
use async_trait::async_trait;

/// PM jobs, their reports, and thresholds. Part of [`crate::Store`].
#[async_trait]
pub trait PmStore: Send + Sync {
    /// Stores a new PM job at [`crate::Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if the
    /// id is taken.
    async fn create_pm_job(&self, record: &crate::PmJobRecord) -> Result<Version>;

    /// The PM job and its version.
    async fn get_pm_job(&self, id: &str) -> Result<Option<(crate::PmJobRecord, Version)>>;

    /// Replaces the PM job if its version is still `expected` and enqueues `notify` in the
    /// same transaction; returns the new version.
    async fn update_pm_job(
        &self,
        record: &crate::PmJobRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the PM job, its reports and its pending notifications (outbox rows whose
    /// subscription id is the job's; dead rows stay).
    async fn delete_pm_job(&self, id: &str) -> Result<()>;

    /// One page of PM jobs, ordered by id.
    async fn list_pm_jobs(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::PmJobRecord, Version)>>;

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

    /// Stores a new threshold at [`crate::Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if
    /// the id is taken.
    async fn create_threshold(&self, record: &crate::ThresholdRecord) -> Result<Version>;

    /// The threshold and its version.
    async fn get_threshold(&self, id: &str) -> Result<Option<(crate::ThresholdRecord, Version)>>;

    /// Replaces the threshold if its version is still `expected` and enqueues `notify` in the
    /// same transaction; returns the new version.
    async fn update_threshold(
        &self,
        record: &crate::ThresholdRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the threshold and its pending notifications.
    async fn delete_threshold(&self, id: &str) -> Result<()>;

    /// One page of thresholds, ordered by id.
    async fn list_thresholds(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::ThresholdRecord, Version)>>;
}
