//! The store port: one trait per aggregate, and [`crate::Store`], their sum.

mod alarms;
mod idempotency;
mod indicators;
mod instances;
mod op_occs;
mod outbox;
mod packages;
mod pm;
mod settings;
mod subscription_documents;
mod views;
mod vims;

pub use alarms::AlarmStore;
pub use idempotency::IdempotencyStore;
pub use indicators::IndicatorStore;
pub use instances::InstanceStore;
pub use op_occs::OpOccStore;
pub use outbox::{EnqueueListener, OutboxStore};
pub use packages::PackageStore;
pub use pm::{PmResourceStore, PmStore};
pub use settings::SettingStore;
pub use subscription_documents::SubscriptionDocumentStore;
pub use views::{
    ApiStore, DelivererStore, FaultManagerStore, IndicatorManagerStore, LcmStore,
    PackageRepositoryStore, PmManagerStore, SubscriptionManagerStore, VimRegistryStore,
};
pub use vims::VimStore;

use crate::error::StoreError;

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Largest piece package content is stored in ([`crate::PackageStore::put_package_content_from`]).
pub const CONTENT_CHUNK_BYTES: usize = 1 << 20;

/// The durable store of the LCM core: the sum of one port per aggregate ([`crate::InstanceStore`],
/// [`crate::OpOccStore`], [`crate::OutboxStore`], [`crate::SubscriptionDocumentStore`], [`crate::AlarmStore`],
/// [`crate::PmStore`], [`crate::IndicatorStore`], [`crate::VimStore`], [`crate::PackageStore`], [`crate::SettingStore`], [`crate::IdempotencyStore`]), for
/// the composition root, which hands each component the port it uses (or the named view of
/// several, such as [`crate::LcmStore`]) by trait upcasting. Every type that implements the ports is a
/// `Store`. Object-safe: use it as `Arc<dyn Store>`, with [`crate::prelude`] in scope for the
/// ports' methods.
///
/// # Records and versions
/// VNF instances, op-occs and VIMs carry a [`crate::Version`] that grows with every change of the
/// document. Updates are compare-and-swap on it: a stale version gives
/// [`crate::StoreError::VersionMismatch`] and writes nothing.
///
/// # The per-instance lock
/// At most one op-occ per VNF instance is in a non-final state (`STARTING`, `PROCESSING`,
/// `ROLLING_BACK`, `FAILED_TEMP`; see `vnfm_lcm::state::holds_instance`). The store enforces
/// it in [`crate::OpOccStore::start_operation`], across every process sharing the database.
///
/// # Leases
/// A runner works on an op-occ under a [`crate::Lease`]. Op-occs in `STARTING`, `PROCESSING` and
/// `ROLLING_BACK` are leased; when the runner dies its lease expires and
/// [`crate::OpOccStore::claim_expired`] hands the op-occ to exactly one live process. `FAILED_TEMP` and final
/// op-occs have no lease ([`crate::OpOccStore::record_step`] drops it on entering those states): an operator
/// action (retry, rollback, fail) takes one with [`crate::OpOccStore::claim_operation`]. Lease operations
/// do not change the op-occ's version.
///
/// A runner's loop: `start_operation` (or `claim_*`), then for each step `record_step` with the
/// version returned by the previous call, `renew_lease` in the background, and on a
/// [`crate::Conflict::LeaseLost`] stop at once: another process owns the op-occ now.
pub trait Store:
    InstanceStore
    + OpOccStore
    + OutboxStore
    + SubscriptionDocumentStore
    + AlarmStore
    + PmStore
    + IndicatorStore
    + VimStore
    + PackageStore
    + SettingStore
    + IdempotencyStore
    + LcmStore
    + VimRegistryStore
    + DelivererStore
    + SubscriptionManagerStore
    + PmManagerStore
    + IndicatorManagerStore
    + FaultManagerStore
    + ApiStore
    + PackageRepositoryStore
{
}

impl<T> Store for T where
    T: InstanceStore
        + OpOccStore
        + OutboxStore
        + SubscriptionDocumentStore
        + AlarmStore
        + PmStore
        + IndicatorStore
        + VimStore
        + PackageStore
        + SettingStore
        + IdempotencyStore
        + ?Sized
{
}
