//! Cinder: the volume types Tacker's samples create under fixed names, the volumes of a VNFC,
//! and readers of what Cinder holds.

use std::collections::BTreeSet;

use serde_json::Value;
use vnfm_types::{VnfInstance, VnfcResourceInfo};

use super::services::Services;

/// The volume type names Tacker's samples create (`name: VDU1-multi` in their templates).
pub const FIXED_VOLUME_TYPES: [&str; 2] = ["VDU1-multi", "VDU2-multi"];

/// What the corpus packages of these tests append to [`FIXED_VOLUME_TYPES`], so that they do
/// not meet the types Tacker's own tests make on the same cloud at the same time.
pub const VOLUME_TYPE_SUFFIX: &str = "-vnfm-test";

/// Holds the tests whose templates create Cinder volume types under fixed names
/// ([`FIXED_VOLUME_TYPES`] with [`VOLUME_TYPE_SUFFIX`]) one after the other while the guard
/// lives: Cinder keeps volume type names unique, so a second stack making the same type fails.
pub async fn fixed_volume_type_names() -> tokio::sync::MutexGuard<'static, ()> {
    static NAMES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    NAMES.lock().await
}

/// The Cinder volume IDs of the storages of `vnfc` (its `storageResourceIds`, resolved through
/// the instance's `virtualStorageResourceInfo`).
pub fn volumes_of(i: &VnfInstance, vnfc: &VnfcResourceInfo) -> Vec<String> {
    let storages = i
        .instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.virtual_storage_resource_info.clone())
        .unwrap_or_default();
    vnfc.storage_resource_ids
        .iter()
        .flatten()
        .map(|id| {
            storages
                .iter()
                .find(|s| &s.id == id)
                .unwrap_or_else(|| panic!("no virtualStorageResourceInfo {id}"))
                .storage_resource
                .resource_id
                .clone()
        })
        .collect()
}

/// Asserts that Cinder's `volume` is attached to `server` and to no other server.
pub fn assert_attached_to(volume: &Value, server: &str) {
    let servers: Vec<&Value> = volume["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["server_id"])
        .collect();
    assert_eq!(servers, vec![server], "{volume}");
}

impl Services {
    /// Cinder's volume `id` (`status`, `attachments`, `bootable`, ...), `None` when Cinder has
    /// none.
    pub async fn volume(&self, id: &str) -> Option<Value> {
        self.find("block-storage", "/volumes/detail", "volumes", id)
            .await
    }

    /// The IDs of the volumes Cinder holds for the project.
    pub async fn volume_ids(&self) -> BTreeSet<String> {
        let all = self.get("block-storage", "/volumes").await;
        all["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Asserts that Nova holds each VNFC's server `ACTIVE`, booted from a volume (no image of
    /// its own), and that Cinder holds each of the VNFC's volumes `in-use`, attached to that
    /// server only, created from Glance's image `image` (Cinder copied the image's metadata and
    /// marked the volume bootable). Answers the volume IDs.
    pub async fn assert_servers_on_volumes(
        &self,
        inst: &VnfInstance,
        vnfcs: &[VnfcResourceInfo],
        image: &str,
    ) -> BTreeSet<String> {
        let image_id = self.image_id(image).await;
        let mut all = BTreeSet::new();
        for c in vnfcs {
            let id = &c.compute_resource.resource_id;
            let server = self
                .server(id)
                .await
                .unwrap_or_else(|| panic!("Nova has no server {id} of VNFC {}", c.id));
            assert_eq!(server["status"], "ACTIVE", "{server}");
            // A server booted from a volume has no image (Nova answers "").
            assert_eq!(server["image"], "", "{server}");
            let volumes = volumes_of(inst, c);
            assert!(!volumes.is_empty(), "VNFC {} has no storage", c.id);
            let attached: BTreeSet<String> = server["os-extended-volumes:volumes_attached"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap().to_string())
                .collect();
            for v in &volumes {
                assert!(
                    attached.contains(v),
                    "Nova's server {id} lacks volume {v}: {server}"
                );
                let volume = self
                    .volume(v)
                    .await
                    .unwrap_or_else(|| panic!("Cinder has no volume {v} of VNFC {}", c.id));
                assert_eq!(volume["status"], "in-use", "{volume}");
                assert_eq!(volume["bootable"], "true", "{volume}");
                assert_eq!(
                    volume["volume_image_metadata"]["image_id"],
                    image_id.as_str(),
                    "{volume}"
                );
                assert_attached_to(&volume, id);
                all.insert(v.clone());
            }
        }
        all
    }

    /// Cinder's volume types named `name` (the administrator sees them all).
    pub async fn volume_types_named(&self, name: &str) -> Vec<Value> {
        let all = self.get("block-storage", "/types?is_public=None").await;
        all["volume_types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == name)
            .cloned()
            .collect()
    }

    /// Asserts that Cinder holds none of these volumes any more.
    pub async fn assert_volumes_gone<'a>(&self, volumes: impl IntoIterator<Item = &'a String>) {
        let held = self.volume_ids().await;
        let left: Vec<_> = volumes.into_iter().filter(|v| held.contains(*v)).collect();
        assert!(left.is_empty(), "Cinder still holds {left:?}");
    }
}
