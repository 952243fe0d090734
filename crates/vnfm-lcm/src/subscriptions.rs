//! Lifecycle change notification subscriptions and the routing of notifications to them.
//!
//! [`Subscriptions`] creates, lists, shows and deletes `LccnSubscription`s: it validates the
//! request (an http(s) `callbackUri`; complete `BASIC` / `OAUTH2_CLIENT_CREDENTIALS`
//! parameters; `TLS_CERT` is refused with 422), finds duplicates (same canonical filter and
//! callback: [`Created::Existing`], for SOL003's `303 See Other`), optionally tests the
//! callback with a `GET` that must answer `204 No Content`, and stores the callback
//! credentials sealed with the [`Keyring`]. The returned `LccnSubscription` has no
//! `authentication` attribute at all.
//!
//! [`SubscriptionRouter`] implements [`NotificationRouter`]: a notification becomes one outbox
//! row per subscription whose filter matches ([`matches()`]), with `subscriptionId` and
//! `_links.subscription` filled in. Subscriptions are read through an in-memory cache that
//! create and delete invalidate and that expires after a short TTL (other replicas create and
//! delete too).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use vnfm_store::{
    MAX_PAGE_SIZE, NewOutboxRow, Page, ProjectScope, Store, SubscriptionRecord, Timestamp,
    canonical_filter,
};
use vnfm_types::{
    AuthType, LccnNotification, LccnSubscription, LccnSubscriptionRequest,
    LcmOpOccNotificationVerbosityType, LifecycleChangeNotificationsFilter, NotificationType,
    SubscriptionAuthentication, SubscriptionId, VnfInstance, VnfInstanceId,
    VnfInstanceSubscriptionFilter, VnfProductsFromProvider,
};

use vnfm_driver_api::{CallbackMethod, CallbackRequest, CallbackSender};

use crate::LcmError;
use crate::error::echo;
use crate::ports::NotificationRouter;
use crate::secrets::{Keyring, new_id};
use crate::vim::store_err;

/// Path of the subscriptions resource, the default base of `_links.self`.
pub const DEFAULT_BASE: &str = "/vnflcm/v2/subscriptions";
/// Base of `_links.self` of subscriptions created through the v1 API (SOL003 v2.6.1): their
/// notifications are sent in the v2.6.1 shape.
pub const V1_BASE: &str = "/vnflcm/v1/subscriptions";

/// Rewrites `href`s under `/vnflcm/v2` to `/vnflcm/v1`.
fn relink_v1(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                if k == "href"
                    && let Value::String(s) = item
                    && let Some(rest) = s.strip_prefix("/vnflcm/v2")
                {
                    *s = format!("/vnflcm/v1{rest}");
                } else {
                    relink_v1(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(relink_v1),
        _ => {}
    }
}
/// How long the router trusts its cached subscriptions when another replica may have changed
/// them.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(5);

/// Options of [`Subscriptions::create`].
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
    /// project is never answered as the duplicate of this one.
    pub project: Option<String>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            verify_callback: false,
            verify_timeout: Duration::from_secs(5),
            allow_duplicates: false,
            project: None,
        }
    }
}

/// What [`Subscriptions::create`] (or
/// [`crate::pkgm_subscriptions::PkgmSubscriptions::create`], with `S` a `PkgmSubscription`)
/// did.
#[derive(Debug, Clone, PartialEq)]
pub enum Created<S = LccnSubscription> {
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

/// The subscriptions of the VNFM.
#[derive(Clone)]
pub struct Subscriptions {
    store: Arc<dyn Store>,
    keyring: Arc<Keyring>,
    base: String,
    cache: Arc<SubscriptionCache>,
    sender: Arc<dyn CallbackSender>,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Subscriptions {
    /// Subscriptions in `store`, with credentials sealed by `keyring`, `_links.self` under
    /// [`DEFAULT_BASE`] and a [`DEFAULT_CACHE_TTL`] cache; callbacks are tested through
    /// `sender`.
    pub fn new(
        store: Arc<dyn Store>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn CallbackSender>,
    ) -> Self {
        Subscriptions {
            store,
            keyring,
            base: DEFAULT_BASE.to_owned(),
            cache: Arc::new(SubscriptionCache::new(DEFAULT_CACHE_TTL)),
            sender,
        }
    }

    /// Sets the base of `_links.self` (e.g. `https://vnfm.example/vnflcm/v2/subscriptions`).
    pub fn with_base(mut self, base: impl Into<String>) -> Self {
        self.base = base.into().trim_end_matches('/').to_owned();
        self
    }

    /// Sets how long the router trusts its cache.
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache = Arc::new(SubscriptionCache::new(ttl));
        self
    }

    /// The router over these subscriptions (sharing their cache).
    pub fn router(&self) -> SubscriptionRouter {
        SubscriptionRouter {
            store: self.store.clone(),
            cache: self.cache.clone(),
        }
    }

    /// Creates a subscription, or finds the existing one with the same filter and callback
    /// (unless [`CreateOptions::allow_duplicates`]).
    pub async fn create(
        &self,
        request: &LccnSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created, LcmError> {
        validate_request(request)?;
        let canonical = canonical_filter(request.filter.as_ref());
        if !options.allow_duplicates
            && let Some(existing) = self
                .store
                .find_duplicate_subscription(
                    &canonical,
                    &request.callback_uri,
                    options.project.as_deref(),
                )
                .await
                .map_err(store_err)?
        {
            return Ok(Created::Existing(existing.subscription));
        }
        if options.verify_callback {
            self.verify_callback(request, options.verify_timeout)
                .await?;
        }
        let id = SubscriptionId::new(new_id());
        let subscription =
            LccnSubscription::from_request(id.clone(), request, format!("{}/{id}", self.base));
        let sealed = seal_authentication(&self.keyring, request.authentication.as_ref())?;
        let record = SubscriptionRecord::new(subscription.clone(), sealed)
            .in_project(options.project.clone());
        self.store
            .create_subscription(&record)
            .await
            .map_err(store_err)?;
        self.cache.invalidate();
        // Not the callback URI: some carry tokens in their query.
        tracing::info!(subscription_id = %id, "subscription created");
        Ok(Created::New(subscription))
    }

    /// One subscription. [`LcmError::NotFound`] if it does not exist.
    pub async fn get(&self, id: &SubscriptionId) -> Result<LccnSubscription, LcmError> {
        Ok(self.record(id).await?.subscription)
    }

    /// One page of the subscriptions in `scope`, ordered by id, after the cursor `after`.
    pub async fn list(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<LccnSubscription>, LcmError> {
        let page = self.store.list_subscriptions(scope, after, limit).await;
        Ok(map_page(page.map_err(store_err)?, |r| r.subscription))
    }

    /// Deletes a subscription (and its undelivered notifications).
    pub async fn delete(&self, id: &SubscriptionId) -> Result<(), LcmError> {
        self.record(id).await?;
        self.store
            .delete_subscription(id)
            .await
            .map_err(store_err)?;
        self.cache.invalidate();
        tracing::info!(subscription_id = %id, "subscription deleted");
        Ok(())
    }

    /// The decrypted callback credentials of a subscription (for delivery only).
    pub async fn authentication(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionAuthentication>, LcmError> {
        open_authentication(&self.keyring, &self.record(id).await?)
    }

    async fn record(&self, id: &SubscriptionId) -> Result<SubscriptionRecord, LcmError> {
        self.store
            .get_subscription(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "subscription",
                id: id.to_string(),
            })
    }

    async fn verify_callback(
        &self,
        request: &LccnSubscriptionRequest,
        timeout: Duration,
    ) -> Result<(), LcmError> {
        verify_callback(
            &*self.sender,
            &request.callback_uri,
            request.authentication.as_ref(),
            timeout,
        )
        .await
    }
}

/// The SOL003 notification endpoint test: `GET callback_uri` with the subscription's
/// authentication must answer `204 No Content` within `timeout` (422 pointing at
/// `/callbackUri` otherwise).
pub(crate) async fn verify_callback(
    sender: &dyn CallbackSender,
    callback_uri: &str,
    authentication: Option<&SubscriptionAuthentication>,
    timeout: Duration,
) -> Result<(), LcmError> {
    let fail = |message: String| LcmError::Unprocessable {
        pointer: "/callbackUri".into(),
        message,
    };
    let test = sender.send(CallbackRequest {
        method: CallbackMethod::Get,
        uri: callback_uri,
        body: None,
        authentication,
        timeout,
    });
    match tokio::time::timeout(timeout, test).await {
        Err(_) => Err(fail(format!(
            "the notification endpoint test failed: GET got no answer within {} ms",
            timeout.as_millis()
        ))),
        Ok(Err(e)) => Err(fail(format!(
            "the notification endpoint test failed: GET {e}"
        ))),
        Ok(Ok(answer)) if answer.status == 204 => Ok(()),
        Ok(Ok(answer)) => Err(fail(format!(
            "the notification endpoint test failed: GET answered {}, expected 204 No Content",
            answer.status_text
        ))),
    }
}

/// The page of `page`'s records mapped by `f` (a page of subscriptions from a page of stored
/// records), with the same cursor.
pub(crate) fn map_page<R, T>(page: Page<R>, f: impl FnMut(R) -> T) -> Page<T> {
    Page {
        items: page.items.into_iter().map(f).collect(),
        next: page.next,
    }
}

/// The callback credentials sealed in `record`, decrypted.
pub(crate) fn open_authentication(
    keyring: &Keyring,
    record: &SubscriptionRecord,
) -> Result<Option<SubscriptionAuthentication>, LcmError> {
    open_sealed(
        keyring,
        &record.subscription.id,
        record.authentication.as_deref(),
    )
}

/// Seals `authentication` with the keyring (what the store keeps).
pub(crate) fn seal_authentication(
    keyring: &Keyring,
    authentication: Option<&SubscriptionAuthentication>,
) -> Result<Option<Vec<u8>>, LcmError> {
    authentication
        .map(|a| {
            serde_json::to_vec(a)
                .map(|plain| keyring.encrypt(&plain))
                .map_err(|e| {
                    LcmError::inconsistent(format!("authentication does not serialize: {e}"))
                        .because(e)
                })
        })
        .transpose()
}

/// The callback credentials `blob` of subscription `id`, decrypted.
pub(crate) fn open_sealed(
    keyring: &Keyring,
    id: &SubscriptionId,
    blob: Option<&[u8]>,
) -> Result<Option<SubscriptionAuthentication>, LcmError> {
    let Some(blob) = blob else {
        return Ok(None);
    };
    let plain = keyring.decrypt(blob, &format!("the credentials of subscription {id}"))?;
    // A serde error could quote a credential: report only the position.
    serde_json::from_slice(&plain).map(Some).map_err(|e| {
        LcmError::inconsistent(format!(
            "the decrypted credentials of subscription {id} do not parse (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

/// Checks what the JSON schema cannot: the callback URI, the authentication parameters and
/// the filter's operation attributes.
pub fn validate_request(request: &LccnSubscriptionRequest) -> Result<(), LcmError> {
    check_url(&request.callback_uri, "/callbackUri")?;
    validate_authentication(request.authentication.as_ref())?;
    if let Some(f) = &request.filter {
        let op_occ = NotificationType::VnfLcmOperationOccurrenceNotification;
        let excludes_op_occ = f
            .notification_types
            .as_ref()
            .is_some_and(|t| !t.is_empty() && !t.contains(&op_occ));
        if excludes_op_occ {
            for (attr, given) in [
                (
                    "operationTypes",
                    f.operation_types.as_ref().is_some_and(|v| !v.is_empty()),
                ),
                (
                    "operationStates",
                    f.operation_states.as_ref().is_some_and(|v| !v.is_empty()),
                ),
            ] {
                if given {
                    return Err(LcmError::invalid(
                        format!("/filter/{attr}"),
                        "only allowed when notificationTypes includes VnfLcmOperationOccurrenceNotification",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks the `authentication` of a subscription request: at least one scheme, complete
/// `BASIC` / `OAUTH2_CLIENT_CREDENTIALS` parameters (a `tokenEndpoint` that is an http(s)
/// URI), and no `TLS_CERT` (422: not supported).
pub(crate) fn validate_authentication(
    authentication: Option<&SubscriptionAuthentication>,
) -> Result<(), LcmError> {
    if let Some(auth) = authentication {
        if auth.auth_type.is_empty() {
            return Err(LcmError::invalid(
                "/authentication/authType",
                "must list at least one of BASIC, OAUTH2_CLIENT_CREDENTIALS",
            ));
        }
        for t in &auth.auth_type {
            match t {
                AuthType::Basic => {
                    let p = auth.params_basic.as_ref();
                    if p.and_then(|p| p.user_name.as_deref())
                        .is_none_or(str::is_empty)
                    {
                        return Err(LcmError::invalid(
                            "/authentication/paramsBasic/userName",
                            "required for BASIC authentication",
                        ));
                    }
                    if p.and_then(|p| p.password.as_ref()).is_none() {
                        return Err(LcmError::invalid(
                            "/authentication/paramsBasic/password",
                            "required for BASIC authentication",
                        ));
                    }
                }
                AuthType::Oauth2ClientCredentials => {
                    let p = auth.params_oauth2_client_credentials.as_ref();
                    let base = "/authentication/paramsOauth2ClientCredentials";
                    if p.and_then(|p| p.client_id.as_deref())
                        .is_none_or(str::is_empty)
                    {
                        return Err(LcmError::invalid(
                            format!("{base}/clientId"),
                            "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                        ));
                    }
                    if p.and_then(|p| p.client_password.as_ref()).is_none() {
                        return Err(LcmError::invalid(
                            format!("{base}/clientPassword"),
                            "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                        ));
                    }
                    match p.and_then(|p| p.token_endpoint.as_deref()) {
                        Some(e) => check_url(e, &format!("{base}/tokenEndpoint"))?,
                        None => {
                            return Err(LcmError::invalid(
                                format!("{base}/tokenEndpoint"),
                                "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                            ));
                        }
                    }
                }
                AuthType::TlsCert => {
                    return Err(LcmError::Unprocessable {
                        pointer: "/authentication/authType".into(),
                        message: "TLS_CERT authentication is not supported by this VNFM; use BASIC or OAUTH2_CLIENT_CREDENTIALS".into(),
                    });
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn check_url(uri: &str, pointer: &str) -> Result<(), LcmError> {
    let url = url::Url::parse(uri)
        .map_err(|e| LcmError::invalid(pointer, format!("`{}` is not a URI: {e}", echo(uri))))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(LcmError::invalid(
            pointer,
            format!("`{}` is not an http or https URI", echo(uri)),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials in the URI would be stored and shown in clear.
        return Err(LcmError::invalid(
            pointer,
            "must not contain user information; give credentials in authentication",
        ));
    }
    Ok(())
}

// ----- Routing -----

/// What the router knows about the VNF instance a notification is about (for the
/// `vnfInstanceSubscriptionFilter`). Attributes left `None` match no filter that constrains
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotificationContext {
    /// `vnfdId`.
    pub vnfd_id: Option<String>,
    /// `vnfProvider`.
    pub vnf_provider: Option<String>,
    /// `vnfProductName`.
    pub vnf_product_name: Option<String>,
    /// `vnfSoftwareVersion`.
    pub vnf_software_version: Option<String>,
    /// `vnfdVersion`.
    pub vnfd_version: Option<String>,
    /// `vnfInstanceName`.
    pub vnf_instance_name: Option<String>,
}

impl NotificationContext {
    /// The context of `instance`.
    pub fn from_instance(instance: &VnfInstance) -> Self {
        NotificationContext {
            vnfd_id: Some(instance.vnfd_id.to_string()),
            vnf_provider: Some(instance.vnf_provider.clone()),
            vnf_product_name: Some(instance.vnf_product_name.clone()),
            vnf_software_version: Some(instance.vnf_software_version.clone()),
            vnfd_version: Some(instance.vnfd_version.clone()),
            vnf_instance_name: instance.vnf_instance_name.clone(),
        }
    }
}

/// The instance a notification is about.
pub fn notification_instance(n: &LccnNotification) -> &VnfInstanceId {
    match n {
        LccnNotification::OperationOccurrence(o) => &o.vnf_instance_id,
        LccnNotification::IdentifierCreation(i) | LccnNotification::IdentifierDeletion(i) => {
            &i.vnf_instance_id
        }
    }
}

/// `Some(list)` when the filter attribute constrains (absent and empty lists match all, as
/// in the store's canonical filter).
pub(crate) fn constraint<T>(v: &Option<Vec<T>>) -> Option<&[T]> {
    v.as_deref().filter(|l| !l.is_empty())
}

/// Whether `value` passes a filter attribute.
pub(crate) fn passes<T, V: ?Sized>(list: Option<&[T]>, value: Option<&V>) -> bool
where
    T: PartialEq<V>,
{
    match list {
        None => true,
        Some(l) => value.is_some_and(|v| l.iter().any(|x| x == v)),
    }
}

/// Whether a subscription with `filter` wants notification `n` about an instance described
/// by `ctx`: SOL003 `LifecycleChangeNotificationsFilter` semantics (an absent attribute
/// matches everything, values within an attribute are alternatives, attributes must all
/// match; `operationTypes` and `operationStates` only constrain operation occurrence
/// notifications).
pub fn matches(
    filter: Option<&LifecycleChangeNotificationsFilter>,
    n: &LccnNotification,
    ctx: &NotificationContext,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    if !passes(
        constraint(&f.notification_types),
        Some(&n.notification_type()),
    ) {
        return false;
    }
    if let LccnNotification::OperationOccurrence(o) = n
        && (!passes(constraint(&f.operation_types), Some(&o.operation))
            || !passes(constraint(&f.operation_states), Some(&o.operation_state)))
    {
        return false;
    }
    match &f.vnf_instance_subscription_filter {
        None => true,
        Some(i) => instance_matches(i, notification_instance(n), ctx),
    }
}

pub(crate) fn instance_matches(
    f: &VnfInstanceSubscriptionFilter,
    id: &VnfInstanceId,
    ctx: &NotificationContext,
) -> bool {
    let vnfd_ok = match constraint(&f.vnfd_ids) {
        None => true,
        Some(ids) => ctx
            .vnfd_id
            .as_deref()
            .is_some_and(|d| ids.iter().any(|x| x.as_str() == d)),
    };
    let ids_ok = passes(constraint(&f.vnf_instance_ids), Some(id));
    let names_ok = passes(
        constraint(&f.vnf_instance_names),
        ctx.vnf_instance_name.as_ref(),
    );
    let products_ok = products_match(
        &f.vnf_products_from_providers,
        ctx.vnf_provider.as_deref(),
        ctx.vnf_product_name.as_deref(),
        ctx.vnf_software_version.as_deref(),
        ctx.vnfd_version.as_deref(),
    );
    vnfd_ok && ids_ok && names_ok && products_ok
}

/// Whether a `vnfProductsFromProviders` filter attribute matches a VNF of `provider`,
/// `product`, `software_version` and `vnfd_version` (unknown values match no constraint on
/// them).
pub(crate) fn products_match(
    providers: &Option<Vec<VnfProductsFromProvider>>,
    provider: Option<&str>,
    product: Option<&str>,
    software_version: Option<&str>,
    vnfd_version: Option<&str>,
) -> bool {
    match constraint(providers) {
        None => true,
        Some(providers) => providers.iter().any(|p| {
            provider == Some(p.vnf_provider.as_str())
                && match constraint(&p.vnf_products) {
                    None => true,
                    Some(products) => products.iter().any(|prod| {
                        product == Some(prod.vnf_product_name.as_str())
                            && match constraint(&prod.versions) {
                                None => true,
                                Some(versions) => versions.iter().any(|v| {
                                    software_version == Some(v.vnf_software_version.as_str())
                                        && match constraint(&v.vnfd_versions) {
                                            None => true,
                                            Some(vs) => vnfd_version
                                                .is_some_and(|d| vs.iter().any(|x| x == d)),
                                        }
                                }),
                            }
                    }),
                }
        }),
    }
}

/// Attributes a `SHORT` operation occurrence notification leaves out (SOL003 5.5.2.17).
const SHORT_OMITS: &[&str] = &[
    "affectedVnfcs",
    "affectedVirtualLinks",
    "affectedExtLinkPorts",
    "affectedVirtualStorages",
    "changedInfo",
    "changedExtConnectivity",
    "modificationsTriggeredByVnfPkgChange",
];

/// The body sent to `sub` for `n`: `subscriptionId` and `_links.subscription` point at the
/// subscription, and an operation occurrence notification has the subscription's verbosity.
///
/// A subscription created through the v1 API (its `_links.self` is under [`V1_BASE`]) gets the
/// SOL003 v2.6.1 shape, with links into `/vnflcm/v1`.
pub fn payload_for(n: &LccnNotification, sub: &LccnSubscription) -> Result<Value, LcmError> {
    let v1 = sub.links.self_.href.contains(V1_BASE);
    let serialized = match n {
        LccnNotification::OperationOccurrence(o) if v1 => {
            vnfm_types::v1::VnfLcmOperationOccurrenceNotification::try_from((**o).clone())
                .and_then(|o| {
                    serde_json::to_value(o).map_err(|e| vnfm_types::Error::Json {
                        what: "v1 notification",
                        source: e,
                    })
                })
                .map_err(|e| {
                    LcmError::inconsistent(format!("notification has no v1 shape: {e}")).because(e)
                })
        }
        _ => serde_json::to_value(n).map_err(|e| {
            LcmError::inconsistent(format!("notification does not serialize: {e}")).because(e)
        }),
    };
    let mut v = serialized?;
    if v1 {
        relink_v1(&mut v);
    }
    let Value::Object(map) = &mut v else {
        return Err(LcmError::inconsistent("notification is not a JSON object"));
    };
    map.insert("subscriptionId".into(), Value::String(sub.id.to_string()));
    let links = map
        .entry("_links")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(links) = links {
        links.insert(
            "subscription".into(),
            serde_json::json!({"href": sub.links.self_.href}),
        );
    }
    if matches!(n, LccnNotification::OperationOccurrence(_)) {
        let verbosity = sub
            .verbosity
            .unwrap_or(LcmOpOccNotificationVerbosityType::Full);
        if verbosity == LcmOpOccNotificationVerbosityType::Short {
            for k in SHORT_OMITS {
                map.remove(*k);
            }
        }
        if !v1 {
            // v2.6.1 has no verbosity.
            map.insert(
                "verbosity".into(),
                serde_json::to_value(verbosity).unwrap_or(Value::Null),
            );
        }
    }
    Ok(v)
}

/// Routes notifications to the subscriptions whose filters match.
#[derive(Clone)]
pub struct SubscriptionRouter {
    store: Arc<dyn Store>,
    cache: Arc<SubscriptionCache>,
}

impl std::fmt::Debug for SubscriptionRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionRouter").finish_non_exhaustive()
    }
}

impl SubscriptionRouter {
    /// A router over the subscriptions in `store`, with its own cache (prefer
    /// [`Subscriptions::router`], whose cache is invalidated by create and delete).
    pub fn new(store: Arc<dyn Store>, ttl: Duration) -> Self {
        SubscriptionRouter {
            store,
            cache: Arc::new(SubscriptionCache::new(ttl)),
        }
    }

    /// The outbox rows for `n` about an instance described by `ctx`. Use this when the
    /// instance is not in the store (yet): a `VnfIdentifierCreationNotification` is routed
    /// before the instance is written, in the same transaction.
    pub async fn route_with(
        &self,
        n: &LccnNotification,
        ctx: &NotificationContext,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let subs = self.cache.all(self.store.as_ref()).await?;
        let now = Timestamp::now();
        let mut rows = Vec::new();
        for sub in subs.iter().filter(|s| matches(s.filter.as_ref(), n, ctx)) {
            rows.push(NewOutboxRow {
                subscription_id: sub.id.clone(),
                callback_uri: sub.callback_uri.clone(),
                payload: payload_for(n, sub)?,
                not_before: now,
                ordering_key: notification_instance(n).to_string(),
            });
        }
        tracing::debug!(
            notification_type = ?n.notification_type(),
            vnf_instance_id = %notification_instance(n),
            subscriptions = rows.len(),
            "notification routed"
        );
        Ok(rows)
    }
}

#[async_trait]
impl NotificationRouter for SubscriptionRouter {
    /// Uses `instance` for the filter's instance attributes; without it, looks the instance up
    /// in the store, and when it is not there only `vnfInstanceIds` can match (see
    /// [`SubscriptionRouter::route_with`]).
    async fn route(
        &self,
        n: &LccnNotification,
        instance: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let ctx = match instance {
            Some(instance) => NotificationContext::from_instance(instance),
            None => match self
                .store
                .get_instance(notification_instance(n))
                .await
                .map_err(store_err)?
            {
                Some((instance, _)) => NotificationContext::from_instance(&instance),
                None => NotificationContext::default(),
            },
        };
        self.route_with(n, &ctx).await
    }
}

type Snapshot = Arc<Vec<LccnSubscription>>;

/// All subscriptions, read from the store at most once per TTL unless invalidated.
pub(crate) struct SubscriptionCache {
    ttl: Duration,
    state: std::sync::Mutex<Option<(Instant, Snapshot)>>,
    /// Bumped by every invalidation: a refresh that started before one does not install its
    /// (possibly stale) result.
    generation: AtomicU64,
}

impl SubscriptionCache {
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

    pub(crate) async fn all(&self, store: &dyn Store) -> Result<Snapshot, LcmError> {
        if let Ok(s) = self.state.lock()
            && let Some((at, snap)) = &*s
            && at.elapsed() < self.ttl
        {
            return Ok(snap.clone());
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = store
                .list_subscriptions(&ProjectScope::All, after.as_deref(), MAX_PAGE_SIZE)
                .await
                .map_err(store_err)?;
            all.extend(page.items.into_iter().map(|r| r.subscription));
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let snap = Arc::new(all);
        if let Ok(mut s) = self.state.lock()
            && self.generation.load(Ordering::SeqCst) == generation
        {
            *s = Some((Instant::now(), snap.clone()));
        }
        Ok(snap)
    }
}
