//! The records of idempotency keys ([`crate::IdempotencyStore`]): a caller's key, the request it
//! was first used for, the id of what that request created, and its first answer.

use crate::model::Timestamp;

/// The request an idempotency key was first sent with: a retry must be the same request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFingerprint {
    /// The method (`POST`, `PATCH`, or the core operation's name for a key of the embedding API).
    pub method: String,
    /// The path of the request (with its ids), or the core operation's target.
    pub route: String,
    /// The lowercase hex SHA-256 of the request body.
    pub body_sha256: String,
}

/// A key's first answer, kept to be sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Vec<u8>,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
}

/// A key a request carries while it runs ([`crate::client_key`]): the transaction that creates
/// its resource writes it, with the resource's id, so the key is committed exactly when the
/// resource is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingKey {
    /// Whose key it is (a project, a client): keys of different scopes never meet.
    pub scope: String,
    /// The key the caller chose.
    pub key: String,
    /// The request it comes with.
    pub fingerprint: RequestFingerprint,
    /// Who runs the request (a process incarnation), for diagnosis.
    pub owner: String,
    /// Now, as the caller's clock says; a stored key that expired by then is replaced.
    pub now: Timestamp,
    /// When the key expires (and is swept).
    pub expires_at: Timestamp,
}

/// A stored idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// Whose key it is.
    pub scope: String,
    /// The key.
    pub key: String,
    /// The request it was first used for.
    pub fingerprint: RequestFingerprint,
    /// The id of what that request created, committed with it.
    pub resource_id: String,
    /// Who ran the request.
    pub owner: String,
    /// When the key was first used.
    pub created_at: Timestamp,
    /// When it expires.
    pub expires_at: Timestamp,
    /// The first answer, committed with the resource (`None`: the request's answer is made
    /// again from its resource, e.g. a task's 202 from its occurrence id).
    pub response: Option<StoredResponse>,
}
