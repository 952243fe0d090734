//! Subscriptions, generic over their kind, and the routing of notifications to them.
//!
//! - [`managed`]: what every kind shares, written once over [`SubscriptionKind`]
//!   ([`ManagedSubscriptions`]): the request checks (an http(s) `callbackUri`; complete
//!   `BASIC` / `OAUTH2_CLIENT_CREDENTIALS` parameters; `TLS_CERT` refused with 422), duplicate
//!   detection (same canonical filter and callback: [`Created::Existing`], for SOL003's
//!   `303 See Other`), the optional `GET` test of the callback (must answer
//!   `204 No Content`), callback credentials sealed with the [`crate::Keyring`] (never
//!   returned), and a snapshot of all subscriptions for routing, each with the projects whose
//!   notifications it receives ([`Routing`]: its own project's, or every project's for a
//!   subscription of no project).
//! - [`lccn`]: lifecycle change notification subscriptions ([`LccnKind`], [`Subscriptions`])
//!   and their [`SubscriptionRouter`]; [`crate::pkgm_subscriptions`] holds the package
//!   management kind (the fault management, performance management and indicator kinds are
//!   `vnfm-assurance`'s).
//! - [`matching`]: the SOL003 filter semantics the kinds share (pure).

mod checks;
pub mod lccn;
pub mod managed;
pub mod matching;

pub(crate) use checks::open_sealed;
pub use checks::{check_url, seal_authentication, validate_authentication, verify_callback};
pub use lccn::{LccnKind, SubscriptionRouter, Subscriptions, payload_for, validate_request};
pub use managed::{
    CreateOptions, Created, DEFAULT_CACHE_TTL, ManagedSubscriptions, Routing, SubscriptionKind,
};
pub(crate) use matching::products_match;
pub use matching::{
    NotificationContext, constraint, instance_matches, matches, notification_instance, passes,
};

/// The W3C `traceparent` of the current span, kept with the outbox rows written in it
/// ([`vnfm_store::NewOutboxRow::traceparent`]) so that their delivery continues its trace;
/// `None` with tracing off (one flag read). Every routing of notifications to the outbox
/// takes it, this crate's and `vnfm-assurance`'s.
pub fn current_traceparent() -> Option<String> {
    vnfm_trace::traceparent(&tracing::Span::current())
}
