//! HTTPS for the emulated API server: a listener that completes TLS handshakes and hands
//! the connections to axum.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::{EmulatorError, TlsIdentity};

pub(crate) fn acceptor(identity: &TlsIdentity) -> Result<TlsAcceptor, EmulatorError> {
    let pem = |what| move |source| EmulatorError::TlsPem { what, source };
    let refused = |what| move |source| EmulatorError::TlsConfig { what, source };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(identity.cert_chain_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(pem("certificate chain"))?;
    if certs.is_empty() {
        return Err(EmulatorError::TlsNoCertificate);
    }
    let key =
        PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).map_err(pem("private key"))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(refused("protocol versions"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(refused("certificate and key"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Completes handshakes in their own tasks, so a stalled client holds up nobody.
pub(crate) struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub(crate) fn start(tcp: TcpListener, acceptor: TlsAcceptor, local: SocketAddr) -> Self {
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let Ok((stream, peer)) = tcp.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                // Watch events leave at once (see `Emulator::start_on`).
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let handed = tx.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await
                    {
                        let _ = handed.send((tls, peer)).await;
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        TlsListener { ready, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            if let Some(conn) = self.ready.recv().await {
                return conn;
            }
            std::future::pending::<()>().await;
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
