//! What the server does around each request of a connection, below the router: it marks the
//! connection busy from the request's head until its answer has gone out in full (a busy
//! connection is never closed to make room unless its request's body has been awaited for a
//! second; an idle kept-alive one may be: `crate::admission`), gives the request a deadline
//! to arrive in full, and closes the connection after answering a request without
//! credentials when the server is crowded.
//!
//! - **Deadline:** a request's body must have arrived in full within
//!   [`ServerLimits::request_timeout`] of its head (a package upload,
//!   `PUT .../package_content`, within [`ServerLimits::upload_timeout`]); the head itself has
//!   [`ServerLimits::header_read_timeout`] (the first one [`ServerLimits::first_request_timeout`]).
//!   A request past its deadline is answered `408 Request Timeout` (ProblemDetails), whatever
//!   its handler made of the cut body, and its connection closed. This bounds a body sent a
//!   byte at a time, which [`ServerLimits::body_read_timeout`] (a pause between two chunks)
//!   does not.
//! - **Crowded server:** the answer to a request without `Authorization` or `X-Auth-Token`
//!   (on a connection without a client certificate, which may identify the caller) closes its
//!   connection (`Connection: close`) once half the connection slots are taken.
//!
//! [`ServerLimits::request_timeout`]: crate::limits::ServerLimits::request_timeout
//! [`ServerLimits::upload_timeout`]: crate::limits::ServerLimits::upload_timeout
//! [`ServerLimits::header_read_timeout`]: crate::limits::ServerLimits::header_read_timeout
//! [`ServerLimits::first_request_timeout`]: crate::limits::ServerLimits::first_request_timeout
//! [`ServerLimits::body_read_timeout`]: crate::limits::ServerLimits::body_read_timeout

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, Request, Response, header};
use axum::response::IntoResponse;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};

use crate::admission::{Busy, Tracked};
use crate::error::ApiError;
use crate::limits::ServerLimits;
use crate::mtls::ClientCertificate;

/// The deadlines of the requests of a connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    /// Of every request but package uploads.
    request: Duration,
    /// Of a package upload.
    upload: Duration,
}

impl Deadlines {
    /// The deadlines `limits` set.
    pub(crate) fn of(limits: &ServerLimits) -> Deadlines {
        Deadlines {
            request: limits.request_timeout,
            upload: limits.upload_timeout,
        }
    }

    /// The deadline of a request with `method` on `path`.
    fn of_request(&self, method: &Method, path: &str) -> Duration {
        if method == Method::PUT && path.ends_with("/package_content") {
            self.upload
        } else {
            self.request
        }
    }
}

/// The service of one connection: the router, with the connection's bookkeeping around each
/// request (see the [module](self) documentation).
#[derive(Clone)]
pub(crate) struct ConnectionService {
    app: axum::Router,
    tracked: Arc<Tracked>,
    peer: SocketAddr,
    /// The client certificate of a mutual TLS connection.
    certificate: Option<Arc<ClientCertificate>>,
    deadlines: Deadlines,
}

impl ConnectionService {
    /// `app` serving the connection `tracked` from `peer`, which presented `certificate`.
    pub(crate) fn new(
        app: axum::Router,
        tracked: Arc<Tracked>,
        peer: SocketAddr,
        certificate: Option<Arc<ClientCertificate>>,
        deadlines: Deadlines,
    ) -> ConnectionService {
        ConnectionService {
            app,
            tracked,
            peer,
            certificate,
            deadlines,
        }
    }
}

impl tower::Service<Request<Incoming>> for ConnectionService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let busy = self.tracked.begin();
        // A verified client certificate may identify the caller (mutual TLS).
        let anonymous = self.certificate.is_none()
            && !request.headers().contains_key(header::AUTHORIZATION)
            && !request.headers().contains_key("x-auth-token");
        let deadline = self
            .deadlines
            .of_request(request.method(), request.uri().path());
        let expired = Arc::new(AtomicBool::new(false));
        let (mut parts, body) = request.into_parts();
        parts
            .extensions
            .insert(axum::extract::ConnectInfo(self.peer));
        if let Some(certificate) = &self.certificate {
            parts.extensions.insert(certificate.clone());
        }
        let body = Body::new(Deadline::new(
            body,
            deadline,
            expired.clone(),
            self.tracked.clone(),
        ));
        let answer = tower::ServiceExt::oneshot(self.app.clone(), Request::from_parts(parts, body));
        let tracked = self.tracked.clone();
        let peer = self.peer;
        Box::pin(async move {
            let Ok(mut response) = answer.await;
            let mut close = anonymous && tracked.admission().crowded();
            if expired.load(Ordering::Relaxed) {
                tracing::debug!(%peer, seconds = deadline.as_secs_f64(), "request not received in full within its deadline: answered 408 and closed");
                response = ApiError::RequestTimeout(format!(
                    "the request was not received in full within {} s of its head; send its body at once (the server's --request-timeout, --upload-timeout for package content)",
                    deadline.as_secs_f64()
                ))
                .into_response();
                close = true;
            }
            if close {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(response.map(|body| Body::new(Answer { body, _busy: busy })))
        })
    }
}

/// A request body that fails once `deadline` has passed before its end (and records it in
/// `expired`), and tells its connection when it is awaited (no byte there to read) and when
/// it arrives (`crate::admission`: a body awaited long enough makes its connection closable
/// for room).
struct Deadline {
    body: Incoming,
    timer: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
    ended: bool,
    tracked: Arc<Tracked>,
    /// Whether the connection was told the body is awaited: it is told only of changes, not
    /// of every frame.
    awaited: bool,
}

impl Deadline {
    fn new(
        body: Incoming,
        deadline: Duration,
        expired: Arc<AtomicBool>,
        tracked: Arc<Tracked>,
    ) -> Deadline {
        Deadline {
            body,
            timer: Box::pin(tokio::time::sleep(deadline)),
            expired,
            ended: false,
            tracked,
            awaited: false,
        }
    }

    /// Tells the connection the body is awaited (`true`) or arriving, when that changed.
    fn awaited(&mut self, awaited: bool) {
        if self.awaited != awaited {
            self.awaited = awaited;
            if awaited {
                self.tracked.body_awaited();
            } else {
                self.tracked.body_arrived();
            }
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Ready(None) => {
                self.ended = true;
                self.awaited(false);
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                self.awaited(false);
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.ended = true;
                    self.awaited(false);
                    self.expired.store(true, Ordering::Relaxed);
                    Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the request was not received in full within its deadline",
                    )
                    .into())))
                }
                Poll::Pending => {
                    self.awaited(true);
                    Poll::Pending
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// An answer's body, holding its connection busy until it has gone out in full (or the
/// connection ended).
struct Answer {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_uploads_have_their_own_deadline() {
        let d = Deadlines {
            request: Duration::from_secs(60),
            upload: Duration::from_secs(3600),
        };
        let put = Method::PUT;
        assert_eq!(
            d.of_request(&put, "/vnfpkgm/v2/vnf_packages/p/package_content"),
            d.upload
        );
        assert_eq!(
            d.of_request(&put, "/vnfpkgm/v1/vnf_packages/p/package_content"),
            d.upload
        );
        assert_eq!(
            d.of_request(&Method::POST, "/vnfpkgm/v2/vnf_packages/p/package_content"),
            d.request
        );
        assert_eq!(d.of_request(&Method::POST, "/oauth2/token"), d.request);
    }
}
