//! Deployment-wide settings and the schema version.

use super::Result;
use async_trait::async_trait;
use serde_json::Value;

/// Deployment-wide settings and the schema version. Part of [`crate::Store`].
#[async_trait]
pub trait SettingStore: Send + Sync {
    /// The deployment-wide setting `name` (e.g. the NFVO connection), shared by every replica.
    async fn get_setting(&self, name: &str) -> Result<Option<Value>>;

    /// Stores (`Some`) or removes (`None`) the setting `name`.
    async fn put_setting(&self, name: &str, value: Option<&Value>) -> Result<()>;

    // ----- Schema -----

    /// The newest schema migration applied to the database.
    async fn schema_version(&self) -> Result<i64>;
}
