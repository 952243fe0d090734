//! Granting (SOL003 clause 9): the grant requests the planner builds for a corpus VNFD
//! (snapshots), a rejected grant ending ROLLED_BACK with the NFVO's reason and nothing done, a
//! grant kept with the occurrence and reused by retry, and the remote SOL003 NFVO client against
//! a small NFVO on loopback (synchronous, asynchronous with polling, rejection, Basic auth,
//! transient failures retried, packages served).

use crate::runner_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use runner_support::*;
use serde_json::{Value, json};
use vnfm_driver_api::nfvo::grant_everything;
use vnfm_driver_api::{DriverError, GrantDecision, InfraOperation, Nfvo};
use vnfm_lcm::nfvo::NfvoAuth;
use vnfm_outbound::{NfvoTimings, Sol003Nfvo};
use vnfm_types::{
    GrantRequest, LcmOperationStateType as State_, ProblemDetails, SecretString, VnfInstance,
};

/// Records every grant request and answers with `decide`.
struct RecordingNfvo {
    asked: Mutex<Vec<GrantRequest>>,
    reject: Mutex<Option<String>>,
    fail_next: Mutex<bool>,
}

impl RecordingNfvo {
    fn new() -> Arc<RecordingNfvo> {
        Arc::new(RecordingNfvo {
            asked: Mutex::new(Vec::new()),
            reject: Mutex::new(None),
            fail_next: Mutex::new(false),
        })
    }
    fn asked(&self) -> Vec<GrantRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Nfvo for RecordingNfvo {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        self.asked.lock().unwrap().push(request.clone());
        if std::mem::take(&mut *self.fail_next.lock().unwrap()) {
            return Err(DriverError::transient("NFVO unreachable"));
        }
        if let Some(reason) = self.reject.lock().unwrap().clone() {
            return Ok(GrantDecision::Rejected(ProblemDetails::new(403, reason)));
        }
        Ok(GrantDecision::Granted(Box::new(grant_everything(
            request,
            format!("g{}", self.asked.lock().unwrap().len()),
        ))))
    }

    fn describe(&self) -> String {
        "recording".into()
    }
}

/// The grant request as text with the run's identifiers replaced, for snapshots.
fn normalized(req: &GrantRequest, instance: &VnfInstance) -> Value {
    let mut text = serde_json::to_string(req).unwrap();
    text = text.replace(instance.id.as_str(), "<instance>");
    text = text.replace(req.vnf_lcm_op_occ_id.as_str(), "<op-occ>");
    if let Some(info) = &instance.instantiated_vnf_info {
        for (i, v) in info.vnfc_resource_info.iter().flatten().enumerate() {
            text = text.replace(&v.id, &format!("<vnfc-{i}>"));
            text = text.replace(
                &v.compute_resource.resource_id,
                &format!("<vnfc-{i}-resource>"),
            );
        }
        for (i, s) in info
            .virtual_storage_resource_info
            .iter()
            .flatten()
            .enumerate()
        {
            text = text.replace(&s.id, &format!("<storage-{i}>"));
            text = text.replace(
                &s.storage_resource.resource_id,
                &format!("<storage-{i}-resource>"),
            );
        }
        for (i, l) in info
            .vnf_virtual_link_resource_info
            .iter()
            .flatten()
            .enumerate()
        {
            text = text.replace(&l.id, &format!("<vl-{i}>"));
            text = text.replace(
                &l.network_resource.resource_id,
                &format!("<vl-{i}-resource>"),
            );
        }
    }
    serde_json::from_str(&text).unwrap()
}

/// The grant requests of instantiate (first instantiation level), scale out and in (first
/// aspect), heal (first VNFC) and terminate of corpus package `package`, as snapshots named
/// `grant_<prefix><operation>`; returns the requests and the instance before each.
async fn grant_sequence(package: &str, prefix: &str) -> (Vec<GrantRequest>, Vec<VnfInstance>) {
    let nfvo = RecordingNfvo::new();
    let vnfd = corpus_vnfd(package);
    let vnfd_id = vnfd.descriptor_id.clone();
    let flavour = vnfd.flavours[0].clone();
    let level = flavour.instantiation_levels[0].id.clone();
    let aspect = flavour.scaling_aspects[0].id.clone();
    let env = Env::builder().vnfd(vnfd).nfvo(nfvo.clone()).build().await;
    let inst = env.create(&vnfd_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": flavour.id, "instantiationLevelId": level,
                       "vimConnectionInfo": memory_vims()}),
            ),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let after_instantiate = env.instance(&inst.id).await;
    let mut states = vec![inst.clone(), after_instantiate];
    for kind in ["SCALE_OUT", "SCALE_IN"] {
        let op = env
            .lcm
            .scale(&inst.id, req(json!({"type": kind, "aspectId": aspect})))
            .await
            .unwrap();
        env.completed(op).await;
        states.push(env.instance(&inst.id).await);
    }
    let vnfc = states[3]
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_info
        .as_ref()
        .unwrap()[0]
        .id
        .clone();
    let heal = env
        .lcm
        .heal(&inst.id, req(json!({"vnfcInstanceId": [vnfc]})))
        .await
        .unwrap();
    env.completed(heal).await;
    states.push(env.instance(&inst.id).await);
    let terminate = env
        .lcm
        .terminate(&inst.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    env.completed(terminate).await;

    let asked = nfvo.asked();
    assert_eq!(asked.len(), 5, "{package}: one grant per operation");
    for (name, (req, before)) in ["instantiate", "scale_out", "scale_in", "heal", "terminate"]
        .iter()
        .zip(asked.iter().zip(&states))
    {
        insta::assert_json_snapshot!(format!("grant_{prefix}{name}"), normalized(req, before));
    }
    assert_eq!(
        asked[0].instantiation_level_id.as_deref(),
        Some(level.as_str())
    );
    // The infrastructure calls carried the grants.
    let calls = env.infra.calls();
    assert!(calls.iter().all(|c| c.grant_id.is_some()), "{calls:?}");
    (asked, states)
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_requests_for_a_corpus_vnfd() {
    let (asked, states) = grant_sequence("v2-vm-basic-lcms-max", "").await;
    let after_out = &states[2];
    let after_heal = &states[4];
    // Scale-in removes the newest VNFC of the aspect's VDU; terminate removes every resource.
    assert_eq!(asked[2].remove_resources.len(), 1);
    let removed = asked[2].remove_resources[0].resource.as_ref().unwrap();
    let vdu1: Vec<_> = after_out
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .iter()
        .filter(|v| v.vdu_id == "VDU1")
        .collect();
    assert_eq!(
        removed.resource_id,
        vdu1.last().unwrap().compute_resource.resource_id
    );
    let existing = after_heal
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .len();
    assert!(asked[4].remove_resources.len() >= existing);
}

/// More corpus VNFDs: a VM VNF with block storage and a CNF (container VDUs, Kubernetes
/// manifests), through the same sequence.
#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_requests_for_more_corpus_vnfds() {
    use vnfm_types::ResourceDefinitionType as T;
    let (vm, _) = grant_sequence("v2-vm-userdata-standard", "userdata_standard_").await;
    assert!(
        vm[0]
            .add_resources
            .iter()
            .any(|r| r.resource_type == T::Storage),
        "the VM package's volumes are asked for: {:?}",
        vm[0].add_resources
    );
    let (cnf, _) = grant_sequence("v2-cnf-instantiate-resources", "cnf_").await;
    assert!(
        cnf[0]
            .add_resources
            .iter()
            .any(|r| r.resource_type == T::Compute && r.vdu_id.is_some())
    );
    assert!(
        !cnf[1].add_resources.is_empty(),
        "scale out adds containers"
    );
    assert!(!cnf[2].remove_resources.is_empty(), "scale in removes them");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_grant_rolls_back_without_touching_resources() {
    let nfvo = RecordingNfvo::new();
    *nfvo.reject.lock().unwrap() = Some("no capacity left in zone-a".into());
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let vnfd_id = hello_vnfd().descriptor_id;
    let inst = env.create(&vnfd_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State_::RolledBack);
    let error = done.error.clone().unwrap();
    assert!(
        error.detail.contains("rejected the grant") && error.detail.contains("zone-a"),
        "{}",
        error.detail
    );
    assert!(
        env.infra.calls().is_empty(),
        "nothing may be done without a grant"
    );
    assert_eq!(
        env.instance(&inst.id).await.instantiation_state,
        vnfm_types::InstantiationState::NotInstantiated
    );
    assert_eq!(
        env.op_notes(&done).await,
        notes(&[("STARTING", "START"), ("ROLLED_BACK", "RESULT")])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grant_is_kept_for_retry_and_a_failed_request_is_asked_again() {
    let nfvo = RecordingNfvo::new();
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let vnfd_id = hello_vnfd().descriptor_id;
    // The infrastructure fails after the grant: retry reuses the stored grant.
    let inst = env.create(&vnfd_id).await;
    env.infra.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("VIM busy"),
    );
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, State_::FailedTemp);
    // SOL003 VnfLcmOpOcc.grantId: the occurrence names its grant from the grant step on, in
    // the stored document the v2 API serves as it is and in the v1 shape.
    assert_eq!(failed.grant_id.as_ref().map(|g| g.as_str()), Some("g1"));
    let text = env.lcm.get_op_occ_text(&failed.id).await.unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["grantId"], "g1", "{doc}");
    let v1 = vnfm_types::v1::VnfLcmOpOcc::try_from(failed.clone()).unwrap();
    assert_eq!(serde_json::to_value(&v1).unwrap()["grantId"], "g1");
    let retried = env.lcm.retry(&failed.id).await.unwrap();
    let done = env.done(&retried).await;
    assert_eq!(done.operation_state, State_::Completed);
    assert_eq!(done.grant_id.as_ref().map(|g| g.as_str()), Some("g1"));
    assert_eq!(nfvo.asked().len(), 1, "retry must not ask for a new grant");
    let grants: Vec<_> = env
        .infra
        .calls()
        .iter()
        .map(|c| c.grant_id.clone())
        .collect();
    assert_eq!(grants, [Some("g1".to_owned()), Some("g1".to_owned())]);

    // The NFVO is unreachable: FAILED_TEMP naming the grant; retry asks again.
    let inst2 = env.create(&vnfd_id).await;
    *nfvo.fail_next.lock().unwrap() = true;
    let op = env
        .lcm
        .instantiate(
            &inst2.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, State_::FailedTemp);
    // No grant, no grantId.
    assert!(failed.grant_id.is_none(), "{:?}", failed.grant_id);
    let detail = failed.error.unwrap().detail;
    assert!(
        detail.contains("grant") && detail.contains("NFVO unreachable"),
        "{detail}"
    );
    let retried = env.lcm.retry(&failed.id).await.unwrap();
    let done = env.done(&retried).await;
    assert_eq!(done.operation_state, State_::Completed);
    // The grant asked for by the retry.
    assert_eq!(done.grant_id.as_ref().map(|g| g.as_str()), Some("g3"));
    assert_eq!(nfvo.asked().len(), 3);
}

// ----- The remote client against an NFVO on loopback -----

#[derive(Default)]
struct FakeNfvo {
    mode: Mutex<String>,
    seen_auth: Mutex<Vec<String>>,
    polls: Mutex<u32>,
    errors_left: Mutex<u32>,
}

async fn grants(
    State(s): State<Arc<FakeNfvo>>,
    headers: HeaderMap,
    Json(req): Json<GrantRequest>,
) -> axum::response::Response {
    s.seen_auth.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned(),
    );
    {
        let mut left = s.errors_left.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response();
        }
    }
    let mode = s.mode.lock().unwrap().clone();
    let mut grant = serde_json::to_value(grant_everything(&req, "remote-1".into())).unwrap();
    grant["vimAssets"] =
        json!({"softwareImages": [{"vnfdSoftwareImageId": "VDU1", "vimSoftwareImageId": "img-9"}]});
    match mode.as_str() {
        "reject" => (
            StatusCode::FORBIDDEN,
            [("content-type", "application/problem+json")],
            Json(json!({"status": 403, "detail": "tenant quota exhausted"})),
        )
            .into_response(),
        "async" => {
            *s.polls.lock().unwrap() = 0;
            (
                StatusCode::ACCEPTED,
                [("location", "/grant/v1/grants/remote-1")],
            )
                .into_response()
        }
        _ => (StatusCode::CREATED, Json(grant)).into_response(),
    }
}

async fn poll(State(s): State<Arc<FakeNfvo>>) -> axum::response::Response {
    let mut polls = s.polls.lock().unwrap();
    *polls += 1;
    if *polls < 3 {
        return StatusCode::ACCEPTED.into_response();
    }
    Json(json!({"id": "remote-1", "vnfInstanceId": "i", "vnfLcmOpOccId": "o"})).into_response()
}

async fn start_fake() -> (String, Arc<FakeNfvo>) {
    let state = Arc::new(FakeNfvo::default());
    let app = axum::Router::new()
        .route("/grant/v1/grants", axum::routing::post(grants))
        .route("/grant/v1/grants/remote-1", axum::routing::get(poll))
        .route(
            "/vnfpkgm/v2/onboarded_vnf_packages/{vnfd}/package_content",
            axum::routing::get(
                |axum::extract::Path(vnfd): axum::extract::Path<String>| async move {
                    if vnfd == "known" {
                        (StatusCode::OK, b"PK\x03\x04zip".to_vec()).into_response()
                    } else {
                        StatusCode::NOT_FOUND.into_response()
                    }
                },
            ),
        )
        .route(
            "/vnfpkgm/v2/onboarded_vnf_packages/{vnfd}/vnfd",
            axum::routing::get(
                |axum::extract::Path(vnfd): axum::extract::Path<String>, headers: HeaderMap| async move {
                    let zip_asked = headers
                        .get("accept")
                        .is_some_and(|a| a.as_bytes() == b"application/zip");
                    if vnfd == "known" && zip_asked {
                        (StatusCode::OK, b"PK\x03\x04vnfd".to_vec()).into_response()
                    } else {
                        StatusCode::NOT_FOUND.into_response()
                    }
                },
            ),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), state)
}

fn request() -> GrantRequest {
    serde_json::from_value(json!({
        "vnfInstanceId": "i1", "vnfLcmOpOccId": "o1", "vnfdId": "d1", "operation": "INSTANTIATE",
        "isAutomaticInvocation": false,
        "addResources": [{"id": "VDU1-0", "type": "COMPUTE", "vduId": "VDU1"}],
        "_links": {"vnfLcmOpOcc": {"href": "/o1"}, "vnfInstance": {"href": "/i1"}}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_nfvo_grants_rejects_polls_and_serves_packages() {
    let (base, fake) = start_fake().await;
    let timings = NfvoTimings {
        poll_interval: Duration::from_millis(10),
        backoff: Duration::from_millis(5),
        ..NfvoTimings::default()
    };
    let nfvo = Sol003Nfvo::new(
        &base,
        NfvoAuth::Basic {
            user: "vnfm".into(),
            password: SecretString::new("pw"),
        },
        None,
        timings,
    )
    .unwrap();
    // Synchronous, after two transient 503s.
    *fake.errors_left.lock().unwrap() = 2;
    match nfvo.grant(&request()).await.unwrap() {
        GrantDecision::Granted(g) => {
            assert_eq!(g.id, "remote-1");
            assert_eq!(g.image_for("VDU1"), Some("img-9"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        fake.seen_auth
            .lock()
            .unwrap()
            .iter()
            .all(|a| a.starts_with("Basic "))
    );
    // Rejected with the NFVO's ProblemDetails.
    *fake.mode.lock().unwrap() = "reject".into();
    match nfvo.grant(&request()).await.unwrap() {
        GrantDecision::Rejected(p) => assert_eq!(p.detail, "tenant quota exhausted"),
        other => panic!("{other:?}"),
    }
    // Asynchronous: 202 + Location, polled until granted.
    *fake.mode.lock().unwrap() = "async".into();
    match nfvo.grant(&request()).await.unwrap() {
        GrantDecision::Granted(g) => assert_eq!(g.id, "remote-1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(*fake.polls.lock().unwrap(), 3);
    // Packages.
    assert_eq!(
        nfvo.fetch_package("known").await.unwrap().as_deref(),
        Some(&b"PK\x03\x04zip"[..])
    );
    assert_eq!(nfvo.fetch_package("unknown").await.unwrap(), None);
    assert_eq!(
        nfvo.fetch_vnfd("known").await.unwrap().as_deref(),
        Some(&b"PK\x03\x04vnfd"[..])
    );
    assert_eq!(nfvo.fetch_vnfd("unknown").await.unwrap(), None);
    // A package larger than the limit is refused while it downloads.
    let small = Sol003Nfvo::new(
        &base,
        NfvoAuth::None,
        None,
        NfvoTimings {
            attempts: 1,
            ..NfvoTimings::default()
        },
    )
    .unwrap()
    .with_max_package_bytes(4);
    let e = small.fetch_package("known").await.unwrap_err();
    assert!(e.to_string().contains("larger than 4 bytes"), "{e}");
    // An NFVO that never answers is a transient error naming it.
    let gone = Sol003Nfvo::new(
        "http://127.0.0.1:9",
        NfvoAuth::None,
        None,
        NfvoTimings {
            attempts: 2,
            backoff: Duration::from_millis(1),
            ..NfvoTimings::default()
        },
    )
    .unwrap();
    let e = gone.grant(&request()).await.unwrap_err();
    assert!(
        e.is_retryable() && e.to_string().contains("127.0.0.1:9"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfvo_settings_are_stored_with_the_secret_sealed_and_follow_key_rotation() {
    use vnfm_lcm::Keyring;
    use vnfm_lcm::nfvo::{NFVO_SETTING, NfvoSettings, load_nfvo_settings, save_nfvo_settings};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let store = vnfm_store_sql::open(&url).await.unwrap();
    let old_key = Keyring::generate_key();
    let keyring = Keyring::from_key_list(&old_key).unwrap();
    assert!(
        load_nfvo_settings(&*store, &keyring)
            .await
            .unwrap()
            .is_none()
    );
    let settings = NfvoSettings {
        url: "https://nfvo.example:9443".into(),
        auth: NfvoAuth::OAuth2 {
            client_id: "vnfm-1".into(),
            client_secret: SecretString::new("very-secret-value"),
            token_endpoint: "https://nfvo.example:9443/token".into(),
        },
        ca_pem: None,
    };
    save_nfvo_settings(&*store, &keyring, Some(&settings))
        .await
        .unwrap();
    let raw = store.get_setting(NFVO_SETTING).await.unwrap().unwrap();
    let text = raw.to_string();
    assert!(!text.contains("very-secret-value"), "{text}");
    assert_eq!(raw["url"], "https://nfvo.example:9443");
    assert_eq!(raw["auth"], "oauth2");
    assert!(!format!("{settings:?}").contains("very-secret-value"));

    let back = load_nfvo_settings(&*store, &keyring)
        .await
        .unwrap()
        .unwrap();
    match &back.auth {
        NfvoAuth::OAuth2 {
            client_id,
            client_secret,
            token_endpoint,
        } => {
            assert_eq!(client_id, "vnfm-1");
            assert_eq!(client_secret.expose(), "very-secret-value");
            assert_eq!(token_endpoint, "https://nfvo.example:9443/token");
        }
        other => panic!("{other:?}"),
    }
    // Another keyring cannot open it: a clear error, no secret in it.
    let stranger = Keyring::from_key_list(&Keyring::generate_key()).unwrap();
    let e = load_nfvo_settings(&*store, &stranger).await.unwrap_err();
    assert!(
        e.to_string().contains("NFVO secret") && !e.to_string().contains("very-secret"),
        "{e}"
    );
    // A new key on top: the secret still opens and is sealed again with the new key.
    let rotated =
        Keyring::from_key_list(&format!("{},{old_key}", Keyring::generate_key())).unwrap();
    load_nfvo_settings(&*store, &rotated)
        .await
        .unwrap()
        .unwrap();
    let resealed = store.get_setting(NFVO_SETTING).await.unwrap().unwrap();
    assert!(rotated.is_current(resealed["sealedSecret"].as_str().unwrap().as_bytes()));
    assert!(
        load_nfvo_settings(&*store, &keyring).await.is_err(),
        "the old key alone no longer opens it"
    );
    // Removed: the built-in NFVO again.
    save_nfvo_settings(&*store, &rotated, None).await.unwrap();
    assert!(
        load_nfvo_settings(&*store, &rotated)
            .await
            .unwrap()
            .is_none()
    );
}
