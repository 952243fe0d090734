//! Retry-safe calls: a client key makes creating a resource or starting an operation happen
//! at most once, however often the call is repeated, whichever process answers it and
//! whether or not the first call's process died.
//!
//! A call with a key begins in this process ([`Lcm::begin_client_key`]) and hands the key, a
//! plain value ([`KeyGuard::pending`]), to the method that creates its resource (a VNF
//! instance, an occurrence, a subscription, ...: [`Lcm::create_vnf_identifier_with_key`],
//! [`Lcm::start_as`], ...); the store's transaction that creates the resource writes the key
//! with the resource's id, so the key is committed exactly when the resource is, in one
//! commit. Nothing is read before a call runs: while the first call runs in this process, a
//! repeated one is refused as in flight (an in-memory marker: nothing to commit); any other
//! repeated call runs, and either its creating write finds the key committed and is rolled
//! back ([`vnfm_store::Conflict::KeyTaken`]), or it is refused before it writes (its
//! instance is busy or has changed since); either way it is then answered from the first
//! call ([`KeyGuard::settle`]). So a key costs its first call one row written in the
//! transaction it commits anyway, and a retry what it takes to find out that it is one. A
//! caller may keep what it needs to answer again with the key ([`KeyGuard::keep_answer`]:
//! the REST server keeps its HTTP answer); the embedding API's
//! [`Lcm::create_vnf_identifier_keyed`] and [`Lcm::start_keyed`] return the resource.

use std::collections::HashMap;
use std::sync::MutexGuard;
use std::time::Duration;

use sha2::{Digest, Sha256};
use vnfm_store::{PendingKey, ProjectScope, RequestFingerprint};

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
    /// No call with the key runs here: run the call, handing it [`KeyGuard::pending`].
    Run(KeyGuard),
    /// A call with the key runs in this process and has not answered yet.
    InFlight,
    /// A call with the key runs in this process for another request (this one).
    Mismatch(RequestFingerprint),
}

/// What became of a key once its call ran ([`KeyGuard::settle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySettled {
    /// This call committed the key with the resource it created (this id).
    Committed(String),
    /// An earlier call of the same request committed the key with `resource_id`: this call
    /// is a repetition of it and is answered from it.
    Repeated {
        /// What the first call created.
        resource_id: String,
        /// The first call ([`PendingKey::owner`]).
        committed_by: String,
        /// What the first call's caller kept of its answer ([`KeyGuard::keep_answer`]), if it
        /// did before it ended.
        kept_answer: Option<Vec<u8>>,
    },
    /// The key was first used with another request (this one).
    Mismatch(RequestFingerprint),
    /// No unexpired call committed the key: this call created nothing.
    Unused,
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

    /// The key as the call hands it to its creating method, which commits it with the
    /// resource; unique to this call ([`PendingKey::owner`]).
    pub fn pending(&self) -> &PendingKey {
        &self.pending
    }

    /// Once the call ran: whether it committed the key, or an earlier call did (see
    /// [`KeySettled`]).
    pub async fn settle(&self) -> Result<KeySettled, LcmError> {
        let found = self
            .lcm
            .inner
            .store
            .get_idempotency_key(&self.key.scope, &self.key.key)
            .await
            .map_err(store_err)?;
        Ok(match found {
            Some(r) if r.owner == self.pending.owner && r.created_at == self.pending.now => {
                KeySettled::Committed(r.resource_id)
            }
            Some(r) if r.expires_at <= self.lcm.inner.now() => KeySettled::Unused,
            Some(r) if r.fingerprint == self.pending.fingerprint => KeySettled::Repeated {
                resource_id: r.resource_id,
                committed_by: r.owner,
                kept_answer: r.kept_answer,
            },
            Some(r) => KeySettled::Mismatch(r.fingerprint),
            None => KeySettled::Unused,
        })
    }

    /// Keeps `answer` (bytes the caller reads back, the store does not) with the key, for the
    /// call's repetitions, if this call committed the key: whether it did (without a read, so
    /// a call that created something learns it committed the key in the same write).
    pub async fn keep_answer(&self, answer: &[u8]) -> Result<bool, LcmError> {
        self.keep_answer_of(&self.pending.owner, answer).await
    }

    /// For a repetition ([`KeySettled::Repeated`]) answered without a kept answer: keeps
    /// `answer`, the answer it made again, with the key the call `committed_by` committed,
    /// if that call kept none meanwhile; so later repetitions get these bytes. Whether it
    /// was kept.
    pub async fn keep_answer_of(
        &self,
        committed_by: &str,
        answer: &[u8],
    ) -> Result<bool, LcmError> {
        let key = &self.pending;
        self.lcm
            .inner
            .store
            .keep_idempotency_answer(&key.scope, &key.key, committed_by, answer)
            .await
            .map_err(store_err)
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
                // The attempt, not only the process: a call tells its own commit of the key
                // from another's by it.
                owner: format!(
                    "{}/{}",
                    inner.config.runner_id,
                    crate::secrets::random_uuid()
                ),
                now,
                expires_at: now.plus(inner.config.client_keys.ttl),
            },
        })
    }

    /// The unexpired committed record of `key`: its request, its resource, and what its
    /// first caller kept of its answer.
    pub async fn committed_key(
        &self,
        key: &ClientKey,
    ) -> Result<Option<(RequestFingerprint, String, Option<Vec<u8>>)>, LcmError> {
        let found = self
            .inner
            .store
            .get_idempotency_key(&key.scope, &key.key)
            .await
            .map_err(store_err)?;
        Ok(found
            .filter(|r| r.expires_at > self.inner.now())
            .map(|r| (r.fingerprint, r.resource_id, r.kept_answer)))
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
            .keyed(key, print, |pending| async move {
                self.create_vnf_identifier_with_key(req, project, Some(&pending))
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
            .keyed(key, print, |pending| async move {
                self.start_invoked(id, req, false, None, &ProjectScope::Nothing, Some(&pending))
                    .await
                    .map(|o| o.id.to_string())
            })
            .await?;
        self.get_op_occ(&VnfLcmOpOccId::new(occ)).await
    }

    /// Runs `call` (which creates a resource, committing the key it is handed with it, and
    /// returns its id) at most once per `key`: the id of what the key's first call created.
    async fn keyed<F, Fut>(
        &self,
        key: &ClientKey,
        print: RequestFingerprint,
        call: F,
    ) -> Result<String, LcmError>
    where
        F: FnOnce(PendingKey) -> Fut,
        Fut: std::future::Future<Output = Result<String, LcmError>>,
    {
        let guard = match self.begin_client_key(key, print) {
            KeyOutcome::Run(guard) => guard,
            KeyOutcome::InFlight => return Err(in_flight()),
            KeyOutcome::Mismatch(first) => return Err(mismatch(key, &first)),
        };
        let created = call(guard.pending().clone()).await;
        match guard.settle().await? {
            KeySettled::Committed(_) | KeySettled::Unused => created,
            KeySettled::Repeated { resource_id, .. } => Ok(resource_id),
            KeySettled::Mismatch(first) => Err(mismatch(key, &first)),
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
