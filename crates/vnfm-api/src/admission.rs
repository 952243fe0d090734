//! Which connections the server takes, so that one client cannot hold the others out.
//!
//! - **Per address:** at most [`ServerLimits::max_connections_per_peer`] connections from one
//!   IP address at once (TLS handshakes in progress count apart); a further one is closed as
//!   soon as it is accepted. An IPv6 client counts by its /64 prefix ([`address_key`]): one
//!   host usually has a whole /64 to pick addresses from.
//! - **First request:** a connection must send its first request head within
//!   [`ServerLimits::first_request_timeout`], or it is closed (without an answer: there is no
//!   request to answer).
//! - **When every slot is taken** ([`ServerLimits::max_connections`]), a new connection takes
//!   the slot of the oldest connection that has not sent a request yet, which is closed; when
//!   every connection has sent one, the new connection waits until one closes (and further ones
//!   wait in the kernel's accept queue).
//!
//! [`ServerLimits::max_connections_per_peer`]: crate::limits::ServerLimits::max_connections_per_peer
//! [`ServerLimits::first_request_timeout`]: crate::limits::ServerLimits::first_request_timeout
//! [`ServerLimits::max_connections`]: crate::limits::ServerLimits::max_connections

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// The address a client is counted under: its IPv4 address (also when it comes as an
/// IPv4-mapped IPv6 address), or the /64 prefix of its IPv6 address.
pub(crate) fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// The connections of one listener: how many each address holds, and which have not sent a
/// request yet.
pub(crate) struct Admission {
    /// Connections one address may hold (0: no limit).
    per_peer: usize,
    peers: Mutex<HashMap<IpAddr, usize>>,
    /// Connections without a request yet, oldest first, with the signal that closes each.
    fresh: Mutex<BTreeMap<u64, Arc<Notify>>>,
    next: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Admission {
    /// At most `per_peer` connections per address (0: no limit).
    pub(crate) fn new(per_peer: usize) -> Arc<Admission> {
        Arc::new(Admission {
            per_peer,
            peers: Mutex::new(HashMap::new()),
            fresh: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
        })
    }

    /// Counts a connection from `ip`, unless `ip` holds its limit already.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<PeerGuard> {
        let ip = address_key(ip);
        let mut peers = lock(&self.peers);
        let held = peers.entry(ip).or_insert(0);
        if self.per_peer > 0 && *held >= self.per_peer {
            return None;
        }
        *held += 1;
        Some(PeerGuard {
            admission: self.clone(),
            ip,
        })
    }

    /// Registers a connection that has not sent a request yet; its guard leaves the register
    /// when dropped (at the first request, or when the connection ends).
    pub(crate) fn fresh(self: &Arc<Self>) -> FreshGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        lock(&self.fresh).insert(id, evicted.clone());
        FreshGuard {
            admission: self.clone(),
            id,
            evicted,
        }
    }

    /// Closes the oldest connection that has not sent a request; false when there is none.
    pub(crate) fn evict_oldest_fresh(&self) -> bool {
        match lock(&self.fresh).pop_first() {
            Some((_, evicted)) => {
                evicted.notify_one();
                true
            }
            None => false,
        }
    }
}

/// One connection counted against its address.
pub(crate) struct PeerGuard {
    admission: Arc<Admission>,
    ip: IpAddr,
}

impl Drop for PeerGuard {
    fn drop(&mut self) {
        let mut peers = lock(&self.admission.peers);
        if let Some(held) = peers.get_mut(&self.ip) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                peers.remove(&self.ip);
            }
        }
    }
}

/// A connection that has not sent a request yet (see [`Admission::fresh`]).
pub(crate) struct FreshGuard {
    admission: Arc<Admission>,
    id: u64,
    evicted: Arc<Notify>,
}

impl FreshGuard {
    /// Completes when the connection is chosen to make room for a new one.
    pub(crate) fn evicted(&self) -> Arc<Notify> {
        self.evicted.clone()
    }
}

impl Drop for FreshGuard {
    fn drop(&mut self) {
        lock(&self.admission.fresh).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_its_limit_and_gets_room_back() {
        let a = Admission::new(2);
        let one: IpAddr = "127.0.0.2".parse().unwrap();
        let other: IpAddr = "127.0.0.1".parse().unwrap();
        let first = a.admit(one).unwrap();
        let _second = a.admit(one).unwrap();
        assert!(a.admit(one).is_none());
        assert!(a.admit(other).is_some());
        drop(first);
        assert!(a.admit(one).is_some());
        // One IPv6 host: its /64.
        let v6 = Admission::new(1);
        let _held = v6.admit("2001:db8::1".parse().unwrap()).unwrap();
        assert!(v6.admit("2001:db8::2".parse().unwrap()).is_none());
        assert!(v6.admit("2001:db8:0:1::1".parse().unwrap()).is_some());
        let unlimited = Admission::new(0);
        let held: Vec<_> = (0..100).map(|_| unlimited.admit(one).unwrap()).collect();
        assert_eq!(held.len(), 100);
    }

    #[test]
    fn the_oldest_connection_without_a_request_is_evicted_first() {
        let a = Admission::new(0);
        let oldest = a.fresh();
        let newer = a.fresh();
        let started = a.fresh();
        drop(started);
        assert!(a.evict_oldest_fresh());
        assert!(lock(&a.fresh).contains_key(&newer.id));
        assert!(!lock(&a.fresh).contains_key(&oldest.id));
        assert!(a.evict_oldest_fresh());
        assert!(!a.evict_oldest_fresh());
    }
}
