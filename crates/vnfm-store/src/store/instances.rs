//! VNF instances: documents with versions, project scoping, filtered keyset-paginated lists and a lazy stream.

use super::Result;
use crate::error::StoreError;
use crate::idempotency::PendingKey;
use crate::model::{InstanceQuery, NewOutboxRow, Page, ScopedKind, Version};
use async_trait::async_trait;
use futures_core::stream::BoxStream;
use serde_json::Value;
use vnfm_types::{VnfInstance, VnfInstanceId};

/// VNF instances: documents with versions, project scoping, filtered keyset-paginated lists and a lazy stream. Part of [`crate::Store`].
#[async_trait]
pub trait InstanceStore: Send + Sync {
    /// [`crate::InstanceStore::create_instance_in`] of no project.
    async fn create_instance(
        &self,
        instance: &VnfInstance,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        self.create_instance_in(instance, None, notify).await
    }

    /// Stores a new instance of `project` (see [`crate::ProjectScope`]) at [`crate::Version::FIRST`], and
    /// enqueues `notify` (e.g. the `VnfIdentifierCreationNotification`s) in the same
    /// transaction. [`crate::Conflict::AlreadyExists`] if the id is taken. The instance's
    /// op-occs and alarms belong to the same project.
    async fn create_instance_in(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        self.create_instance_keyed(instance, project, notify, None)
            .await
    }

    /// [`crate::InstanceStore::create_instance_in`] that also commits `key`, if given, with the
    /// instance's id in the same transaction; [`crate::Conflict::KeyTaken`] (nothing written)
    /// when another request committed the key first.
    async fn create_instance_keyed(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
        key: Option<&PendingKey>,
    ) -> Result<Version>;

    /// The project of the resource `id` of `kind` (to tell whether a caller's
    /// [`crate::ProjectScope`] admits it): `None` if no such resource exists, `Some(None)` if it
    /// belongs to no project.
    async fn project_of(&self, kind: ScopedKind, id: &str) -> Result<Option<Option<String>>>;

    /// The projects of the resources `ids` of `kind`, in one read: each existing resource's id
    /// with its project (`None` when it belongs to none); ids of no existing resource are left
    /// out.
    async fn projects_of(
        &self,
        kind: ScopedKind,
        ids: &[&str],
    ) -> Result<Vec<(String, Option<String>)>>;

    /// The instance and its version.
    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>>;

    /// Replaces the instance document if its version is still `expected`; returns the new
    /// version. Keeps the index of VIMs the instance uses up to date.
    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version>;

    /// Deletes the instance if its version is still `expected` and no op-occ holds it
    /// ([`crate::Conflict::InstanceBusy`] otherwise); enqueues `notify` in the same transaction.
    /// Its op-occs stay (they are history).
    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// One page of instances matching `query`, ordered by id.
    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>>;

    /// [`crate::InstanceStore::list_instances`] with each instance as its stored JSON document, decoded
    /// straight into a [`Value`]: for callers that filter and reshape documents anyway (the
    /// REST lists), which saves building each typed instance only to turn it into JSON.
    async fn list_instance_documents(&self, query: &InstanceQuery) -> Result<Page<Value>> {
        let page = self.list_instances(query).await?;
        let items = page
            .items
            .iter()
            .map(|i| {
                serde_json::to_value(i).map_err(|e| {
                    StoreError::Invalid(format!("VNF instance {} is not JSON: {e}", i.id))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            items,
            next: page.next,
        })
    }

    /// [`crate::InstanceStore::list_instances`] with each instance as the JSON text of its default view: its
    /// document without the members a SOL003 list leaves out when the request selects
    /// nothing (`vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED`, among them
    /// `vimConnectionInfo`, so a view holds no VIM secret). The SQL stores keep this text
    /// next to each document, written by the same statement, so a page of them is read
    /// without parsing any document; the provided implementation derives it from
    /// [`crate::InstanceStore::list_instance_documents`].
    async fn list_instance_default_views(&self, query: &InstanceQuery) -> Result<Page<String>> {
        let page = self.list_instance_documents(query).await?;
        let items = page
            .items
            .into_iter()
            .map(|mut doc| {
                if let Value::Object(members) = &mut doc {
                    for m in vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED {
                        members.shift_remove(*m);
                    }
                }
                doc.to_string()
            })
            .collect();
        Ok(Page {
            items,
            next: page.next,
        })
    }

    /// All instances matching `query` (from `query.after`), ordered by id, fetched lazily in
    /// batches of `query.limit`: memory stays bounded by one batch whatever the table size.
    /// Instances created while streaming appear if their id sorts after the last batch read.
    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>>;
}
