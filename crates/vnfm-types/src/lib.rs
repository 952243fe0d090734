//! The ETSI NFV SOL003 v3.3.1 resource model of the VNF lifecycle management interface
//! (`/vnflcm/v2`), as serde types.
//!
//! Attribute names and enum values serialize exactly as the specification spells them
//! (`vnfInstanceId`, `NOT_INSTANTIATED`, `FAILED_TEMP`, `SCALE_TO_LEVEL`, ...). Optional
//! attributes are `Option`s that are omitted when `None`; free-form members
//! (`additionalParams`, `metadata`, `extensions`, `vnfConfigurableProperties`) are JSON maps.
//! Every type derives `JsonSchema`: the request schemas in `schemas/` are generated from them.
//!
//! ```
//! use vnfm_types::{InstantiateVnfRequest, ScaleType, ScaleVnfRequest};
//!
//! let req: ScaleVnfRequest = serde_json::from_str(
//!     r#"{"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}"#,
//! ).unwrap();
//! assert_eq!(req.scale_type, ScaleType::ScaleOut);
//! assert_eq!(req.steps(), 2);
//!
//! // A request missing a mandatory attribute is rejected with the attribute's name.
//! let err = serde_json::from_str::<InstantiateVnfRequest>("{}").unwrap_err();
//! assert!(err.to_string().contains("missing field `flavourId`"));
//! ```
//!
//! The [`v1`] module holds the SOL003 v2.6.1 (`/vnflcm/v1`) shapes that differ, with
//! conversions to and from this model.

pub mod common;
pub mod fm;
pub mod grant;
pub mod ids;
pub mod indicator;
pub mod instance;
pub mod links;
pub mod notification;
pub mod op_occ;
pub mod package;
pub mod pkgm_subscription;
pub mod pm;
pub mod requests;
pub mod subscription;
pub mod time;
pub mod v1;

pub use common::*;
pub use fm::*;
pub use grant::*;
pub use ids::*;
pub use indicator::*;
pub use instance::*;
pub use notification::*;
pub use op_occ::*;
pub use package::*;
pub use pkgm_subscription::*;
pub use pm::*;
pub use requests::*;
pub use subscription::*;

/// What can go wrong reading or converting SOL003 data.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A string is not an RFC 3339 date-time.
    #[error("invalid date-time {value:?}: expected RFC 3339, e.g. 2021-09-06T07:07:15Z")]
    InvalidDateTime {
        /// The offending value (truncated).
        value: String,
    },
    /// `operationParams` do not match the request type of the operation.
    #[error("operationParams of a {operation:?} operation are not a valid request: {source}")]
    OperationParams {
        /// The operation.
        operation: LcmOperationType,
        /// The serde error, naming the attribute.
        #[source]
        source: serde_json::Error,
    },
    /// A notification body has no `notificationType`.
    #[error("notification body has no notificationType attribute")]
    MissingNotificationType,
    /// A JSON value does not have the expected shape.
    #[error("invalid {what}: {source}")]
    Json {
        /// What was being read.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A v2.6.1 value cannot be expressed in v3.3.1 (or the other way round).
    #[error("cannot convert {what}: {reason}")]
    Conversion {
        /// The attribute that does not convert (a JSON-pointer-like path).
        what: String,
        /// Why.
        reason: String,
    },
}

/// `s` cut to at most `max` characters, with `…` appended when cut. Used wherever input
/// values are echoed in error messages, so a long (possibly secret) value is never repeated.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
