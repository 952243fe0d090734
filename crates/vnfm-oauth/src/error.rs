//! [`OAuthError`]: why a token was not accepted. A [`Refusal`] is the token's fault (answer
//! `401`, `invalid_token`); everything else means the authorization server could not be asked
//! or did not answer usably (answer `503`: the token may well be valid).
//!
//! No variant carries a token, a claim value or a client secret: refusals are fixed texts,
//! and the causes of unavailability name the step, the URL and the HTTP status.

use std::fmt;

/// Why a token is refused. The texts are fixed: nothing of the token appears in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Empty, or longer than [`crate::OAuthConfig::max_token_bytes`] (refused before parsing).
    TooLarge,
    /// Not a token this server can read (not a compact JWS, bad base64 or JSON, a JWE).
    Malformed,
    /// The JWS algorithm is not an asymmetric one this server accepts (`none`, `HS256`, ...),
    /// or does not fit the key.
    Algorithm,
    /// No key of the issuer's key set has the token's `kid` (after refreshing the set).
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `iss` is not the configured issuer.
    Issuer,
    /// `aud` names none of the configured audiences.
    Audience,
    /// `exp` has passed (beyond the leeway).
    Expired,
    /// `nbf` has not come yet (beyond the leeway).
    NotYetValid,
    /// A claim the token must have is missing or of the wrong type (`exp`, `iss`, `aud`).
    MissingClaim,
    /// The authorization server says the token is not active (RFC 7662): unknown, expired,
    /// revoked.
    Inactive,
    /// The token is not a JWT and no introspection endpoint is configured.
    NotVerifiable,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::TooLarge => "the token is empty or too large",
            Refusal::Malformed => "the token is malformed",
            Refusal::Algorithm => "the token's signature algorithm is not accepted",
            Refusal::UnknownKey => "the token is signed with a key the issuer does not publish",
            Refusal::Signature => "the token's signature is invalid",
            Refusal::Issuer => "the token is from another issuer",
            Refusal::Audience => "the token is not meant for this server (audience)",
            Refusal::Expired => "the token has expired",
            Refusal::NotYetValid => "the token is not valid yet",
            Refusal::MissingClaim => "the token lacks a required claim (exp, iss or aud)",
            Refusal::Inactive => "the authorization server says the token is not active",
            Refusal::NotVerifiable => {
                "the token is not a JWT, and this server has no introspection endpoint to ask"
            }
        })
    }
}

/// A request to the authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading its metadata (`/.well-known/openid-configuration` or
    /// `/.well-known/oauth-authorization-server`).
    Metadata,
    /// Reading its key set (`jwks_uri`).
    Keys,
    /// Introspecting a token (RFC 7662).
    Introspection,
    /// Getting an access token for this server's own calls (the client credentials grant at
    /// the token endpoint, [`crate::ClientCredentials`]).
    Token,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Metadata => "reading the authorization server's metadata",
            Step::Keys => "reading the authorization server's keys (JWKS)",
            Step::Introspection => "introspecting a token",
            Step::Token => "getting an access token (client credentials)",
        })
    }
}

/// Why a token could not be verified.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The token is at fault (answer `401` with `error="invalid_token"`).
    #[error("{0}")]
    Invalid(Refusal),
    /// The configuration cannot work (a URL that is not one, a key file that is not a key).
    #[error("{0}")]
    Config(String),
    /// The HTTP client could not be built.
    #[error("building the HTTP client for the authorization server failed")]
    Client(#[source] reqwest::Error),
    /// The authorization server could not be reached or did not answer in time.
    #[error("the authorization server is unreachable while {step} ({url})")]
    Unreachable {
        /// The request that failed.
        step: Step,
        /// Where it went.
        url: String,
        /// The connection or timeout error.
        #[source]
        source: reqwest::Error,
    },
    /// The authorization server answered with an unexpected status (`401`/`403` to
    /// introspection: it refused this server's client credentials; `5xx`: it failed).
    #[error("the authorization server answered HTTP {status} while {step} ({url})")]
    Status {
        /// The request that failed.
        step: Step,
        /// Where it went.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The answer is not what the step expects (not JSON, no `keys`, no `active`, a
    /// metadata `issuer` other than the configured one).
    #[error("the authorization server's answer to {step} ({url}) is unusable: {reason}")]
    Answer {
        /// The request whose answer was unusable.
        step: Step,
        /// Where it went.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The authorization server did not answer this step a moment ago (less than
    /// [`crate::OAuthConfig::jwks_min_refresh`]): it is not asked again yet.
    #[error("the authorization server did not answer {0} a moment ago; it is not asked again yet")]
    Backoff(Step),
    /// The metadata names no endpoint for what is needed (no `jwks_uri`, no
    /// `introspection_endpoint`), and none is configured.
    #[error("the authorization server's metadata has no {0}, and none is configured")]
    NoEndpoint(&'static str),
}

impl OAuthError {
    /// Whether the token is at fault (`401`); every other error means the authorization
    /// server could not tell (`503`).
    pub fn is_invalid_token(&self) -> bool {
        matches!(self, OAuthError::Invalid(_))
    }

    /// The refusal, when the token is at fault.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            OAuthError::Invalid(r) => Some(*r),
            _ => None,
        }
    }
}

impl From<Refusal> for OAuthError {
    fn from(r: Refusal) -> Self {
        OAuthError::Invalid(r)
    }
}
