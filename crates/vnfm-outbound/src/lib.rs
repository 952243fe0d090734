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
/// Access tokens of the server's own authorization server by the client credentials grant
/// (`vnfm_oauth::ClientCredentials`, named apart from the REST server's own OAuth 2.0 clients).
pub use vnfm_oauth::ClientCredentials as IssuerTokens;

/// Access tokens of the server's own authorization server for its outgoing calls, and which
/// calls carry them (what `vnfm serve --nfvo-oauth-from-issuer` and
/// `--notify-oauth-from-issuer` configure).
#[derive(Debug, Clone)]
pub struct OutboundOAuth {
    /// Where the tokens come from: the client credentials grant at the issuer.
    pub tokens: std::sync::Arc<IssuerTokens>,
    /// Whether the remote NFVO (grants, package and VNFD fetches) is called with them,
    /// instead of the authentication kept with its connection
    /// ([`Sol003Nfvo::with_issuer_tokens`]).
    pub nfvo: bool,
    /// The callback URI prefixes of subscribers called with them when a subscription gives no
    /// authentication of its own ([`HttpCallbackSender::with_issuer_tokens`]); empty: none.
    pub callbacks: Vec<String>,
}
