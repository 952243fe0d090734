//! Project scoping of Keystone callers against the real Keystone that
//! `scripts/test-env/openstack.sh start` runs: members of project A and of project B, and an
//! admin. What A creates records A's project; B neither lists it nor reaches it by id (`404`,
//! as for an id that does not exist); A and the admin see it. Ignored, saying so, when built
//! without Keystone's variables (`#[vnfm_test_env::needs(keystone)]`).

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use vnfm_keystone::testing::TestKeystone;
use vnfm_store::ScopedKind;

use crate::support;

use support::keystone::{Tenant, as_user_raw, keystone_harness, not_found};
use support::*;

/// A JSON request body.
fn json_body(v: Value) -> Option<(&'static str, Vec<u8>)> {
    Some(("application/json", serde_json::to_vec(&v).unwrap()))
}

/// The ids of a list answered `200`.
fn ids(r: &Reply) -> Vec<String> {
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn a_project_sees_and_changes_only_its_own_resources() {
    let ks = TestKeystone::from_env().await;
    let (tenant_a, tenant_b, admin) = (
        Tenant::new(&ks, "scope-a", &["member"]).await,
        Tenant::new(&ks, "scope-b", &["member"]).await,
        Tenant::new(&ks, "scope-admin", &["admin"]).await,
    );
    let h = keystone_harness(&ks, |b| b).await;
    let (a, b, root) = (
        tenant_a.token.clone(),
        tenant_b.token.clone(),
        admin.token.clone(),
    );

    // A onboards a package and creates an instance, a subscription and an operation.
    let r = as_user_raw(
        &h,
        &a,
        Method::POST,
        "/vnfpkgm/v2/vnf_packages",
        json_body(json!({})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let pkg = r.json()["id"].as_str().unwrap().to_owned();
    let content = format!("/vnfpkgm/v2/vnf_packages/{pkg}/package_content");
    let r = as_user_raw(
        &h,
        &a,
        Method::PUT,
        &content,
        Some(("application/zip", zip_dir(HELLO.as_ref()))),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let pkg_uri = format!("/vnfpkgm/v2/vnf_packages/{pkg}");
    let mut onboarded = false;
    for _ in 0..300 {
        let info = as_user_raw(&h, &a, Method::GET, &pkg_uri, None)
            .await
            .json();
        if info["onboardingState"] == "ONBOARDED" {
            onboarded = true;
            break;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(onboarded, "package {pkg} was not onboarded");
    let r = as_user_raw(
        &h,
        &a,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        json_body(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "of-a"})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let inst = r.json()["id"].as_str().unwrap().to_owned();
    let inst_uri = format!("/vnflcm/v2/vnf_instances/{inst}");
    let r = as_user_raw(
        &h,
        &a,
        Method::POST,
        &format!("{inst_uri}/instantiate"),
        json_body(json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let location = r.header("location").unwrap().to_owned();
    let occ = location.rsplit('/').next().unwrap().to_owned();
    let occ_uri = format!("/vnflcm/v2/vnf_lcm_op_occs/{occ}");
    let r = as_user_raw(
        &h,
        &a,
        Method::POST,
        "/vnflcm/v2/subscriptions",
        json_body(json!({"callbackUri": "http://127.0.0.1:9/callback"})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let sub = r.json()["id"].as_str().unwrap().to_owned();
    let sub_uri = format!("/vnflcm/v2/subscriptions/{sub}");
    let mut other_subs = Vec::new();
    for list in ["/vnfpkgm/v2/subscriptions", "/vnffm/v1/subscriptions"] {
        let body = json_body(json!({"callbackUri": "http://127.0.0.1:9/cb"}));
        let r = as_user_raw(&h, &a, Method::POST, list, body).await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{list}: {}",
            String::from_utf8_lossy(&r.body)
        );
        other_subs.push((list, r.json()["id"].as_str().unwrap().to_owned()));
    }
    // An alarm on A's instance (raised through the Alertmanager receiver) is A's.
    let alert = json!({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "HighCpu", "vnf_instance_id": inst,
                       "perceived_severity": "major", "event_type": "QOS_ALARM",
                       "function_type": "vnffm"},
            "annotations": {"summary": "CPU above 90%"},
            "startsAt": "2030-01-01T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph", "fingerprint": "f1"
        }]
    });
    let bearer = format!("Bearer {}", h.token);
    let headers = [
        ("content-type", "application/json"),
        ("authorization", bearer.as_str()),
    ];
    let r = h
        .raw(
            Method::POST,
            "/vnffm/v1/alertmanager",
            &headers,
            serde_json::to_vec(&alert).unwrap(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let alarm_ids = ids(&as_user_raw(&h, &a, Method::GET, "/vnffm/v1/alarms", None).await);
    assert_eq!(alarm_ids.len(), 1, "A sees the alarm on its instance");
    let alarm = alarm_ids[0].clone();
    let alarm_uri = format!("/vnffm/v1/alarms/{alarm}");

    // The store recorded A's project on each, and on the operation through its instance.
    let store = &h.store;
    for (kind, id) in [
        (ScopedKind::Package, &pkg),
        (ScopedKind::Instance, &inst),
        (ScopedKind::OpOcc, &occ),
        (ScopedKind::Subscription, &sub),
    ] {
        assert_eq!(
            store.project_of(kind, id).await.unwrap(),
            Some(Some(tenant_a.project.id.clone())),
            "{kind:?} {id}"
        );
    }

    // B lists none of them.
    let lists = [
        ("/vnflcm/v2/vnf_instances", &inst),
        ("/vnflcm/v1/vnf_instances", &inst),
        ("/vnflcm/v2/vnf_lcm_op_occs", &occ),
        ("/vnfpkgm/v2/vnf_packages", &pkg),
        ("/vnfpkgm/v1/vnf_packages", &pkg),
        ("/vnflcm/v2/subscriptions", &sub),
        (other_subs[0].0, &other_subs[0].1),
        (other_subs[1].0, &other_subs[1].1),
        ("/vnffm/v1/alarms", &alarm),
    ];
    for (list, id) in lists {
        assert!(
            !ids(&as_user_raw(&h, &b, Method::GET, list, None).await).contains(id),
            "B lists {id} in {list}"
        );
        assert!(
            ids(&as_user_raw(&h, &a, Method::GET, list, None).await).contains(id),
            "A misses {id} in {list}"
        );
        assert!(
            ids(&as_user_raw(&h, &root, Method::GET, list, None).await).contains(id),
            "admin misses {id} in {list}"
        );
    }

    // Every request of B naming one of them answers as for an id that does not exist.
    let missing = "00000000-0000-0000-0000-000000000000";
    let instantiate =
        json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}});
    let named: Vec<(Method, String, Option<Value>, &str)> = vec![
        (Method::GET, inst_uri.clone(), None, &inst),
        (Method::DELETE, inst_uri.clone(), None, &inst),
        (
            Method::POST,
            format!("{inst_uri}/instantiate"),
            Some(instantiate.clone()),
            &inst,
        ),
        (
            Method::POST,
            format!("{inst_uri}/terminate"),
            Some(json!({"terminationType": "FORCEFUL"})),
            &inst,
        ),
        (
            Method::GET,
            format!("/vnflcm/v1/vnf_instances/{inst}"),
            None,
            &inst,
        ),
        (Method::GET, occ_uri.clone(), None, &occ),
        (Method::POST, format!("{occ_uri}/retry"), None, &occ),
        (Method::POST, format!("{occ_uri}/rollback"), None, &occ),
        (Method::POST, format!("{occ_uri}/cancel"), None, &occ),
        (
            Method::GET,
            format!("/vnfm/v1/vnf_lcm_op_occs/{occ}/progress"),
            None,
            &occ,
        ),
        (Method::POST, format!("{occ_uri}/fail"), None, &occ),
        (Method::GET, pkg_uri.clone(), None, &pkg),
        (Method::DELETE, pkg_uri.clone(), None, &pkg),
        (
            Method::PATCH,
            pkg_uri.clone(),
            Some(json!({"operationalState": "DISABLED"})),
            &pkg,
        ),
        (Method::PUT, content.clone(), Some(json!({})), &pkg),
        (
            Method::POST,
            format!("{content}/upload_from_uri"),
            Some(json!({"addressInformation": "http://127.0.0.1:9/p.zip"})),
            &pkg,
        ),
        (Method::GET, content.clone(), None, &pkg),
        (Method::GET, format!("{pkg_uri}/vnfd"), None, &pkg),
        (
            Method::GET,
            format!("/vnfpkgm/v2/onboarded_vnf_packages/{HELLO_VNFD}"),
            None,
            HELLO_VNFD,
        ),
        (Method::GET, sub_uri.clone(), None, &sub),
        (Method::DELETE, sub_uri.clone(), None, &sub),
        (
            Method::GET,
            format!("{}/{}", other_subs[0].0, other_subs[0].1),
            None,
            &other_subs[0].1,
        ),
        (
            Method::DELETE,
            format!("{}/{}", other_subs[1].0, other_subs[1].1),
            None,
            &other_subs[1].1,
        ),
        (Method::GET, alarm_uri.clone(), None, &alarm),
        // A body the handler would refuse (400) tells nothing either: the project comes first.
        (
            Method::POST,
            format!("{inst_uri}/heal"),
            Some(json!(["not", "a", "request"])),
            &inst,
        ),
        (
            Method::PATCH,
            alarm_uri.clone(),
            Some(json!({"ackState": "ACKNOWLEDGED"})),
            &alarm,
        ),
    ];
    let encode = |method: &Method, body: Option<Value>| {
        let content_type = match *method {
            Method::PATCH => "application/merge-patch+json",
            // Only package content is PUT.
            Method::PUT => "application/zip",
            _ => "application/json",
        };
        body.map(|v| (content_type, serde_json::to_vec(&v).unwrap()))
    };
    for (method, uri, body, id) in named {
        let other = as_user_raw(&h, &b, method.clone(), &uri, encode(&method, body.clone())).await;
        let absent_uri = uri.replace(id, missing);
        let absent = as_user_raw(&h, &b, method.clone(), &absent_uri, encode(&method, body)).await;
        assert_eq!(
            not_found(&other, id),
            not_found(&absent, missing),
            "{method} {uri} tells B's missing id from A's resource"
        );
    }
    // B cannot create an instance from A's package either: it is not there for B.
    let r = as_user_raw(
        &h,
        &b,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        json_body(json!({"vnfdId": HELLO_VNFD})),
    )
    .await;
    assert!(
        r.problem(422)["detail"]
            .as_str()
            .unwrap()
            .contains("no onboarded VNF package"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    // Nothing of B's requests happened: A still has its instance, operation and subscription.
    let occ_state = as_user_raw(&h, &a, Method::GET, &occ_uri, None)
        .await
        .json();
    assert_ne!(occ_state["operationState"], "FAILED", "{occ_state}");
    assert_eq!(
        as_user_raw(&h, &a, Method::GET, &inst_uri, None)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        as_user_raw(&h, &a, Method::GET, &sub_uri, None)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        as_user_raw(&h, &a, Method::GET, &pkg_uri, None)
            .await
            .status,
        StatusCode::OK
    );
    let pkg_doc = as_user_raw(&h, &a, Method::GET, &pkg_uri, None)
        .await
        .json();
    assert_eq!(pkg_doc["operationalState"], "ENABLED", "{pkg_doc}");
    let alarm_doc = as_user_raw(&h, &a, Method::GET, &alarm_uri, None)
        .await
        .json();
    assert_eq!(alarm_doc["ackState"], "UNACKNOWLEDGED", "{alarm_doc}");
    for (list, id) in &other_subs {
        let r = as_user_raw(&h, &a, Method::GET, &format!("{list}/{id}"), None).await;
        assert_eq!(r.status, StatusCode::OK, "{list}/{id}");
    }
    // The admin reaches them by id too, and so does the OAuth 2.0 client.
    assert_eq!(
        as_user_raw(&h, &root, Method::GET, &inst_uri, None)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        h.call(Method::GET, &occ_uri, None).await.status,
        StatusCode::OK
    );
    // What the OAuth 2.0 client creates belongs to no project: A does not see it.
    let r = h
        .call(Method::POST, "/vnfpkgm/v2/vnf_packages", Some(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let shared = r.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        store
            .project_of(ScopedKind::Package, &shared)
            .await
            .unwrap(),
        Some(None)
    );
    assert!(
        !ids(&as_user_raw(&h, &a, Method::GET, "/vnfpkgm/v2/vnf_packages", None).await)
            .contains(&shared)
    );
    as_user_raw(
        &h,
        &a,
        Method::GET,
        &format!("/vnfpkgm/v2/vnf_packages/{shared}"),
        None,
    )
    .await
    .problem(404);
    assert!(
        ids(&as_user_raw(&h, &root, Method::GET, "/vnfpkgm/v2/vnf_packages", None).await)
            .contains(&shared)
    );
    // Performance management records no project yet: refused to a project member, open to
    // the admin.
    let mut statuses = Vec::new();
    for token in [&b, &root] {
        let headers = [("x-auth-token", token.as_str()), ("version", "2.1.0")];
        statuses.push(
            h.raw(Method::GET, "/vnfpm/v2/pm_jobs", &headers, Vec::new())
                .await,
        );
    }
    let p = statuses[0].problem(403);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("--keystone-admin-roles"),
        "{p}"
    );
    assert_eq!(statuses[1].status, StatusCode::OK);
}
