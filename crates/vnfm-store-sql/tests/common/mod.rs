//! Test harness: a fresh database per test on SQLite (temp file) or PostgreSQL (a new database
//! on the server named by `VNFM_TEST_POSTGRES_URL`), plus document fixtures.

#![allow(dead_code)]

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use vnfm_store::Store;
use vnfm_store_sql::{PostgresStore, SqliteStore};
use vnfm_types::{LcmOperationStateType, VnfInstance, VnfLcmOpOcc};

/// Where a test database lives.
pub enum Backend {
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    Postgres {
        admin_url: String,
        options: Box<PgConnectOptions>,
        name: String,
    },
}

/// A fresh database and a store open on it.
pub struct TestDb {
    pub store: Arc<dyn Store>,
    pub backend: Backend,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl TestDb {
    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("store.db");
        let store = SqliteStore::open(&path).await.expect("open sqlite store");
        TestDb {
            store: Arc::new(store),
            backend: Backend::Sqlite { _dir: dir, path },
        }
    }

    /// A new database on the server of `VNFM_TEST_POSTGRES_URL`, for tests that carry
    /// `#[vnfm_test_env::needs(postgres)]`; panics when the variable is not set.
    pub async fn postgres() -> TestDb {
        let admin_url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
        let name = format!(
            "vnfm_t_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        let mut admin = PgConnection::connect(&admin_url)
            .await
            .expect("connect to VNFM_TEST_POSTGRES_URL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create test database");
        let _ = admin.close().await;
        let options = PgConnectOptions::from_str(&admin_url)
            .expect("parse VNFM_TEST_POSTGRES_URL")
            .database(&name);
        let store = PostgresStore::connect_with(options.clone(), 10)
            .await
            .expect("open postgres store");
        TestDb {
            store: Arc::new(store),
            backend: Backend::Postgres {
                admin_url,
                options: Box::new(options),
                name,
            },
        }
    }

    /// Another independent store on the same database, as a second process would open it.
    pub async fn reopen(&self) -> Result<Arc<dyn Store>, vnfm_store::StoreError> {
        Ok(match &self.backend {
            Backend::Sqlite { path, .. } => Arc::new(SqliteStore::open(path).await?),
            Backend::Postgres { options, .. } => {
                Arc::new(PostgresStore::connect_with((**options).clone(), 10).await?)
            }
        })
    }

    /// Records a migration newer than this build knows, as a newer VNFM would have.
    pub async fn fake_future_migration(&self, version: i64) {
        let sql = "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                   execution_time) VALUES ($1, 'from the future', $2, $3, 0)";
        match &self.backend {
            Backend::Sqlite { path, .. } => {
                rusqlite::Connection::open(path)
                    .expect("raw sqlite connection")
                    .execute(
                        &sql.replace('$', "?"),
                        rusqlite::params![version, true, vec![0u8; 4]],
                    )
                    .expect("insert future migration");
            }
            Backend::Postgres { options, .. } => {
                let mut c = PgConnection::connect_with(options)
                    .await
                    .expect("raw pg connection");
                sqlx::query(sql)
                    .bind(version)
                    .bind(true)
                    .bind(vec![0u8; 4])
                    .execute(&mut c)
                    .await
                    .expect("insert future migration");
            }
        }
    }

    /// Runs `sql`, a statement without parameters, on a raw connection to the database (to
    /// write rows as an older build would have).
    pub async fn execute_raw(&self, sql: &str) {
        match &self.backend {
            Backend::Sqlite { path, .. } => {
                rusqlite::Connection::open(path)
                    .expect("raw sqlite connection")
                    .execute_batch(sql)
                    .expect("raw statement");
            }
            Backend::Postgres { options, .. } => {
                let mut c = PgConnection::connect_with(options)
                    .await
                    .expect("raw pg connection");
                sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&mut c)
                    .await
                    .expect("raw statement");
            }
        }
    }

    /// Drops the PostgreSQL test database (SQLite's temp dir goes with `self`).
    pub async fn finish(self) {
        let TestDb { store, backend } = self;
        drop(store);
        if let Backend::Postgres {
            admin_url, name, ..
        } = backend
            && let Ok(mut admin) = PgConnection::connect(&admin_url).await
        {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .execute(&mut admin)
            .await;
        }
    }
}

/// A VNF instance document with the members the store indexes, plus free-form members whose
/// order and content must survive a round trip.
pub fn instance(id: &str, vnfd: &str, name: Option<&str>, vims: &[&str]) -> VnfInstance {
    let mut v = json!({
        "id": id,
        "vnfdId": vnfd,
        "vnfProvider": "Company",
        "vnfProductName": "Sample VNF",
        "vnfSoftwareVersion": "1.0",
        "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED",
        "metadata": {"zeta": 1, "alpha": {"nested": [3, 1, 2]}, "ünïcødé": "✓"},
        "_links": {"self": {"href": format!("http://vnfm/vnflcm/v2/vnf_instances/{id}")}}
    });
    if let Some(name) = name {
        v["vnfInstanceName"] = json!(name);
    }
    if !vims.is_empty() {
        let mut map = serde_json::Map::new();
        for (i, vim) in vims.iter().enumerate() {
            map.insert(
                format!("vim{i}"),
                json!({"vimId": vim, "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                       "interfaceInfo": {"endpoint": "http://keystone/v3"}}),
            );
        }
        v["vimConnectionInfo"] = serde_json::Value::Object(map);
    }
    serde_json::from_value(v).expect("valid VnfInstance fixture")
}

/// An op-occ document of `instance` in `state`.
pub fn op_occ(id: &str, instance: &str, state: LcmOperationStateType) -> VnfLcmOpOcc {
    serde_json::from_value(json!({
        "id": id,
        "operationState": state,
        "stateEnteredTime": "2024-01-01T00:00:00Z",
        "startTime": "2024-01-01T00:00:00Z",
        "vnfInstanceId": instance,
        "operation": "INSTANTIATE",
        "isAutomaticInvocation": false,
        "operationParams": {"flavourId": "simple"},
        "isCancelPending": false,
        "_links": {
            "self": {"href": format!("http://vnfm/vnflcm/v2/vnf_lcm_op_occs/{id}")},
            "vnfInstance": {"href": format!("http://vnfm/vnflcm/v2/vnf_instances/{instance}")}
        }
    }))
    .expect("valid VnfLcmOpOcc fixture")
}

/// `occ` moved to `state`.
pub fn in_state(occ: &VnfLcmOpOcc, state: LcmOperationStateType) -> VnfLcmOpOcc {
    let mut o = occ.clone();
    o.operation_state = state;
    o
}
