//! Deployment-wide settings and the schema version.

use serde_json::Value;

use super::{Col, SqlConn, columns, from_json, now_ms, single_int, to_json};
use vnfm_store::StoreError;

/// The setting `name`.
pub(crate) async fn get<C: SqlConn>(conn: &mut C, name: &str) -> Result<Option<Value>, StoreError> {
    let Some(row) = conn
        .row(
            "SELECT value FROM settings WHERE name = $1",
            &[name.into()],
            &[Col::Text],
        )
        .await?
    else {
        return Ok(None);
    };
    let [value] = columns(row)?;
    from_json("setting", name, &value.text()?).map(Some)
}

/// Stores (`Some`) or removes (`None`) the setting `name`.
pub(crate) async fn put<C: SqlConn>(
    tx: &mut C,
    name: &str,
    value: Option<&Value>,
) -> Result<(), StoreError> {
    match value {
        Some(v) => {
            let text = to_json("setting", v)?;
            tx.execute(
                "INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, \
                 updated_at = excluded.updated_at",
                &[name.into(), text.as_str().into(), now_ms().into()],
            )
            .await?;
        }
        None => {
            tx.execute("DELETE FROM settings WHERE name = $1", &[name.into()])
                .await?;
        }
    }
    Ok(())
}

/// The newest schema migration applied.
pub(crate) async fn schema_version<C: SqlConn>(conn: &mut C) -> Result<i64, StoreError> {
    Ok(single_int(
        conn,
        "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
        &[],
    )
    .await?
    .unwrap_or(0))
}
