//! Subscriptions of every kind (lifecycle, package management, fault and performance
//! management, VNF indicators) through one set of [`Store`] methods: the trait stays
//! object-safe by carrying each subscription as a [`SubscriptionDocument`] of a
//! [`SubscriptionKind`], and callers use the typed face, [`SubscriptionStore`], generic over
//! the resource.

use std::fmt;

use async_trait::async_trait;
use vnfm_types::SubscriptionId;

use crate::json::{document_from_json, document_to_json};
use crate::model::{Page, ProjectScope, StoredSubscription, SubscriptionResource};
use crate::store::{Result, SubscriptionDocumentStore};

/// Which kind of subscription a [`SubscriptionDocument`] is: its stored `kind` and what it is
/// called in errors (a resource's [`SubscriptionResource::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionKind {
    /// The stored `kind` (`lcm`, `pkgm`, `fm`, `pm`, `indicator`).
    pub name: &'static str,
    /// What the resource is called in errors.
    pub what: &'static str,
}

/// A subscription of any kind as the [`crate::Store`] keeps it: the resource as JSON text, with the
/// members the store looks subscriptions up by.
#[derive(Clone, PartialEq)]
pub struct SubscriptionDocument {
    /// The kind of the resource.
    pub kind: SubscriptionKind,
    /// The subscription id (one id space for every kind).
    pub id: SubscriptionId,
    /// Where notifications go.
    pub callback_uri: String,
    /// The resource, as JSON text.
    pub document: String,
    /// The canonical form of the resource's filter (duplicate detection).
    pub canonical_filter: String,
    /// Encrypted `authentication` of the request, if any.
    pub authentication: Option<Vec<u8>>,
    /// The project of the caller that created it (see [`ProjectScope`]).
    pub project: Option<String>,
}

impl SubscriptionDocument {
    /// The document of `record`.
    pub fn of<S: SubscriptionResource>(record: &StoredSubscription<S>) -> Result<Self> {
        let sub = &record.subscription;
        let document = document_to_json(S::WHAT, sub)?;
        Ok(SubscriptionDocument {
            kind: S::kind(),
            id: sub.id().clone(),
            callback_uri: sub.callback_uri().to_owned(),
            document,
            canonical_filter: record.canonical_filter.clone(),
            authentication: record.authentication.clone(),
            project: record.project.clone(),
        })
    }

    /// The typed record. A document that does not decode as `S` is
    /// [`crate::StoreError::Corrupt`], naming the position of the error, never the content (it may
    /// hold credentials).
    pub fn into_record<S: SubscriptionResource>(self) -> Result<StoredSubscription<S>> {
        let subscription = document_from_json(S::WHAT, &self.id.0, &self.document)?;
        Ok(StoredSubscription {
            subscription,
            canonical_filter: self.canonical_filter,
            authentication: self.authentication,
            project: self.project,
        })
    }
}

impl fmt::Debug for SubscriptionDocument {
    // The credentials are shown by size only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionDocument")
            .field("kind", &self.kind.name)
            .field("id", &self.id)
            .field("callback_uri", &self.callback_uri)
            .field("canonical_filter", &self.canonical_filter)
            .field(
                "authentication",
                &self
                    .authentication
                    .as_ref()
                    .map(|a| format!("<{} bytes>", a.len())),
            )
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

/// The typed subscription methods of every [`crate::Store`], generic over the resource: one
/// implementation for every kind, on the store's [`SubscriptionDocument`] methods.
#[async_trait]
pub trait SubscriptionStore: SubscriptionDocumentStore {
    /// Stores a subscription. [`crate::Conflict::AlreadyExists`] if the id is taken (by a
    /// subscription of any kind).
    async fn create_subscription<S: SubscriptionResource>(
        &self,
        record: &StoredSubscription<S>,
    ) -> Result<()> {
        self.create_subscription_keyed(record, None).await
    }

    /// [`SubscriptionStore::create_subscription`] that also commits `key`, if given, with the
    /// subscription's id in the same transaction; [`crate::Conflict::KeyTaken`] (nothing
    /// written) when another request committed the key first.
    async fn create_subscription_keyed<S: SubscriptionResource>(
        &self,
        record: &StoredSubscription<S>,
        key: Option<&crate::PendingKey>,
    ) -> Result<()> {
        self.create_subscription_document_keyed(&SubscriptionDocument::of(record)?, key)
            .await
    }

    /// The subscription `id` of kind `S` with its encrypted credentials (`None` if there is
    /// none, or it is of another kind).
    async fn get_subscription<S: SubscriptionResource>(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<StoredSubscription<S>>> {
        self.subscription_document(S::kind(), id)
            .await?
            .map(SubscriptionDocument::into_record)
            .transpose()
    }

    /// One page of the subscriptions of kind `S` in `scope`, ordered by id.
    async fn list_subscriptions<S: SubscriptionResource>(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<StoredSubscription<S>>> {
        let page = self
            .subscription_documents(S::kind(), scope, after, limit)
            .await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(SubscriptionDocument::into_record)
                .collect::<Result<_>>()?,
            next: page.next,
        })
    }

    /// Deletes the subscription `id` of kind `S` and its pending outbox rows (dead rows
    /// stay). [`crate::StoreError::NotFound`] if there is none of that kind.
    async fn delete_subscription<S: SubscriptionResource>(
        &self,
        id: &SubscriptionId,
    ) -> Result<()> {
        self.delete_subscription_document(S::kind(), id).await
    }

    /// The oldest subscription of kind `S` of `project` (`None`: of no project) with this
    /// canonical filter and callback URI, for SOL003's `303 See Other`.
    async fn find_duplicate_subscription<S: SubscriptionResource>(
        &self,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<StoredSubscription<S>>> {
        self.duplicate_subscription_document(S::kind(), canonical_filter, callback_uri, project)
            .await?
            .map(SubscriptionDocument::into_record)
            .transpose()
    }
}

impl<T: SubscriptionDocumentStore + ?Sized> SubscriptionStore for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreError;
    use vnfm_types::{FmSubscription, LccnSubscription};

    fn lccn() -> StoredSubscription<LccnSubscription> {
        let sub: LccnSubscription = serde_json::from_value(serde_json::json!({
            "id": "s-1",
            "callbackUri": "http://nfvo/cb",
            "_links": {"self": {"href": "http://vnfm/vnflcm/v2/subscriptions/s-1"}}
        }))
        .unwrap();
        StoredSubscription::new(sub, Some(b"sealed-secret".to_vec())).in_project(Some("p".into()))
    }

    #[test]
    fn a_record_survives_its_document() {
        let record = lccn();
        let doc = SubscriptionDocument::of(&record).unwrap();
        assert_eq!(doc.kind, LccnSubscription::kind());
        assert_eq!(doc.kind.name, "lcm");
        assert_eq!(doc.id.as_str(), "s-1");
        assert_eq!(doc.callback_uri, "http://nfvo/cb");
        assert_eq!(
            doc.clone().into_record::<LccnSubscription>().unwrap(),
            record
        );
        // Credentials are shown by size only.
        let shown = format!("{doc:?}");
        assert!(
            shown.contains("<13 bytes>") && !shown.contains("sealed"),
            "{shown}"
        );
    }

    #[test]
    fn a_document_of_another_shape_is_corrupt_and_its_content_not_told() {
        let mut doc = SubscriptionDocument::of(&lccn()).unwrap();
        doc.document = r#"{"id": "s-1", "password": "hunter2", "callbackUri": 3}"#.into();
        let err = doc.into_record::<FmSubscription>().unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(
            msg.contains("s-1") && msg.contains("FM subscription"),
            "{msg}"
        );
        assert!(!msg.contains("hunter2"), "{msg}");
    }
}
