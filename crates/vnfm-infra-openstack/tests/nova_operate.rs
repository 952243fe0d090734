//! The operate step (start / stop) and the observation of server statuses through Nova,
//! against wiremock answering with the compute API 2.1 shapes (`GET /servers/{id}` as in Nova's API samples with the extended status
//! attributes, `202` with an empty body for an accepted action, `409 conflictingRequest` for
//! a server busy with a task or in the wrong state), with the token, catalog and Heat stack
//! answers of the other mock tests. No Nova runs on these machines.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{
    InfraDriver, InfraOutcome, InfraRequest, InfraStep, ResolvedVim, RunControl,
};
use vnfm_infra_openstack::config::{PollPolicy, RetryPolicy};
use vnfm_infra_openstack::inventory::derived_id;
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};
use vnfm_types::{
    ChangeType, LcmOperationType, OperationParams, VnfInstance, VnfLcmOpOccId, VnfOperationalState,
};
use wiremock::matchers::{body_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const PROJECT: &str = "33ff53423c3c41f599f33ded3382c600";

/// Server ids: two VDU1 members and VDU2.
const S1: &str = "0e44cc9c-e052-415d-afbf-469b0d384170";
const S2: &str = "5c1d3f2e-8b0a-4d6e-9f13-2a7b6c4d8e01";
const S3: &str = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

fn fixture(name: &str, uri: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture");
    let text = text
        .replace("http://127.0.0.1:37817", uri)
        .replace("http://127.0.0.1:50723", uri);
    serde_json::from_str(&text).expect("fixture JSON")
}

/// The recorded token answer with a compute endpoint added to its catalog.
fn token_body(uri: &str) -> Value {
    let mut t = fixture("keystone_token.json", uri);
    t["token"]["expires_at"] = json!("2999-01-01T00:00:00.000000Z");
    t["token"]["catalog"].as_array_mut().unwrap().push(
        json!({"type": "compute", "name": "nova", "id": "c1", "endpoints": [
            {"id": "c1p", "interface": "public", "region": "RegionOne", "region_id": "RegionOne",
             "url": format!("{uri}/compute/v2.1")}]}),
    );
    t
}

/// A server as `GET /servers/{id}` answers.
fn server(uri: &str, id: &str, status: &str, task: Option<&str>) -> Value {
    let mut s = fixture("nova_server.json", uri);
    s["server"]["id"] = json!(id);
    s["server"]["status"] = json!(status);
    s["server"]["OS-EXT-STS:task_state"] = json!(task);
    let (vm, power) = match status {
        "SHUTOFF" => ("stopped", 4),
        "PAUSED" => ("paused", 3),
        "ERROR" => ("error", 0),
        _ => ("active", 1),
    };
    s["server"]["OS-EXT-STS:vm_state"] = json!(vm);
    s["server"]["OS-EXT-STS:power_state"] = json!(power);
    s
}

fn conflict(id: &str, action: &str, attr: &str, state: &str) -> ResponseTemplate {
    ResponseTemplate::new(409).set_body_json(json!({"conflictingRequest": {"code": 409,
        "message": format!("Cannot '{action}' instance {id} while it is in {attr} {state}")}}))
}

fn server_path(id: &str) -> String {
    format!("/compute/v2.1/servers/{id}")
}

fn action_path(id: &str) -> String {
    format!("/compute/v2.1/servers/{id}/action")
}

/// Nova answers every `GET` of server `id` with `answer`.
async fn serve_server(nova: &MockServer, id: &str, answer: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(server_path(id)))
        .respond_with(answer)
        .mount(nova)
        .await;
}

/// Nova answers the actions posted to server `id` with `answer`, and expects `times` of them.
async fn serve_action(nova: &MockServer, id: &str, answer: ResponseTemplate, times: u64) {
    Mock::given(method("POST"))
        .and(path(action_path(id)))
        .respond_with(answer)
        .expect(times)
        .mount(nova)
        .await;
}

/// A Heat resource as `GET .../resources?with_detail=true` lists it.
fn resource(uri: &str, name: &str, kind: &str, physical: &str, stack: (&str, &str)) -> Value {
    let heat = format!("{uri}/v1/{PROJECT}");
    json!({
        "resource_name": name, "physical_resource_id": physical, "resource_type": kind,
        "resource_status": "CREATE_COMPLETE", "resource_status_reason": "state changed",
        "required_by": [], "creation_time": "2026-11-21T09:39:58Z", "updated_time": null,
        "links": [
            {"href": format!("{heat}/stacks/{}/{}/resources/{name}", stack.0, stack.1), "rel": "self"},
            {"href": format!("{heat}/stacks/{}/{}", stack.0, stack.1), "rel": "stack"}
        ],
        "attributes": {}
    })
}

const TOP: (&str, &str) = ("vnf-i1", "sid-1");
const M1: (&str, &str) = ("vnf-i1-VDU1_group-m1", "ms-1");
const M2: (&str, &str) = ("vnf-i1-VDU1_group-m2", "ms-2");

/// The VNFC ids recorded for the three servers by an earlier version of the driver (derived
/// from the stack and the server's name): the inventory keeps them while the servers are the
/// same.
fn vnfc_ids() -> [String; 3] {
    [
        derived_id(&[M1.1, "VDU1"]),
        derived_id(&[M2.1, "VDU1"]),
        derived_id(&[TOP.1, "VDU2"]),
    ]
}

/// Mounts the token, the stack `vnf-i1` and its resources (`servers` = with the three
/// servers, else none).
async fn mount_cloud(server: &MockServer, servers: bool) {
    mount_token(server, token_body(&server.uri())).await;
    mount_stack(server, servers).await;
}

/// Mounts the token answer `body`.
async fn mount_token(server: &MockServer, body: Value) {
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", "tok-1")
                .set_body_json(body),
        )
        .mount(server)
        .await;
}

/// Mounts the stack `vnf-i1` and its resources (`servers` = with the three servers, else
/// none).
async fn mount_stack(server: &MockServer, servers: bool) {
    let uri = server.uri();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"stack": {
            "id": "sid-1", "stack_name": "vnf-i1", "stack_status": "CREATE_COMPLETE",
            "stack_status_reason": "Stack CREATE completed successfully",
            "parameters": {"nfv": "{\"VDU\": {\"VDU1\": {\"desired_capacity\": 2}}}"},
            "creation_time": "2026-11-21T09:39:50Z", "updated_time": null}})))
        .mount(server)
        .await;
    let resources = if servers {
        json!([
            resource(&uri, "VDU1", "OS::Nova::Server", S1, M1),
            resource(&uri, "VDU1", "OS::Nova::Server", S2, M2),
            resource(&uri, "VDU2", "OS::Nova::Server", S3, TOP),
        ])
    } else {
        json!([resource(
            &uri,
            "internalVL1",
            "OS::Neutron::Net",
            "net-1",
            TOP
        )])
    };
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-i1/sid-1/resources")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "resources": resources })))
        .mount(server)
        .await;
}

fn vim(uri: &str) -> Value {
    json!({
        "vimId": "vim-1", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": format!("{uri}/v3")},
        "accessInfo": {"username": "vnfm", "password": "s3cret-pass-42", "project": "vnfm",
                       "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
    })
}

/// The instance as recorded: three VNFCs in `state`.
fn instance(uri: &str, state: &str) -> VnfInstance {
    let [a, b, c] = vnfc_ids();
    let vnfc = |id: &str, vdu: &str, server: &str| {
        json!({"id": id, "vduId": vdu, "computeResource": {"resourceId": server,
               "vimConnectionId": "vim1", "vimLevelResourceType": "OS::Nova::Server"}})
    };
    let info = |id: &str, vdu: &str| {
        json!({"id": format!("{vdu}-{id}"), "vduId": vdu, "vnfcResourceInfoId": id,
               "vnfcState": state})
    };
    serde_json::from_value(json!({
        "id": "i1", "vnfdId": "vnfd-heat-test", "vnfProvider": "Acme",
        "vnfProductName": "HeatTest", "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "vimConnectionInfo": {"vim1": vim(uri)},
        "instantiationState": "INSTANTIATED",
        "instantiatedVnfInfo": {
            "flavourId": "simple", "vnfState": state,
            "vnfcResourceInfo": [vnfc(&a, "VDU1", S1), vnfc(&b, "VDU1", S2), vnfc(&c, "VDU2", S3)],
            "vnfcInfo": [info(&a, "VDU1"), info(&b, "VDU1"), info(&c, "VDU2")]
        },
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

/// An operate request for the instance.
fn request(uri: &str, recorded: &str, body: Value, control: RunControl) -> InfraRequest {
    let r: vnfm_types::OperateVnfRequest = serde_json::from_value(body).unwrap();
    let step = InfraStep::Operate {
        change_state_to: r.change_state_to,
        stop_type: r.stop_type,
        graceful_stop_timeout_seconds: r.graceful_stop_timeout,
        vnfc_resource_ids: r
            .vnfc_instance_id
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|i| i.split_once('-').map(|(_, id)| id.to_string()).unwrap())
            .collect(),
    };
    InfraRequest {
        op_occ_id: VnfLcmOpOccId::new("op-1"),
        operation: LcmOperationType::Operate,
        step,
        request: OperationParams::Operate(r),
        instance: instance(uri, recorded),
        vnfd: Arc::new(support::vnfd("vnfd-heat-test")),
        flavour_id: "simple".into(),
        vims: vec![ResolvedVim::new(
            "vim1",
            serde_json::from_value(vim(uri)).unwrap(),
        )],
        artifacts: Arc::new(MemArtifacts::new()),
        driver_state: Value::Null,
        grant: None,
        grant_request: None,
        restored_package: None,
        control,
    }
}

fn control() -> RunControl {
    RunControl::with_timeout(Duration::from_secs(30))
}

fn states(out: &InfraOutcome) -> Vec<(String, VnfOperationalState)> {
    out.resources
        .vnfc_info
        .iter()
        .map(|v| (v.vnfc_resource_info_id.clone().unwrap(), v.vnfc_state))
        .collect()
}

fn modified(out: &InfraOutcome) -> Vec<String> {
    out.resource_changes
        .affected_vnfcs
        .iter()
        .flatten()
        .filter(|a| a.change_type == ChangeType::Modified)
        .map(|a| a.id.clone())
        .collect()
}

#[tokio::test]
async fn stopping_the_vnf_stops_every_server_retrying_while_nova_is_busy() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    // S1: running; stopped after the action.
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S1, "ACTIVE", None)))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(
            &uri,
            S1,
            "ACTIVE",
            Some("powering-off"),
        )))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    serve_server(
        &nova,
        S1,
        ResponseTemplate::new(200).set_body_json(server(&uri, S1, "SHUTOFF", None)),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(action_path(S1)))
        .and(body_json(json!({"os-stop": null})))
        .respond_with(ResponseTemplate::new(202))
        .expect(1)
        .mount(&nova)
        .await;
    // S2: already stopped (a retried step): no action.
    serve_server(
        &nova,
        S2,
        ResponseTemplate::new(200).set_body_json(server(&uri, S2, "SHUTOFF", None)),
    )
    .await;
    serve_action(&nova, S2, ResponseTemplate::new(202), 0).await;
    // S3: takes up a reboot just as the stop arrives: 409, then the stop once it is over.
    for (status, task) in [("ACTIVE", None), ("ACTIVE", Some("rebooting"))] {
        Mock::given(method("GET"))
            .and(path(server_path(S3)))
            .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S3, status, task)))
            .up_to_n_times(1)
            .mount(&nova)
            .await;
    }
    Mock::given(method("GET"))
        .and(path(server_path(S3)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S3, "ACTIVE", None)))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    serve_server(
        &nova,
        S3,
        ResponseTemplate::new(200).set_body_json(server(&uri, S3, "SHUTOFF", None)),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(action_path(S3)))
        .respond_with(conflict(S3, "stop", "task_state", "rebooting"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&nova)
        .await;
    Mock::given(method("POST"))
        .and(path(action_path(S3)))
        .and(body_json(json!({"os-stop": null})))
        .respond_with(ResponseTemplate::new(202))
        .expect(1)
        .mount(&nova)
        .await;

    let req = request(
        &uri,
        "STARTED",
        json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL"}),
        control(),
    );
    let out = driver().operate(&req).await.unwrap();
    assert_eq!(out.vnf_state, Some(VnfOperationalState::Stopped));
    let ids = vnfc_ids();
    let mut got = states(&out);
    got.sort_by(|x, y| x.0.cmp(&y.0));
    let mut want: Vec<(String, VnfOperationalState)> = ids
        .iter()
        .map(|id| (id.clone(), VnfOperationalState::Stopped))
        .collect();
    want.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(got, want);
    let mut m = modified(&out);
    m.sort();
    let mut all = ids.to_vec();
    all.sort();
    assert_eq!(m, all);
    // The step changed no resource: same servers as recorded.
    assert_eq!(
        out.resources
            .vnfc_resource_info
            .iter()
            .map(|v| v.compute_resource.resource_id.as_str())
            .collect::<Vec<_>>(),
        vec![S1, S2, S3]
    );
    assert_eq!(out.driver_state["stackId"], "sid-1");
}

#[tokio::test]
async fn starting_named_vnfcs_starts_only_their_servers() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    Mock::given(method("GET"))
        .and(path(server_path(S2)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S2, "SHUTOFF", None)))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    serve_server(
        &nova,
        S2,
        ResponseTemplate::new(200).set_body_json(server(&uri, S2, "ACTIVE", None)),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(action_path(S2)))
        .and(body_json(json!({"os-start": null})))
        .respond_with(ResponseTemplate::new(202))
        .expect(1)
        .mount(&nova)
        .await;
    for other in [S1, S3] {
        Mock::given(method("GET"))
            .and(path(server_path(other)))
            .respond_with(ResponseTemplate::new(500))
            .expect(0)
            .mount(&nova)
            .await;
    }
    let [a, b, c] = vnfc_ids();
    let req = request(
        &uri,
        "STOPPED",
        json!({"changeStateTo": "STARTED", "vnfcInstanceId": [format!("VDU1-{b}")]}),
        control(),
    );
    let out = driver().operate(&req).await.unwrap();
    // Per-VNFC: the VNF's own state is left as it is.
    assert_eq!(out.vnf_state, None);
    let got = states(&out);
    assert!(
        got.contains(&(b.clone(), VnfOperationalState::Started)),
        "{got:?}"
    );
    assert!(got.contains(&(a, VnfOperationalState::Stopped)), "{got:?}");
    assert!(got.contains(&(c, VnfOperationalState::Stopped)), "{got:?}");
    assert_eq!(modified(&out), vec![b]);

    // A VNFC the stack does not have is an input error, before any Nova call.
    let req = request(
        &uri,
        "STOPPED",
        json!({"changeStateTo": "STARTED", "vnfcInstanceId": ["VDU1-no-such-vnfc"]}),
        control(),
    );
    let e = driver().operate(&req).await.unwrap_err();
    assert_eq!(e.kind(), "invalidInput", "{e}");
    assert!(
        e.to_string().contains("cannot operate VNFC no-such-vnfc"),
        "{e}"
    );
}

#[tokio::test]
async fn nova_refusals_and_failed_servers_name_the_server_and_novas_message() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    // S1 is paused: Nova refuses the start with 409 and no task runs: reported at once.
    serve_server(
        &nova,
        S1,
        ResponseTemplate::new(200).set_body_json(server(&uri, S1, "PAUSED", None)),
    )
    .await;
    serve_action(&nova, S1, conflict(S1, "start", "vm_state", "paused"), 1).await;
    // S2 goes to ERROR after the start.
    Mock::given(method("GET"))
        .and(path(server_path(S2)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S2, "SHUTOFF", None)))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    let mut failed = server(&uri, S2, "ERROR", None);
    failed["server"]["fault"] = json!({"code": 500, "created": "2026-11-21T10:02:11Z",
        "message": "Failed to power on: libvirt error (password s3cret-pass-42)"});
    serve_server(&nova, S2, ResponseTemplate::new(200).set_body_json(failed)).await;
    serve_action(&nova, S2, ResponseTemplate::new(202), 1).await;
    // S3 is gone: the action answers 404.
    serve_server(
        &nova,
        S3,
        ResponseTemplate::new(200).set_body_json(server(&uri, S3, "SHUTOFF", None)),
    )
    .await;
    serve_action(
        &nova,
        S3,
        ResponseTemplate::new(404).set_body_json(json!({"itemNotFound": {
            "code": 404, "message": format!("Instance {S3} could not be found.")}})),
        1,
    )
    .await;

    let [a, b, c] = vnfc_ids();
    let start = |vnfc: String| {
        request(
            &uri,
            "STOPPED",
            json!({"changeStateTo": "STARTED", "vnfcInstanceId": [vnfc]}),
            control(),
        )
    };
    let d = driver();
    let e = d.operate(&start(format!("VDU1-{a}"))).await.unwrap_err();
    assert_eq!(e.kind(), "permanent", "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "cannot start Nova server {S1} (VNFC {a}): Nova answered HTTP 409 (status PAUSED): \
             Cannot 'start' instance {S1} while it is in vm_state paused"
        )
    );
    let e = d.operate(&start(format!("VDU1-{b}"))).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(&format!("cannot start Nova server {S2} (VNFC {b})"))
            && text.contains("the server is in status ERROR: Failed to power on: libvirt error"),
        "{text}"
    );
    assert!(!text.contains("s3cret-pass-42"), "{text}");
    let e = d.operate(&start(format!("VDU2-{c}"))).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cannot start Nova server {S3} (VNFC {c}): Nova answered HTTP 404: Instance {S3} \
             could not be found."
        )
    );
}

#[tokio::test]
async fn a_server_that_stays_busy_times_out_naming_its_last_status_and_task() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(ResponseTemplate::new(200).set_body_json(server(&uri, S1, "ACTIVE", None)))
        .up_to_n_times(1)
        .mount(&nova)
        .await;
    serve_server(
        &nova,
        S1,
        ResponseTemplate::new(200).set_body_json(server(&uri, S1, "ACTIVE", Some("powering-off"))),
    )
    .await;
    serve_action(&nova, S1, ResponseTemplate::new(202), 1).await;
    let [a, ..] = vnfc_ids();
    // The per-operation budget (additionalParams.stackTimeoutSeconds) applies to Nova too.
    let req = request(
        &uri,
        "STARTED",
        json!({"changeStateTo": "STOPPED", "vnfcInstanceId": [format!("VDU1-{a}")],
               "additionalParams": {"stackTimeoutSeconds": 1}}),
        control(),
    );
    let e = driver().operate(&req).await.unwrap_err();
    assert_eq!(e.kind(), "timeout", "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!(
            "Nova server {S1} (VNFC {a}) did not become SHUTOFF"
        )) && text.contains("last status ACTIVE, task powering-off"),
        "{text}"
    );
}

#[tokio::test]
async fn a_graceful_stop_waits_its_timeout_before_any_server_stops() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    serve_server(
        &nova,
        S1,
        ResponseTemplate::new(200).set_body_json(server(&uri, S1, "ACTIVE", None)),
    )
    .await;
    serve_action(&nova, S1, ResponseTemplate::new(202), 0).await;
    let [a, ..] = vnfc_ids();
    // The step's budget ends inside the graceful period: nothing was stopped yet.
    let req = request(
        &uri,
        "STARTED",
        json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL", "gracefulStopTimeout": 60,
               "vnfcInstanceId": [format!("VDU1-{a}")]}),
        RunControl::with_timeout(Duration::from_millis(700)),
    );
    let e = driver().operate(&req).await.unwrap_err();
    assert_eq!(e.kind(), "timeout", "{e}");
    assert!(e.to_string().contains("graceful stop period"), "{e}");
}

#[tokio::test]
async fn a_stack_without_servers_is_operated_without_calling_nova() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, false).await;
    Mock::given(method("GET"))
        .and(path_regex_compute())
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&nova)
        .await;
    let mut req = request(
        &uri,
        "STARTED",
        json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL", "gracefulStopTimeout": 600}),
        control(),
    );
    if let Some(info) = req.instance.instantiated_vnf_info.as_mut() {
        info.vnfc_resource_info = None;
        info.vnfc_info = None;
    }
    // No servers: no graceful period either (the step's budget is far shorter than 600 s).
    let out = driver().operate(&req).await.unwrap();
    assert!(out.resource_changes.affected_vnfcs.is_none());
    assert_eq!(out.vnf_state, Some(VnfOperationalState::Stopped));
    assert!(out.resources.vnfc_resource_info.is_empty());
}

fn path_regex_compute() -> wiremock::matchers::PathRegexMatcher {
    wiremock::matchers::path_regex("^/compute/")
}

#[tokio::test]
async fn a_nova_outage_is_transient_and_names_the_server_and_novas_message() {
    let nova = MockServer::start().await;
    let uri = nova.uri();
    mount_cloud(&nova, true).await;
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"computeFault": {
            "code": 503, "message": "The server is currently unavailable."}})),
        )
        .expect(2)
        .mount(&nova)
        .await;
    let [a, ..] = vnfc_ids();
    let req = request(
        &uri,
        "STARTED",
        json!({"changeStateTo": "STOPPED", "vnfcInstanceId": [format!("VDU1-{a}")]}),
        control(),
    );
    let e = driver().operate(&req).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "GET /compute/v2.1/servers/{S1}: HTTP 503 from nova: The server is currently \
             unavailable. (transient: retrying may succeed)"
        )
    );
}

/// An observation of the instance as instantiated on stack `vnf-i1`.
fn observe_request(uri: &str) -> vnfm_driver_api::ObserveRequest {
    vnfm_driver_api::ObserveRequest {
        instance: instance(uri, "STARTED"),
        vims: vec![ResolvedVim::new(
            "vim1",
            serde_json::from_value(vim(uri)).unwrap(),
        )],
        driver_state: json!({
            "stackId": TOP.1, "stackName": TOP.0, "vimConnectionId": "vim1",
            "flavourId": "simple", "vnfdId": "vnfd-heat-test", "hotSource": "generated",
            "template": {}, "nfv": {}
        }),
        control: control(),
    }
}

#[tokio::test]
async fn a_server_in_error_is_observed_on_its_vnfc_with_novas_fault_redacted() {
    let server = MockServer::start().await;
    let uri = server.uri();
    mount_cloud(&server, true).await;
    let mut failed = self::server(&uri, S1, "ERROR", None);
    failed["server"]["fault"] = json!({"code": 500, "created": "2026-11-25T10:00:00Z",
        "message": "No valid host was found. auth with s3cret-pass-42 refused"});
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(ResponseTemplate::new(200).set_body_json(failed))
        .expect(1)
        .mount(&server)
        .await;
    for id in [S2, S3] {
        Mock::given(method("GET"))
            .and(path(server_path(id)))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(self::server(&uri, id, "ACTIVE", None)),
            )
            .expect(1)
            .mount(&server)
            .await;
    }

    let observed = driver()
        .observe(&observe_request(&uri))
        .await
        .expect("observed");
    assert_eq!(observed.len(), 1, "{observed:#?}");
    let c = &observed[0];
    assert_eq!(c.condition, "ERROR");
    assert_eq!(c.severity, vnfm_types::PerceivedSeverity::Critical);
    assert_eq!(c.resource_type, vnfm_types::FaultyResourceType::Compute);
    assert_eq!(c.resource.resource_id, S1);
    assert_eq!(c.vnfc_resource_id.as_deref(), Some(vnfc_ids()[0].as_str()));
    let details = c.details.join(" ");
    assert!(details.contains("No valid host was found"), "{details}");
    assert!(
        !details.contains("s3cret-pass-42"),
        "a secret in Nova's message: {details}"
    );
}

#[tokio::test]
async fn without_compute_in_the_catalog_nova_is_not_asked() {
    let server = MockServer::start().await;
    let uri = server.uri();
    // The recorded catalog of a Keystone and Heat cloud: no compute service.
    let mut token = fixture("keystone_token.json", &uri);
    token["token"]["expires_at"] = json!("2999-01-01T00:00:00.000000Z");
    assert!(
        !token["token"]["catalog"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["type"] == "compute")
    );
    mount_token(&server, token).await;
    mount_stack(&server, true).await;
    Mock::given(method("GET"))
        .and(path(server_path(S1)))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(self::server(&uri, S1, "ERROR", None)),
        )
        .expect(0)
        .mount(&server)
        .await;

    let observed = driver()
        .observe(&observe_request(&uri))
        .await
        .expect("observed");
    assert!(observed.is_empty(), "{observed:#?}");
}
