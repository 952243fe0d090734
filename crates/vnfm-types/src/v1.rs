//! SOL003 v2.6.1 (`/vnflcm/v1`) shapes that differ from v3.3.1, with conversions.
//!
//! Only types whose JSON differs have a v1 twin here; everything else is the same on both
//! API versions and v1 code uses the v3.3.1 types of the crate root directly. The v1 types
//! reuse v3.3.1 leaf types (resource handles, protocol data, affected resources ...), which
//! are supersets of their v2.6.1 counterparts.
//!
//! Conversions follow one rule: **up** (v1 → v2, `TryFrom`) fails when the v1 value says
//! something v3.3.1 cannot express (duplicate VIM connection ids, `vnfPkgId` in a
//! modification request, ...); **down** (v2 → v1, `TryFrom`) fails when the v3.3.1 value
//! carries a request that v2.6.1 cannot express (an operation type that does not exist in
//! v2.6.1, `parentCpConfigId`, `createExtLinkPort`) and drops purely informational v3.3.1
//! attributes (listed below). Errors name the attribute.
//!
//! | Where | v2.6.1 (`v1`) | v3.3.1 (`v2`) | Conversion |
//! |---|---|---|---|
//! | `vimConnectionInfo` (instance, instantiate, change flavour, change ext conn, changedInfo) | array of `VimConnectionInfo` with an `id` member | map from VIM connection id to `VimConnectionInfo` (no `id`) | `id` ↔ map key, order kept; duplicate ids fail up |
//! | `VnfExtCpData.cpConfig` | array of `VnfExtCpConfig` (`cpInstanceId`, `linkPortId`, `cpProtocolData`), as sent by Tacker v1 and the ETSI conformance tests | map from `cpConfigId` to `VnfExtCpConfig` (`parentCpConfigId`, `linkPortId`, `createExtLinkPort`, `cpProtocolData`) | up: key = `cpInstanceId`, else `<cpdId>-<index>`; down: keys dropped, `cpInstanceId` not set (it named an existing CP, a v3.3.1 key may not); `parentCpConfigId` / `createExtLinkPort` fail down |
//! | `VnfInstance.vnfPkgId` | mandatory | absent (the package is found by `vnfdId`) | dropped up; absent down |
//! | `InstantiatedVnfInfo.vnfVirtualLinkResourceInfo` | also read as `virtualLinkResourceInfo` (the ETSI v2.6.1 test schemas' name) | `vnfVirtualLinkResourceInfo` | renamed |
//! | `InstantiatedVnfInfo.maxScaleLevels` | absent | present | dropped down |
//! | `InstantiatedVnfInfo.additionalParams` (Tacker v1 extension, not SOL003) | present in Tacker v1 | absent | dropped up |
//! | `InstantiatedVnfInfo.extCpInfo` | optional | mandatory (1..N) | unchanged (the model keeps it possibly empty) |
//! | `VnfExtCpInfo.cpConfigId`, `VnfcInfo.vnfcResourceInfoId`, `ExtVirtualLinkInfo.currentVnfExtCpData` | absent / optional | mandatory | the v3.3.1 model keeps them optional so v1 records convert |
//! | `VnfInfoModificationRequest` | `vnfPkgId`, `vimConnectionInfo` array + `vimConnectionInfoDeleteIds`, `vnfcInfoModificationsDeleteIds` | `vnfdId`, `vimConnectionInfo` merge-patch map (`null` deletes) | delete ids ↔ `null` entries; `vnfPkgId` and `vnfcInfoModificationsDeleteIds` fail up |
//! | `VnfInfoModifications` (`changedInfo`) | `vnfPkgId`, `vimConnectionInfo` array, `vnfcInfoModificationsDeleteIds` | no `vnfPkgId`, map | `vnfPkgId` and delete ids dropped up |
//! | `LcmOperationType` | no `CREATE_SNAPSHOT`, `REVERT_TO_SNAPSHOT`, `CHANGE_VNFPKG` | has them | fail down |
//! | `VnfLcmOpOcc.operationParams` | v2.6.1 request shape | v3.3.1 request shape | converted with the request conversions |
//! | `VnfLcmOpOcc` / notification: `modificationsTriggeredByVnfPkgChange`, `vnfSnapshotInfoId`, `warnings`, `resourceChanges.affectedExtLinkPorts`, `verbosity` | absent | present | dropped down |
//! | `LccnSubscriptionRequest` / `LccnSubscription` `verbosity` | absent | present | same types; a v1 client does not send it |
//! | Create, Terminate, Heal, Scale, ScaleToLevel, Operate requests, `CancelMode`, `ProblemDetails`, identifier notifications | same | same | same types |

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::common::{
    CpProtocolData, KeyValuePairs, ProblemDetails, VimConnectionInfo as VimConnectionInfoV2,
};
use crate::ids::{DateTime, GrantId, NotificationId, SubscriptionId, VimId, VnfInstanceId};
use crate::ids::{VnfLcmOpOccId, VnfPkgId, VnfdId};
use crate::instance::{
    ExtManagedVirtualLinkInfo, ExtVirtualLinkInfo, InstantiationState, MonitoringParameter,
    VirtualStorageResourceInfo, VnfExtCpInfo, VnfInstanceLinks, VnfScaleInfo,
    VnfVirtualLinkResourceInfo, VnfcInfo, VnfcResourceInfo,
};
use crate::notification::{LccnLinks, LcmOpOccNotificationStatus};
use crate::op_occ::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, LcmOperationStateType,
    LcmOperationType, ResourceChanges, VnfLcmOpOccLinks,
};
use crate::requests::{
    CancelModeType, ExtLinkPortData, ExtManagedVirtualLinkData, VnfExtCpConfig as VnfExtCpConfigV2,
    VnfOperationalState, VnfcInfoModifications,
};
use crate::subscription::NotificationType;

/// `VimConnectionInfo` of v2.6.1: the VIM connection id is a member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VimConnectionInfo {
    /// The VIM connection id (the map key in v3.3.1).
    pub id: String,
    /// Identifier of the VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_id: Option<VimId>,
    /// Type of the VIM.
    pub vim_type: String,
    /// Interface information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<KeyValuePairs>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<KeyValuePairs>,
    /// VIM-type specific information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<KeyValuePairs>,
}

/// v2.6.1 `vimConnectionInfo` array to the v3.3.1 map. Fails on a duplicate id.
pub fn vim_connections_to_v2(
    list: Vec<VimConnectionInfo>,
    at: &str,
) -> Result<IndexMap<String, VimConnectionInfoV2>, Error> {
    let mut map = IndexMap::with_capacity(list.len());
    for v in list {
        let id = v.id;
        let value = VimConnectionInfoV2 {
            vim_id: v.vim_id,
            vim_type: v.vim_type,
            interface_info: v.interface_info,
            access_info: v.access_info,
            extra: v.extra,
        };
        if map.insert(id.clone(), value).is_some() {
            return Err(Error::Conversion {
                what: format!("{at}/vimConnectionInfo"),
                reason: format!(
                    "VIM connection id {:?} appears twice",
                    crate::truncate(&id, 60)
                ),
            });
        }
    }
    Ok(map)
}

/// The v3.3.1 `vimConnectionInfo` map to the v2.6.1 array, in map order.
pub fn vim_connections_to_v1(map: IndexMap<String, VimConnectionInfoV2>) -> Vec<VimConnectionInfo> {
    map.into_iter()
        .map(|(id, v)| VimConnectionInfo {
            id,
            vim_id: v.vim_id,
            vim_type: v.vim_type,
            interface_info: v.interface_info,
            access_info: v.access_info,
            extra: v.extra,
        })
        .collect()
}

fn opt_vims_to_v2(
    list: Option<Vec<VimConnectionInfo>>,
    at: &str,
) -> Result<Option<IndexMap<String, VimConnectionInfoV2>>, Error> {
    list.map(|l| vim_connections_to_v2(l, at)).transpose()
}

/// A v1 request's connections (a list, SOL003 2.6.1) as v2 changes: each sets its connection
/// (v1 has no way to remove one in an operation request).
fn opt_changes_to_v2(
    list: Option<Vec<VimConnectionInfo>>,
    at: &str,
) -> Result<Option<crate::requests::VimConnectionChanges>, Error> {
    Ok(opt_vims_to_v2(list, at)?.map(crate::requests::vim_connections_to_changes))
}

/// The connections v2 `changes` set, as a v1 list (the removals have no v1 form).
fn changes_to_v1(changes: crate::requests::VimConnectionChanges) -> Vec<VimConnectionInfo> {
    vim_connections_to_v1(
        changes
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect(),
    )
}

mod requests;
mod resources;

pub use requests::*;
pub use resources::*;
