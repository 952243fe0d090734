//! The settings and the schema version: [`SettingStore`] on the statements of
//! `crate::sql::settings`.

use async_trait::async_trait;
use serde_json::Value;
use vnfm_store::Result;
use vnfm_store::prelude::*;

use super::{Database, SqlStore};
use crate::sql::settings;

#[async_trait]
impl<D: Database> SettingStore for SqlStore<D> {
    async fn get_setting(&self, name: &str) -> Result<Option<Value>> {
        on_reader!(self, |c| settings::get(c, name).await)
    }

    async fn put_setting(&self, name: &str, value: Option<&Value>) -> Result<()> {
        let (name, value) = (name.to_owned(), value.cloned());
        in_transaction!(self, |tx| settings::put(tx, &name, value.as_ref()).await).await
    }

    async fn schema_version(&self) -> Result<i64> {
        on_reader!(self, |c| settings::schema_version(c).await)
    }
}
