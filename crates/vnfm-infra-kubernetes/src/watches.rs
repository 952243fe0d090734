//! Watches shared by every step on one cluster: one list/watch stream per cluster (VIM
//! endpoint and credentials), kind and label key, feeding a cache (kube-rs'
//! [`reflector`](kube::runtime::reflector())) that every waiting step and the infrastructure
//! watch read. Fifty operations waiting for their Deployments at once hold one Deployment
//! watch, not fifty; the periodic look at a thousand instances' pods reads the same cache.
//!
//! A namespaced kind is watched in all namespaces; when the credentials may not list it
//! cluster-wide (`403`), in each namespace a step waits in, still shared by the steps there.
//! A watch nobody has used for [`LINGER`] ends, so an idle driver holds no stream.
//!
//! A cache may lag behind the server. The waits in [`crate::ready`] therefore trust an object
//! only at or after the resourceVersion of the step's own write of it, and an absence only
//! once the watch has passed the resourceVersion of the step's delete (or a read confirms it).
//! Versions are ordered as Kubernetes 1.35+ allows ([`compare_versions`]); where they cannot
//! be (another API server's opaque versions), a read of the object decides instead.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use crate::cluster::Kind;

/// How long a watch nobody uses is kept (longer than the infrastructure watch's period, so
/// its look at every instance reuses the cache).
pub const LINGER: Duration = Duration::from_secs(90);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What is watched: a kind, all namespaces (`None`) or one, and objects that have a label key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    label: String,
}

/// The shared watches of one cluster (one client, one set of credentials).
pub struct Watches {
    client: kube::Client,
    /// A task that never ends on its own: finished once the runtime the client and the
    /// streams run on has shut down.
    sentinel: tokio::task::AbortHandle,
    entries: Mutex<HashMap<Key, Arc<Shared>>>,
    /// Kinds the credentials may not watch in all namespaces: `(apiVersion, kind)`.
    namespace_only: Mutex<HashSet<(String, String)>>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        self.sentinel.abort();
    }
}

impl std::fmt::Debug for Watches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watches")
            .field("watches", &lock(&self.entries).len())
            .finish_non_exhaustive()
    }
}

/// The state of one watch besides its cache.
#[derive(Debug, Default)]
struct Status {
    /// The first initial list is done (the cache holds what the server had).
    synced: bool,
    /// The highest resourceVersion the cache has taken in (comparable versions only:
    /// [`compare_versions`]).
    watermark: Option<String>,
    /// The last error, and whether it ends the watch (401, 403, 404).
    error: Option<(String, bool)>,
    /// Leases held; when none, since when.
    leases: usize,
    idle_since: Option<Instant>,
    /// The watch has ended: a new lease starts a new one.
    closed: bool,
}

struct Shared {
    key: Key,
    resource: ApiResource,
    store: Store<DynamicObject>,
    status: Mutex<Status>,
    changes: watch::Sender<u64>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(t) = lock(&self.task).take() {
            t.abort();
        }
    }
}

/// How resourceVersion `a` compares with `b`, both of objects of one resource; `None` when
/// either is not comparable.
///
/// The API conventions long called a resourceVersion opaque (equality only). Since Kubernetes
/// 1.35 (KEP-5504, Comparable Resource Versions, GA) the versions an API server gives the
/// objects of one resource are positive integers, of any length and without leading zeros,
/// that grow with every write; clients may order them (client-go's
/// `resourceversion.CompareResourceVersion`, which this follows: shorter is smaller, equal
/// lengths compare digit by digit). The waits need an order — "has the cache caught up with
/// this step's write?" — and only use it when both versions have that form: an older or
/// aggregated API server with other versions gets `None`, and the waits then read the object
/// from the server instead of trusting the cache ([`crate::ready`]).
pub fn compare_versions(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let comparable =
        |v: &str| !v.is_empty() && !v.starts_with('0') && v.bytes().all(|c| c.is_ascii_digit());
    if !comparable(a) || !comparable(b) {
        return None;
    }
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// The later of two comparable resourceVersions (`seen` kept when `v` is not comparable).
fn later(seen: Option<String>, v: Option<&str>) -> Option<String> {
    match (seen, v) {
        (None, Some(v)) if compare_versions(v, v).is_some() => Some(v.to_string()),
        (Some(s), Some(v)) if compare_versions(v, &s) == Some(std::cmp::Ordering::Greater) => {
            Some(v.to_string())
        }
        (seen, _) => seen,
    }
}

/// `(message, fatal)` of a watcher error: 401, 403 and 404 end a watch, the rest are retried.
pub fn watch_error(e: &watcher::Error) -> (String, bool) {
    let fatal_code = |c: u16| matches!(c, 401 | 403 | 404);
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => {
            (format!("{} {}", s.code, s.message), fatal_code(s.code))
        }
        watcher::Error::WatchError(s) => (format!("{} {}", s.code, s.message), fatal_code(s.code)),
        other => (other.to_string(), false),
    }
}

impl Watches {
    /// The watches of the cluster `client` reaches. Must be called within the Tokio runtime
    /// the client was made in.
    pub fn new(client: kube::Client) -> Watches {
        Watches {
            client,
            sentinel: tokio::spawn(std::future::pending::<()>()).abort_handle(),
            entries: Mutex::new(HashMap::new()),
            namespace_only: Mutex::new(HashSet::new()),
        }
    }

    /// Whether the runtime these watches (and their client) run on has shut down: a driver
    /// used from another runtime then needs new ones.
    pub fn runtime_gone(&self) -> bool {
        self.sentinel.is_finished()
    }

    /// The client the watches use (steps on the same cluster share its connections).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The number of watch streams open now (for tests and benchmarks).
    pub fn open_streams(&self) -> usize {
        lock(&self.entries)
            .values()
            .filter(|s| !lock(&s.status).closed)
            .count()
    }

    /// A lease on the watch of `kind` objects that carry `label`, in all namespaces when the
    /// credentials allow it, else in `namespace`.
    pub fn lease(&self, kind: &Kind, namespace: Option<&str>, label: &str) -> Lease {
        let api_version = kind.resource.api_version.clone();
        let name = kind.resource.kind.clone();
        let scoped = kind.namespaced
            && lock(&self.namespace_only).contains(&(api_version.clone(), name.clone()));
        let key = Key {
            api_version,
            kind: name,
            namespace: if scoped {
                namespace.map(String::from)
            } else {
                None
            },
            label: label.to_string(),
        };
        let mut entries = lock(&self.entries);
        if let Some(s) = entries.get(&key) {
            let mut st = lock(&s.status);
            if !st.closed {
                st.leases += 1;
                st.idle_since = None;
                drop(st);
                return Lease {
                    shared: s.clone(),
                    fell_back: false,
                };
            }
        }
        let shared = self.start(key.clone(), kind);
        entries.insert(key, shared.clone());
        Lease {
            shared,
            fell_back: false,
        }
    }

    /// After `lease`'s cluster-wide watch was refused (403): the same kind watched in
    /// `namespace` from now on.
    pub fn narrow(&self, lease: &Lease, kind: &Kind, namespace: &str) -> Option<Lease> {
        let k = &lease.shared.key;
        if k.namespace.is_some() || !kind.namespaced {
            return None;
        }
        lock(&self.namespace_only).insert((k.api_version.clone(), k.kind.clone()));
        let mut l = self.lease(kind, Some(namespace), &k.label);
        l.fell_back = true;
        Some(l)
    }

    fn start(&self, key: Key, kind: &Kind) -> Arc<Shared> {
        let api: Api<DynamicObject> = match &key.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            None => Api::all_with(self.client.clone(), &kind.resource),
        };
        let writer = reflector::store::Writer::new(kind.resource.clone());
        let store = writer.as_reader();
        let (changes, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            key: key.clone(),
            resource: kind.resource.clone(),
            store,
            status: Mutex::new(Status {
                leases: 1,
                ..Status::default()
            }),
            changes,
            task: Mutex::new(None),
        });
        let config = watcher::Config::default().labels(&key.label);
        let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
        let weak = Arc::downgrade(&shared);
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            // The highest resourceVersion of a relist, taken in when it is swapped in.
            let mut listing: Option<String> = None;
            let mut idle = tokio::time::interval(LINGER / 4);
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    _ = idle.tick() => {
                        let Some(s) = weak.upgrade() else { return };
                        let mut st = lock(&s.status);
                        if st.leases == 0 && st.idle_since.is_some_and(|t| t.elapsed() >= LINGER) {
                            st.closed = true;
                            return;
                        }
                        continue;
                    }
                };
                let Some(s) = weak.upgrade() else { return };
                let mut st = lock(&s.status);
                match item {
                    None => {
                        st.closed = true;
                        st.error
                            .get_or_insert_with(|| ("the watch ended".into(), true));
                    }
                    Some(Ok(ev)) => {
                        let rv = |o: &DynamicObject| o.metadata.resource_version.clone();
                        match &ev {
                            watcher::Event::Init => listing = None,
                            watcher::Event::InitApply(o) => {
                                listing = later(listing.take(), rv(o).as_deref());
                            }
                            watcher::Event::InitDone => {
                                st.synced = true;
                                st.watermark = later(st.watermark.take(), listing.as_deref());
                            }
                            watcher::Event::Apply(o) | watcher::Event::Delete(o) => {
                                st.watermark = later(st.watermark.take(), rv(o).as_deref());
                            }
                        }
                    }
                    Some(Err(e)) => {
                        let (text, fatal) = watch_error(&e);
                        st.error = Some((text, fatal));
                        if fatal {
                            st.closed = true;
                        }
                    }
                }
                let closed = st.closed;
                drop(st);
                s.changes.send_modify(|n| *n += 1);
                if closed {
                    return;
                }
            }
        });
        *lock(&shared.task) = Some(task.abort_handle());
        shared
    }
}

/// A step's hold on a shared watch: while any lease is held the watch runs.
pub struct Lease {
    shared: Arc<Shared>,
    fell_back: bool,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.shared.key)
            .finish_non_exhaustive()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut st = lock(&self.shared.status);
        st.leases = st.leases.saturating_sub(1);
        if st.leases == 0 {
            st.idle_since = Some(Instant::now());
        }
    }
}

impl Lease {
    /// The cached object `name` (in `namespace` for a namespaced kind), once the first list is
    /// done.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>> {
        let mut key = ObjectRef::new_with(name, self.shared.resource.clone());
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        self.shared.store.get(&key)
    }

    /// Every cached object matching `keep`.
    pub fn filter(&self, keep: impl Fn(&DynamicObject) -> bool) -> Vec<Arc<DynamicObject>> {
        self.shared.store.state_filter(|o| keep(o))
    }

    /// Whether the first list is done.
    pub fn synced(&self) -> bool {
        lock(&self.shared.status).synced
    }

    /// The highest comparable resourceVersion the cache has taken in ([`compare_versions`]).
    pub fn watermark(&self) -> Option<String> {
        lock(&self.shared.status).watermark.clone()
    }

    /// Whether the cache has taken in the change at resourceVersion `version`: `None` when
    /// the versions cannot be compared ([`compare_versions`]), so only a read can tell.
    pub fn passed(&self, version: &str) -> Option<bool> {
        let seen = self.watermark()?;
        compare_versions(&seen, version).map(|o| o != std::cmp::Ordering::Less)
    }

    /// The last error of the watch and whether it ended it.
    pub fn error(&self) -> Option<(String, bool)> {
        lock(&self.shared.status).error.clone()
    }

    /// Whether the watch is of one namespace because the cluster-wide one was refused.
    pub fn narrowed(&self) -> bool {
        self.fell_back
    }

    /// Whether this lease watches all namespaces.
    pub fn cluster_wide(&self) -> bool {
        self.shared.key.namespace.is_none()
    }

    /// Notified after every change of the cache or the watch's state.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// Waits until the first list is done or the watch failed for good.
    pub async fn until_synced(&self) -> Result<(), (String, bool)> {
        let mut rx = self.changes();
        loop {
            if self.synced() {
                return Ok(());
            }
            if let Some((e, true)) = self.error() {
                return Err((e, true));
            }
            if rx.changed().await.is_err() {
                return Err(("the watch ended".into(), true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn resource_versions_compare_as_integers_of_any_length() {
        assert_eq!(compare_versions("9", "10"), Some(Less));
        assert_eq!(compare_versions("123", "123"), Some(Equal));
        assert_eq!(compare_versions("124", "123"), Some(Greater));
        // Longer than a u64: still ordered (the form does not limit the length).
        assert_eq!(
            compare_versions("100000000000000000000000", "99999999999999999999999"),
            Some(Greater)
        );
    }

    #[test]
    fn other_resource_versions_are_not_ordered() {
        // An opaque version (an aggregated API server's, an older server's), a leading zero,
        // zero, a sign, empty: only equality would mean anything.
        for (a, b) in [
            ("abc", "123"),
            ("123", "MTIz"),
            ("0123", "124"),
            ("0", "1"),
            ("-5", "4"),
            ("", "1"),
            ("12a", "12"),
        ] {
            assert_eq!(compare_versions(a, b), None, "{a} vs {b}");
        }
    }

    #[test]
    fn the_watermark_only_takes_comparable_versions_and_only_grows() {
        let w = later(None, Some("opaque"));
        assert_eq!(w, None);
        let w = later(w, Some("17"));
        assert_eq!(w.as_deref(), Some("17"));
        let w = later(w, Some("9"));
        assert_eq!(w.as_deref(), Some("17"));
        let w = later(w, Some("x1"));
        assert_eq!(w.as_deref(), Some("17"));
        let w = later(w, Some("170"));
        assert_eq!(w.as_deref(), Some("170"));
    }
}
