//! The VNF instances: [`InstanceStore`] on the statements of `crate::sql::instances`.

use std::collections::VecDeque;

use async_trait::async_trait;
use futures_core::stream::BoxStream;
use serde_json::Value;
use vnfm_store::prelude::*;
use vnfm_store::{InstanceQuery, NewOutboxRow, Page, PendingKey, Result, ScopedKind, Version};
use vnfm_types::{VnfInstance, VnfInstanceId};

use super::{Database, SqlStore};
use crate::sql::{instances, outbox};

#[async_trait]
impl<D: Database> InstanceStore for SqlStore<D> {
    async fn create_instance_keyed(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let (instance, notify) = (
            instances::EncodedInstance::of(instance)?,
            outbox::encode(notify)?,
        );
        let project = project.map(str::to_owned);
        let (rows, id) = (notify.len(), instance.id().to_owned());
        let created = self
            .write_creating(key, &id, move |tx| {
                Box::pin(async move {
                    instances::create(tx, &instance, project.as_deref(), &notify).await
                })
            })
            .await;
        if created.is_ok() && rows > 0 {
            self.enqueued();
        }
        created
    }

    async fn project_of(&self, kind: ScopedKind, id: &str) -> Result<Option<Option<String>>> {
        on_reader!(self, |c| crate::sql::project_of(c, kind, id).await)
    }

    async fn projects_of(
        &self,
        kind: ScopedKind,
        ids: &[&str],
    ) -> Result<Vec<(String, Option<String>)>> {
        on_reader!(self, |c| crate::sql::projects_of(c, kind, ids).await)
    }

    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>> {
        on_reader!(self, |c| instances::get(c, id.as_str()).await)
    }

    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version> {
        let instance = instances::EncodedInstance::of(instance)?;
        in_transaction!(self, |tx| instances::update(tx, &instance, expected).await).await
    }

    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let (id, notify) = (id.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| instances::delete(
            tx,
            id.as_str(),
            expected,
            &notify
        )
        .await)
        .await
    }

    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>> {
        on_reader!(self, |c| instances::page_of(c, query).await)
    }

    async fn list_instance_documents(&self, query: &InstanceQuery) -> Result<Page<Value>> {
        on_reader!(self, |c| instances::documents_of(c, query).await)
    }

    async fn list_instance_default_views(&self, query: &InstanceQuery) -> Result<Page<String>> {
        on_reader!(self, |c| instances::default_views_of(c, query).await)
    }

    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>> {
        struct State<D> {
            db: D,
            query: InstanceQuery,
            buffer: VecDeque<VnfInstance>,
            done: bool,
        }
        let state = State {
            db: self.0.clone(),
            query: query.clone(),
            buffer: VecDeque::new(),
            done: false,
        };
        Box::pin(futures_util::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(item) = st.buffer.pop_front() {
                    return Some((Ok(item), st));
                }
                if st.done {
                    return None;
                }
                let page = match st.db.reader().await {
                    Ok(mut conn) => instances::page_of(&mut *conn, &st.query).await,
                    Err(e) => Err(e),
                };
                match page {
                    Ok(page) => {
                        st.done = page.next.is_none();
                        st.query.after = page.next;
                        st.buffer.extend(page.items);
                    }
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                }
            }
        }))
    }
}
