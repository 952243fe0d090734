//! VIMs and the NFVO: write-only secrets, VIMs created by instances, remote grants and packages.

use super::*;

#[tokio::test]
async fn vim_secrets_are_write_only() {
    let h = Harness::new().await;
    const SECRET: &str = "k8s-token-that-must-not-leak-1234";
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "edge", "vimType": "ETSINFV.KUBERNETES.V_1",
                "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
                "accessInfo": {"bearer_token": SECRET}
            })),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let etag = r.header("etag").unwrap().to_owned();
    for reply in [
        r,
        h.call(Method::GET, &format!("/vnfm/v1/vims/{id}"), None)
            .await,
        h.call(Method::GET, "/vnfm/v1/vims", None).await,
    ] {
        let text = String::from_utf8_lossy(&reply.body).to_string();
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("***"), "{text}");
    }
    let auth = format!("Bearer {}", h.token);
    let patch = serde_json::to_vec(&json!({"name": "edge-2"})).unwrap();
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnfm/v1/vims/{id}"),
            &[
                ("authorization", &auth),
                ("content-type", "application/merge-patch+json"),
                ("if-match", "\"77\""),
            ],
            patch.clone(),
        )
        .await;
    r.problem(412);
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnfm/v1/vims/{id}"),
            &[
                ("authorization", &auth),
                ("content-type", "application/merge-patch+json"),
                ("if-match", &etag),
            ],
            patch,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["name"], "edge-2");
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({"name": "bad", "vimType": "ETSINFV.KUBERNETES.V_1"})),
        )
        .await;
    assert!(r.status.is_client_error());
    assert_eq!(
        h.call(Method::DELETE, &format!("/vnfm/v1/vims/{id}"), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

/// A VNF instance whose lifecycle hook registered a VIM another instance uses: its
/// TERMINATE is a 409 naming the dependents (in `detail` and in `dependents`) and creates no
/// occurrence; the VIM view shows creator and users; forcing is accepted and recorded.
#[tokio::test]
async fn terminating_a_vim_creator_with_dependents_is_a_conflict_naming_them() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let noop = json!({"vim1": {"vimType": "TEST.NOOP.V_1"}});
    let a = h.create_instance().await;
    let occ = h
        .task(
            &a,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": noop}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    // What a hook of A returning a VIM to register leaves in the registry.
    let registry =
        vnfm_lcm::VimRegistry::new(h.store.clone(), h.state.keyring().clone(), all_vim_kinds());
    let cluster: vnfm_types::VimConnectionInfo = serde_json::from_value(json!({
        "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": {"endpoint": "https://10.0.0.9:6443"},
        "accessInfo": {"bearer_token": "cluster-token"}
    }))
    .unwrap();
    let vim = registry
        .create(
            "cluster-of-a",
            &cluster,
            Some(&vnfm_types::VnfInstanceId::new(&a)),
        )
        .await
        .unwrap()
        .id;
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "cnf-b"})),
        )
        .await;
    let b = r.json()["id"].as_str().unwrap().to_owned();
    let occ = h
        .task(
            &b,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {
                "vim1": {"vimType": "TEST.NOOP.V_1"},
                "k8s": {"vimId": vim.as_str(), "vimType": "ETSINFV.KUBERNETES.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");

    let view = h
        .call(Method::GET, &format!("/vnfm/v1/vims/{vim}"), None)
        .await
        .json();
    assert_eq!(view["createdByInstance"], a.as_str());
    assert_eq!(view["usedByInstances"], json!([b.as_str()]));
    let list = h.call(Method::GET, "/vnfm/v1/vims", None).await.json();
    assert_eq!(list[0]["usedByInstances"], json!([b.as_str()]));

    let occs_path = format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{a})");
    let before = h.call(Method::GET, &occs_path, None).await.json();
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            Some(json!({"terminationType": "FORCEFUL"})),
        )
        .await
        .problem(409);
    assert_eq!(
        p["dependents"],
        json!([{"vnfInstanceId": b.as_str(), "vnfInstanceName": "cnf-b", "vimId": vim.as_str()}])
    );
    let detail = p["detail"].as_str().unwrap();
    for needle in [
        a.as_str(),
        b.as_str(),
        "\"cnf-b\"",
        vim.as_str(),
        "terminate those instances",
        "additionalParams.forceWithDependents",
    ] {
        assert!(detail.contains(needle), "{needle} missing from: {detail}");
    }
    assert_eq!(
        h.call(Method::GET, &occs_path, None).await.json(),
        before,
        "no occurrence was created"
    );
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            Some(json!({"terminationType": "FORCEFUL",
                        "additionalParams": {"forceWithDependents": 1}})),
        )
        .await
        .problem(400);
    assert_eq!(p["pointer"], "/additionalParams/forceWithDependents");

    let occ = h
        .task(
            &a,
            "terminate",
            json!({"terminationType": "FORCEFUL", "additionalParams": {"forceWithDependents": true}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let warning = occ["warnings"][0].as_str().unwrap_or("");
    assert!(
        warning.contains(b.as_str()) && warning.contains(vim.as_str()),
        "{occ:#}"
    );
    // A is gone but B still runs on the VIM: A's identifier stays until B lets go of it.
    let p = h
        .call(
            Method::DELETE,
            &format!("/vnflcm/v2/vnf_instances/{a}"),
            None,
        )
        .await
        .problem(409);
    assert_eq!(p["dependents"][0]["vnfInstanceId"], b.as_str());
    // Nor can a new instance start using a VIM whose creator is not instantiated.
    let c = h.create_instance().await;
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{c}/instantiate"),
            Some(json!({"flavourId": "simple", "vimConnectionInfo": {
                "vim1": {"vimType": "TEST.NOOP.V_1"},
                "k8s": {"vimId": vim.as_str(), "vimType": "ETSINFV.KUBERNETES.V_1"}}})),
        )
        .await
        .problem(409);
    assert_eq!(p["pointer"], "/vimConnectionInfo/k8s");
}

/// A VNF created from a package the NFVO holds, and operations granted (or not) by a SOL003
/// NFVO on loopback.
#[tokio::test]
async fn packages_and_grants_from_a_remote_nfvo() {
    use std::sync::Mutex;
    use vnfm::lcm::{NfvoAuth, NfvoTimings, Sol003Nfvo};
    #[derive(Default)]
    struct Fake {
        grants: Mutex<Vec<Value>>,
        reject: Mutex<bool>,
    }
    let fake = Arc::new(Fake::default());
    let content = zip_dir(Path::new(HELLO));
    let app = axum::Router::new()
        .route(
            "/grant/v1/grants",
            axum::routing::post(
                |axum::extract::State(f): axum::extract::State<Arc<Fake>>,
                 axum::Json(req): axum::Json<Value>| async move {
                    f.grants.lock().unwrap().push(req.clone());
                    if *f.reject.lock().unwrap() {
                        return (
                            StatusCode::FORBIDDEN,
                            axum::Json(
                                json!({"status": 403, "detail": "site frozen for maintenance"}),
                            ),
                        );
                    }
                    (
                        StatusCode::CREATED,
                        axum::Json(json!({"id": "g-1", "vnfInstanceId": req["vnfInstanceId"],
                                          "vnfLcmOpOccId": req["vnfLcmOpOccId"]})),
                    )
                },
            ),
        )
        .route(
            "/vnfpkgm/v2/onboarded_vnf_packages/{vnfd}/package_content",
            axum::routing::get(move || {
                let content = content.clone();
                async move { content }
            }),
        )
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let nfvo = Sol003Nfvo::new(
        format!("http://{addr}"),
        NfvoAuth::None,
        None,
        NfvoTimings::default(),
    )
    .unwrap();
    let h = Harness::with_services(|b| b.nfvo(Arc::new(nfvo)), |_| {}).await;
    // Not onboarded here: fetched from the NFVO on first use.
    let id = h.create_instance().await;
    let list = h
        .call(Method::GET, "/vnfpkgm/v2/vnf_packages", None)
        .await
        .json();
    assert_eq!(list[0]["vnfdId"], HELLO_VNFD);
    assert_eq!(list[0]["onboardingState"], "ONBOARDED");
    let occ = h
        .task(&id, "instantiate", json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    {
        let grants = fake.grants.lock().unwrap();
        assert_eq!(grants.len(), 1);
        assert_eq!(grants[0]["operation"], "INSTANTIATE");
        assert_eq!(grants[0]["vnfInstanceId"], id.as_str());
        assert!(!grants[0]["addResources"].as_array().unwrap().is_empty());
    }
    *fake.reject.lock().unwrap() = true;
    let occ = h
        .task(&id, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "ROLLED_BACK", "{occ:#}");
    assert!(
        occ["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("site frozen"),
        "{occ:#}"
    );
    let inst = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await
        .json();
    assert_eq!(inst["instantiationState"], "INSTANTIATED");
}

/// The NFVO connection given once is kept in the store with its secret sealed, used by later
/// starts on the same data without flags, and forgotten on request.
#[tokio::test]
async fn the_nfvo_connection_is_kept_sealed_for_later_starts() {
    use std::sync::Mutex;
    use vnfm::lcm::NfvoSetting;
    use vnfm::lcm::types::SecretString;
    use vnfm::lcm::{NfvoAuth, NfvoSettings};
    const NFVO_SECRET: &str = "nfvo-Pa55-w0rd";
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = axum::Router::new()
        .route(
            "/grant/v1/grants",
            axum::routing::post(
                |axum::extract::State(seen): axum::extract::State<Arc<Mutex<Vec<String>>>>,
                 headers: axum::http::HeaderMap,
                 axum::Json(req): axum::Json<Value>| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().unwrap().push(auth);
                    (
                        StatusCode::CREATED,
                        axum::Json(json!({"id": "g-1", "vnfInstanceId": req["vnfInstanceId"],
                                          "vnfLcmOpOccId": req["vnfLcmOpOccId"]})),
                    )
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let shared = tempfile::tempdir().unwrap();
    let data = shared.path().join("data");
    let settings = NfvoSettings {
        url: format!("http://{addr}"),
        auth: NfvoAuth::Basic {
            user: "vnfm".into(),
            password: SecretString::new(NFVO_SECRET),
        },
        ca_pem: None,
    };
    let instantiate =
        json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}});
    let expected_auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("vnfm:{NFVO_SECRET}"))
    );
    {
        let d = data.clone();
        let h = Harness::with_services(
            |b| b.nfvo_setting(NfvoSetting::Set(settings)),
            move |o| o.data_dir = d,
        )
        .await;
        h.onboard(zip_dir(Path::new(HELLO))).await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate.clone()).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        std::slice::from_ref(&expected_auth)
    );
    // At rest the secret is sealed: no file of the data directory holds it in clear.
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes
                    .windows(NFVO_SECRET.len())
                    .any(|w| w == NFVO_SECRET.as_bytes()),
                "{} holds the NFVO secret in clear",
                path.display()
            );
        }
    }
    {
        // A later start without NFVO options uses the stored connection.
        let d = data.clone();
        let h = Harness::with(move |o| o.data_dir = d).await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate.clone()).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [expected_auth.clone(), expected_auth]
    );
    {
        // Forgotten: the built-in NFVO grants, the remote one is not asked.
        let d = data.clone();
        let h = Harness::with_services(
            |b| b.nfvo_setting(NfvoSetting::Clear),
            move |o| o.data_dir = d,
        )
        .await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
