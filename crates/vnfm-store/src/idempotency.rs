//! The records of idempotency keys ([`crate::IdempotencyStore`]): a caller's key, the request it
//! was first used for, the id of what that request created, and what the caller kept of its
//! first answer.
//!
//! A key is an explicit value ([`PendingKey`]) that a caller hands to a creating write (a
//! store method ending in `_keyed`); the write commits the key with the created resource's id
//! in its own transaction, so the key is committed exactly when the resource is. How a
//! repeated request is answered is the caller's business: the store keeps the caller's bytes
//! ([`crate::IdempotencyStore::keep_idempotency_answer`]) without reading them.

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

/// The key of a request that may create a resource, handed to the store's creating write:
/// that write commits it with the resource's id, in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingKey {
    /// Whose key it is (a project, a client): keys of different scopes never meet.
    pub scope: String,
    /// The key the caller chose.
    pub key: String,
    /// The request it comes with.
    pub fingerprint: RequestFingerprint,
    /// Who runs the request: unique per attempt, so the attempt that committed the key can
    /// tell its own record from another's.
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
    /// The attempt that committed it ([`PendingKey::owner`]).
    pub owner: String,
    /// When the key was first used.
    pub created_at: Timestamp,
    /// When it expires.
    pub expires_at: Timestamp,
    /// What the caller kept of its first answer, opaque to the store; `None` until it is kept
    /// (the caller then answers again from the resource).
    pub kept_answer: Option<Vec<u8>>,
}
