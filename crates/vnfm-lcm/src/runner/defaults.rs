//! Simple implementations of the runner's ports, for embedders that need no more and for tests:
//! [`InlineVimDirectory`] (VIM connections with inline access information only),
//! [`NoSubscribers`] and [`SingleCallbackRouter`] (notification routing), [`MemoryCatalog`]
//! (onboarded VNFDs held in memory).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{ArtifactSource, ResolvedVim, VimRegistration};
use vnfm_store::{NewOutboxRow, Timestamp};
use vnfm_types::{
    LccnNotification, SubscriptionId, VimConnectionInfo, VimId, VnfInstance, VnfInstanceId,
};

use crate::error::LcmError;
use crate::ports::{NotificationRouter, OnboardedVnfd, PackageCatalog, SealedVim, VimDirectory};

/// A VIM directory without a registry: `vimConnectionInfo` entries are used as given, an entry
/// that only references a registered VIM (`vimId` without `accessInfo`) is refused, and hooks
/// cannot register VIMs.
///
/// Without a registry there is nowhere to keep secrets encrypted: inline `accessInfo` (passwords,
/// tokens) is stored **as given** in the occurrence's `operationParams`, the instance's
/// `vimConnectionInfo` and the journal, because the runner needs it at execution time. The
/// first time that happens in a process a warning is logged. The views the [`crate::Lcm`]
/// returns still show such secrets as `"***"`. For secrets encrypted at rest use
/// [`crate::VimRegistry`] (the `vnfm::lcm` builder does when given a keyring).
#[derive(Debug, Clone, Copy, Default)]
pub struct InlineVimDirectory;

/// Whether [`InlineVimDirectory`] has warned about storing inline credentials.
static WARNED_INLINE: AtomicBool = AtomicBool::new(false);

#[async_trait]
impl VimDirectory for InlineVimDirectory {
    async fn resolve(&self, key: &str, info: &VimConnectionInfo) -> Result<ResolvedVim, LcmError> {
        if let (Some(id), None) = (&info.vim_id, &info.access_info)
            && info.interface_info.is_none()
        {
            return Err(LcmError::UnknownVim {
                pointer: format!("/vimConnectionInfo/{key}"),
                vim_id: id.to_string(),
            });
        }
        Ok(ResolvedVim::new(key, info.clone()))
    }

    async fn register(
        &self,
        registration: &VimRegistration,
        _created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        Err(LcmError::Unprocessable {
            pointer: String::new(),
            message: format!(
                "a hook asked to register VIM `{}`, but this VNFM has no VIM registry",
                registration.name
            ),
        })
    }

    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError> {
        Err(LcmError::Unprocessable {
            pointer: String::new(),
            message: format!(
                "a hook asked to deregister VIM `{vim_id}`, but this VNFM has no VIM registry"
            ),
        })
    }

    async fn seal_inline(
        &self,
        _key: &str,
        info: &VimConnectionInfo,
        _owner: &VnfInstanceId,
        _current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        if !WARNED_INLINE.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "inline VIM credentials (accessInfo) are stored as given: no VIM registry is configured; configure an encryption keyring to store them encrypted"
            );
        }
        Ok(SealedVim {
            reference: info.clone(),
            created: false,
        })
    }
}

/// Routes every notification to nobody.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSubscribers;

#[async_trait]
impl NotificationRouter for NoSubscribers {
    async fn route(
        &self,
        _: &LccnNotification,
        _: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        Ok(Vec::new())
    }
}

/// Routes every notification to one callback URI, as one subscription: fills in
/// `subscriptionId` and `_links.subscription`.
#[derive(Debug, Clone)]
pub struct SingleCallbackRouter {
    subscription_id: SubscriptionId,
    callback_uri: String,
    subscription_href: String,
}

impl SingleCallbackRouter {
    /// Notifications for subscription `subscription_id`, POSTed to `callback_uri`.
    pub fn new(subscription_id: impl Into<String>, callback_uri: impl Into<String>) -> Self {
        let subscription_id = SubscriptionId::new(subscription_id.into());
        SingleCallbackRouter {
            subscription_href: format!("/vnflcm/v2/subscriptions/{subscription_id}"),
            subscription_id,
            callback_uri: callback_uri.into(),
        }
    }
}

#[async_trait]
impl NotificationRouter for SingleCallbackRouter {
    async fn route(
        &self,
        n: &LccnNotification,
        _: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let mut payload = serde_json::to_value(n)
            .map_err(|e| LcmError::Inconsistent(format!("notification does not serialize: {e}")))?;
        if let Some(obj) = payload.as_object_mut() {
            obj.insert(
                "subscriptionId".into(),
                self.subscription_id.as_str().into(),
            );
            if let Some(links) = obj.get_mut("_links").and_then(|l| l.as_object_mut()) {
                links.insert(
                    "subscription".into(),
                    serde_json::json!({ "href": self.subscription_href }),
                );
            }
        }
        Ok(vec![NewOutboxRow {
            subscription_id: self.subscription_id.clone(),
            callback_uri: self.callback_uri.clone(),
            payload,
            not_before: Timestamp::now(),
            ordering_key: crate::subscriptions::notification_instance(n).to_string(),
        }])
    }
}

/// Onboarded VNFDs held in memory, by descriptor id.
#[derive(Clone, Default)]
pub struct MemoryCatalog {
    vnfds: Arc<RwLock<HashMap<String, OnboardedVnfd>>>,
}

impl std::fmt::Debug for MemoryCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self
            .vnfds
            .read()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("MemoryCatalog")
            .field("vnfd_ids", &ids)
            .finish()
    }
}

impl MemoryCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a VNFD with the files of its package; returns its descriptor id.
    pub fn insert(&self, vnfd: Vnfd, files: Arc<dyn ArtifactSource>) -> String {
        let id = vnfd.descriptor_id.clone();
        self.insert_onboarded(OnboardedVnfd {
            vnfd: Arc::new(vnfd),
            files,
        });
        id
    }

    /// Adds (or replaces) an onboarded VNFD.
    pub fn insert_onboarded(&self, onboarded: OnboardedVnfd) {
        let mut map = self.vnfds.write().unwrap_or_else(|e| e.into_inner());
        map.insert(onboarded.vnfd.descriptor_id.clone(), onboarded);
    }

    /// Removes a VNFD.
    pub fn remove(&self, vnfd_id: &str) -> Option<OnboardedVnfd> {
        let mut map = self.vnfds.write().unwrap_or_else(|e| e.into_inner());
        map.remove(vnfd_id)
    }

    /// The descriptor ids held.
    pub fn ids(&self) -> Vec<String> {
        let map = self.vnfds.read().unwrap_or_else(|e| e.into_inner());
        let mut ids: Vec<String> = map.keys().cloned().collect();
        ids.sort();
        ids
    }
}

impl PackageCatalog for MemoryCatalog {
    fn vnfd(&self, vnfd_id: &str) -> Option<OnboardedVnfd> {
        let map = self.vnfds.read().unwrap_or_else(|e| e.into_inner());
        map.get(vnfd_id).cloned()
    }
}
