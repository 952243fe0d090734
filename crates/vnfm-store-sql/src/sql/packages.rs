//! VNF packages: the `VnfPkgInfo` documents, unique `vnfdId`s, and the content in pieces.

use super::{
    Col, DbError, SqlConn, columns, expect_version, from_json, limit_clause, locked_version,
    now_ms, page, page_size_of, push_scope, single_int, stale, to_json,
};
use crate::sql::outbox;
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{PackageRecord, Page, ProjectScope, Version};

const PACKAGE: &str = "VNF package";
const PACKAGE_VNFD: &str = "VNF package for vnfdId";
const COLUMNS: &str = "id, vnfd_id, info, version, project";
const COLS: [Col; 5] = [Col::Text, Col::OptText, Col::Text, Col::Int, Col::OptText];

fn record(row: Vec<super::Cell>) -> Result<(PackageRecord, Version), StoreError> {
    let [id, vnfd_id, info, version, project] = columns(row)?;
    let id = id.text()?;
    Ok((
        PackageRecord {
            info: from_json(PACKAGE, &id, &info.text()?)?,
            vnfd_id: vnfd_id.opt_text()?,
            id,
            project: project.opt_text()?,
        },
        Version(version.int()?),
    ))
}

/// A unique violation on `vnf_packages` is a taken id or a taken vnfdId.
fn conflict(e: DbError, package: &PackageRecord) -> StoreError {
    if !e.unique {
        return e.into();
    }
    let vnfd_taken = e.message.contains("vnfd_id");
    StoreError::Conflict(Conflict::AlreadyExists {
        kind: if vnfd_taken { PACKAGE_VNFD } else { PACKAGE },
        id: if vnfd_taken {
            package.vnfd_id.clone().unwrap_or_default()
        } else {
            package.id.clone()
        },
    })
}

/// Stores a new package at [`Version::FIRST`].
pub(crate) async fn create<C: SqlConn>(
    tx: &mut C,
    package: &PackageRecord,
) -> Result<Version, StoreError> {
    let info = to_json(PACKAGE, &package.info)?;
    tx.execute(
        "INSERT INTO vnf_packages (id, vnfd_id, info, version, created_at, updated_at, \
         project) VALUES ($1, $2, $3, 1, $4, $4, $5)",
        &[
            package.id.as_str().into(),
            package.vnfd_id.as_deref().into(),
            info.as_str().into(),
            now_ms().into(),
            package.project.as_deref().into(),
        ],
    )
    .await
    .map_err(|e| conflict(e, package))?;
    Ok(Version::FIRST)
}

/// The package whose `column` (`id` or `vnfd_id`) is `value`.
pub(crate) async fn get_by<C: SqlConn>(
    conn: &mut C,
    column: ByColumn,
    value: &str,
) -> Result<Option<(PackageRecord, Version)>, StoreError> {
    let column = match column {
        ByColumn::Id => "id",
        ByColumn::VnfdId => "vnfd_id",
    };
    let sql = format!("SELECT {COLUMNS} FROM vnf_packages WHERE {column} = $1");
    conn.row(&sql, &[value.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// The unique keys a package is looked up by.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ByColumn {
    Id,
    VnfdId,
}

/// Replaces the package at `expected` and enqueues `notify`.
pub(crate) async fn update<C: SqlConn>(
    tx: &mut C,
    package: &PackageRecord,
    expected: Version,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let info = to_json(PACKAGE, &package.info)?;
    let row = tx
        .row(
            "UPDATE vnf_packages SET vnfd_id = $3, info = $4, version = version + 1, \
             updated_at = $5 WHERE id = $1 AND version = $2 RETURNING version",
            &[
                package.id.as_str().into(),
                expected.0.into(),
                package.vnfd_id.as_deref().into(),
                info.as_str().into(),
                now_ms().into(),
            ],
            &[Col::Int],
        )
        .await
        .map_err(|e| conflict(e, package))?;
    let Some(row) = row else {
        let found = locked_version(tx, "vnf_packages", &package.id).await?;
        return Err(stale(PACKAGE, &package.id, expected, found));
    };
    let [version] = columns(row)?;
    outbox::insert(tx, notify).await?;
    Ok(Version(version.int()?))
}

/// Deletes the package and its content at `expected` and enqueues `notify`.
pub(crate) async fn delete<C: SqlConn>(
    tx: &mut C,
    id: &str,
    expected: Version,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<(), StoreError> {
    let found = locked_version(tx, "vnf_packages", id).await?;
    expect_version(PACKAGE, id, expected, found)?;
    clear_content(tx, id).await?;
    tx.execute("DELETE FROM vnf_packages WHERE id = $1", &[id.into()])
        .await?;
    outbox::insert(tx, notify).await
}

/// One page of the packages in `scope` after id `after`.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    scope: &ProjectScope,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<PackageRecord>, StoreError> {
    let limit = page_size_of(limit);
    let probe = limit + 1;
    let mut sql = format!("SELECT {COLUMNS} FROM vnf_packages WHERE id > $1");
    let mut args = vec![after.unwrap_or("").into()];
    push_scope(scope, &mut sql, &mut args);
    sql.push_str(" ORDER BY id");
    sql.push_str(&limit_clause(probe));
    let items = conn
        .rows(&sql, &args, &COLS)
        .await?
        .into_iter()
        .map(|row| record(row).map(|(p, _)| p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, |p| p.id.clone()))
}

async fn clear_content<C: SqlConn>(tx: &mut C, id: &str) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM vnf_package_content WHERE id = $1",
        "DELETE FROM vnf_package_content_chunks WHERE id = $1",
    ] {
        tx.execute(sql, &[id.into()]).await?;
    }
    Ok(())
}

/// Locks the package and removes its content, ready for [`put_piece`]s;
/// [`StoreError::NotFound`] if the package does not exist.
pub(crate) async fn begin_content<C: SqlConn>(tx: &mut C, id: &str) -> Result<(), StoreError> {
    if locked_version(tx, "vnf_packages", id).await?.is_none() {
        return Err(StoreError::NotFound {
            kind: PACKAGE,
            id: id.to_owned(),
        });
    }
    clear_content(tx, id).await
}

/// Stores piece `seq` of the content.
pub(crate) async fn put_piece<C: SqlConn>(
    tx: &mut C,
    id: &str,
    seq: i64,
    bytes: &[u8],
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO vnf_package_content_chunks (id, seq, content) VALUES ($1, $2, $3)",
        &[id.into(), seq.into(), bytes.into()],
    )
    .await?;
    Ok(())
}

/// Content stored before the content was kept in pieces: one row.
pub(crate) async fn legacy_content<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    match conn
        .row(
            "SELECT content FROM vnf_package_content WHERE id = $1",
            &[id.into()],
            &[Col::Blob],
        )
        .await?
    {
        None => Ok(None),
        Some(row) => {
            let [bytes] = columns(row)?;
            bytes.blob().map(Some)
        }
    }
}

/// Piece `seq` of the content, if it exists.
pub(crate) async fn piece<C: SqlConn>(
    conn: &mut C,
    id: &str,
    seq: i64,
) -> Result<Option<Vec<u8>>, StoreError> {
    match conn
        .row(
            "SELECT content FROM vnf_package_content_chunks WHERE id = $1 AND seq = $2",
            &[id.into(), seq.into()],
            &[Col::Blob],
        )
        .await?
    {
        None => Ok(None),
        Some(row) => {
            let [bytes] = columns(row)?;
            bytes.blob().map(Some)
        }
    }
}

/// Whether the package exists (used before spooling an upload).
pub(crate) async fn exists<C: SqlConn>(conn: &mut C, id: &str) -> Result<bool, StoreError> {
    Ok(single_int(
        conn,
        "SELECT version FROM vnf_packages WHERE id = $1",
        &[id.into()],
    )
    .await?
    .is_some())
}
