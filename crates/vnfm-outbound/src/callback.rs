//! [`HttpCallbackSender`]: the HTTP implementation of the core's callback port.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, Method, Url};
use tracing::Instrument;
use vnfm_driver_api::{
    CallbackAnswer, CallbackError, CallbackMethod, CallbackRequest, CallbackSender,
};
use vnfm_oauth::ClientCredentials;

use crate::OutboundError;
use crate::auth::{Credentials, Exchange, TokenCache, client_builder, exchange};

/// Sends notifications and notification endpoint tests over HTTP, authenticating as each
/// subscription asks (HTTP Basic, or OAuth 2.0 client credentials with tokens cached per
/// token endpoint and client, fetched again on `401`). Redirects are not followed.
///
/// With [`HttpCallbackSender::with_issuer_tokens`], a subscription that gives no
/// authentication of its own and whose callback URI is under one of the given prefixes is
/// called with an access token of the server's own authorization server (the subscription's
/// own parameters always win).
pub struct HttpCallbackSender {
    http: Client,
    tokens: TokenCache,
    issuer: Option<IssuerDefault>,
}

/// The authorization server's tokens, and the callbacks they go to.
struct IssuerDefault {
    tokens: Arc<ClientCredentials>,
    prefixes: Vec<UriPrefix>,
}

/// A callback URI prefix: the same scheme, host and port, and a path under its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriPrefix {
    scheme: String,
    host: String,
    port: Option<u16>,
    path: String,
}

impl UriPrefix {
    /// The prefix `text` (`https://nfvo.example:9443/notify/`); `None` unless an http or
    /// https URL with a host, without user information, query or fragment.
    pub(crate) fn parse(text: &str) -> Option<UriPrefix> {
        let url = Url::parse(text.trim()).ok()?;
        if !matches!(url.scheme(), "http" | "https")
            || !url.username().is_empty()
            || url.password().is_some()
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return None;
        }
        Some(UriPrefix {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_owned(),
            port: url.port_or_known_default(),
            path: url.path().to_owned(),
        })
    }

    /// Whether `uri` is under this prefix: the same origin, and its path the prefix's path or
    /// below it (`/notify` covers `/notify` and `/notify/x`, not `/notifyx`).
    pub(crate) fn covers(&self, uri: &str) -> bool {
        let Ok(url) = Url::parse(uri) else {
            return false;
        };
        if url.scheme() != self.scheme
            || url.host_str() != Some(self.host.as_str())
            || url.port_or_known_default() != self.port
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return false;
        }
        let path = url.path();
        path == self.path
            || (path.starts_with(&self.path)
                && (self.path.ends_with('/') || path[self.path.len()..].starts_with('/')))
    }
}

impl std::fmt::Debug for HttpCallbackSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCallbackSender").finish_non_exhaustive()
    }
}

impl HttpCallbackSender {
    /// A sender whose connections are established within `connect_timeout`.
    pub fn new(connect_timeout: Duration) -> Result<HttpCallbackSender, OutboundError> {
        let http = client_builder(connect_timeout)
            .build()
            .map_err(OutboundError::Client)?;
        Ok(HttpCallbackSender {
            http,
            tokens: TokenCache::default(),
            issuer: None,
        })
    }

    /// Calls the callbacks under `prefixes` (`https://nfvo.example:9443/`, each an http or
    /// https URL: same scheme, host and port, path at or below the prefix's) with access
    /// tokens of `tokens` when their subscription gives no authentication of its own. A
    /// subscription's own `authentication` (HTTP Basic, its own OAuth 2.0 client
    /// credentials) always wins. Other callbacks get no token: a token sent to any callback
    /// URI a subscriber names would be a token given away.
    pub fn with_issuer_tokens(
        mut self,
        tokens: Arc<ClientCredentials>,
        prefixes: &[String],
    ) -> Result<HttpCallbackSender, OutboundError> {
        let prefixes = prefixes
            .iter()
            .map(|p| {
                UriPrefix::parse(p)
                    .ok_or_else(|| OutboundError::CallbackPrefix { prefix: p.clone() })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.issuer = Some(IssuerDefault { tokens, prefixes });
        Ok(self)
    }

    /// How a callback of a subscription with `authentication` at `uri` is authenticated: the
    /// subscription's own parameters, else the authorization server's tokens for a covered
    /// URI, else nothing.
    fn credentials(
        &self,
        authentication: Option<&vnfm_types::SubscriptionAuthentication>,
        uri: &str,
    ) -> Credentials {
        match Credentials::of_subscription(authentication) {
            Credentials::None => match &self.issuer {
                Some(d) if d.prefixes.iter().any(|p| p.covers(uri)) => {
                    Credentials::Issuer(d.tokens.clone())
                }
                _ => Credentials::None,
            },
            own => own,
        }
    }
}

/// The `notification.delivery` span of a notification POST (its subscriber receives the
/// span's `traceparent`); none for the endpoint test, or with tracing off. With the trace
/// context the notification was made in, the span is a child of that span and links to it
/// ([`vnfm_trace::continue_from`]): the delivery, sent later from the outbox, is part of the
/// operation's trace.
fn delivery_span(request: &CallbackRequest<'_>) -> tracing::Span {
    let Some(body) = request.body.filter(|_| vnfm_trace::is_enabled()) else {
        return tracing::Span::none();
    };
    let field = |name: &str| body.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    let span = tracing::info_span!(
        "notification.delivery",
        otel.kind = "client",
        subscription_id = field("subscriptionId"),
        notification_type = field("notificationType"),
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if let Some(made_in) = request.traceparent {
        vnfm_trace::continue_from(&span, made_in);
    }
    span
}

#[async_trait]
impl CallbackSender for HttpCallbackSender {
    async fn send(&self, request: CallbackRequest<'_>) -> Result<CallbackAnswer, CallbackError> {
        let credentials = self.credentials(request.authentication, request.uri);
        let method = match request.method {
            CallbackMethod::Get => Method::GET,
            CallbackMethod::Post => Method::POST,
        };
        let x = Exchange {
            method,
            url: request.uri,
            body: request.body,
            headers: &[],
            timeout: request.timeout,
            read_body: None,
        };
        let span = delivery_span(&request);
        // The token request and the request itself share the time limit.
        let sent = tokio::time::timeout(
            request.timeout,
            exchange(&self.http, &self.tokens, &credentials, &x),
        )
        .instrument(span.clone())
        .await;
        if let Ok(Ok(answer)) = &sent {
            vnfm_trace::record_status(&span, Ok(answer.status.as_u16()));
        }
        match sent {
            Ok(Ok(answer)) => Ok(CallbackAnswer {
                status: answer.status.as_u16(),
                status_text: answer.status.to_string(),
            }),
            Ok(Err(e)) => Err(CallbackError::new(e.to_string(), e)),
            Err(_) => Err(CallbackError::msg(format!(
                "no answer within {} ms",
                request.timeout.as_millis()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_covers_its_origin_and_the_paths_below_it_only() {
        let p = UriPrefix::parse("https://nfvo.example:9443/notify").unwrap();
        for uri in [
            "https://nfvo.example:9443/notify",
            "https://nfvo.example:9443/notify/lcm",
            "https://nfvo.example:9443/notify/lcm?x=1",
        ] {
            assert!(p.covers(uri), "{uri}");
        }
        for uri in [
            "https://nfvo.example:9443/notifyx",
            "https://nfvo.example:9443/other",
            "http://nfvo.example:9443/notify",
            "https://nfvo.example/notify",
            "https://nfvo.example.evil:9443/notify",
            "https://user@nfvo.example:9443/notify",
            "not a url",
        ] {
            assert!(!p.covers(uri), "{uri}");
        }
        let root = UriPrefix::parse("https://nfvo.example").unwrap();
        assert!(root.covers("https://nfvo.example:443/anything"));
        assert!(!root.covers("https://nfvo.example.org/anything"));
        for bad in [
            "ftp://nfvo.example/",
            "nfvo.example",
            "https://u:p@nfvo.example/",
            "https://nfvo.example/?q",
        ] {
            assert_eq!(UriPrefix::parse(bad), None, "{bad}");
        }
    }
}
