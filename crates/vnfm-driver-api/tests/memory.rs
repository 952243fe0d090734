//! Behaviour of the in-memory drivers: inventory bookkeeping, resource changes, failure
//! injection, delays with deadlines and cancellation, and call recording.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_driver_api::*;
use vnfm_types::*;

fn vnfd() -> Arc<Vnfd> {
    Arc::new(
        serde_json::from_value(json!({
            "descriptorId": "vnfd-1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml",
            "flavours": [{
                "id": "simple", "file": "Definitions/df.yaml",
                "vdus": [
                    {"id": "VDU1", "name": "VDU1", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                     "minInstances": 1, "maxInstances": 3, "virtualStorages": ["VirtualStorage"]},
                    {"id": "VDU2", "name": "VDU2", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                     "minInstances": 1, "maxInstances": 1}
                ],
                "virtualLinks": [{"id": "internalVL1"}],
                "extCps": [{"id": "VDU1_CP1"}]
            }]
        }))
        .unwrap(),
    )
}

fn instance() -> VnfInstance {
    serde_json::from_value(json!({
        "id": "inst-1", "vnfdId": "vnfd-1", "vnfProvider": "Acme", "vnfProductName": "Demo",
        "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i/inst-1"}}
    }))
    .unwrap()
}

fn target(vdu1: u32, vdu2: u32) -> ResourceTarget {
    ResourceTarget {
        flavour_id: "simple".into(),
        instantiation_level_id: None,
        scale_levels: [("VDU1_scale".to_string(), vdu1.saturating_sub(1))].into(),
        vdu_instances: [("VDU1".to_string(), vdu1), ("VDU2".to_string(), vdu2)].into(),
    }
}

fn instantiate_request() -> OperationParams {
    OperationParams::Instantiate(
        serde_json::from_value(json!({
            "flavourId": "simple",
            "extVirtualLinks": [{
                "id": "ext-net-1", "resourceId": "net-public",
                "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"cfg1": {}}}]
            }]
        }))
        .unwrap(),
    )
}

fn request(step: InfraStep, params: OperationParams) -> InfraRequest {
    InfraRequest {
        op_occ_id: VnfLcmOpOccId::new("op-1"),
        operation: LcmOperationType::Instantiate,
        step,
        request: params,
        instance: instance(),
        vnfd: vnfd(),
        flavour_id: "simple".into(),
        vims: vec![ResolvedVim::new(
            "vim1",
            serde_json::from_value(json!({"vimType": "vnfm.MEMORY.V_1"})).unwrap(),
        )],
        artifacts: Arc::new(MemArtifacts::new()),
        driver_state: serde_json::Value::Null,
        grant: None,
        grant_request: None,
        restored_package: None,
        control: RunControl::with_timeout(Duration::from_secs(30)),
    }
}

fn other() -> OperationParams {
    OperationParams::Other(Default::default())
}

fn change_types(c: &ResourceChanges) -> Vec<(String, ChangeType)> {
    c.affected_vnfcs
        .iter()
        .flatten()
        .map(|a| (a.vdu_id.clone(), a.change_type))
        .collect()
}

async fn instantiated(driver: &MemoryInfraDriver, vdu1: u32) -> InfraOutcome {
    let req = request(
        InfraStep::Instantiate {
            target: target(vdu1, 1),
        },
        instantiate_request(),
    );
    execute(driver, &req).await.unwrap()
}

#[tokio::test]
async fn instantiate_creates_the_planned_vnfcs_with_tacker_style_info() {
    let d = MemoryInfraDriver::new();
    let out = instantiated(&d, 2).await;
    let r = &out.resources;
    let vdus: Vec<&str> = r
        .vnfc_resource_info
        .iter()
        .map(|v| v.vdu_id.as_str())
        .collect();
    assert_eq!(vdus, ["VDU1", "VDU1", "VDU2"]);
    // vnfcInfo ids are `<vduId>-<vnfcResourceInfo id>` and point at their resource.
    for (info, res) in r.vnfc_info.iter().zip(&r.vnfc_resource_info) {
        assert_eq!(info.id, format!("{}-{}", res.vdu_id, res.id));
        assert_eq!(info.vnfc_resource_info_id.as_deref(), Some(res.id.as_str()));
        assert_eq!(
            res.compute_resource.vim_connection_id.as_deref(),
            Some("vim1")
        );
    }
    // One volume per VDU1 VNFC, one internal VL with a port per VNFC, one external CP.
    assert_eq!(r.virtual_storage_resource_info.len(), 2);
    assert_eq!(r.vnf_virtual_link_resource_info.len(), 1);
    assert_eq!(
        r.vnf_virtual_link_resource_info[0]
            .vnf_link_ports
            .as_ref()
            .map(Vec::len),
        Some(3)
    );
    assert_eq!(r.ext_cp_info.len(), 1);
    assert_eq!(r.ext_cp_info[0].cp_config_id.as_deref(), Some("cfg1"));
    // No cpProtocolData requested: IP over Ethernet, addresses unknown (never absent).
    assert_eq!(
        serde_json::to_value(&r.ext_cp_info[0].cp_protocol_info).unwrap(),
        json!([{"layerProtocol": "IP_OVER_ETHERNET"}])
    );
    assert_eq!(
        r.ext_virtual_link_info[0].resource_handle.resource_id,
        "net-public"
    );
    assert_eq!(
        change_types(&out.resource_changes),
        [
            ("VDU1".to_string(), ChangeType::Added),
            ("VDU1".to_string(), ChangeType::Added),
            ("VDU2".to_string(), ChangeType::Added)
        ]
    );
    assert_eq!(
        out.resource_changes
            .affected_virtual_storages
            .as_ref()
            .map(Vec::len),
        Some(2)
    );
    assert!(out.driver_state["stackId"].as_str().is_some());
    assert_eq!(d.operations(), [InfraOperation::Instantiate]);

    // Retrying the same step (after a crash) changes nothing.
    let again = instantiated(&d, 2).await;
    assert_eq!(again.resources, out.resources);
    assert_eq!(again.resource_changes, ResourceChanges::default());
}

#[tokio::test]
async fn scale_in_removes_the_newest_vnfcs_and_rollback_restores_counts() {
    let d = MemoryInfraDriver::new();
    let first = instantiated(&d, 1).await;
    let original = first.resources.vnfc_resource_info[0].id.clone();

    let out = execute(
        &d,
        &request(
            InfraStep::Scale {
                aspect_id: "VDU1_scale".into(),
                scale_type: ScaleType::ScaleOut,
                steps: 2,
                from: target(1, 1),
                target: target(3, 1),
            },
            other(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        change_types(&out.resource_changes),
        [
            ("VDU1".to_string(), ChangeType::Added),
            ("VDU1".to_string(), ChangeType::Added)
        ]
    );
    let inv = d.inventory(&VnfInstanceId::new("inst-1")).unwrap();
    assert_eq!(inv.count("VDU1"), 3);
    let newest = inv
        .vnfcs
        .iter()
        .rfind(|v| v.vdu_id == "VDU1")
        .unwrap()
        .id
        .clone();

    let out = execute(
        &d,
        &request(
            InfraStep::Scale {
                aspect_id: "VDU1_scale".into(),
                scale_type: ScaleType::ScaleIn,
                steps: 1,
                from: target(3, 1),
                target: target(2, 1),
            },
            other(),
        ),
    )
    .await
    .unwrap();
    let removed = out.resource_changes.affected_vnfcs.unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].id, newest);
    assert_eq!(removed[0].change_type, ChangeType::Removed);

    let out = execute(
        &d,
        &request(
            InfraStep::RollbackScale {
                restore: target(1, 1),
            },
            other(),
        ),
    )
    .await
    .unwrap();
    let ids: Vec<&str> = out
        .resources
        .vnfc_resource_info
        .iter()
        .filter(|v| v.vdu_id == "VDU1")
        .map(|v| v.id.as_str())
        .collect();
    assert_eq!(ids, [original.as_str()], "the oldest VNFC survives");
}

#[tokio::test]
async fn heal_replaces_compute_resources_but_keeps_vnfc_ids() {
    let d = MemoryInfraDriver::new();
    let out = instantiated(&d, 2).await;
    let victim = out.resources.vnfc_resource_info[1].clone();
    let step = InfraStep::Heal {
        scope: HealScope::Vnfcs {
            vnfcs: vec![HealVnfc {
                vnfc_info_id: None,
                vnfc_resource_id: victim.id.clone(),
                vdu_id: "VDU1".into(),
            }],
        },
    };
    let healed = execute(&d, &request(step, other())).await.unwrap();
    let after = healed
        .resources
        .vnfc_resource_info
        .iter()
        .find(|v| v.id == victim.id)
        .unwrap();
    assert_ne!(
        after.compute_resource.resource_id,
        victim.compute_resource.resource_id
    );
    assert_eq!(
        change_types(&healed.resource_changes),
        [("VDU1".to_string(), ChangeType::Modified)]
    );
    // The other VNFCs are untouched.
    assert_eq!(
        healed.resources.vnfc_resource_info[0],
        out.resources.vnfc_resource_info[0]
    );

    let bad = InfraStep::Heal {
        scope: HealScope::Vnfcs {
            vnfcs: vec![HealVnfc {
                vnfc_info_id: None,
                vnfc_resource_id: "nope".into(),
                vdu_id: "VDU1".into(),
            }],
        },
    };
    let err = execute(&d, &request(bad, other())).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid input: cannot heal VNFC `nope`: the instance has no such VNFC"
    );
}

#[tokio::test]
async fn terminate_removes_everything_and_is_idempotent() {
    let d = MemoryInfraDriver::new();
    instantiated(&d, 2).await;
    let step = InfraStep::Terminate {
        termination_type: TerminationType::Forceful,
        graceful_timeout_seconds: None,
    };
    let out = execute(&d, &request(step.clone(), other())).await.unwrap();
    assert_eq!(out.resources, InstanceResources::default());
    assert!(
        change_types(&out.resource_changes)
            .iter()
            .all(|(_, c)| *c == ChangeType::Removed)
    );
    assert_eq!(out.resource_changes.affected_vnfcs.unwrap().len(), 3);
    assert_eq!(
        out.resource_changes.affected_virtual_links.unwrap().len(),
        1
    );
    assert_eq!(out.driver_state, serde_json::Value::Null);
    assert!(d.inventory(&VnfInstanceId::new("inst-1")).is_none());

    let again = execute(&d, &request(step, other())).await.unwrap();
    assert_eq!(again.resource_changes, ResourceChanges::default());
}

#[tokio::test]
async fn change_ext_conn_rollback_restores_previous_links() {
    let d = MemoryInfraDriver::new();
    let before = instantiated(&d, 1).await.resources;
    let params = OperationParams::ChangeExtConn(
        serde_json::from_value(json!({"extVirtualLinks": [{
            "id": "ext-net-1", "resourceId": "net-other",
            "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"cfg2": {"cpProtocolData": [{
                "layerProtocol": "IP_OVER_ETHERNET",
                "ipOverEthernet": {"macAddress": "fa:16:3e:00:00:01", "ipAddresses": [
                    {"type": "IPV4", "fixedAddresses": ["192.0.2.10"], "subnetId": "sn"},
                    {"type": "IPV6", "numDynamicAddresses": 1}]}}]}}}]
        }]}))
        .unwrap(),
    );
    let step = InfraStep::ChangeExtConn {
        cpd_ids: vec!["VDU1_CP1".into()],
    };
    let changed = execute(&d, &request(step, params)).await.unwrap().resources;
    assert_eq!(
        changed.ext_virtual_link_info[0].resource_handle.resource_id,
        "net-other"
    );
    assert_eq!(changed.ext_cp_info[0].cp_config_id.as_deref(), Some("cfg2"));
    // The external CP reports the protocol data it was given.
    assert_eq!(
        serde_json::to_value(&changed.ext_cp_info[0].cp_protocol_info).unwrap(),
        json!([{"layerProtocol": "IP_OVER_ETHERNET",
                "ipOverEthernet": {"macAddress": "fa:16:3e:00:00:01", "ipAddresses": [
                    {"type": "IPV4", "addresses": ["192.0.2.10"], "subnetId": "sn"},
                    {"type": "IPV6", "isDynamic": true}]}}])
    );
    let restored = execute(&d, &request(InfraStep::RollbackChangeExtConn, other()))
        .await
        .unwrap()
        .resources;
    assert_eq!(restored.ext_virtual_link_info, before.ext_virtual_link_info);
    assert_eq!(restored.ext_cp_info, before.ext_cp_info);
}

#[tokio::test]
async fn injected_failures_fire_once_and_are_recorded() {
    let d = MemoryInfraDriver::new();
    d.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("Heat said 503"),
    );
    let req = request(
        InfraStep::Instantiate {
            target: target(1, 1),
        },
        instantiate_request(),
    );
    let err = execute(&d, &req).await.unwrap_err();
    assert!(err.is_retryable());
    // The failed call changed nothing.
    assert!(d.inventory(&VnfInstanceId::new("inst-1")).is_none());
    execute(&d, &req).await.unwrap();

    // Third call overall fails, whatever the operation.
    d.fail_on_call(3, DriverError::permanent("quota exceeded"));
    let err = execute(&d, &request(InfraStep::RollbackInstantiate, other()))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "quota exceeded");
    let calls = d.calls();
    let summary: Vec<(InfraOperation, Option<&str>)> =
        calls.iter().map(|c| (c.operation, c.error)).collect();
    assert_eq!(
        summary,
        [
            (InfraOperation::Instantiate, Some("transient")),
            (InfraOperation::Instantiate, None),
            (InfraOperation::RollbackInstantiate, Some("permanent")),
        ]
    );
    assert_eq!(calls[0].op_occ_id.as_str(), "op-1");
}

#[tokio::test]
async fn without_a_call_log_calls_are_counted_not_kept() {
    let d = MemoryInfraDriver::new().without_call_log();
    let req = request(
        InfraStep::Instantiate {
            target: target(1, 1),
        },
        instantiate_request(),
    );
    execute(&d, &req).await.unwrap();
    // The second call overall fails: calls are still counted.
    d.fail_on_call(2, DriverError::permanent("quota exceeded"));
    let err = execute(&d, &request(InfraStep::RollbackInstantiate, other()))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "quota exceeded");
    assert!(d.calls().is_empty());
    assert!(d.inventory(&VnfInstanceId::new("inst-1")).is_some());
}

#[tokio::test]
async fn delay_honours_cancellation_and_deadline() {
    let d = MemoryInfraDriver::new().with_delay(Duration::from_secs(5));
    let mut req = request(
        InfraStep::Instantiate {
            target: target(1, 1),
        },
        instantiate_request(),
    );
    let flag = CancellationFlag::new();
    req.control = RunControl::new(Duration::from_secs(30), flag.clone());
    let canceller = {
        let flag = flag.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            flag.cancel();
        }
    };
    let started = std::time::Instant::now();
    let (res, ()) = tokio::join!(execute(&d, &req), canceller);
    assert!(matches!(res, Err(DriverError::Cancelled { .. })), "{res:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    req.control = RunControl::with_timeout(Duration::from_millis(30));
    let err = execute(&d, &req).await.unwrap_err();
    assert!(matches!(err, DriverError::Timeout { .. }), "{err:?}");
    assert!(d.inventory(&VnfInstanceId::new("inst-1")).is_none());
}

#[tokio::test]
async fn execute_refuses_an_already_cancelled_step_without_calling_the_driver() {
    let d = MemoryInfraDriver::new();
    let mut req = request(InfraStep::RollbackInstantiate, other());
    let flag = CancellationFlag::new();
    flag.cancel();
    req.control = RunControl::new(Duration::from_secs(5), flag);
    let err = execute(&d, &req).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "infra step rollback_instantiate was cancelled"
    );
    assert!(d.calls().is_empty());
}

#[tokio::test]
async fn a_method_called_with_the_wrong_step_is_refused() {
    let d = MemoryInfraDriver::new();
    let req = request(InfraStep::RollbackInstantiate, other());
    let err = d.scale(&req).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid input: the memory driver's scale method was called with a rollback_instantiate step"
    );
}

fn hook_call(operation: &str, data: serde_json::Value) -> HookCall {
    HookCall {
        op_occ_id: VnfLcmOpOccId::new("op-7"),
        lcm_operation: LcmOperationType::Instantiate,
        operation: operation.into(),
        artifact: HookArtifact {
            name: "mgmt".into(),
            file: "Scripts/mgmt.so".into(),
            artifact_type: "tosca.artifacts.Implementation".into(),
            sha256: None,
            external: false,
            dependencies: vec![],
        },
        inputs: Default::default(),
        request: json!({}),
        instance: json!({}),
        vnfd: vnfd(),
        flavour_id: Some("simple".into()),
        vims: vec![],
        artifacts: Arc::new(MemArtifacts::new()),
        control: RunControl::with_timeout(Duration::from_secs(5)),
        error_handling_data: data,
        grant_request: None,
        grant: None,
        new_package: None,
    }
}

#[tokio::test]
async fn recording_mgmt_driver_records_answers_and_fails_on_demand() {
    let m = RecordingMgmtDriver::new();
    let outcome = HookOutcome {
        metadata: Some(json!({"cluster": "ready"}).as_object().unwrap().clone()),
        error_handling_data: Some(json!({"stage": 3})),
        ..Default::default()
    };
    m.set_outcome("instantiate_end", outcome.clone());
    m.fail_next(
        "instantiate_end",
        DriverError::transient("ssh: connection refused"),
    );

    assert!(
        m.call(&hook_call("instantiate_start", json!(null)))
            .await
            .unwrap()
            .is_noop()
    );
    let err = m
        .call(&hook_call("instantiate_end", json!(null)))
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    let ok = m
        .call(&hook_call("instantiate_end", json!({"stage": 2})))
        .await
        .unwrap();
    assert_eq!(ok, outcome);

    m.fail_on_call(4, DriverError::permanent("boom"));
    assert!(m.call(&hook_call("heal_start", json!(null))).await.is_err());

    assert_eq!(
        m.operations(),
        [
            "instantiate_start",
            "instantiate_end",
            "instantiate_end",
            "heal_start"
        ]
    );
    let calls = m.calls();
    assert_eq!(calls[1].error, Some("transient"));
    assert_eq!(calls[2].error, None);
    assert_eq!(calls[2].error_handling_data, json!({"stage": 2}));
    assert_eq!(calls[3].error, Some("permanent"));
    assert_eq!(calls[0].artifact, "mgmt");
}

#[tokio::test]
async fn recording_mgmt_driver_delay_times_out() {
    let m = RecordingMgmtDriver::new().with_delay(Duration::from_secs(10));
    let mut call = hook_call("instantiate_end", json!(null));
    call.control = RunControl::with_timeout(Duration::from_millis(20));
    let err = m.call(&call).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook instantiate_end did not finish within its time budget of 20 ms"
    );
    assert_eq!(m.calls()[0].error, Some("timeout"));
}

#[test]
fn mem_artifacts_digest() {
    let a = MemArtifacts::new().with("Scripts/x.sh", b"abc".to_vec());
    assert_eq!(
        a.sha256_hex("Scripts/x.sh").unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let e = a.read("nope").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

/// The addresses of each VNFC's CP `cpd`, in VNFC order.
fn addresses(r: &InstanceResources, cpd: &str) -> Vec<Option<String>> {
    r.vnfc_resource_info
        .iter()
        .map(|v| {
            v.vnfc_cp_info
                .iter()
                .flatten()
                .filter(|cp| cp.cpd_id == cpd)
                .flat_map(|cp| cp.cp_protocol_info.iter().flatten())
                .filter_map(|p| p.ip_over_ethernet.as_ref())
                .flat_map(|e| e.ip_addresses.iter().flatten())
                .flat_map(|a| a.addresses.iter().flatten())
                .next()
                .cloned()
        })
        .collect()
}

#[tokio::test]
async fn an_address_pool_gives_vnfc_cps_addresses_that_follow_scaling_and_heal() {
    let d = MemoryInfraDriver::new().with_address_pool(
        ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
            .map(String::from)
            .to_vec(),
    );
    let mut v = (*vnfd()).clone();
    v.flavours[0].vdu_cps = vec![
        serde_json::from_value(json!({"id": "VDU1_CP1", "vdu": "VDU1"})).unwrap(),
        serde_json::from_value(json!({"id": "VDU2_CP1", "vdu": "VDU2"})).unwrap(),
    ];
    let v = Arc::new(v);
    let req = |step| InfraRequest {
        vnfd: v.clone(),
        ..request(step, instantiate_request())
    };
    let out = execute(
        &d,
        &req(InfraStep::Instantiate {
            target: target(2, 1),
        }),
    )
    .await
    .unwrap();
    let a = |s: &str| Some(s.to_string());
    // VDU1, VDU1, VDU2, in creation order; only the VDU's own CP carries the address.
    assert_eq!(
        addresses(&out.resources, "VDU1_CP1"),
        [a("10.0.0.1"), a("10.0.0.2"), None]
    );
    assert_eq!(
        addresses(&out.resources, "VDU2_CP1"),
        [None, None, a("10.0.0.3")]
    );
    let cp = out.resources.vnfc_resource_info[0]
        .vnfc_cp_info
        .iter()
        .flatten()
        .find(|cp| cp.cpd_id == "VDU1_CP1")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&cp.cp_protocol_info).unwrap(),
        json!([{"layerProtocol": "IP_OVER_ETHERNET",
                "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "addresses": ["10.0.0.1"]}]}}])
    );

    // Scale-in frees the newest VNFC's address; scale-out takes the first free one again.
    let scale = |from, to, scale_type| InfraStep::Scale {
        aspect_id: "VDU1_scale".into(),
        scale_type,
        steps: 1,
        from: target(from, 1),
        target: target(to, 1),
    };
    execute(&d, &req(scale(2, 1, ScaleType::ScaleIn)))
        .await
        .unwrap();
    let out = execute(&d, &req(scale(1, 3, ScaleType::ScaleOut)))
        .await
        .unwrap();
    assert_eq!(
        addresses(&out.resources, "VDU1_CP1"),
        [a("10.0.0.1"), None, a("10.0.0.2"), a("10.0.0.4")]
    );

    // Heal replaces the server but keeps the address.
    let out = execute(
        &d,
        &req(InfraStep::Heal {
            scope: HealScope::WholeVnf,
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        addresses(&out.resources, "VDU1_CP1"),
        [a("10.0.0.1"), None, a("10.0.0.2"), a("10.0.0.4")]
    );

    // Without a pool nothing changes: only the internal VL's CPs, without addresses.
    let plain = instantiated(&MemoryInfraDriver::new(), 2).await;
    for v in &plain.resources.vnfc_resource_info {
        let cps = v.vnfc_cp_info.as_ref().unwrap();
        assert_eq!(cps.len(), 1);
        assert_eq!(cps[0].cpd_id, "internalVL1");
        assert!(cps[0].cp_protocol_info.is_none());
    }
}
