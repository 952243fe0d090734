//! Subscriptions of every kind as documents in one id space, with their sealed credentials ([`crate::SubscriptionStore`] types them).

use super::Result;
use crate::model::{Page, ProjectScope};
use crate::subscriptions::{SubscriptionDocument, SubscriptionKind};
use async_trait::async_trait;
use vnfm_types::SubscriptionId;

/// Subscriptions of every kind as documents in one id space, with their sealed credentials ([`crate::SubscriptionStore`] types them). Part of [`crate::Store`].
#[async_trait]
pub trait SubscriptionDocumentStore: Send + Sync {
    //
    // Subscriptions of every kind share one table and one id space; each call names the kind
    // it sees. Callers use the typed methods of [`crate::SubscriptionStore`].

    /// Stores a subscription. [`crate::Conflict::AlreadyExists`] if the id is taken (by a
    /// subscription of any kind).
    async fn create_subscription_document(&self, document: &SubscriptionDocument) -> Result<()> {
        self.create_subscription_document_keyed(document, None)
            .await
    }

    /// [`SubscriptionDocumentStore::create_subscription_document`] that also commits `key`, if
    /// given, with the subscription's id in the same transaction;
    /// [`crate::Conflict::KeyTaken`] (nothing written) when another request committed the
    /// key first.
    async fn create_subscription_document_keyed(
        &self,
        document: &SubscriptionDocument,
        key: Option<&crate::PendingKey>,
    ) -> Result<()>;

    /// The subscription `id` of `kind`, with its encrypted credentials.
    async fn subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionDocument>>;

    /// One page of the subscriptions of `kind` in `scope`, ordered by id.
    async fn subscription_documents(
        &self,
        kind: SubscriptionKind,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionDocument>>;

    /// Deletes the subscription `id` of `kind` and its pending outbox rows (dead rows stay).
    /// [`crate::StoreError::NotFound`] if there is none of that kind.
    async fn delete_subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<()>;

    /// The oldest subscription of `kind` of `project` (`None`: of no project) with the same
    /// canonical filter (e.g. [`crate::canonical_filter`]) and callback URI, for SOL003's
    /// `303 See Other`.
    async fn duplicate_subscription_document(
        &self,
        kind: SubscriptionKind,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<SubscriptionDocument>>;

    /// The encrypted callback credentials of whatever an outbox row's `subscription_id`
    /// names, in one lookup: a subscription of any kind, or a PM job or threshold (SOL003
    /// v3.3.1 notifies those at their own callback). `None` when nothing has the id (any
    /// more); `Some(None)` when it has no credentials.
    async fn callback_authentication(&self, id: &SubscriptionId)
    -> Result<Option<Option<Vec<u8>>>>;
}
