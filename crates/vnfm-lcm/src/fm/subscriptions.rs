//! Subscriptions of one kind, generic: the create (checks, duplicate detection, callback test,
//! sealed credentials), get, list, delete and credential lookup that every SOL003
//! subscription resource shares, written once over [`SubscriptionKind`]. Fault management
//! ([`FmKind`]) is the first kind; performance management and indicator subscriptions are
//! further implementations of the trait.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use vnfm_store::{
    FmSubscriptionRecord, Page, ProjectScope, Store, StoreError, StoredSubscription,
    SubscriptionResource, canonical_fm_filter,
};
use vnfm_types::{
    FmSubscription, FmSubscriptionRequest, SubscriptionAuthentication, SubscriptionId,
};

use crate::LcmError;
use crate::secrets::{Keyring, new_id};
use crate::subscriptions::{
    CreateOptions, Created, check_url, open_sealed, seal_authentication, validate_authentication,
    verify_callback,
};
use crate::vim::store_err;

/// A kind of subscription resource: its request and the store calls for its records.
#[async_trait]
pub trait SubscriptionKind: Send + Sync + 'static {
    /// The resource (e.g. `FmSubscription`).
    type Resource: SubscriptionResource;
    /// The body of `POST .../subscriptions`.
    type Request: Send + Sync;
    /// What the kind is called in logs.
    const LABEL: &'static str;

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

    /// Stores a record.
    async fn create(
        store: &dyn Store,
        record: &StoredSubscription<Self::Resource>,
    ) -> vnfm_store::Result<()>;
    /// Reads a record.
    async fn get(
        store: &dyn Store,
        id: &SubscriptionId,
    ) -> vnfm_store::Result<Option<StoredSubscription<Self::Resource>>>;
    /// One page of the records in `scope`.
    async fn list(
        store: &dyn Store,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> vnfm_store::Result<Page<StoredSubscription<Self::Resource>>>;
    /// Deletes a record.
    async fn delete(store: &dyn Store, id: &SubscriptionId) -> vnfm_store::Result<()>;
    /// A record of `project` with the same canonical filter and callback.
    async fn duplicate(
        store: &dyn Store,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> vnfm_store::Result<Option<StoredSubscription<Self::Resource>>>;
}

/// The subscriptions of one kind `K`, with credentials sealed by a [`Keyring`] and callbacks
/// tested through a `CallbackSender`.
pub struct ManagedSubscriptions<K> {
    store: Arc<dyn Store>,
    keyring: Arc<Keyring>,
    sender: Arc<dyn vnfm_driver_api::CallbackSender>,
    base: String,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for ManagedSubscriptions<K> {
    fn clone(&self) -> Self {
        ManagedSubscriptions {
            store: self.store.clone(),
            keyring: self.keyring.clone(),
            sender: self.sender.clone(),
            base: self.base.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for ManagedSubscriptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedSubscriptions")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<K: SubscriptionKind> ManagedSubscriptions<K> {
    /// Subscriptions in `store` whose `_links.self` is `{base}/{id}`.
    pub fn new(
        store: Arc<dyn Store>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn vnfm_driver_api::CallbackSender>,
        base: impl Into<String>,
    ) -> Self {
        ManagedSubscriptions {
            store,
            keyring,
            sender,
            base: base.into().trim_end_matches('/').to_owned(),
            kind: PhantomData,
        }
    }

    /// Creates a subscription, or finds the existing one with the same filter and callback
    /// (unless [`CreateOptions::allow_duplicates`]).
    pub async fn create(
        &self,
        request: &K::Request,
        options: &CreateOptions,
    ) -> Result<Created<K::Resource>, LcmError> {
        let callback = K::callback_uri(request);
        check_url(callback, "/callbackUri")?;
        validate_authentication(K::authentication(request))?;
        K::validate(request)?;
        let canonical = K::canonical_filter(request);
        if !options.allow_duplicates
            && let Some(existing) = K::duplicate(
                &*self.store,
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
        let resource = K::resource(id.clone(), request, format!("{}/{id}", self.base));
        let sealed = seal_authentication(&self.keyring, K::authentication(request))?;
        K::create(
            &*self.store,
            &StoredSubscription::new(resource.clone(), sealed).in_project(options.project.clone()),
        )
        .await
        .map_err(store_err)?;
        // Not the callback URI: some carry tokens in their query.
        tracing::info!(subscription_id = %id, kind = K::LABEL, "subscription created");
        Ok(Created::New(resource))
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
        let page = K::list(&*self.store, scope, after, limit)
            .await
            .map_err(store_err)?;
        Ok(Page {
            items: page.items.into_iter().map(|r| r.subscription).collect(),
            next: page.next,
        })
    }

    /// Every subscription (for routing a notification).
    pub async fn all(&self) -> Result<Vec<K::Resource>, LcmError> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .list(
                    &ProjectScope::All,
                    after.as_deref(),
                    vnfm_store::MAX_PAGE_SIZE,
                )
                .await?;
            out.extend(page.items);
            match page.next {
                Some(n) => after = Some(n),
                None => return Ok(out),
            }
        }
    }

    /// Deletes a subscription (and its undelivered notifications).
    pub async fn delete(&self, id: &SubscriptionId) -> Result<(), LcmError> {
        K::delete(&*self.store, id).await.map_err(|e| match e {
            StoreError::NotFound { .. } => not_found(id),
            other => store_err(other),
        })?;
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
        K::get(&*self.store, id)
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

/// VNF fault management subscriptions (`vnffm/v1`).
#[derive(Debug, Clone, Copy)]
pub struct FmKind;

#[async_trait]
impl SubscriptionKind for FmKind {
    type Resource = FmSubscription;
    type Request = FmSubscriptionRequest;
    const LABEL: &'static str = "fm";

    fn callback_uri(request: &FmSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(request: &FmSubscriptionRequest) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    fn resource(
        id: SubscriptionId,
        request: &FmSubscriptionRequest,
        href: String,
    ) -> FmSubscription {
        FmSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &FmSubscriptionRequest) -> String {
        canonical_fm_filter(request.filter.as_ref())
    }
    async fn create(store: &dyn Store, record: &FmSubscriptionRecord) -> vnfm_store::Result<()> {
        store.create_fm_subscription(record).await
    }
    async fn get(
        store: &dyn Store,
        id: &SubscriptionId,
    ) -> vnfm_store::Result<Option<FmSubscriptionRecord>> {
        store.get_fm_subscription(id).await
    }
    async fn list(
        store: &dyn Store,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> vnfm_store::Result<Page<FmSubscriptionRecord>> {
        store.list_fm_subscriptions(scope, after, limit).await
    }
    async fn delete(store: &dyn Store, id: &SubscriptionId) -> vnfm_store::Result<()> {
        store.delete_fm_subscription(id).await
    }
    async fn duplicate(
        store: &dyn Store,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> vnfm_store::Result<Option<FmSubscriptionRecord>> {
        store
            .find_duplicate_fm_subscription(canonical_filter, callback_uri, project)
            .await
    }
}
