//! The VNFM's outbound HTTP, behind the core's ports.
//!
//! The lifecycle core decides what leaves the VNFM and when; this crate does the talking:
//!
//! - [`HttpCallbackSender`] implements [`vnfm_driver_api::CallbackSender`]: notifications
//!   (`POST`) and notification endpoint tests (`GET`, expecting `204`) to subscribers' callback
//!   URIs, with HTTP Basic or OAuth 2.0 client credentials (tokens cached, fetched again on
//!   `401`), no redirects;
//! - [`Sol003Nfvo`] implements [`vnfm_driver_api::Nfvo`]: grants (`POST /grant/v1/grants`,
//!   synchronous or polled) and packages of a remote SOL003 NFVO, with retries and backoff on
//!   transient failures;
//! - [`HttpContentFetcher`] implements [`vnfm_driver_api::ContentFetcher`]: content the VNFM
//!   is pointed at (a package uploaded from a URI), streamed chunk by chunk, no redirects;
//! - [`OutboundError`]: what failed, without credentials or tokens.
//!
//! TLS is rustls with the ring provider only ([`install_crypto_provider`]).

mod auth;
mod callback;
mod content;
mod error;
pub mod nfvo;

pub use auth::install_crypto_provider;
pub use callback::HttpCallbackSender;
pub use content::HttpContentFetcher;
pub use error::OutboundError;
pub use nfvo::{DEFAULT_MAX_PACKAGE_BYTES, NfvoTimings, Sol003Nfvo};
