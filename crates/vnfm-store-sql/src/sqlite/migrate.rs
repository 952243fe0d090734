//! The SQLite schema migrations, recorded in the `_sqlx_migrations` table in the format sqlx's
//! migrator uses (SHA-384 checksums of the SQL), so that databases created by earlier builds,
//! which migrated with sqlx, open unchanged, and the other way round.

use std::time::Instant;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha384};

use super::conn::db_error;
use vnfm_store::StoreError;

/// A schema migration: version, description, SQL.
pub(crate) type MigrationSource = (i64, &'static str, &'static str);

/// The SQLite schema migrations, oldest first.
pub(crate) const MIGRATIONS: &[MigrationSource] = &[
    (
        1,
        "init",
        include_str!("../../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "packages",
        include_str!("../../migrations/sqlite/0002_packages.sql"),
    ),
    (
        3,
        "outbox order",
        include_str!("../../migrations/sqlite/0003_outbox_order.sql"),
    ),
    (
        4,
        "pkgm subscriptions",
        include_str!("../../migrations/sqlite/0004_pkgm_subscriptions.sql"),
    ),
    (
        5,
        "settings",
        include_str!("../../migrations/sqlite/0005_settings.sql"),
    ),
    (
        6,
        "package content chunks",
        include_str!("../../migrations/sqlite/0006_package_content_chunks.sql"),
    ),
    (
        7,
        "outbox summary index",
        include_str!("../../migrations/sqlite/0007_outbox_summary.sql"),
    ),
    (
        8,
        "name search",
        include_str!("../../migrations/sqlite/0008_name_search.sql"),
    ),
    (
        9,
        "alarms",
        include_str!("../../migrations/sqlite/0009_alarms.sql"),
    ),
    (
        10,
        "instance default view",
        include_str!("../../migrations/sqlite/0010_instance_default_view.sql"),
    ),
    (
        11,
        "projects",
        include_str!("../../migrations/sqlite/0011_projects.sql"),
    ),
    (
        12,
        "performance management",
        include_str!("../../migrations/sqlite/0012_pm.sql"),
    ),
    (
        13,
        "indicators",
        include_str!("../../migrations/sqlite/0013_indicators.sql"),
    ),
    (
        14,
        "VIM projects",
        include_str!("../../migrations/sqlite/0014_vim_projects.sql"),
    ),
    (
        15,
        "idempotency keys",
        include_str!("../../migrations/sqlite/0015_idempotency_keys.sql"),
    ),
    (
        16,
        "VIM sharing",
        include_str!("../../migrations/sqlite/0016_vim_sharing.sql"),
    ),
    (
        17,
        "outbox trace context",
        include_str!("../../migrations/sqlite/0017_outbox_trace_context.sql"),
    ),
    (
        18,
        "idempotency answer etag",
        include_str!("../../migrations/sqlite/0018_idempotency_answer_etag.sql"),
    ),
    (
        19,
        "idempotency kept answer",
        include_str!("../../migrations/sqlite/0019_idempotency_kept_answer.sql"),
    ),
];

/// The checksum sqlx records for a migration's SQL.
pub(crate) fn checksum(sql: &str) -> Vec<u8> {
    Sha384::digest(sql.as_bytes()).to_vec()
}

/// Applies the missing migrations in one `BEGIN IMMEDIATE` transaction (so that processes
/// opening a fresh file together apply them once), after checking the applied ones: a
/// migration this build does not know is [`StoreError::SchemaTooNew`]; a failed or altered
/// one is [`StoreError::Migration`].
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let failed = |e: rusqlite::Error| StoreError::Migration(db_error(e).message);
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (\
         version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
         success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
    )
    .map_err(failed)?;
    let applied: Vec<(i64, bool, Vec<u8>)> = tx
        .prepare("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .map_err(failed)?;
    let supported = MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0);
    for (version, success, sum) in &applied {
        let Some((_, description, sql)) = MIGRATIONS.iter().find(|m| m.0 == *version) else {
            return Err(StoreError::SchemaTooNew {
                found: *version,
                supported,
            });
        };
        if !success {
            return Err(StoreError::Migration(format!(
                "migration {version} ({description}) failed earlier and left the database \
                 partly migrated; restore a backup"
            )));
        }
        if *sum != checksum(sql) {
            return Err(StoreError::Migration(format!(
                "migration {version} ({description}) was applied with different SQL than this \
                 build's; the database was made by an incompatible build"
            )));
        }
    }
    for (version, description, sql) in MIGRATIONS {
        if applied.iter().any(|(v, ..)| v == version) {
            continue;
        }
        let started = Instant::now();
        tx.execute_batch(sql).map_err(|e| {
            StoreError::Migration(format!(
                "migration {version} ({description}): {}",
                db_error(e).message
            ))
        })?;
        let nanos = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (?1, ?2, TRUE, ?3, ?4)",
            params![version, description, checksum(sql), nanos],
        )
        .map_err(failed)?;
    }
    tx.commit().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType};

    #[test]
    fn checksums_are_the_ones_sqlx_records() {
        for (version, description, sql) in MIGRATIONS {
            let m = Migration::new(
                *version,
                (*description).into(),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            );
            assert_eq!(m.checksum.as_ref(), checksum(sql).as_slice(), "{version}");
        }
    }

    #[test]
    fn a_database_from_a_newer_build_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        // Idempotent.
        migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (999, 'future', TRUE, x'00', 0)",
            [],
        )
        .unwrap();
        match migrate(&mut conn) {
            Err(StoreError::SchemaTooNew { found: 999, .. }) => {}
            other => panic!("expected SchemaTooNew, got {other:?}"),
        }
    }

    #[test]
    fn an_altered_migration_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute(
            "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 2",
            [],
        )
        .unwrap();
        let e = migrate(&mut conn).unwrap_err().to_string();
        assert!(e.contains("migration 2 (packages)"), "{e}");
    }
}
