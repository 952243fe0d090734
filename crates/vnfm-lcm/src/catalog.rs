//! [`MemoryCatalog`]: onboarded VNFDs held in memory (for embedders and tests that onboard in
//! process, and the parse cache of the store-backed catalog the composition root assembles).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use vnfm_descriptor::Vnfd;
use vnfm_driver_api::ArtifactSource;

use crate::ports::{OnboardedVnfd, PackageCatalog};

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

    /// The VNFD with descriptor id `vnfd_id`, if held.
    pub fn get(&self, vnfd_id: &str) -> Option<OnboardedVnfd> {
        let map = self.vnfds.read().unwrap_or_else(|e| e.into_inner());
        map.get(vnfd_id).cloned()
    }

    /// The descriptor ids held.
    pub fn ids(&self) -> Vec<String> {
        let map = self.vnfds.read().unwrap_or_else(|e| e.into_inner());
        let mut ids: Vec<String> = map.keys().cloned().collect();
        ids.sort();
        ids
    }
}

#[async_trait::async_trait]
impl PackageCatalog for MemoryCatalog {
    async fn vnfd(&self, vnfd_id: &str) -> Result<Option<OnboardedVnfd>, crate::LcmError> {
        Ok(self.get(vnfd_id))
    }
}
