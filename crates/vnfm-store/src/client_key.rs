//! The idempotency key of the request a task runs, carried to the store's creating write.
//!
//! A caller runs a request inside [`with_pending_key`]; the store's methods that create a
//! resource (a VNF instance, an operation occurrence, a subscription, a PM job or threshold, a
//! VIM, a package) take the key ([`take`]) and write it in the same transaction as the
//! resource, with the resource's id. So the key is committed exactly when the resource is: a
//! retry after a crash between that commit and the answer finds both, and a second request
//! with the key that reaches its own creating write later is refused
//! ([`crate::Conflict::KeyTaken`]) with nothing of it kept. The key travels beside the
//! store's methods rather than through them so that every creating method carries it without
//! each caller passing it down.

use std::cell::RefCell;
use std::future::Future;

use crate::error::{Conflict, StoreError};
use crate::idempotency::PendingKey;

/// What became of the key of [`with_pending_key`] while its request ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAttachment {
    /// No creating write carried it: the request created nothing.
    NotAttached,
    /// It was committed with the resource `id`.
    Attached(String),
    /// Another request committed it first: this request's creating write was rolled back.
    Taken,
}

#[derive(Debug)]
struct Slot {
    pending: Option<PendingKey>,
    attachment: KeyAttachment,
}

tokio::task_local! {
    static SLOT: RefCell<Slot>;
}

/// Runs `request` with `key` pending: the first creating write of the store inside it writes
/// the key with its resource. Returns what `request` returned and what became of the key.
pub async fn with_pending_key<F: Future>(
    key: PendingKey,
    request: F,
) -> (F::Output, KeyAttachment) {
    let slot = RefCell::new(Slot {
        pending: Some(key),
        attachment: KeyAttachment::NotAttached,
    });
    SLOT.scope(slot, async move {
        let out = request.await;
        let attachment = SLOT.with(|s| s.borrow().attachment.clone());
        (out, attachment)
    })
    .await
}

/// For the store's creating methods: the pending key of the running request, if it has one
/// that no write has taken yet. Hand it back with [`settle`] once the write ended.
pub fn take() -> Option<PendingKey> {
    SLOT.try_with(|s| s.borrow_mut().pending.take())
        .ok()
        .flatten()
}

/// For the store's creating methods: records the outcome of the write that carried `key`
/// (from [`take`]) for the resource `resource_id`: `Ok(true)` committed with the key. A write
/// that created nothing (`Ok(false)`) or failed for another reason gives the key back, so a
/// later creating write of the request carries it.
pub fn settle(key: Option<PendingKey>, resource_id: &str, outcome: Result<bool, &StoreError>) {
    let Some(key) = key else { return };
    let _ = SLOT.try_with(|s| {
        let mut s = s.borrow_mut();
        match outcome {
            Ok(true) => s.attachment = KeyAttachment::Attached(resource_id.to_owned()),
            Err(StoreError::Conflict(Conflict::KeyTaken { .. })) => {
                s.attachment = KeyAttachment::Taken;
            }
            Ok(false) | Err(_) => s.pending = Some(key),
        }
    });
}

/// Runs `write` without the running request's key: for a write the request makes that is
/// not what it was asked to create (a VIM record sealed from inline credentials, say).
pub async fn without_key<F: Future>(write: F) -> F::Output {
    let slot = RefCell::new(Slot {
        pending: None,
        attachment: KeyAttachment::NotAttached,
    });
    SLOT.scope(slot, write).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::RequestFingerprint;
    use crate::model::Timestamp;

    fn key() -> PendingKey {
        PendingKey {
            scope: "s".into(),
            key: "k".into(),
            fingerprint: RequestFingerprint {
                method: "POST".into(),
                route: "/r".into(),
                body_sha256: "h".into(),
            },
            owner: "o".into(),
            now: Timestamp(1),
            expires_at: Timestamp(2),
        }
    }

    #[tokio::test]
    async fn the_key_is_taken_once_and_given_back_after_a_failed_write() {
        assert!(take().is_none(), "outside a request there is no key");
        let ((), attachment) = with_pending_key(key(), async {
            let k = take();
            assert!(k.is_some());
            assert!(take().is_none(), "taken once");
            settle(k, "r-1", Err(&StoreError::Backend("down".into())));
            let k = take();
            assert!(k.is_some(), "given back after a failed write");
            settle(k, "r-1", Ok(false));
            let k = take();
            assert!(k.is_some(), "given back after a write that created nothing");
            assert!(
                without_key(async { take() }).await.is_none(),
                "hidden from a write that is not the request's"
            );
            settle(k, "r-2", Ok(true));
            assert!(take().is_none());
        })
        .await;
        assert_eq!(attachment, KeyAttachment::Attached("r-2".into()));
        let ((), attachment) = with_pending_key(key(), async {
            let k = take();
            let taken = StoreError::Conflict(Conflict::KeyTaken { key: "k".into() });
            settle(k, "r-1", Err(&taken));
        })
        .await;
        assert_eq!(attachment, KeyAttachment::Taken);
    }
}
