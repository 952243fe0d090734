//! The subscriptions' documents: [`SubscriptionDocumentStore`] on the statements of
//! `crate::sql::subscriptions`.

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{Page, PendingKey, ProjectScope, Result, SubscriptionDocument, SubscriptionKind};
use vnfm_types::SubscriptionId;

use super::{Database, SqlStore};
use crate::sql::subscriptions;

#[async_trait]
impl<D: Database> SubscriptionDocumentStore for SqlStore<D> {
    async fn create_subscription_document_keyed(
        &self,
        document: &SubscriptionDocument,
        key: Option<&PendingKey>,
    ) -> Result<()> {
        let id = document.id.as_str().to_owned();
        let document = document.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { subscriptions::create(tx, &document).await })
        })
        .await
    }

    async fn subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::get(c, kind, id.as_str()).await)
    }

    async fn subscription_documents(
        &self,
        kind: SubscriptionKind,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::page_of(
            c, kind, scope, after, limit
        )
        .await)
    }

    async fn delete_subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<()> {
        let id = id.clone();
        in_transaction!(self, |tx| subscriptions::delete(tx, kind, id.as_str())
            .await)
        .await
    }

    async fn duplicate_subscription_document(
        &self,
        kind: SubscriptionKind,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::duplicate(
            c,
            kind,
            canonical_filter,
            callback_uri,
            project
        )
        .await)
    }

    async fn callback_authentication(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<Option<Vec<u8>>>> {
        on_reader!(self, |c| subscriptions::callback_authentication(
            c,
            id.as_str()
        )
        .await)
    }
}
