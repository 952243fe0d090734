//! Subscriptions of one kind, generic: the create (checks, duplicate detection, callback test,
//! sealed credentials), get, list, delete and credential lookup that every SOL003
//! subscription resource shares, written once over [`SubscriptionKind`], with a cache of all
//! subscriptions for routing notifications that create and delete invalidate.
//!
//! Tenants' notifications are kept apart: a subscription receives notifications about the
//! resources of its own project only ([`Routing::receiving`]), one of no project (created by a
//! caller that sees every project) about every resource, as the lists of their creators show.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use vnfm_store::SubscriptionManagerStore;

use vnfm_store::{
    MAX_PAGE_SIZE, Page, PendingKey, ProjectScope, ScopedKind, StoreError, StoredSubscription,
    SubscriptionResource, SubscriptionStore,
};
use vnfm_types::links::{ApiVersion, Interface, LinkTarget, ResourceLinks, SolLinks};
use vnfm_types::{SubscriptionAuthentication, SubscriptionId};

use super::checks::{
    check_url, open_sealed, seal_authentication, validate_authentication, verify_callback,
};
use crate::LcmError;
use crate::secrets::{Keyring, new_id};
use crate::vim::store_err;

/// How long [`ManagedSubscriptions::cached`] trusts its snapshot when another replica may
/// have changed the subscriptions.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(5);

/// Options of [`ManagedSubscriptions::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// Test the callback (`GET callbackUri`, with the subscription's authentication, must
    /// answer `204 No Content`) before creating, as SOL003 requires of the API.
    pub verify_callback: bool,
    /// Time limit of that test.
    pub verify_timeout: Duration,
    /// Create a new subscription even when one with the same filter and callback exists,
    /// instead of answering with that one ([`Created::Existing`], `303 See Other`): SOL003
    /// lets the server do either (v2.6.1 clauses 5.4.18.3.1 and 10.4.7.3.1).
    pub allow_duplicates: bool,
    /// The project the subscription belongs to (that of the caller creating it; `None`: no
    /// project, seen only by callers that see every project). A subscription of another
    /// project is never answered as the duplicate of this one. It is also the project whose
    /// notifications the subscription receives: those about resources of that project only,
    /// or, without a project, about every resource ([`Routing`]).
    pub project: Option<String>,
    /// The client key of a retry-safe request ([`crate::runner::keyed`]), committed with the
    /// subscription in the transaction that creates it (not with a duplicate answered
    /// instead): a key committed by another request first refuses the creation.
    pub key: Option<PendingKey>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            verify_callback: false,
            verify_timeout: Duration::from_secs(5),
            allow_duplicates: false,
            project: None,
            key: None,
        }
    }
}

/// What [`ManagedSubscriptions::create`] did, with `S` the subscription resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Created<S = vnfm_types::LccnSubscription> {
    /// A new subscription (`201 Created`).
    New(S),
    /// A subscription with the same filter and callback exists (`303 See Other` to it).
    Existing(S),
}

impl<S> Created<S> {
    /// The subscription, new or existing.
    pub fn subscription(&self) -> &S {
        match self {
            Created::New(s) | Created::Existing(s) => s,
        }
    }
}

/// A kind of subscription resource: its request and its own checks (the store keeps every
/// kind through the same methods, [`vnfm_store::SubscriptionStore`]).
pub trait SubscriptionKind: Send + Sync + 'static {
    /// The resource (e.g. `FmSubscription`).
    type Resource: SubscriptionResource;
    /// The body of `POST .../subscriptions`.
    type Request: Send + Sync;
    /// What the kind is called in logs.
    const LABEL: &'static str;
    /// The interface the subscriptions belong to (their `_links.self` is in it).
    const INTERFACE: Interface;
    /// The interface version subscriptions are created through unless
    /// [`ManagedSubscriptions::with_version`] says otherwise.
    const DEFAULT_VERSION: ApiVersion;
    /// Whether the subscriptions of each interface version are apart: a subscription is the
    /// duplicate only of one created through the same version (lifecycle subscriptions, which
    /// Tacker keeps as separate resources of its v1 and v2 APIs). Otherwise a duplicate is
    /// found whatever version created it.
    const VERSIONS_APART: bool = false;

    /// The request's callback URI.
    fn callback_uri(request: &Self::Request) -> &str;
    /// The request's callback credentials.
    fn authentication(request: &Self::Request) -> Option<&SubscriptionAuthentication>;
    /// Checks the kind's own rules of the request (beyond the callback and credentials).
    fn validate(_request: &Self::Request) -> Result<(), LcmError> {
        Ok(())
    }
    /// The resource for a request, with id `id` and `_links.self` `href`.
    fn resource(id: SubscriptionId, request: &Self::Request, href: String) -> Self::Resource;
    /// The canonical form of the request's filter.
    fn canonical_filter(request: &Self::Request) -> String;
}

/// Checks a subscription request of kind `K` as [`ManagedSubscriptions::create`] does: an
/// http(s) `callbackUri` without user information, complete `BASIC` /
/// `OAUTH2_CLIENT_CREDENTIALS` parameters (`TLS_CERT` is refused with 422), and the kind's own
/// rules.
pub fn validate_request<K: SubscriptionKind>(request: &K::Request) -> Result<(), LcmError> {
    check_url(K::callback_uri(request), "/callbackUri")?;
    validate_authentication(K::authentication(request))?;
    K::validate(request)
}

/// The subscriptions of one kind `K`, with credentials sealed by a [`Keyring`], callbacks
/// tested through a `CallbackSender`, and a snapshot of all of them for routing
/// ([`ManagedSubscriptions::cached`]) shared by clones.
pub struct ManagedSubscriptions<K: SubscriptionKind> {
    store: Arc<dyn SubscriptionManagerStore>,
    keyring: Arc<Keyring>,
    sender: Arc<dyn vnfm_driver_api::CallbackSender>,
    links: Arc<dyn ResourceLinks>,
    version: ApiVersion,
    cache: Arc<SubscriptionCache<K::Resource>>,
    kind: PhantomData<fn() -> K>,
}

impl<K: SubscriptionKind> Clone for ManagedSubscriptions<K> {
    fn clone(&self) -> Self {
        ManagedSubscriptions {
            store: self.store.clone(),
            keyring: self.keyring.clone(),
            sender: self.sender.clone(),
            links: self.links.clone(),
            version: self.version,
            cache: self.cache.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: SubscriptionKind> std::fmt::Debug for ManagedSubscriptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedSubscriptions")
            .field("kind", &K::LABEL)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl<K: SubscriptionKind> ManagedSubscriptions<K> {
    /// Subscriptions in `store`, with credentials sealed by `keyring`, `_links.self` in
    /// [`SubscriptionKind::DEFAULT_VERSION`] of the SOL layout ([`SolLinks`]) and a
    /// [`DEFAULT_CACHE_TTL`] snapshot; callbacks are tested through `sender`.
    pub fn new(
        store: Arc<dyn SubscriptionManagerStore>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn vnfm_driver_api::CallbackSender>,
    ) -> Self {
        ManagedSubscriptions {
            store,
            keyring,
            sender,
            links: Arc::new(SolLinks::default()),
            version: K::DEFAULT_VERSION,
            cache: Arc::new(SubscriptionCache::new(DEFAULT_CACHE_TTL)),
            kind: PhantomData,
        }
    }

    /// Sets the interface version new subscriptions are created through (their `_links.self`,
    /// and the shape of their notifications); the snapshot stays shared with the original.
    pub fn with_version(mut self, version: ApiVersion) -> Self {
        self.version = version;
        self
    }

    /// Sets where the resources live (the `href`s of `_links`); the snapshot stays shared
    /// with the original.
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Self {
        self.links = links;
        self
    }

    /// Where the resources live.
    pub fn links(&self) -> &Arc<dyn ResourceLinks> {
        &self.links
    }

    /// Sets how long [`ManagedSubscriptions::cached`] trusts its snapshot (a new snapshot,
    /// no longer shared).
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache = Arc::new(SubscriptionCache::new(ttl));
        self
    }

    /// The store the subscriptions are kept in.
    pub(crate) fn store(&self) -> &Arc<dyn SubscriptionManagerStore> {
        &self.store
    }

    /// The snapshot shared by clones (for a router).
    pub(crate) fn cache(&self) -> &Arc<SubscriptionCache<K::Resource>> {
        &self.cache
    }

    /// Creates a subscription, or finds the existing one with the same filter and callback
    /// (unless [`CreateOptions::allow_duplicates`]).
    pub async fn create(
        &self,
        request: &K::Request,
        options: &CreateOptions,
    ) -> Result<Created<K::Resource>, LcmError> {
        validate_request::<K>(request)?;
        let callback = K::callback_uri(request);
        let canonical = self.duplicate_key(request);
        if !options.allow_duplicates
            && let Some(existing) = self
                .store
                .find_duplicate_subscription::<K::Resource>(
                    &canonical,
                    callback,
                    options.project.as_deref(),
                )
                .await
                .map_err(store_err)?
        {
            return Ok(Created::Existing(existing.subscription));
        }
        if options.verify_callback {
            verify_callback(
                &*self.sender,
                callback,
                K::authentication(request),
                options.verify_timeout,
            )
            .await?;
        }
        let id = SubscriptionId::new(new_id());
        let href = self.links.href(LinkTarget::Subscription {
            interface: K::INTERFACE,
            version: self.version,
            id: id.as_str(),
        });
        let resource = K::resource(id.clone(), request, href);
        let sealed = seal_authentication(&self.keyring, K::authentication(request))?;
        let mut record =
            StoredSubscription::new(resource.clone(), sealed).in_project(options.project.clone());
        record.canonical_filter = canonical;
        self.store
            .create_subscription_keyed(&record, options.key.as_ref())
            .await
            .map_err(store_err)?;
        self.cache.invalidate();
        // Not the callback URI: some carry tokens in their query.
        tracing::info!(subscription_id = %id, kind = K::LABEL, "subscription created");
        Ok(Created::New(resource))
    }

    /// What a duplicate of `request` has in common with it besides its callback: the
    /// canonical form of its filter, preceded by the interface version it is created through
    /// when [`SubscriptionKind::VERSIONS_APART`] and that is not the kind's default version
    /// (the canonical form is JSON text, which never starts with a letter).
    fn duplicate_key(&self, request: &K::Request) -> String {
        let canonical = K::canonical_filter(request);
        if K::VERSIONS_APART && self.version != K::DEFAULT_VERSION {
            format!("{} {canonical}", self.version.segment())
        } else {
            canonical
        }
    }

    /// One subscription. [`LcmError::NotFound`] if it does not exist.
    pub async fn get(&self, id: &SubscriptionId) -> Result<K::Resource, LcmError> {
        Ok(self.record(id).await?.subscription)
    }

    /// One page of the subscriptions in `scope`, ordered by id, after the cursor `after`.
    pub async fn list(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<K::Resource>, LcmError> {
        let page = self
            .store
            .list_subscriptions::<K::Resource>(scope, after, limit)
            .await
            .map_err(store_err)?;
        Ok(Page {
            items: page.items.into_iter().map(|r| r.subscription).collect(),
            next: page.next,
        })
    }

    /// Every subscription, read from the store now (see [`ManagedSubscriptions::cached`]).
    pub async fn all(&self) -> Result<Vec<K::Resource>, LcmError> {
        all_of::<K>(&*self.store).await
    }

    /// Every subscription with the projects it receives notifications about, from a snapshot
    /// at most one cache TTL old unless this process created or deleted one since (then read
    /// again): for routing frequent notifications.
    pub async fn cached(&self) -> Result<Arc<Routing<K::Resource>>, LcmError> {
        self.cache.all::<K>(&*self.store).await
    }

    /// Every subscription with the projects it receives notifications about, read from the
    /// store now: for routing rare notifications, so that a subscription another replica
    /// created is routed to at once.
    pub async fn routing(&self) -> Result<Routing<K::Resource>, LcmError> {
        routing_of::<K>(&*self.store).await
    }

    /// Deletes a subscription (and its undelivered notifications).
    pub async fn delete(&self, id: &SubscriptionId) -> Result<(), LcmError> {
        let deleted = self.store.delete_subscription::<K::Resource>(id).await;
        deleted.map_err(|e| match e {
            StoreError::NotFound { .. } => not_found(id),
            other => store_err(other),
        })?;
        self.cache.invalidate();
        tracing::info!(subscription_id = %id, kind = K::LABEL, "subscription deleted");
        Ok(())
    }

    /// The decrypted callback credentials of a subscription (for delivery only).
    pub async fn authentication(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionAuthentication>, LcmError> {
        let record = self.record(id).await?;
        open_sealed(&self.keyring, id, record.authentication.as_deref())
    }

    async fn record(
        &self,
        id: &SubscriptionId,
    ) -> Result<StoredSubscription<K::Resource>, LcmError> {
        self.store
            .get_subscription::<K::Resource>(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| not_found(id))
    }
}

fn not_found(id: &SubscriptionId) -> LcmError {
    LcmError::NotFound {
        kind: "subscription",
        id: id.to_string(),
    }
}

/// Every subscription of kind `K` in `store`, page by page.
async fn all_of<K: SubscriptionKind>(
    store: &dyn SubscriptionManagerStore,
) -> Result<Vec<K::Resource>, LcmError> {
    Ok(records_of::<K>(store)
        .await?
        .into_iter()
        .map(|r| r.subscription)
        .collect())
}

/// Every stored subscription of kind `K` in `store`, page by page.
async fn records_of<K: SubscriptionKind>(
    store: &dyn SubscriptionManagerStore,
) -> Result<Vec<StoredSubscription<K::Resource>>, LcmError> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .list_subscriptions::<K::Resource>(&ProjectScope::All, after.as_deref(), MAX_PAGE_SIZE)
            .await
            .map_err(store_err)?;
        out.extend(page.items);
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
}

/// Every subscription of kind `K` in `store` with its audience.
async fn routing_of<K: SubscriptionKind>(
    store: &dyn SubscriptionManagerStore,
) -> Result<Routing<K::Resource>, LcmError> {
    Ok(Routing::new(
        records_of::<K>(store)
            .await?
            .into_iter()
            .map(|r| (r.subscription, r.project)),
    ))
}

/// The subscriptions notifications are routed to, each with the projects whose notifications
/// it receives (its audience): a subscription of a project receives the notifications about
/// that project's resources only, one of no project (created by a caller that sees every
/// project: an administrator, an OAuth 2.0 client) those about every resource.
#[derive(Debug, Clone)]
pub struct Routing<R> {
    subscriptions: Vec<(R, ProjectScope)>,
    scoped: bool,
}

impl<R> Default for Routing<R> {
    fn default() -> Self {
        Routing {
            subscriptions: Vec::new(),
            scoped: false,
        }
    }
}

impl<R> Routing<R> {
    /// The subscriptions given with the project each belongs to (`None`: none).
    pub fn new(subscriptions: impl IntoIterator<Item = (R, Option<String>)>) -> Self {
        let subscriptions: Vec<(R, ProjectScope)> = subscriptions
            .into_iter()
            .map(|(sub, project)| {
                let audience = match project {
                    None => ProjectScope::All,
                    Some(p) => ProjectScope::Project(p),
                };
                (sub, audience)
            })
            .collect();
        let scoped = subscriptions
            .iter()
            .any(|(_, audience)| *audience != ProjectScope::All);
        Routing {
            subscriptions,
            scoped,
        }
    }

    /// Whether there is no subscription.
    pub fn is_empty(&self) -> bool {
        self.subscriptions.is_empty()
    }

    /// Whether some subscription receives the notifications of one project only: only then
    /// does a router need the project of what a notification is about.
    pub fn scoped(&self) -> bool {
        self.scoped
    }

    /// The subscriptions that receive notifications about a resource of `project` (`None`:
    /// of no project, which only the subscriptions of no project receive).
    pub fn receiving<'a>(&'a self, project: Option<&'a str>) -> impl Iterator<Item = &'a R> {
        self.subscriptions
            .iter()
            .filter(move |(_, audience)| audience.admits(project))
            .map(|(sub, _)| sub)
    }

    /// Every subscription, for notifications about no resource at all (an alarm list
    /// rebuilt), which tell nothing of any project.
    pub fn everyone(&self) -> impl Iterator<Item = &R> {
        self.subscriptions.iter().map(|(sub, _)| sub)
    }

    /// The project of the resource `id` of `kind` as [`Routing::receiving`] needs it: looked
    /// up in `store` only when [`Routing::scoped`] (otherwise every subscription receives it
    /// whatever its project, and `None` is returned). A resource that is not stored is of no
    /// project.
    pub async fn project_of(
        &self,
        store: &dyn SubscriptionManagerStore,
        kind: ScopedKind,
        id: &str,
    ) -> Result<Option<String>, LcmError> {
        if !self.scoped {
            return Ok(None);
        }
        Ok(store
            .project_of(kind, id)
            .await
            .map_err(store_err)?
            .flatten())
    }
}

type Snapshot<R> = Arc<Routing<R>>;

/// All subscriptions of one kind, read from the store at most once per TTL unless
/// invalidated.
pub(crate) struct SubscriptionCache<R> {
    ttl: Duration,
    state: std::sync::Mutex<Option<(Instant, Snapshot<R>)>>,
    /// Bumped by every invalidation: a refresh that started before one does not install its
    /// (possibly stale) result.
    generation: AtomicU64,
}

impl<R: SubscriptionResource> SubscriptionCache<R> {
    pub(crate) fn new(ttl: Duration) -> Self {
        SubscriptionCache {
            ttl,
            state: std::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut s) = self.state.lock() {
            *s = None;
        }
    }

    pub(crate) async fn all<K: SubscriptionKind<Resource = R>>(
        &self,
        store: &dyn SubscriptionManagerStore,
    ) -> Result<Snapshot<R>, LcmError> {
        if let Ok(s) = self.state.lock()
            && let Some((at, snap)) = &*s
            && at.elapsed() < self.ttl
        {
            return Ok(snap.clone());
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let snap = Arc::new(routing_of::<K>(store).await?);
        if let Ok(mut s) = self.state.lock()
            && self.generation.load(Ordering::SeqCst) == generation
        {
            *s = Some((Instant::now(), snap.clone()));
        }
        Ok(snap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_receives_its_projects_notifications_or_every_one_without_a_project() {
        let routing = Routing::new([
            ("demo", Some("demo".to_owned())),
            ("other", Some("other".to_owned())),
            ("admin", None),
        ]);
        assert!(routing.scoped());
        let receiving = |project| routing.receiving(project).copied().collect::<Vec<_>>();
        assert_eq!(receiving(Some("demo")), ["demo", "admin"]);
        assert_eq!(receiving(Some("other")), ["other", "admin"]);
        assert_eq!(receiving(Some("third")), ["admin"]);
        assert_eq!(receiving(None), ["admin"]);
        assert_eq!(
            routing.everyone().copied().collect::<Vec<_>>(),
            ["demo", "other", "admin"]
        );
        // Without subscriptions of a project, the project of a resource is not needed.
        let unscoped = Routing::new([("a", None), ("b", None)]);
        assert!(!unscoped.scoped());
        assert_eq!(unscoped.receiving(Some("demo")).count(), 2);
        assert!(Routing::<&str>::default().is_empty());
    }
}
