//! The normalized Application Service Descriptor (ASD) model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A normalized Application Service Descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Asd {
    /// `asdId` / `asd_id`.
    pub asd_id: String,
}
