//! The link to PostgreSQL: which server the store talks to, whether it can now, and finding
//! the server again when it went away (a restart, a standby promoted).
//!
//! A store URL may name several hosts, in libpq's form
//! (`postgres://vnfm@db1:5432,db2:5432/vnfm?target_session_attrs=read-write`). sqlx connects
//! to one host and ignores `target_session_attrs`, so the store keeps the list itself
//! ([`targets`]): it uses the first host, in the order given, that accepts a connection and,
//! when several hosts are named or `target_session_attrs` is `read-write` or `primary`, takes
//! writes (it is not a standby and not read-only).
//!
//! A monitor task checks the server every [`CHECK_EVERY`] on a connection of its own, and at
//! once when a statement failed as a lost connection fails. When the check fails and the
//! server does not take a new connection either, the link is *down*: every call fails at once
//! with [`StoreError::Unavailable`], calls waiting for a pooled connection too, and the monitor
//! tries the hosts in order every [`PROBE_EVERY`]. The first one that will do gets a new
//! connection pool (the old pool's connections, to a server that went away, are dropped) and
//! the link is up again.

use std::str::FromStr;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use tokio::sync::{Notify, watch};

use crate::backend::{backend, redact_url};
use vnfm_store::StoreError;

/// How often the monitor checks a server that answers.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How often the monitor tries the hosts while none answers.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(250);

/// How long a check (or a connection and its check) may take before the server counts as
/// not answering.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a call waits for a pooled connection while the server answers (every one busy)
/// before it fails with [`StoreError::Unavailable`].
pub(crate) const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a pooled connection may stay idle and still be handed out untested. One idle
/// longer is tested first (a round trip: the server may have restarted since); one in steady
/// use is not, which saved a round trip on every store call (sqlx tests every connection it
/// hands out by default). A connection lost meanwhile fails its statement as a lost connection
/// does, which wakes the monitor; finding the server restarted, the monitor gives the link a
/// new pool.
pub(crate) const TEST_IDLE_AFTER: Duration = Duration::from_secs(1);

/// The servers a store URL names, in order.
#[derive(Debug, Clone)]
pub(crate) struct Targets {
    /// Connection options of each host.
    pub hosts: Vec<PgConnectOptions>,
    /// `host:port` of each, for messages.
    pub names: Vec<String>,
    /// Whether only a server that takes writes will do.
    pub read_write: bool,
}

impl Targets {
    /// One host, taken as it is.
    pub(crate) fn one(options: PgConnectOptions) -> Targets {
        let name = format!("{}:{}", options.get_host(), options.get_port());
        Targets {
            hosts: vec![options],
            names: vec![name],
            read_write: false,
        }
    }
}

/// The hosts of `url` (see the [module docs](self)).
pub(crate) fn targets(url: &str) -> Result<Targets, StoreError> {
    let invalid = |why: String| {
        StoreError::Backend(format!("invalid PostgreSQL URL {}: {why}", redact_url(url)))
    };
    let parse = |url: &str| PgConnectOptions::from_str(url).map_err(|e| invalid(e.to_string()));
    let Some(scheme_end) = url.find("://") else {
        return Ok(Targets::one(parse(url)?));
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let mut attrs = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| match p.strip_prefix("target_session_attrs=") {
            Some(v) => {
                attrs = Some(v);
                false
            }
            None => true,
        })
        .collect();
    let hosts: Vec<&str> = hostlist.split(',').collect();
    if hosts.len() == 1 && attrs.is_none() {
        return Ok(Targets::one(parse(url)?));
    }
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(invalid("an empty host in the list of hosts".into()));
    }
    let read_write = match attrs {
        None => hosts.len() > 1,
        Some("read-write" | "primary") => true,
        Some("any") => false,
        Some(other) => {
            return Err(invalid(format!(
                "target_session_attrs={other}: the store writes, so only read-write, primary or any will do"
            )));
        }
    };
    let scheme = &url[..scheme_end];
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let mut out = Targets {
        hosts: Vec::new(),
        names: Vec::new(),
        read_write,
    };
    for host in hosts {
        let options = parse(&format!("{scheme}://{userinfo}{host}{path}{query}"))?;
        out.names
            .push(format!("{}:{}", options.get_host(), options.get_port()));
        out.hosts.push(options);
    }
    Ok(out)
}

/// Whether `e` says the server cannot be used now rather than that a statement is wrong: the
/// connection broke or was refused, the server is shutting down or starting, it became
/// read-only (a standby), it has no connection slot left, or no pooled connection was free.
pub(crate) fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now;
            // 25006: read-only transaction (a standby); 53300: too many connections.
            c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03" | "25006" | "53300")
        }),
        _ => false,
    }
}

/// Whether the link can be used now, and why not.
#[derive(Debug, Clone)]
struct Health {
    up: bool,
    why: String,
}

/// The pool in use, and the host it connects to (a new pool each time the link comes back
/// up).
#[derive(Debug, Clone)]
struct Current {
    pool: PgPool,
    host: usize,
}

/// The link (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Link {
    targets: Targets,
    max_connections: u32,
    current: RwLock<Current>,
    health: watch::Sender<Health>,
    /// Wakes the monitor: a statement failed as a lost connection fails, or the link is
    /// closed or dropped.
    wake: Arc<Notify>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

fn new_pool(options: PgConnectOptions, max_connections: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= TEST_IDLE_AFTER {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_lazy_with(options)
}

/// Fails unless the server on `conn` will do: answers within [`PROBE_TIMEOUT`] and, when
/// `read_write`, takes writes.
async fn check(conn: &mut PgConnection, read_write: bool) -> Result<(), String> {
    let query = sqlx::query_scalar::<_, bool>(
        "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'",
    );
    match tokio::time::timeout(PROBE_TIMEOUT, query.fetch_one(conn)).await {
        Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
        Ok(Err(e)) => Err(backend(e).to_string()),
        Ok(Ok(true)) if read_write => Err("it does not take writes (a standby)".into()),
        Ok(Ok(_)) => Ok(()),
    }
}

/// A new connection to host `i` of `targets`, checked.
async fn connect(targets: &Targets, i: usize) -> Result<PgConnection, String> {
    let attempt = async {
        let mut conn = PgConnection::connect_with(&targets.hosts[i])
            .await
            .map_err(|e| backend(e).to_string())?;
        check(&mut conn, targets.read_write).await?;
        Ok(conn)
    };
    tokio::time::timeout(PROBE_TIMEOUT, attempt)
        .await
        .unwrap_or_else(|_| Err(format!("no connection within {PROBE_TIMEOUT:?}")))
}

/// The first host of `targets` that will do, with a checked connection to it; else why
/// none will.
async fn first_usable(targets: &Targets) -> Result<(usize, PgConnection), String> {
    let mut why = Vec::new();
    for i in 0..targets.hosts.len() {
        match connect(targets, i).await {
            Ok(conn) => return Ok((i, conn)),
            Err(e) => why.push(format!("{}: {e}", targets.names[i])),
        }
    }
    Err(why.join("; "))
}

impl Link {
    /// Connects to the first host of `targets` that will do and starts the monitor.
    pub(crate) async fn open(
        targets: Targets,
        max_connections: u32,
    ) -> Result<Arc<Link>, StoreError> {
        let (host, probe) = first_usable(&targets).await.map_err(|why| {
            StoreError::Unavailable(format!("no PostgreSQL server to use: {why}"))
        })?;
        if targets.hosts.len() > 1 {
            tracing::info!(host = %targets.names[host], "using PostgreSQL server");
        }
        let link = Arc::new(Link {
            current: RwLock::new(Current {
                pool: new_pool(targets.hosts[host].clone(), max_connections),
                host,
            }),
            targets,
            max_connections,
            health: watch::Sender::new(Health {
                up: true,
                why: String::new(),
            }),
            wake: Arc::new(Notify::new()),
        });
        tokio::spawn(monitor(Arc::downgrade(&link), link.wake.clone(), probe));
        Ok(link)
    }

    /// The pool in use now.
    pub(crate) fn pool(&self) -> PgPool {
        self.current.read().expect("pool lock").pool.clone()
    }

    /// The error of a call made while the link is down.
    fn unavailable(&self) -> StoreError {
        StoreError::Unavailable(self.health.borrow().why.clone())
    }

    /// A pooled connection; [`StoreError::Unavailable`] at once while the link is down, and
    /// as soon as it goes down while waiting.
    pub(crate) async fn acquire(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        let mut health = self.health.subscribe();
        if !health.borrow_and_update().up {
            return Err(self.unavailable());
        }
        let pool = self.pool();
        tokio::select! {
            biased;
            conn = pool.acquire() => conn.map_err(|e| self.failed(e)),
            _ = health.wait_for(|h| !h.up) => Err(self.unavailable()),
        }
    }

    /// `e` as a [`StoreError`]; a lost connection wakes the monitor.
    pub(crate) fn failed(&self, e: sqlx::Error) -> StoreError {
        if is_unavailable(&e) {
            self.suspect();
            StoreError::Unavailable(backend(e).to_string())
        } else {
            backend(e)
        }
    }

    /// A statement failed as a lost connection fails: the monitor checks the server now.
    pub(crate) fn suspect(&self) {
        self.wake.notify_one();
    }

    /// Closes the pool and stops the monitor.
    pub(crate) async fn close(&self) {
        self.health.send_replace(Health {
            up: false,
            why: "the store was closed".into(),
        });
        self.wake.notify_one();
        self.pool().close().await;
    }

    fn is_closed(&self) -> bool {
        self.pool().is_closed()
    }

    fn down(&self, why: String) {
        tracing::warn!(
            host = %self.targets.names[self.current.read().expect("pool lock").host],
            error = %why,
            "the database is unavailable: requests are answered 503 until it is back"
        );
        self.health.send_replace(Health { up: false, why });
    }

    /// A new pool to host `host` in place of the one in use, which is closed.
    fn renew(&self, host: usize) {
        let old = {
            let mut current = self.current.write().expect("pool lock");
            let fresh = Current {
                pool: new_pool(self.targets.hosts[host].clone(), self.max_connections),
                host,
            };
            std::mem::replace(&mut *current, fresh)
        };
        tokio::spawn(async move { old.pool.close().await });
    }

    /// Up again on host `host`, over a new pool.
    fn up(&self, host: usize, since: Instant) {
        self.renew(host);
        tracing::info!(
            host = %self.targets.names[host],
            after_ms = since.elapsed().as_millis() as u64,
            "the database is available again"
        );
        self.health.send_replace(Health {
            up: true,
            why: String::new(),
        });
    }
}

/// The monitor (see the [module docs](self)); ends when the link is dropped or closed.
async fn monitor(link: Weak<Link>, wake: Arc<Notify>, probe: PgConnection) {
    let mut probe = Some(probe);
    let mut down_since: Option<Instant> = None;
    loop {
        let pause = if down_since.is_some() {
            PROBE_EVERY
        } else {
            CHECK_EVERY
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = wake.notified() => {}
        }
        let Some(link) = link.upgrade() else { return };
        if link.is_closed() {
            return;
        }
        let targets = &link.targets;
        match down_since {
            None => {
                let checked = match probe.as_mut() {
                    Some(conn) => check(conn, targets.read_write).await,
                    None => Err("no connection".into()),
                };
                if checked.is_ok() {
                    continue;
                }
                // The check's own connection may be all that broke: a new one settles it.
                // The server may also have restarted between two checks: the pooled
                // connections, to the server that went away, are then replaced too (those in
                // steady use are not tested before use, see TEST_IDLE_AFTER).
                let host = link.current.read().expect("pool lock").host;
                match connect(targets, host).await {
                    Ok(conn) => {
                        probe = Some(conn);
                        tracing::info!(
                            host = %targets.names[host],
                            "the database connection was lost and a new one made: the pool is renewed"
                        );
                        link.renew(host);
                    }
                    Err(why) => {
                        probe = None;
                        link.down(format!("{}: {why}", targets.names[host]));
                        down_since = Some(Instant::now());
                    }
                }
            }
            Some(since) => {
                if let Ok((host, conn)) = first_usable(targets).await {
                    probe = Some(conn);
                    link.up(host, since);
                    down_since = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_is_taken_as_it_is() {
        let t = targets("postgres://vnfm:pw@db:5433/vnfm?sslmode=disable").unwrap();
        assert_eq!(t.names, ["db:5433"]);
        assert!(!t.read_write);
        assert_eq!(t.hosts[0].get_database(), Some("vnfm"));
    }

    #[test]
    fn several_hosts_are_tried_in_order_for_a_server_that_takes_writes() {
        let t = targets("postgres://vnfm:pw@db1:5432,db2:6432,db3/vnfm?sslmode=disable").unwrap();
        assert_eq!(t.names, ["db1:5432", "db2:6432", "db3:5432"]);
        assert!(t.read_write);
        for h in &t.hosts {
            assert_eq!(h.get_database(), Some("vnfm"));
            assert_eq!(h.get_username(), "vnfm");
        }
        let t = targets("postgresql://a:1,b:2/x?target_session_attrs=any").unwrap();
        assert!(!t.read_write);
        let t =
            targets("postgres://a:1/x?target_session_attrs=primary&application_name=v").unwrap();
        assert_eq!(t.names, ["a:1"]);
        assert!(t.read_write);
    }

    #[test]
    fn a_standby_only_session_or_an_empty_host_is_refused() {
        for bad in [
            "postgres://a:1,b:2/x?target_session_attrs=read-only",
            "postgres://a:1,b:2/x?target_session_attrs=standby",
            "postgres://a:1,,b:2/x",
        ] {
            let e = targets(bad).unwrap_err().to_string();
            assert!(e.contains("invalid PostgreSQL URL"), "{bad}: {e}");
        }
        // The password is not echoed.
        let e = targets("postgres://u:secret@a:1,b:x/db")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
