//! OpenStack Keystone v3 token validation, so that the REST server accepts the
//! `X-Auth-Token` that python-tackerclient and keystoneauth send.
//!
//! A [`KeystoneValidator`] authenticates as a service identity (a user with a password and a
//! project, or an application credential) and keeps that service token, renewing it a minute
//! before it expires or when Keystone refuses it. [`KeystoneValidator::validate`] asks Keystone
//! about a caller's token (`GET /v3/auth/tokens` with `X-Auth-Token: <service token>` and
//! `X-Subject-Token: <caller token>`) and returns a [`KeystoneIdentity`]: user, project,
//! domain, roles, expiry.
//!
//! - Answers are cached by the SHA-256 of the token (the token itself is never kept), at most
//!   [`KeystoneConfig::cache_capacity`] of them (least recently used first out). An entry is
//!   used until the token's `expires_at`, and Keystone is asked again once
//!   [`KeystoneConfig::revalidate_after`] (default 60 s) has passed since it last confirmed
//!   the token: a revoked token stops working within that bound.
//! - [`KeystoneError::InvalidToken`] means the token is unknown, malformed, expired or
//!   revoked (answer `401`); every other error means Keystone could not tell: unreachable,
//!   refusing the service credentials, failing (answer `503`, never `401`).
//! - [`RolePolicy`] maps roles to an [`Access`]: by default `reader` reads, `member` and
//!   `admin` write, `admin` (in the admin project, or system-scoped) sees every project.
//! - Tokens, passwords and application credential secrets never appear in errors, logs or
//!   `Debug` output.
//!
//! ```no_run
//! use vnfm_keystone::{KeystoneConfig, KeystoneValidator, ServiceCredentials};
//! use vnfm_types::SecretString;
//!
//! # async fn example(user_token: &str) -> Result<(), vnfm_keystone::KeystoneError> {
//! let config = KeystoneConfig::new(
//!     "http://keystone.example:5000/v3",
//!     ServiceCredentials::Password {
//!         user: "vnfm".into(),
//!         password: SecretString::new(std::fs::read_to_string("/etc/vnfm/keystone.pw").unwrap()),
//!         user_domain: "Default".into(),
//!         project: "service".into(),
//!         project_domain: "Default".into(),
//!     },
//! );
//! let validator = KeystoneValidator::new(config)?;
//! let identity = validator.validate(user_token).await?;
//! let access = validator.access(&identity);
//! println!("{} in {:?}: write {}", identity.user_name, identity.project_name, access.write);
//! # Ok(())
//! # }
//! ```

mod cache;
mod config;
mod error;
mod identity;
#[cfg(feature = "testing")]
pub mod testing;
mod validator;

pub use config::{
    Access, DEFAULT_CACHE_CAPACITY, DEFAULT_REQUEST_TIMEOUT, DEFAULT_REVALIDATE_AFTER,
    KeystoneConfig, RolePolicy, ServiceCredentials,
};
pub use error::{KeystoneError, Step};
pub use identity::{Domain, KeystoneIdentity};
pub use validator::{IssuedToken, KeystoneValidator, login};
