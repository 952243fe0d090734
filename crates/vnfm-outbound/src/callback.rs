//! [`HttpCallbackSender`]: the HTTP implementation of the core's callback port.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, Method};
use tracing::Instrument;
use vnfm_driver_api::{
    CallbackAnswer, CallbackError, CallbackMethod, CallbackRequest, CallbackSender,
};

use crate::OutboundError;
use crate::auth::{Credentials, Exchange, TokenCache, client_builder, exchange};

/// Sends notifications and notification endpoint tests over HTTP, authenticating as each
/// subscription asks (HTTP Basic, or OAuth 2.0 client credentials with tokens cached per
/// token endpoint and client, fetched again on `401`). Redirects are not followed.
pub struct HttpCallbackSender {
    http: Client,
    tokens: TokenCache,
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
        })
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
        let credentials = Credentials::of_subscription(request.authentication);
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
