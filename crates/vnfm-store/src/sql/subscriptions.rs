//! Subscriptions of every kind, in one table and one id space, told apart by a `kind` column:
//! one implementation, generic over the record type ([`Kind`]).

use super::{Col, SqlConn, columns, from_json, now_ms, page, page_size_of, to_json};
use crate::error::{Conflict, StoreError};
use crate::model::{Page, PkgmSubscriptionRecord, SubscriptionRecord};

/// A kind of stored subscription.
pub(crate) trait Kind: Sized + Send + 'static {
    /// The value of the `kind` column.
    const KIND: &'static str;
    /// What the record is called in errors.
    const WHAT: &'static str;

    /// The subscription id.
    fn id(&self) -> &str;
    /// Where notifications go.
    fn callback_uri(&self) -> &str;
    /// The canonical filter, for duplicate detection.
    fn canonical_filter(&self) -> &str;
    /// The encrypted credentials.
    fn authentication(&self) -> Option<&[u8]>;
    /// The JSON document of the subscription resource.
    fn doc(&self) -> Result<String, StoreError>;
    /// The record from its stored columns.
    fn from_columns(
        id: &str,
        doc: &str,
        canonical_filter: String,
        authentication: Option<Vec<u8>>,
    ) -> Result<Self, StoreError>;
}

impl Kind for SubscriptionRecord {
    const KIND: &'static str = "lcm";
    const WHAT: &'static str = "subscription";

    fn id(&self) -> &str {
        self.subscription.id.as_str()
    }
    fn callback_uri(&self) -> &str {
        &self.subscription.callback_uri
    }
    fn canonical_filter(&self) -> &str {
        &self.canonical_filter
    }
    fn authentication(&self) -> Option<&[u8]> {
        self.authentication.as_deref()
    }
    fn doc(&self) -> Result<String, StoreError> {
        to_json(Self::WHAT, &self.subscription)
    }
    fn from_columns(
        id: &str,
        doc: &str,
        canonical_filter: String,
        authentication: Option<Vec<u8>>,
    ) -> Result<Self, StoreError> {
        Ok(SubscriptionRecord {
            subscription: from_json(Self::WHAT, id, doc)?,
            canonical_filter,
            authentication,
        })
    }
}

impl Kind for PkgmSubscriptionRecord {
    const KIND: &'static str = "pkgm";
    const WHAT: &'static str = "VNF package management subscription";

    fn id(&self) -> &str {
        self.subscription.id.as_str()
    }
    fn callback_uri(&self) -> &str {
        &self.subscription.callback_uri
    }
    fn canonical_filter(&self) -> &str {
        &self.canonical_filter
    }
    fn authentication(&self) -> Option<&[u8]> {
        self.authentication.as_deref()
    }
    fn doc(&self) -> Result<String, StoreError> {
        to_json(Self::WHAT, &self.subscription)
    }
    fn from_columns(
        id: &str,
        doc: &str,
        canonical_filter: String,
        authentication: Option<Vec<u8>>,
    ) -> Result<Self, StoreError> {
        Ok(PkgmSubscriptionRecord {
            subscription: from_json(Self::WHAT, id, doc)?,
            canonical_filter,
            authentication,
        })
    }
}

const COLUMNS: &str = "id, doc, canonical_filter, authentication";
const COLS: [Col; 4] = [Col::Text, Col::Text, Col::Text, Col::OptBlob];

fn record<K: Kind>(row: Vec<super::Cell>) -> Result<K, StoreError> {
    let [id, doc, filter, auth] = columns(row)?;
    K::from_columns(&id.text()?, &doc.text()?, filter.text()?, auth.opt_blob()?)
}

/// Stores a subscription; a taken id (of any kind) is a conflict.
pub(crate) async fn create<C: SqlConn, K: Kind>(tx: &mut C, record: &K) -> Result<(), StoreError> {
    let doc = record.doc()?;
    let done = tx
        .execute(
            "INSERT INTO subscriptions (id, callback_uri, canonical_filter, doc, \
             authentication, created_at, kind) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (id) DO NOTHING",
            &[
                record.id().into(),
                record.callback_uri().into(),
                record.canonical_filter().into(),
                doc.as_str().into(),
                record.authentication().into(),
                now_ms().into(),
                K::KIND.into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: "subscription",
            id: record.id().to_owned(),
        }));
    }
    Ok(())
}

/// The subscription `id` of kind `K`.
pub(crate) async fn get<C: SqlConn, K: Kind>(
    conn: &mut C,
    id: &str,
) -> Result<Option<K>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM subscriptions WHERE id = $1 AND kind = $2");
    conn.row(&sql, &[id.into(), K::KIND.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// One page of the subscriptions of kind `K` after id `after`.
pub(crate) async fn page_of<C: SqlConn, K: Kind>(
    conn: &mut C,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<K>, StoreError> {
    let limit = page_size_of(limit);
    let sql = format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE kind = $1 AND id > $2 ORDER BY id LIMIT $3"
    );
    let items = conn
        .rows(
            &sql,
            &[
                K::KIND.into(),
                after.unwrap_or("").into(),
                (limit + 1).into(),
            ],
            &COLS,
        )
        .await?
        .into_iter()
        .map(record)
        .collect::<Result<Vec<K>, _>>()?;
    Ok(page(items, limit, |s| s.id().to_owned()))
}

/// Deletes the subscription of kind `K` and its pending outbox rows (dead rows stay).
pub(crate) async fn delete<C: SqlConn, K: Kind>(tx: &mut C, id: &str) -> Result<(), StoreError> {
    let done = tx
        .execute(
            "DELETE FROM subscriptions WHERE id = $1 AND kind = $2",
            &[id.into(), K::KIND.into()],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::NotFound {
            kind: K::WHAT,
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

/// The oldest subscription of kind `K` with this canonical filter and callback.
pub(crate) async fn duplicate<C: SqlConn, K: Kind>(
    conn: &mut C,
    canonical_filter: &str,
    callback_uri: &str,
) -> Result<Option<K>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE kind = $1 AND callback_uri = $2 \
         AND canonical_filter = $3 ORDER BY id LIMIT 1"
    );
    conn.row(
        &sql,
        &[K::KIND.into(), callback_uri.into(), canonical_filter.into()],
        &COLS,
    )
    .await?
    .map(record)
    .transpose()
}
