//! Alarms of fault management.

use super::Result;
use crate::model::{NewOutboxRow, Page, ProjectScope, Version};
use async_trait::async_trait;
use vnfm_types::VnfInstanceId;

/// Alarms of fault management. Part of [`crate::Store`].
#[async_trait]
pub trait AlarmStore: Send + Sync {
    /// Stores a new alarm at [`crate::Version::FIRST`] and enqueues `notify` in the same transaction.
    /// The alarm belongs to the project of its instance (`managedObjectId`).
    /// [`crate::Conflict::AlreadyExists`] if the id is taken or an open alarm (one without
    /// `alarmClearedTime`) has the same [`crate::AlarmRecord::dedup_key`]: the caller then updates
    /// that one.
    async fn create_alarm(
        &self,
        record: &crate::model::AlarmRecord,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Replaces the alarm if its version is still `expected` and enqueues `notify` in the same
    /// transaction; returns the new version. [`crate::StoreError::VersionMismatch`] if it changed.
    async fn update_alarm(
        &self,
        record: &crate::model::AlarmRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// The alarm and its version.
    async fn get_alarm(&self, id: &str) -> Result<Option<(crate::model::AlarmRecord, Version)>>;

    /// The open alarm with this de-duplication key, if any.
    async fn open_alarm(
        &self,
        dedup_key: &str,
    ) -> Result<Option<(crate::model::AlarmRecord, Version)>>;

    /// Every open alarm (one without `alarmClearedTime`), of `instance` only when given,
    /// ordered by id. Open alarms are the faults present now, so there are few.
    async fn open_alarms(
        &self,
        instance: Option<&VnfInstanceId>,
    ) -> Result<Vec<(crate::model::AlarmRecord, Version)>>;

    /// One page of the alarms (open and cleared) in `scope`, ordered by id.
    async fn list_alarms(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::model::AlarmRecord, Version)>>;
}
