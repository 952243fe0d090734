//! The SQL implementation of [`crate::Store`], shared by the SQLite and PostgreSQL backends.
//!
//! Both backends run the same statements: sqlx binds `$N` placeholders on SQLite too, and the
//! schemas differ only in column types. What differs is passed to [`impl_sql_store!`] as
//! literals: the row-locking suffixes (`FOR UPDATE`, `FOR UPDATE SKIP LOCKED`; SQLite has
//! neither and serialises writers with `BEGIN IMMEDIATE` instead) and the substring function.
//! Each backend provides `reader()` (a pool for plain reads) and `begin_write()` (a write
//! transaction).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use vnfm_types::VnfInstance;

use crate::error::StoreError;

/// A schema migration: version, description, SQL.
pub(crate) type MigrationSource = (i64, &'static str, &'static str);

/// The embedded migrator for `sources`.
pub(crate) fn migrator(sources: &[MigrationSource]) -> Migrator {
    Migrator::with_migrations(
        sources
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    (*description).into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// Runs the migrations, refusing a database migrated by a newer build.
pub(crate) async fn migrate<C>(
    sources: &[MigrationSource],
    applied_max: Option<i64>,
    conn: &mut C,
) -> Result<(), StoreError>
where
    C: sqlx::migrate::Migrate,
{
    let supported = sources.iter().map(|m| m.0).max().unwrap_or(0);
    if let Some(found) = applied_max.filter(|v| *v > supported) {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    migrator(sources)
        .run_direct(None, conn, false)
        .await
        .map_err(|e| match e {
            sqlx::migrate::MigrateError::VersionMissing(found) => {
                StoreError::SchemaTooNew { found, supported }
            }
            other => StoreError::Migration(other.to_string()),
        })
}

/// Milliseconds since the epoch, for `created_at`/`updated_at`.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The JSON text of a document.
pub(crate) fn to_json<T: Serialize>(kind: &'static str, v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v)
        .map_err(|e| StoreError::Invalid(format!("{kind} does not serialize to JSON: {e}")))
}

/// Decodes a stored document. The error names the position, never the content (documents may
/// hold credentials).
pub(crate) fn from_json<T: DeserializeOwned>(
    kind: &'static str,
    id: &str,
    doc: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(doc).map_err(|e| StoreError::Corrupt {
        kind,
        id: id.to_owned(),
        reason: format!(
            "{:?} error in stored JSON at line {} column {}",
            e.classify(),
            e.line(),
            e.column()
        ),
    })
}

/// The distinct VIM ids an instance uses: those its `vimConnectionInfo` entries reference, and
/// those its resources live on. A resource handle's `vimConnectionId` names an entry of
/// `vimConnectionInfo` (and so a VIM already counted); one that names no entry is taken to name
/// the VIM itself, so a resource whose connection entry is gone still pins its VIM.
pub(crate) fn vim_ids(instance: &VnfInstance) -> Vec<String> {
    let connections = instance.vim_connection_info.as_ref();
    let mut ids: Vec<String> = connections
        .iter()
        .flat_map(|m| m.values())
        .filter_map(|v| v.vim_id.as_ref().map(|id| id.0.clone()))
        .collect();
    if let Some(info) = &instance.instantiated_vnf_info {
        let handles = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .map(|r| &r.compute_resource)
            .chain(
                info.vnf_virtual_link_resource_info
                    .iter()
                    .flatten()
                    .map(|r| &r.network_resource),
            )
            .chain(
                info.virtual_storage_resource_info
                    .iter()
                    .flatten()
                    .map(|r| &r.storage_resource),
            )
            .chain(
                info.ext_virtual_link_info
                    .iter()
                    .flatten()
                    .map(|r| &r.resource_handle),
            )
            .chain(
                info.ext_managed_virtual_link_info
                    .iter()
                    .flatten()
                    .map(|r| &r.network_resource),
            );
        for h in handles {
            let Some(conn) = h.vim_connection_id.as_deref() else {
                continue;
            };
            if connections.is_some_and(|m| m.contains_key(conn)) {
                continue;
            }
            ids.push(conn.to_owned());
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

/// The `vimId`s of the `vimConnectionInfo` entries an operation request brings (a map in the
/// v3 shapes, an array in the v2 ones; `null` entries, removals in a MODIFY_INFO, bring none).
pub(crate) fn request_vim_ids(
    params: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Vec<String> {
    let entries: Vec<&serde_json::Value> = match params.and_then(|p| p.get("vimConnectionInfo")) {
        Some(serde_json::Value::Object(m)) => m.values().collect(),
        Some(serde_json::Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    };
    let mut ids: Vec<String> = entries
        .into_iter()
        .filter_map(|e| e.get("vimId").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// A sqlx connection (inside the caller's transaction, or a plain read connection) as a
/// [`crate::hot::SqlConn`].
pub(crate) struct SqlxConn<'c, C>(pub &'c mut C);

/// A sqlx error as the hot path's [`crate::hot::DbError`].
pub(crate) fn db_error(e: sqlx::Error) -> crate::hot::DbError {
    crate::hot::DbError {
        unique: is_unique_violation(&e),
        message: match crate::error::backend(e) {
            StoreError::Backend(m) => m,
            other => other.to_string(),
        },
    }
}

/// Generates `impl Store for $store` from the statements shared by both backends.
macro_rules! impl_sql_store {
    (
        store = $store:ty,
        db = $db:ty,
        conn = $conn:ty,
        for_update = $for_update:literal,
        skip_locked = $skip_locked:literal,
        contains_fn = $contains_fn:literal,
        hot_write = $hot_write:ident,
        hot_read = $hot_read:ident $(,)?
    ) => {
        const _: () = {
            use std::collections::VecDeque;

            use async_trait::async_trait;
            use futures_core::stream::BoxStream;
            use serde_json::Value;
            use sqlx::Row;
            use vnfm_types::{
                SubscriptionId, VimId, VnfInstance, VnfInstanceId,
                VnfLcmOpOcc, VnfLcmOpOccId,
            };

            use crate::error::{backend, Conflict, StoreError};
            use crate::hot::SqlConn as _;
            use crate::model::{
                enum_str, page_size, state_str, InstanceQuery, JournalEntry, Lease,
                NameFilter, NewOutboxRow, OpOccQuery, OutboxRow, OutboxStatus, OutboxSummary,
                PackageRecord, Page,
                PkgmSubscriptionRecord, StepOutcome, StepRecord, StepWritten, SubscriptionRecord,
                Timestamp, Version, VimDependent, VimRecord,
            };
            use crate::sql::{from_json, is_unique_violation, now_ms, request_vim_ids, to_json};
            use crate::store::{Result, Store};

            const INSTANCE: &str = "VNF instance";
            const OP_OCC: &str = "op-occ";
            const SUBSCRIPTION: &str = "subscription";
            const PKGM_SUBSCRIPTION: &str = "VNF package management subscription";
            const VIM: &str = "VIM";
            const PACKAGE: &str = "VNF package";
            const PACKAGE_VNFD: &str = "VNF package for vnfdId";

            fn package_row(row: &<$db as sqlx::Database>::Row) -> Result<(PackageRecord, Version)> {
                let id: String = row.try_get(0).map_err(backend)?;
                let info: String = row.try_get(2).map_err(backend)?;
                let version: i64 = row.try_get(3).map_err(backend)?;
                Ok((
                    PackageRecord {
                        info: from_json(PACKAGE, &id, &info)?,
                        vnfd_id: row.try_get(1).map_err(backend)?,
                        id,
                    },
                    Version(version),
                ))
            }

            /// A unique violation on `vnf_packages` is a taken id or a taken vnfdId.
            fn package_conflict(e: sqlx::Error, package: &PackageRecord) -> StoreError {
                if is_unique_violation(&e) {
                    let vnfd_taken = e.to_string().contains("vnfd_id");
                    StoreError::Conflict(Conflict::AlreadyExists {
                        kind: if vnfd_taken { PACKAGE_VNFD } else { PACKAGE },
                        id: if vnfd_taken {
                            package.vnfd_id.clone().unwrap_or_default()
                        } else {
                            package.id.clone()
                        },
                    })
                } else {
                    backend(e)
                }
            }
            const OUTBOX: &str = "outbox row";

            fn instance_row(row: &<$db as sqlx::Database>::Row) -> Result<(VnfInstance, Version)> {
                let id: String = row.try_get(0).map_err(backend)?;
                let doc: String = row.try_get(1).map_err(backend)?;
                let version: i64 = row.try_get(2).map_err(backend)?;
                Ok((from_json(INSTANCE, &id, &doc)?, Version(version)))
            }

            fn op_occ_row(row: &<$db as sqlx::Database>::Row) -> Result<(VnfLcmOpOcc, Version)> {
                let id: String = row.try_get(0).map_err(backend)?;
                let doc: String = row.try_get(1).map_err(backend)?;
                let version: i64 = row.try_get(2).map_err(backend)?;
                Ok((from_json(OP_OCC, &id, &doc)?, Version(version)))
            }

            fn journal_row(row: &<$db as sqlx::Database>::Row) -> Result<JournalEntry> {
                let id: String = row.try_get(0).map_err(backend)?;
                let seq: i64 = row.try_get(1).map_err(backend)?;
                let step: String = row.try_get(2).map_err(backend)?;
                let outcome: String = row.try_get(3).map_err(backend)?;
                let at: i64 = row.try_get(4).map_err(backend)?;
                let detail: String = row.try_get(5).map_err(backend)?;
                let outcome = StepOutcome::parse(&outcome).ok_or_else(|| StoreError::Corrupt {
                    kind: "journal entry",
                    id: format!("{id}#{seq}"),
                    reason: format!("unknown outcome {outcome:?}"),
                })?;
                Ok(JournalEntry {
                    detail: from_json("journal entry", &id, &detail)?,
                    op_occ_id: VnfLcmOpOccId(id),
                    seq,
                    step,
                    outcome,
                    at: Timestamp(at),
                })
            }

            fn outbox_row(row: &<$db as sqlx::Database>::Row) -> Result<OutboxRow> {
                let id: i64 = row.try_get(0).map_err(backend)?;
                let payload: String = row.try_get(3).map_err(backend)?;
                let status: String = row.try_get(7).map_err(backend)?;
                Ok(OutboxRow {
                    id,
                    subscription_id: SubscriptionId(row.try_get(1).map_err(backend)?),
                    callback_uri: row.try_get(2).map_err(backend)?,
                    payload: from_json(OUTBOX, &id.to_string(), &payload)?,
                    attempts: row.try_get(4).map_err(backend)?,
                    next_attempt_at: Timestamp(row.try_get(5).map_err(backend)?),
                    last_error: row.try_get(6).map_err(backend)?,
                    status: if status == "dead" {
                        OutboxStatus::Dead
                    } else {
                        OutboxStatus::Pending
                    },
                })
            }

            fn subscription_row(row: &<$db as sqlx::Database>::Row) -> Result<SubscriptionRecord> {
                let id: String = row.try_get(0).map_err(backend)?;
                let doc: String = row.try_get(1).map_err(backend)?;
                Ok(SubscriptionRecord {
                    subscription: from_json(SUBSCRIPTION, &id, &doc)?,
                    canonical_filter: row.try_get(2).map_err(backend)?,
                    authentication: row.try_get(3).map_err(backend)?,
                })
            }

            fn pkgm_subscription_row(row: &<$db as sqlx::Database>::Row) -> Result<PkgmSubscriptionRecord> {
                let id: String = row.try_get(0).map_err(backend)?;
                let doc: String = row.try_get(1).map_err(backend)?;
                Ok(PkgmSubscriptionRecord {
                    subscription: from_json(PKGM_SUBSCRIPTION, &id, &doc)?,
                    canonical_filter: row.try_get(2).map_err(backend)?,
                    authentication: row.try_get(3).map_err(backend)?,
                })
            }

            /// Inserts a subscription of `kind` ('lcm' or 'pkgm'); a taken id (of either kind)
            /// is a conflict.
            async fn insert_subscription(
                tx: &mut $conn,
                kind: &'static str,
                id: &str,
                callback_uri: &str,
                canonical_filter: &str,
                doc: String,
                authentication: Option<Vec<u8>>,
            ) -> Result<()> {
                let done = sqlx::query(
                    "INSERT INTO subscriptions (id, callback_uri, canonical_filter, doc, \
                     authentication, created_at, kind) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(id)
                .bind(callback_uri)
                .bind(canonical_filter)
                .bind(doc)
                .bind(authentication)
                .bind(now_ms())
                .bind(kind)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::Conflict(Conflict::AlreadyExists {
                        kind: SUBSCRIPTION,
                        id: id.to_owned(),
                    }));
                }
                Ok(())
            }

            /// Deletes the subscription of `kind` and its pending outbox rows.
            async fn remove_subscription(
                tx: &mut $conn,
                kind: &'static str,
                what: &'static str,
                id: &SubscriptionId,
            ) -> Result<()> {
                let done = sqlx::query("DELETE FROM subscriptions WHERE id = $1 AND kind = $2")
                    .bind(id.as_str())
                    .bind(kind)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound {
                        kind: what,
                        id: id.0.clone(),
                    });
                }
                sqlx::query(
                    "DELETE FROM outbox WHERE subscription_id = $1 AND status = 'pending'",
                )
                .bind(id.as_str())
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
                Ok(())
            }

            fn vim_row(row: &<$db as sqlx::Database>::Row) -> Result<(VimRecord, Version)> {
                let id: String = row.try_get(0).map_err(backend)?;
                let public: String = row.try_get(3).map_err(backend)?;
                let created_by: Option<String> = row.try_get(5).map_err(backend)?;
                let version: i64 = row.try_get(6).map_err(backend)?;
                Ok((
                    VimRecord {
                        public: from_json(VIM, &id, &public)?,
                        id: VimId(id),
                        name: row.try_get(1).map_err(backend)?,
                        vim_type: row.try_get(2).map_err(backend)?,
                        secret: row.try_get(4).map_err(backend)?,
                        created_by_instance: created_by.map(VnfInstanceId),
                    },
                    Version(version),
                ))
            }

            /// Version of a record, locking its row where the backend can.
            async fn locked_version(
                conn: &mut $conn,
                sql: &'static str,
                id: &str,
            ) -> Result<Option<Version>> {
                let row = sqlx::query(sql)
                    .bind(id)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(backend)?;
                row.map(|r| r.try_get::<i64, _>(0).map(Version).map_err(backend))
                    .transpose()
            }

            /// Why a write expecting record `id` at `expected` cannot go on, given the version
            /// `found` in the store: the record is gone, or it is at another version.
            fn stale(kind: &'static str, id: &str, expected: Version, found: Option<Version>) -> StoreError {
                match found {
                    None => StoreError::NotFound { kind, id: id.to_string() },
                    Some(found) => StoreError::VersionMismatch { kind, id: id.to_string(), expected, found },
                }
            }

            /// `Ok` when the record exists at `expected`.
            fn expect_version(kind: &'static str, id: &str, expected: Version, found: Option<Version>) -> Result<()> {
                match found {
                    Some(found) if found == expected => Ok(()),
                    other => Err(stale(kind, id, expected, other)),
                }
            }

            /// A query of `sql` with `args` bound.
            fn bound<'q>(
                sql: &'static str,
                args: &'q [crate::hot::Arg<'q>],
            ) -> sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments> {
                let mut q = sqlx::query(sql);
                for a in args {
                    q = match *a {
                        crate::hot::Arg::Text(t) => q.bind(t),
                        crate::hot::Arg::Int(i) => q.bind(i),
                        crate::hot::Arg::Null => q.bind(None::<&str>),
                    };
                }
                q
            }

            impl crate::hot::SqlConn for crate::sql::SqlxConn<'_, $conn> {
                const FOR_UPDATE: bool = !$for_update.is_empty();

                async fn execute(
                    &mut self,
                    sql: &'static str,
                    args: &[crate::hot::Arg<'_>],
                ) -> std::result::Result<u64, crate::hot::DbError> {
                    bound(sql, args)
                        .execute(&mut *self.0)
                        .await
                        .map(|r| r.rows_affected())
                        .map_err(crate::sql::db_error)
                }

                async fn rows(
                    &mut self,
                    sql: &'static str,
                    args: &[crate::hot::Arg<'_>],
                    cols: &[crate::hot::Col],
                ) -> std::result::Result<Vec<Vec<crate::hot::Cell>>, crate::hot::DbError> {
                    bound(sql, args)
                        .fetch_all(&mut *self.0)
                        .await
                        .map_err(crate::sql::db_error)?
                        .iter()
                        .map(|row| cells(row, cols))
                        .collect()
                }
            }

            /// A row's columns read as `cols`.
            fn cells(
                row: &<$db as sqlx::Database>::Row,
                cols: &[crate::hot::Col],
            ) -> std::result::Result<Vec<crate::hot::Cell>, crate::hot::DbError> {
                use crate::hot::{Cell, Col};
                cols.iter()
                    .enumerate()
                    .map(|(i, col)| match col {
                        Col::Int => row.try_get::<i64, _>(i).map(Cell::Int),
                        Col::Text => row.try_get::<String, _>(i).map(Cell::Text),
                        Col::OptText => row
                            .try_get::<Option<String>, _>(i)
                            .map(|t| t.map_or(Cell::Null, Cell::Text)),
                        Col::Blob => row.try_get::<Vec<u8>, _>(i).map(Cell::Blob),
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(crate::sql::db_error)
            }

            impl $store {
                /// The subscription `id` of `kind` (`lcm` or `pkgm`), decoded by `row`.
                async fn subscription_of_kind<R>(
                    &self,
                    kind: &str,
                    id: &SubscriptionId,
                    row: fn(&<$db as sqlx::Database>::Row) -> Result<R>,
                ) -> Result<Option<R>> {
                    sqlx::query(
                        "SELECT id, doc, canonical_filter, authentication FROM subscriptions \
                         WHERE id = $1 AND kind = $2",
                    )
                    .bind(id.as_str())
                    .bind(kind)
                    .fetch_optional(self.reader())
                    .await
                    .map_err(backend)?
                    .as_ref()
                    .map(row)
                    .transpose()
                }

                /// One page of the subscriptions of `kind` after id `after`, decoded by `row`.
                async fn subscription_page<R>(
                    &self,
                    kind: &str,
                    after: Option<&str>,
                    limit: u32,
                    row: fn(&<$db as sqlx::Database>::Row) -> Result<R>,
                    id: fn(&R) -> String,
                ) -> Result<Page<R>> {
                    let limit = page_size(Some(limit));
                    let rows = sqlx::query(
                        "SELECT id, doc, canonical_filter, authentication FROM subscriptions \
                         WHERE kind = $1 AND id > $2 ORDER BY id LIMIT $3",
                    )
                    .bind(kind)
                    .bind(after.unwrap_or(""))
                    .bind(limit + 1)
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?;
                    let mut items = rows.iter().map(row).collect::<Result<Vec<_>>>()?;
                    let next = if items.len() as i64 > limit {
                        items.truncate(limit as usize);
                        items.last().map(id)
                    } else {
                        None
                    };
                    Ok(Page { items, next })
                }

                /// The oldest subscription of `kind` with this filter and callback.
                async fn duplicate_of_kind<R>(
                    &self,
                    kind: &str,
                    canonical_filter: &str,
                    callback_uri: &str,
                    row: fn(&<$db as sqlx::Database>::Row) -> Result<R>,
                ) -> Result<Option<R>> {
                    sqlx::query(
                        "SELECT id, doc, canonical_filter, authentication FROM subscriptions \
                         WHERE kind = $1 AND callback_uri = $2 AND canonical_filter = $3 \
                         ORDER BY id LIMIT 1",
                    )
                    .bind(kind)
                    .bind(callback_uri)
                    .bind(canonical_filter)
                    .fetch_optional(self.reader())
                    .await
                    .map_err(backend)?
                    .as_ref()
                    .map(row)
                    .transpose()
                }

                /// Outbox rows in `status`, oldest first, after id `after`.
                async fn outbox_rows(
                    &self,
                    status: &str,
                    after: Option<i64>,
                    limit: u32,
                ) -> Result<Vec<OutboxRow>> {
                    sqlx::query(
                        "SELECT id, subscription_id, callback_uri, payload, attempts, \
                         next_attempt_at, last_error, status FROM outbox \
                         WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3",
                    )
                    .bind(status)
                    .bind(after.unwrap_or(i64::MIN))
                    .bind(page_size(Some(limit)))
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?
                    .iter()
                    .map(outbox_row)
                    .collect()
                }

                /// One page of instances from `pool` (also used by the instance stream).
                async fn instance_page(
                    conn: &mut $conn,
                    query: &InstanceQuery,
                ) -> Result<Page<VnfInstance>> {
                    let limit = page_size(query.limit);
                    if query.ids.as_ref().is_some_and(|ids| ids.is_empty()) {
                        return Ok(Page {
                            items: Vec::new(),
                            next: None,
                        });
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT id, doc, version FROM vnf_instances WHERE 1 = 1",
                    );
                    if let Some(v) = &query.vnfd_id {
                        qb.push(" AND vnfd_id = ").push_bind(v.0.clone());
                    }
                    if let Some(v) = &query.vnf_provider {
                        qb.push(" AND vnf_provider = ").push_bind(v.clone());
                    }
                    if let Some(v) = &query.vnf_product_name {
                        qb.push(" AND vnf_product_name = ").push_bind(v.clone());
                    }
                    if let Some(v) = &query.instantiation_state {
                        qb.push(" AND instantiation_state = ").push_bind(enum_str(v));
                    }
                    match &query.name {
                        Some(NameFilter::Exact(n)) => {
                            qb.push(" AND vnf_instance_name = ").push_bind(n.clone());
                        }
                        Some(NameFilter::Contains(n)) => {
                            qb.push(concat!(" AND ", $contains_fn, "(vnf_instance_name, "))
                                .push_bind(n.clone())
                                .push(") > 0");
                        }
                        None => {}
                    }
                    if let Some(ids) = &query.ids {
                        qb.push(" AND id IN (");
                        let mut sep = qb.separated(", ");
                        for id in ids {
                            sep.push_bind(id.0.clone());
                        }
                        qb.push(")");
                    }
                    if let Some(after) = &query.after {
                        qb.push(" AND id > ").push_bind(after.clone());
                    }
                    qb.push(" ORDER BY id LIMIT ").push_bind(limit + 1);
                    let rows = qb.build().fetch_all(&mut *conn).await.map_err(backend)?;
                    let mut items = rows
                        .iter()
                        .map(|r| instance_row(r).map(|(i, _)| i))
                        .collect::<Result<Vec<_>>>()?;
                    let next = if items.len() as i64 > limit {
                        items.truncate(limit as usize);
                        items.last().map(|i| i.id.0.clone())
                    } else {
                        None
                    };
                    Ok(Page { items, next })
                }
            }

            #[async_trait]
            impl Store for $store {
                async fn create_instance(
                    &self,
                    instance: &VnfInstance,
                    notify: &[NewOutboxRow],
                ) -> Result<Version> {
                    $hot_write!(self, |tx| crate::hot::create_instance(tx, instance, notify).await)
                }

                async fn get_instance(
                    &self,
                    id: &VnfInstanceId,
                ) -> Result<Option<(VnfInstance, Version)>> {
                    $hot_read!(self, |conn| crate::hot::get_instance(conn, id.as_str()).await)
                }

                async fn update_instance(
                    &self,
                    instance: &VnfInstance,
                    expected: Version,
                ) -> Result<Version> {
                    $hot_write!(self, |tx| crate::hot::update_instance(tx, instance, expected).await)
                }

                async fn delete_instance(
                    &self,
                    id: &VnfInstanceId,
                    expected: Version,
                    notify: &[NewOutboxRow],
                ) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let found = locked_version(
                        &mut tx,
                        concat!("SELECT version FROM vnf_instances WHERE id = $1", $for_update),
                        id.as_str(),
                    )
                    .await?;
                    expect_version(INSTANCE, id.as_str(), expected, found)?;
                    if let Some((op_occ_id, state)) =
                        crate::hot::holder(&mut crate::sql::SqlxConn(&mut *tx), id.as_str()).await?
                    {
                        return Err(StoreError::Conflict(Conflict::InstanceBusy {
                            instance_id: id.0.clone(),
                            op_occ_id,
                            state,
                        }));
                    }
                    sqlx::query("DELETE FROM instance_vims WHERE instance_id = $1")
                        .bind(id.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    sqlx::query("DELETE FROM vnf_instances WHERE id = $1")
                        .bind(id.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    crate::hot::insert_outbox(&mut crate::sql::SqlxConn(&mut *tx), notify).await?;
                    tx.commit().await.map_err(backend)?;
                    Ok(())
                }

                async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>> {
                    Self::instance_page(&mut *self.read_conn().await?, query).await
                }

                fn stream_instances(
                    &self,
                    query: &InstanceQuery,
                ) -> BoxStream<'static, Result<VnfInstance>> {
                    struct State {
                        pool: sqlx::Pool<$db>,
                        query: InstanceQuery,
                        buffer: VecDeque<VnfInstance>,
                        done: bool,
                    }
                    let state = State {
                        pool: self.reader().clone(),
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
                            let conn = st.pool.acquire().await.map_err(backend);
                            let page = match conn {
                                Ok(mut conn) => <$store>::instance_page(&mut *conn, &st.query).await,
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

                async fn start_operation(&self, occ: &VnfLcmOpOcc, lease: &Lease) -> Result<Version> {
                    use crate::hot::StartRefused;
                    let started: std::result::Result<Version, StartRefused> =
                        $hot_write!(self, |tx| crate::hot::start_operation(tx, occ, lease).await);
                    match started {
                        Ok(version) => Ok(version),
                        Err(StartRefused::Store(e)) => Err(e),
                        Err(StartRefused::Raced) => {
                            // The transaction is gone: look again outside it.
                            let instance_id = occ.vnf_instance_id.as_str();
                            let busy =
                                $hot_read!(self, |conn| crate::hot::holder(conn, instance_id).await)?;
                            Err(match busy {
                                Some((op_occ_id, state)) if op_occ_id != occ.id => {
                                    StoreError::Conflict(Conflict::InstanceBusy {
                                        instance_id: instance_id.to_owned(),
                                        op_occ_id,
                                        state,
                                    })
                                }
                                _ => StoreError::Conflict(Conflict::AlreadyExists {
                                    kind: OP_OCC,
                                    id: occ.id.0.clone(),
                                }),
                            })
                        }
                    }
                }

                async fn record_step(&self, record: &StepRecord) -> Result<StepWritten> {
                    $hot_write!(self, |tx| crate::hot::record_step(tx, record).await)
                }

                async fn get_op_occ(
                    &self,
                    id: &VnfLcmOpOccId,
                ) -> Result<Option<(VnfLcmOpOcc, Version)>> {
                    $hot_read!(self, |conn| crate::hot::get_op_occ(conn, id.as_str()).await)
                }

                async fn active_op_occ(
                    &self,
                    instance_id: &VnfInstanceId,
                ) -> Result<Option<(VnfLcmOpOcc, Version)>> {
                    $hot_read!(self, |conn| crate::hot::active_op_occ(conn, instance_id.as_str()).await)
                }

                async fn list_op_occs(&self, query: &OpOccQuery) -> Result<Page<VnfLcmOpOcc>> {
                    let limit = page_size(query.limit);
                    if query.states.as_ref().is_some_and(|s| s.is_empty()) {
                        return Ok(Page {
                            items: Vec::new(),
                            next: None,
                        });
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT id, doc, version FROM op_occs WHERE 1 = 1",
                    );
                    if let Some(v) = &query.vnf_instance_id {
                        qb.push(" AND instance_id = ").push_bind(v.0.clone());
                    }
                    if let Some(states) = &query.states {
                        qb.push(" AND state IN (");
                        let mut sep = qb.separated(", ");
                        for s in states {
                            sep.push_bind(state_str(*s));
                        }
                        qb.push(")");
                    }
                    if let Some(op) = &query.operation {
                        qb.push(" AND operation = ").push_bind(enum_str(op));
                    }
                    if let Some(after) = &query.after {
                        qb.push(" AND id > ").push_bind(after.clone());
                    }
                    qb.push(" ORDER BY id LIMIT ").push_bind(limit + 1);
                    let rows = qb.build().fetch_all(&mut *self.read_conn().await?).await.map_err(backend)?;
                    let mut items = rows
                        .iter()
                        .map(|r| op_occ_row(r).map(|(o, _)| o))
                        .collect::<Result<Vec<_>>>()?;
                    let next = if items.len() as i64 > limit {
                        items.truncate(limit as usize);
                        items.last().map(|o| o.id.0.clone())
                    } else {
                        None
                    };
                    Ok(Page { items, next })
                }

                async fn journal(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Vec<JournalEntry>> {
                    sqlx::query(
                        "SELECT op_occ_id, seq, step, outcome, recorded_at, detail \
                         FROM op_occ_journal WHERE op_occ_id = $1 ORDER BY seq",
                    )
                    .bind(op_occ_id.as_str())
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?
                    .iter()
                    .map(journal_row)
                    .collect()
                }

                async fn last_completed_step(
                    &self,
                    op_occ_id: &VnfLcmOpOccId,
                ) -> Result<Option<JournalEntry>> {
                    sqlx::query(
                        "SELECT op_occ_id, seq, step, outcome, recorded_at, detail \
                         FROM op_occ_journal WHERE op_occ_id = $1 AND outcome = 'completed' \
                         ORDER BY seq DESC LIMIT 1",
                    )
                    .bind(op_occ_id.as_str())
                    .fetch_optional(self.reader())
                    .await
                    .map_err(backend)?
                    .as_ref()
                    .map(journal_row)
                    .transpose()
                }

                async fn lease(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<Lease>> {
                    let row = sqlx::query(
                        "SELECT lease_owner, lease_expires_at FROM op_occs WHERE id = $1",
                    )
                    .bind(op_occ_id.as_str())
                    .fetch_optional(self.reader())
                    .await
                    .map_err(backend)?;
                    let Some(row) = row else {
                        return Err(StoreError::NotFound {
                            kind: OP_OCC,
                            id: op_occ_id.0.clone(),
                        });
                    };
                    let owner: Option<String> = row.try_get(0).map_err(backend)?;
                    let expires: Option<i64> = row.try_get(1).map_err(backend)?;
                    Ok(owner.map(|owner| Lease {
                        owner,
                        expires_at: Timestamp(expires.unwrap_or(0)),
                    }))
                }

                async fn renew_lease(
                    &self,
                    op_occ_id: &VnfLcmOpOccId,
                    owner: &str,
                    expires_at: Timestamp,
                ) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "UPDATE op_occs SET lease_expires_at = $1 \
                         WHERE id = $2 AND lease_owner = $3",
                    )
                    .bind(expires_at.0)
                    .bind(op_occ_id.as_str())
                    .bind(owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(crate::hot::runner_refusal(
                            &mut crate::sql::SqlxConn(&mut *tx),
                            op_occ_id,
                            owner,
                            None,
                        )
                        .await);
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn release_lease(&self, op_occ_id: &VnfLcmOpOccId, owner: &str) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "UPDATE op_occs SET lease_owner = NULL, lease_expires_at = NULL \
                         WHERE id = $1 AND lease_owner = $2",
                    )
                    .bind(op_occ_id.as_str())
                    .bind(owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(crate::hot::runner_refusal(
                            &mut crate::sql::SqlxConn(&mut *tx),
                            op_occ_id,
                            owner,
                            None,
                        )
                        .await);
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn claim_operation(
                    &self,
                    op_occ_id: &VnfLcmOpOccId,
                    expected: Version,
                    lease: &Lease,
                    now: Timestamp,
                ) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(concat!(
                        "UPDATE op_occs SET lease_owner = $1, lease_expires_at = $2 ",
                        "WHERE id = $3 AND version = $4 AND state IN ",
                        "('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP') ",
                        "AND (lease_owner IS NULL OR lease_owner = $1 OR lease_expires_at < $5)"
                    ))
                    .bind(lease.owner.as_str())
                    .bind(lease.expires_at.0)
                    .bind(op_occ_id.as_str())
                    .bind(expected.0)
                    .bind(now.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        let (state, version, holder) =
                            crate::hot::op_occ_facts(&mut crate::sql::SqlxConn(&mut *tx), op_occ_id)
                                .await?;
                        return Err(if state.is_final() {
                            StoreError::Conflict(Conflict::Finished {
                                op_occ_id: op_occ_id.clone(),
                                state,
                            })
                        } else if version != expected {
                            StoreError::VersionMismatch {
                                kind: OP_OCC,
                                id: op_occ_id.0.clone(),
                                expected,
                                found: version,
                            }
                        } else {
                            StoreError::Conflict(Conflict::LeaseHeld {
                                op_occ_id: op_occ_id.clone(),
                                holder: holder.unwrap_or_default(),
                            })
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn claim_expired(
                    &self,
                    owner: &str,
                    now: Timestamp,
                    new_expiry: Timestamp,
                    limit: u32,
                ) -> Result<Vec<(VnfLcmOpOcc, Version)>> {
                    let mut tx = self.begin_write().await?;
                    let rows = sqlx::query(concat!(
                        "UPDATE op_occs SET lease_owner = $1, lease_expires_at = $2 ",
                        "WHERE id IN (SELECT id FROM op_occs ",
                        "WHERE state IN ('STARTING', 'PROCESSING', 'ROLLING_BACK') ",
                        "AND (lease_expires_at IS NULL OR lease_expires_at < $3) ",
                        "ORDER BY id LIMIT $4",
                        $skip_locked,
                        ") AND state IN ('STARTING', 'PROCESSING', 'ROLLING_BACK') ",
                        "AND (lease_expires_at IS NULL OR lease_expires_at < $3) ",
                        "RETURNING id, doc, version"
                    ))
                    .bind(owner)
                    .bind(new_expiry.0)
                    .bind(now.0)
                    .bind(i64::from(limit))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(backend)?;
                    tx.commit().await.map_err(backend)?;
                    let mut claimed = rows.iter().map(op_occ_row).collect::<Result<Vec<_>>>()?;
                    claimed.sort_by(|a, b| a.0.id.cmp(&b.0.id));
                    Ok(claimed)
                }

                async fn get_op_occ_data(
                    &self,
                    op_occ_id: &VnfLcmOpOccId,
                    key: &str,
                ) -> Result<Option<Value>> {
                    $hot_read!(self, |conn| crate::hot::get_op_occ_data(conn, op_occ_id.as_str(), key).await)
                }

                async fn put_op_occ_data(
                    &self,
                    op_occ_id: &VnfLcmOpOccId,
                    key: &str,
                    value: &Value,
                ) -> Result<()> {
                    $hot_write!(self, |tx| {
                        let exists = tx
                            .row(
                                "SELECT version FROM op_occs WHERE id = $1",
                                &[op_occ_id.as_str().into()],
                                &[crate::hot::Col::Int],
                            )
                            .await
                            .map_err(StoreError::from)?;
                        if exists.is_none() {
                            return Err(StoreError::NotFound {
                                kind: OP_OCC,
                                id: op_occ_id.0.clone(),
                            });
                        }
                        crate::hot::put_op_occ_data(tx, op_occ_id, key, value).await
                    })
                }

                async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()> {
                    if rows.is_empty() {
                        return Ok(());
                    }
                    let mut tx = self.begin_write().await?;
                    crate::hot::insert_outbox(&mut crate::sql::SqlxConn(&mut *tx), rows).await?;
                    tx.commit().await.map_err(backend)
                }

                async fn outbox_due(
                    &self,
                    now: Timestamp,
                    limit: u32,
                    claim_owner: &str,
                    claim_until: Timestamp,
                ) -> Result<Vec<OutboxRow>> {
                    let mut tx = self.begin_write().await?;
                    let rows = sqlx::query(concat!(
                        // Materialized so the locking subquery runs exactly once: the
                        // rows it locks are the rows updated.
                        "WITH due AS MATERIALIZED (",
                        "SELECT o.id AS due_id FROM outbox o WHERE o.status = 'pending' ",
                        "AND o.next_attempt_at <= $3 ",
                        "AND (o.claim_until IS NULL OR o.claim_until < $3) ",
                        // Only the head of its queue: an older pending row of the same
                        // subscription and key (claimed, or waiting for a retry) goes first.
                        "AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.status = 'pending' ",
                        "AND e.subscription_id = o.subscription_id ",
                        "AND e.ordering_key = o.ordering_key AND e.id < o.id) ",
                        "ORDER BY o.next_attempt_at, o.id LIMIT $4",
                        $skip_locked,
                        ") UPDATE outbox SET claim_owner = $1, claim_until = $2 ",
                        "FROM due WHERE id = due.due_id ",
                        "RETURNING id, subscription_id, callback_uri, payload, attempts, ",
                        "next_attempt_at, last_error, status"
                    ))
                    .bind(claim_owner)
                    .bind(claim_until.0)
                    .bind(now.0)
                    .bind(i64::from(limit))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(backend)?;
                    tx.commit().await.map_err(backend)?;
                    let mut rows = rows.iter().map(outbox_row).collect::<Result<Vec<_>>>()?;
                    rows.sort_by_key(|r| (r.next_attempt_at, r.id));
                    Ok(rows)
                }

                async fn outbox_delivered(&self, id: i64) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query("DELETE FROM outbox WHERE id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound {
                            kind: OUTBOX,
                            id: id.to_string(),
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn outbox_retry(
                    &self,
                    id: i64,
                    next_attempt_at: Timestamp,
                    error: &str,
                ) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $1, \
                         last_error = $2, claim_owner = NULL, claim_until = NULL \
                         WHERE id = $3 AND status = 'pending'",
                    )
                    .bind(next_attempt_at.0)
                    .bind(error)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound {
                            kind: "pending outbox row",
                            id: id.to_string(),
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn outbox_dead(&self, id: i64, error: &str) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "UPDATE outbox SET attempts = attempts + 1, status = 'dead', \
                         last_error = $1, claim_owner = NULL, claim_until = NULL \
                         WHERE id = $2 AND status = 'pending'",
                    )
                    .bind(error)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound {
                            kind: "pending outbox row",
                            id: id.to_string(),
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn outbox_dead_rows(
                    &self,
                    after: Option<i64>,
                    limit: u32,
                ) -> Result<Vec<OutboxRow>> {
                    self.outbox_rows("dead", after, limit).await
                }

                async fn outbox_pending_rows(
                    &self,
                    after: Option<i64>,
                    limit: u32,
                ) -> Result<Vec<OutboxRow>> {
                    self.outbox_rows("pending", after, limit).await
                }

                async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>> {
                    sqlx::query(
                        "SELECT subscription_id, status, COUNT(*), MIN(created_at) FROM outbox \
                         GROUP BY subscription_id, status \
                         ORDER BY subscription_id, status DESC",
                    )
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?
                    .iter()
                    .map(|row| {
                        let status: String = row.try_get(1).map_err(backend)?;
                        Ok(OutboxSummary {
                            subscription_id: SubscriptionId(row.try_get(0).map_err(backend)?),
                            status: if status == "dead" {
                                OutboxStatus::Dead
                            } else {
                                OutboxStatus::Pending
                            },
                            rows: row.try_get(2).map_err(backend)?,
                            oldest: Timestamp(row.try_get(3).map_err(backend)?),
                        })
                    })
                    .collect()
                }

                async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "UPDATE outbox SET status = 'pending', next_attempt_at = $1, \
                         claim_owner = NULL, claim_until = NULL \
                         WHERE id = $2 AND status = 'dead'",
                    )
                    .bind(now.0)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound {
                            kind: "dead outbox row",
                            id: id.to_string(),
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn outbox_discard(&self, id: i64) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query("DELETE FROM outbox WHERE id = $1 AND status = 'dead'")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound {
                            kind: "dead outbox row",
                            id: id.to_string(),
                        });
                    }
                    tx.commit().await.map_err(backend)
                }

                async fn create_subscription(&self, record: &SubscriptionRecord) -> Result<()> {
                    let sub = &record.subscription;
                    let doc = to_json(SUBSCRIPTION, sub)?;
                    let mut tx = self.begin_write().await?;
                    insert_subscription(
                        &mut tx,
                        "lcm",
                        sub.id.as_str(),
                        &sub.callback_uri,
                        &record.canonical_filter,
                        doc,
                        record.authentication.clone(),
                    )
                    .await?;
                    tx.commit().await.map_err(backend)
                }

                async fn get_subscription(
                    &self,
                    id: &SubscriptionId,
                ) -> Result<Option<SubscriptionRecord>> {
                    self.subscription_of_kind("lcm", id, subscription_row).await
                }

                async fn list_subscriptions(
                    &self,
                    after: Option<&str>,
                    limit: u32,
                ) -> Result<Page<SubscriptionRecord>> {
                    self.subscription_page("lcm", after, limit, subscription_row, |s| {
                        s.subscription.id.0.clone()
                    })
                    .await
                }

                async fn delete_subscription(&self, id: &SubscriptionId) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    remove_subscription(&mut tx, "lcm", SUBSCRIPTION, id).await?;
                    tx.commit().await.map_err(backend)
                }

                async fn find_duplicate_subscription(
                    &self,
                    canonical_filter: &str,
                    callback_uri: &str,
                ) -> Result<Option<SubscriptionRecord>> {
                    self.duplicate_of_kind("lcm", canonical_filter, callback_uri, subscription_row)
                        .await
                }

                async fn create_pkgm_subscription(&self, record: &PkgmSubscriptionRecord) -> Result<()> {
                    let sub = &record.subscription;
                    let doc = to_json(PKGM_SUBSCRIPTION, sub)?;
                    let mut tx = self.begin_write().await?;
                    insert_subscription(
                        &mut tx,
                        "pkgm",
                        sub.id.as_str(),
                        &sub.callback_uri,
                        &record.canonical_filter,
                        doc,
                        record.authentication.clone(),
                    )
                    .await?;
                    tx.commit().await.map_err(backend)
                }

                async fn get_pkgm_subscription(
                    &self,
                    id: &SubscriptionId,
                ) -> Result<Option<PkgmSubscriptionRecord>> {
                    self.subscription_of_kind("pkgm", id, pkgm_subscription_row).await
                }

                async fn list_pkgm_subscriptions(
                    &self,
                    after: Option<&str>,
                    limit: u32,
                ) -> Result<Page<PkgmSubscriptionRecord>> {
                    self.subscription_page("pkgm", after, limit, pkgm_subscription_row, |s| {
                        s.subscription.id.0.clone()
                    })
                    .await
                }

                async fn delete_pkgm_subscription(&self, id: &SubscriptionId) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    remove_subscription(&mut tx, "pkgm", PKGM_SUBSCRIPTION, id).await?;
                    tx.commit().await.map_err(backend)
                }

                async fn find_duplicate_pkgm_subscription(
                    &self,
                    canonical_filter: &str,
                    callback_uri: &str,
                ) -> Result<Option<PkgmSubscriptionRecord>> {
                    self.duplicate_of_kind(
                        "pkgm",
                        canonical_filter,
                        callback_uri,
                        pkgm_subscription_row,
                    )
                    .await
                }

                async fn create_vim(&self, vim: &VimRecord) -> Result<Version> {
                    let public = to_json(VIM, &vim.public)?;
                    let now = now_ms();
                    let mut tx = self.begin_write().await?;
                    let done = sqlx::query(
                        "INSERT INTO vims (id, name, vim_type, public_info, secret, \
                         created_by_instance, version, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7) ON CONFLICT (id) DO NOTHING",
                    )
                    .bind(vim.id.as_str())
                    .bind(vim.name.as_str())
                    .bind(vim.vim_type.as_str())
                    .bind(public)
                    .bind(vim.secret.clone())
                    .bind(vim.created_by_instance.as_ref().map(|i| i.0.clone()))
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::Conflict(Conflict::AlreadyExists {
                            kind: VIM,
                            id: vim.id.0.clone(),
                        }));
                    }
                    tx.commit().await.map_err(backend)?;
                    Ok(Version::FIRST)
                }

                async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>> {
                    sqlx::query(concat!("SELECT ", "id, name, vim_type, public_info, secret, created_by_instance, version", " FROM vims WHERE id = $1"))
                        .bind(id.as_str())
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?
                        .as_ref()
                        .map(vim_row)
                        .transpose()
                }

                async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version> {
                    let public = to_json(VIM, &vim.public)?;
                    let mut tx = self.begin_write().await?;
                    let row = sqlx::query(
                        "UPDATE vims SET name = $3, vim_type = $4, public_info = $5, secret = $6, \
                         created_by_instance = $7, version = version + 1, updated_at = $8 \
                         WHERE id = $1 AND version = $2 RETURNING version",
                    )
                    .bind(vim.id.as_str())
                    .bind(expected.0)
                    .bind(vim.name.as_str())
                    .bind(vim.vim_type.as_str())
                    .bind(public)
                    .bind(vim.secret.clone())
                    .bind(vim.created_by_instance.as_ref().map(|i| i.0.clone()))
                    .bind(now_ms())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(backend)?;
                    let Some(row) = row else {
                        let found = locked_version(
                            &mut tx,
                            "SELECT version FROM vims WHERE id = $1",
                            vim.id.as_str(),
                        )
                        .await?;
                        return Err(stale(VIM, vim.id.as_str(), expected, found));
                    };
                    let version = Version(row.try_get::<i64, _>(0).map_err(backend)?);
                    tx.commit().await.map_err(backend)?;
                    Ok(version)
                }

                async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let found = locked_version(
                        &mut tx,
                        concat!("SELECT version FROM vims WHERE id = $1", $for_update),
                        id.as_str(),
                    )
                    .await?;
                    expect_version(VIM, id.as_str(), expected, found)?;
                    let users = sqlx::query(
                        "SELECT instance_id FROM instance_vims WHERE vim_id = $1 \
                         ORDER BY instance_id LIMIT 5",
                    )
                    .bind(id.as_str())
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(backend)?;
                    if !users.is_empty() {
                        let by = users
                            .iter()
                            .map(|r| r.try_get::<String, _>(0).map_err(backend))
                            .collect::<Result<Vec<_>>>()?;
                        return Err(StoreError::Conflict(Conflict::InUse {
                            kind: VIM,
                            id: id.0.clone(),
                            by,
                        }));
                    }
                    sqlx::query("DELETE FROM vims WHERE id = $1")
                        .bind(id.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    tx.commit().await.map_err(backend)
                }

                async fn list_vims(&self) -> Result<Vec<(VimRecord, Version)>> {
                    sqlx::query(concat!("SELECT ", "id, name, vim_type, public_info, secret, created_by_instance, version", " FROM vims ORDER BY id"))
                        .fetch_all(self.reader())
                        .await
                        .map_err(backend)?
                        .iter()
                        .map(vim_row)
                        .collect()
                }

                async fn vims_created_by(
                    &self,
                    instance_id: &VnfInstanceId,
                ) -> Result<Vec<(VimRecord, Version)>> {
                    $hot_read!(self, |conn| crate::hot::vims_created_by(conn, instance_id.as_str()).await)
                }

                async fn instances_using_vim(&self, vim_id: &VimId) -> Result<Vec<VnfInstanceId>> {
                    sqlx::query(
                        "SELECT instance_id FROM instance_vims WHERE vim_id = $1 ORDER BY instance_id",
                    )
                    .bind(vim_id.as_str())
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?
                    .iter()
                    .map(|r| r.try_get::<String, _>(0).map(VnfInstanceId).map_err(backend))
                    .collect()
                }

                async fn vim_usage(&self) -> Result<Vec<(VimId, VnfInstanceId)>> {
                    // Two plain reads instead of a join: the index's vim_id and vims.id have
                    // different collations on PostgreSQL.
                    let registered = sqlx::query("SELECT id FROM vims")
                        .fetch_all(self.reader())
                        .await
                        .map_err(backend)?
                        .iter()
                        .map(|r| r.try_get::<String, _>(0).map_err(backend))
                        .collect::<Result<std::collections::BTreeSet<String>>>()?;
                    let mut out = Vec::new();
                    for r in sqlx::query("SELECT vim_id, instance_id FROM instance_vims")
                        .fetch_all(self.reader())
                        .await
                        .map_err(backend)?
                    {
                        let vim: String = r.try_get(0).map_err(backend)?;
                        if registered.contains(&vim) {
                            out.push((VimId(vim), VnfInstanceId(r.try_get(1).map_err(backend)?)));
                        }
                    }
                    // Byte order whatever the database's collation.
                    out.sort();
                    Ok(out)
                }

                async fn vim_dependents(&self, creator: &VnfInstanceId) -> Result<Vec<VimDependent>> {
                    // Most instances registered no VIM: that answer comes from the hot path's
                    // connections.
                    let created = $hot_read!(self, |conn| crate::hot::vim_ids_created_by(conn, creator.as_str()).await)?;
                    if created.is_empty() {
                        return Ok(Vec::new());
                    }
                    let pool = self.reader();
                    // The requests of non-final occurrences first, then the index (see the
                    // trait's documentation for why this order).
                    let mut found: std::collections::BTreeMap<(String, String), Option<VnfLcmOpOccId>> =
                        std::collections::BTreeMap::new();
                    let rows = sqlx::query(concat!(
                        "SELECT id, instance_id, doc FROM op_occs WHERE state IN ",
                        "('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP')",
                        " AND instance_id <> $1"
                    ))
                    .bind(creator.as_str())
                    .fetch_all(pool)
                    .await
                    .map_err(backend)?;
                    for r in &rows {
                        let id: String = r.try_get(0).map_err(backend)?;
                        let instance: String = r.try_get(1).map_err(backend)?;
                        let doc: String = r.try_get(2).map_err(backend)?;
                        let doc: Value = from_json(OP_OCC, &id, &doc)?;
                        let params = doc.get("operationParams").and_then(Value::as_object);
                        for vim in request_vim_ids(params) {
                            if created.contains(&vim) {
                                found
                                    .entry((instance.clone(), vim))
                                    .or_insert_with(|| Some(VnfLcmOpOccId(id.clone())));
                            }
                        }
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT iv.instance_id, iv.vim_id, i.vnf_instance_name FROM instance_vims iv \
                         JOIN vnf_instances i ON i.id = iv.instance_id WHERE iv.instance_id <> ",
                    );
                    qb.push_bind(creator.0.clone()).push(" AND iv.vim_id IN (");
                    let mut sep = qb.separated(", ");
                    for vim in &created {
                        sep.push_bind(vim.clone());
                    }
                    qb.push(")");
                    let mut names: std::collections::BTreeMap<String, Option<String>> =
                        std::collections::BTreeMap::new();
                    for r in qb.build().fetch_all(pool).await.map_err(backend)? {
                        let instance: String = r.try_get(0).map_err(backend)?;
                        let vim: String = r.try_get(1).map_err(backend)?;
                        names.insert(instance.clone(), r.try_get(2).map_err(backend)?);
                        found.insert((instance, vim), None);
                    }
                    let unnamed: std::collections::BTreeSet<&String> = found
                        .keys()
                        .map(|(i, _)| i)
                        .filter(|i| !names.contains_key(*i))
                        .collect();
                    if !unnamed.is_empty() {
                        let mut qb = sqlx::QueryBuilder::<$db>::new(
                            "SELECT id, vnf_instance_name FROM vnf_instances WHERE id IN (",
                        );
                        let mut sep = qb.separated(", ");
                        for i in &unnamed {
                            sep.push_bind((*i).clone());
                        }
                        qb.push(")");
                        for r in qb.build().fetch_all(pool).await.map_err(backend)? {
                            names.insert(r.try_get(0).map_err(backend)?, r.try_get(1).map_err(backend)?);
                        }
                    }
                    // An instance deleted meanwhile (it has no name entry) uses nothing.
                    Ok(found
                        .into_iter()
                        .filter_map(|((instance, vim), pending_op_occ)| {
                            let instance_name = names.get(&instance)?.clone();
                            Some(VimDependent {
                                instance_id: VnfInstanceId(instance),
                                vim_id: VimId(vim),
                                instance_name,
                                pending_op_occ,
                            })
                        })
                        .collect())
                }

                async fn count_op_occs_by_state(&self) -> Result<Vec<(String, i64)>> {
                    let rows = sqlx::query(
                        "SELECT state, COUNT(*) FROM op_occs GROUP BY state ORDER BY state",
                    )
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?;
                    rows.iter()
                        .map(|r| Ok((r.try_get::<String, _>(0).map_err(backend)?, r.try_get::<i64, _>(1).map_err(backend)?)))
                        .collect()
                }

                async fn create_package(&self, package: &PackageRecord) -> Result<Version> {
                    let info = to_json(PACKAGE, &package.info)?;
                    let now = now_ms();
                    let mut tx = self.begin_write().await?;
                    sqlx::query(
                        "INSERT INTO vnf_packages (id, vnfd_id, info, version, created_at, updated_at) \
                         VALUES ($1, $2, $3, 1, $4, $4)",
                    )
                    .bind(package.id.as_str())
                    .bind(package.vnfd_id.as_deref())
                    .bind(info)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| package_conflict(e, package))?;
                    tx.commit().await.map_err(backend)?;
                    Ok(Version::FIRST)
                }

                async fn get_package(&self, id: &str) -> Result<Option<(PackageRecord, Version)>> {
                    sqlx::query("SELECT id, vnfd_id, info, version FROM vnf_packages WHERE id = $1")
                        .bind(id)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?
                        .as_ref()
                        .map(package_row)
                        .transpose()
                }

                async fn package_by_vnfd(&self, vnfd_id: &str) -> Result<Option<(PackageRecord, Version)>> {
                    sqlx::query("SELECT id, vnfd_id, info, version FROM vnf_packages WHERE vnfd_id = $1")
                        .bind(vnfd_id)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?
                        .as_ref()
                        .map(package_row)
                        .transpose()
                }

                async fn update_package_and_notify(
                    &self,
                    package: &PackageRecord,
                    expected: Version,
                    notify: &[NewOutboxRow],
                ) -> Result<Version> {
                    let info = to_json(PACKAGE, &package.info)?;
                    let mut tx = self.begin_write().await?;
                    let row = sqlx::query(
                        "UPDATE vnf_packages SET vnfd_id = $3, info = $4, version = version + 1, \
                         updated_at = $5 WHERE id = $1 AND version = $2 RETURNING version",
                    )
                    .bind(package.id.as_str())
                    .bind(expected.0)
                    .bind(package.vnfd_id.as_deref())
                    .bind(info)
                    .bind(now_ms())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| package_conflict(e, package))?;
                    let Some(row) = row else {
                        let found = locked_version(
                            &mut tx,
                            "SELECT version FROM vnf_packages WHERE id = $1",
                            package.id.as_str(),
                        )
                        .await?;
                        return Err(stale(PACKAGE, package.id.as_str(), expected, found));
                    };
                    let version = Version(row.try_get::<i64, _>(0).map_err(backend)?);
                    crate::hot::insert_outbox(&mut crate::sql::SqlxConn(&mut *tx), notify).await?;
                    tx.commit().await.map_err(backend)?;
                    Ok(version)
                }

                async fn delete_package_and_notify(
                    &self,
                    id: &str,
                    expected: Version,
                    notify: &[NewOutboxRow],
                ) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    let found = locked_version(
                        &mut tx,
                        concat!("SELECT version FROM vnf_packages WHERE id = $1", $for_update),
                        id,
                    )
                    .await?;
                    expect_version(PACKAGE, id, expected, found)?;
                    for table in [
                        "DELETE FROM vnf_package_content WHERE id = $1",
                        "DELETE FROM vnf_package_content_chunks WHERE id = $1",
                    ] {
                        sqlx::query(table)
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(backend)?;
                    }
                    sqlx::query("DELETE FROM vnf_packages WHERE id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    crate::hot::insert_outbox(&mut crate::sql::SqlxConn(&mut *tx), notify).await?;
                    tx.commit().await.map_err(backend)?;
                    Ok(())
                }

                async fn list_packages(&self, after: Option<&str>, limit: u32) -> Result<Page<PackageRecord>> {
                    let limit = page_size(Some(limit));
                    let rows = sqlx::query(
                        "SELECT id, vnfd_id, info, version FROM vnf_packages \
                         WHERE id > $1 ORDER BY id LIMIT $2",
                    )
                    .bind(after.unwrap_or(""))
                    .bind(limit + 1)
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?;
                    let mut items = rows
                        .iter()
                        .map(|r| package_row(r).map(|(p, _)| p))
                        .collect::<Result<Vec<_>>>()?;
                    let next = if items.len() as i64 > limit {
                        items.truncate(limit as usize);
                        items.last().map(|p| p.id.clone())
                    } else {
                        None
                    };
                    Ok(Page { items, next })
                }

                async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()> {
                    let mut reader = content;
                    self.put_package_content_from(id, &mut reader).await.map(|_| ())
                }

                async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>> {
                    let mut out = Vec::new();
                    let found = self.copy_package_content_to(id, &mut out).await?;
                    Ok(found.then_some(out))
                }

                async fn put_package_content_from(
                    &self,
                    id: &str,
                    content: &mut (dyn tokio::io::AsyncRead + Unpin + Send),
                ) -> Result<u64> {
                    use tokio::io::AsyncReadExt;
                    let io_err = |source| StoreError::ContentIo { id: id.to_owned(), source };
                    let mut tx = self.begin_write().await?;
                    let found = locked_version(
                        &mut tx,
                        concat!("SELECT version FROM vnf_packages WHERE id = $1", $for_update),
                        id,
                    )
                    .await?;
                    if found.is_none() {
                        return Err(StoreError::NotFound { kind: PACKAGE, id: id.to_owned() });
                    }
                    for table in [
                        "DELETE FROM vnf_package_content WHERE id = $1",
                        "DELETE FROM vnf_package_content_chunks WHERE id = $1",
                    ] {
                        sqlx::query(table)
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(backend)?;
                    }
                    // One buffer, refilled per piece: memory does not grow with the content.
                    // An empty content is one empty piece, so that it reads back as uploaded.
                    let mut buf = Vec::with_capacity(crate::store::CONTENT_CHUNK_BYTES);
                    let mut total: u64 = 0;
                    let mut seq: i64 = 0;
                    loop {
                        buf.clear();
                        let mut limited = (&mut *content).take(crate::store::CONTENT_CHUNK_BYTES as u64);
                        limited.read_to_end(&mut buf).await.map_err(io_err)?;
                        if buf.is_empty() && seq > 0 {
                            break;
                        }
                        sqlx::query(
                            "INSERT INTO vnf_package_content_chunks (id, seq, content) VALUES ($1, $2, $3)",
                        )
                        .bind(id)
                        .bind(seq)
                        .bind(buf.as_slice())
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                        total += buf.len() as u64;
                        seq += 1;
                        if buf.len() < crate::store::CONTENT_CHUNK_BYTES {
                            break;
                        }
                    }
                    tx.commit().await.map_err(backend)?;
                    Ok(total)
                }

                async fn copy_package_content_to(
                    &self,
                    id: &str,
                    out: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
                ) -> Result<bool> {
                    use tokio::io::AsyncWriteExt;
                    let io_err = |source| StoreError::ContentIo { id: id.to_owned(), source };
                    // Content stored before the chunked table: one row.
                    let legacy = sqlx::query("SELECT content FROM vnf_package_content WHERE id = $1")
                        .bind(id)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?;
                    if let Some(row) = legacy {
                        let bytes: Vec<u8> = row.try_get(0).map_err(backend)?;
                        out.write_all(&bytes).await.map_err(io_err)?;
                        out.flush().await.map_err(io_err)?;
                        return Ok(true);
                    }
                    // One piece per query, so that at most one piece is held at a time. A
                    // concurrent replacement shows as a gap or a shorter tail: the content is
                    // only replaced before a package is onboarded, when nobody reads it.
                    let mut seq: i64 = 0;
                    loop {
                        let row = sqlx::query(
                            "SELECT content FROM vnf_package_content_chunks WHERE id = $1 AND seq = $2",
                        )
                        .bind(id)
                        .bind(seq)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?;
                        let Some(row) = row else { break };
                        let bytes: Vec<u8> = row.try_get(0).map_err(backend)?;
                        out.write_all(&bytes).await.map_err(io_err)?;
                        seq += 1;
                    }
                    out.flush().await.map_err(io_err)?;
                    Ok(seq > 0)
                }

                async fn get_setting(&self, name: &str) -> Result<Option<Value>> {
                    let row = sqlx::query("SELECT value FROM settings WHERE name = $1")
                        .bind(name)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?;
                    row.map(|r| {
                        let v: String = r.try_get(0).map_err(backend)?;
                        from_json("setting", name, &v)
                    })
                    .transpose()
                }

                async fn put_setting(&self, name: &str, value: Option<&Value>) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    match value {
                        Some(v) => {
                            let text = to_json("setting", v)?;
                            sqlx::query(
                                "INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3) \
                                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, \
                                 updated_at = excluded.updated_at",
                            )
                            .bind(name)
                            .bind(text)
                            .bind(now_ms())
                            .execute(&mut *tx)
                            .await
                            .map_err(backend)?;
                        }
                        None => {
                            sqlx::query("DELETE FROM settings WHERE name = $1")
                                .bind(name)
                                .execute(&mut *tx)
                                .await
                                .map_err(backend)?;
                        }
                    }
                    tx.commit().await.map_err(backend)?;
                    Ok(())
                }

                async fn schema_version(&self) -> Result<i64> {
                    let row = sqlx::query(
                        "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
                    )
                    .fetch_one(self.reader())
                    .await
                    .map_err(backend)?;
                    row.try_get::<i64, _>(0).map_err(backend)
                }
            }
        };
    };
}

pub(crate) use impl_sql_store;
