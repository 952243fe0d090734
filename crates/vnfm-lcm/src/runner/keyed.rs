//! Retry-safe calls: a client key makes creating a resource or starting an operation happen
//! at most once, however often the call is repeated, whichever process answers it and
//! whether or not the first call's process died.
//!
//! A call with a key runs with the key pending ([`KeyGuard::run`]): the store's transaction
//! that creates the call's resource (a VNF instance, an occurrence, a subscription, ...)
//! writes the key with the resource's id ([`vnfm_store::client_key`]), so the key is
//! committed exactly when the resource is, in one commit. Nothing is read before a call
//! runs: while the first call runs in this process, a repeated one is refused as in flight
//! (an in-memory marker: nothing to commit); any other repeated call runs, and either its
//! creating write finds the key committed and is rolled back ([`KeyAttachment::Taken`]), or
//! it is refused before it writes (its instance is busy or has changed since); either way it
//! is then answered from the first call ([`KeyGuard::first_call`]). So a key costs its first
//! call one row written in the transaction it commits anyway, and a retry what it takes to
//! find out that it is one. The REST server also
//! commits the first HTTP answer of a creation with the key
//! ([`vnfm_store::client_key::answer_with`]); the embedding API's
//! [`Lcm::create_vnf_identifier_keyed`] and [`Lcm::start_keyed`] return the resource.

use std::collections::HashMap;
use std::sync::MutexGuard;
use std::time::Duration;

use sha2::{Digest, Sha256};
use vnfm_store::client_key::{KeyAttachment, with_pending_key};
use vnfm_store::{PendingKey, RequestFingerprint, StoredResponse};

use super::*;

/// How long client keys are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    /// How long a key is kept after its first use; a key older than this is new again.
    pub ttl: Duration,
}

impl Default for KeyPolicy {
    /// Kept 24 hours.
    fn default() -> Self {
        KeyPolicy {
            ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// A caller's key for one call: `scope` is who the caller is (a project, a client), so keys of
/// different callers never meet; `key` is what the caller chose (a fresh UUID per intended
/// change, sent again with every retry of it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKey {
    /// Whose key it is.
    pub scope: String,
    /// The key.
    pub key: String,
}

impl ClientKey {
    /// The key `key` of the caller `scope`.
    pub fn new(scope: impl Into<String>, key: impl Into<String>) -> ClientKey {
        ClientKey {
            scope: scope.into(),
            key: key.into(),
        }
    }

    /// A fresh random key (a version 4 UUID), for a caller that needs one per change.
    pub fn random_key() -> String {
        crate::secrets::random_uuid()
    }
}

/// The fingerprint of a request: its method, its route and the SHA-256 of its body. A key
/// repeated with another fingerprint is refused ([`KeyOutcome::Mismatch`]).
pub fn fingerprint(method: &str, route: &str, body: &[u8]) -> RequestFingerprint {
    RequestFingerprint {
        method: method.to_owned(),
        route: route.to_owned(),
        body_sha256: crate::secrets::hex(&Sha256::digest(body)),
    }
}

/// The keys whose calls run in this process, with their request's fingerprint.
#[derive(Debug, Default)]
pub(crate) struct KeysInFlight(Mutex<HashMap<ClientKey, RequestFingerprint>>);

impl KeysInFlight {
    fn lock(&self) -> MutexGuard<'_, HashMap<ClientKey, RequestFingerprint>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a call with a client key found in this process ([`Lcm::begin_client_key`]).
#[derive(Debug)]
pub enum KeyOutcome {
    /// No call with the key runs here: run the call with [`KeyGuard::run`].
    Run(KeyGuard),
    /// A call with the key runs in this process and has not answered yet.
    InFlight,
    /// A call with the key runs in this process for another request (this one).
    Mismatch(RequestFingerprint),
}

/// The committed first call of a key, found by a call that did not commit it
/// ([`KeyGuard::first_call`]).
#[derive(Debug)]
pub enum FirstCall {
    /// The same request committed the resource `resource_id`; `response` is its answer,
    /// when it was committed with the key (not for a task's, made again from the
    /// occurrence id).
    Committed {
        /// What the first call created.
        resource_id: String,
        /// Its answer, when committed with the key.
        response: Option<StoredResponse>,
    },
    /// The key was first used with another request (this one).
    Mismatch(RequestFingerprint),
}

/// The hold of a call on its client key, in this process: dropped, the key is free here again.
#[derive(Debug)]
pub struct KeyGuard {
    lcm: Lcm,
    key: ClientKey,
    pending: PendingKey,
}

impl KeyGuard {
    /// The key held.
    pub fn key(&self) -> &ClientKey {
        &self.key
    }

    /// Runs `call` with the key pending: the store's creating write in it commits the key with
    /// its resource. What `call` returned, and what became of the key.
    pub async fn run<F: std::future::Future>(&self, call: F) -> (F::Output, KeyAttachment) {
        // Boxed: a call's future (a whole start) is large, and this nests it once more.
        with_pending_key(self.pending.clone(), Box::pin(call)).await
    }

    /// For a call that did not commit the key ([`KeyAttachment::Taken`] or
    /// [`KeyAttachment::NotAttached`]): the key's committed, unexpired first call, if there
    /// is one; the call is then a repetition of it and is answered from it.
    pub async fn first_call(&self) -> Result<Option<FirstCall>, LcmError> {
        Ok(self
            .lcm
            .committed_key(&self.key)
            .await?
            .map(|(first, resource_id, response)| {
                if first == self.pending.fingerprint {
                    FirstCall::Committed {
                        resource_id,
                        response,
                    }
                } else {
                    FirstCall::Mismatch(first)
                }
            }))
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        self.lcm.inner.client_keys.lock().remove(&self.key);
    }
}

impl Lcm {
    /// Begins a call with `key` for a request with `fingerprint` (see the
    /// [module](self) documentation): nothing is read from the store.
    pub fn begin_client_key(&self, key: &ClientKey, fingerprint: RequestFingerprint) -> KeyOutcome {
        let inner = &self.inner;
        {
            let mut running = inner.client_keys.lock();
            if let Some(first) = running.get(key) {
                return if *first == fingerprint {
                    KeyOutcome::InFlight
                } else {
                    KeyOutcome::Mismatch(first.clone())
                };
            }
            running.insert(key.clone(), fingerprint.clone());
        }
        let now = inner.now();
        KeyOutcome::Run(KeyGuard {
            lcm: self.clone(),
            key: key.clone(),
            pending: PendingKey {
                scope: key.scope.clone(),
                key: key.key.clone(),
                fingerprint,
                owner: inner.config.runner_id.clone(),
                now,
                expires_at: now.plus(inner.config.client_keys.ttl),
            },
        })
    }

    /// The unexpired committed record of `key`: its request, its resource, its kept answer.
    pub async fn committed_key(
        &self,
        key: &ClientKey,
    ) -> Result<Option<(RequestFingerprint, String, Option<StoredResponse>)>, LcmError> {
        let found = self
            .inner
            .store
            .get_idempotency_key(&key.scope, &key.key)
            .await
            .map_err(store_err)?;
        Ok(found
            .filter(|r| r.expires_at > self.inner.now())
            .map(|r| (r.fingerprint, r.resource_id, r.response)))
    }

    /// Deletes the client keys that have expired ([`KeyPolicy::ttl`]); how many.
    pub async fn sweep_client_keys(&self) -> Result<u64, LcmError> {
        self.inner
            .store
            .sweep_idempotency_keys(self.inner.now())
            .await
            .map_err(store_err)
    }

    /// Creates a VNF identifier at most once per client key (the embedding API's retry-safe
    /// [`Lcm::create_vnf_identifier_in`]): the same key with the same request returns the
    /// instance the first call created, as it is now; with another request it is refused
    /// ([`LcmError::Unprocessable`]); while another call with it runs in this process,
    /// [`LcmError::Conflict`].
    pub async fn create_vnf_identifier_keyed(
        &self,
        req: CreateVnfRequest,
        project: Option<&str>,
        key: &ClientKey,
    ) -> Result<VnfInstance, LcmError> {
        let body = serde_json::to_vec(&req).map_err(|e| LcmError::InvalidRequest {
            pointer: "/".into(),
            message: format!("the CreateVnfRequest does not serialize: {e}"),
        })?;
        let route = format!("vnf_instances?project={}", project.unwrap_or(""));
        let print = fingerprint("CREATE_VNF_IDENTIFIER", &route, &body);
        let id = self
            .keyed(key, print, async {
                self.create_vnf_identifier_in(req, project)
                    .await
                    .map(|i| i.id.to_string())
            })
            .await?;
        self.get_instance(&VnfInstanceId::new(id)).await
    }

    /// Starts an operation at most once per client key (the embedding API's retry-safe
    /// [`Lcm::start`]): the same key with the same request returns the occurrence the first
    /// call started, as it is now; refusals as [`Lcm::create_vnf_identifier_keyed`].
    pub async fn start_keyed(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
        key: &ClientKey,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        let body = req.to_json().to_string().into_bytes();
        let print = fingerprint(
            &crate::error::op_name(req.operation_type()),
            id.as_str(),
            &body,
        );
        let occ = self
            .keyed(key, print, async {
                self.start(id, req).await.map(|o| o.id.to_string())
            })
            .await?;
        self.get_op_occ(&VnfLcmOpOccId::new(occ)).await
    }

    /// Runs `call` (which creates a resource and returns its id) at most once per `key`:
    /// the id of what the key's first call created.
    async fn keyed<F>(
        &self,
        key: &ClientKey,
        print: RequestFingerprint,
        call: F,
    ) -> Result<String, LcmError>
    where
        F: std::future::Future<Output = Result<String, LcmError>>,
    {
        let guard = match self.begin_client_key(key, print) {
            KeyOutcome::Run(guard) => guard,
            KeyOutcome::InFlight => return Err(in_flight()),
            KeyOutcome::Mismatch(first) => return Err(mismatch(key, &first)),
        };
        let (created, attachment) = guard.run(call).await;
        if let KeyAttachment::Attached(_) = attachment {
            return created;
        }
        match guard.first_call().await? {
            Some(FirstCall::Committed { resource_id, .. }) => Ok(resource_id),
            Some(FirstCall::Mismatch(first)) => Err(mismatch(key, &first)),
            None if attachment == KeyAttachment::Taken => Err(in_flight()),
            None => created,
        }
    }
}

/// The refusal of a key whose first call still runs.
pub fn in_flight() -> LcmError {
    LcmError::conflict(
        "a request with this idempotency key is still being processed; send it again later",
    )
}

/// The refusal of a key repeated with another request (`first`).
pub fn mismatch(key: &ClientKey, first: &RequestFingerprint) -> LcmError {
    LcmError::Unprocessable {
        pointer: "/".into(),
        message: format!(
            "the idempotency key {:?} was first used for another request ({} {}, body SHA-256 {}); \
             send a new key for a new request",
            key.key, first.method, first.route, first.body_sha256
        ),
    }
}
