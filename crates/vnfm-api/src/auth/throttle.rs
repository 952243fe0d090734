//! The back-off after failed client authentication (a wrong client secret on `/oauth2/token`,
//! or in HTTP Basic), per [`AuthBackoff`].
//!
//! Failures are counted per (client id, address) and per address. Once a count passes its
//! free failures, that pair (or address) is refused for 1 s, 2 s, 4 s, ... up to
//! [`AuthBackoff::max`] with each further failure; requests in the back-off are refused (429,
//! with `Retry-After`) without their secret being looked at, so a guess in the back-off
//! learns nothing, and count as failures, so a client that keeps guessing stays refused. A success forgets the pair's failures; failures older than
//! [`FORGET_AFTER`] are forgotten too.
//!
//! Keyed by address as well as client id, the back-off never locks a real client out from
//! elsewhere: guesses at its secret from another address hold back only that address. Behind
//! a reverse proxy every client has the proxy's address; the per-address count is then off
//! (`free_failures_per_peer` 0) and the pair count holds back the guessed client id only.
//!
//! An IPv6 client counts by its /64 prefix, as for connection limits. Memory is bounded: at most [`MAX_ENTRIES`] pairs and as many addresses are tracked; when a
//! table is full, forgotten entries go first, then the one whose last failure is oldest.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::limit_settings::AuthBackoff;

/// Most (client id, address) pairs, and most addresses, tracked.
pub const MAX_ENTRIES: usize = 10_000;
/// Failures this old are forgotten.
pub const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Longest client id kept as a key (longer ones are cut).
const MAX_CLIENT_ID: usize = 128;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    until: Option<Instant>,
}

impl Failures {
    fn forgotten(&self, now: Instant) -> bool {
        now.duration_since(self.last) > FORGET_AFTER && self.until.is_none_or(|u| u <= now)
    }
}

type Pair = (String, Option<IpAddr>);

#[derive(Debug, Default)]
struct Counters {
    pairs: HashMap<Pair, Failures>,
    peers: HashMap<Option<IpAddr>, Failures>,
}

/// Failed-authentication counters (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Throttle {
    policy: AuthBackoff,
    counters: Mutex<Counters>,
}

fn remaining<K: Eq + Hash>(table: &HashMap<K, Failures>, key: &K, now: Instant) -> Duration {
    table
        .get(key)
        .and_then(|f| f.until)
        .map_or(Duration::ZERO, |u| u.saturating_duration_since(now))
}

/// Counts a failure of `key`, starting or lengthening its back-off past `free` failures.
fn count<K: Eq + Hash + Clone>(
    table: &mut HashMap<K, Failures>,
    key: &K,
    free: u32,
    max: Duration,
    now: Instant,
) {
    if !table.contains_key(key) && table.len() >= MAX_ENTRIES {
        table.retain(|_, f| !f.forgotten(now));
        if table.len() >= MAX_ENTRIES
            && let Some(oldest) = table
                .iter()
                .min_by_key(|(_, f)| f.last)
                .map(|(k, _)| k.clone())
        {
            table.remove(&oldest);
        }
    }
    let f = table.entry(key.clone()).or_insert(Failures {
        count: 0,
        last: now,
        until: None,
    });
    if f.forgotten(now) {
        f.count = 0;
    }
    f.count = f.count.saturating_add(1);
    f.last = now;
    if f.count > free {
        let doublings = (f.count - free - 1).min(20);
        let backoff = Duration::from_secs(1u64 << doublings).min(max);
        f.until = Some(now + backoff);
    }
}

impl Throttle {
    /// Counters under `policy`.
    pub(crate) fn new(policy: AuthBackoff) -> Throttle {
        Throttle {
            policy,
            counters: Mutex::new(Counters::default()),
        }
    }

    fn key(client: &str, peer: Option<IpAddr>) -> Pair {
        let peer = peer.map(crate::admission::address_key);
        (crate::util::cut(client, MAX_CLIENT_ID), peer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Err` with the time left when `client` at `peer`, or `peer`, is backing off; the
    /// refused attempt counts as a failure (a client that keeps trying in its back-off
    /// lengthens it).
    pub(crate) fn check(&self, client: &str, peer: Option<IpAddr>) -> Result<(), Duration> {
        if self.policy.max.is_zero() {
            return Ok(());
        }
        let now = Instant::now();
        let key = Self::key(client, peer);
        let peer = key.1;
        let mut counters = self.lock();
        let backing_off = !remaining(&counters.pairs, &key, now).is_zero()
            || !remaining(&counters.peers, &peer, now).is_zero();
        if !backing_off {
            return Ok(());
        }
        self.count(&mut counters, &key, peer, now);
        Err(remaining(&counters.pairs, &key, now).max(remaining(&counters.peers, &peer, now)))
    }

    fn count(&self, counters: &mut Counters, key: &Pair, peer: Option<IpAddr>, now: Instant) {
        let max = self.policy.max;
        count(
            &mut counters.pairs,
            key,
            self.policy.free_failures,
            max,
            now,
        );
        if self.policy.free_failures_per_peer > 0 {
            count(
                &mut counters.peers,
                &peer,
                self.policy.free_failures_per_peer,
                max,
                now,
            );
        }
    }

    /// Counts a failed authentication of `client` at `peer`.
    pub(crate) fn failed(&self, client: &str, peer: Option<IpAddr>) {
        if self.policy.max.is_zero() {
            return;
        }
        let now = Instant::now();
        let key = Self::key(client, peer);
        let mut counters = self.lock();
        self.count(&mut counters, &key, key.1, now);
    }

    /// Forgets the failures of `client` at `peer` after it authenticated.
    pub(crate) fn succeeded(&self, client: &str, peer: Option<IpAddr>) {
        self.lock().pairs.remove(&Self::key(client, peer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn a_pair_backs_off_after_its_free_failures_and_others_do_not() {
        let t = Throttle::new(AuthBackoff {
            max: Duration::from_secs(60),
            free_failures: 3,
            free_failures_per_peer: 0,
        });
        let attacker = ip("192.0.2.1");
        for _ in 0..3 {
            assert!(t.check("c1", attacker).is_ok());
            t.failed("c1", attacker);
        }
        assert!(t.check("c1", attacker).is_ok());
        t.failed("c1", attacker);
        let left = t.check("c1", attacker).unwrap_err();
        // The refused attempt counted: the second step of the back-off, 2 s.
        assert!(left > Duration::from_secs(1), "{left:?}");
        assert!(left <= Duration::from_secs(2), "{left:?}");
        // The same client from its own address, and another client from the attacker's.
        assert!(t.check("c1", ip("192.0.2.2")).is_ok());
        assert!(t.check("c2", attacker).is_ok());
        // Each further failure doubles the back-off, up to the maximum.
        for _ in 0..20 {
            t.failed("c1", attacker);
        }
        let left = t.check("c1", attacker).unwrap_err();
        assert!(left > Duration::from_secs(30), "{left:?}");
        assert!(left <= Duration::from_secs(60), "{left:?}");
        t.succeeded("c1", attacker);
        assert!(t.check("c1", attacker).is_ok());
    }

    #[test]
    fn an_address_that_tries_many_client_ids_backs_off() {
        let t = Throttle::new(AuthBackoff {
            max: Duration::from_secs(60),
            free_failures: 3,
            free_failures_per_peer: 10,
        });
        let attacker = ip("192.0.2.1");
        for i in 0..11 {
            t.failed(&format!("guess-{i}"), attacker);
        }
        assert!(t.check("never-tried", attacker).is_err());
        assert!(t.check("never-tried", ip("192.0.2.2")).is_ok());
    }

    #[test]
    fn memory_stays_bounded_and_no_back_off_when_off() {
        let t = Throttle::new(AuthBackoff::default());
        for i in 0..(MAX_ENTRIES + 50) {
            t.failed(&format!("c{i}"), ip("192.0.2.1"));
        }
        assert!(t.lock().pairs.len() <= MAX_ENTRIES);
        let off = Throttle::new(AuthBackoff {
            max: Duration::ZERO,
            ..AuthBackoff::default()
        });
        for _ in 0..100 {
            off.failed("c1", None);
        }
        assert!(off.check("c1", None).is_ok());
    }
}
