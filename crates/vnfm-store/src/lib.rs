//! The store port of the VNF lifecycle-management core: what the core persists, as one
//! object-safe async trait per aggregate ([`InstanceStore`], [`OpOccStore`], [`OutboxStore`],
//! [`SubscriptionDocumentStore`], [`AlarmStore`], [`PmStore`] (with one [`PmResourceStore`]
//! per PM resource kind), [`IndicatorStore`],
//! [`VimStore`], [`PackageStore`], [`SettingStore`], [`IdempotencyStore`]) and their sum [`Store`] (used as
//! `Arc<dyn Store>`, with [`prelude`] in scope, by the composition root only: each component
//! takes the port it uses, or the named view of the several it uses, such as [`LcmStore`],
//! which `Arc<dyn Store>` upcasts to), its records and queries
//! ([`model`](crate::Page) types) and its one error type ([`StoreError`]). No SQL driver:
//! the implementations (SQLite and PostgreSQL) live in `vnfm-store-sql`, which the
//! composition root opens.
//!
//! The trait covers:
//! - VNF instances (SOL003 `VnfInstance` documents with a [`Version`] for optimistic
//!   concurrency and HTTP entity tags), filtered keyset-paginated lists and a lazy stream;
//! - operation occurrences with the **per-instance lock** (at most one non-final op-occ per
//!   instance, across processes), runner **leases** with takeover of dead runners' work, the
//!   per-op-occ **step journal**, and hook data that survives retries;
//! - the notification **outbox** (written in the same transaction as the change it reports,
//!   claimed by one sender at a time, retried, dead-lettered);
//! - subscriptions of every kind ([`SubscriptionResource`]: one table and id space, with their
//!   encrypted credentials and duplicate detection; typed through [`SubscriptionStore`]), alarms, PM jobs, thresholds and reports,
//!   VNF indicator values, and VIMs (with the index of
//!   instances using each);
//! - VNF packages and their content; package changes enqueue their notifications in the same
//!   transaction ([`crate::PackageStore::update_package_and_notify`]);
//! - idempotency keys of retry-safe requests ([`IdempotencyStore`]).

mod error;
mod idempotency;
mod indicator;
mod json;
mod model;
mod store;
mod subscriptions;

pub use error::{Conflict, StoreError};
pub use idempotency::{IdempotencyRecord, PendingKey, RequestFingerprint};
pub use indicator::{IndicatorSubscriptionRecord, canonical_indicator_filter};
pub use json::{document_from_json, document_to_json};
pub use model::{
    AlarmRecord, DEFAULT_PAGE_SIZE, FmSubscriptionRecord, InstanceQuery, JournalEntry, JournalStep,
    Lease, MAX_PAGE_SIZE, NameFilter, NewOutboxRow, OpOccQuery, OutboxRow, OutboxStatus,
    OutboxSummary, PackageRecord, Page, PkgmSubscriptionRecord, PmJobRecord, PmKind,
    PmReportRecord, PmResource, PmSubscriptionRecord, ProjectScope, ScopedKind, StartCondition,
    StepOutcome, StepRecord, StepWritten, StoredPm, StoredSubscription, SubscriptionRecord,
    SubscriptionResource, ThresholdRecord, Timestamp, Version, VimRecord, WaitingCallback,
    canonical_filter, canonical_fm_filter, canonical_pkgm_filter, canonical_pm_filter, enum_str,
    page_size, parse_state, state_str,
};
pub use store::{
    AlarmStore, ApiStore, CONTENT_CHUNK_BYTES, DelivererStore, EnqueueListener, FaultManagerStore,
    IdempotencyStore, IndicatorManagerStore, IndicatorStore, InstanceStore, LcmStore, OpOccStore,
    OutboxStore, PackageRepositoryStore, PackageStore, PmManagerStore, PmResourceStore, PmStore,
    Result, SettingStore, Store, SubscriptionDocumentStore, SubscriptionManagerStore,
    VimRegistryStore, VimStore,
};

/// The store ports' traits, for code that calls their methods on an `Arc<dyn Store>` (a
/// supertrait's methods need the supertrait in scope): `use vnfm_store::prelude::*;`.
pub mod prelude {
    pub use crate::store::{
        AlarmStore, IdempotencyStore, IndicatorStore, InstanceStore, OpOccStore, OutboxStore,
        PackageStore, PmResourceStore, PmStore, SettingStore, Store, SubscriptionDocumentStore,
        VimStore,
    };
    pub use crate::subscriptions::SubscriptionStore;
}
pub use subscriptions::{SubscriptionDocument, SubscriptionKind, SubscriptionStore};
