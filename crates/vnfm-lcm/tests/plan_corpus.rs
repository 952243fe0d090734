//! Plans over real Tacker sample VNFDs (read with `vnfm_tosca::load`): which hooks run in which
//! order, target instance counts for instantiation levels and scale steps, and rollback plans.
//! Each package's plans are pinned in a JSON snapshot; the key facts are also asserted
//! directly.

use crate::plan_support;

use plan_support::*;
use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::InfraStep;
use vnfm_lcm::{Plan, plan, rollback_plan};
use vnfm_types::VnfInstance;

fn plan_ok(op: &str, body: Value, vnfd: &Vnfd, instance: &VnfInstance) -> Plan {
    plan(&req(op, body), vnfd, instance).unwrap_or_else(|e| panic!("{op}: {e}"))
}

/// The instance after the instantiate step of `p` succeeded.
fn after_instantiate(p: &Plan, instance: &VnfInstance) -> VnfInstance {
    match p.infra_steps().next() {
        Some(InfraStep::Instantiate { target }) => instantiated_at(instance, target),
        other => panic!("not an instantiate plan: {other:?}"),
    }
}

fn target_json(step: &InfraStep) -> Value {
    match step {
        InfraStep::Instantiate { target } => json!({"target": target}),
        InfraStep::Scale { from, target, .. } | InfraStep::ScaleToLevel { from, target } => {
            json!({"from": from.vdu_instances, "target": target})
        }
        other => serde_json::to_value(other).unwrap(),
    }
}

fn summary(p: &Plan) -> Value {
    json!({
        "steps": p.step_names(),
        "infra": p.infra_steps().map(target_json).collect::<Vec<_>>(),
    })
}

/// Plans of every operation the planner covers, for `flavour` of `vnfd`, as one JSON value.
fn corpus_plans(vnfd: &Vnfd, flavour: &str) -> Value {
    let fresh = fresh_of(vnfd);
    let f = vnfd.flavour(flavour).expect("flavour");
    let mut out = serde_json::Map::new();

    let inst = plan_ok("instantiate", json!({"flavourId": flavour}), vnfd, &fresh);
    out.insert("instantiate".into(), summary(&inst));
    // The occurrence failed in the infra step: the steps before it completed.
    let infra_at = inst
        .steps
        .iter()
        .position(|s| matches!(s, vnfm_lcm::Step::Infra(_)))
        .expect("an infra step");
    out.insert(
        "rollback_instantiate_after_infra_failure".into(),
        json!(rollback_plan(&inst, infra_at).unwrap().step_names()),
    );
    let running = after_instantiate(&inst, &fresh);

    for level in &f.instantiation_levels {
        let p = plan_ok(
            "instantiate",
            json!({"flavourId": flavour, "instantiationLevelId": level.id}),
            vnfd,
            &fresh,
        );
        out.insert(format!("instantiate_{}", level.id), summary(&p));
    }

    for aspect in &f.scaling_aspects {
        let body = json!({"type": "SCALE_OUT", "aspectId": aspect.id});
        match plan(&req("scale", body), vnfd, &running) {
            Ok(p) => {
                out.insert(format!("scale_out_{}", aspect.id), summary(&p));
                let r = rollback_plan(&p, p.steps.len()).unwrap();
                out.insert(
                    format!("rollback_scale_out_{}", aspect.id),
                    json!(r.step_names()),
                );
                let scaled = match p.infra_steps().next() {
                    Some(InfraStep::Scale { target, .. }) => instantiated_at(&fresh, target),
                    other => panic!("not a scale: {other:?}"),
                };
                let p = plan_ok(
                    "scale",
                    json!({"type": "SCALE_IN", "aspectId": aspect.id}),
                    vnfd,
                    &scaled,
                );
                out.insert(format!("scale_in_{}", aspect.id), summary(&p));
            }
            Err(e) => {
                out.insert(format!("scale_out_{}", aspect.id), json!(e.to_string()));
            }
        }
    }

    let first_vnfc = running
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_info.as_ref())
        .and_then(|v| v.first())
        .map(|v| v.id.clone());
    if let Some(id) = first_vnfc {
        let p = plan_ok("heal", json!({"vnfcInstanceId": [id]}), vnfd, &running);
        out.insert("heal_one_vnfc".into(), summary(&p));
    }
    let p = plan_ok("heal", json!({}), vnfd, &running);
    out.insert("heal_whole_vnf".into(), json!(p.step_names()));
    let p = plan_ok(
        "terminate",
        json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 60}),
        vnfd,
        &running,
    );
    out.insert("terminate".into(), summary(&p));
    let p = plan_ok(
        "modify_info",
        json!({"vnfInstanceName": "x"}),
        vnfd,
        &running,
    );
    out.insert("modify_info".into(), json!(p.step_names()));
    Value::Object(out)
}

fn hooks_and_target(p: &Plan) -> (Vec<String>, Vec<(String, u32)>) {
    let counts = p
        .infra_steps()
        .next()
        .and_then(|s| s.target())
        .map(|t| {
            t.vdu_instances
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        })
        .unwrap_or_default();
    (p.step_names(), counts)
}

fn vc(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vm_server_notification_has_rollback_start_hooks() {
    let vnfd = corpus_vnfd("v2-vm-server-notification");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    assert_eq!(
        hooks_and_target(&inst),
        (
            vec![
                "hook:instantiate_start".to_string(),
                "infra:instantiate".into(),
                "hook:instantiate_end".into()
            ],
            vc(&[("VDU1", 1), ("VDU2", 1)])
        )
    );
    let Some(vnfm_lcm::Step::Hook(h)) = inst.steps.first() else {
        panic!("hook first")
    };
    assert_eq!(h.artifact.name, "sample-script");
    assert_eq!(h.artifact.file, "Scripts/sample_script.py");
    // The package binds *_rollback_start but no *_rollback_end.
    assert_eq!(
        rollback_plan(&inst, 1).unwrap().step_names(),
        [
            "hook:instantiate_rollback_start",
            "infra:rollback_instantiate"
        ]
    );
    let level2 = plan_ok(
        "instantiate",
        json!({"flavourId": "simple", "instantiationLevelId": "instantiation_level_2"}),
        &vnfd,
        &fresh,
    );
    assert_eq!(hooks_and_target(&level2).1, vc(&[("VDU1", 3), ("VDU2", 1)]));

    let running = after_instantiate(&inst, &fresh);
    let out = plan_ok(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}),
        &vnfd,
        &running,
    );
    assert_eq!(hooks_and_target(&out).1, vc(&[("VDU1", 3), ("VDU2", 1)]));
    assert_eq!(
        rollback_plan(&out, 1).unwrap().step_names(),
        ["hook:scale_rollback_start", "infra:rollback_scale"]
    );
    insta::assert_json_snapshot!("v2-vm-server-notification", corpus_plans(&vnfd, "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vm_basic_lcms_max_binds_no_hooks() {
    let vnfd = corpus_vnfd("v2-vm-basic-lcms-max");
    let fresh = fresh_of(&vnfd);
    let p = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    // Its Vnflcm operations are `[]` (no implementation): no hook steps.
    assert_eq!(p.step_names(), ["infra:instantiate"]);
    let p = plan_ok(
        "instantiate",
        json!({"flavourId": "simple", "instantiationLevelId": "instantiation_level_2"}),
        &vnfd,
        &fresh,
    );
    assert_eq!(hooks_and_target(&p).1, vc(&[("VDU1", 3), ("VDU2", 1)]));
    insta::assert_json_snapshot!("v2-vm-basic-lcms-max", corpus_plans(&vnfd, "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vm_userdata_standard_runs_every_start_and_end_hook() {
    let vnfd = corpus_vnfd("v2-vm-userdata-standard");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    let running = after_instantiate(&inst, &fresh);
    let cases = [
        (
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"}),
            vec!["hook:scale_start", "infra:scale", "hook:scale_end"],
        ),
        (
            "heal",
            json!({}),
            vec!["hook:heal_start", "infra:heal", "hook:heal_end"],
        ),
        (
            "terminate",
            json!({"terminationType": "FORCEFUL"}),
            vec![
                "hook:terminate_start",
                "infra:terminate",
                "hook:terminate_end",
            ],
        ),
        (
            "modify_info",
            json!({"vnfInstanceDescription": "d"}),
            vec![
                "hook:modify_information_start",
                "info:apply_modifications",
                "hook:modify_information_end",
            ],
        ),
    ];
    for (op, body, want) in cases {
        assert_eq!(
            plan_ok(op, body, &vnfd, &running).step_names(),
            want,
            "{op}"
        );
    }
    // No rollback hooks are bound.
    assert_eq!(
        rollback_plan(&inst, 1).unwrap().step_names(),
        ["infra:rollback_instantiate"]
    );
    // instantiation_level_2 puts VDU1_scale at level 1: two VDU1 instances.
    let p = plan_ok(
        "instantiate",
        json!({"flavourId": "simple", "instantiationLevelId": "instantiation_level_2"}),
        &vnfd,
        &fresh,
    );
    assert_eq!(hooks_and_target(&p).1, vc(&[("VDU1", 2), ("VDU2", 1)]));
    insta::assert_json_snapshot!("v2-vm-userdata-standard", corpus_plans(&vnfd, "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn mgmt_k8s_cluster_v1_flavours_and_hooks() {
    let vnfd = corpus_vnfd("mgmt-k8s-cluster-v1");
    let fresh = fresh_of(&vnfd);
    let simple = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    assert_eq!(
        hooks_and_target(&simple),
        (
            vec![
                "infra:instantiate".to_string(),
                "hook:instantiate_end".into()
            ],
            vc(&[("masterNode", 1), ("workerNode", 2)])
        )
    );
    let Some(vnfm_lcm::Step::Hook(h)) = simple.steps.last() else {
        panic!("hook last")
    };
    assert_eq!(h.artifact.file, "Definitions/Scripts/kubernetes_mgmt.py");
    let complex = plan_ok(
        "instantiate",
        json!({"flavourId": "complex"}),
        &vnfd,
        &fresh,
    );
    assert_eq!(
        hooks_and_target(&complex).1,
        vc(&[("masterNode", 3), ("workerNode", 2)])
    );
    let running = after_instantiate(&simple, &fresh);
    let p = plan_ok(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "worker_instance"}),
        &vnfd,
        &running,
    );
    assert_eq!(
        hooks_and_target(&p),
        (
            vec![
                "hook:scale_start".to_string(),
                "infra:scale".into(),
                "hook:scale_end".into()
            ],
            vc(&[("masterNode", 1), ("workerNode", 3)])
        )
    );
    let p = plan_ok("heal", json!({}), &vnfd, &running);
    assert_eq!(
        p.step_names(),
        ["hook:heal_start", "infra:heal", "hook:heal_end"]
    );
    insta::assert_json_snapshot!(
        "mgmt-k8s-cluster-v1",
        json!({
            "simple": corpus_plans(&vnfd, "simple"),
            "complex": corpus_plans(&vnfd, "complex"),
            "podaffinity": corpus_plans(&vnfd, "podaffinity"),
        })
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_cnf_instantiate_resources_counts_and_bounds() {
    let vnfd = corpus_vnfd("v2-cnf-instantiate-resources");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    // VDU2's level gives 2 instances (its own VduInstantiationLevels), VDU6 is in no level and
    // keeps min_number_of_instances.
    assert_eq!(
        hooks_and_target(&inst),
        (
            vec![
                "hook:instantiate_start".to_string(),
                "infra:instantiate".into(),
                "hook:instantiate_end".into()
            ],
            vc(&[
                ("VDU1", 1),
                ("VDU2", 2),
                ("VDU3", 1),
                ("VDU5", 1),
                ("VDU6", 1)
            ])
        )
    );
    let running = after_instantiate(&inst, &fresh);
    let p = plan_ok(
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "vdu2_aspect"}),
        &vnfd,
        &running,
    );
    assert_eq!(hooks_and_target(&p).1[1], ("VDU2".to_string(), 3));
    let e = plan(
        &req(
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "vdu2_aspect", "numberOfSteps": 2}),
        ),
        &vnfd,
        &running,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scaling aspect `vdu2_aspect` from level 1 to level 3 is out of bounds: levels 0..=2 are allowed"
    );
    let p = plan_ok(
        "scale_to_level",
        json!({"instantiationLevelId": "instantiation_level_2"}),
        &vnfd,
        &running,
    );
    assert_eq!(
        hooks_and_target(&p).1,
        vc(&[
            ("VDU1", 1),
            ("VDU2", 3),
            ("VDU3", 3),
            ("VDU5", 3),
            ("VDU6", 1)
        ])
    );
    insta::assert_json_snapshot!(
        "v2-cnf-instantiate-resources",
        corpus_plans(&vnfd, "simple")
    );
}

fn api_ref(name: &str) -> Value {
    let path = corpus_dir("api-ref-samples/v2/vnflcm").join(name);
    serde_json::from_slice(&std::fs::read(path).expect("api-ref sample")).expect("JSON")
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_api_reference_requests_plan_on_userdata_standard() {
    let vnfd = corpus_vnfd("v2-vm-userdata-standard");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok(
        "instantiate",
        api_ref("instantiate-vnf-instance-request.json"),
        &vnfd,
        &fresh,
    );
    assert_eq!(hooks_and_target(&inst).1, vc(&[("VDU1", 1), ("VDU2", 1)]));
    let running = after_instantiate(&inst, &fresh);
    let scale = plan_ok(
        "scale",
        api_ref("scale-vnf-instance-request.json"),
        &vnfd,
        &running,
    );
    assert_eq!(hooks_and_target(&scale).1, vc(&[("VDU1", 2), ("VDU2", 1)]));
    let term = plan_ok(
        "terminate",
        api_ref("terminate-vnf-instance-request.json"),
        &vnfd,
        &running,
    );
    assert_eq!(
        term.infra_steps().next(),
        Some(&InfraStep::Terminate {
            termination_type: vnfm_types::TerminationType::Graceful,
            graceful_timeout_seconds: Some(10)
        })
    );
    // The update (MODIFY_INFO) sample names a VNFC of another instance.
    let e = plan(
        &req("modify_info", api_ref("update-vnf-instance-request.json")),
        &vnfd,
        &running,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "/vnfcInfoModifications/0/id: instance has no VNFC `VDU1-07dfd58c-b147-4d4f-8cd6-d55f41280bb9`"
        ),
        "{e}"
    );
    // The heal sample names a VNFC this instance does not have.
    let e = plan(
        &req("heal", api_ref("heal-vnf-instance-request.json")),
        &vnfd,
        &running,
    )
    .unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert!(
        e.to_string().starts_with(
            "/vnfcInstanceId/0: instance has no VNFC `c51c98dc-b918-4681-a9eb-4f32a57c4e08`"
        ),
        "{e}"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn api_reference_samples_on_basic_lcms_max() {
    // The change_ext_conn sample is written for basic_lcms_max (VDU2_CP1-1)...
    let vnfd = corpus_vnfd("v2-vm-basic-lcms-max");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    let running = after_instantiate(&inst, &fresh);
    let p = plan_ok(
        "change_ext_conn",
        api_ref("change-ext-conn-request.json"),
        &vnfd,
        &running,
    );
    assert_eq!(p.step_names(), ["infra:change_ext_conn"]);
    // ...but the instantiate sample is not: basic_lcms_max splits VDU2_CP1 into VDU2_CP1-1 and
    // VDU2_CP1-2.
    let e = plan(
        &req(
            "instantiate",
            api_ref("instantiate-vnf-instance-request.json"),
        ),
        &vnfd,
        &fresh_of(&vnfd),
    )
    .unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert!(
        e.to_string().starts_with(
            "/extVirtualLinks/0/extCps/1/cpdId: flavour `simple` has no external connection point `VDU2_CP1`"
        ),
        "{e}"
    );
}

/// Regression (issue 25, item 11): a refused change_ext_conn listed every VDU CP as a "known
/// connection point", internal ones (v2-vm-userdata-standard's `VDU1_CP2`, on internalVL1)
/// among the external. The listing now names the external CPs of SOL001 (those the
/// substitution mapping exposes) and, apart, the VDU CPs accepted as Tacker accepts them; the
/// acceptance is unchanged, since Tacker's reference instantiate request connects `VDU1_CP2`.
#[vnfm_test_env::needs(corpus)]
#[test]
fn change_ext_conn_lists_an_internal_cp_as_external() {
    let vnfd = corpus_vnfd("v2-vm-userdata-standard");
    let fresh = fresh_of(&vnfd);
    let inst = plan_ok("instantiate", json!({"flavourId": "simple"}), &vnfd, &fresh);
    let running = after_instantiate(&inst, &fresh);
    let e = plan(
        &req(
            "change_ext_conn",
            json!({"extVirtualLinks": [{"id": "ext1", "resourceId": "net1",
                "extCps": [{"cpdId": "NOPE_CP", "cpConfig": {"c": {}}}]}]}),
        ),
        &vnfd,
        &running,
    )
    .unwrap_err();
    let msg = e.to_string();
    let (external, tolerated) = msg
        .split_once(" (a request may also name")
        .unwrap_or_else(|| panic!("{msg}"));
    assert!(
        external.ends_with("; known external connection points: VDU1_CP1, VDU2_CP1"),
        "{msg}"
    );
    assert!(tolerated.contains("VDU1_CP2"), "{msg}");
    plan_ok(
        "change_ext_conn",
        json!({"extVirtualLinks": [{"id": "ext1", "resourceId": "net1",
            "extCps": [{"cpdId": "VDU1_CP2", "cpConfig": {"c": {}}}]}]}),
        &vnfd,
        &running,
    );
}
