//! Retry-safe calls: a client key makes creating a VNF identifier or starting an operation
//! happen at most once, however often the call is repeated, whichever process answers it and
//! whether or not the first call's process died.
//!
//! The key is claimed first ([`Lcm::claim_client_key`], its own transaction), which reserves
//! the id of what the call creates. The instance or the occurrence is then committed with
//! that id, in the transaction that creates it, so what was committed always tells whether
//! the call took effect: a repeated call whose reserved id exists is answered with that
//! resource ([`Reservation`]), and never creates a second one. The REST server keeps the
//! first HTTP answer on top of this ([`Lcm::answer_client_key`]); the embedding API's
//! [`Lcm::create_vnf_identifier_keyed`] and [`Lcm::start_keyed`] return the resource.

use std::time::Duration;

use sha2::{Digest, Sha256};
use vnfm_store::{
    IdempotencyRecord, KeyClaim, KeyClaimed, ProjectScope, RequestFingerprint, StoredResponse,
};

use super::*;

/// How long client keys are kept, and how long a call may hold one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    /// How long a key is kept after its first use; a key older than this is new again.
    pub ttl: Duration,
    /// How long a call may run holding its key before a repeated call may take the key
    /// over (the first call's process is presumed dead). Whatever the first call committed
    /// is found by its reserved id, so a takeover never creates a second resource.
    pub lock: Duration,
}

impl Default for KeyPolicy {
    /// Kept 24 hours; held 60 seconds.
    fn default() -> Self {
        KeyPolicy {
            ttl: Duration::from_secs(24 * 3600),
            lock: Duration::from_secs(60),
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
        new_uuid()
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

/// The id a client key reserved for what its call creates, passed to
/// [`Lcm::create_vnf_identifier_reserved`] and [`Lcm::start_reserved`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    id: String,
    replay_only: bool,
}

impl Reservation {
    /// The call may create its resource with `id`; if that resource exists already, the call
    /// answers with it instead.
    pub fn new(id: impl Into<String>) -> Reservation {
        Reservation {
            id: id.into(),
            replay_only: false,
        }
    }

    /// The call only answers with the resource `id` if it exists, and otherwise is refused as
    /// still in flight ([`LcmError::Conflict`]): for a repeated call while the first holds the
    /// key.
    pub fn replay_only(id: impl Into<String>) -> Reservation {
        Reservation {
            id: id.into(),
            replay_only: true,
        }
    }

    /// The reserved id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn in_flight(&self) -> LcmError {
        LcmError::conflict(
            "a request with this idempotency key is still being processed; send it again later",
        )
    }
}

/// What claiming a client key found ([`Lcm::claim_client_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyOutcome {
    /// The key is this call's: run it with [`Reservation::new`] of the reserved id, then
    /// [`Lcm::answer_client_key`] (or [`Lcm::release_client_key`] when it failed in a way
    /// worth trying again).
    Run(IdempotencyRecord),
    /// The key was answered: this is the first answer.
    Answered(StoredResponse),
    /// Another call holds the key: run this one with [`Reservation::replay_only`] of the
    /// reserved id (it answers if the first call has committed), or refuse it as in flight.
    Held(IdempotencyRecord),
    /// The key was first used with another request (the record names it).
    Mismatch(IdempotencyRecord),
}

impl Lcm {
    /// Claims `key` for a request with `fingerprint`, reserving a fresh id for what it
    /// creates (see the [module](self) documentation).
    pub async fn claim_client_key(
        &self,
        key: &ClientKey,
        fingerprint: RequestFingerprint,
    ) -> Result<KeyOutcome, LcmError> {
        let inner = &self.inner;
        let now = inner.now();
        let policy = inner.config.client_keys;
        let claim = KeyClaim {
            scope: key.scope.clone(),
            key: key.key.clone(),
            fingerprint,
            reserved_id: new_uuid(),
            owner: inner.config.runner_id.clone(),
            now,
            locked_until: now.plus(policy.lock),
            expires_at: now.plus(policy.ttl),
        };
        let claimed = inner
            .store
            .claim_idempotency_key(&claim)
            .await
            .map_err(store_err)?;
        Ok(match claimed {
            KeyClaimed::New(r) | KeyClaimed::TakenOver(r) => KeyOutcome::Run(r),
            KeyClaimed::Existing(r) if r.fingerprint != claim.fingerprint => {
                KeyOutcome::Mismatch(r)
            }
            KeyClaimed::Existing(IdempotencyRecord {
                response: Some(response),
                ..
            }) => KeyOutcome::Answered(response),
            KeyClaimed::Existing(r) => KeyOutcome::Held(r),
        })
    }

    /// Keeps `response` as the first answer of `key` (a later answer is ignored).
    pub async fn answer_client_key(
        &self,
        key: &ClientKey,
        response: &StoredResponse,
    ) -> Result<(), LcmError> {
        self.inner
            .store
            .complete_idempotency_key(&key.scope, &key.key, response)
            .await
            .map(|_| ())
            .map_err(store_err)
    }

    /// Lets the next call with `key` take it over at once: this process's call with it ended
    /// without an answer worth keeping.
    pub async fn release_client_key(&self, key: &ClientKey) -> Result<(), LcmError> {
        self.inner
            .store
            .release_idempotency_key(&key.scope, &key.key, &self.inner.config.runner_id)
            .await
            .map_err(store_err)
    }

    /// Deletes the client keys that have expired ([`KeyPolicy::ttl`]); how many.
    pub async fn sweep_client_keys(&self) -> Result<u64, LcmError> {
        self.inner
            .store
            .sweep_idempotency_keys(self.inner.now())
            .await
            .map_err(store_err)
    }

    /// [`Lcm::create_vnf_identifier_in`] of a call holding a client key: the instance gets the
    /// reserved id; if an instance with that id exists already, it is returned instead.
    pub async fn create_vnf_identifier_reserved(
        &self,
        req: CreateVnfRequest,
        project: Option<&str>,
        reservation: &Reservation,
    ) -> Result<VnfInstance, LcmError> {
        if let Some(found) = self.reserved_instance(reservation).await? {
            return Ok(found);
        }
        let id = VnfInstanceId::new(reservation.id.clone());
        match self.create_identifier(req, project, Some(id)).await {
            // A concurrent call with the key (one that took it over) created it first.
            Err(e) => match self.reserved_instance(reservation).await {
                Ok(Some(found)) => Ok(found),
                _ => Err(e),
            },
            ok => ok,
        }
    }

    /// [`Lcm::start`] (or, with `expected`, [`Lcm::start_if_unchanged`]) of a call holding a
    /// client key: the occurrence gets the reserved id; if an occurrence with that id exists
    /// already, it is returned instead, as it is now.
    pub async fn start_reserved(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
        expected: Option<Version>,
        reservation: &Reservation,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_reserved_as(id, req, expected, reservation, &ProjectScope::Nothing)
            .await
    }

    /// [`Lcm::start_reserved`] on behalf of a caller that sees `caller` (see
    /// [`Lcm::start_as`]).
    pub(super) async fn start_reserved_as(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
        expected: Option<Version>,
        reservation: &Reservation,
        caller: &ProjectScope,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        if let Some(found) = self.reserved_op_occ(reservation).await? {
            return Ok(found);
        }
        let occ_id = VnfLcmOpOccId::new(reservation.id.clone());
        match self
            .start_invoked(id, req, false, expected, Some(occ_id), caller)
            .await
        {
            // A concurrent call with the key (one that took it over) started it first: its
            // occurrence holds the instance, so this start was refused.
            Err(e) => match self.reserved_op_occ(reservation).await {
                Ok(Some(found)) => Ok(found),
                _ => Err(e),
            },
            ok => ok,
        }
    }

    /// Creates a VNF identifier at most once per client key (the embedding API's retry-safe
    /// [`Lcm::create_vnf_identifier_in`]): the same key with the same request returns the
    /// instance the first call created, as it is now; with another request it is refused
    /// ([`LcmError::Unprocessable`]); while another call with it runs and has not created the
    /// instance yet, [`LcmError::Conflict`].
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
        self.keyed(key, print, |reservation| async move {
            self.create_vnf_identifier_reserved(req, project, &reservation)
                .await
                .map(|i| (i.id.to_string(), i))
        })
        .await
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
        self.keyed(key, print, |reservation| async move {
            self.start_reserved(id, req, None, &reservation)
                .await
                .map(|o| (o.id.to_string(), o))
        })
        .await
    }

    /// Claims `key`, runs `call` with the reservation the claim allows, and keeps the created
    /// resource's id as the key's answer.
    async fn keyed<T, F, Fut>(
        &self,
        key: &ClientKey,
        print: RequestFingerprint,
        call: F,
    ) -> Result<T, LcmError>
    where
        F: FnOnce(Reservation) -> Fut,
        Fut: std::future::Future<Output = Result<(String, T), LcmError>>,
    {
        let (reservation, owned) = match self.claim_client_key(key, print).await? {
            KeyOutcome::Run(r) => (Reservation::new(r.reserved_id), true),
            KeyOutcome::Held(r) => (Reservation::replay_only(r.reserved_id), false),
            KeyOutcome::Answered(response) => {
                let id = String::from_utf8_lossy(&response.body).into_owned();
                (Reservation::replay_only(id), false)
            }
            KeyOutcome::Mismatch(r) => return Err(mismatch(key, &r)),
        };
        match call(reservation).await {
            Ok((id, value)) => {
                if owned {
                    let response = StoredResponse {
                        status: 201,
                        location: None,
                        content_type: None,
                        body: id.into_bytes(),
                    };
                    self.answer_client_key(key, &response).await?;
                }
                Ok(value)
            }
            Err(e) => {
                if owned && let Err(r) = self.release_client_key(key).await {
                    tracing::warn!(error = %r, "could not release a client key after a failed call");
                }
                Err(e)
            }
        }
    }

    async fn reserved_instance(&self, r: &Reservation) -> Result<Option<VnfInstance>, LcmError> {
        let id = VnfInstanceId::new(r.id.clone());
        match self
            .inner
            .store
            .get_instance(&id)
            .await
            .map_err(store_err)?
        {
            Some((instance, _)) => Ok(Some(vims::instance_view(instance))),
            None if r.replay_only => Err(r.in_flight()),
            None => Ok(None),
        }
    }

    async fn reserved_op_occ(&self, r: &Reservation) -> Result<Option<VnfLcmOpOcc>, LcmError> {
        let id = VnfLcmOpOccId::new(r.id.clone());
        match self.inner.store.get_op_occ(&id).await.map_err(store_err)? {
            Some((occ, _)) => Ok(Some(vims::op_occ_view(occ))),
            None if r.replay_only => Err(r.in_flight()),
            None => Ok(None),
        }
    }
}

/// The refusal of a key repeated with another request.
pub fn mismatch(key: &ClientKey, first: &IdempotencyRecord) -> LcmError {
    LcmError::Unprocessable {
        pointer: "/".into(),
        message: format!(
            "the idempotency key {:?} was first used for another request ({} {}, body SHA-256 {}); \
             send a new key for a new request",
            key.key,
            first.fingerprint.method,
            first.fingerprint.route,
            first.fingerprint.body_sha256
        ),
    }
}
