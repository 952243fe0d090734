//! VIMs registered with the VNFM, with their encrypted secrets.

use vnfm_types::{VimId, VnfInstanceId};

use super::{
    Col, SqlConn, columns, expect_version, from_json, locked_version, now_ms, single_int, stale,
    texts, to_json,
};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{Version, VimRecord};

const VIM: &str = "VIM";
const COLUMNS: &str =
    "id, name, vim_type, public_info, secret, created_by_instance, project, shared, version";
const COLS: [Col; 9] = [
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Blob,
    Col::OptText,
    Col::OptText,
    Col::Int,
    Col::Int,
];

fn record(row: Vec<super::Cell>) -> Result<(VimRecord, Version), StoreError> {
    let [
        id,
        name,
        vim_type,
        public,
        secret,
        created_by,
        project,
        shared,
        version,
    ] = columns(row)?;
    let id = id.text()?;
    Ok((
        VimRecord {
            public: from_json(VIM, &id, &public.text()?)?,
            id: VimId(id),
            name: name.text()?,
            vim_type: vim_type.text()?,
            secret: secret.blob()?,
            created_by_instance: created_by.opt_text()?.map(VnfInstanceId),
            project: project.opt_text()?,
            shared: shared.int()? != 0,
        },
        Version(version.int()?),
    ))
}

/// Stores a VIM at [`Version::FIRST`].
pub(crate) async fn create<C: SqlConn>(tx: &mut C, vim: &VimRecord) -> Result<Version, StoreError> {
    let public = to_json(VIM, &vim.public)?;
    let done = tx
        .execute(
            "INSERT INTO vims (id, name, vim_type, public_info, secret, \
             created_by_instance, project, shared, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $8, $9, 1, $7, $7) ON CONFLICT (id) DO NOTHING",
            &[
                vim.id.as_str().into(),
                vim.name.as_str().into(),
                vim.vim_type.as_str().into(),
                public.as_str().into(),
                vim.secret.as_slice().into(),
                vim.created_by_instance.as_ref().map(|i| i.as_str()).into(),
                now_ms().into(),
                vim.project.as_deref().into(),
                i64::from(vim.shared).into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: VIM,
            id: vim.id.0.clone(),
        }));
    }
    Ok(Version::FIRST)
}

/// The VIM `id`.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(VimRecord, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM vims WHERE id = $1");
    conn.row(&sql, &[id.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// All VIMs, ordered by id.
pub(crate) async fn all<C: SqlConn>(conn: &mut C) -> Result<Vec<(VimRecord, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM vims ORDER BY id");
    conn.rows(&sql, &[], &COLS)
        .await?
        .into_iter()
        .map(record)
        .collect()
}

/// The VIMs that lifecycle hooks of `instance_id` registered, by id.
pub(crate) async fn created_by<C: SqlConn>(
    conn: &mut C,
    instance_id: &str,
) -> Result<Vec<(VimRecord, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM vims WHERE created_by_instance = $1 ORDER BY id");
    conn.rows(&sql, &[instance_id.into()], &COLS)
        .await?
        .into_iter()
        .map(record)
        .collect()
}

/// Replaces the VIM at `expected` (its project stays the one it was registered in; whether it
/// is shared is replaced).
pub(crate) async fn update<C: SqlConn>(
    tx: &mut C,
    vim: &VimRecord,
    expected: Version,
) -> Result<Version, StoreError> {
    let public = to_json(VIM, &vim.public)?;
    let version = single_int(
        tx,
        "UPDATE vims SET name = $3, vim_type = $4, public_info = $5, secret = $6, \
         created_by_instance = $7, shared = $9, version = version + 1, updated_at = $8 \
         WHERE id = $1 AND version = $2 RETURNING version",
        &[
            vim.id.as_str().into(),
            expected.0.into(),
            vim.name.as_str().into(),
            vim.vim_type.as_str().into(),
            public.as_str().into(),
            vim.secret.as_slice().into(),
            vim.created_by_instance.as_ref().map(|i| i.as_str()).into(),
            now_ms().into(),
            i64::from(vim.shared).into(),
        ],
    )
    .await?;
    match version {
        Some(v) => Ok(Version(v)),
        None => {
            let found = locked_version(tx, "vims", vim.id.as_str()).await?;
            Err(stale(VIM, vim.id.as_str(), expected, found))
        }
    }
}

/// Deletes the VIM at `expected` unless instances use it.
pub(crate) async fn delete<C: SqlConn>(
    tx: &mut C,
    id: &str,
    expected: Version,
) -> Result<(), StoreError> {
    let found = locked_version(tx, "vims", id).await?;
    expect_version(VIM, id, expected, found)?;
    let by = texts(
        tx,
        "SELECT instance_id FROM instance_vims WHERE vim_id = $1 ORDER BY instance_id LIMIT 5",
        &[id.into()],
    )
    .await?;
    if !by.is_empty() {
        return Err(StoreError::Conflict(Conflict::InUse {
            kind: VIM,
            id: id.to_owned(),
            by,
        }));
    }
    tx.execute("DELETE FROM vims WHERE id = $1", &[id.into()])
        .await?;
    Ok(())
}
