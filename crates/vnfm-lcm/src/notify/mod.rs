//! Delivery of lifecycle change and VNF package management notifications from the store's
//! outbox to the subscribers' callback URIs.
//!
//! Notifications are written to the outbox in the same transaction as the change they report
//! (see [`crate::subscriptions::SubscriptionRouter`] and
//! [`crate::pkgm_subscriptions::PkgmSubscriptions::route`]); the [`Deliverer`] is the background
//! loop that claims due rows, POSTs them, and records the outcome. Because all state lives in
//! the store, delivery is at-least-once across restarts and several replicas: a row is claimed
//! by one deliverer at a time, and a deliverer that dies loses its claims when they expire.
//!
//! Each subscription receives the notifications about one VNF instance (or one VNF package)
//! in the order they were written, one at a time (the outbox's queues, see
//! [`vnfm_store::NewOutboxRow::ordering_key`]): STARTING before PROCESSING before COMPLETED,
//! even when a send fails and waits for its retry, and across replicas. Different instances
//! and different subscriptions are delivered concurrently. A notification given up on (dead)
//! no longer holds back the ones behind it; it stays in the outbox until an operator sends it
//! again ([`vnfm_store::OutboxStore::outbox_redeliver`]: back at the front of its queue, due at
//! once) or discards it ([`vnfm_store::OutboxStore::outbox_discard`]).
//!
//! - [`Deliverer`] / [`DelivererConfig`]: the loop, its concurrency bound, retry schedule
//!   (exponential backoff with jitter), give-up rules and graceful shutdown;
//! - probing: while notifications to a callback wait in back-off (its subscriber did not
//!   answer), the deliverer tests the callback every [`DelivererConfig::probe_interval`]
//!   (`GET`, the SOL003 notification endpoint test); once it answers, the waiting
//!   notifications are due at once and go out in order, within seconds of the subscriber's
//!   return rather than at the next scheduled retry (up to `backoff_max` later);
//! - [`DeliveryWaker`]: wakes the deliverer; the composition root hands it to the store
//!   ([`vnfm_store::OutboxStore::on_enqueue`]), which calls it after every write that
//!   enqueued notifications;
//! - sending is the [`CallbackSender`](vnfm_driver_api::CallbackSender) port's job (HTTP with
//!   Basic or OAuth 2.0 client credentials in `vnfm-outbound`); the deliverer hands it the
//!   opened credentials and never logs them.

mod deliver;
mod probe;

pub use deliver::{Deliverer, DelivererConfig, DeliveryWaker};
pub use vnfm_driver_api::backoff_delay;
