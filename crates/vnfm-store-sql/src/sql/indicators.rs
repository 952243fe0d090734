//! VNF indicators: the last value of each indicator of each instance, keyed by (instance,
//! indicator), with the instance's project.

use vnfm_store::{Page, ProjectScope, StoreError};
use vnfm_types::VnfIndicator;

use super::{
    Col, SqlConn, columns, from_json, limit_clause, now_ms, page, page_size_of, push_scope, to_json,
};

const INDICATOR: &str = "VNF indicator";
const COLS: [Col; 2] = [Col::Text, Col::Text];

fn record(row: Vec<super::Cell>) -> Result<VnfIndicator, StoreError> {
    let [key, doc] = columns(row)?;
    from_json(INDICATOR, &key.text()?, &doc.text()?)
}

/// Writes the indicator's value (a new row, or a replacement) and enqueues `notify`. The row
/// takes the project of its instance when it is first written.
pub(crate) async fn put<C: SqlConn>(
    tx: &mut C,
    indicator: &VnfIndicator,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<(), StoreError> {
    let doc = to_json(INDICATOR, indicator)?;
    tx.execute(
        &format!(
            "INSERT INTO vnf_indicators (instance_id, indicator_id, doc, updated_at, project) \
             VALUES ($1, $2, $3, $4, {}) ON CONFLICT (instance_id, indicator_id) \
             DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at",
            super::instance_project(1)
        ),
        &[
            indicator.vnf_instance_id.as_str().into(),
            indicator.id.as_str().into(),
            doc.as_str().into(),
            now_ms().into(),
        ],
    )
    .await?;
    super::outbox::insert(tx, notify).await
}

/// The indicator `id` of instance `instance`.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    instance: &str,
    id: &str,
) -> Result<Option<VnfIndicator>, StoreError> {
    conn.row(
        "SELECT indicator_id, doc FROM vnf_indicators \
         WHERE instance_id = $1 AND indicator_id = $2",
        &[instance.into(), id.into()],
        &COLS,
    )
    .await?
    .map(record)
    .transpose()
}

/// The marker of a page that ends at `indicator`: its instance and id, which never contain a
/// space (instance ids are UUID-like, indicator ids TOSCA names).
fn marker(indicator: &VnfIndicator) -> String {
    format!("{} {}", indicator.vnf_instance_id.as_str(), indicator.id)
}

/// One page of the indicators in `scope` (of `instance` only, when given) after `after` (a
/// marker of a previous page), ordered by instance and indicator id.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    scope: &ProjectScope,
    instance: Option<&str>,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<VnfIndicator>, StoreError> {
    let limit = page_size_of(limit);
    let (after_instance, after_id) = after
        .and_then(|m| m.split_once(' '))
        .unwrap_or((after.unwrap_or(""), ""));
    let mut sql = String::from(
        "SELECT indicator_id, doc FROM vnf_indicators \
         WHERE (instance_id > $1 OR (instance_id = $1 AND indicator_id > $2))",
    );
    let mut args = vec![after_instance.into(), after_id.into()];
    if let Some(i) = instance {
        args.push(i.into());
        sql.push_str(&format!(" AND instance_id = ${}", args.len()));
    }
    push_scope(scope, &mut sql, &mut args);
    sql.push_str(" ORDER BY instance_id, indicator_id");
    sql.push_str(&limit_clause(limit + 1));
    let items = conn
        .rows(&sql, &args, &COLS)
        .await?
        .into_iter()
        .map(record)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, marker))
}

/// Deletes the indicators of `instance` whose ids are not in `keep`; returns how many.
pub(crate) async fn retain<C: SqlConn>(
    tx: &mut C,
    instance: &str,
    keep: &[String],
) -> Result<u64, StoreError> {
    let mut sql = String::from("DELETE FROM vnf_indicators WHERE instance_id = $1");
    let mut args = vec![instance.into()];
    for id in keep {
        args.push(id.as_str().into());
        sql.push_str(&format!(" AND indicator_id <> ${}", args.len()));
    }
    Ok(tx.execute(&sql, &args).await?)
}

/// The instances that have indicator values, after `after`, at most `limit`.
pub(crate) async fn instances<C: SqlConn>(
    conn: &mut C,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<String>, StoreError> {
    let limit = page_size_of(limit);
    let rows = conn
        .rows(
            &format!(
                "SELECT DISTINCT instance_id FROM vnf_indicators WHERE instance_id > $1 \
                 ORDER BY instance_id{}",
                limit_clause(limit + 1)
            ),
            &[after.unwrap_or("").into()],
            &[Col::Text],
        )
        .await?;
    let items = rows
        .into_iter()
        .map(|row| columns::<1>(row).and_then(|[id]| id.text()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, String::clone))
}
