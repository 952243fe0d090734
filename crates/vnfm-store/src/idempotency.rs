//! The records of idempotency keys ([`crate::IdempotencyStore`]): a caller's key, the request it
//! was first used for, the id that request reserved for what it creates, and its first answer.

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
}

/// A request to hold the key `key` of `scope` ([`crate::IdempotencyStore::claim_idempotency_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// Whose key it is (a project, a client): keys of different scopes never meet.
    pub scope: String,
    /// The key the caller chose.
    pub key: String,
    /// The request it comes with.
    pub fingerprint: RequestFingerprint,
    /// The id the request will give what it creates, if the key is new.
    pub reserved_id: String,
    /// Who runs the request (a process incarnation), the fencing token of
    /// [`crate::IdempotencyStore::release_idempotency_key`].
    pub owner: String,
    /// Now, as the caller's clock says.
    pub now: Timestamp,
    /// Until when the request may run before another request with the key may take it over.
    pub locked_until: Timestamp,
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
    /// The id that request reserved for what it creates.
    pub reserved_id: String,
    /// Who runs (or ran) the request.
    pub owner: String,
    /// Until when the owner may run it before another request may take the key over.
    pub locked_until: Timestamp,
    /// When the key was first used.
    pub created_at: Timestamp,
    /// When it expires.
    pub expires_at: Timestamp,
    /// The first answer, once given (`None`: in flight).
    pub response: Option<StoredResponse>,
}

/// What [`crate::IdempotencyStore::claim_idempotency_key`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaimed {
    /// The key was free (or had expired): it is now the claim's, with the claim's reserved id.
    New(IdempotencyRecord),
    /// The key's request had stopped (its lock passed unanswered): it is now the claim's, with
    /// the first request's reserved id, so whatever that request committed is found again.
    TakenOver(IdempotencyRecord),
    /// The key is held, or answered: nothing changed.
    Existing(IdempotencyRecord),
}

impl KeyClaimed {
    /// The record, whatever happened.
    pub fn record(&self) -> &IdempotencyRecord {
        match self {
            KeyClaimed::New(r) | KeyClaimed::TakenOver(r) | KeyClaimed::Existing(r) => r,
        }
    }
}
