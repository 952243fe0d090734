//! Keystone and Heat clients against recorded API answers (wiremock): token caching and
//! expiry, re-authentication on 401, catalog selection, retries, timeouts and failure reports.
//! The JSON fixtures were recorded from Keystone 30 / Heat 27.

use std::sync::Once;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use vnfm_driver_api::{DriverError, ResolvedVim, RunControl};
use vnfm_infra_openstack::config::{PollPolicy, RetryPolicy};
use vnfm_infra_openstack::heat::{Heat, StackRef};
use vnfm_infra_openstack::keystone::Session;
use vnfm_infra_openstack::{DriverConfig, VimSettings};
use vnfm_types::time::Timestamp;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A recorded fixture with the recorded service URLs pointed at `uri`.
fn fixture(name: &str, uri: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture");
    let text = text
        .replace("http://127.0.0.1:37817", uri)
        .replace("http://127.0.0.1:50723", uri);
    serde_json::from_str(&text).expect("fixture JSON")
}

const PROJECT: &str = "33ff53423c3c41f599f33ded3382c600";

fn rfc3339(t: SystemTime) -> String {
    Timestamp::try_from(t)
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        .to_string()
}

/// The recorded token answer, expiring `valid_for` from now, with extra catalog entries.
fn token_body(uri: &str, valid_for: Duration) -> Value {
    let mut t = fixture("keystone_token.json", uri);
    t["token"]["expires_at"] = json!(rfc3339(SystemTime::now() + valid_for));
    let catalog = t["token"]["catalog"].as_array_mut().unwrap();
    let heat = catalog
        .iter_mut()
        .find(|s| s["type"] == "orchestration")
        .unwrap();
    let eps = heat["endpoints"].as_array_mut().unwrap();
    for e in eps.iter_mut() {
        if e["interface"] == "internal" {
            e["url"] = json!(format!("{uri}/internal/v1/{PROJECT}"));
        }
    }
    eps.push(
        json!({"id": "r2", "interface": "public", "region": "RegionTwo",
        "region_id": "RegionTwo", "url": format!("{uri}/r2/v1/{PROJECT}")}),
    );
    t
}

async fn mount_token(server: &MockServer, valid_for: Duration, token: &str, times: u64) {
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", token)
                .set_body_json(token_body(&server.uri(), valid_for)),
        )
        .expect(times)
        .mount(server)
        .await;
}

fn vim(uri: &str, access: Value, iface: Value) -> ResolvedVim {
    let mut interface = json!({"endpoint": format!("{uri}/v3")});
    if let Value::Object(m) = iface {
        for (k, v) in m {
            interface[k] = v;
        }
    }
    ResolvedVim::new(
        "vim1",
        serde_json::from_value(json!({
            "vimId": "vim-1",
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": interface,
            "accessInfo": access,
        }))
        .unwrap(),
    )
}

fn password() -> Value {
    json!({"username": "vnfm", "password": "s3cret-pass-42", "project": "vnfm",
           "projectDomain": "Default", "userDomain": "Default"})
}

fn config() -> DriverConfig {
    DriverConfig {
        retry: RetryPolicy {
            attempts: 3,
            initial_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(50),
        },
        poll: PollPolicy {
            initial: Duration::from_millis(20),
            factor: 1.5,
            max: Duration::from_millis(100),
        },
        request_timeout: Duration::from_secs(5),
        ..DriverConfig::default()
    }
}

fn session(v: &ResolvedVim) -> Session {
    init();
    Session::new(v, VimSettings::from_vim(v).unwrap(), &config()).unwrap()
}

fn control() -> RunControl {
    RunControl::with_timeout(Duration::from_secs(30))
}

fn stack_json(status: &str) -> Value {
    json!({"stack": {"id": "sid-1", "stack_name": "vnf-1", "stack_status": status,
        "stack_status_reason": "", "parameters": {"nfv": "{}"}, "updated_time": null}})
}

#[tokio::test]
async fn password_scope_and_endpoint_selection_by_interface_and_region() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .and(body_partial_json(json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "vnfm", "domain": {"name": "Default"}, "password": "s3cret-pass-42"}}},
            "scope": {"project": {"name": "vnfm", "domain": {"name": "Default"}}}}})))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", "tok-1")
                .set_body_json(token_body(&server.uri(), Duration::from_secs(3600))),
        )
        .expect(3)
        .mount(&server)
        .await;
    let uri = server.uri();
    let c = control();
    let any = session(&vim(&uri, password(), json!({})));
    assert_eq!(
        any.endpoint(&c, "orchestration").await.unwrap(),
        format!("{uri}/v1/{PROJECT}")
    );
    let mut access = password();
    access["region"] = json!("RegionTwo");
    let r2 = session(&vim(&uri, access, json!({})));
    assert_eq!(
        r2.endpoint(&c, "orchestration").await.unwrap(),
        format!("{uri}/r2/v1/{PROJECT}")
    );
    let mut access = password();
    access["region"] = json!("RegionOne");
    let internal = session(&vim(&uri, access, json!({"interface": "internalURL"})));
    assert_eq!(
        internal.endpoint(&c, "orchestration").await.unwrap(),
        format!("{uri}/internal/v1/{PROJECT}")
    );
    // A service the catalog does not have: the error lists what there is.
    let e = any.endpoint(&c, "compute").await.unwrap_err().to_string();
    assert!(
        e.contains("no public endpoint of service type `compute`")
            && e.contains("orchestration/public/RegionOne"),
        "{e}"
    );
}

#[tokio::test]
async fn application_credentials_authenticate_without_a_scope() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .and(body_partial_json(json!({"auth": {"identity": {
            "methods": ["application_credential"],
            "application_credential": {"id": "ac-1", "secret": "ac-secret-99"}}}})))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("X-Subject-Token", "tok-ac")
                .set_body_json(token_body(&server.uri(), Duration::from_secs(3600))),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(
        &server.uri(),
        json!({"applicationCredentialId": "ac-1", "applicationCredentialSecret": "ac-secret-99"}),
        json!({}),
    ));
    let t = s.token(&control()).await.unwrap();
    assert_eq!(t.project_id.as_deref(), Some(PROJECT));
    // The request carried no scope: application credentials bring their own.
    let reqs = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert!(body["auth"].get("scope").is_none(), "{body}");
}

#[tokio::test]
async fn a_cached_token_is_reused_until_it_nears_expiry() {
    let fresh = MockServer::start().await;
    mount_token(&fresh, Duration::from_secs(3600), "tok-long", 1).await;
    let s = session(&vim(&fresh.uri(), password(), json!({})));
    let c = control();
    let a = s.token(&c).await.unwrap();
    let b = s.token(&c).await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));

    // Expiring within the refresh margin (120 s): every use authenticates again.
    let expiring = MockServer::start().await;
    mount_token(&expiring, Duration::from_secs(60), "tok-short", 2).await;
    let s = session(&vim(&expiring.uri(), password(), json!({})));
    let a = s.token(&c).await.unwrap();
    let b = s.token(&c).await.unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &b));
}

#[tokio::test]
async fn a_401_from_heat_reauthenticates_once() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 2).await;
    let stack_path = format!("/v1/{PROJECT}/stacks/vnf-1/sid-1");
    Mock::given(method("GET"))
        .and(path(stack_path.clone()))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"code": 401, "message": "The request you have made requires authentication."}}),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(stack_path))
        .and(header("X-Auth-Token", "tok-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(stack_json("CREATE_COMPLETE")))
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let r = StackRef {
        name: "vnf-1".into(),
        id: "sid-1".into(),
    };
    let st = heat.show(&r).await.unwrap().unwrap();
    assert_eq!(st.stack_status, "CREATE_COMPLETE");
}

#[tokio::test]
async fn a_persistent_401_is_reported_after_one_reauthentication() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 2).await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1/sid-1")))
        .respond_with(ResponseTemplate::new(401))
        .expect(2)
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let e = heat
        .show(&StackRef {
            name: "vnf-1".into(),
            id: "sid-1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "permanent");
    assert!(e.to_string().contains("HTTP 401 from heat"), "{e}");
}

#[tokio::test]
async fn transient_5xx_is_retried_and_then_succeeds() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 1).await;
    let p = format!("/v1/{PROJECT}/stacks/vnf-1/sid-1");
    Mock::given(method("GET"))
        .and(path(p.clone()))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream down"))
        .up_to_n_times(2)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(p))
        .respond_with(ResponseTemplate::new(200).set_body_json(stack_json("UPDATE_COMPLETE")))
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let st = heat
        .show(&StackRef {
            name: "vnf-1".into(),
            id: "sid-1".into(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.stack_status, "UPDATE_COMPLETE");
}

#[tokio::test]
async fn exhausted_retries_are_transient_and_client_errors_are_not_retried() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 1).await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1/down")))
        .respond_with(ResponseTemplate::new(502))
        .expect(3)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1/bad")))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "explanation": "The server could not comply with the request since it is either malformed or otherwise incorrect.",
            "code": 400, "title": "Bad Request",
            "error": {"message": "Invalid stack id", "type": "Invalid", "traceback": null}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let r = |id: &str| StackRef {
        name: "vnf-1".into(),
        id: id.into(),
    };
    let e = heat.show(&r("down")).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains("HTTP 502 from heat"), "{e}");
    let e = heat.show(&r("bad")).await.unwrap_err();
    assert!(!e.is_retryable(), "{e}");
    assert!(
        e.to_string()
            .contains("HTTP 400 from heat: Invalid stack id"),
        "{e}"
    );
}

#[tokio::test]
async fn an_unreachable_keystone_is_transient_after_the_retries() {
    init();
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = session(&vim(
        &format!("http://127.0.0.1:{port}"),
        password(),
        json!({}),
    ));
    let e = s.token(&control()).await.unwrap_err();
    assert_eq!(e.kind(), "transient", "{e}");
    let text = e.to_string();
    assert!(
        text.contains("POST /v3/auth/tokens: no answer") && text.contains("after 3 attempt(s)"),
        "{text}"
    );
}

#[tokio::test]
async fn refused_credentials_are_reported_without_the_secret() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v3/auth/tokens"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "code": 401, "title": "Unauthorized",
            "message": "The request you have made requires authentication (password s3cret-pass-42)."}})))
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let e = s.token(&control()).await.unwrap_err();
    let text = e.to_string();
    assert_eq!(e.kind(), "permanent");
    assert!(
        text.contains("refused the credentials of VIM connection `vim1`"),
        "{text}"
    );
    assert!(!text.contains("s3cret-pass-42"), "{text}");
    assert!(text.contains("password ***"), "{text}");
}

#[tokio::test]
async fn a_lookup_by_name_follows_heats_redirect() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 1).await;
    let uri = server.uri();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1")))
        .respond_with(ResponseTemplate::new(302).insert_header(
            "Location",
            format!("{uri}/v1/{PROJECT}/stacks/vnf-1/sid-1").as_str(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1/sid-1")))
        .respond_with(ResponseTemplate::new(200).set_body_json(stack_json("CREATE_COMPLETE")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-2")))
        .respond_with(ResponseTemplate::new(404))
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&uri, password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let st = heat.find("vnf-1").await.unwrap().unwrap();
    assert_eq!(st.id, "sid-1");
    assert!(heat.find("vnf-2").await.unwrap().is_none());
}

#[tokio::test]
async fn waiting_gives_up_after_the_stack_timeout_with_the_last_status() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 1).await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/vnf-1/sid-1")))
        .respond_with(ResponseTemplate::new(200).set_body_json(stack_json("CREATE_IN_PROGRESS")))
        .mount(&server)
        .await;
    let s = session(&vim(&server.uri(), password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let r = StackRef {
        name: "vnf-1".into(),
        id: "sid-1".into(),
    };
    let e = heat
        .wait(&r, "CREATE", None, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Timeout { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("did not reach CREATE_COMPLETE") && text.contains("CREATE_IN_PROGRESS"),
        "{text}"
    );
    // The step's own deadline stops the wait too.
    let short = RunControl::with_timeout(Duration::from_millis(150));
    let heat = Heat::connect(&s, &short, config().poll).await.unwrap();
    let e = heat
        .wait(&r, "CREATE", None, Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Timeout { .. }), "{e:?}");
}

#[tokio::test]
async fn a_failed_stack_reports_the_failing_resource_from_its_events() {
    let server = MockServer::start().await;
    mount_token(&server, Duration::from_secs(3600), "tok-1", 1).await;
    let uri = server.uri();
    let stack = fixture("heat_stack_create_failed.json", &uri);
    let sid = stack["stack"]["id"].as_str().unwrap().to_string();
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/sfail/{sid}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(stack))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/{PROJECT}/stacks/sfail/{sid}/events")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(fixture("heat_events_create_failed.json", &uri)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let s = session(&vim(&uri, password(), json!({})));
    let c = control();
    let heat = Heat::connect(&s, &c, config().poll).await.unwrap();
    let e = heat
        .wait(
            &StackRef {
                name: "sfail".into(),
                id: sid,
            },
            "CREATE",
            None,
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "permanent");
    assert_eq!(
        e.to_string(),
        "Heat stack `sfail` is CREATE_FAILED because resource `VDU1` (CREATE_FAILED) in nested \
         stack sfail-VDU1_group-wqjcf5c6gmxn-c2wifl2twnya-i4qn2zib6rtf failed: ValueError: \
         resources.VDU1: Test Resource failed VDU1"
    );
}
