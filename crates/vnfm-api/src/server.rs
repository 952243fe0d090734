//! Running the API: binding, TLS (rustls with the ring provider), TCP_NODELAY, which
//! connections are taken (`crate::admission`), ProblemDetails for request heads hyper refuses
//! (`crate::parse_errors`), notification delivery, and graceful shutdown.
//!
//! On `SIGINT`/`SIGTERM` the server stops accepting connections, answers `/readyz` with 503
//! and, at the same time, asks the lifecycle core to stop: no further step starts, each
//! running occurrence stops at the end of its step in progress and its lease is released, so
//! another replica (or the next start) continues it at once, however long the server's
//! clients take. Requests in flight finish (one that would start an operation is answered 503:
//! another replica takes it), for up to the shutdown timeout, after which the connections
//! still open are closed. The notification deliverer stops last.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::admission::Admission;
use crate::connection::{ConnectionService, Deadlines};
use crate::limits::ServerLimits;
use crate::mtls::{ClientCertMode, ClientCertificate};
use crate::parse_errors::Answering;
use crate::state::{AppState, StateError, StateOptions};

/// How `vnfm serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on (default `127.0.0.1:9890`).
    pub listen: SocketAddr,
    /// TLS certificate chain (PEM); TLS is on when both this and `tls_key` are given.
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: CA certificates (PEM files) whose client certificates are accepted.
    pub tls_client_ca: Vec<PathBuf>,
    /// Mutual TLS: whether clients must present a certificate from `tls_client_ca`; `None`
    /// asks for none (then `tls_client_ca` must be empty).
    pub tls_client_auth: Option<ClientCertMode>,
    /// How long graceful shutdown waits for running steps.
    pub shutdown_timeout: Duration,
    /// The API's own options.
    pub state: StateOptions,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Assembling the services failed.
    #[error("assembling the services failed: {0}")]
    Assemble(#[source] Box<vnfm::lcm::EmbedError>),
    /// Setting up the API failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The TLS certificate or key could not be loaded.
    #[error("TLS: {0}")]
    Tls(String),
    /// Serving failed.
    #[error("serving failed: {0}")]
    Serve(io::Error),
}

/// What a started server reports (printed by `vnfm serve`).
#[derive(Debug, Clone)]
pub struct Started {
    /// The bound address.
    pub addr: SocketAddr,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The bootstrap credentials file.
    pub credentials_file: PathBuf,
    /// The bootstrap client id.
    pub client_id: String,
    /// Whether HTTP Basic is accepted.
    pub basic_auth: bool,
}

/// The TLS acceptor of `options`: its certificate and key, and the client certificates it asks
/// for (mutual TLS).
fn tls_acceptor(
    cert: &PathBuf,
    key: &PathBuf,
    options: &ServeOptions,
) -> Result<TlsAcceptor, ServeError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| ServeError::Tls(format!("{}: {e}", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| ServeError::Tls(format!("{}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(ServeError::Tls(format!(
            "{}: no certificate found",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| ServeError::Tls(format!("{}: {e}", key.display())))?;
    let builder = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| ServeError::Tls(e.to_string()))?;
    let builder = match options.tls_client_auth {
        None if options.tls_client_ca.is_empty() => builder.with_no_client_auth(),
        None => {
            return Err(ServeError::Tls(
                "--tls-client-ca needs --tls-client-auth required or optional".into(),
            ));
        }
        Some(mode) => {
            let mut cas = Vec::new();
            for path in &options.tls_client_ca {
                let pem = std::fs::read(path)
                    .map_err(|e| ServeError::Tls(format!("{}: {e}", path.display())))?;
                cas.push((path.display().to_string(), pem));
            }
            let verifier = crate::mtls::client_verifier(&cas, mode).map_err(ServeError::Tls)?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| ServeError::Tls(e.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// What a connection tells about its client beyond its address: the certificate it presented
/// in the TLS handshake (mutual TLS), which then goes with each of its requests as a request
/// extension (`Arc<ClientCertificate>`). Connections without TLS have none.
pub trait PeerCertificate {
    /// The client's verified certificate, if it presented one.
    fn client_certificate(&self) -> Option<Arc<ClientCertificate>> {
        None
    }
}

impl PeerCertificate for TcpStream {}

/// A TLS connection and the certificate its client presented, read once after the handshake.
pub struct TlsConnection {
    stream: TlsStream<TcpStream>,
    certificate: Option<Arc<ClientCertificate>>,
}

impl TlsConnection {
    fn new(stream: TlsStream<TcpStream>) -> TlsConnection {
        let certificate = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(<[_]>::first)
            .map(|leaf| Arc::new(ClientCertificate::from_der(leaf)));
        TlsConnection {
            stream,
            certificate,
        }
    }
}

impl PeerCertificate for TlsConnection {
    fn client_certificate(&self) -> Option<Arc<ClientCertificate>> {
        self.certificate.clone()
    }
}

impl tokio::io::AsyncRead for TlsConnection {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsConnection {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// A listener that completes TLS handshakes in their own tasks (a slow client cannot hold
/// up others; at most `max_connections_per_peer` handshakes of one address at once, each within
/// the first-request timeout) and hands over finished connections.
struct TlsListener {
    ready: mpsc::Receiver<(TlsConnection, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    fn start(
        tcp: TcpListener,
        acceptor: TlsAcceptor,
        limits: &ServerLimits,
    ) -> io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let handshakes = Admission::new(limits.max_connections_per_peer, 0);
        let timeout = limits.first_request_timeout;
        tokio::spawn(async move {
            loop {
                let Ok((stream, peer)) = tcp.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Some(counted) = handshakes.admit(peer.ip()) else {
                    tracing::debug!(%peer, "too many TLS handshakes from one address: closed");
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let handed = tx.clone();
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(timeout, acceptor.accept(stream)).await;
                    drop(counted);
                    match handshake {
                        Ok(Ok(tls)) => {
                            let _ = handed.send((TlsConnection::new(tls), peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            if let Some(conn) = self.ready.recv().await {
                return conn;
            }
            // The acceptor task ended; nothing more will come.
            std::future::pending::<()>().await;
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// A slot for a new connection from `peer` while every one is taken: closes the oldest
/// connection without a request for it, else the idlest kept-alive one, else one whose
/// request body has been awaited long enough, and waits for the slot that frees; while none
/// may be closed, waits until one may. `None` once the server stops taking connections.
async fn room(
    slots: &Arc<tokio::sync::Semaphore>,
    admission: &Admission,
    peer: SocketAddr,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    loop {
        let evicted = admission.evict_one();
        if evicted {
            tracing::debug!(%peer, "every connection slot taken: an idle connection closed to make room");
        }
        tokio::select! {
            slot = slots.clone().acquire_owned() => return slot.ok(),
            () = admission.became_closable(), if !evicted => {}
            // A request body awaited long enough becomes closable without a signal.
            () = tokio::time::sleep(crate::admission::STALLED_BODY / 4), if !evicted => {}
        }
    }
}

/// Serves `app` on `listener` over HTTP/1.1 until `shutdown` completes; then accepts no more
/// connections, closes idle ones and waits for the requests in flight.
///
/// Header names go out in their canonical capitalisation (`Location`, `Content-Type`, `Link`).
/// Field names are case-insensitive (RFC 9110 clause 5.1), but NFVO clients and the ETSI
/// conformance suites look some up case-sensitively, and writing them this way costs nothing.
pub async fn serve_http1<L>(
    listener: L,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    L: Listener<Addr = SocketAddr>,
    L::Io: PeerCertificate,
{
    serve_http1_limited(listener, app, shutdown, &ServerLimits::default()).await
}

/// [`serve_http1`] with `limits`' connection counts and timeouts (see `crate::admission`).
/// Requests carry the client's address as [`axum::extract::ConnectInfo`]`<SocketAddr>`, and
/// request heads hyper cannot parse are answered with ProblemDetails (`crate::parse_errors`).
/// A client certificate the connection presented goes with each request too
/// ([`PeerCertificate`]).
pub async fn serve_http1_limited<L>(
    mut listener: L,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    limits: &ServerLimits,
) -> io::Result<()>
where
    L: Listener<Addr = SocketAddr>,
    L::Io: PeerCertificate,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let max_connections = limits.max_connections.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let admission = Admission::new(limits.max_connections_per_peer, max_connections);
    // New connections waiting for a slot, each in its own task.
    let waiting = Arc::new(tokio::sync::Semaphore::new((max_connections / 4).max(1)));
    let header_timeout = limits.header_read_timeout;
    let first_request_timeout = limits.first_request_timeout;
    let deadlines = Deadlines::of(limits);
    'serve: loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break 'serve,
        };
        let Some(counted) = admission.admit(peer.ip()) else {
            tracing::debug!(%peer, "too many connections from one address: closed");
            continue;
        };
        // Every slot taken: a connection from an address over its share is closed at once;
        // any other waits for room in its own task (the oldest connection without a request
        // is closed for it, else the idlest kept-alive one, else a stalled body), within its
        // first-request timeout, so that this loop keeps accepting. At most a quarter of the
        // slots' number wait at once; a further one is closed.
        let (slot, waiter) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (Some(slot), None),
            Err(_) if admission.over_share(&counted) => {
                tracing::debug!(%peer, "every connection slot taken and this address holds more than its share: closed");
                continue;
            }
            Err(_) => match waiting.clone().try_acquire_owned() {
                Ok(waiter) => (None, Some(waiter)),
                Err(_) => {
                    tracing::debug!(%peer, "every connection slot taken and too many connections waiting for room: closed");
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        let certificate = io.client_certificate();
        let (app, admission, slots) = (app.clone(), admission.clone(), slots.clone());
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            let _counted = counted;
            let _slot = match slot {
                Some(slot) => slot,
                None => {
                    let _waiter = waiter;
                    tokio::select! {
                        room = tokio::time::timeout(first_request_timeout, room(&slots, &admission, peer)) => match room {
                            Ok(Some(slot)) => slot,
                            _ => return,
                        },
                        _ = stopped.wait_for(|stop| *stop) => return,
                    }
                }
            };
            let tracked = admission.track();
            let evicted = tracked.evicted();
            let service = ConnectionService::new(app, tracked.clone(), peer, certificate, deadlines);
            let service = TowerToHyperService::new(service);
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_headers(crate::limits::MAX_HEADERS)
                .title_case_headers(true)
                .writev(false)
                .serve_connection(TokioIo::new(Answering::new(io)), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            let no_first_request = async {
                tokio::time::sleep(first_request_timeout).await;
                if tracked.has_requested() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stopped.wait_for(|stop| *stop) => {}
                () = evicted.notified() => {
                    tracing::debug!(%peer, "idle connection closed to make room");
                    return;
                }
                () = no_first_request => {
                    tracing::debug!(%peer, "no request within the first-request timeout: closed");
                    return;
                }
            }
            connection.as_mut().graceful_shutdown();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended during shutdown");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Runs the server over the services `services` assembles until `SIGINT`/`SIGTERM`;
/// `on_start` is called once it listens.
pub async fn serve(
    services: vnfm::lcm::Builder,
    options: ServeOptions,
    on_start: impl FnOnce(&Started),
) -> Result<(), ServeError> {
    // rustls's process-wide provider (ring), for the TLS listener.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = match (&options.tls_cert, &options.tls_key) {
        (Some(c), Some(k)) => Some(tls_acceptor(c, k, &options)?),
        (None, None) if options.tls_client_auth.is_some() || !options.tls_client_ca.is_empty() => {
            return Err(ServeError::Tls(
                "client certificates (--tls-client-auth, --tls-client-ca) need TLS: give --tls-cert and --tls-key".into(),
            ));
        }
        (None, None) => None,
        _ => return Err(ServeError::Tls("give both --tls-cert and --tls-key".into())),
    };
    // Bound first: a taken or forbidden address must not leave a fresh data directory behind.
    let tcp = TcpListener::bind(options.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.listen,
            source,
        })?;
    let services = services
        .assemble()
        .await
        .map_err(|e| ServeError::Assemble(Box::new(e)))?;
    let state = AppState::new(
        services,
        StateOptions {
            tls: tls.is_some(),
            ..options.state.clone()
        },
    )
    .await?;
    let addr = tcp.local_addr().map_err(ServeError::Serve)?;
    let client = state.bootstrap_client()?;
    let started = Started {
        addr,
        scheme: if tls.is_some() { "https" } else { "http" },
        credentials_file: state.credentials_file().to_owned(),
        client_id: client.client_id,
        basic_auth: options.state.allow_basic_auth,
    };
    on_start(&started);
    let app = crate::router(state.clone());
    let limits = options.state.limits.clone();
    let (signalled, on_signal) = tokio::sync::oneshot::channel::<Instant>();
    let shutdown = {
        let state = state.clone();
        let timeout = options.shutdown_timeout;
        async move {
            shutdown_signal().await;
            tracing::info!(
                "shutting down: no new connections or lifecycle steps, finishing in-flight requests and steps"
            );
            state.set_not_ready();
            // The runner stops now, not once the last client is done: each occurrence is
            // handed over at the end of its step in progress.
            let lcm = state.lcm().clone();
            tokio::spawn(async move { lcm.shutdown(timeout).await });
            let _ = signalled.send(Instant::now());
        }
    };
    // Requests in flight get the shutdown timeout to finish; then their connections close.
    let drain_bound = {
        let timeout = options.shutdown_timeout;
        async move {
            let Ok(at) = on_signal.await else {
                return std::future::pending().await;
            };
            tokio::time::sleep_until((at + timeout).into()).await;
            tracing::warn!(
                seconds = timeout.as_secs(),
                "requests still in flight after the shutdown timeout: their connections are closed"
            );
        }
    };
    let serving: std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<()>> + Send + '_>> =
        match tls {
            Some(acceptor) => {
                let listener =
                    TlsListener::start(tcp, acceptor, &limits).map_err(ServeError::Serve)?;
                Box::pin(serve_http1_limited(listener, app, shutdown, &limits))
            }
            None => {
                use axum::serve::ListenerExt;
                let listener = tcp.tap_io(|s| {
                    // Nagle's algorithm delays small keep-alive responses by ~40 ms.
                    let _ = s.set_nodelay(true);
                });
                Box::pin(serve_http1_limited(listener, app, shutdown, &limits))
            }
        };
    let served = tokio::select! {
        served = serving => served,
        () = drain_bound => Ok(()),
    };
    let started_stop = Instant::now();
    state.shutdown(options.shutdown_timeout).await;
    tracing::info!(
        millis = started_stop.elapsed().as_millis() as u64,
        "stopped"
    );
    served.map_err(ServeError::Serve)
}

/// A `tracing` layer that records the duration of every lifecycle step span (`lcm.step`)
/// into `metrics`.
///
/// The layer is interested in `lcm.step` spans only, decided once per callsite: without
/// that, a layer with no filter makes every span and event of every level (debug and trace
/// included) reach the subscriber, which then allocates and tracks each one for nothing.
pub fn step_metrics_layer<S>(
    metrics: Arc<crate::metrics::Metrics>,
) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    let steps =
        tracing_subscriber::filter::filter_fn(|meta| meta.is_span() && meta.name() == "lcm.step")
            .with_max_level_hint(tracing::Level::INFO);
    StepMetricsLayer { metrics }.with_filter(steps)
}

/// See [`step_metrics_layer`].
pub struct StepMetricsLayer {
    metrics: Arc<crate::metrics::Metrics>,
}

struct StepTiming {
    started: Instant,
    step: String,
    phase: String,
}

#[derive(Default)]
struct StepFields {
    step: String,
    phase: String,
}

impl tracing::field::Visit for StepFields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "step" => self.step = value.to_owned(),
            "phase" => self.phase = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "step" => self.step = format!("{value:?}").trim_matches('"').to_owned(),
            "phase" => self.phase = format!("{value:?}").trim_matches('"').to_owned(),
            _ => {}
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for StepMetricsLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = StepFields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(StepTiming {
                started: Instant::now(),
                step: fields.step,
                phase: fields.phase,
            });
        }
    }

    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(t) = span.extensions().get::<StepTiming>()
        {
            self.metrics
                .observe_step(&t.step, &t.phase, t.started.elapsed());
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn step_metrics_see_step_spans_and_enable_nothing_else() {
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let subscriber = tracing_subscriber::registry().with(step_metrics_layer(metrics.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let step = tracing::info_span!("lcm.step", step = "instantiate", phase = "forward");
            drop(step.enter());
            drop(step);
            // Other spans and events, and anything below INFO, are not the layer's: with it
            // alone nothing else is enabled, so none of it is built or tracked.
            assert!(tracing::info_span!("lcm.op_occ").is_disabled());
            assert!(!tracing::enabled!(tracing::Level::DEBUG));
            assert!(!tracing::enabled!(tracing::Level::INFO));
        });
        let text = metrics.render(&[]);
        assert!(
            text.contains(
                "vnfm_lcm_step_duration_seconds_count{step=\"instantiate\",phase=\"forward\"} 1"
            ),
            "{text}"
        );
    }
}
