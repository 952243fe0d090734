//! The rollback of a package change against wiremock answering as Heat does: the stack goes
//! back to the templates and `nfv` the instance had, and the instance's resources are read
//! from the stack as it is after that update. Tacker's functional test
//! `test_change_vnfpkg_failed_with_error_coordinate_vnf` changes the package (Heat replaces
//! VDU2's server and volume), a coordination script fails, and the rollback makes Heat
//! replace them again: it expects VDU2's VNFC and storage ids to differ from those before
//! the change, as Tacker records a server and a volume by their own ids.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraDriver, InfraRequest, InfraStep, ResolvedVim, RunControl};
use vnfm_infra_openstack::config::{PollPolicy, RetryPolicy};
use vnfm_infra_openstack::heat::HeatResource;
use vnfm_infra_openstack::inventory::{self, InventoryInputs};
use vnfm_infra_openstack::userdata::UserData;
use vnfm_infra_openstack::{DriverConfig, DriverState, OpenStackDriver};
use vnfm_types::{
    ChangeType, LcmOperationType, OperationParams, VnfInstance, VnfLcmOpOccId, VnfOperationalState,
    VnfdId,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const PROJECT: &str = "33ff53423c3c41f599f33ded3382c600";

const TOP: (&str, &str) = ("vnf-i1", "sid-1");
const GROUP: (&str, &str) = ("vnf-i1-VDU1_scale_group-g", "gs-1");
const M1: (&str, &str) = ("vnf-i1-VDU1_scale_group-g-m1", "ms-1");
const M2: (&str, &str) = ("vnf-i1-VDU1_scale_group-g-m2", "ms-2");

/// The recorded token answer, valid, with the mock's address in its catalog.
fn token_body(uri: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/keystone_token.json")).unwrap();
    let text = text
        .replace("http://127.0.0.1:37817", uri)
        .replace("http://127.0.0.1:50723", uri);
    let mut t: Value = serde_json::from_str(&text).unwrap();
    t["token"]["expires_at"] = json!("2999-01-01T00:00:00.000000Z");
    t
}

/// A Heat resource as `GET .../resources?with_detail=true` lists it, in `stack`, with the
/// nested stack it owns.
fn resource(
    uri: &str,
    name: &str,
    kind: &str,
    physical: &str,
    stack: (&str, &str),
    nested: Option<(&str, &str)>,
) -> Value {
    let heat = format!("{uri}/v1/{PROJECT}");
    let mut links = vec![
        json!({"href": format!("{heat}/stacks/{}/{}/resources/{name}", stack.0, stack.1), "rel": "self"}),
        json!({"href": format!("{heat}/stacks/{}/{}", stack.0, stack.1), "rel": "stack"}),
    ];
    if let Some(n) = nested {
        links.push(json!({"href": format!("{heat}/stacks/{}/{}", n.0, n.1), "rel": "nested"}));
    }
    json!({
        "resource_name": name, "physical_resource_id": physical, "resource_type": kind,
        "resource_status": "UPDATE_COMPLETE", "resource_status_reason": "state changed",
        "required_by": [], "creation_time": "2026-11-28T18:21:41Z", "links": links,
        "attributes": {}
    })
}

/// The stack's resources: two VDU1 members of the autoscaling group, each a server booting
/// from its volume, and VDU2; `m1` is the server and the volume of the first member.
fn resources(uri: &str, m1: (&str, &str)) -> Vec<Value> {
    vec![
        resource(
            uri,
            "VDU1_scale_group",
            "OS::Heat::AutoScalingGroup",
            GROUP.1,
            TOP,
            Some(GROUP),
        ),
        resource(uri, "m1", "VDU1_nested.yaml", M1.1, GROUP, Some(M1)),
        resource(uri, "m2", "VDU1_nested.yaml", M2.1, GROUP, Some(M2)),
        resource(uri, "VDU1", "OS::Nova::Server", m1.0, M1, None),
        resource(
            uri,
            "VDU1-VirtualStorage",
            "OS::Cinder::Volume",
            m1.1,
            M1,
            None,
        ),
        resource(uri, "VDU1", "OS::Nova::Server", "srv-2", M2, None),
        resource(
            uri,
            "VDU1-VirtualStorage",
            "OS::Cinder::Volume",
            "vol-2",
            M2,
            None,
        ),
        resource(uri, "VDU2", "OS::Nova::Server", "srv-3", TOP, None),
    ]
}

fn vim(uri: &str) -> Value {
    json!({
        "vimId": "vim-1", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": format!("{uri}/v3")},
        "accessInfo": {"username": "vnfm", "password": "s3cret-pass-42", "project": "vnfm",
                       "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
    })
}

/// The driver state the instantiation left: the templates and `nfv` to return to.
fn state_before() -> DriverState {
    DriverState {
        stack_id: TOP.1.into(),
        stack_name: TOP.0.into(),
        vim_connection_id: "vim1".into(),
        flavour_id: "simple".into(),
        vnfd_id: "vnfd-heat-test".into(),
        hot_source: "BaseHOT/simple/heat_test.yaml".into(),
        template: json!({"heat_template_version": "2013-05-23",
                         "parameters": {"nfv": {"type": "json"}},
                         "resources": {"VDU2": {"type": "OS::Nova::Server"}}}),
        files: BTreeMap::from([(
            "VDU1_nested.yaml".to_string(),
            support::VDU1_HOT.to_string(),
        )]),
        nfv: json!({"VDU": {"VDU1": {"desired_capacity": 2, "vcImageId": "cirros-0.6"},
                            "VDU2": {"vcImageId": "cirros-0.6"}}}),
        user_data: UserData::Default,
        previous: None,
    }
}

/// The instance as the driver recorded it after instantiating the stack of `resources`
/// (before the package change, which failed, so nothing else was recorded).
fn instance(uri: &str, resources: &[Value], state: &DriverState) -> VnfInstance {
    let vnfd = support::vnfd("vnfd-heat-test");
    let heat: Vec<HeatResource> = serde_json::from_value(json!(resources)).unwrap();
    let recorded = inventory::inventory(
        &heat,
        &InventoryInputs {
            flavour: vnfd.flavour("simple").unwrap(),
            vnfd_id: &VnfdId::new("vnfd-heat-test"),
            vim_connection_id: "vim1",
            ext_virtual_links: &[],
            ext_managed_virtual_links: &[],
            vnfc_states: &BTreeMap::new(),
            default_state: VnfOperationalState::Started,
            nfv: Some(&state.nfv),
            recorded: None,
            vnfc_names: None,
        },
        &DriverConfig::default(),
    );
    let mut info = serde_json::to_value(&recorded).unwrap();
    info["flavourId"] = json!("simple");
    info["vnfState"] = json!("STARTED");
    serde_json::from_value(json!({
        "id": "i1", "vnfdId": "vnfd-heat-test", "vnfProvider": "Acme",
        "vnfProductName": "HeatTest", "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "vimConnectionInfo": {"vim1": vim(uri)},
        "instantiationState": "INSTANTIATED",
        "instantiatedVnfInfo": info,
        "_links": {"self": {"href": "http://vnfm/vnflcm/v2/vnf_instances/i1"}}
    }))
    .unwrap()
}

fn driver() -> OpenStackDriver {
    let _ = rustls::crypto::ring::default_provider().install_default();
    OpenStackDriver::new(DriverConfig {
        retry: RetryPolicy {
            attempts: 2,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
        },
        poll: PollPolicy {
            initial: Duration::from_millis(10),
            factor: 1.5,
            max: Duration::from_millis(40),
        },
        request_timeout: Duration::from_secs(5),
        ..DriverConfig::default()
    })
}

fn stack(status: &str, updated: &str) -> Value {
    json!({"stack": {
        "id": TOP.1, "stack_name": TOP.0, "stack_status": status,
        "stack_status_reason": "Stack UPDATE completed successfully",
        "parameters": {"nfv": "{}"},
        "creation_time": "2026-11-28T18:21:41Z", "updated_time": updated}})
}

/// `(id, changeType)` of the affected entries.
fn changes<T>(
    list: &Option<Vec<T>>,
    of: impl Fn(&T) -> (String, ChangeType),
) -> Vec<(String, ChangeType)> {
    let mut v: Vec<_> = list.iter().flatten().map(of).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[tokio::test]
async fn a_server_and_volume_the_rollback_replaces_are_a_new_vnfc_and_storage() {
    let heat = MockServer::start().await;
    let uri = heat.uri();
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", "tok-1")
                .set_body_json(token_body(&uri)),
        )
        .mount(&heat)
        .await;
    // The package change left the stack UPDATE_COMPLETE on the new templates (the failure
    // came after it, from the coordination script).
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/{}", TOP.0)))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(stack("UPDATE_COMPLETE", "2026-11-28T18:22:31Z")),
        )
        .mount(&heat)
        .await;
    Mock::given(method("PUT"))
        .and(path(format!("/v1/{PROJECT}/stacks/{}/{}", TOP.0, TOP.1)))
        .respond_with(ResponseTemplate::new(202))
        .expect(1)
        .mount(&heat)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/{}/{}", TOP.0, TOP.1)))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(stack("UPDATE_COMPLETE", "2026-11-28T18:22:58Z")),
        )
        .mount(&heat)
        .await;
    // After the rollback Heat holds a new server on a new volume for the first VDU1 member;
    // the others are the ones from before.
    Mock::given(method("GET"))
        .and(path(format!(
            "/v1/{PROJECT}/stacks/{}/{}/resources",
            TOP.0, TOP.1
        )))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"resources": resources(&uri, ("srv-1-rolled-back", "vol-1-rolled-back"))}),
        ))
        .mount(&heat)
        .await;

    let state = state_before();
    let before = resources(&uri, ("srv-1", "vol-1"));
    let instance = instance(&uri, &before, &state);
    let recorded = inventory::recorded(&instance);
    let by_server = |r: &vnfm_driver_api::InstanceResources, server: &str| {
        r.vnfc_resource_info
            .iter()
            .find(|v| v.compute_resource.resource_id == server)
            .cloned()
            .unwrap_or_else(|| panic!("no VNFC on {server}"))
    };
    let old_m1 = by_server(&recorded, "srv-1");
    let request = InfraRequest {
        op_occ_id: VnfLcmOpOccId::new("op-change"),
        operation: LcmOperationType::ChangeVnfpkg,
        step: InfraStep::RollbackChangeVnfpkg {
            restore_vnfd_id: VnfdId::new("vnfd-heat-test"),
        },
        request: OperationParams::ChangeVnfpkg(
            serde_json::from_value(json!({"vnfdId": "vnfd-heat-new"})).unwrap(),
        ),
        instance,
        vnfd: Arc::new(support::vnfd("vnfd-heat-test")),
        flavour_id: "simple".into(),
        vims: vec![ResolvedVim::new(
            "vim1",
            serde_json::from_value(vim(&uri)).unwrap(),
        )],
        artifacts: Arc::new(MemArtifacts::new()),
        driver_state: serde_json::to_value(&state).unwrap(),
        grant: None,
        grant_request: None,
        restored_package: None,
        control: RunControl::with_timeout(Duration::from_secs(30)),
    };
    let out = driver().rollback_change_vnfpkg(&request).await.unwrap();

    // The stack went back to the templates and `nfv` from before the change.
    let put = heat
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.method.as_str() == "PUT")
        .unwrap();
    let body: Value = serde_json::from_slice(&put.body).unwrap();
    assert_eq!(body["template"], state.template);
    assert_eq!(body["parameters"]["nfv"], state.nfv);
    assert_eq!(body["files"]["VDU1_nested.yaml"], support::VDU1_HOT);

    // Read from the stack as it is: the first member's new server and volume are a new VNFC
    // and a new storage (Tacker's ids: the server's and the volume's); the others keep theirs.
    let new_m1 = by_server(&out.resources, "srv-1-rolled-back");
    assert_ne!(new_m1.id, old_m1.id);
    assert_eq!(new_m1.id, "srv-1-rolled-back");
    assert_eq!(
        new_m1.storage_resource_ids.as_deref(),
        Some(&["vol-1-rolled-back".to_string()][..])
    );
    assert_ne!(new_m1.storage_resource_ids, old_m1.storage_resource_ids);
    assert_eq!(
        new_m1
            .vnfc_cp_info
            .iter()
            .flatten()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["VDU1_CP1-srv-1-rolled-back", "VDU1_CP2-srv-1-rolled-back"]
    );
    for server in ["srv-2", "srv-3"] {
        assert_eq!(
            by_server(&out.resources, server).id,
            by_server(&recorded, server).id
        );
    }
    assert_eq!(out.resources.vnfc_info.len(), 3);
    assert!(
        out.resources
            .vnfc_info
            .iter()
            .any(|i| i.id == "VDU1-srv-1-rolled-back"
                && i.vnfc_resource_info_id.as_deref() == Some("srv-1-rolled-back"))
    );
    let old_storage = old_m1.storage_resource_ids.clone().unwrap()[0].clone();
    assert_eq!(
        changes(&out.resource_changes.affected_vnfcs, |a| (
            a.id.clone(),
            a.change_type
        )),
        [
            (old_m1.id.clone(), ChangeType::Removed),
            ("srv-1-rolled-back".to_string(), ChangeType::Added),
        ]
    );
    assert_eq!(
        changes(&out.resource_changes.affected_virtual_storages, |a| (
            a.id.clone(),
            a.change_type
        )),
        [
            (old_storage, ChangeType::Removed),
            ("vol-1-rolled-back".to_string(), ChangeType::Added),
        ]
    );
}
