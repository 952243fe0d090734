//! Which connections the server takes, so that one client cannot hold the others out.
//!
//! - **Per address:** at most [`ServerLimits::max_connections_per_peer`] connections from one
//!   IP address at once (TLS handshakes in progress count apart); a further one is closed as
//!   soon as it is accepted. An IPv6 client counts by its /64 prefix ([`address_key`]): one
//!   host usually has a whole /64 to pick addresses from.
//! - **First request:** a connection must send its first request head within
//!   [`ServerLimits::first_request_timeout`], or it is closed (without an answer: there is no
//!   request to answer).
//! - **When every slot is taken** ([`ServerLimits::max_connections`]), a new connection from
//!   an address that holds more than an equal share of the slots among the addresses holding
//!   connections is closed at once ([`Admission::over_share`]; never when one address holds
//!   them all, e.g. a reverse proxy): addresses that keep reconnecting cannot make the server
//!   close connections for them, and closing theirs costs an accept and a close. Any other
//!   new connection takes the slot of the oldest connection that has not sent a request yet, else of the idlest
//!   kept-alive connection (the one whose last answer went out longest ago, whatever it asked
//!   before), else of the connection whose request body has been awaited longest, once it has
//!   been awaited for [`STALLED_BODY`] (a body sent a byte now and then, as a slow-body attack
//!   sends it), which is closed; any other connection in the middle of a request or an answer
//!   is never closed for room. When none may be closed, the new connection waits, in a task
//!   of its own (the server goes on accepting), until one may or one closes, at most its
//!   first-request timeout; at most a quarter of `max_connections` wait at once, and a
//!   further one is closed. A request cannot be busy for longer than its deadline while it
//!   arrives ([`ServerLimits::request_timeout`]).
//! - **Crowded** ([`Admission::crowded`]): from half the slots taken on, the answer to a
//!   request without credentials closes its connection (`Connection: close`), so that
//!   anonymous requests (`/healthz`, `/oauth2/token`) cannot keep connections open.
//!
//! [`ServerLimits::max_connections_per_peer`]: crate::limits::ServerLimits::max_connections_per_peer
//! [`ServerLimits::first_request_timeout`]: crate::limits::ServerLimits::first_request_timeout
//! [`ServerLimits::max_connections`]: crate::limits::ServerLimits::max_connections
//! [`ServerLimits::request_timeout`]: crate::limits::ServerLimits::request_timeout

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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

/// How long a request's body must have been awaited, no byte arriving, before its connection
/// may be closed to make room.
pub(crate) const STALLED_BODY: Duration = Duration::from_secs(1);

/// The connections that may be closed to make room, each with the signal that closes it,
/// in the order they became closable (oldest first).
#[derive(Default)]
struct Closable {
    /// Connections that have not sent a request yet.
    fresh: BTreeMap<u64, Arc<Notify>>,
    /// Kept-alive connections between two requests.
    idle: BTreeMap<u64, Arc<Notify>>,
    /// Connections whose request body is awaited, with when the wait began: closable once
    /// it has lasted [`STALLED_BODY`].
    stalled: BTreeMap<u64, (Instant, Arc<Notify>)>,
}

/// The connections of one listener: how many each address holds, and which may be closed to
/// make room.
pub(crate) struct Admission {
    /// Connections one address may hold (0: no limit).
    per_peer: usize,
    /// Connections served at once (0: not counted, e.g. TLS handshakes).
    max: usize,
    /// Connections counted now.
    held: AtomicUsize,
    peers: Mutex<HashMap<IpAddr, usize>>,
    closable: Mutex<Closable>,
    /// Signalled when a connection becomes closable (idle after an answer).
    closable_again: Notify,
    next: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Admission {
    /// At most `per_peer` connections per address (0: no limit), of `max` served at once (0:
    /// never [`Admission::crowded`]).
    pub(crate) fn new(per_peer: usize, max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            per_peer,
            max,
            held: AtomicUsize::new(0),
            peers: Mutex::new(HashMap::new()),
            closable: Mutex::new(Closable::default()),
            closable_again: Notify::new(),
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
        self.held.fetch_add(1, Ordering::Relaxed);
        Some(PeerGuard {
            admission: self.clone(),
            ip,
        })
    }

    /// Whether the address of `counted` (a new connection, counted already) holds more than
    /// an equal share of the slots among the addresses holding connections, when more than
    /// one does: then, with every slot taken, the new connection is closed rather than make
    /// room. The check is two lookups: it runs for every connection of a flood.
    pub(crate) fn over_share(&self, counted: &PeerGuard) -> bool {
        if self.max == 0 {
            return false;
        }
        let peers = lock(&self.peers);
        let addresses = peers.len();
        let held = peers.get(&counted.ip).copied().unwrap_or(0);
        addresses > 1 && held.saturating_mul(addresses) > self.max
    }

    /// Whether half the connection slots or more are taken: then an answer to a request
    /// without credentials closes its connection.
    pub(crate) fn crowded(&self) -> bool {
        self.max > 0 && self.held.load(Ordering::Relaxed) * 2 >= self.max
    }

    /// Follows a new connection, which has not sent a request yet; it leaves the registers
    /// when [`Tracked`] is dropped (when the connection ends).
    pub(crate) fn track(self: &Arc<Self>) -> Arc<Tracked> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        lock(&self.closable).fresh.insert(key, evicted.clone());
        Arc::new(Tracked {
            admission: self.clone(),
            evicted,
            state: Mutex::new(TrackState {
                place: Some(Place::Fresh(key)),
                requests: 0,
                busy: 0,
                stalled: None,
            }),
        })
    }

    /// Completes when a connection has become closable since the last call (for a new
    /// connection waiting while every one was busy).
    pub(crate) async fn became_closable(&self) {
        self.closable_again.notified().await;
    }

    /// Closes the oldest connection that has not sent a request, else the idlest kept-alive
    /// one, else the one whose request body has been awaited longest if that has lasted
    /// [`STALLED_BODY`]; false when none may be closed now.
    pub(crate) fn evict_one(&self) -> bool {
        let mut closable = lock(&self.closable);
        let chosen = match closable.fresh.pop_first() {
            Some((_, fresh)) => Some(fresh),
            None => match closable.idle.pop_first() {
                Some((_, idle)) => Some(idle),
                None => match closable.stalled.first_key_value() {
                    Some((&key, (since, _))) if since.elapsed() >= STALLED_BODY => {
                        closable.stalled.remove(&key).map(|(_, stalled)| stalled)
                    }
                    _ => None,
                },
            },
        };
        match chosen {
            Some(evicted) => {
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
        self.admission.held.fetch_sub(1, Ordering::Relaxed);
        let mut peers = lock(&self.admission.peers);
        if let Some(held) = peers.get_mut(&self.ip) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                peers.remove(&self.ip);
            }
        }
    }
}

/// Where a connection is in the registers of closable connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Fresh(u64),
    Idle(u64),
}

struct TrackState {
    /// `None` while busy.
    place: Option<Place>,
    requests: u64,
    /// Requests begun and not yet answered in full.
    busy: usize,
    /// Its key among the stalled connections while its request's body is awaited.
    stalled: Option<u64>,
}

/// A connection followed by its [`Admission`] (see [`Admission::track`]): closable for room
/// while it has sent no request or is idle between two, never while busy.
pub(crate) struct Tracked {
    admission: Arc<Admission>,
    evicted: Arc<Notify>,
    state: Mutex<TrackState>,
}

impl Tracked {
    /// Completes when the connection is chosen to make room for a new one.
    pub(crate) fn evicted(&self) -> Arc<Notify> {
        self.evicted.clone()
    }

    /// Whether the connection has sent a request.
    pub(crate) fn has_requested(&self) -> bool {
        lock(&self.state).requests > 0
    }

    /// The admission the connection is counted by.
    pub(crate) fn admission(&self) -> &Admission {
        &self.admission
    }

    /// A request began: the connection is busy (not closable) until the returned guard is
    /// dropped, when its answer has gone out in full.
    pub(crate) fn begin(self: &Arc<Self>) -> Busy {
        let mut state = lock(&self.state);
        state.requests += 1;
        state.busy += 1;
        if let Some(place) = state.place.take() {
            self.leave(place);
        }
        Busy(self.clone())
    }

    /// The request's body is awaited (no byte is there to read): the connection becomes
    /// closable for room once the wait has lasted [`STALLED_BODY`].
    pub(crate) fn body_awaited(&self) {
        let mut state = lock(&self.state);
        if state.stalled.is_none() {
            let key = self.admission.next.fetch_add(1, Ordering::Relaxed);
            lock(&self.admission.closable)
                .stalled
                .insert(key, (Instant::now(), self.evicted.clone()));
            state.stalled = Some(key);
        }
    }

    /// Some of the request's body arrived, or it ended: the wait is over.
    pub(crate) fn body_arrived(&self) {
        let mut state = lock(&self.state);
        self.unstall(&mut state);
    }

    fn unstall(&self, state: &mut TrackState) {
        if let Some(key) = state.stalled.take() {
            lock(&self.admission.closable).stalled.remove(&key);
        }
    }

    fn leave(&self, place: Place) {
        let mut closable = lock(&self.admission.closable);
        match place {
            Place::Fresh(key) => closable.fresh.remove(&key),
            Place::Idle(key) => closable.idle.remove(&key),
        };
    }

    fn end(&self) {
        let mut state = lock(&self.state);
        state.busy = state.busy.saturating_sub(1);
        if state.busy == 0 {
            self.unstall(&mut state);
        }
        if state.busy == 0 && state.place.is_none() {
            let key = self.admission.next.fetch_add(1, Ordering::Relaxed);
            lock(&self.admission.closable)
                .idle
                .insert(key, self.evicted.clone());
            state.place = Some(Place::Idle(key));
            self.admission.closable_again.notify_one();
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        self.unstall(&mut state);
        if let Some(place) = state.place.take() {
            self.leave(place);
        }
    }
}

/// A request in progress on a [`Tracked`] connection (see [`Tracked::begin`]).
pub(crate) struct Busy(Arc<Tracked>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_closable(a: &Admission) -> (usize, usize) {
        let c = lock(&a.closable);
        (c.fresh.len(), c.idle.len())
    }

    #[test]
    fn an_address_holds_at_most_its_limit_and_gets_room_back() {
        let a = Admission::new(2, 0);
        let one: IpAddr = "127.0.0.2".parse().unwrap();
        let other: IpAddr = "127.0.0.1".parse().unwrap();
        let first = a.admit(one).unwrap();
        let _second = a.admit(one).unwrap();
        assert!(a.admit(one).is_none());
        assert!(a.admit(other).is_some());
        drop(first);
        assert!(a.admit(one).is_some());
        // One IPv6 host: its /64.
        let v6 = Admission::new(1, 0);
        let _held = v6.admit("2001:db8::1".parse().unwrap()).unwrap();
        assert!(v6.admit("2001:db8::2".parse().unwrap()).is_none());
        assert!(v6.admit("2001:db8:0:1::1".parse().unwrap()).is_some());
        let unlimited = Admission::new(0, 0);
        let held: Vec<_> = (0..100).map(|_| unlimited.admit(one).unwrap()).collect();
        assert_eq!(held.len(), 100);
        assert!(!unlimited.crowded());
    }

    #[test]
    fn the_oldest_connection_without_a_request_is_evicted_first() {
        let a = Admission::new(0, 0);
        let oldest = a.track();
        let newer = a.track();
        let started = a.track();
        drop(started);
        assert!(a.evict_one());
        assert!(
            lock(&a.closable)
                .fresh
                .values()
                .any(|n| Arc::ptr_eq(n, &newer.evicted))
        );
        assert!(
            !lock(&a.closable)
                .fresh
                .values()
                .any(|n| Arc::ptr_eq(n, &oldest.evicted))
        );
        assert!(a.evict_one());
        assert!(!a.evict_one());
    }

    /// Issue 67: a kept-alive connection that has sent a request is closable again once its
    /// answer went out, after every connection without a request, the idlest first; one in
    /// the middle of a request is not.
    #[test]
    fn kept_alive_connections_are_evicted_idlest_first_and_busy_ones_never() {
        let a = Admission::new(0, 0);
        let (first, second, busy) = (a.track(), a.track(), a.track());
        let answered_first = first.begin();
        let answered_second = second.begin();
        let _in_progress = busy.begin();
        assert_eq!(is_closable(&a), (0, 0));
        assert!(!a.evict_one(), "every connection is busy");
        // The second's answer goes out first: it is the idlest.
        drop(answered_second);
        drop(answered_first);
        assert_eq!(is_closable(&a), (0, 2));
        assert!(first.has_requested() && second.has_requested());
        let fresh = a.track();
        assert!(!fresh.has_requested());
        assert!(a.evict_one());
        assert_eq!(is_closable(&a), (0, 2), "the fresh one goes first");
        assert!(a.evict_one());
        assert_eq!(
            lock(&a.closable)
                .idle
                .values()
                .next()
                .map(|n| Arc::ptr_eq(n, &first.evicted)),
            Some(true),
            "then the idlest"
        );
        assert!(a.evict_one());
        assert!(!a.evict_one(), "the busy one stays");
        // A connection that ends leaves the registers.
        let again = first.begin();
        drop(again);
        assert_eq!(is_closable(&a), (0, 1));
        drop(first);
        assert_eq!(is_closable(&a), (0, 0));
    }

    /// Issue 67: with every slot taken, a new connection from an address holding more than
    /// an equal share is closed rather than make room; one from an address below its share is
    /// not, nor one from the only address holding connections.
    #[test]
    fn an_address_over_its_share_of_a_full_server_gets_no_room() {
        let a = Admission::new(0, 8);
        let (flood, other): (IpAddr, IpAddr) =
            ("127.0.1.1".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let held: Vec<_> = (0..8).map(|_| a.admit(flood).unwrap()).collect();
        // Alone, the address may make room for itself (a reverse proxy's connections).
        let ninth = a.admit(flood).unwrap();
        assert!(!a.over_share(&ninth));
        drop(ninth);
        // Beside another address, its share is 4 of the 8 slots: it holds more.
        let newcomer = a.admit(other).unwrap();
        assert!(
            !a.over_share(&newcomer),
            "one connection of 8 slots, 2 addresses"
        );
        let ninth = a.admit(flood).unwrap();
        assert!(a.over_share(&ninth));
        drop(ninth);
        // Holding its share with the new connection, it may make room again.
        let kept: Vec<_> = held.into_iter().take(3).collect();
        let fourth = a.admit(flood).unwrap();
        assert!(!a.over_share(&fourth), "4 of 8 slots, 2 addresses");
        let fifth = a.admit(flood).unwrap();
        assert!(a.over_share(&fifth), "5 of 8 slots, 2 addresses");
        drop((kept, fourth, fifth, newcomer));
        let unlimited = Admission::new(0, 0);
        assert!(!unlimited.over_share(&unlimited.admit(flood).unwrap()));
    }

    /// Issue 67: a connection whose request body has been awaited for a second (a slow-body
    /// attack) is closable for room, after fresh and idle ones; one whose body keeps
    /// arriving is not.
    #[test]
    fn a_request_body_awaited_for_a_second_makes_its_connection_closable() {
        let a = Admission::new(0, 0);
        let (slow, steady) = (a.track(), a.track());
        let _slow_request = slow.begin();
        let steady_request = steady.begin();
        slow.body_awaited();
        steady.body_awaited();
        assert!(!a.evict_one(), "not awaited long enough yet");
        steady.body_arrived();
        std::thread::sleep(STALLED_BODY + Duration::from_millis(50));
        steady.body_awaited();
        let idle = a.track();
        assert!(a.evict_one());
        assert_eq!(is_closable(&a), (0, 0), "the fresh one goes first");
        drop(idle);
        assert!(a.evict_one(), "then the body awaited for a second");
        assert!(lock(&a.closable).stalled.len() == 1);
        assert!(
            !a.evict_one(),
            "the body that arrived a moment ago is awaited afresh"
        );
        // A request that ends is no longer awaited.
        drop(steady_request);
        assert!(lock(&a.closable).stalled.is_empty());
    }

    #[test]
    fn the_server_is_crowded_from_half_its_slots_on() {
        let a = Admission::new(0, 4);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let one = a.admit(ip).unwrap();
        assert!(!a.crowded());
        let two = a.admit(ip).unwrap();
        assert!(a.crowded());
        drop((one, two));
        assert!(!a.crowded());
    }
}
