//! The NFVO port: grants (SOL003 clause 9) and packages held by an NFVO.
//!
//! Before an operation changes resources the core asks the NFVO for a grant, in `STARTING`.
//! [`LocalNfvo`] (the default) grants everything as asked; the remote SOL003 client and
//! embedders' own implementations plug in through the same trait.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::{Notify, oneshot};
use vnfm_types::{Grant, GrantInfo, GrantRequest, ProblemDetails, VnfLcmOpOccId};

use crate::DriverError;

/// The NFVO's answer to a grant request.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantDecision {
    /// Granted: the operation goes ahead with these VIMs, zones and assets.
    Granted(Box<Grant>),
    /// Rejected: the operation ends `ROLLED_BACK` with this reason, nothing was changed.
    Rejected(ProblemDetails),
}

/// An NFVO.
#[async_trait]
pub trait Nfvo: Send + Sync {
    /// Asks for a grant. Transient failures (`DriverError::transient`) leave the occurrence in
    /// `FAILED_TEMP`, to retry; a rejection is a [`GrantDecision::Rejected`].
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError>;

    /// The content (CSAR zip) of the onboarded package with VNFD `vnfd_id`, when the NFVO holds
    /// packages; `None` when it does not have it.
    async fn fetch_package(&self, vnfd_id: &str) -> Result<Option<Vec<u8>>, DriverError> {
        let _ = vnfd_id;
        Ok(None)
    }

    /// The VNFD of the onboarded package with VNFD `vnfd_id` (a zip of the VNFD's files,
    /// SOL005 `GET .../onboarded_vnf_packages/{vnfdId}/vnfd`), when the NFVO holds packages;
    /// `None` when it does not have it.
    async fn fetch_vnfd(&self, vnfd_id: &str) -> Result<Option<Vec<u8>>, DriverError> {
        let _ = vnfd_id;
        Ok(None)
    }

    /// Whether [`Nfvo::grant`] decides in this process, at once, without asking a party that
    /// could look the occurrence up. The core then asks before it stores the occurrence, and
    /// stores it already begun (`STARTING` and `PROCESSING` in one write); otherwise it stores
    /// the occurrence in `STARTING` first, as SOL003 requires before a grant request is sent.
    fn grants_locally(&self) -> bool {
        false
    }

    /// A short name for logs (`local`, `sol003 https://nfvo...`).
    fn describe(&self) -> String;
}

/// The built-in NFVO: grants every request as asked, with the VIMs of the request (no
/// `vimConnectionInfo`, zones or assets of its own), and holds no packages (the VNFM's own
/// package store is used).
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalNfvo;

/// A grant that accepts every resource of `request`, with identifier `id`.
pub fn grant_everything(request: &GrantRequest, id: String) -> Grant {
    let infos = |defs: &[vnfm_types::ResourceDefinition]| -> Vec<GrantInfo> {
        defs.iter()
            .map(|d| GrantInfo {
                resource_definition_id: d.id.clone(),
                reservation_id: None,
                vim_connection_id: None,
                resource_provider_id: None,
                zone_id: None,
                resource_group_id: None,
            })
            .collect()
    };
    Grant {
        id,
        vnf_instance_id: request.vnf_instance_id.clone(),
        vnf_lcm_op_occ_id: request.vnf_lcm_op_occ_id.clone(),
        vim_connection_info: None,
        zones: Vec::new(),
        add_resources: infos(&request.add_resources),
        temp_resources: infos(&request.temp_resources),
        remove_resources: infos(&request.remove_resources),
        update_resources: infos(&request.update_resources),
        vim_assets: None,
        ext_virtual_links: None,
        ext_managed_virtual_links: None,
        additional_params: None,
        links: None,
    }
}

#[async_trait]
impl Nfvo for LocalNfvo {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        Ok(GrantDecision::Granted(Box::new(grant_everything(
            request,
            format!("local-{}", request.vnf_lcm_op_occ_id),
        ))))
    }

    fn describe(&self) -> String {
        "local".into()
    }

    fn grants_locally(&self) -> bool {
        true
    }
}

/// An NFVO whose decisions arrive later, through a callback: for embedders whose granting
/// is itself asynchronous (an approval workflow, a message bus, an NFVO that notifies).
///
/// [`Nfvo::grant`] parks each request; the embedder lists them with [`DeferredGrants::pending`]
/// (or waits with [`DeferredGrants::wait_pending`]) and answers each with
/// [`DeferredGrants::decide`]. Meanwhile the occurrence stays in `STARTING`, and a cancellation
/// rolls it back. An occurrence whose process stops while it waits asks again when it is
/// recovered: the request carries the same `vnfLcmOpOccId`, so the embedder can recognise it.
#[derive(Clone, Default)]
pub struct DeferredGrants {
    inner: Arc<DeferredInner>,
}

#[derive(Default)]
struct DeferredInner {
    waiting: Mutex<BTreeMap<VnfLcmOpOccId, Parked>>,
    arrived: Notify,
}

struct Parked {
    request: GrantRequest,
    answer: oneshot::Sender<Result<GrantDecision, DriverError>>,
}

impl std::fmt::Debug for DeferredGrants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredGrants")
            .field("pending", &self.pending().len())
            .finish()
    }
}

/// Why [`DeferredGrants::decide`] did not deliver a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// No grant request of that occurrence is waiting (never asked, already decided, or the
    /// occurrence was cancelled meanwhile).
    #[error("no grant request of operation occurrence {0} is waiting for a decision")]
    NotWaiting(VnfLcmOpOccId),
}

fn lock_parked(
    m: &Mutex<BTreeMap<VnfLcmOpOccId, Parked>>,
) -> std::sync::MutexGuard<'_, BTreeMap<VnfLcmOpOccId, Parked>> {
    // A panic while holding the lock cannot leave the map half-updated: every critical
    // section is a single insert, remove or read.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl DeferredGrants {
    /// No requests waiting yet.
    pub fn new() -> DeferredGrants {
        DeferredGrants::default()
    }

    /// The grant requests waiting for a decision, oldest occurrence id first.
    pub fn pending(&self) -> Vec<GrantRequest> {
        let mut parked = lock_parked(&self.inner.waiting);
        // Requests whose occurrence stopped waiting (cancelled) are dropped here.
        parked.retain(|_, p| !p.answer.is_closed());
        parked.values().map(|p| p.request.clone()).collect()
    }

    /// Waits until at least one grant request waits for a decision, and returns them.
    pub async fn wait_pending(&self) -> Vec<GrantRequest> {
        loop {
            let arrived = self.inner.arrived.notified();
            let now = self.pending();
            if !now.is_empty() {
                return now;
            }
            arrived.await;
        }
    }

    /// Delivers the decision for the grant request of occurrence `op_occ_id`: granted,
    /// rejected, or an error (a transient one leaves the occurrence `FAILED_TEMP`, to retry).
    pub fn decide(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        decision: Result<GrantDecision, DriverError>,
    ) -> Result<(), DecideError> {
        let parked = lock_parked(&self.inner.waiting).remove(op_occ_id);
        match parked {
            Some(p) => p
                .answer
                .send(decision)
                .map_err(|_| DecideError::NotWaiting(op_occ_id.clone())),
            None => Err(DecideError::NotWaiting(op_occ_id.clone())),
        }
    }
}

#[async_trait]
impl Nfvo for DeferredGrants {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        let (answer, decision) = oneshot::channel();
        lock_parked(&self.inner.waiting).insert(
            request.vnf_lcm_op_occ_id.clone(),
            Parked {
                request: request.clone(),
                answer,
            },
        );
        self.inner.arrived.notify_waiters();
        decision.await.unwrap_or_else(|_| {
            Err(DriverError::transient(
                "the deferred grant was dropped without a decision",
            ))
        })
    }

    fn describe(&self) -> String {
        "deferred".into()
    }
}

/// How the VNFM authenticates to a remote NFVO.
#[derive(Clone)]
pub enum NfvoAuth {
    /// No authentication.
    None,
    /// HTTP Basic.
    Basic {
        /// User name.
        user: String,
        /// Password.
        password: vnfm_types::SecretString,
    },
    /// OAuth 2.0 client credentials.
    OAuth2 {
        /// Client id.
        client_id: String,
        /// Client secret.
        client_secret: vnfm_types::SecretString,
        /// Token endpoint URL.
        token_endpoint: String,
    },
}

impl std::fmt::Debug for NfvoAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NfvoAuth::None => f.write_str("None"),
            NfvoAuth::Basic { user, .. } => write!(f, "Basic({user}:***)"),
            NfvoAuth::OAuth2 {
                client_id,
                token_endpoint,
                ..
            } => write!(f, "OAuth2({client_id} at {token_endpoint})"),
        }
    }
}

/// The connection to a remote SOL003 NFVO as the operator configures it (the core keeps it in
/// the store with its secret sealed; an HTTP client such as `vnfm-outbound`'s `Sol003Nfvo`
/// connects with it).
#[derive(Clone)]
pub struct NfvoSettings {
    /// Base URL (`https://nfvo.example:9443`).
    pub url: String,
    /// Authentication towards the NFVO.
    pub auth: NfvoAuth,
    /// Extra CA certificate (PEM) to trust.
    pub ca_pem: Option<String>,
}

impl std::fmt::Debug for NfvoSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfvoSettings")
            .field("url", &self.url)
            .field("auth", &self.auth)
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<PEM>"))
            .finish()
    }
}
