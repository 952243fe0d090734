//! Planner behaviour on a hand-written VNFD: which steps, in which order, with which targets;
//! rollback plans, retry points, and MODIFY_INFO bookkeeping.

use crate::plan_support;

use plan_support::*;
use serde_json::json;
use vnfm_driver_api::{HealScope, HealVnfc, InfraStep, ResourceTarget};
use vnfm_lcm::plan::{apply_modifications, hook_prefix};
use vnfm_lcm::{LcmError, OperationRequest, Plan, PlanKind, Step, plan, remaining, rollback_plan};
use vnfm_types::{
    LcmOperationType, OperationParams, ScaleType, TerminationType, VnfInstance,
    VnfOperationalState, VnfdId,
};

fn planned(op: &str, body: serde_json::Value, instance: &VnfInstance) -> Plan {
    plan(&req(op, body), &vnfd(), instance).unwrap_or_else(|e| panic!("{op}: {e}"))
}

fn infra(p: &Plan) -> InfraStep {
    p.infra_steps().next().cloned().expect("an infra step")
}

fn counts(t: &ResourceTarget) -> Vec<(String, u32)> {
    t.vdu_instances
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn vc(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn instantiate_uses_the_default_level_and_wraps_the_infra_step_in_hooks() {
    let p = planned("instantiate", json!({"flavourId": "simple"}), &fresh());
    assert_eq!(
        p.step_names(),
        [
            "hook:instantiate_start",
            "infra:instantiate",
            "hook:instantiate_end"
        ]
    );
    assert_eq!(p.flavour_id.as_deref(), Some("simple"));
    let Step::Hook(h) = &p.steps[0] else {
        panic!("hook first")
    };
    assert_eq!(h.artifact.file, "Scripts/mgmt.so");
    assert_eq!(h.artifact.sha256.as_deref(), Some("ab12"));
    let InfraStep::Instantiate { target } = infra(&p) else {
        panic!("instantiate")
    };
    assert_eq!(target.instantiation_level_id.as_deref(), Some("level_1"));
    assert_eq!(counts(&target), vc(&[("VDU1", 1), ("VDU2", 1)]));
    assert_eq!(target.scale_levels["VDU1_scale"], 0);
    assert!(p.rollback_hooks.start.is_some() && p.rollback_hooks.end.is_some());
}

#[test]
fn instantiate_at_a_level_takes_its_counts_and_scale_levels() {
    let p = planned(
        "instantiate",
        json!({"flavourId": "simple", "instantiationLevelId": "level_2"}),
        &fresh(),
    );
    let InfraStep::Instantiate { target } = infra(&p) else {
        panic!("instantiate")
    };
    assert_eq!(counts(&target), vc(&[("VDU1", 3), ("VDU2", 1)]));
    assert_eq!(target.scale_levels["VDU1_scale"], 2);
}

#[test]
fn instantiate_without_levels_or_hooks() {
    let p = planned("instantiate", json!({"flavourId": "big"}), &fresh());
    assert_eq!(p.step_names(), ["infra:instantiate"]);
    let InfraStep::Instantiate { target } = infra(&p) else {
        panic!("instantiate")
    };
    assert_eq!(target.instantiation_level_id, None);
    assert_eq!(counts(&target), vc(&[("VDU1", 1), ("VDU2", 1)]));
}

#[test]
fn scale_out_and_in_move_counts_by_the_aspect_deltas() {
    let p = planned(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}),
        &running(1),
    );
    assert_eq!(
        p.step_names(),
        ["hook:scale_start", "infra:scale", "hook:scale_end"]
    );
    let InfraStep::Scale {
        aspect_id,
        scale_type,
        steps,
        from,
        target,
    } = infra(&p)
    else {
        panic!("scale")
    };
    assert_eq!(
        (aspect_id.as_str(), scale_type, steps),
        ("VDU1_scale", ScaleType::ScaleOut, 2)
    );
    assert_eq!(counts(&from), vc(&[("VDU1", 1), ("VDU2", 1)]));
    assert_eq!(counts(&target), vc(&[("VDU1", 3), ("VDU2", 1)]));
    assert_eq!(target.scale_levels["VDU1_scale"], 2);

    let p = planned(
        "scale",
        json!({"type": "SCALE_IN", "aspectId": "VDU1_scale"}),
        &running(3),
    );
    let InfraStep::Scale { target, .. } = infra(&p) else {
        panic!("scale")
    };
    assert_eq!(counts(&target), vc(&[("VDU1", 2), ("VDU2", 1)]));
    assert_eq!(target.scale_levels["VDU1_scale"], 1);
}

#[test]
fn scale_starts_from_the_recorded_vnfcs() {
    // The instance records 2 VNFCs of VDU1 at scale level 1; one more step gives 3.
    let p = planned(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"}),
        &running(2),
    );
    let InfraStep::Scale { from, target, .. } = infra(&p) else {
        panic!("scale")
    };
    assert_eq!(from.instances_of("VDU1"), 2);
    assert_eq!(target.instances_of("VDU1"), 3);
}

#[test]
fn scale_to_level_by_level_or_by_scale_info() {
    let p = planned(
        "scale_to_level",
        json!({"instantiationLevelId": "level_2"}),
        &running(1),
    );
    assert_eq!(p.step_names(), ["infra:scale_to_level"]);
    let InfraStep::ScaleToLevel { from, target } = infra(&p) else {
        panic!("scale_to_level")
    };
    assert_eq!(from.instances_of("VDU1"), 1);
    assert_eq!(counts(&target), vc(&[("VDU1", 3), ("VDU2", 1)]));
    assert_eq!(target.instantiation_level_id.as_deref(), Some("level_2"));

    let p = planned(
        "scale_to_level",
        json!({"scaleInfo": [{"aspectId": "VDU1_scale", "scaleLevel": 1}]}),
        &running(3),
    );
    let InfraStep::ScaleToLevel { target, .. } = infra(&p) else {
        panic!("scale_to_level")
    };
    assert_eq!(counts(&target), vc(&[("VDU1", 2), ("VDU2", 1)]));
}

#[test]
fn heal_resolves_vnfc_ids_or_heals_the_whole_vnf() {
    let p = planned(
        "heal",
        json!({"vnfcInstanceId": ["VDU1-VDU1-res-1", "VDU2-res-0"]}),
        &running(2),
    );
    assert_eq!(p.step_names(), ["hook:heal_start", "infra:heal"]);
    assert_eq!(
        infra(&p),
        InfraStep::Heal {
            scope: HealScope::Vnfcs {
                vnfcs: vec![
                    HealVnfc {
                        vnfc_info_id: Some("VDU1-VDU1-res-1".into()),
                        vnfc_resource_id: "VDU1-res-1".into(),
                        vdu_id: "VDU1".into(),
                    },
                    HealVnfc {
                        vnfc_info_id: None,
                        vnfc_resource_id: "VDU2-res-0".into(),
                        vdu_id: "VDU2".into(),
                    },
                ]
            }
        }
    );
    let p = planned("heal", json!({"cause": "test"}), &running(1));
    assert_eq!(
        infra(&p),
        InfraStep::Heal {
            scope: HealScope::WholeVnf
        }
    );
}

#[test]
fn terminate_keeps_the_timeout_only_when_graceful() {
    let p = planned(
        "terminate",
        json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 10}),
        &running(1),
    );
    assert_eq!(p.step_names(), ["infra:terminate", "hook:terminate_end"]);
    assert_eq!(
        infra(&p),
        InfraStep::Terminate {
            termination_type: TerminationType::Graceful,
            graceful_timeout_seconds: Some(10)
        }
    );
    let p = planned(
        "terminate",
        json!({"terminationType": "FORCEFUL", "gracefulTerminationTimeout": 10}),
        &running(1),
    );
    assert_eq!(
        infra(&p),
        InfraStep::Terminate {
            termination_type: TerminationType::Forceful,
            graceful_timeout_seconds: None
        }
    );
}

#[test]
fn change_flavour_takes_the_end_hook_from_the_new_flavour() {
    let p = planned(
        "change_flavour",
        json!({"newFlavourId": "big"}),
        &running(2),
    );
    assert_eq!(
        p.step_names(),
        [
            "hook:change_flavour_start",
            "infra:change_flavour",
            "hook:change_flavour_end"
        ]
    );
    let InfraStep::ChangeFlavour { from, target } = infra(&p) else {
        panic!("change_flavour")
    };
    assert_eq!(
        (from.flavour_id.as_str(), from.instances_of("VDU1")),
        ("simple", 2)
    );
    assert_eq!(
        (target.flavour_id.as_str(), target.instances_of("VDU1")),
        ("big", 1)
    );
}

#[test]
fn operate_change_ext_conn_and_change_vnfpkg_steps() {
    let p = planned(
        "operate",
        json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL", "gracefulStopTimeout": 30,
               "vnfcInstanceId": ["VDU1-VDU1-res-0"]}),
        &running(1),
    );
    assert_eq!(p.step_names(), ["infra:operate"]);
    assert_eq!(
        infra(&p),
        InfraStep::Operate {
            change_state_to: VnfOperationalState::Stopped,
            stop_type: Some(vnfm_types::StopType::Graceful),
            graceful_stop_timeout_seconds: Some(30),
            vnfc_resource_ids: vec!["VDU1-res-0".into()],
        }
    );

    let link = |id: &str| {
        json!({"id": id, "resourceId": "n", "extCps": [
            {"cpdId": "VDU1_CP1", "cpConfig": {"a": {}}},
            {"cpdId": "VDU2_CP1", "cpConfig": {"b": {}}}]})
    };
    let p = planned(
        "change_ext_conn",
        json!({"extVirtualLinks": [link("e1"), link("e2")]}),
        &running(1),
    );
    assert_eq!(
        p.step_names(),
        [
            "infra:change_ext_conn",
            "hook:change_external_connectivity_end"
        ]
    );
    assert_eq!(
        infra(&p),
        InfraStep::ChangeExtConn {
            cpd_ids: vec!["VDU1_CP1".into(), "VDU2_CP1".into()]
        }
    );

    let mut new = vnfd();
    new.descriptor_id = "vnfd-2".into();
    let p = plan(
        &req("change_vnfpkg", json!({"vnfdId": "vnfd-2"})),
        &new,
        &running(1),
    )
    .unwrap();
    assert_eq!(p.step_names(), ["infra:change_vnfpkg"]);
    assert_eq!(
        infra(&p),
        InfraStep::ChangeVnfpkg {
            from_vnfd_id: VnfdId::new("vnfd-1"),
            to_vnfd_id: VnfdId::new("vnfd-2")
        }
    );
}

#[test]
fn modify_info_applies_modifications_with_hooks_only_when_instantiated() {
    let p = planned("modify_info", json!({"vnfInstanceName": "x"}), &running(1));
    assert_eq!(
        p.step_names(),
        ["hook:modify_information_start", "info:apply_modifications"]
    );
    let p = planned("modify_info", json!({"vnfInstanceName": "x"}), &fresh());
    assert_eq!(p.step_names(), ["info:apply_modifications"]);
    assert_eq!(p.flavour_id, None);
}

#[test]
fn rollback_of_instantiate_undoes_the_infra_step_even_if_it_failed_midway() {
    let p = planned("instantiate", json!({"flavourId": "simple"}), &fresh());
    // instantiate_start failed: nothing to undo, no rollback hooks either.
    let r = rollback_plan(&p, 0).unwrap();
    assert!(r.steps.is_empty());
    assert_eq!(r.kind, PlanKind::Rollback);
    // The infra step failed (it may have created resources) or succeeded.
    for completed in [1, 2, 3] {
        let r = rollback_plan(&p, completed).unwrap();
        assert_eq!(
            r.step_names(),
            [
                "hook:instantiate_rollback_start",
                "infra:rollback_instantiate",
                "hook:instantiate_rollback_end"
            ],
            "completed = {completed}"
        );
    }
    let r = rollback_plan(&p, 2).unwrap();
    let e = rollback_plan(&r, 1).unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert_eq!(
        e.to_string(),
        "INSTANTIATE cannot be rolled back (the failed occurrence was already rolling back); retry it or mark it FAILED"
    );
}

#[test]
fn rollback_of_scale_out_restores_the_previous_counts_but_scale_in_is_refused() {
    let p = planned(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"}),
        &running(1),
    );
    let r = rollback_plan(&p, 2).unwrap();
    assert_eq!(
        r.step_names(),
        ["infra:rollback_scale", "hook:scale_rollback_end"]
    );
    let Some(InfraStep::RollbackScale { restore }) = r.infra_steps().next().cloned() else {
        panic!("rollback_scale")
    };
    assert_eq!(counts(&restore), vc(&[("VDU1", 1), ("VDU2", 1)]));
    assert_eq!(restore.scale_levels["VDU1_scale"], 0);

    let p = planned(
        "scale",
        json!({"type": "SCALE_IN", "aspectId": "VDU1_scale"}),
        &running(2),
    );
    let e = rollback_plan(&p, 1).unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert_eq!(
        e.to_string(),
        "SCALE cannot be rolled back (scale-in removed VNFCs, and their state with them); retry it or mark it FAILED"
    );
}

#[test]
fn rollback_of_scale_to_level_only_when_nothing_was_removed() {
    let up = planned(
        "scale_to_level",
        json!({"instantiationLevelId": "level_2"}),
        &running(1),
    );
    let r = rollback_plan(&up, 0).unwrap();
    assert_eq!(r.step_names(), ["infra:rollback_scale"]);
    let down = planned(
        "scale_to_level",
        json!({"instantiationLevelId": "level_1"}),
        &running(3),
    );
    assert!(matches!(
        rollback_plan(&down, 0),
        Err(LcmError::RollbackNotSupported { .. })
    ));
}

#[test]
fn operations_without_rollback_are_refused_with_a_reason() {
    let cases = [
        (
            planned(
                "terminate",
                json!({"terminationType": "FORCEFUL"}),
                &running(1),
            ),
            "TERMINATE cannot be rolled back (resources of a terminated VNF are gone); retry it or mark it FAILED",
        ),
        (
            planned("heal", json!({}), &running(1)),
            "HEAL cannot be rolled back (healed VNFCs cannot be returned to their failed state); retry it or mark it FAILED",
        ),
        (
            planned("operate", json!({"changeStateTo": "STOPPED"}), &running(1)),
            "OPERATE cannot be rolled back (operate the VNF again to return it to its previous state); retry it or mark it FAILED",
        ),
        (
            planned(
                "change_flavour",
                json!({"newFlavourId": "big"}),
                &running(1),
            ),
            "CHANGE_FLAVOUR cannot be rolled back (resources of the previous flavour are gone); retry it or mark it FAILED",
        ),
    ];
    for (p, msg) in cases {
        let e = rollback_plan(&p, 1).unwrap_err();
        assert_eq!(e.to_string(), msg);
        assert_eq!(e.kind().status(), 409);
    }
}

#[test]
fn rollback_of_modify_info_reverts_only_applied_modifications() {
    let p = planned("modify_info", json!({"vnfInstanceName": "x"}), &running(1));
    assert!(rollback_plan(&p, 1).unwrap().steps.is_empty());
    assert_eq!(
        rollback_plan(&p, 2).unwrap().step_names(),
        ["info:revert_modifications"]
    );
}

#[test]
fn change_ext_conn_and_vnfpkg_roll_back() {
    let p = planned(
        "change_ext_conn",
        json!({"extVirtualLinks": [{"id": "e", "resourceId": "n",
            "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"a": {}}}]}]}),
        &running(1),
    );
    assert_eq!(
        rollback_plan(&p, 1).unwrap().step_names(),
        ["infra:rollback_change_ext_conn"]
    );
    let mut new = vnfd();
    new.descriptor_id = "vnfd-2".into();
    let p = plan(
        &req("change_vnfpkg", json!({"vnfdId": "vnfd-2"})),
        &new,
        &running(1),
    )
    .unwrap();
    let r = rollback_plan(&p, 0).unwrap();
    assert_eq!(
        r.infra_steps().next(),
        Some(&InfraStep::RollbackChangeVnfpkg {
            restore_vnfd_id: VnfdId::new("vnfd-1")
        })
    );
}

#[test]
fn retry_resumes_at_the_failed_step() {
    let p = planned("instantiate", json!({"flavourId": "simple"}), &fresh());
    assert_eq!(remaining(&p, 0), &p.steps[..]);
    assert_eq!(remaining(&p, 1), &p.steps[1..]);
    assert_eq!(remaining(&p, 1)[0].name(), "infra:instantiate");
    assert!(remaining(&p, 3).is_empty());
    assert!(remaining(&p, 99).is_empty());
}

#[test]
fn plans_round_trip_through_json_with_stable_tags() {
    let p = planned(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"}),
        &running(1),
    );
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["steps"][1]["step"], "infra");
    assert_eq!(v["steps"][1]["kind"], "scale");
    assert_eq!(v["steps"][1]["target"]["vduInstances"]["VDU1"], 2);
    assert_eq!(v["steps"][0]["step"], "hook");
    assert_eq!(v["steps"][0]["operation"], "scale_start");
    let back: Plan = serde_json::from_value(v).unwrap();
    assert_eq!(back, p);
    let r = rollback_plan(
        &planned("instantiate", json!({"flavourId": "simple"}), &fresh()),
        1,
    )
    .unwrap();
    let back: Plan = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}

#[test]
fn apply_modifications_merges_and_reports_changed_info() {
    let mut inst = running(1);
    inst.metadata = Some(json!({"keep": 1, "drop": 2}).as_object().unwrap().clone());
    let op = json!({
        "vnfInstanceName": "renamed",
        "metadata": {"drop": null, "add": {"x": 1}},
        "vimConnectionInfo": {"vim1": null, "vim2": {"vimType": "kubernetes"}},
        "vnfcInfoModifications": [{"id": "VDU1-VDU1-res-0", "vnfcConfigurableProperties": {"p": true}}]
    });
    let OperationRequest::ModifyInfo(r) = req("modify_info", op) else {
        panic!("modify_info")
    };
    let (after, changed) = apply_modifications(&inst, &r).unwrap();
    assert_eq!(after.vnf_instance_name.as_deref(), Some("renamed"));
    assert_eq!(
        serde_json::Value::Object(after.metadata.clone().unwrap()),
        json!({"keep": 1, "add": {"x": 1}})
    );
    let vims: Vec<&String> = after.vim_connection_info.as_ref().unwrap().keys().collect();
    assert_eq!(vims, ["vim2"]);
    let vnfc = &after
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_info
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        vnfc.vnfc_configurable_properties.as_ref().unwrap()["p"],
        true
    );
    // changedInfo echoes the modifications (deletions of VIM connections are not listed).
    assert_eq!(changed.vnf_instance_name.as_deref(), Some("renamed"));
    assert_eq!(
        serde_json::Value::Object(changed.metadata.unwrap()),
        json!({"drop": null, "add": {"x": 1}})
    );
    let changed_vims: Vec<&String> = changed
        .vim_connection_info
        .as_ref()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(changed_vims, ["vim2"]);
    // The input instance is untouched.
    assert_eq!(inst.vnf_instance_name, None);
}

#[test]
fn operation_types_and_hook_prefixes() {
    let table = [
        (
            "instantiate",
            json!({"flavourId": "simple"}),
            LcmOperationType::Instantiate,
            "instantiate",
        ),
        (
            "terminate",
            json!({"terminationType": "FORCEFUL"}),
            LcmOperationType::Terminate,
            "terminate",
        ),
        ("heal", json!({}), LcmOperationType::Heal, "heal"),
        (
            "scale",
            json!({"type": "SCALE_IN", "aspectId": "a"}),
            LcmOperationType::Scale,
            "scale",
        ),
        (
            "scale_to_level",
            json!({}),
            LcmOperationType::ScaleToLevel,
            "scale_to_level",
        ),
        (
            "change_flavour",
            json!({"newFlavourId": "x"}),
            LcmOperationType::ChangeFlavour,
            "change_flavour",
        ),
        (
            "operate",
            json!({"changeStateTo": "STARTED"}),
            LcmOperationType::Operate,
            "operate",
        ),
        (
            "change_ext_conn",
            json!({"extVirtualLinks": []}),
            LcmOperationType::ChangeExtConn,
            "change_external_connectivity",
        ),
        (
            "modify_info",
            json!({}),
            LcmOperationType::ModifyInfo,
            "modify_information",
        ),
        (
            "change_vnfpkg",
            json!({"vnfdId": "x"}),
            LcmOperationType::ChangeVnfpkg,
            "change_current_package",
        ),
    ];
    for (op, body, ty, prefix) in table {
        let r = req(op, body);
        assert_eq!(r.operation_type(), ty);
        assert_eq!(r.hook_prefix(), prefix);
        assert_eq!(hook_prefix(ty), Some(prefix));
        let back = OperationRequest::try_from(r.to_params()).unwrap();
        assert_eq!(back, r);
        assert!(r.to_json().is_object());
    }
    let e = OperationRequest::try_from(OperationParams::Other(Default::default())).unwrap_err();
    assert_eq!(
        e.to_string(),
        "CREATE_SNAPSHOT is not supported by this VNFM"
    );
}
