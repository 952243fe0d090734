//! The values the store takes and returns besides the SOL003 documents themselves: versions,
//! timestamps, leases, queries, pages, journal entries, outbox rows, subscription and VIM
//! records.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use vnfm_types::{
    Alarm, FmNotificationsFilter, FmSubscription, InstantiationState, LccnSubscription,
    LcmOperationStateType, LcmOperationType, LifecycleChangeNotificationsFilter, PerformanceReport,
    PkgmNotificationsFilter, PkgmSubscription, PmJob, PmNotificationsFilter, PmSubscription,
    SubscriptionId, Threshold, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId,
    VnfdId,
};

/// Revision of a stored record. It starts at 1 and grows by one with every change of the
/// document, so it can be used as an HTTP entity tag ([`Version::etag`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub i64);

impl Version {
    /// The version of a freshly created record.
    pub const FIRST: Version = Version(1);

    /// The strong entity tag for this version: `"<n>"` (with the quotes).
    pub fn etag(self) -> String {
        format!("\"{}\"", self.0)
    }

    /// Parses an entity tag made by [`Version::etag`] (a weak `W/` prefix is accepted).
    pub fn from_etag(tag: &str) -> Option<Version> {
        let tag = tag.trim();
        let tag = tag.strip_prefix("W/").unwrap_or(tag);
        tag.strip_prefix('"')?
            .strip_suffix('"')?
            .parse()
            .ok()
            .map(Version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A point in time in milliseconds since the Unix epoch. Leases and outbox schedules are
/// compared in the database as such integers, and the caller passes "now", so tests control
/// time and all replicas compare the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Timestamp {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp(ms)
    }

    /// This time plus `d` (saturating).
    pub fn plus(self, d: Duration) -> Timestamp {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Timestamp(self.0.saturating_add(ms))
    }

    /// Milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }
}

/// Ownership of a running op-occ by one runner process until `expires_at`.
///
/// The owner string is the fencing token: every write of the runner ([`crate::OpOccStore::record_step`],
/// [`crate::OpOccStore::renew_lease`]) checks it, so once another process has claimed the op-occ the
/// old runner's writes are refused. It must therefore be unique per process *incarnation*
/// (e.g. `host:pid:start-nonce`), not just per host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Who holds the lease.
    pub owner: String,
    /// When it expires unless renewed.
    pub expires_at: Timestamp,
}

impl Lease {
    /// A lease for `owner` until `expires_at`.
    pub fn new(owner: impl Into<String>, expires_at: Timestamp) -> Lease {
        Lease {
            owner: owner.into(),
            expires_at,
        }
    }
}

/// Default page size of list queries.
pub const DEFAULT_PAGE_SIZE: u32 = 100;
/// Largest page size the store returns; larger limits are clamped to it.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The page size a store uses for `limit`: [`DEFAULT_PAGE_SIZE`] when `None`, clamped to
/// 1..=[`MAX_PAGE_SIZE`].
pub fn page_size(limit: Option<u32>) -> i64 {
    i64::from(limit.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE))
}

/// One page of a keyset-paginated list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, ordered by identifier.
    pub items: Vec<T>,
    /// Cursor for the next page (the last identifier of this one, or of the last row
    /// searched when a bounded search ended the page early: [`InstanceQuery::scan_limit`]),
    /// `None` on the last page. Pass it as `after` to continue.
    pub next: Option<String>,
}

/// How a VNF instance name is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameFilter {
    /// The name equals the string.
    Exact(String),
    /// The name contains the string (case-sensitive).
    Contains(String),
}

/// Filter and page of [`crate::InstanceStore::list_instances`] / [`crate::InstanceStore::stream_instances`].
/// All set filters must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstanceQuery {
    /// `vnfdId` equals.
    pub vnfd_id: Option<VnfdId>,
    /// `vnfProvider` equals.
    pub vnf_provider: Option<String>,
    /// `vnfProductName` equals.
    pub vnf_product_name: Option<String>,
    /// `instantiationState` equals.
    pub instantiation_state: Option<InstantiationState>,
    /// `vnfInstanceName` matches.
    pub name: Option<NameFilter>,
    /// `vnfInstanceName` is set and differs from this string (instances without a name do
    /// not match, as SOL013 `neq` evaluates).
    pub name_not: Option<String>,
    /// `id` is one of these (an empty set matches nothing).
    pub ids: Option<Vec<VnfInstanceId>>,
    /// Strings the stored document holds, one of each entry's: the condition a filter on
    /// attributes with no column of their own puts on a document
    /// ([`vnfm_sol013::Term::required_strings`]), checked in the database on the stored JSON
    /// text so that only the documents that can match are read. It narrows, it does not
    /// decide: the caller still evaluates its filter on what is returned.
    pub document_strings: Vec<vnfm_sol013::RequiredStrings>,
    /// With `document_strings`: the rows (those the other conditions leave, in id order
    /// after `after`) searched for them at most, so that one call's work is bounded; when the
    /// page is not full by then, it ends early, its `next` the last row searched. `None`:
    /// the search goes on to the end.
    pub scan_limit: Option<u32>,
    /// Start after this identifier (the `next` cursor of the previous page).
    pub after: Option<String>,
    /// Page size (stream: batch size); [`DEFAULT_PAGE_SIZE`] when `None`, at most
    /// [`MAX_PAGE_SIZE`].
    pub limit: Option<u32>,
    /// The projects whose instances are listed (every one by default).
    pub scope: ProjectScope,
}

/// Filter and page of [`crate::OpOccStore::list_op_occs`]. All set filters must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpOccQuery {
    /// `vnfInstanceId` equals.
    pub vnf_instance_id: Option<VnfInstanceId>,
    /// `operationState` is one of these (an empty set matches nothing).
    pub states: Option<Vec<LcmOperationStateType>>,
    /// `operation` equals.
    pub operation: Option<LcmOperationType>,
    /// Strings the stored document holds, as [`InstanceQuery::document_strings`].
    pub document_strings: Vec<vnfm_sol013::RequiredStrings>,
    /// The rows searched for `document_strings` at most, as [`InstanceQuery::scan_limit`].
    pub scan_limit: Option<u32>,
    /// Start after this identifier.
    pub after: Option<String>,
    /// Page size; [`DEFAULT_PAGE_SIZE`] when `None`, at most [`MAX_PAGE_SIZE`].
    pub limit: Option<u32>,
    /// The projects whose occurrences are listed (every one by default). An occurrence
    /// belongs to the project of its instance, recorded when it started.
    pub scope: ProjectScope,
}

/// Which projects' resources a reader sees: the tenancy of lists and reads.
///
/// Instances, packages and subscriptions record the project of the caller that created them
/// (none for callers outside any project: OAuth 2.0 clients, or rows older than migration
/// 11); op-occs and alarms belong to the project of their instance. A resource without a
/// project is seen only with [`ProjectScope::All`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ProjectScope {
    /// Every resource, with or without a project (administrators, OAuth 2.0 clients, the
    /// core itself).
    #[default]
    All,
    /// Only the resources of this project.
    Project(String),
    /// No resource at all (a caller that may not see every project and whose credentials
    /// name no project).
    Nothing,
}

impl ProjectScope {
    /// The scope of a caller that sees every project when `all`, else only `project` (nothing
    /// when it has none).
    pub fn of(all: bool, project: Option<&str>) -> ProjectScope {
        match (all, project) {
            (true, _) => ProjectScope::All,
            (false, Some(p)) => ProjectScope::Project(p.to_owned()),
            (false, None) => ProjectScope::Nothing,
        }
    }

    /// Whether a resource of `project` (`None`: of no project) is in this scope.
    pub fn admits(&self, project: Option<&str>) -> bool {
        match self {
            ProjectScope::All => true,
            ProjectScope::Project(p) => project == Some(p.as_str()),
            ProjectScope::Nothing => false,
        }
    }
}

/// The kinds of resource that belong to a project ([`crate::InstanceStore::project_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScopedKind {
    /// A VNF instance.
    Instance,
    /// An LCM operation occurrence (of its instance's project).
    OpOcc,
    /// A VNF package, by package id.
    Package,
    /// A subscription of any kind (lifecycle, package management, fault management).
    Subscription,
    /// An alarm (of its instance's project).
    Alarm,
}

/// Outcome recorded in the step journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepOutcome {
    /// The step began (its side effects may be partially done).
    Started,
    /// The step finished; a resumed runner continues after it.
    Completed,
    /// The step failed.
    Failed,
    /// The step's effects were undone.
    RolledBack,
}

impl StepOutcome {
    /// The stored spelling (`started`, `completed`, `failed`, `rolled_back`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::RolledBack => "rolled_back",
        }
    }

    /// The outcome of a stored spelling ([`StepOutcome::as_str`]).
    pub fn parse(s: &str) -> Option<StepOutcome> {
        Some(match s {
            "started" => Self::Started,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "rolled_back" => Self::RolledBack,
            _ => return None,
        })
    }
}

/// A step-journal row to append.
#[derive(Debug, Clone)]
pub struct JournalStep {
    /// Name of the step (stable across restarts: the runner matches on it when resuming).
    pub step: String,
    /// What happened.
    pub outcome: StepOutcome,
    /// When.
    pub at: Timestamp,
    /// Step-specific detail (created resource ids, ...), as the JSON text the store keeps: a
    /// plan row holds whole documents, which the runner encodes once, straight from its types.
    pub detail: Box<serde_json::value::RawValue>,
}

impl JournalStep {
    /// The row of step `step` with `detail` encoded; a detail that cannot be encoded (a map
    /// with non-string keys) is kept as `null`.
    pub fn new(
        step: impl Into<String>,
        outcome: StepOutcome,
        at: Timestamp,
        detail: &impl serde::Serialize,
    ) -> JournalStep {
        JournalStep {
            step: step.into(),
            outcome,
            at,
            detail: serde_json::value::to_raw_value(detail)
                .unwrap_or_else(|_| serde_json::value::to_raw_value(&Value::Null).expect("null")),
        }
    }
}

impl PartialEq for JournalStep {
    fn eq(&self, other: &JournalStep) -> bool {
        (self.step.as_str(), self.outcome, self.at, self.detail.get())
            == (
                other.step.as_str(),
                other.outcome,
                other.at,
                other.detail.get(),
            )
    }
}

/// A row of the step journal of an op-occ.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// The op-occ.
    pub op_occ_id: VnfLcmOpOccId,
    /// Position in the journal, from 1, assigned by the store.
    pub seq: i64,
    /// Name of the step.
    pub step: String,
    /// What happened.
    pub outcome: StepOutcome,
    /// When.
    pub at: Timestamp,
    /// Step-specific detail.
    pub detail: Value,
}

/// A notification to deliver, written to the outbox in the same transaction as the change it
/// reports.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOutboxRow {
    /// The subscription it is sent for.
    pub subscription_id: SubscriptionId,
    /// Where to POST it.
    pub callback_uri: String,
    /// The notification body.
    pub payload: Value,
    /// Earliest delivery time.
    pub not_before: Timestamp,
    /// The queue within the subscription (for lifecycle notifications, the VNF instance they
    /// are about): rows of one subscription with one key are delivered one at a time, in the
    /// order they were enqueued; different queues are delivered concurrently.
    pub ordering_key: String,
    /// The W3C `traceparent` of the span the notification was made in (an operation
    /// occurrence's, a request's), so that its delivery continues that trace; `None` when
    /// nothing exports traces.
    pub traceparent: Option<String>,
}

/// Delivery state of an outbox row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxStatus {
    /// Waiting for (re)delivery.
    Pending,
    /// Gave up after the maximum number of attempts; kept for inspection.
    Dead,
}

/// A notification in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRow {
    /// Store-assigned identifier (increasing).
    pub id: i64,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// Where to POST it.
    pub callback_uri: String,
    /// The notification body.
    pub payload: Value,
    /// Failed delivery attempts so far.
    pub attempts: i64,
    /// When the next attempt is due.
    pub next_attempt_at: Timestamp,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// Pending or dead.
    pub status: OutboxStatus,
    /// The W3C `traceparent` it was written with ([`NewOutboxRow::traceparent`]).
    pub traceparent: Option<String>,
}

/// The outbox rows of one subscription in one status, counted by the store (one aggregate
/// query, whatever the number of rows): what `/metrics` reports per subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxSummary {
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// Pending or dead.
    pub status: OutboxStatus,
    /// How many rows.
    pub rows: i64,
    /// When the oldest of them was enqueued.
    pub oldest: Timestamp,
}

/// A callback some pending outbox rows wait for after failed attempts (its subscriber did
/// not answer): what a deliverer probes to notice the subscriber's return
/// ([`crate::OutboxStore::outbox_waiting_callbacks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingCallback {
    /// The callback URI.
    pub callback_uri: String,
    /// A subscription of the waiting rows (the smallest id): whose credentials a probe
    /// authenticates with.
    pub subscription_id: SubscriptionId,
}

/// A kind of subscription resource the store keeps (lifecycle, package management, ...): one
/// table and one id space for all of them, told apart by [`SubscriptionResource::KIND`].
pub trait SubscriptionResource:
    serde::Serialize
    + serde::de::DeserializeOwned
    + Clone
    + PartialEq
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The stored `kind` of this resource.
    const KIND: &'static str;
    /// What the resource is called in errors.
    const WHAT: &'static str;
    /// The subscription id.
    fn id(&self) -> &SubscriptionId;
    /// Where notifications go.
    fn callback_uri(&self) -> &str;
    /// The canonical form of the resource's filter ([`canonical_filter`]).
    fn canonical_filter(&self) -> String;
    /// [`Self::KIND`] and [`Self::WHAT`], as the kind-erased [`crate::Store`] methods take
    /// them.
    fn kind() -> crate::SubscriptionKind {
        crate::SubscriptionKind {
            name: Self::KIND,
            what: Self::WHAT,
        }
    }
}

/// `SubscriptionResource` for subscription types whose `id`, `callbackUri` and `filter`
/// members are named alike: the type, its kind, what it is called in messages, and the
/// function that makes its filter canonical.
macro_rules! subscription_resources {
    ($($ty:ty, $kind:literal, $what:literal, $canonical:ident;)+) => {$(
        impl SubscriptionResource for $ty {
            const KIND: &'static str = $kind;
            const WHAT: &'static str = $what;
            fn id(&self) -> &SubscriptionId {
                &self.id
            }
            fn callback_uri(&self) -> &str {
                &self.callback_uri
            }
            fn canonical_filter(&self) -> String {
                $canonical(self.filter.as_ref())
            }
        }
    )+};
}

subscription_resources! {
    LccnSubscription, "lcm", "subscription", canonical_filter;
    PkgmSubscription, "pkgm", "VNF package management subscription", canonical_pkgm_filter;
    FmSubscription, "fm", "FM subscription", canonical_fm_filter;
    PmSubscription, "pm", "PM subscription", canonical_of;
}

/// A stored VNF performance management subscription (same table and id space as the others).
pub type PmSubscriptionRecord = StoredSubscription<PmSubscription>;

/// [`canonical_filter`] of a VNF performance management filter, for
/// [`crate::SubscriptionStore::find_duplicate_subscription`].
pub fn canonical_pm_filter(filter: Option<&PmNotificationsFilter>) -> String {
    canonical_of(filter)
}

/// Which kind of performance management resource a [`PmResource`] is; a backend keeps each
/// kind apart (the SQL backend maps it to a table of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PmKind {
    /// PM jobs ([`PmJob`]).
    Job,
    /// Thresholds ([`Threshold`]).
    Threshold,
}

/// A kind of performance management resource kept apart from the others (PM jobs,
/// thresholds): a document with sealed callback credentials, collector state and a version.
pub trait PmResource:
    serde::Serialize
    + serde::de::DeserializeOwned
    + Clone
    + PartialEq
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Which kind this is.
    const KIND: PmKind;
    /// What the resource is called in errors.
    const WHAT: &'static str;
    /// The resource id.
    fn id(&self) -> &str;
    /// The port of this kind's resources in `store` (see `dyn Store::pm`).
    fn port(store: &dyn crate::PmStore) -> &dyn crate::PmResourceStore<Self>;
}

impl PmResource for PmJob {
    const KIND: PmKind = PmKind::Job;
    const WHAT: &'static str = "PM job";
    fn id(&self) -> &str {
        &self.id
    }
    fn port(store: &dyn crate::PmStore) -> &dyn crate::PmResourceStore<Self> {
        store
    }
}

impl PmResource for Threshold {
    const KIND: PmKind = PmKind::Threshold;
    const WHAT: &'static str = "threshold";
    fn id(&self) -> &str {
        &self.id
    }
    fn port(store: &dyn crate::PmStore) -> &dyn crate::PmResourceStore<Self> {
        store
    }
}

/// A stored PM job or threshold.
#[derive(Clone, PartialEq)]
pub struct StoredPm<T> {
    /// The resource.
    pub resource: T,
    /// The request's callback credentials, encrypted by the caller.
    pub authentication: Option<Vec<u8>>,
    /// What the collector keeps between runs (opaque to the store).
    pub state: Option<String>,
}

impl<T: fmt::Debug> fmt::Debug for StoredPm<T> {
    // The credentials are shown by size only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredPm")
            .field("resource", &self.resource)
            .field(
                "authentication",
                &self
                    .authentication
                    .as_ref()
                    .map(|a| format!("<{} bytes>", a.len())),
            )
            .field("state", &self.state)
            .finish()
    }
}

/// A stored PM job.
pub type PmJobRecord = StoredPm<PmJob>;
/// A stored threshold.
pub type ThresholdRecord = StoredPm<Threshold>;

/// A stored performance report of a PM job.
#[derive(Debug, Clone, PartialEq)]
pub struct PmReportRecord {
    /// The report id.
    pub id: String,
    /// The PM job.
    pub job_id: String,
    /// When it became available.
    pub ready_time: vnfm_types::DateTime,
    /// The report.
    pub report: PerformanceReport,
}

/// A stored VNF fault management subscription (same table and id space as the others).
pub type FmSubscriptionRecord = StoredSubscription<FmSubscription>;

/// A stored alarm: the document and the key that de-duplicates it (at most one open alarm,
/// i.e. one without `alarmClearedTime`, per key).
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmRecord {
    /// The alarm document.
    pub alarm: Alarm,
    /// What identifies the fault (e.g. instance, VNFC and probable cause).
    pub dedup_key: String,
}

/// A stored subscription: the resource, the canonical form of its filter (for duplicate
/// detection) and its callback credentials, encrypted by the caller.
#[derive(Clone, PartialEq)]
pub struct StoredSubscription<S> {
    /// The subscription resource.
    pub subscription: S,
    /// The canonical form of `subscription`'s filter.
    pub canonical_filter: String,
    /// Encrypted `authentication` of the request, if any.
    pub authentication: Option<Vec<u8>>,
    /// The project of the caller that created it (see [`ProjectScope`]); set on creation only.
    pub project: Option<String>,
}

/// A stored lifecycle (`LccnSubscription`) subscription.
pub type SubscriptionRecord = StoredSubscription<LccnSubscription>;

/// A stored VNF package management subscription. Package management and lifecycle
/// subscriptions share one id space: an id names one subscription of either kind.
pub type PkgmSubscriptionRecord = StoredSubscription<PkgmSubscription>;

impl<S: SubscriptionResource> StoredSubscription<S> {
    /// A record for `subscription`, computing its canonical filter.
    pub fn new(subscription: S, authentication: Option<Vec<u8>>) -> Self {
        let canonical_filter = subscription.canonical_filter();
        StoredSubscription {
            subscription,
            canonical_filter,
            authentication,
            project: None,
        }
    }

    /// The record, belonging to `project`.
    pub fn in_project(mut self, project: Option<String>) -> Self {
        self.project = project;
        self
    }
}

impl<S: fmt::Debug> fmt::Debug for StoredSubscription<S> {
    // The credentials are shown by size only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredSubscription")
            .field("subscription", &self.subscription)
            .field("canonical_filter", &self.canonical_filter)
            .field(
                "authentication",
                &self
                    .authentication
                    .as_ref()
                    .map(|a| format!("<{} bytes>", a.len())),
            )
            .field("project", &self.project)
            .finish()
    }
}

/// The canonical JSON of a subscription filter: object members sorted, arrays (which the
/// filter uses as sets) sorted and de-duplicated, empty members dropped. Two filters that
/// select the same notifications in the same way have the same canonical form, so
/// [`crate::SubscriptionStore::find_duplicate_subscription`] can compare strings. An absent filter is `{}`.
pub fn canonical_filter(filter: Option<&LifecycleChangeNotificationsFilter>) -> String {
    canonical_of(filter)
}

/// [`canonical_filter`] of a VNF package management filter, for
/// [`crate::SubscriptionStore::find_duplicate_subscription`].
pub fn canonical_pkgm_filter(filter: Option<&PkgmNotificationsFilter>) -> String {
    canonical_of(filter)
}

/// [`canonical_filter`] of a VNF fault management filter, for
/// [`crate::SubscriptionStore::find_duplicate_subscription`].
pub fn canonical_fm_filter(filter: Option<&FmNotificationsFilter>) -> String {
    canonical_of(filter)
}

pub(crate) fn canonical_of<F: serde::Serialize>(filter: Option<&F>) -> String {
    let value = filter
        .and_then(|f| serde_json::to_value(f).ok())
        .unwrap_or(Value::Object(Default::default()));
    canonical_json(&value)
        .unwrap_or_else(|| Value::Object(Default::default()))
        .to_string()
}

/// `None` for values that select nothing extra (empty objects and arrays, null).
fn canonical_json(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(map) => {
            let mut members: Vec<(String, Value)> = map
                .iter()
                .filter_map(|(k, v)| canonical_json(v).map(|v| (k.clone(), v)))
                .collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            if members.is_empty() {
                return None;
            }
            Some(Value::Object(members.into_iter().collect()))
        }
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().filter_map(canonical_json).collect();
            items.sort_by_cached_key(|v| v.to_string());
            items.dedup();
            if items.is_empty() {
                return None;
            }
            Some(Value::Array(items))
        }
        other => Some(other.clone()),
    }
}

/// A VIM registered with the VNFM (Tacker's "default VIM", or one a MgmtDriver hook created).
#[derive(Clone, PartialEq)]
pub struct VimRecord {
    /// Identifier (the `vimId` that `vimConnectionInfo` entries reference).
    pub id: VimId,
    /// Display name.
    pub name: String,
    /// VIM type, e.g. `ETSINFV.OPENSTACK_KEYSTONE.V_3` or `kubernetes`.
    pub vim_type: String,
    /// Non-secret access information (endpoint, project, ...).
    pub public: Value,
    /// Secret access information, encrypted by the caller.
    pub secret: Vec<u8>,
    /// The VNF instance whose lifecycle hook registered the VIM, if any.
    pub created_by_instance: Option<VnfInstanceId>,
    /// The project the VIM belongs to (`None`: no project, seen only with
    /// [`ProjectScope::All`]). Each project has its own default VIM.
    pub project: Option<String>,
    /// Whether the VIM is shared with every project (Tacker's `shared`): callers of other
    /// projects read it and their instances use it; it stays in, and the default VIM only of,
    /// its own project.
    pub shared: bool,
}

impl fmt::Debug for VimRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VimRecord")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("vim_type", &self.vim_type)
            .field("public", &self.public)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .field("created_by_instance", &self.created_by_instance)
            .field("project", &self.project)
            .field("shared", &self.shared)
            .finish()
    }
}

/// One transactional step of a runner: see [`crate::OpOccStore::record_step`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The new op-occ document (its `operationState` is the new state).
    pub occ: VnfLcmOpOcc,
    /// The state the caller last read.
    pub expected_state: LcmOperationStateType,
    /// The version the caller last read.
    pub expected_version: Version,
    /// The lease owner the caller runs as.
    pub owner: String,
    /// Journal row to append.
    pub journal: Option<JournalStep>,
    /// New instance document and the version it replaces.
    pub instance: Option<(VnfInstance, Version)>,
    /// Notifications to enqueue.
    pub outbox: Vec<NewOutboxRow>,
    /// Op-occ data entries (key, value) to upsert, as [`crate::OpOccStore::put_op_occ_data`] does.
    pub data: Vec<(String, Value)>,
}

/// The versions written by [`crate::OpOccStore::record_step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepWritten {
    /// New version of the op-occ.
    pub op_occ_version: Version,
    /// New version of the instance, when it was updated.
    pub instance_version: Option<Version>,
    /// Sequence number of the journal row, when one was appended.
    pub journal_seq: Option<i64>,
}

/// What must still hold for [`crate::OpOccStore::begin_operation`] to create an occurrence that
/// begins at once: the facts the caller checked the request against, read before the
/// occurrence existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartCondition {
    /// The instance's version the caller validated and planned the request against.
    pub instance_version: Version,
    /// Whether the instance must have registered no VIM
    /// ([`crate::VimStore::vims_created_by`] empty).
    pub no_vims_created: bool,
}

/// SOL003 spelling of an operation state.
pub fn state_str(s: LcmOperationStateType) -> &'static str {
    use LcmOperationStateType as S;
    match s {
        S::Starting => "STARTING",
        S::Processing => "PROCESSING",
        S::Completed => "COMPLETED",
        S::FailedTemp => "FAILED_TEMP",
        S::Failed => "FAILED",
        S::RollingBack => "ROLLING_BACK",
        S::RolledBack => "ROLLED_BACK",
    }
}

/// The operation state of its stored spelling ([`state_str`]).
pub fn parse_state(s: &str) -> Option<LcmOperationStateType> {
    use LcmOperationStateType as S;
    Some(match s {
        "STARTING" => S::Starting,
        "PROCESSING" => S::Processing,
        "COMPLETED" => S::Completed,
        "FAILED_TEMP" => S::FailedTemp,
        "FAILED" => S::Failed,
        "ROLLING_BACK" => S::RollingBack,
        "ROLLED_BACK" => S::RolledBack,
        _ => return None,
    })
}

/// The JSON string spelling of a unit enum (`INSTANTIATED`, `SCALE_TO_LEVEL`, ...).
pub fn enum_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A VNF package known to the VNFM: its `VnfPkgInfo` document (kept as JSON: the store does
/// not interpret it) and, once onboarded, the `vnfdId` of its VNFD, unique among packages.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageRecord {
    /// Package identifier (`vnfPkgId`).
    pub id: String,
    /// `vnfdId` of the package's VNFD, once known. Two packages never share one.
    pub vnfd_id: Option<String>,
    /// The `VnfPkgInfo` document.
    pub info: Value,
    /// The project of the caller that created it (see [`ProjectScope`]); set on creation only:
    /// updates keep the stored one.
    pub project: Option<String>,
}

#[cfg(test)]
mod tests;
