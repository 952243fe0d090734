//! Subscriptions of every kind, in one table and one id space, told apart by a `kind` column:
//! one implementation for every kind ([`SubscriptionDocument`]).

use super::{Col, Dialect, SqlConn, columns, limit_clause, now_ms, page, page_size_of, push_scope};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{Page, ProjectScope, SubscriptionDocument, SubscriptionKind};
use vnfm_types::SubscriptionId;

const COLUMNS: &str = "id, callback_uri, doc, canonical_filter, authentication, project";
const COLS: [Col; 6] = [
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::OptBlob,
    Col::OptText,
];

fn document(
    kind: SubscriptionKind,
    row: Vec<super::Cell>,
) -> Result<SubscriptionDocument, StoreError> {
    let [id, callback, doc, filter, auth, project] = columns(row)?;
    Ok(SubscriptionDocument {
        kind,
        id: SubscriptionId(id.text()?),
        callback_uri: callback.text()?,
        document: doc.text()?,
        canonical_filter: filter.text()?,
        authentication: auth.opt_blob()?,
        project: project.opt_text()?,
    })
}

/// Stores a subscription; a taken id (of any kind) is a conflict.
pub(crate) async fn create<C: SqlConn>(
    tx: &mut C,
    sub: &SubscriptionDocument,
) -> Result<(), StoreError> {
    let done = tx
        .execute(
            "INSERT INTO subscriptions (id, callback_uri, canonical_filter, doc, \
             authentication, created_at, kind, project) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (id) DO NOTHING",
            &[
                sub.id.as_str().into(),
                sub.callback_uri.as_str().into(),
                sub.canonical_filter.as_str().into(),
                sub.document.as_str().into(),
                sub.authentication.as_deref().into(),
                now_ms().into(),
                sub.kind.name.into(),
                sub.project.as_deref().into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: "subscription",
            id: sub.id.0.clone(),
        }));
    }
    Ok(())
}

/// The subscription `id` of `kind`.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    kind: SubscriptionKind,
    id: &str,
) -> Result<Option<SubscriptionDocument>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM subscriptions WHERE id = $1 AND kind = $2");
    conn.row(&sql, &[id.into(), kind.name.into()], &COLS)
        .await?
        .map(|row| document(kind, row))
        .transpose()
}

/// The sealed credentials of the subscription (any kind), PM job or threshold `id`:
/// `None` when none has the id.
pub(crate) async fn callback_authentication<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<Option<Vec<u8>>>, StoreError> {
    let row = conn
        .row(
            "SELECT authentication FROM subscriptions WHERE id = $1 \
             UNION ALL SELECT authentication FROM pm_jobs WHERE id = $1 \
             UNION ALL SELECT authentication FROM thresholds WHERE id = $1 LIMIT 1",
            &[id.into()],
            &[Col::OptBlob],
        )
        .await?;
    match row {
        None => Ok(None),
        Some(row) => {
            let [blob] = columns(row)?;
            blob.opt_blob().map(Some)
        }
    }
}

/// One page of the subscriptions of `kind` in `scope` after id `after`.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    kind: SubscriptionKind,
    scope: &ProjectScope,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<SubscriptionDocument>, StoreError> {
    let limit = page_size_of(limit);
    let probe = limit + 1;
    let mut sql = format!("SELECT {COLUMNS} FROM subscriptions WHERE kind = $1 AND id > $2");
    let mut args = vec![kind.name.into(), after.unwrap_or("").into()];
    push_scope(scope, &mut sql, &mut args);
    sql.push_str(" ORDER BY id");
    sql.push_str(&limit_clause(probe));
    let items = conn
        .rows(&sql, &args, &COLS)
        .await?
        .into_iter()
        .map(|row| document(kind, row))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, |s| s.id.0.clone()))
}

/// Deletes the subscription `id` of `kind` and its pending outbox rows (dead rows stay).
pub(crate) async fn delete<C: SqlConn>(
    tx: &mut C,
    kind: SubscriptionKind,
    id: &str,
) -> Result<(), StoreError> {
    let done = tx
        .execute(
            "DELETE FROM subscriptions WHERE id = $1 AND kind = $2",
            &[id.into(), kind.name.into()],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::NotFound {
            kind: kind.what,
            id: id.to_owned(),
        });
    }
    tx.execute(
        "DELETE FROM outbox WHERE subscription_id = $1 AND status = 'pending'",
        &[id.into()],
    )
    .await?;
    Ok(())
}

/// The oldest subscription of `kind` of `project` (none: of no project) with this canonical
/// filter and callback.
pub(crate) async fn duplicate<C: SqlConn>(
    conn: &mut C,
    kind: SubscriptionKind,
    canonical_filter: &str,
    callback_uri: &str,
    project: Option<&str>,
) -> Result<Option<SubscriptionDocument>, StoreError> {
    // Equality that holds between two NULLs.
    let same_project = match C::DIALECT {
        Dialect::Sqlite => "project IS $4",
        Dialect::Postgres => "project IS NOT DISTINCT FROM $4::text",
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE kind = $1 AND callback_uri = $2 \
         AND canonical_filter = $3 AND {same_project} ORDER BY id LIMIT 1"
    );
    conn.row(
        &sql,
        &[
            kind.name.into(),
            callback_uri.into(),
            canonical_filter.into(),
            project.into(),
        ],
        &COLS,
    )
    .await?
    .map(|row| document(kind, row))
    .transpose()
}
