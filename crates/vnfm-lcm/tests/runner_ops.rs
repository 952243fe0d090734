//! Every lifecycle operation end to end through the runner, on SQLite, with the in-memory
//! infrastructure driver and the recording management driver: the states an occurrence goes
//! through, the hooks called, the instance after each operation and the notifications
//! enqueued for every state change.

use crate::runner_support;

use std::sync::Arc;

use runner_support::*;
use serde_json::json;
use vnfm_driver_api::HookOutcome;
use vnfm_driver_api::memory::MEMORY_VIM_TYPE;
use vnfm_lcm::LcmError;
use vnfm_store::{InstanceQuery, OpOccQuery, StepOutcome};
use vnfm_types::{InstantiationState, LcmOperationType, VnfInstanceId, VnfOperationalState};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_vnf_lifecycle_with_instance_fields_and_notifications() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let vnfd_id = hello_vnfd().descriptor_id;
    let inst = env.create(&vnfd_id).await;
    assert_eq!(
        inst.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert_eq!(inst.vnf_provider, hello_vnfd().provider);
    assert!(inst.links.instantiate.is_some() && inst.links.terminate.is_none());
    let id = inst.id.clone();
    let created = env.outbox().await;
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0]["notificationType"],
        "VnfIdentifierCreationNotification"
    );
    assert_eq!(created[0]["vnfInstanceId"], id.as_str());
    assert_eq!(created[0]["subscriptionId"], "sub-1");

    // INSTANTIATE at the default level (small: one web server).
    let op = env
        .lcm
        .instantiate(
            &id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    // The built-in NFVO grants and the registry resolves without waiting on anyone: the
    // occurrence was stored already begun (its STARTING notification is still sent).
    assert_eq!(
        op.operation_state,
        vnfm_types::LcmOperationStateType::Processing
    );
    assert_eq!(op.operation, LcmOperationType::Instantiate);
    let done = env.completed(op.clone()).await;
    assert!(done.error.is_none());
    let added = done
        .resource_changes
        .as_ref()
        .unwrap()
        .affected_vnfcs
        .as_ref()
        .unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(env.op_notes(&op).await, completed_notes());
    let i = env.instance(&id).await;
    assert_eq!(i.instantiation_state, InstantiationState::Instantiated);
    assert!(i.links.terminate.is_some() && i.links.instantiate.is_none());
    assert_eq!(vnfcs(&i, Some("web")), 1);
    assert_eq!(scale_level(&i, "web_scale"), Some(0));
    let info = i.instantiated_vnf_info.as_ref().unwrap();
    assert_eq!(info.flavour_id, "simple");
    assert_eq!(info.max_scale_levels.as_ref().unwrap()[0].scale_level, 2);
    assert_eq!(info.vnf_state, VnfOperationalState::Started);
    // The request's VIM connection was recorded, and the driver's state kept.
    assert_eq!(
        i.vim_connection_info.as_ref().unwrap()["vim1"].vim_type,
        MEMORY_VIM_TYPE
    );
    assert!(info.metadata.as_ref().unwrap()["driverState"]["stackId"].is_string());
    // The infrastructure has what the instance says.
    assert_eq!(env.infra.inventory(&id).unwrap().count("web"), 1);

    // SCALE out by two steps, then in by one.
    let op = env
        .lcm
        .scale(
            &id,
            req(json!({"type": "SCALE_OUT", "aspectId": "web_scale", "numberOfSteps": 2})),
        )
        .await
        .unwrap();
    env.completed(op.clone()).await;
    assert_eq!(env.op_notes(&op).await, completed_notes());
    let i = env.instance(&id).await;
    assert_eq!(
        (vnfcs(&i, Some("web")), scale_level(&i, "web_scale")),
        (3, Some(2))
    );
    // Level 2 is the maximum: one more step is refused before anything starts.
    let err = env
        .lcm
        .scale(
            &id,
            req(json!({"type": "SCALE_OUT", "aspectId": "web_scale"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::ScaleOutOfBounds { .. }), "{err}");
    let op = env
        .lcm
        .scale(
            &id,
            req(json!({"type": "SCALE_IN", "aspectId": "web_scale"})),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    let removed = done.resource_changes.unwrap().affected_vnfcs.unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].change_type, vnfm_types::ChangeType::Removed);
    let i = env.instance(&id).await;
    assert_eq!(
        (vnfcs(&i, Some("web")), scale_level(&i, "web_scale")),
        (2, Some(1))
    );

    // SCALE_TO_LEVEL back to the small level.
    let op = env
        .lcm
        .scale_to_level(&id, req(json!({"instantiationLevelId": "small"})))
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&id).await;
    assert_eq!(
        (vnfcs(&i, Some("web")), scale_level(&i, "web_scale")),
        (1, Some(0))
    );

    // HEAL the whole VNF: same VNFC, new server.
    let before = i
        .instantiated_vnf_info
        .clone()
        .unwrap()
        .vnfc_resource_info
        .unwrap()[0]
        .clone();
    let op = env
        .lcm
        .heal(&id, req(json!({"cause": "test"})))
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&id).await;
    let after = i
        .instantiated_vnf_info
        .clone()
        .unwrap()
        .vnfc_resource_info
        .unwrap()[0]
        .clone();
    assert_eq!(before.id, after.id);
    assert_ne!(
        before.compute_resource.resource_id,
        after.compute_resource.resource_id
    );

    // OPERATE: stop.
    let op = env
        .lcm
        .operate(
            &id,
            req(json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL"})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&id).await;
    assert_eq!(
        i.instantiated_vnf_info.as_ref().unwrap().vnf_state,
        VnfOperationalState::Stopped
    );

    // MODIFY_INFO: name and a metadata merge patch.
    let op = env
        .lcm
        .modify_info(
            &id,
            req(json!({"vnfInstanceName": "renamed", "metadata": {"tier": "gold"}})),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    assert_eq!(
        done.changed_info.unwrap().vnf_instance_name.as_deref(),
        Some("renamed")
    );
    let i = env.instance(&id).await;
    assert_eq!(i.vnf_instance_name.as_deref(), Some("renamed"));
    assert_eq!(i.metadata.as_ref().unwrap()["tier"], "gold");

    // TERMINATE (GRACEFUL): back to NOT_INSTANTIATED, resources gone.
    let op = env
        .lcm
        .terminate(
            &id,
            req(json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 5})),
        )
        .await
        .unwrap();
    env.completed(op.clone()).await;
    assert_eq!(env.op_notes(&op).await, completed_notes());
    let i = env.instance(&id).await;
    assert_eq!(i.instantiation_state, InstantiationState::NotInstantiated);
    assert!(i.instantiated_vnf_info.is_none());
    assert!(env.infra.inventory(&id).is_none());

    // Every occurrence of the instance is COMPLETED and the instance is free.
    let ops = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ops.items.len(), 8);
    assert!(
        ops.items
            .iter()
            .all(|o| o.operation_state == vnfm_types::LcmOperationStateType::Completed)
    );
    assert!(env.store.active_op_occ(&id).await.unwrap().is_none());

    // DELETE the identifier: gone, and a deletion notification enqueued.
    env.lcm.delete_vnf_identifier(&id).await.unwrap();
    let err = env.lcm.get_instance(&id).await.unwrap_err();
    assert_eq!(err.kind().status(), 404);
    let all = env.outbox().await;
    let last = all.last().unwrap();
    assert_eq!(
        last["notificationType"],
        "VnfIdentifierDeletionNotification"
    );
    assert_eq!(last["vnfInstanceId"], id.as_str());
    // 1 creation + 3 per occurrence + 1 deletion.
    assert_eq!(all.len(), 1 + 3 * 8 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_called_in_plan_order_around_the_infra_steps() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    let id = inst.id.clone();
    let op = env
        .lcm
        .instantiate(
            &id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op.clone()).await;
    assert_eq!(
        env.mgmt.operations(),
        ["instantiate_start", "instantiate_end"]
    );
    assert_eq!(
        env.steps(&op, StepOutcome::Completed).await,
        [
            "hook:instantiate_start",
            "infra:instantiate",
            "hook:instantiate_end"
        ]
    );
    // The end hook saw the instance as the infra step left it.
    let calls = env.mgmt.calls();
    assert!(
        calls
            .iter()
            .all(|c| c.op_occ_id == op.id && c.lcm_operation == LcmOperationType::Instantiate)
    );

    let op = env
        .lcm
        .scale(
            &id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})),
        )
        .await
        .unwrap();
    env.completed(op.clone()).await;
    let op2 = env.lcm.heal(&id, req(json!({}))).await.unwrap();
    env.completed(op2).await;
    let op3 = env
        .lcm
        .terminate(&id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    env.completed(op3).await;
    assert_eq!(
        env.mgmt.operations(),
        [
            "instantiate_start",
            "instantiate_end",
            "scale_start",
            "scale_end",
            "heal_start",
            "terminate_end"
        ]
    );
    assert_eq!(
        env.steps(&op, StepOutcome::Completed).await,
        ["hook:scale_start", "infra:scale", "hook:scale_end"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_outcomes_change_the_instance_and_register_vims() {
    let vims = Arc::new(RecordingVims::default());
    let env = Env::builder().vims(vims.clone()).build().await;
    let k8s: vnfm_types::VimConnectionInfo = req(json!({
        "vimType": "kubernetes", "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
        "accessInfo": {"bearer_token": "secret-token"}
    }));
    env.mgmt.set_outcome(
        "instantiate_end",
        HookOutcome {
            metadata: Some(json!({"cluster": "ready"}).as_object().unwrap().clone()),
            extensions: Some(json!({"ext": 1}).as_object().unwrap().clone()),
            vims_to_register: vec![vnfm_driver_api::VimRegistration {
                name: "cluster-a".into(),
                connection_id: Some("k8s".into()),
                info: k8s,
            }],
            error_handling_data: Some(json!({"phase": "done"})),
            ..Default::default()
        },
    );
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op.clone()).await;
    let i = env.instance(&inst.id).await;
    assert_eq!(i.metadata.as_ref().unwrap()["cluster"], "ready");
    assert_eq!(i.extensions.as_ref().unwrap()["ext"], 1);
    let map = i.vim_connection_info.unwrap();
    assert_eq!(map.keys().collect::<Vec<_>>(), ["vim1", "k8s"]);
    assert_eq!(
        map["k8s"].vim_id.as_ref().unwrap().as_str(),
        "vim-cluster-a"
    );
    assert_eq!(*vims.registered.lock().unwrap(), ["cluster-a"]);
    let data = env
        .store
        .get_op_occ_data(&op.id, "errorHandlingData")
        .await
        .unwrap();
    assert_eq!(data, Some(json!({"phase": "done"})));
    // Scaling keeps using the VIM the resources live on, not the one the hook added.
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})),
        )
        .await
        .unwrap();
    env.completed(op).await;
}

/// A hook that changes only `instantiatedVnfInfo` (a Tacker container-update script) changes
/// the stored instance; the driver's private state stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_outcome_patching_only_instantiated_vnf_info_is_stored() {
    let env = Env::builder().build().await;
    env.mgmt.set_outcome(
        "instantiate_end",
        HookOutcome {
            instantiated_vnf_info: Some(
                json!({"metadata": {"note": "from the script"}, "vnfcInfo": null})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Default::default()
        },
    );
    let inst = env.create("vnfd-hooks").await;
    env.instantiated(&inst.id).await;
    let info = env.instance(&inst.id).await.instantiated_vnf_info.unwrap();
    let meta = info.metadata.unwrap();
    assert_eq!(meta["note"], "from the script");
    assert!(
        meta.contains_key(vnfm_lcm::runner::DRIVER_STATE_KEY),
        "{meta:?}"
    );
    assert!(info.vnfc_info.is_none());
    assert!(!info.vnfc_resource_info.unwrap_or_default().is_empty());
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_vnfds_instantiate_scale_heal_change_ext_conn_terminate() {
    for name in ["v2-vm-basic-lcms-max", "v2-vm-userdata-standard"] {
        let vnfd = corpus_vnfd(name);
        let vnfd_id = vnfd.descriptor_id.clone();
        let flavour = vnfd.flavours[0].clone();
        let aspect = flavour.scaling_aspects[0].id.clone();
        let env = Env::with(vec![vnfd]).await;
        let inst = env.create(&vnfd_id).await;
        let id = inst.id.clone();
        let level = flavour.instantiation_levels.last().unwrap().id.clone();
        let op = env
            .lcm
            .instantiate(
                &id,
                req(json!({
                    "flavourId": flavour.id, "instantiationLevelId": level,
                    "vimConnectionInfo": memory_vims()
                })),
            )
            .await
            .unwrap();
        env.completed(op).await;
        let i = env.instance(&id).await;
        let planned = vnfm_lcm::plan(
            &vnfm_lcm::OperationRequest::Instantiate(req(
                json!({"flavourId": flavour.id, "instantiationLevelId": level}),
            )),
            &corpus_vnfd(name),
            &inst,
        )
        .unwrap();
        let target = planned
            .infra_steps()
            .next()
            .unwrap()
            .target()
            .unwrap()
            .clone();
        for (vdu, n) in &target.vdu_instances {
            assert_eq!(vnfcs(&i, Some(vdu)), *n as usize, "{name}: {vdu}");
        }
        let level_before = scale_level(&i, &aspect).unwrap();
        let total = vnfcs(&i, None);

        let op = env
            .lcm
            .scale(&id, req(json!({"type": "SCALE_IN", "aspectId": aspect})))
            .await
            .unwrap();
        env.completed(op).await;
        let i = env.instance(&id).await;
        assert_eq!(scale_level(&i, &aspect), Some(level_before - 1), "{name}");
        assert!(vnfcs(&i, None) < total, "{name}");

        let op = env
            .lcm
            .scale(&id, req(json!({"type": "SCALE_OUT", "aspectId": aspect})))
            .await
            .unwrap();
        env.completed(op).await;
        let i = env.instance(&id).await;
        assert_eq!(
            (scale_level(&i, &aspect), vnfcs(&i, None)),
            (Some(level_before), total),
            "{name}"
        );

        // Heal one VNFC by its vnfcInfo id.
        let vnfc = i.instantiated_vnf_info.clone().unwrap().vnfc_info.unwrap()[0].clone();
        let op = env
            .lcm
            .heal(&id, req(json!({"vnfcInstanceId": [vnfc.id]})))
            .await
            .unwrap();
        let done = env.completed(op).await;
        let healed = done.resource_changes.unwrap().affected_vnfcs.unwrap();
        assert_eq!(healed.len(), 1);
        assert_eq!(healed[0].change_type, vnfm_types::ChangeType::Modified);

        let cpd = flavour.ext_cps.first().map(|c| c.id.clone());
        if let Some(cpd) = cpd {
            let op = env
                .lcm
                .change_ext_conn(
                    &id,
                    req(json!({"extVirtualLinks": [{
                        "id": "ext-net", "resourceId": "net-1",
                        "extCps": [{"cpdId": cpd, "cpConfig": {"c1": {"createExtLinkPort": true}}}]
                    }]})),
                )
                .await
                .unwrap();
            let done = env.completed(op).await;
            assert_eq!(done.changed_ext_connectivity.unwrap()[0].id, "ext-net");
            let i = env.instance(&id).await;
            let info = i.instantiated_vnf_info.unwrap();
            assert!(info.ext_cp_info.iter().any(|c| c.cpd_id == cpd), "{name}");
        }

        let op = env
            .lcm
            .terminate(&id, req(json!({"terminationType": "FORCEFUL"})))
            .await
            .unwrap();
        env.completed(op).await;
        assert_eq!(
            env.instance(&id).await.instantiation_state,
            InstantiationState::NotInstantiated
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_flavour_runs_the_start_hook_of_the_old_and_the_end_hook_of_the_new() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let op = env
        .lcm
        .change_flavour(
            &inst.id,
            req(json!({"newFlavourId": "big", "extensions": {"size": "big"}})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(
        env.mgmt.operations()[2..],
        ["change_flavour_start", "change_flavour_end"]
    );
    let i = env.instance(&inst.id).await;
    assert_eq!(i.instantiated_vnf_info.as_ref().unwrap().flavour_id, "big");
    assert_eq!(i.extensions.unwrap()["size"], "big");
    assert_eq!(env.infra.inventory(&inst.id).unwrap().flavour_id, "big");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_vnfpkg_and_modify_info_switch_the_vnfd() {
    let v1 = hello_vnfd();
    let mut v2 = hello_vnfd();
    v2.descriptor_id = "hello-v2".into();
    v2.software_version = "2.0".into();
    v2.descriptor_version = "2.0".into();
    let mut v3 = hello_vnfd();
    v3.descriptor_id = "hello-v3".into();
    v3.software_version = "3.0".into();
    let env = Env::with(vec![v1.clone(), v2, v3]).await;
    let inst = env.create(&v1.descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let op = env
        .lcm
        .change_vnfpkg(&inst.id, req(json!({"vnfdId": "hello-v2"})))
        .await
        .unwrap();
    let done = env.completed(op).await;
    let changed = done.changed_info.unwrap();
    assert_eq!(changed.vnfd_id.unwrap().as_str(), "hello-v2");
    assert_eq!(changed.vnf_software_version.as_deref(), Some("2.0"));
    let i = env.instance(&inst.id).await;
    assert_eq!(
        (i.vnfd_id.as_str(), i.vnf_software_version.as_str()),
        ("hello-v2", "2.0")
    );
    assert_eq!(
        env.infra.inventory(&inst.id).unwrap().vnfd_id.as_str(),
        "hello-v2"
    );

    // MODIFY_INFO may switch the VNFD too (no infrastructure change).
    let op = env
        .lcm
        .modify_info(&inst.id, req(json!({"vnfdId": "hello-v3"})))
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&inst.id).await;
    assert_eq!(
        (i.vnfd_id.as_str(), i.vnf_software_version.as_str()),
        ("hello-v3", "3.0")
    );
    // A VNFD nobody onboarded is refused before anything starts.
    let err = env
        .lcm
        .change_vnfpkg(&inst.id, req(json!({"vnfdId": "nope"})))
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::UnknownVnfd { .. }));
    assert_eq!(err.kind().status(), 422);
}

/// A MODIFY_INFO that changes `vnfdId` hands its `modify_information_end` hook the new package
/// (Tacker's `new_csar_dir`); its start hook and other operations' hooks get none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modify_information_end_of_a_vnfd_change_gets_the_new_package() {
    let mut v1 = hooks_vnfd();
    v1.flavours[0].lcm_hooks.push(
        serde_json::from_value(json!({"operation": "modify_information_end", "artifact": "mgmt"}))
            .unwrap(),
    );
    let mut v2 = v1.clone();
    v2.descriptor_id = "vnfd-hooks-v2".into();
    v2.software_version = "2.0".into();
    let env = Env::with(vec![v1.clone(), v2]).await;
    let inst = env.create(&v1.descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let op = env
        .lcm
        .modify_info(&inst.id, req(json!({"vnfdId": "vnfd-hooks-v2"})))
        .await
        .unwrap();
    env.completed(op).await;
    let seen: Vec<(String, Option<String>)> = env
        .mgmt
        .calls()
        .into_iter()
        .map(|c| (c.operation, c.new_vnfd_id))
        .collect();
    assert_eq!(
        seen,
        [
            ("instantiate_start".to_string(), None),
            ("instantiate_end".to_string(), None),
            ("modify_information_start".to_string(), None),
            (
                "modify_information_end".to_string(),
                Some("vnfd-hooks-v2".to_string())
            ),
        ]
    );
}

/// CHANGE_VNFPKG to another product's VNFD, or to a VNFD without the instance's VDUs or
/// aspects, is refused with every reason before anything starts; a VnfPackageChange policy
/// that selects the change allows another product.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_vnfpkg_to_an_unrelated_vnfd_is_refused_with_its_reasons() {
    use vnfm_descriptor::{PackageChange, PackageChangeSelector};
    let v1 = hello_vnfd();
    let variant = |id: &str, product: &str| {
        let mut v = hello_vnfd();
        v.descriptor_id = id.into();
        v.product_name = product.into();
        v
    };
    let other = variant("other-product", "Some other VNF");
    let mut no_web = variant("hello-no-web", &v1.product_name);
    no_web.flavours[0].vdus.retain(|v| v.id != "web");
    no_web.flavours[0].scaling_aspects.clear();
    let mut lower = variant("hello-lower", &v1.product_name);
    lower.flavours[0].scaling_aspects[0].max_scale_level = 0;
    let policy = |to: &str| PackageChange {
        id: "to_successor".into(),
        selectors: vec![PackageChangeSelector {
            source_descriptor_id: v1.descriptor_id.clone(),
            destination_descriptor_id: to.into(),
            source_flavour_id: "simple".into(),
        }],
        destination_flavour_id: "simple".into(),
        modification_qualifier: "up".into(),
        description: None,
        component_mappings: Vec::new(),
    };
    let mut successor = variant("successor-product", "Successor VNF");
    successor.package_changes.push(policy("successor-product"));
    let mut elsewhere = variant("elsewhere-product", "Elsewhere VNF");
    let mut p = policy("elsewhere-product");
    p.destination_flavour_id = "big".into();
    elsewhere.package_changes.push(p);
    let env = Env::with(vec![v1.clone(), other, no_web, lower, successor, elsewhere]).await;
    let inst = env.create(&v1.descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "web_scale"})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let occs_before = env
        .lcm
        .list_op_occs(&OpOccQuery::default())
        .await
        .unwrap()
        .items
        .len();
    let refused = |vnfd: &'static str| {
        let lcm = env.lcm.clone();
        let id = inst.id.clone();
        async move {
            let err = lcm
                .change_vnfpkg(&id, req(json!({"vnfdId": vnfd})))
                .await
                .unwrap_err();
            assert!(
                matches!(err, LcmError::PackageChangeRefused { .. }),
                "{vnfd}: {err:?}"
            );
            assert_eq!(err.kind().status(), 422);
            err.to_string()
        }
    };
    let msg = refused("other-product").await;
    assert!(msg.contains("stays within one VNF product"), "{msg}");
    assert!(msg.contains("Some other VNF"), "{msg}");
    let msg = refused("hello-no-web").await;
    assert!(msg.contains("VNFCs of VDU web"), "{msg}");
    assert!(msg.contains("aspect web_scale"), "{msg}");
    let msg = refused("hello-lower").await;
    assert!(
        msg.contains("at scale level 1, above the new VNFD's max_scale_level 0"),
        "{msg}"
    );
    let msg = refused("elsewhere-product").await;
    assert!(msg.contains("moves the instance to flavour big"), "{msg}");
    // Nothing started, nothing changed.
    assert_eq!(
        env.lcm
            .list_op_occs(&OpOccQuery::default())
            .await
            .unwrap()
            .items
            .len(),
        occs_before
    );
    assert_eq!(
        env.instance(&inst.id).await.vnfd_id.as_str(),
        v1.descriptor_id
    );
    // The policy of the destination VNFD allows the other product.
    let op = env
        .lcm
        .change_vnfpkg(&inst.id, req(json!({"vnfdId": "successor-product"})))
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&inst.id).await;
    assert_eq!(i.vnfd_id.as_str(), "successor-product");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifiers_list_and_delete_rules() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let vnfd_id = hello_vnfd().descriptor_id;
    let a = env.create(&vnfd_id).await;
    let b = env.create(&vnfd_id).await;
    let page = env
        .lcm
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    // Unknown VNFD: 422, nothing stored, nothing notified.
    let err = env
        .lcm
        .create_vnf_identifier(req(json!({"vnfdId": "missing"})))
        .await
        .unwrap_err();
    assert_eq!(err.kind().status(), 422);
    assert_eq!(env.outbox().await.len(), 2);
    // An instantiated VNF cannot lose its identifier.
    let op = env
        .lcm
        .instantiate(&a.id, req(json!({"flavourId": "simple"})))
        .await
        .unwrap();
    env.completed(op).await;
    let err = env.lcm.delete_vnf_identifier(&a.id).await.unwrap_err();
    assert!(
        matches!(err, LcmError::InstanceInstantiated { .. }),
        "{err}"
    );
    assert_eq!(err.kind().status(), 409);
    env.lcm.delete_vnf_identifier(&b.id).await.unwrap();
    let err = env
        .lcm
        .delete_vnf_identifier(&VnfInstanceId::new("nope"))
        .await
        .unwrap_err();
    assert_eq!(err.kind().status(), 404);
}
