//! The VIM registry's records: [`VimStore`] on the statements of `crate::sql::vims`.

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{PendingKey, Result, Version, VimRecord};
use vnfm_types::{VimId, VnfInstanceId};

use super::{Database, SqlStore};
use crate::sql::{instances, vims};

#[async_trait]
impl<D: Database> VimStore for SqlStore<D> {
    async fn create_vim_keyed(&self, vim: &VimRecord, key: Option<&PendingKey>) -> Result<Version> {
        let id = vim.id.as_str().to_owned();
        let vim = vim.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { vims::create(tx, &vim).await })
        })
        .await
    }

    async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>> {
        on_reader!(self, |c| vims::get(c, id.as_str()).await)
    }

    async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version> {
        let vim = vim.clone();
        in_transaction!(self, |tx| vims::update(tx, &vim, expected).await).await
    }

    async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()> {
        let id = id.clone();
        in_transaction!(self, |tx| vims::delete(tx, id.as_str(), expected).await).await
    }

    async fn list_vims(&self) -> Result<Vec<(VimRecord, Version)>> {
        on_reader!(self, |c| vims::all(c).await)
    }

    async fn vims_created_by(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Vec<(VimRecord, Version)>> {
        on_reader!(self, |c| vims::created_by(c, instance_id.as_str()).await)
    }

    async fn instances_using_vim(&self, vim_id: &VimId) -> Result<Vec<VnfInstanceId>> {
        on_reader!(self, |c| instances::using_vim(c, vim_id.as_str()).await)
    }

    async fn vim_usage(&self) -> Result<Vec<(VimId, VnfInstanceId)>> {
        on_reader!(self, |c| instances::vim_usage(c).await)
    }
}
