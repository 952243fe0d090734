//! [`KeystoneError`]: every way getting the service token or validating a token can fail.
//!
//! No variant carries a token, a password or an application credential secret: the texts
//! name the step, the HTTP status and Keystone's own error message (which never quotes a
//! credential).

use std::fmt;

/// The request to Keystone that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `POST /v3/auth/tokens` with the service credentials.
    ServiceToken,
    /// `GET /v3/auth/tokens` for a caller's token.
    Validate,
    /// `POST /v3/auth/tokens` with a user's credentials ([`crate::login`]).
    Login,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::ServiceToken => "getting the service token",
            Step::Validate => "validating a token",
            Step::Login => "logging in",
        })
    }
}

/// Why a token could not be validated.
#[derive(Debug, thiserror::Error)]
pub enum KeystoneError {
    /// The configured Keystone URL is not an absolute `http(s)` URL.
    #[error("the Keystone URL `{url}` is not usable: {reason}")]
    InvalidUrl {
        /// The URL as configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("building the HTTP client for Keystone failed")]
    Client(#[source] reqwest::Error),
    /// Keystone could not be reached, or did not answer in time.
    #[error("Keystone is unreachable while {step}")]
    Unreachable {
        /// The request that failed.
        step: Step,
        /// The connection or timeout error.
        #[source]
        source: reqwest::Error,
    },
    /// Keystone refused the service credentials (`401`): the configured user, password or
    /// application credential is wrong, disabled or expired.
    #[error("Keystone refused the service credentials (HTTP {status}): {message}")]
    ServiceCredentials {
        /// The HTTP status.
        status: u16,
        /// Keystone's error message.
        message: String,
    },
    /// Keystone refused a user's credentials at login (`401`): the user name, password,
    /// domain, project or application credential is wrong, disabled or expired.
    #[error("Keystone refused the credentials (HTTP {status}): {message}")]
    Credentials {
        /// The HTTP status.
        status: u16,
        /// Keystone's error message.
        message: String,
    },
    /// The token is unknown, malformed, expired or revoked (Keystone answered `404`, or `401`
    /// with a fresh service token).
    #[error("the token is invalid, expired or revoked")]
    InvalidToken,
    /// Keystone answered with a status the step does not expect (`403`: the service user may
    /// not validate other users' tokens; `5xx`: Keystone failed).
    #[error("Keystone answered HTTP {status} while {step}: {message}")]
    Status {
        /// The request that failed.
        step: Step,
        /// The HTTP status.
        status: u16,
        /// Keystone's error message.
        message: String,
    },
    /// Keystone's answer is not the token document the step expects.
    #[error("Keystone's answer to {step} is not a token document")]
    Decode {
        /// The request whose answer was unreadable.
        step: Step,
        /// The body or JSON error.
        #[source]
        source: reqwest::Error,
    },
    /// Keystone issued a service token without the `X-Subject-Token` header.
    #[error("Keystone's answer to {0} has no usable X-Subject-Token header")]
    MissingSubjectToken(Step),
    /// A token document's `expires_at` is not an RFC 3339 instant.
    #[error("Keystone's answer to {step} has an unreadable expires_at `{value}`")]
    Expiry {
        /// The request whose answer had it.
        step: Step,
        /// The value as sent.
        value: String,
        /// The parse error.
        #[source]
        source: jiff::Error,
    },
}

impl KeystoneError {
    /// Whether the caller's token is at fault (answer `401`); every other error means that
    /// Keystone could not tell (answer `503`, never `401`).
    pub fn is_invalid_token(&self) -> bool {
        matches!(self, KeystoneError::InvalidToken)
    }

    /// Whether Keystone could not be asked or did not give a usable answer: the token may be
    /// valid, the server cannot tell now.
    pub fn is_unavailable(&self) -> bool {
        !self.is_invalid_token()
    }
}

/// Keystone's error message from an error body (`{"error": {"message": ...}}`), cut to a
/// readable length; the status text when the body has none.
pub(crate) fn keystone_message(body: &str, status: reqwest::StatusCode) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned));
    let message = from_json.unwrap_or_else(|| {
        status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_owned()
    });
    cut(&message, 300)
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_invalid_token_is_the_callers_fault() {
        assert!(KeystoneError::InvalidToken.is_invalid_token());
        let e = KeystoneError::Status {
            step: Step::Validate,
            status: 403,
            message: "forbidden".into(),
        };
        assert!(e.is_unavailable());
        assert_eq!(
            e.to_string(),
            "Keystone answered HTTP 403 while validating a token: forbidden"
        );
    }

    #[test]
    fn messages_come_from_keystone_error_bodies_cut_to_length() {
        let body = r#"{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}"#;
        assert_eq!(
            keystone_message(body, reqwest::StatusCode::UNAUTHORIZED),
            "The request you have made requires authentication."
        );
        assert_eq!(
            keystone_message("<html>", reqwest::StatusCode::BAD_GATEWAY),
            "Bad Gateway"
        );
        let long = format!(r#"{{"error": {{"message": "{}"}}}}"#, "é".repeat(400));
        let m = keystone_message(&long, reqwest::StatusCode::BAD_REQUEST);
        assert!(m.len() <= 303 && m.ends_with("..."), "{m}");
    }
}
