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
//!
//! A request whose answer is a representation of what it creates says how to make that
//! answer ([`answer_with`]) before it creates it: the creating write makes the answer from
//! the resource it writes ([`take`]) and commits it with the key, so the first answer is kept
//! by the same commit as the resource, and the request answers with it ([`kept_answer`]).

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

use crate::error::{Conflict, StoreError};
use crate::idempotency::{PendingKey, StoredResponse};

/// How a request's answer is made from the resource it creates, as the store's creating
/// method has it (a `VnfInstance`, a `SubscriptionDocument`, ...; `None` for another type).
pub type AnswerMaker = Box<dyn Fn(&dyn Any) -> Option<StoredResponse> + Send>;

/// The key a creating write carries ([`take`]), with the answer made from its resource, if
/// the request said how ([`answer_with`]).
#[derive(Debug, Clone)]
pub struct TakenKey {
    /// The key.
    pub key: PendingKey,
    /// The request's first answer, committed with the key.
    pub answer: Option<Arc<StoredResponse>>,
}

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

struct Slot {
    pending: Option<PendingKey>,
    attachment: KeyAttachment,
    maker: Option<AnswerMaker>,
    kept: Option<Arc<StoredResponse>>,
}

impl Slot {
    fn new(pending: Option<PendingKey>) -> RefCell<Slot> {
        RefCell::new(Slot {
            pending,
            attachment: KeyAttachment::NotAttached,
            maker: None,
            kept: None,
        })
    }
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
    SLOT.scope(Slot::new(Some(key)), async move {
        let out = request.await;
        let attachment = SLOT.with(|s| s.borrow().attachment.clone());
        (out, attachment)
    })
    .await
}

/// For a request that runs with a key pending: its answer is made by `maker` from the
/// resource its creating write writes, and committed with the key ([`kept_answer`] after).
/// Without a pending key nothing is done (`maker` is not even boxed).
pub fn answer_with<F>(maker: F)
where
    F: Fn(&dyn Any) -> Option<StoredResponse> + Send + 'static,
{
    let _ = SLOT.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.pending.is_some() {
            s.maker = Some(Box::new(maker));
        }
    });
}

/// The answer the running request's creating write committed with its key, if it made one
/// ([`answer_with`]), taken: the request answers with it, so that a retry gets the same bytes.
pub fn kept_answer() -> Option<Arc<StoredResponse>> {
    SLOT.try_with(|s| s.borrow_mut().kept.take()).ok().flatten()
}

/// For the store's creating methods, before the write of `resource`: the pending key of the
/// running request, if it has one that no write has taken yet, with the request's answer
/// made from `resource`. Hand it back with [`settle`] once the write ended.
pub fn take(resource: &dyn Any) -> Option<TakenKey> {
    SLOT.try_with(|s| {
        let mut s = s.borrow_mut();
        let key = s.pending.take()?;
        let answer = s
            .maker
            .as_ref()
            .and_then(|make| make(resource))
            .map(Arc::new);
        Some(TakenKey { key, answer })
    })
    .ok()
    .flatten()
}

/// For the store's creating methods: records the outcome of the write that carried `taken`
/// (from [`take`]) for the resource `resource_id`: `Ok(true)` committed with the key. A write
/// that created nothing (`Ok(false)`) or failed for another reason gives the key back, so a
/// later creating write of the request carries it.
pub fn settle(taken: Option<TakenKey>, resource_id: &str, outcome: Result<bool, &StoreError>) {
    let Some(taken) = taken else { return };
    let _ = SLOT.try_with(|s| {
        let mut s = s.borrow_mut();
        match outcome {
            Ok(true) => {
                s.attachment = KeyAttachment::Attached(resource_id.to_owned());
                s.kept = taken.answer;
            }
            Err(StoreError::Conflict(Conflict::KeyTaken { .. })) => {
                s.attachment = KeyAttachment::Taken;
            }
            Ok(false) | Err(_) => s.pending = Some(taken.key),
        }
    });
}

/// Runs `write` without the running request's key: for a write the request makes that is
/// not what it was asked to create (a VIM record sealed from inline credentials, say).
pub async fn without_key<F: Future>(write: F) -> F::Output {
    SLOT.scope(Slot::new(None), write).await
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
        assert!(take(&()).is_none(), "outside a request there is no key");
        answer_with(|_| panic!("outside a request nothing is answered"));
        let ((), attachment) = with_pending_key(key(), async {
            let k = take(&());
            assert!(k.is_some());
            assert!(take(&()).is_none(), "taken once");
            settle(k, "r-1", Err(&StoreError::Backend("down".into())));
            let k = take(&());
            assert!(k.is_some(), "given back after a failed write");
            settle(k, "r-1", Ok(false));
            let k = take(&());
            assert!(k.is_some(), "given back after a write that created nothing");
            assert!(
                without_key(async { take(&()) }).await.is_none(),
                "hidden from a write that is not the request's"
            );
            settle(k, "r-2", Ok(true));
            assert!(take(&()).is_none());
            assert!(kept_answer().is_none(), "no answer was asked for");
        })
        .await;
        assert_eq!(attachment, KeyAttachment::Attached("r-2".into()));
        let ((), attachment) = with_pending_key(key(), async {
            let k = take(&());
            let taken = StoreError::Conflict(Conflict::KeyTaken { key: "k".into() });
            settle(k, "r-1", Err(&taken));
        })
        .await;
        assert_eq!(attachment, KeyAttachment::Taken);
    }

    #[tokio::test]
    async fn the_answer_is_made_from_the_resource_written_and_kept_once_committed() {
        fn answer(body: &str) -> StoredResponse {
            StoredResponse {
                status: 201,
                location: None,
                content_type: None,
                body: body.as_bytes().to_vec(),
                etag: None,
            }
        }
        let ((), attachment) = with_pending_key(key(), async {
            answer_with(|r| r.downcast_ref::<String>().map(|s| answer(s)));
            let k = take(&7_u32).unwrap();
            assert!(k.answer.is_none(), "made only from the resource it renders");
            settle(Some(k), "r-1", Ok(false));
            let k = take(&"r-2".to_owned()).unwrap();
            assert_eq!(k.answer.as_deref(), Some(&answer("r-2")));
            assert!(kept_answer().is_none(), "not kept before the commit");
            settle(Some(k), "r-2", Ok(true));
            assert_eq!(kept_answer().as_deref(), Some(&answer("r-2")));
            assert!(kept_answer().is_none(), "taken once");
        })
        .await;
        assert_eq!(attachment, KeyAttachment::Attached("r-2".into()));
    }
}
