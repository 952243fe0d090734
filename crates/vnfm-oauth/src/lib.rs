//! An external OAuth 2.0 authorization server (Keycloak, Ory Hydra, an enterprise IdP) as an
//! identity source of the REST server: the server is a resource server of that authorization
//! server (ETSI GS NFV-SOL 013 clause 8), and the caller's roles and project come from its
//! token.
//!
//! An [`OAuthVerifier`] is configured with the issuer and the audiences this server answers
//! to ([`OAuthConfig`]). [`OAuthVerifier::verify`] checks a bearer token and returns a
//! [`TokenIdentity`] (subject, client, project, roles):
//!
//! - **JWT access tokens are verified locally** against the issuer's key set, whose URL comes
//!   from the issuer's metadata (`<issuer>/.well-known/openid-configuration`, else RFC 8414's
//!   `oauth-authorization-server`). The set is kept, read again after
//!   [`OAuthConfig::jwks_refresh`] and, at most once per [`OAuthConfig::jwks_min_refresh`],
//!   when a token names a key it does not hold: the issuer rotates its keys without a restart
//!   here. RS256/384/512, PS256/384/512, ES256/384 and EdDSA are accepted; `alg: none`, HMAC
//!   algorithms (the key-confusion attack: a MAC keyed with the public key) and keys used for
//!   another algorithm than their type are refused. `iss` must be the issuer, `aud` name an
//!   audience, `exp` and `nbf` hold within [`OAuthConfig::leeway`]. A token longer than
//!   [`OAuthConfig::max_token_bytes`] is refused before anything of it is parsed.
//! - **Opaque tokens are introspected** (RFC 7662), this server authenticating as its own
//!   client by `client_secret_basic`, `client_secret_post`, `client_secret_jwt`,
//!   `private_key_jwt` or `tls_client_auth` (a client certificate, RFC 8705)
//!   ([`ClientAuth`]). Answers are cached by the SHA-256 of the token
//!   (never the token), at most [`IntrospectionConfig::cache_capacity`] of them, for
//!   [`IntrospectionConfig::cache_ttl`] and never past the token's `exp`; an inactive token is
//!   refused at once. [`TokenCheck::Introspection`] introspects JWTs too (revocation shows as
//!   soon as the cache lets go).
//! - [`OAuthError::Invalid`] means the token is at fault (answer `401`); every other error
//!   means the authorization server could not tell (answer `503`). Keys already held keep
//!   verifying JWTs while the server is away.
//! - A token bound to a client certificate (RFC 8705, `cnf.x5t#S256`) says so in
//!   [`TokenIdentity::certificate_thumbprint`]; the resource server, which sees the TLS
//!   connection, checks it.
//! - Tokens, claim values and client secrets never appear in errors, logs or `Debug` output.
//!
//! The same client, with the same authentication methods, gets access tokens for this
//! server's own calls to services of the same authorization server (an NFVO, notification
//! subscribers): [`ClientCredentials`] (the client credentials grant, the token endpoint from
//! the metadata, tokens kept until shortly before they expire).
//!
//! ```no_run
//! use vnfm_oauth::{OAuthConfig, OAuthVerifier};
//!
//! # async fn example(bearer: &str) -> Result<(), vnfm_oauth::OAuthError> {
//! let mut config = OAuthConfig::new("https://keycloak.example/realms/nfv", "vnfm");
//! config.claims.project_claim = Some("project_id".into());
//! let verifier = OAuthVerifier::new(config)?;
//! let identity = verifier.verify(bearer).await?;
//! let access = verifier.access(&identity);
//! println!("{} in {:?}: write {}", identity.name, identity.project_id, access.write);
//! # Ok(())
//! # }
//! ```

mod client_auth;
mod client_credentials;
mod config;
mod error;
mod http;
mod identity;
mod introspection;
mod jwt;
#[cfg(feature = "testing")]
pub mod testing;
mod verifier;

pub use client_credentials::{ClientCredentials, ClientCredentialsConfig};
pub use config::{
    Access, ClaimMapping, ClientAuth, DEFAULT_CACHE_CAPACITY, DEFAULT_INTROSPECTION_CACHE_TTL,
    DEFAULT_JWKS_MIN_REFRESH, DEFAULT_JWKS_REFRESH, DEFAULT_LEEWAY, DEFAULT_MAX_TOKEN_BYTES,
    DEFAULT_REQUEST_TIMEOUT, IntrospectionConfig, OAuthConfig, RoleMapping, Secret, TokenCheck,
};
pub use error::{OAuthError, Refusal, Step};
pub use identity::{TokenIdentity, Verified};
pub use verifier::OAuthVerifier;
