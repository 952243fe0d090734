//! Networks shared by instances (NetworkAttachmentDefinitions labelled shared): each user
//! instance registers itself with an annotation, and the last one to release the network
//! deletes it; both with resourceVersion preconditions and bounded retries, as instances race.

use std::time::Duration;

use serde_json::json;

use super::Ctx;
use super::check;
use crate::KubeError;
use crate::plan::{Planned, USER_ANNOTATION_PREFIX, label_value};
use crate::ready::wait_gone;

impl Ctx<'_> {
    /// The annotation that records this instance as a user of a shared network.
    fn user_key(&self) -> String {
        format!("{USER_ANNOTATION_PREFIX}{}", label_value(&self.instance_id))
    }

    /// Makes sure the shared network `p` exists and records this instance as one of its
    /// users. Instances register and release concurrently, so the user annotation is written
    /// with the resourceVersion just read as a precondition, and the whole exchange is
    /// retried when another user changed (409) or deleted (404) the network meanwhile.
    pub(super) async fn acquire_shared(&self, p: &Planned) -> Result<(), KubeError> {
        let key = self.user_key();
        for attempt in 0..SHARED_ATTEMPTS {
            check(&self.req.control, "registering a shared network user")?;
            // Create it, or bring its configuration up to date (every user applies the same).
            let live = self.cluster.apply(p).await?;
            if live.metadata.deletion_timestamp.is_some() {
                self.wait_replaced(p, &live).await?;
                continue;
            }
            if live
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(&key))
            {
                return Ok(());
            }
            let rv = live.metadata.resource_version.clone().unwrap_or_default();
            let patch = json!({"metadata": {"annotations": {key.as_str(): "true"}}});
            match self.cluster.merge_at(p, &rv, &patch).await {
                Ok(o) if o.metadata.deletion_timestamp.is_some() => {
                    // Another instance released it as its last user just before: it is going.
                    self.wait_replaced(p, &o).await?;
                }
                Ok(_) => return Ok(()),
                Err(e) if e.is_status(409) || e.is_status(404) => {
                    tracing::debug!(object = %p.display(), attempt, "shared network changed meanwhile; retrying");
                    backoff(&self.instance_id, attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(shared_conflict(p, "registering this instance as a user of"))
    }

    /// Waits until a shared network that is being deleted is gone.
    async fn wait_replaced(
        &self,
        p: &Planned,
        live: &kube::api::DynamicObject,
    ) -> Result<(), KubeError> {
        let uid = live.metadata.uid.clone().unwrap_or_default();
        wait_gone(
            &self.cluster,
            &[(p.clone(), uid)],
            self.delete_timeout,
            &self.req.control,
        )
        .await
    }

    /// Removes this instance from a shared network's users and deletes the network when no
    /// other user is left; the deleted network and its uid, to wait for. Both writes carry the
    /// resourceVersion just read as a precondition: a user registering meanwhile makes them
    /// fail with 409, and the decision is taken again on what the cluster holds then.
    pub(super) async fn release_shared(
        &self,
        p: &Planned,
    ) -> Result<Option<(Planned, String)>, KubeError> {
        let key = self.user_key();
        for attempt in 0..SHARED_ATTEMPTS {
            check(&self.req.control, "releasing a shared network")?;
            let live = match self.cluster.get(p).await {
                Ok(Some(l)) => l,
                Ok(None) | Err(KubeError::UnknownKind { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            if live.metadata.deletion_timestamp.is_some() {
                return Ok(None);
            }
            let annotations = live.metadata.annotations.clone().unwrap_or_default();
            let others = annotations
                .keys()
                .filter(|k| k.starts_with(USER_ANNOTATION_PREFIX) && **k != key)
                .count();
            let rv = live.metadata.resource_version.clone().unwrap_or_default();
            let written = if others > 0 {
                if !annotations.contains_key(&key) {
                    return Ok(None);
                }
                let patch = json!({"metadata": {"annotations": {key.as_str(): null}}});
                self.cluster.merge_at(p, &rv, &patch).await.map(|_| None)
            } else {
                let uid = live.metadata.uid.clone().unwrap_or_default();
                self.cluster
                    .delete_at(p, &rv)
                    .await
                    .map(|deleted| deleted.then(|| (p.clone(), uid)))
            };
            match written {
                Ok(done) => return Ok(done),
                Err(e) if e.is_status(404) => return Ok(None),
                Err(e) if e.is_status(409) => {
                    tracing::debug!(object = %p.display(), attempt, "shared network changed meanwhile; retrying");
                    backoff(&self.instance_id, attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(shared_conflict(p, "releasing this instance's use of"))
    }
}

/// How many times a conditional write to a shared network is tried before giving up.
const SHARED_ATTEMPTS: u32 = 25;

/// Waits before retrying a conflicting write: growing with the attempt, spread by instance so
/// that instances racing for the same object do not retry in lockstep.
async fn backoff(instance_id: &str, attempt: u32) {
    use sha2::Digest;
    let spread = u64::from(sha2::Sha256::digest(instance_id.as_bytes())[0] % 8);
    let base = 5u64 << attempt.min(5);
    tokio::time::sleep(Duration::from_millis(
        base + spread * (1 + u64::from(attempt.min(5))),
    ))
    .await;
}

fn shared_conflict(p: &Planned, doing: &str) -> KubeError {
    KubeError::Api {
        doing: format!("{doing} the shared {}", p.display()),
        code: 409,
        reason: "Conflict".into(),
        message: format!(
            "other instances changed it {SHARED_ATTEMPTS} times in a row while this one tried; retry the operation"
        ),
    }
}
