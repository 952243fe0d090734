//! Delivery of lifecycle change notifications from the store's outbox to the subscribers'
//! callback URIs.
//!
//! Notifications are written to the outbox in the same transaction as the change they report
//! (see [`crate::subscriptions::SubscriptionRouter`]); the [`Deliverer`] is the background
//! loop that claims due rows, POSTs them, and records the outcome. Because all state lives in
//! the store, delivery is at-least-once across restarts and several replicas: a row is claimed
//! by one deliverer at a time, and a deliverer that dies loses its claims when they expire.
//!
//! - [`Deliverer`] / [`DelivererConfig`]: the loop, its concurrency bound, retry schedule
//!   (exponential backoff with jitter), give-up rules and graceful shutdown;
//! - authentication towards callbacks (HTTP Basic, OAuth 2.0 client credentials with a token
//!   cache, refreshed on 401) is internal; credentials and tokens are never logged.

pub(crate) mod auth;
mod deliver;

pub use auth::install_crypto_provider;
pub use deliver::{Deliverer, DelivererConfig, backoff_delay};
