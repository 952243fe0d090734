//! The callback port: how the core reaches the HTTP endpoints of its subscribers.
//!
//! The core decides *what* goes out and *when* (the outbox, retries, the notification
//! endpoint test of a new subscription); a [`CallbackSender`] does the sending: it speaks HTTP,
//! authenticates as the subscription asks (HTTP Basic, OAuth 2.0 client credentials with a
//! token cache) and answers with the status code. The HTTP implementation lives outside the
//! core (`vnfm-outbound`); tests and embedders can plug in their own.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use vnfm_types::SubscriptionAuthentication;

/// The HTTP method of a [`CallbackRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackMethod {
    /// `GET`: the notification endpoint test (SOL003 expects `204 No Content`).
    Get,
    /// `POST`: a notification.
    Post,
}

/// One request to a subscriber's callback URI.
#[derive(Clone, Copy)]
pub struct CallbackRequest<'a> {
    /// The method.
    pub method: CallbackMethod,
    /// The callback URI of the subscription.
    pub uri: &'a str,
    /// The JSON body (`None` for the endpoint test).
    pub body: Option<&'a serde_json::Value>,
    /// How the subscription asked to be authenticated to (opened credentials).
    pub authentication: Option<&'a SubscriptionAuthentication>,
    /// Time limit of the whole exchange (a token request included).
    pub timeout: Duration,
    /// The W3C `traceparent` of the span the notification was made in: its delivery
    /// continues that trace (`None`: in the trace of the caller's span, if any).
    pub traceparent: Option<&'a str>,
}

impl fmt::Debug for CallbackRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The body and the credentials stay out: both may carry secrets.
        f.debug_struct("CallbackRequest")
            .field("method", &self.method)
            .field("uri", &self.uri)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a callback request got no HTTP answer (a refused connection, a timeout, a token
/// endpoint that failed). An answer with an error status is not a `CallbackError`.
///
/// The message is built from URLs and status codes only, never from credentials or tokens.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct CallbackError {
    /// What failed.
    pub message: String,
    /// The underlying error, when there is one.
    #[source]
    pub source: Option<Arc<dyn StdError + Send + Sync>>,
}

impl CallbackError {
    /// An error saying `message`, caused by `source`.
    pub fn new(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> CallbackError {
        CallbackError {
            message: message.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// An error saying `message`, with no underlying error.
    pub fn msg(message: impl Into<String>) -> CallbackError {
        CallbackError {
            message: message.into(),
            source: None,
        }
    }
}

/// The answer to a [`CallbackRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackAnswer {
    /// The HTTP status code.
    pub status: u16,
    /// The status as people read it: the code and its reason phrase (`404 Not Found`).
    pub status_text: String,
}

impl CallbackAnswer {
    /// Whether the status is a success (2xx).
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Whether the status is `204 No Content` (what a notification endpoint answers to the
    /// test `GET`).
    pub fn is_no_content(&self) -> bool {
        self.status == 204
    }
}

/// Sends requests to subscribers' callback URIs.
#[async_trait]
pub trait CallbackSender: Send + Sync {
    /// Sends `request` and returns the answer's status.
    async fn send(&self, request: CallbackRequest<'_>) -> Result<CallbackAnswer, CallbackError>;
}

/// A [`CallbackSender`] that sends nothing and answers every request with a fixed status
/// (for embedders without subscribers, and tests that only look at the outbox).
#[derive(Debug, Clone, Copy)]
pub struct FixedAnswer(pub u16);

#[async_trait]
impl CallbackSender for FixedAnswer {
    async fn send(&self, _request: CallbackRequest<'_>) -> Result<CallbackAnswer, CallbackError> {
        Ok(CallbackAnswer {
            status: self.0,
            status_text: self.0.to_string(),
        })
    }
}
