//! VNF indicator values.

use super::Result;
use crate::model::{NewOutboxRow, Page, ProjectScope};
use async_trait::async_trait;
use vnfm_types::VnfInstanceId;

/// VNF indicator values. Part of [`crate::Store`].
#[async_trait]
pub trait IndicatorStore: Send + Sync {
    /// Writes the value of an indicator of an instance (the instance's project is recorded
    /// with it) and enqueues `notify` in the same transaction. The values of an instance are
    /// deleted with it.
    async fn put_indicator(
        &self,
        indicator: &vnfm_types::VnfIndicator,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// The indicator `indicator_id` of `instance`.
    async fn get_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<Option<vnfm_types::VnfIndicator>>;

    /// One page of the indicators in `scope` (of `instance` only, when given), ordered by
    /// instance and indicator id; `after` is the `next` marker of the previous page.
    async fn list_indicators(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<vnfm_types::VnfIndicator>>;

    /// Deletes the indicators of `instance` whose ids are not in `keep` (all of them when
    /// `keep` is empty); how many went.
    async fn retain_indicators(&self, instance: &VnfInstanceId, keep: &[String]) -> Result<u64>;

    /// One page of the instances that have indicator values, ordered by id.
    async fn instances_with_indicators(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<String>>;
}
