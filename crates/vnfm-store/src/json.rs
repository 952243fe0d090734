//! Stored documents as JSON text, with errors that never echo a document's content.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;

/// The JSON text of a document of `kind` (what it is called in errors).
pub fn document_to_json<T: Serialize>(kind: &'static str, v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v)
        .map_err(|e| StoreError::Invalid(format!("{kind} does not serialize to JSON: {e}")))
}

/// Decodes the stored document `id` of `kind`. The error ([`StoreError::Corrupt`]) names the
/// position, never the content (documents may hold credentials).
pub fn document_from_json<T: DeserializeOwned>(
    kind: &'static str,
    id: &str,
    doc: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(doc).map_err(|e| StoreError::Corrupt {
        kind,
        id: id.to_owned(),
        reason: format!(
            "{:?} error in stored JSON at line {} column {}",
            e.classify(),
            e.line(),
            e.column()
        ),
    })
}
