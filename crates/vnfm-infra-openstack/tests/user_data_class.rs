//! A package's own user data class (Tacker's `lcm-operation-user-data` naming a class other
//! than `DefaultUserData` / `StandardUserData`), run through a `UserDataScripts` the test
//! fakes, with Keystone and Heat answered by wiremock (the shapes of the other mock tests):
//! the stack is created from what the class's `instantiate` returns; a scale naming the class
//! updates the stack with the `nfv` its `scale` returns merged over the stack's; a scale
//! naming none runs no class (Tacker reads the class from the request alone); the rollback
//! of a package change runs the class's `change_vnfpkg_rollback` with the restored package.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{
    DriverError, InfraDriver, InfraRequest, InfraStep, ResolvedVim, ResourceTarget, RunControl,
    UserDataCall, UserDataScripts,
};
use vnfm_infra_openstack::config::{PollPolicy, RetryPolicy};
use vnfm_infra_openstack::{DriverConfig, DriverState, OpenStackDriver};
use vnfm_types::{LcmOperationType, OperationParams, VnfInstance, VnfLcmOpOccId};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const PROJECT: &str = "33ff53423c3c41f599f33ded3382c600";

const TEMPLATE: &str = "heat_template_version: 2013-05-23
parameters:
  nfv: {type: json}
resources:
  VDU1_scale_group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 3
      desired_capacity: {get_param: [nfv, VDU, VDU1, desired_capacity]}
      resource: {type: VDU1.yaml}
";

/// The class: `instantiate` answers a template, a file and `nfv`; `scale` a patch of `nfv`.
struct Class {
    calls: Mutex<Vec<UserDataCall>>,
}

#[async_trait]
impl UserDataScripts for Class {
    async fn run(&self, call: &UserDataCall) -> Result<Value, DriverError> {
        self.calls.lock().unwrap().push(call.clone());
        Ok(match call.method.as_str() {
            "instantiate" => json!({
                "template": TEMPLATE,
                "files": {"VDU1.yaml": "heat_template_version: 2013-05-23\n"},
                "parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 2,
                                                        "computeFlavourId": "m1.tiny"}}}}
            }),
            "scale" => json!({"parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 3}}}}}),
            "change_vnfpkg_rollback" => json!({
                "template": TEMPLATE,
                "parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 3}}}}
            }),
            other => return Err(DriverError::permanent(format!("no method {other}"))),
        })
    }
}

fn token_body(uri: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/keystone_token.json")).unwrap();
    let text = text
        .replace("http://127.0.0.1:37817", uri)
        .replace("http://127.0.0.1:50723", uri);
    let mut t: Value = serde_json::from_str(&text).unwrap();
    t["token"]["expires_at"] = json!("2999-01-01T00:00:00.000000Z");
    t
}

async fn cloud() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", "tok-1")
                .set_body_json(token_body(&server.uri())),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1/resources")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"resources": []})))
        .mount(&server)
        .await;
    server
}

fn stack(status: &str, nfv: &Value) -> Value {
    json!({"stack": {"id": "sid-1", "stack_name": "vnf-i1", "stack_status": status,
        "stack_status_reason": "", "parameters": {"nfv": nfv.to_string()},
        "creation_time": "2026-11-21T09:39:50Z", "updated_time": null}})
}

fn driver(class: Arc<Class>) -> OpenStackDriver {
    support::init();
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
    .with_user_data_scripts(class)
}

fn vim(uri: &str) -> Value {
    json!({
        "vimId": "vim-1", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": format!("{uri}/v3")},
        "accessInfo": {"username": "vnfm", "password": "s3cret-pass-42", "project": "vnfm",
                       "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
    })
}

fn instance(uri: &str, instantiated: bool) -> VnfInstance {
    let mut i = json!({
        "id": "i1", "vnfdId": "vnfd-heat-test", "vnfProvider": "Acme",
        "vnfProductName": "HeatTest", "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "vimConnectionInfo": {"vim1": vim(uri)},
        "instantiationState": "NOT_INSTANTIATED",
        "_links": {"self": {"href": "http://vnfm/vnflcm/v2/vnf_instances/i1"}}
    });
    if instantiated {
        i["instantiationState"] = json!("INSTANTIATED");
        i["instantiatedVnfInfo"] = json!({"flavourId": "simple", "vnfState": "STARTED"});
    }
    serde_json::from_value(i).unwrap()
}

fn additional(class: bool) -> Value {
    if class {
        json!({"lcm-operation-user-data": "./UserData/userdata.py",
               "lcm-operation-user-data-class": "UserData"})
    } else {
        json!({})
    }
}

fn request(uri: &str, step: InfraStep, params: OperationParams, state: Value) -> InfraRequest {
    let (operation, instantiated) = match &step {
        InfraStep::Instantiate { .. } => (LcmOperationType::Instantiate, false),
        _ => (LcmOperationType::Scale, true),
    };
    InfraRequest {
        op_occ_id: VnfLcmOpOccId::new("op-1"),
        operation,
        step,
        request: params,
        instance: instance(uri, instantiated),
        vnfd: Arc::new(support::vnfd("vnfd-heat-test")),
        flavour_id: "simple".into(),
        vims: vec![ResolvedVim::new(
            "vim1",
            serde_json::from_value(vim(uri)).unwrap(),
        )],
        artifacts: Arc::new(MemArtifacts::new()),
        driver_state: state,
        grant: None,
        grant_request: None,
        restored_package: None,
        control: RunControl::with_timeout(Duration::from_secs(30)),
    }
}

fn scale(uri: &str, class: bool, state: Value) -> InfraRequest {
    let target = ResourceTarget {
        flavour_id: "simple".into(),
        ..ResourceTarget::default()
    };
    let body = serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale",
                                             "additionalParams": additional(class)}))
    .unwrap();
    request(
        uri,
        InfraStep::Scale {
            aspect_id: "VDU1_scale".into(),
            scale_type: vnfm_types::ScaleType::ScaleOut,
            steps: 1,
            from: target.clone(),
            target,
        },
        OperationParams::Scale(body),
        state,
    )
}

fn bodies(requests: &[Request], verb: &str) -> Vec<Value> {
    requests
        .iter()
        .filter(|r| r.method.as_str() == verb && r.url.path().contains("/stacks"))
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn a_class_of_the_package_builds_the_stack_and_its_scale_patch_merges_over_its_nfv() {
    let class = Arc::new(Class {
        calls: Mutex::new(Vec::new()),
    });
    let driver = driver(class.clone());

    // Instantiate: no stack yet; created from the class's fields.
    let server = cloud().await;
    let uri = server.uri();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1")))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/{PROJECT}/stacks")))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"stack": {"id": "sid-1"}})))
        .mount(&server)
        .await;
    let created_nfv =
        json!({"VDU": {"VDU1": {"desired_capacity": 2, "computeFlavourId": "m1.tiny"}}});
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(stack("CREATE_COMPLETE", &created_nfv)),
        )
        .mount(&server)
        .await;
    let body = serde_json::from_value(
        json!({"flavourId": "simple", "additionalParams": additional(true)}),
    )
    .unwrap();
    let params = OperationParams::Instantiate(body);
    let step = InfraStep::Instantiate {
        target: ResourceTarget {
            flavour_id: "simple".into(),
            vdu_instances: [("VDU1".to_string(), 2), ("VDU2".to_string(), 1)].into(),
            ..ResourceTarget::default()
        },
    };
    driver
        .check_request(&step, &params)
        .expect("a class runs when the driver has a runner");
    let out = driver
        .instantiate(&request(&uri, step, params, Value::Null))
        .await
        .unwrap();
    let call = class.calls.lock().unwrap().pop().unwrap();
    assert_eq!(call.method, "instantiate");
    assert_eq!(
        (call.file.as_str(), call.class.as_str()),
        ("./UserData/userdata.py", "UserData")
    );
    assert_eq!(call.request["flavourId"], "simple");
    let created = bodies(&server.received_requests().await.unwrap(), "POST");
    assert_eq!(created.len(), 1, "{created:?}");
    let c = &created[0];
    assert_eq!(c["stack_name"], "vnf-i1");
    assert_eq!(
        c["template"]["resources"]["VDU1_scale_group"]["properties"]["resource"],
        json!({"type": "VDU1.yaml"})
    );
    assert_eq!(
        c["files"]["VDU1.yaml"],
        "heat_template_version: 2013-05-23\n"
    );
    assert_eq!(c["parameters"]["nfv"], created_nfv);
    let state: DriverState = serde_json::from_value(out.driver_state.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&state.user_data).unwrap(),
        json!({"script": {"file": "./UserData/userdata.py", "class": "UserData"}})
    );
    assert_eq!(state.nfv, created_nfv);
    assert_eq!(
        state.template["resources"]["VDU1_scale_group"]["type"],
        "OS::Heat::AutoScalingGroup"
    );

    // Scale naming the class: its `scale`, merged over the stack's `nfv`, PATCHed.
    let server = cloud().await;
    let uri = server.uri();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(stack("CREATE_COMPLETE", &created_nfv)),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1/template")))
        .respond_with(ResponseTemplate::new(200).set_body_json(state.template.clone()))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1")))
        .respond_with(ResponseTemplate::new(202))
        .mount(&server)
        .await;
    let scaled_nfv =
        json!({"VDU": {"VDU1": {"desired_capacity": 3, "computeFlavourId": "m1.tiny"}}});
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(stack("UPDATE_COMPLETE", &scaled_nfv)),
        )
        .mount(&server)
        .await;
    let out = driver
        .scale(&scale(&uri, true, out.driver_state.clone()))
        .await
        .unwrap();
    assert_eq!(class.calls.lock().unwrap().pop().unwrap().method, "scale");
    let patched = bodies(&server.received_requests().await.unwrap(), "PATCH");
    assert_eq!(patched.len(), 1, "{patched:?}");
    assert_eq!(patched[0]["parameters"]["nfv"], scaled_nfv);
    assert!(
        patched[0].get("template").is_none(),
        "the stack keeps its template"
    );
    let state: DriverState = serde_json::from_value(out.driver_state.clone()).unwrap();
    assert_eq!(state.nfv, scaled_nfv);

    // A scale naming no class runs none: Tacker's DefaultUserData (the driver's own).
    let server = cloud().await;
    let uri = server.uri();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(stack("UPDATE_COMPLETE", &scaled_nfv)),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1/template")))
        .respond_with(ResponseTemplate::new(200).set_body_json(state.template.clone()))
        .mount(&server)
        .await;
    driver
        .scale(&scale(&uri, false, out.driver_state.clone()))
        .await
        .unwrap();
    assert!(class.calls.lock().unwrap().is_empty(), "no class was run");

    // The rollback of a package change naming the class: its `change_vnfpkg_rollback` gets
    // the package restored (as Tacker's conductor gives it the instance's own VNFD), not the
    // one the change was to, whose files would rebuild the new stack.
    let server = cloud().await;
    let uri = server.uri();
    for (verb, route, answer) in [
        (
            "GET",
            "/stacks/vnf-i1",
            ResponseTemplate::new(200).set_body_json(stack("UPDATE_COMPLETE", &scaled_nfv)),
        ),
        (
            "GET",
            "/stacks/vnf-i1/sid-1/template",
            ResponseTemplate::new(200).set_body_json(state.template.clone()),
        ),
        (
            "GET",
            "/stacks/vnf-i1/sid-1/files",
            ResponseTemplate::new(200).set_body_json(json!({})),
        ),
        ("PATCH", "/stacks/vnf-i1/sid-1", ResponseTemplate::new(202)),
        ("PUT", "/stacks/vnf-i1/sid-1", ResponseTemplate::new(202)),
        (
            "GET",
            "/stacks/vnf-i1/sid-1",
            ResponseTemplate::new(200).set_body_json(stack("UPDATE_COMPLETE", &scaled_nfv)),
        ),
    ] {
        Mock::given(method(verb))
            .and(path(format!("/v1/{PROJECT}{route}")))
            .respond_with(answer)
            .mount(&server)
            .await;
    }
    let body = serde_json::from_value(
        json!({"vnfdId": "vnfd-heat-test", "additionalParams": additional(true)}),
    )
    .unwrap();
    let mut rollback = request(
        &uri,
        InfraStep::RollbackChangeVnfpkg {
            restore_vnfd_id: vnfm_types::VnfdId::new("vnfd-old"),
        },
        OperationParams::ChangeVnfpkg(body),
        out.driver_state,
    );
    rollback.operation = LcmOperationType::ChangeVnfpkg;
    rollback.restored_package = Some(vnfm_driver_api::TargetPackage {
        vnfd: Arc::new(support::vnfd("vnfd-old")),
        files: Arc::new(
            MemArtifacts::new().with("UserData/userdata.py", "# the old package's class"),
        ),
    });
    driver.rollback_change_vnfpkg(&rollback).await.unwrap();
    let call = class.calls.lock().unwrap().pop().expect("the class ran");
    assert_eq!(call.method, "change_vnfpkg_rollback");
    assert_eq!(call.vnfd.descriptor_id.as_str(), "vnfd-old");
    assert_eq!(
        call.artifacts.read("UserData/userdata.py").unwrap(),
        b"# the old package's class"
    );
}

/// Without a runner, a request naming a class of the package is refused with a message
/// saying how to run it.
#[test]
fn without_a_runner_a_class_is_refused_saying_how_to_enable_it() {
    let driver = OpenStackDriver::new(DriverConfig::default());
    let body = serde_json::from_value(
        json!({"flavourId": "simple", "additionalParams": additional(true)}),
    )
    .unwrap();
    let e = driver
        .check_request(
            &InfraStep::Instantiate {
                target: ResourceTarget::default(),
            },
            &OperationParams::Instantiate(body),
        )
        .unwrap_err();
    assert_eq!(e.status(), 422, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("`UserData`") && text.contains("--python"),
        "{text}"
    );
}
