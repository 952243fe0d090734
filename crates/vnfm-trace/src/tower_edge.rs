//! The trace context on a tower HTTP client stack (kube-rs's `ClientBuilder::with_layer`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tracing::Instrument;

use crate::{VimType, infra_span, inject, is_enabled, record_status};

/// A layer that runs each request in its `infra.request` span and adds the span's
/// `traceparent` to it.
#[derive(Debug, Clone)]
pub struct InfraLayer {
    vim: VimType,
    server: Arc<str>,
}

impl InfraLayer {
    /// Requests to `vim` at `server` (the host, for requests whose URI has none yet: kube-rs
    /// adds its base URI inside the stack).
    pub fn new(vim: VimType, server: &str) -> InfraLayer {
        InfraLayer {
            vim,
            server: server.into(),
        }
    }
}

impl<S> tower_layer::Layer<S> for InfraLayer {
    type Service = InfraService<S>;

    fn layer(&self, inner: S) -> InfraService<S> {
        InfraService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`InfraLayer`] makes.
#[derive(Debug, Clone)]
pub struct InfraService<S> {
    inner: S,
    layer: InfraLayer,
}

type Boxed<R, E> = Pin<Box<dyn Future<Output = Result<R, E>> + Send>>;

impl<S, B, R> tower_service::Service<http::Request<B>> for InfraService<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Boxed<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if !is_enabled() {
            return Box::pin(self.inner.call(request));
        }
        let uri = request.uri();
        let host = uri.host().unwrap_or(&self.layer.server);
        let span = infra_span(request.method(), host, uri.path(), self.layer.vim);
        inject(&span, request.headers_mut());
        let answer = {
            let _inside = span.enter();
            self.inner.call(request)
        };
        Box::pin(async move {
            let answer = answer.instrument(span.clone()).await;
            record_status(
                &span,
                answer.as_ref().map(|r| r.status().as_u16()).map_err(|_| ()),
            );
            answer
        })
    }
}
