//! What a finished step changes in the instance and the occurrence (pure functions).

use indexmap::IndexMap;
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{HookOutcome, InfraOutcome, InfraStep};
use vnfm_types::{
    InstantiatedVnfInfo, InstantiationState, KeyValuePairs, OperationParams, ResourceChanges,
    VimConnectionChanges, VimConnectionInfo, VnfInstance, VnfScaleInfo,
    apply_vim_connection_changes, vim_connections_set,
};

use super::start::DEFAULT_VIM_KEY;
use crate::automation::{
    AUTOHEAL_PROPERTY, AUTOSCALE_PROPERTY, INDICATOR_SCALING_PROPERTY, THRESHOLD_SCALING_PROPERTY,
};
use crate::plan::merge_object;

/// Key of `instantiatedVnfInfo.metadata` under which a driver's private state is kept between
/// steps ([`InfraOutcome::driver_state`]).
pub const DRIVER_STATE_KEY: &str = "driverState";

/// The changes to `vimConnectionInfo` a request brings (INSTANTIATE, CHANGE_FLAVOUR,
/// CHANGE_EXT_CONN, CHANGE_VNFPKG; MODIFY_INFO's are applied by its plan).
pub(crate) fn request_vims(request: &OperationParams) -> Option<&VimConnectionChanges> {
    match request {
        OperationParams::ModifyInfo(_) => None,
        _ => request.vim_changes(),
    }
}

/// The instance's VIM connections with the request's changes applied as SOL003 says, by JSON
/// Merge Patch: an entry sets the connection under its key, a removal (`null`) deletes it. An
/// INSTANTIATE that names VIMs does not inherit the default VIM an earlier INSTANTIATE put
/// under [`DEFAULT_VIM_KEY`] either (as Tacker takes the request's connections as they are).
pub(crate) fn effective_vims(
    instance: &VnfInstance,
    request: &OperationParams,
) -> IndexMap<String, VimConnectionInfo> {
    let mut map = instance.vim_connection_info.clone().unwrap_or_default();
    if let OperationParams::Instantiate(r) = request
        && let Some(named) = r.vim_connection_info.as_ref()
        && vim_connections_set(named).next().is_some()
        && !named.contains_key(DEFAULT_VIM_KEY)
    {
        map.shift_remove(DEFAULT_VIM_KEY);
    }
    if let Some(changes) = request_vims(request) {
        apply_vim_connection_changes(&mut map, changes);
    }
    map
}

/// The instance with the request's VIM connections merged in, when the request has any.
pub(crate) fn with_request_vims(
    instance: &VnfInstance,
    request: &OperationParams,
) -> Option<VnfInstance> {
    request_vims(request).filter(|m| !m.is_empty())?;
    let mut out = instance.clone();
    out.vim_connection_info = Some(effective_vims(instance, request));
    Some(out)
}

/// Puts back the entries the request added or replaced, as they were before the operation.
pub(crate) fn restore_request_vims(
    out: &mut VnfInstance,
    before: &VnfInstance,
    request: &OperationParams,
) {
    if let Some(added) = request_vims(request) {
        restore_vims(out, before, added.keys());
    }
}

/// Puts back the VIM connections `keys` as they were in `before` (removing those it did not
/// have).
pub(crate) fn restore_vims<'a>(
    out: &mut VnfInstance,
    before: &VnfInstance,
    keys: impl IntoIterator<Item = &'a String>,
) {
    let mut map = out.vim_connection_info.take().unwrap_or_default();
    let old = before.vim_connection_info.as_ref();
    for k in keys {
        match old.and_then(|m| m.get(k)) {
            Some(v) => {
                map.insert(k.clone(), v.clone());
            }
            None => {
                map.shift_remove(k);
            }
        }
    }
    out.vim_connection_info =
        (!map.is_empty() || before.vim_connection_info.is_some()).then_some(map);
}

/// Appends `add` to the accumulated `resourceChanges` of an occurrence.
pub(crate) fn merge_changes(acc: &mut Option<ResourceChanges>, add: ResourceChanges) {
    fn ext<T>(into: &mut Option<Vec<T>>, more: Option<Vec<T>>) {
        if let Some(more) = more.filter(|m| !m.is_empty()) {
            into.get_or_insert_with(Vec::new).extend(more);
        }
    }
    let empty = add.affected_vnfcs.as_ref().is_none_or(Vec::is_empty)
        && add
            .affected_virtual_links
            .as_ref()
            .is_none_or(Vec::is_empty)
        && add
            .affected_ext_link_ports
            .as_ref()
            .is_none_or(Vec::is_empty)
        && add
            .affected_virtual_storages
            .as_ref()
            .is_none_or(Vec::is_empty);
    if empty {
        return;
    }
    let acc = acc.get_or_insert_with(ResourceChanges::default);
    ext(&mut acc.affected_vnfcs, add.affected_vnfcs);
    ext(&mut acc.affected_virtual_links, add.affected_virtual_links);
    ext(
        &mut acc.affected_ext_link_ports,
        add.affected_ext_link_ports,
    );
    ext(
        &mut acc.affected_virtual_storages,
        add.affected_virtual_storages,
    );
}

/// The driver state recorded with the instance (`null` when none).
pub(crate) fn driver_state(instance: &VnfInstance) -> serde_json::Value {
    instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.metadata.as_ref())
        .and_then(|m| m.get(DRIVER_STATE_KEY))
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

fn some_if_any<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

fn merged(current: Option<&KeyValuePairs>, patch: Option<&KeyValuePairs>) -> Option<KeyValuePairs> {
    match patch {
        None => current.cloned(),
        Some(p) => {
            let mut out = current.cloned().unwrap_or_default();
            merge_object(&mut out, p);
            Some(out)
        }
    }
}

/// The configurable properties that switch automatic healing and scaling on or off, as an
/// INSTANTIATE request's `additionalParams` may give them (OpenStack Tacker's
/// `isAutohealEnabled` and `isAutoscaleEnabled`, and the `thresholdScaling` rules); the
/// request's own `vnfConfigurableProperties` win over them.
fn automation_switches(additional: Option<&KeyValuePairs>) -> Option<KeyValuePairs> {
    let switches: KeyValuePairs = [
        (
            AUTOHEAL_PROPERTY,
            serde_json::Value::is_boolean as fn(&_) -> bool,
        ),
        (AUTOSCALE_PROPERTY, serde_json::Value::is_boolean),
        (THRESHOLD_SCALING_PROPERTY, serde_json::Value::is_object),
        (INDICATOR_SCALING_PROPERTY, serde_json::Value::is_object),
    ]
    .into_iter()
    .filter_map(|(name, expected)| {
        let value = additional?.get(name)?;
        expected(value).then(|| (name.to_owned(), value.clone()))
    })
    .collect();
    (!switches.is_empty()).then_some(switches)
}

/// What the infrastructure step needs to know besides its outcome.
pub(crate) struct InfraContext<'a> {
    /// The VNFD the operation runs with (for CHANGE_VNFPKG: the target).
    pub vnfd: &'a Vnfd,
    /// The instance before the operation.
    pub before: &'a VnfInstance,
    /// The operation's request.
    pub request: &'a OperationParams,
}

/// The instance after a successful infrastructure step.
pub(crate) fn apply_infra(
    instance: &VnfInstance,
    step: &InfraStep,
    outcome: &InfraOutcome,
    cx: &InfraContext<'_>,
) -> VnfInstance {
    let mut out = instance.clone();
    match step {
        InfraStep::Terminate { .. } => {
            out.instantiation_state = InstantiationState::NotInstantiated;
            out.instantiated_vnf_info = None;
            return out;
        }
        InfraStep::RollbackInstantiate => {
            // Back to how it was before INSTANTIATE, including the VIM connections the
            // request brought.
            out.instantiation_state = InstantiationState::NotInstantiated;
            out.instantiated_vnf_info = None;
            out.extensions = cx.before.extensions.clone();
            out.vnf_configurable_properties = cx.before.vnf_configurable_properties.clone();
            restore_request_vims(&mut out, cx.before, cx.request);
            return out;
        }
        _ => {}
    }
    let previous_flavour = out
        .instantiated_vnf_info
        .as_ref()
        .map(|i| i.flavour_id.clone());
    let mut info = out
        .instantiated_vnf_info
        .take()
        .unwrap_or_else(|| InstantiatedVnfInfo::started(String::new()));
    if let Some(target) = step.target() {
        info.flavour_id = target.flavour_id.clone();
        info.scale_status = some_if_any(
            target
                .scale_levels
                .iter()
                .map(|(aspect, level)| VnfScaleInfo {
                    aspect_id: aspect.clone(),
                    vnfd_id: None,
                    scale_level: *level,
                })
                .collect(),
        );
    } else if let Some(f) = previous_flavour {
        info.flavour_id = f;
    }
    if let Some(flavour) = cx.vnfd.flavour(&info.flavour_id) {
        info.max_scale_levels = some_if_any(
            flavour
                .scaling_aspects
                .iter()
                .map(|a| VnfScaleInfo {
                    aspect_id: a.id.clone(),
                    vnfd_id: None,
                    scale_level: a.max_scale_level,
                })
                .collect(),
        );
    }
    let r = outcome.resources.clone();
    info.vnfc_resource_info = some_if_any(r.vnfc_resource_info);
    info.vnfc_info = some_if_any(r.vnfc_info);
    info.vnf_virtual_link_resource_info = some_if_any(r.vnf_virtual_link_resource_info);
    info.virtual_storage_resource_info = some_if_any(r.virtual_storage_resource_info);
    info.ext_cp_info = r.ext_cp_info;
    info.ext_virtual_link_info = some_if_any(r.ext_virtual_link_info);
    info.ext_managed_virtual_link_info = some_if_any(r.ext_managed_virtual_link_info);
    if let Some(state) = outcome.vnf_state {
        info.vnf_state = state;
    }
    let mut metadata = info.metadata.take().unwrap_or_default();
    if outcome.driver_state.is_null() {
        metadata.remove(DRIVER_STATE_KEY);
    } else {
        metadata.insert(DRIVER_STATE_KEY.into(), outcome.driver_state.clone());
    }
    for (key, value) in &outcome.published_metadata {
        if key == DRIVER_STATE_KEY {
            continue;
        }
        if value.is_null() {
            metadata.remove(key);
        } else {
            metadata.insert(key.clone(), value.clone());
        }
    }
    info.metadata = (!metadata.is_empty()).then_some(metadata);

    match (step, cx.request) {
        (InfraStep::Instantiate { .. }, OperationParams::Instantiate(r)) => {
            info.localization_language = r.localization_language.clone();
            out.extensions = merged(out.extensions.as_ref(), r.extensions.as_ref());
            out.vnf_configurable_properties = merged(
                out.vnf_configurable_properties.as_ref(),
                automation_switches(r.additional_params.as_ref()).as_ref(),
            );
            out.vnf_configurable_properties = merged(
                out.vnf_configurable_properties.as_ref(),
                r.vnf_configurable_properties.as_ref(),
            );
        }
        (InfraStep::ChangeFlavour { .. }, OperationParams::ChangeFlavour(r)) => {
            out.extensions = merged(out.extensions.as_ref(), r.extensions.as_ref());
            out.vnf_configurable_properties = merged(
                out.vnf_configurable_properties.as_ref(),
                r.vnf_configurable_properties.as_ref(),
            );
        }
        (InfraStep::ChangeVnfpkg { to_vnfd_id, .. }, OperationParams::ChangeVnfpkg(r)) => {
            out.vnfd_id = to_vnfd_id.clone();
            out.vnf_provider = cx.vnfd.provider.clone();
            out.vnf_product_name = cx.vnfd.product_name.clone();
            out.vnf_software_version = cx.vnfd.software_version.clone();
            out.vnfd_version = cx.vnfd.descriptor_version.clone();
            out.extensions = merged(out.extensions.as_ref(), r.extensions.as_ref());
            out.vnf_configurable_properties = merged(
                out.vnf_configurable_properties.as_ref(),
                r.vnf_configurable_properties.as_ref(),
            );
        }
        (InfraStep::RollbackChangeVnfpkg { .. }, _) => {
            out.vnfd_id = cx.before.vnfd_id.clone();
            out.vnf_provider = cx.before.vnf_provider.clone();
            out.vnf_product_name = cx.before.vnf_product_name.clone();
            out.vnf_software_version = cx.before.vnf_software_version.clone();
            out.vnfd_version = cx.before.vnfd_version.clone();
            out.extensions = cx.before.extensions.clone();
            out.vnf_configurable_properties = cx.before.vnf_configurable_properties.clone();
            restore_request_vims(&mut out, cx.before, cx.request);
        }
        (InfraStep::RollbackChangeExtConn, _) => {
            restore_request_vims(&mut out, cx.before, cx.request);
        }
        _ => {}
    }
    out.instantiated_vnf_info = Some(info);
    // The state stays as it was: an INSTANTIATE makes the instance INSTANTIATED only when its
    // occurrence completes ([`completed_instantiate`]); until then (a later step failing
    // leaves it FAILED_TEMP) the store keeps the resources for retry, rollback and fail, and
    // the instance is shown NOT_INSTANTIATED ([`shown`]).
    out
}

/// The instance as a completed INSTANTIATE leaves it: `INSTANTIATED`, written in the
/// transaction that moves the occurrence to `COMPLETED` (as SOL003 and Tacker have it).
pub(crate) fn completed_instantiate(mut instance: VnfInstance, flavour_id: &str) -> VnfInstance {
    instance.instantiation_state = InstantiationState::Instantiated;
    if instance.instantiated_vnf_info.is_none() {
        instance.instantiated_vnf_info = Some(InstantiatedVnfInfo::started(flavour_id));
    }
    instance
}

/// An instance as the API shows it: a `NOT_INSTANTIATED` one has no `instantiatedVnfInfo`,
/// although the store keeps the resources an INSTANTIATE still in `FAILED_TEMP` created, for
/// retry, rollback and fail (SOL003 has `instantiatedVnfInfo` only for an `INSTANTIATED`
/// instance; Tacker writes an INSTANTIATE's resources into the instance only when it
/// completes).
pub(crate) fn shown(mut instance: VnfInstance) -> VnfInstance {
    if instance.instantiation_state == InstantiationState::NotInstantiated {
        instance.instantiated_vnf_info = None;
    }
    instance
}

/// [`shown`] of an instance as a JSON document.
pub(crate) fn shown_document(doc: &mut serde_json::Map<String, serde_json::Value>) {
    if doc
        .get("instantiationState")
        .and_then(serde_json::Value::as_str)
        == Some("NOT_INSTANTIATED")
    {
        doc.remove("instantiatedVnfInfo");
    }
}

/// The instance after a hook: VIM connections added, replaced and removed (including the
/// registered VIMs with a connection id, and the deregistered ones), metadata and extensions
/// merge-patched.
pub(crate) fn apply_hook(
    instance: &VnfInstance,
    outcome: &HookOutcome,
    registered: &[(String, VimConnectionInfo)],
    deregistered: &[String],
) -> VnfInstance {
    let mut out = instance.clone();
    let touches_vims = !outcome.vim_connection_info_add.is_empty()
        || !outcome.vim_connection_info_remove.is_empty()
        || !registered.is_empty()
        || !deregistered.is_empty();
    if touches_vims {
        let mut map = out.vim_connection_info.take().unwrap_or_default();
        for (k, v) in &outcome.vim_connection_info_add {
            map.insert(k.clone(), v.clone());
        }
        for k in &outcome.vim_connection_info_remove {
            map.shift_remove(k);
        }
        for (k, v) in registered {
            map.insert(k.clone(), v.clone());
        }
        for id in deregistered {
            map.retain(|_, v| v.vim_id.as_ref().map(|x| x.as_str()) != Some(id.as_str()));
        }
        out.vim_connection_info = Some(map);
    }
    if let Some(p) = &outcome.metadata {
        out.metadata = merged(out.metadata.as_ref(), Some(p));
    }
    if let Some(p) = &outcome.extensions {
        out.extensions = merged(out.extensions.as_ref(), Some(p));
    }
    if let (Some(p), Some(info)) = (&outcome.instantiated_vnf_info, &out.instantiated_vnf_info) {
        out.instantiated_vnf_info = Some(patched_info(info, p));
    }
    out
}

/// `info` merge-patched with `patch`, the drivers' private state kept as recorded; `info` as it
/// is when the patch does not leave an `instantiatedVnfInfo` (the script management driver
/// checks that before).
fn patched_info(info: &InstantiatedVnfInfo, patch: &KeyValuePairs) -> InstantiatedVnfInfo {
    let Ok(serde_json::Value::Object(mut json)) = serde_json::to_value(info) else {
        return info.clone();
    };
    merge_object(&mut json, patch);
    let Ok(mut patched) = serde_json::from_value::<InstantiatedVnfInfo>(json.into()) else {
        tracing::warn!(
            "a hook's instantiatedVnfInfo patch was not applied: it does not leave an instantiatedVnfInfo"
        );
        return info.clone();
    };
    let state = info.metadata.as_ref().and_then(|m| m.get(DRIVER_STATE_KEY));
    let mut metadata = patched.metadata.take().unwrap_or_default();
    match state {
        Some(s) => metadata.insert(DRIVER_STATE_KEY.into(), s.clone()),
        None => metadata.remove(DRIVER_STATE_KEY),
    };
    patched.metadata = (!metadata.is_empty()).then_some(metadata);
    patched
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_types::{AffectedVnfc, ChangeType, ResourceHandle};

    fn instance() -> VnfInstance {
        serde_json::from_value(json!({
            "id": "i1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
            "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
            "instantiationState": "NOT_INSTANTIATED",
            "vimConnectionInfo": {"vim1": {"vimType": "A"}},
            "metadata": {"keep": 1, "drop": 2},
            "_links": {"self": {"href": "/i/i1"}}
        }))
        .unwrap()
    }

    #[test]
    fn an_instance_is_shown_with_its_resources_only_once_instantiated() {
        let mut stored = instance();
        stored.instantiated_vnf_info = Some(InstantiatedVnfInfo::started("simple"));
        let shown_now = shown(stored.clone());
        assert!(shown_now.instantiated_vnf_info.is_none());
        let mut doc = serde_json::to_value(&stored).unwrap();
        shown_document(doc.as_object_mut().unwrap());
        assert!(doc.get("instantiatedVnfInfo").is_none(), "{doc}");

        let done = completed_instantiate(stored, "other");
        assert_eq!(done.instantiation_state, InstantiationState::Instantiated);
        // The flavour the infrastructure step recorded is kept.
        assert_eq!(
            done.instantiated_vnf_info.as_ref().unwrap().flavour_id,
            "simple"
        );
        assert_eq!(shown(done.clone()), done);
        let mut doc = serde_json::to_value(&done).unwrap();
        shown_document(doc.as_object_mut().unwrap());
        assert_eq!(doc["instantiatedVnfInfo"]["flavourId"], "simple");
        // Without a recorded info (no infrastructure step), the plan's flavour.
        let bare = completed_instantiate(instance(), "simple");
        assert_eq!(bare.instantiated_vnf_info.unwrap().flavour_id, "simple");
    }

    #[test]
    fn request_vims_are_merged_and_restored() {
        let before = instance();
        let req: OperationParams = OperationParams::Instantiate(
            serde_json::from_value(json!({
                "flavourId": "f",
                "vimConnectionInfo": {"vim1": {"vimType": "B"}, "vim2": {"vimType": "C"}}
            }))
            .unwrap(),
        );
        let merged = with_request_vims(&before, &req).unwrap();
        let map = merged.vim_connection_info.clone().unwrap();
        assert_eq!(map["vim1"].vim_type, "B");
        assert_eq!(map["vim2"].vim_type, "C");
        let mut back = merged.clone();
        restore_request_vims(&mut back, &before, &req);
        assert_eq!(back.vim_connection_info, before.vim_connection_info);
    }

    #[test]
    fn a_null_connection_removes_the_instance_entry_and_is_restored() {
        let before = instance();
        assert!(
            before
                .vim_connection_info
                .as_ref()
                .unwrap()
                .contains_key("vim1")
        );
        let req: OperationParams = OperationParams::ChangeExtConn(
            serde_json::from_value(json!({
                "extVirtualLinks": [{"id": "ext", "resourceId": "net", "extCps": []}],
                "vimConnectionInfo": {"vim1": null, "vim2": {"vimType": "C"}}
            }))
            .unwrap(),
        );
        let merged = with_request_vims(&before, &req).unwrap();
        let map = merged.vim_connection_info.clone().unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["vim2"]);
        let mut back = merged.clone();
        restore_request_vims(&mut back, &before, &req);
        assert_eq!(back.vim_connection_info, before.vim_connection_info);
    }

    #[test]
    fn hook_outcome_patches_metadata_and_vims() {
        let outcome = HookOutcome {
            vim_connection_info_remove: vec!["vim1".into()],
            metadata: Some(
                json!({"drop": null, "new": true})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Default::default()
        };
        let reg: VimConnectionInfo =
            serde_json::from_value(json!({"vimId": "k8s-1", "vimType": "kubernetes"})).unwrap();
        let out = apply_hook(&instance(), &outcome, &[("k8s".into(), reg)], &[]);
        let map = out.vim_connection_info.unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["k8s"]);
        assert_eq!(
            serde_json::Value::Object(out.metadata.unwrap()),
            json!({"keep": 1, "new": true})
        );
        // Deregistering removes the entries referencing the VIM.
        let mut with_k8s = instance();
        with_k8s.vim_connection_info = Some(map);
        let out = apply_hook(&with_k8s, &HookOutcome::default(), &[], &["k8s-1".into()]);
        assert!(out.vim_connection_info.unwrap().is_empty());
    }

    /// A script's instantiatedVnfInfo is taken over; the driver's private state is not.
    #[test]
    fn hook_outcome_patches_instantiated_vnf_info_but_not_the_driver_state() {
        let mut inst = instance();
        inst.instantiated_vnf_info = Some(
            serde_json::from_value(json!({
                "flavourId": "simple", "vnfState": "STARTED",
                "vnfcResourceInfo": [{"id": "a", "vduId": "VDU1",
                    "computeResource": {"resourceId": "a"}}],
                "metadata": {"namespace": "ns", DRIVER_STATE_KEY: {"objects": 1}}
            }))
            .unwrap(),
        );
        let patch = |p: serde_json::Value| HookOutcome {
            instantiated_vnf_info: Some(p.as_object().unwrap().clone()),
            ..Default::default()
        };
        let outcome = patch(json!({
            "vnfcResourceInfo": [{"id": "b", "vduId": "VDU1", "computeResource": {"resourceId": "b"}}],
            "metadata": {DRIVER_STATE_KEY: null, "namespace": "other"}
        }));
        let out = apply_hook(&inst, &outcome, &[], &[]);
        let info = out.instantiated_vnf_info.unwrap();
        assert_eq!(info.vnfc_resource_info.unwrap()[0].id, "b");
        let meta = info.metadata.unwrap();
        assert_eq!(meta["namespace"], "other");
        assert_eq!(meta[DRIVER_STATE_KEY], json!({"objects": 1}));
        // A patch that leaves no instantiatedVnfInfo changes nothing.
        let out = apply_hook(&inst, &patch(json!({"vnfState": 7})), &[], &[]);
        assert_eq!(out.instantiated_vnf_info, inst.instantiated_vnf_info);
    }

    #[test]
    fn resource_changes_accumulate() {
        let vnfc = |id: &str, c| AffectedVnfc {
            id: id.into(),
            vdu_id: "VDU1".into(),
            vnfd_id: None,
            change_type: c,
            compute_resource: ResourceHandle::new(id),
            resource_definition_id: None,
            zone_id: None,
            metadata: None,
            affected_vnfc_cp_ids: None,
            added_storage_resource_ids: None,
            removed_storage_resource_ids: None,
        };
        let mut acc = None;
        merge_changes(&mut acc, ResourceChanges::default());
        assert!(acc.is_none());
        for (id, c) in [("a", ChangeType::Added), ("b", ChangeType::Removed)] {
            merge_changes(
                &mut acc,
                ResourceChanges {
                    affected_vnfcs: Some(vec![vnfc(id, c)]),
                    ..Default::default()
                },
            );
        }
        let v = acc.unwrap().affected_vnfcs.unwrap();
        assert_eq!(
            v.iter()
                .map(|x| (x.id.as_str(), x.change_type))
                .collect::<Vec<_>>(),
            [("a", ChangeType::Added), ("b", ChangeType::Removed)]
        );
    }
}
