//! The VNF indicators: [`IndicatorStore`] on the statements of `crate::sql::indicators`.

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{NewOutboxRow, Page, ProjectScope, Result};
use vnfm_types::VnfInstanceId;

use super::{Database, SqlStore};
use crate::sql::outbox;

#[async_trait]
impl<D: Database> IndicatorStore for SqlStore<D> {
    async fn put_indicator(
        &self,
        indicator: &vnfm_types::VnfIndicator,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let (indicator, notify) = (indicator.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::indicators::put(
            tx, &indicator, &notify
        )
        .await)
        .await
    }

    async fn get_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<Option<vnfm_types::VnfIndicator>> {
        on_reader!(self, |c| crate::sql::indicators::get(
            c,
            instance.as_str(),
            indicator_id
        )
        .await)
    }

    async fn list_indicators(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<vnfm_types::VnfIndicator>> {
        on_reader!(self, |c| crate::sql::indicators::page_of(
            c,
            scope,
            instance.map(VnfInstanceId::as_str),
            after,
            limit
        )
        .await)
    }

    async fn retain_indicators(&self, instance: &VnfInstanceId, keep: &[String]) -> Result<u64> {
        let (instance, keep) = (instance.clone(), keep.to_vec());
        in_transaction!(self, |tx| {
            crate::sql::indicators::retain(tx, instance.as_str(), &keep).await
        })
        .await
    }

    async fn instances_with_indicators(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<String>> {
        on_reader!(self, |c| crate::sql::indicators::instances(c, after, limit)
            .await)
    }
}
