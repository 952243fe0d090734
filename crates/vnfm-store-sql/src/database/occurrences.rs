//! Operation occurrences: [`OpOccStore`] on the statements of `crate::sql::op_occs`. A step
//! or a begun operation that enqueues no notification is written, on PostgreSQL, by one
//! statement that commits by itself ([`Database::write_alone`]); when it writes nothing, the
//! transaction that follows writes it or says why not.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use vnfm_store::prelude::*;
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{JournalEntry, Lease, OpOccQuery, Page, PendingKey, Result};
use vnfm_store::{StartCondition, StepRecord, StepWritten, Timestamp, Version};
use vnfm_types::{VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

use super::{Database, SqlStore};
use crate::sql::op_occs;

#[async_trait]
impl<D: Database> OpOccStore for SqlStore<D> {
    async fn start_operation_keyed(
        &self,
        occ: &VnfLcmOpOcc,
        lease: &Lease,
        expected: Option<Version>,
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let (owned_occ, lease) = (occ.clone(), lease.clone());
        let started = self
            .write_creating(key, occ.id.as_str(), move |tx| {
                Box::pin(async move { op_occs::start(tx, &owned_occ, &lease, expected).await })
            })
            .await;
        self.busy_or(occ, started).await
    }

    async fn begin_operation_keyed(
        &self,
        started: &VnfLcmOpOcc,
        lease: &Lease,
        condition: &StartCondition,
        record: &StepRecord,
        key: Option<&PendingKey>,
    ) -> Result<Option<StepWritten>> {
        let step = Arc::new(op_occs::EncodedStep::of(record)?);
        let starting = op_occs::Started::of(started, lease, record);
        // With no idempotency key to write beside it, one statement that commits by itself;
        // when it wrote nothing, the transaction below says why (or writes what changed).
        if key.is_none()
            && let Some(alone) = op_occs::Alone::of::<D::Conn>(&starting, lease, condition, &step)
        {
            let at_once = step.clone();
            let begun = self
                .0
                .write_alone(move |conn| {
                    Box::pin(async move { op_occs::begin_alone(conn, &alone, &at_once).await })
                })
                .await;
            match begun {
                Ok(None) => {}
                other => return self.busy_or(started, other).await,
            }
        }
        let (lease, condition) = (lease.clone(), *condition);
        let rows = record.outbox.len();
        let begun = self
            .write_creating_if(
                key,
                started.id.as_str(),
                move |tx| {
                    Box::pin(async move {
                        op_occs::begin(tx, starting, &lease, &condition, &step).await
                    })
                },
                Option::is_some,
            )
            .await;
        if begun.is_ok() && rows > 0 {
            self.enqueued();
        }
        self.busy_or(started, begun).await
    }

    async fn record_step(&self, record: &StepRecord) -> Result<StepWritten> {
        let step = Arc::new(op_occs::EncodedStep::of(record)?);
        // One statement that commits by itself; when it wrote nothing, the transaction below
        // says why.
        if op_occs::steps_alone::<D::Conn>(&step) {
            let alone = step.clone();
            let written = self
                .0
                .write_alone(move |conn| {
                    Box::pin(async move { op_occs::record_step_alone(conn, &alone).await })
                })
                .await?;
            if let Some(written) = written {
                return Ok(written);
            }
        }
        in_notifying_transaction!(self, record.outbox.len(), |tx| op_occs::record_step(
            tx, &step
        )
        .await)
        .await
    }

    async fn get_op_occ(&self, id: &VnfLcmOpOccId) -> Result<Option<(VnfLcmOpOcc, Version)>> {
        on_reader!(self, |c| op_occs::get(c, id.as_str()).await)
    }

    async fn get_op_occ_text(&self, id: &VnfLcmOpOccId) -> Result<Option<String>> {
        on_reader!(self, |c| op_occs::get_text(c, id.as_str()).await)
    }

    async fn active_op_occ(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Option<(VnfLcmOpOcc, Version)>> {
        on_reader!(self, |c| op_occs::active(c, instance_id.as_str()).await)
    }

    async fn list_op_occs(&self, query: &OpOccQuery) -> Result<Page<VnfLcmOpOcc>> {
        on_reader!(self, |c| op_occs::page_of(c, query).await)
    }

    async fn count_op_occs_by_state(&self) -> Result<Vec<(String, i64)>> {
        on_reader!(self, |c| op_occs::count_by_state(c).await)
    }

    async fn journal(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Vec<JournalEntry>> {
        on_reader!(self, |c| op_occs::journal(c, op_occ_id.as_str()).await)
    }

    async fn last_completed_step(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<JournalEntry>> {
        on_reader!(self, |c| op_occs::last_completed_step(
            c,
            op_occ_id.as_str()
        )
        .await)
    }

    async fn lease(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<Lease>> {
        on_reader!(self, |c| op_occs::lease(c, op_occ_id.as_str()).await)
    }

    async fn renew_lease(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        owner: &str,
        expires_at: Timestamp,
    ) -> Result<()> {
        let (id, owner) = (op_occ_id.clone(), owner.to_owned());
        in_transaction!(self, |tx| op_occs::set_lease(
            tx,
            &id,
            &owner,
            Some(expires_at)
        )
        .await)
        .await
    }

    async fn release_lease(&self, op_occ_id: &VnfLcmOpOccId, owner: &str) -> Result<()> {
        let (id, owner) = (op_occ_id.clone(), owner.to_owned());
        in_transaction!(self, |tx| op_occs::set_lease(tx, &id, &owner, None).await).await
    }

    async fn claim_operation(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        expected: Version,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<()> {
        let (id, lease) = (op_occ_id.clone(), lease.clone());
        in_transaction!(self, |tx| op_occs::claim(tx, &id, expected, &lease, now)
            .await)
        .await
    }

    async fn claim_expired(
        &self,
        owner: &str,
        now: Timestamp,
        new_expiry: Timestamp,
        limit: u32,
    ) -> Result<Vec<(VnfLcmOpOcc, Version)>> {
        let owner = owner.to_owned();
        in_transaction!(self, |tx| {
            op_occs::claim_expired(tx, &owner, now, new_expiry, limit).await
        })
        .await
    }

    async fn has_expired_leases(&self, now: Timestamp) -> Result<bool> {
        on_reader!(self, |c| op_occs::has_expired(c, now).await)
    }

    async fn get_op_occ_data(&self, op_occ_id: &VnfLcmOpOccId, key: &str) -> Result<Option<Value>> {
        on_reader!(self, |c| op_occs::get_data(c, op_occ_id.as_str(), key)
            .await)
    }

    async fn put_op_occ_data(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        key: &str,
        value: &Value,
    ) -> Result<()> {
        let (id, key, value) = (op_occ_id.clone(), key.to_owned(), value.clone());
        in_transaction!(self, |tx| {
            op_occs::put_data_checked(tx, id.as_str(), &key, &value).await
        })
        .await
    }
}

impl<D: Database> SqlStore<D> {
    /// `result` of inserting `occ`, where a unique violation (the insert hit a unique index:
    /// a concurrent start took the instance, or the id is taken) is told apart by looking
    /// again outside the transaction, which is gone: [`Conflict::InstanceBusy`] naming the
    /// holder, else [`Conflict::AlreadyExists`].
    async fn busy_or<T>(&self, occ: &VnfLcmOpOcc, result: Result<T>) -> Result<T> {
        let Err(StoreError::Conflict(Conflict::AlreadyExists { .. })) = result else {
            return result;
        };
        let instance_id = occ.vnf_instance_id.as_str();
        let busy = on_reader!(self, |c| op_occs::holder(c, instance_id).await)?;
        Err(match busy {
            Some((op_occ_id, state)) if op_occ_id != occ.id => {
                StoreError::Conflict(Conflict::InstanceBusy {
                    instance_id: instance_id.to_owned(),
                    op_occ_id,
                    state,
                })
            }
            _ => StoreError::Conflict(Conflict::AlreadyExists {
                kind: op_occs::OP_OCC,
                id: occ.id.0.clone(),
            }),
        })
    }
}
