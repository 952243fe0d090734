//! Named views of the store: for each component of the core that uses several aggregates,
//! the set of ports it uses, as one trait. Each is a supertrait of [`crate::Store`], so the
//! composition root hands an `Arc<dyn Store>` to a component as its view by trait upcasting
//! (a plain coercion: `Lcm::builder(store.clone(), ...)`); a component that uses a single
//! aggregate takes that port's trait instead. A view names no method of its own and is
//! implemented for every type that implements its ports.

use super::{
    AlarmStore, IdempotencyStore, IndicatorStore, InstanceStore, OpOccStore, OutboxStore,
    PackageStore, PmStore, SettingStore, SubscriptionDocumentStore, VimStore,
};

/// Subscription managers (`vnfm_lcm::ManagedSubscriptions`, the notification routers): the
/// subscriptions, and the instances their filters and projects name.
pub trait SubscriptionManagerStore: SubscriptionDocumentStore + InstanceStore {}

impl<T: SubscriptionDocumentStore + InstanceStore + ?Sized> SubscriptionManagerStore for T {}

/// The VIM registry (`vnfm_lcm::VimRegistry`): the VIMs, and the instances that use them.
pub trait VimRegistryStore: VimStore + InstanceStore {}

impl<T: VimStore + InstanceStore + ?Sized> VimRegistryStore for T {}

/// The notification deliverer (`vnfm_lcm::Deliverer`): the outbox, and the subscriptions'
/// callback credentials.
pub trait DelivererStore: OutboxStore + SubscriptionDocumentStore {}

impl<T: OutboxStore + SubscriptionDocumentStore + ?Sized> DelivererStore for T {}

/// The LCM runner (`vnfm_lcm::Lcm`): instances, op-occs (lock, leases, journal), the VIMs its
/// steps read and write, and the idempotency keys of the operations it starts.
pub trait LcmStore: InstanceStore + OpOccStore + VimStore + IdempotencyStore {}

impl<T: InstanceStore + OpOccStore + VimStore + IdempotencyStore + ?Sized> LcmStore for T {}

/// Performance management (`vnfm_assurance::PerformanceManager`): PM jobs, thresholds and
/// reports, and its subscriptions.
pub trait PmManagerStore: PmStore + SubscriptionManagerStore {}

impl<T: PmStore + SubscriptionManagerStore + ?Sized> PmManagerStore for T {}

/// VNF indicators (`vnfm_assurance::IndicatorManager`): the values, and its subscriptions.
pub trait IndicatorManagerStore: IndicatorStore + SubscriptionManagerStore {}

impl<T: IndicatorStore + SubscriptionManagerStore + ?Sized> IndicatorManagerStore for T {}

/// Fault management (`vnfm_assurance::FaultManager`): alarms and their notifications, the
/// op-occs that decide whether an instance is busy, and its subscriptions.
pub trait FaultManagerStore:
    AlarmStore + OpOccStore + OutboxStore + SubscriptionManagerStore
{
}

impl<T: AlarmStore + OpOccStore + OutboxStore + SubscriptionManagerStore + ?Sized> FaultManagerStore
    for T
{
}

/// The HTTP API's handlers (`vnfm_api::AppState`), for what they read and write without a
/// service: instance and op-occ views and listings, the outbox's dead letters, packages,
/// subscriptions, VIMs and the schema version.
pub trait ApiStore:
    InstanceStore
    + OpOccStore
    + OutboxStore
    + PackageStore
    + SubscriptionDocumentStore
    + VimStore
    + SettingStore
{
}

impl<T> ApiStore for T where
    T: InstanceStore
        + OpOccStore
        + OutboxStore
        + PackageStore
        + SubscriptionDocumentStore
        + VimStore
        + SettingStore
        + ?Sized
{
}

/// The package repository (`vnfm::lcm::Packages`): packages and their content, and the
/// instances that use them.
pub trait PackageRepositoryStore: PackageStore + InstanceStore {}

impl<T: PackageStore + InstanceStore + ?Sized> PackageRepositoryStore for T {}
