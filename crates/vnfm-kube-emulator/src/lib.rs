//! A Kubernetes API server emulation for tests: the real REST paths and bodies over HTTP on
//! loopback, plus a tiny controller that makes workloads progress the way a cluster does.
//!
//! No kube-apiserver can be installed where the tests run, so drivers are tested against this
//! instead. It speaks what a client such as kube-rs relies on:
//!
//! - discovery (`/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`, `/version`);
//! - namespaced and cluster-scoped get, list, create, update (with resourceVersion checks),
//!   merge patch, server-side apply (`application/apply-patch+yaml` with a field manager,
//!   field ownership in `managedFields`, `409 Conflict` unless forced), delete with
//!   propagation policies and grace periods, deletecollection, the `status` subresource;
//! - list + watch with resourceVersion (events streamed as they happen, `410 Expired` for a
//!   resourceVersion that is too old), label and field selectors;
//! - `Status` error bodies (`404 NotFound`, `409 AlreadyExists`/`Conflict`, `401 Unauthorized`);
//! - bearer-token and basic authentication;
//! - custom resources once their `CustomResourceDefinition` is established.
//!
//! The controller creates ReplicaSets for Deployments, pods for ReplicaSets, StatefulSets (with
//! PVCs from `volumeClaimTemplates`), DaemonSets (one pod per node) and Jobs; pods become
//! Running and Ready after [`EmulatorConfig::ready_delay`]; Jobs complete; PVCs bind (to a
//! matching PersistentVolume when there is one) and claims and volumes in use are protected by
//! their finalizers; CRDs become Established; Services get EndpointSlices; namespaces are
//! emptied when deleted; owner references are garbage-collected.
//!
//! What it does like a real API server and what it still does not is listed in the crate's
//! `FIDELITY.md`. Tests make objects never become ready
//! ([`Emulator::never_ready`], [`Emulator::fail_image`]), inject the faults a real server
//! cannot be made to produce on demand ([`Emulator::fail_next`]: a `500` or `503` in the
//! middle of an apply; [`Emulator::expire_watches`]: watches that end with `410 Gone`;
//! [`Emulator::hold_next`]: requests and watches that get no answer) and
//! read the request log ([`Emulator::log`]) to assert ordering.
//!
//! ```no_run
//! # async fn demo() -> Result<(), vnfm_kube_emulator::EmulatorError> {
//! use vnfm_kube_emulator::{Emulator, EmulatorConfig};
//! let emu = Emulator::start(EmulatorConfig::default()).await?;
//! println!("API server at {} (token {})", emu.url(), emu.token());
//! # Ok(()) }
//! ```

mod controller;
mod registry;
mod server;
mod store;
mod tls;
mod util;
mod volumes;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, watch};

pub use registry::ResourceType;
use store::{Change, Store, WriteError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding a lock must not hide the state from the others.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What can go wrong when starting the emulator.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// No loopback port could be bound.
    #[error("cannot listen on 127.0.0.1 for the emulated API server: {0}")]
    Bind(#[source] std::io::Error),
    /// The TLS certificate chain or key of [`Emulator::start_tls`] is not readable PEM.
    #[error("the emulator's TLS identity is unusable: {what}: {source}")]
    TlsPem {
        /// `certificate chain` or `private key`.
        what: &'static str,
        /// The PEM reader's error.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The TLS certificate chain of [`Emulator::start_tls`] holds no certificate.
    #[error("the emulator's TLS identity is unusable: certificate chain: no certificate")]
    TlsNoCertificate,
    /// rustls refused the TLS identity of [`Emulator::start_tls`].
    #[error("the emulator's TLS identity is unusable: {what}: {source}")]
    TlsConfig {
        /// `protocol versions` or `certificate and key`.
        what: &'static str,
        /// rustls's error.
        #[source]
        source: rustls::Error,
    },
    /// A `labelSelector` set (`key in (a,b)`) is not a parenthesised list.
    #[error("invalid set in label selector: {set}")]
    LabelSelectorSet {
        /// The set as written.
        set: String,
    },
    /// An object given to [`Emulator::put_object`] was refused.
    #[error("the emulator refused the object: {0}")]
    Refused(String),
}

/// A node of the emulated cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Node name.
    pub name: String,
    /// `status.nodeInfo.kernelVersion`.
    pub kernel_version: String,
    /// Node labels.
    pub labels: Vec<(String, String)>,
}

/// How the emulator behaves.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Accepted bearer tokens.
    pub tokens: Vec<String>,
    /// Accepted basic-auth user/password pairs.
    pub basic: Vec<(String, String)>,
    /// Accept requests without credentials.
    pub anonymous: bool,
    /// The cluster's nodes.
    pub nodes: Vec<NodeSpec>,
    /// How long a pod takes to become Running and Ready (and a PVC to bind).
    pub ready_delay: Duration,
    /// How long a Job's pod runs before it succeeds.
    pub job_pod_duration: Duration,
    /// How long a deleted pod stays Terminating (unless deleted with grace period 0).
    pub termination_delay: Duration,
    /// How often the controller looks at the cluster when nothing is written.
    pub tick: Duration,
}

/// The bearer token [`EmulatorConfig::default`] accepts.
pub const DEFAULT_TOKEN: &str = "emulator-token";

impl Default for EmulatorConfig {
    fn default() -> Self {
        let node = |name: &str, zone: &str| NodeSpec {
            name: name.into(),
            kernel_version: "5.15.0-91-generic".into(),
            labels: vec![
                ("kubernetes.io/hostname".into(), name.into()),
                ("topology.kubernetes.io/zone".into(), zone.into()),
            ],
        };
        EmulatorConfig {
            tokens: vec![DEFAULT_TOKEN.into()],
            basic: vec![("admin".into(), "admin-password".into())],
            anonymous: false,
            nodes: vec![node("node-1", "zone-a"), node("node-2", "zone-b")],
            ready_delay: Duration::from_millis(30),
            job_pod_duration: Duration::from_millis(30),
            termination_delay: Duration::from_millis(20),
            tick: Duration::from_millis(10),
        }
    }
}

/// One request the emulator answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// HTTP method.
    pub method: String,
    /// `get`, `list`, `watch`, `create`, `apply`, `patch`, `update`, `delete`,
    /// `deletecollection`, `discovery`, `unauthorized` or `unknown`.
    pub verb: String,
    /// Request path.
    pub path: String,
    /// `apiVersion` of the resource (empty for discovery).
    pub api_version: String,
    /// Kind of the resource (empty for discovery).
    pub kind: String,
    /// Namespace in the path.
    pub namespace: Option<String>,
    /// Object name (from the path, or the body of a create).
    pub name: Option<String>,
    /// Subresource (`status`).
    pub subresource: Option<String>,
    /// `fieldManager` query parameter.
    pub field_manager: Option<String>,
    /// HTTP status code of the answer.
    pub code: u16,
}

/// One watch event the emulator emitted: what every open watch on the object's resource
/// received, and when.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub event_type: String,
    /// The resourceVersion of the change.
    pub resource_version: u64,
    /// The object after the change (the last state, for `DELETED`).
    pub object: Value,
    /// When the event was handed to the watches (the status write that made an object ready
    /// is published at this instant); `None` for a change not published yet.
    pub published: Option<Instant>,
}

impl LogEntry {
    /// `Kind/name` or `Kind/namespace/name`.
    pub fn object(&self) -> String {
        match (&self.namespace, &self.name) {
            (Some(ns), Some(n)) => format!("{}/{ns}/{n}", self.kind),
            (None, Some(n)) => format!("{}/{n}", self.kind),
            (_, None) => self.kind.clone(),
        }
    }
}

pub(crate) struct Auth {
    pub anonymous: bool,
    pub tokens: Vec<String>,
    pub basic: Vec<(String, String)>,
}

/// Test hooks that change how the controller treats objects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hooks {
    /// `(kind, name)` of objects that never become ready (pods below them stay unready).
    pub never_ready: BTreeSet<(String, String)>,
    /// Container images whose pods never start (ImagePullBackOff).
    pub failing_images: BTreeSet<String>,
    /// uids of running pods whose containers crash over and over.
    pub crash_looping: BTreeSet<String>,
    /// Requests answered with an error instead of being served.
    pub faults: Vec<Fault>,
    /// Requests held without an answer until [`Emulator::release_held`]: `(verb, kind, times)`.
    pub holds: Vec<(String, String, u32)>,
}

/// A fault injected with [`Emulator::fail_next`]: the next `times` requests with `verb` on
/// `kind` are answered with `code` and nothing is done.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub verb: String,
    pub kind: String,
    pub code: u16,
    pub times: u32,
}

pub(crate) struct Shared {
    store: Mutex<Store>,
    tx: broadcast::Sender<Arc<Change>>,
    wake: Notify,
    auth: Mutex<Auth>,
    hooks: Mutex<Hooks>,
    log: Mutex<Vec<LogEntry>>,
    stop: watch::Sender<bool>,
    /// Bumped by [`Emulator::expire_watches`]: every open watch answers `410 Gone` and ends.
    expire: watch::Sender<u64>,
    /// Bumped by [`Emulator::release_held`]: held requests are served.
    release: watch::Sender<u64>,
    config: EmulatorConfig,
}

impl Shared {
    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    pub(crate) fn auth(&self) -> MutexGuard<'_, Auth> {
        lock(&self.auth)
    }

    /// Runs a write and publishes its changes to watchers before the lock is released.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        let mut store = self.store();
        let result = f(&mut store);
        let changed = !store.pending.is_empty();
        for c in store.pending.drain(..) {
            // Stamped right before the watches get it: the instant a watch event is emitted.
            let _ = c.published.set(std::time::Instant::now());
            // No receiver is fine: nobody is watching.
            let _ = self.tx.send(c);
        }
        drop(store);
        if changed {
            self.wake.notify_one();
        }
        result
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    pub(crate) fn stopped(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub(crate) fn expired(&self) -> watch::Receiver<u64> {
        self.expire.subscribe()
    }

    /// The code of an injected fault for a request with `verb` on `kind`, used up by it.
    pub(crate) fn take_fault(&self, verb: &str, kind: &str) -> Option<u16> {
        let mut hooks = lock(&self.hooks);
        let f = hooks
            .faults
            .iter_mut()
            .find(|f| f.times > 0 && f.verb == verb && f.kind == kind)?;
        f.times -= 1;
        Some(f.code)
    }

    /// Whether a request with `verb` on `kind` is to be held ([`Emulator::hold_next`]),
    /// used up by it.
    pub(crate) fn take_hold(&self, verb: &str, kind: &str) -> bool {
        let mut hooks = lock(&self.hooks);
        let Some(h) = hooks
            .holds
            .iter_mut()
            .find(|(v, k, times)| *times > 0 && v == verb && k == kind)
        else {
            return false;
        };
        h.2 -= 1;
        true
    }

    /// Waits until [`Emulator::release_held`] is called or the server stops.
    pub(crate) async fn held(&self) {
        let mut release = self.release.subscribe();
        let mut stop = self.stop.subscribe();
        tokio::select! {
            _ = release.changed() => {}
            _ = stop.changed() => {}
        }
    }

    pub(crate) fn push_log(&self, e: LogEntry) {
        lock(&self.log).push(e);
    }
}

/// A running emulated API server. Dropping it stops the server, the controller and every
/// open watch.
pub struct Emulator {
    addr: SocketAddr,
    scheme: &'static str,
    shared: Arc<Shared>,
}

/// The server certificate of [`Emulator::start_tls`], PEM.
#[derive(Clone)]
pub struct TlsIdentity {
    /// The certificate chain, server certificate first.
    pub cert_chain_pem: String,
    /// Its private key.
    pub key_pem: String,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity(..)")
    }
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Emulator {
    /// Starts the server on a free loopback port and the controller, with the nodes of
    /// `config` registered.
    pub async fn start(config: EmulatorConfig) -> Result<Emulator, EmulatorError> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), config).await
    }

    /// [`Emulator::start`] on the given address (port 0: a free one).
    pub async fn start_on(
        listen: SocketAddr,
        config: EmulatorConfig,
    ) -> Result<Emulator, EmulatorError> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(EmulatorError::Bind)?;
        let addr = listener.local_addr().map_err(EmulatorError::Bind)?;
        // As a real API server does: small writes (one watch event) leave at once instead of
        // waiting for the client's delayed acknowledgement of the previous one.
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        Ok(Self::serve(listener, addr, "http", config))
    }

    /// [`Emulator::start_on`], serving HTTPS with `identity` (as a real API server does: a
    /// client must trust the certificate's issuer).
    pub async fn start_tls(
        listen: SocketAddr,
        config: EmulatorConfig,
        identity: &TlsIdentity,
    ) -> Result<Emulator, EmulatorError> {
        let acceptor = tls::acceptor(identity)?;
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(EmulatorError::Bind)?;
        let addr = tcp.local_addr().map_err(EmulatorError::Bind)?;
        Ok(Self::serve(
            tls::TlsListener::start(tcp, acceptor, addr),
            addr,
            "https",
            config,
        ))
    }

    fn serve<L>(
        listener: L,
        addr: SocketAddr,
        scheme: &'static str,
        config: EmulatorConfig,
    ) -> Emulator
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let (tx, _) = broadcast::channel(65_536);
        let (stop, _) = watch::channel(false);
        let (expire, _) = watch::channel(0);
        let (release, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new()),
            tx,
            wake: Notify::new(),
            auth: Mutex::new(Auth {
                anonymous: config.anonymous,
                tokens: config.tokens.clone(),
                basic: config.basic.clone(),
            }),
            hooks: Mutex::new(Hooks::default()),
            log: Mutex::new(Vec::new()),
            stop,
            expire,
            release,
            config,
        });
        controller::register_nodes(&shared);
        let app = axum::Router::new()
            .fallback(server::handle)
            .with_state(shared.clone());
        let mut stopped = shared.stopped();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.changed().await;
                })
                .await;
        });
        tokio::spawn(controller::run(shared.clone()));
        Emulator {
            addr,
            scheme,
            shared,
        }
    }

    /// `http://127.0.0.1:<port>` (`https://` when started with TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// The first accepted bearer token.
    pub fn token(&self) -> String {
        self.shared
            .auth()
            .tokens
            .first()
            .cloned()
            .unwrap_or_default()
    }

    /// Stops accepting `token` (as when it expires).
    pub fn revoke_token(&self, token: &str) {
        self.shared.auth().tokens.retain(|t| t != token);
    }

    /// Accepts `token` from now on.
    pub fn add_token(&self, token: &str) {
        self.shared.auth().tokens.push(token.to_string());
    }

    /// Every request answered so far, in order.
    pub fn log(&self) -> Vec<LogEntry> {
        lock(&self.shared.log).clone()
    }

    /// Forgets the requests logged so far.
    pub fn clear_log(&self) {
        lock(&self.shared.log).clear();
    }

    /// The `Kind/namespace/name` of each successful request with `verb`, in order.
    pub fn objects_with_verb(&self, verb: &str) -> Vec<String> {
        self.log()
            .iter()
            .filter(|e| e.verb == verb && e.code < 300)
            .map(LogEntry::object)
            .collect()
    }

    /// Answers the next `times` requests with `verb` (`get`, `list`, `watch`, `create`,
    /// `update`, `patch` (server-side apply included), `delete`) on objects of `kind` with the
    /// HTTP status `code` (a `Status` body, reason `InternalError` for 500,
    /// `ServiceUnavailable` for 503) without doing anything: what a real API server answers
    /// when etcd or a webhook fails, which no test can make it do on demand. For `watch`, the
    /// answer is a `200` stream whose only event is an `ERROR` with `code` (`410`: the
    /// resourceVersion is too old, the client must list again).
    pub fn fail_next(&self, verb: &str, kind: &str, code: u16, times: u32) {
        lock(&self.shared.hooks).faults.push(Fault {
            verb: verb.to_string(),
            kind: kind.to_string(),
            code,
            times,
        });
    }

    /// Holds the next `times` requests with `verb` (as for [`Emulator::fail_next`]; `watch`
    /// for a watch, `list` for the list a watch starts with) on objects of `kind` without
    /// answering (no status line, not a byte) until [`Emulator::release_held`]: a server whose
    /// storage stalls, or a connection a middlebox black-holes, which no test can make a real
    /// API server do for one chosen request. The connection stays open while the client
    /// waits; a client that gives up closes it, and the request is dropped with it (it takes
    /// no effect). Once released, a held request whose client still waits is served as usual.
    pub fn hold_next(&self, verb: &str, kind: &str, times: u32) {
        lock(&self.shared.hooks)
            .holds
            .push((verb.to_string(), kind.to_string(), times));
    }

    /// Serves the requests [`Emulator::hold_next`] holds, and holds no more.
    pub fn release_held(&self) {
        lock(&self.shared.hooks).holds.clear();
        self.shared.release.send_modify(|n| *n += 1);
    }

    /// Ends every open watch with an `ERROR` event `410 Gone` (`Expired`), as a real server
    /// does when a watch falls behind its history: clients must list again and watch from
    /// there.
    pub fn expire_watches(&self) {
        self.shared.expire.send_modify(|n| *n += 1);
    }

    /// Makes the object `kind`/`name` (in any namespace) never become ready: pods it owns
    /// (directly or through a ReplicaSet) stay unready, a PVC stays Pending, a Job never
    /// completes, a CRD is never Established.
    pub fn never_ready(&self, kind: &str, name: &str) {
        lock(&self.shared.hooks)
            .never_ready
            .insert((kind.to_string(), name.to_string()));
        self.shared.wake.notify_one();
    }

    /// Lets an object blocked by [`Emulator::never_ready`] progress again.
    pub fn allow_ready(&self, kind: &str, name: &str) {
        lock(&self.shared.hooks)
            .never_ready
            .remove(&(kind.to_string(), name.to_string()));
        self.shared.wake.notify_one();
    }

    /// Makes pods using container image `image` never start (their containers wait in
    /// `ImagePullBackOff`).
    pub fn fail_image(&self, image: &str) {
        lock(&self.shared.hooks)
            .failing_images
            .insert(image.to_string());
        self.shared.wake.notify_one();
    }

    /// Makes the containers of running pod `namespace`/`name` crash over and over, as the
    /// kubelet reports it: the pod stays `Running`, `Ready` turns `False`, each container
    /// waits in `CrashLoopBackOff` after exiting with an error, its restart count rising.
    /// The pod's replacement (a new pod, even of the same name) runs normally.
    /// `false` when there is no such pod.
    pub fn crash_loop(&self, namespace: &str, name: &str) -> bool {
        let Some(uid) = self
            .object("v1", "Pod", Some(namespace), name)
            .and_then(|p| p.pointer("/metadata/uid")?.as_str().map(String::from))
        else {
            return false;
        };
        lock(&self.shared.hooks).crash_looping.insert(uid);
        self.shared.wake.notify_one();
        true
    }

    /// The stored object of `kind` at `api_version` named `name` in `namespace` (`None` for a
    /// cluster-scoped kind).
    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let store = self.shared.store();
        let rt = store.registry.by_kind(api_version, kind)?.clone();
        let ns = if rt.namespaced {
            namespace.unwrap_or("default")
        } else {
            ""
        };
        store.get(&rt.storage_key(), ns, name).cloned()
    }

    /// Every stored object of `kind` at `api_version` (all namespaces).
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let store = self.shared.store();
        store
            .registry
            .by_kind(api_version, kind)
            .map(|rt| store.list(&rt.storage_key(), None))
            .unwrap_or_default()
    }

    /// The watch events of `kind` at `api_version`, oldest first, restricted to `namespace`
    /// and `name` when given: the emulator keeps the last 50 000 changes of the cluster (what
    /// a watch resuming from an old resourceVersion replays). Tests read when an object became
    /// ready, or every state a shared object went through.
    pub fn events(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Vec<WatchEvent> {
        let store = self.shared.store();
        let Some(key) = store
            .registry
            .by_kind(api_version, kind)
            .map(ResourceType::storage_key)
        else {
            return Vec::new();
        };
        let field = |o: &Value, f: &str| {
            o.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .map(String::from)
        };
        store
            .history()
            .filter(|c| c.key == key)
            .filter(|c| {
                namespace.is_none_or(|n| field(&c.object, "namespace").as_deref() == Some(n))
            })
            .filter(|c| name.is_none_or(|n| field(&c.object, "name").as_deref() == Some(n)))
            .map(|c| WatchEvent {
                event_type: c.kind.to_string(),
                resource_version: c.rv,
                object: c.object.clone(),
                published: c.published.get().copied(),
            })
            .collect()
    }

    /// Every stored object carrying label `key=value`, as `Kind/namespace/name`.
    pub fn labelled(&self, key: &str, value: &str) -> Vec<String> {
        let store = self.shared.store();
        store
            .all()
            .into_iter()
            .filter(|(_, o)| {
                o.pointer("/metadata/labels").and_then(|l| l.get(key)) == Some(&json!(value))
            })
            .map(|(_, o)| {
                let kind = o["kind"].as_str().unwrap_or("").to_string();
                let name = o
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match o.pointer("/metadata/namespace").and_then(Value::as_str) {
                    Some(ns) => format!("{kind}/{ns}/{name}"),
                    None => format!("{kind}/{name}"),
                }
            })
            .collect()
    }

    /// Stores `obj` as if another client had created it (for name-collision tests and
    /// pre-existing cluster state).
    pub fn put_object(&self, obj: Value) -> Result<Value, EmulatorError> {
        let api_version = obj["apiVersion"].as_str().unwrap_or("").to_string();
        let kind = obj["kind"].as_str().unwrap_or("").to_string();
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(String::from);
        let rt = self
            .shared
            .store()
            .registry
            .by_kind(&api_version, &kind)
            .cloned()
            .ok_or_else(|| EmulatorError::Refused(format!("unknown kind {api_version}/{kind}")))?;
        self.shared
            .write(|s| s.create(&rt, ns.as_deref(), obj, None))
            .map_err(|e| EmulatorError::Refused(e.message))
    }

    /// Stops the server and the controller (also done on drop).
    pub fn stop(&self) {
        let _ = self.shared.stop.send(true);
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    }

    /// Deletes pod `name` the way `DELETE` does, with `grace` seconds.
    fn delete_pod(emu: &Emulator, name: &str, grace: Option<i64>) {
        let shared = &emu.shared;
        let rt = shared
            .store()
            .registry
            .by_kind("v1", "Pod")
            .cloned()
            .expect("pods");
        shared
            .write(|s| controller::delete_object(s, &rt, "default", name, "Background", grace))
            .expect("delete");
    }

    /// Deletes `kind` `name` (in `ns`, or cluster-scoped) the way `DELETE` does.
    fn delete(emu: &Emulator, api_version: &str, kind: &str, ns: &str, name: &str) {
        let shared = &emu.shared;
        let rt = shared
            .store()
            .registry
            .by_kind(api_version, kind)
            .cloned()
            .expect("kind");
        shared
            .write(|s| controller::delete_object(s, &rt, ns, name, "Background", Some(0)))
            .expect("delete");
    }

    async fn until(what: &str, f: impl Fn() -> bool) {
        let started = Instant::now();
        while !f() {
            assert!(started.elapsed() < Duration::from_secs(20), "never: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_in_use_and_a_bound_volume_stay_until_what_holds_them_goes() {
        let emu = Emulator::start(EmulatorConfig::default())
            .await
            .expect("emulator");
        emu.put_object(json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pv"},
            "spec": {"storageClassName": "manual", "capacity": {"storage": "1Gi"}}}))
            .expect("pv");
        emu.put_object(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"storageClassName": "manual"}}))
            .expect("claim");
        let mut p = pod("user");
        p["spec"]["volumes"] =
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]);
        emu.put_object(p).expect("pod");
        let claim = || emu.object("v1", "PersistentVolumeClaim", Some("default"), "data");
        let volume = || emu.object("v1", "PersistentVolume", None, "pv");
        until("the claim binds", || {
            claim().is_some_and(|c| c["spec"]["volumeName"] == "pv")
        })
        .await;
        assert_eq!(volume().expect("pv")["status"]["phase"], "Bound");
        assert_eq!(
            volume().expect("pv")["metadata"]["finalizers"],
            json!(["kubernetes.io/pv-protection"])
        );

        // The volume is bound and the claim mounted: both stay.
        delete(&emu, "v1", "PersistentVolume", "", "pv");
        delete(&emu, "v1", "PersistentVolumeClaim", "default", "data");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(claim().is_some_and(|c| c["metadata"].get("deletionTimestamp").is_some()));
        assert!(volume().is_some_and(|v| v["metadata"].get("deletionTimestamp").is_some()));

        // The pod goes, then the claim, then the volume.
        delete(&emu, "v1", "Pod", "default", "user");
        until("the claim and the volume are gone", || {
            claim().is_none() && volume().is_none()
        })
        .await;
        let gone = |kind: &str, name: &str| {
            emu.events("v1", kind, None, Some(name))
                .iter()
                .find(|e| e.event_type == "DELETED")
                .map(|e| e.resource_version)
                .expect("deleted")
        };
        assert!(gone("Pod", "user") < gone("PersistentVolumeClaim", "data"));
        assert!(gone("PersistentVolumeClaim", "data") < gone("PersistentVolume", "pv"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shorter_grace_period_ends_a_slow_termination_and_events_record_it() {
        // Containers that take a minute to exit: only the grace period ends them sooner.
        let emu = Emulator::start(EmulatorConfig {
            ready_delay: Duration::ZERO,
            termination_delay: Duration::from_secs(60),
            ..EmulatorConfig::default()
        })
        .await
        .expect("emulator");
        emu.put_object(pod("slow")).expect("pod");
        emu.put_object(pod("quick")).expect("pod");
        delete_pod(&emu, "slow", None);
        delete_pod(&emu, "quick", None);
        // A second delete with one second shortens the 30 s default of `quick`.
        delete_pod(&emu, "quick", Some(1));
        let started = Instant::now();
        while emu.object("v1", "Pod", Some("default"), "quick").is_some() {
            assert!(started.elapsed() < Duration::from_secs(20), "never removed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            emu.object("v1", "Pod", Some("default"), "slow").is_some(),
            "a pod deleted without a shorter grace period is still terminating"
        );
        let events = emu.events("v1", "Pod", Some("default"), Some("quick"));
        let graces: Vec<Value> = events
            .iter()
            .map(|e| e.object["metadata"]["deletionGracePeriodSeconds"].clone())
            .collect();
        assert!(
            graces.contains(&json!(30)) && graces.contains(&json!(1)),
            "{graces:?}"
        );
        assert_eq!(
            events.last().map(|e| e.event_type.as_str()),
            Some("DELETED")
        );
        // Every event was handed to the watches, in resourceVersion order.
        assert!(events.iter().all(|e| e.published.is_some()));
        assert!(
            events
                .windows(2)
                .all(|w| w[0].resource_version < w[1].resource_version
                    && w[0].published <= w[1].published)
        );
        assert!(
            emu.events("v1", "Pod", Some("default"), Some("none"))
                .is_empty()
        );
        assert!(emu.events("v9", "Nothing", None, None).is_empty());
    }
}
