//! The settings of the HTTP server's limits ([`ServerLimits`], [`AuthBackoff`]): plain data
//! the state and the authenticator hold; `crate::limits` enforces them.

use std::time::Duration;

/// Limits of the HTTP server (see [`crate::limits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time a client has to send a request's head (request line and headers).
    pub header_read_timeout: Duration,
    /// Longest pause between two chunks of a request body.
    pub body_read_timeout: Duration,
    /// Time a request's body has, from its head's arrival, to arrive in full (a package
    /// upload has [`ServerLimits::upload_timeout`]); past it the request is answered 408 and
    /// its connection closed.
    pub request_timeout: Duration,
    /// [`ServerLimits::request_timeout`] of a package upload (`PUT .../package_content`).
    pub upload_timeout: Duration,
    /// Largest `/oauth2/token` body, in bytes.
    pub max_token_body: usize,
    /// Connections one IP address may hold at once (0: no limit per address, for a server
    /// behind a reverse proxy, where every client has the proxy's address).
    pub max_connections_per_peer: usize,
    /// Time a new connection has to send its first request head (and a TLS client to finish
    /// its handshake).
    pub first_request_timeout: Duration,
    /// The back-off after failed client authentication.
    pub auth_backoff: AuthBackoff,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            upload_timeout: Duration::from_secs(3600),
            max_token_body: 16 * 1024,
            max_connections_per_peer: 256,
            first_request_timeout: Duration::from_secs(10),
            auth_backoff: AuthBackoff::default(),
        }
    }
}

/// The back-off after failed client authentication (a wrong client secret on `/oauth2/token`
/// or in HTTP Basic): after `free_failures` failures of one client id from one address, that
/// pair is refused (429, without looking at the secret) for 1 s, doubling with each further
/// failure up to `max`; after `free_failures_per_peer` failures from one address, whatever
/// the client ids, the address is. A success forgets the pair's failures. A real client is
/// never locked out by failures from another address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthBackoff {
    /// Longest back-off (zero: no back-off at all).
    pub max: Duration,
    /// Failures of one client id from one address before its back-off starts.
    pub free_failures: u32,
    /// Failures from one address, for any client ids, before the address backs off (0: no
    /// back-off per address, for a server behind a reverse proxy).
    pub free_failures_per_peer: u32,
}

impl Default for AuthBackoff {
    fn default() -> Self {
        AuthBackoff {
            max: Duration::from_secs(60),
            free_failures: 5,
            free_failures_per_peer: 50,
        }
    }
}
