//! Project scoping by the scope each route declares in the route table, against a scripted
//! Keystone on loopback: a member of project `other` is answered about `demo`'s resources as
//! about missing ones, on each kind of route that names one by a path parameter, before
//! anything else of its request is looked at; `demo` and an admin reach them; performance
//! management is refused to members but for its API versions.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::HELLO_VNFD;
use crate::support::keystone::{as_user, not_found, onboard_hello_as, scripted_keystone_harness};

/// An id no resource has.
const MISSING: &str = "00000000-0000-4000-8000-000000000000";

#[tokio::test]
async fn each_route_naming_a_resource_keeps_it_to_its_project() {
    let h = scripted_keystone_harness().await;
    let pkg = onboard_hello_as(&h, "demo").await;
    let created = |r: crate::support::Reply| {
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let instance = created(
        as_user(
            &h,
            "demo",
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD})),
        )
        .await,
    );
    let callback = json!({"callbackUri": "http://127.0.0.1:9/demo"});
    let subscription = created(
        as_user(
            &h,
            "demo",
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(callback.clone()),
        )
        .await,
    );
    let fm_subscription = created(
        as_user(
            &h,
            "demo",
            Method::POST,
            "/vnffm/v1/subscriptions",
            Some(callback),
        )
        .await,
    );
    // The id with its first character percent-encoded: the router decodes it.
    let encoded = format!("%{:02X}{}", instance.as_bytes()[0], &instance[1..]);

    // Each route, the id of `demo`'s resource in it, and `{}` where the id goes.
    let named = [
        ("/vnflcm/v2/vnf_instances/{}", instance.as_str()),
        ("/vnflcm/v1/vnf_instances/{}", instance.as_str()),
        ("/vnflcm/v2/vnf_instances/{}", encoded.as_str()),
        ("/vnfpkgm/v2/vnf_packages/{}", pkg.as_str()),
        ("/vnfpkgm/v1/vnf_packages/{}", pkg.as_str()),
        ("/vnfpkgm/v2/onboarded_vnf_packages/{}", HELLO_VNFD),
        ("/vnflcm/v2/subscriptions/{}", subscription.as_str()),
        ("/vnffm/v1/subscriptions/{}", fm_subscription.as_str()),
    ];
    for (route, id) in named {
        let uri = route.replace("{}", id);
        let theirs = as_user(&h, "other", Method::GET, &uri, None).await;
        let missing = as_user(&h, "demo", Method::GET, &route.replace("{}", MISSING), None).await;
        assert_eq!(
            not_found(&theirs, id).replace(&instance, "<id>"),
            not_found(&missing, MISSING),
            "{uri}"
        );
        for caller in ["demo", "admin"] {
            let r = as_user(&h, caller, Method::GET, &uri, None).await;
            assert_eq!(r.status, StatusCode::OK, "{caller} {uri}");
        }
    }

    // Refused before the body is read: `demo` learns its body is wrong, `other` nothing.
    let instantiate = format!("/vnflcm/v2/vnf_instances/{instance}/instantiate");
    let r = as_user(&h, "demo", Method::POST, &instantiate, Some(json!({}))).await;
    assert!(r.status.is_client_error(), "{instantiate}: {}", r.status);
    assert_ne!(r.status, StatusCode::NOT_FOUND, "{instantiate}");
    let r = as_user(&h, "other", Method::POST, &instantiate, Some(json!({}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{instantiate}");
    for uri in [
        format!("/vnfind/v1/indicators/{instance}"),
        format!("/vnfm/v1/vnf_lcm_op_occs/{MISSING}/progress"),
    ] {
        let r = as_user(&h, "other", Method::GET, &uri, None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{uri}");
    }

    // Lists keep to the caller's project.
    let r = as_user(&h, "other", Method::GET, "/vnflcm/v2/vnf_instances", None).await;
    assert_eq!(r.json(), json!([]));

    // Performance management records no project: members are refused it, not its versions.
    let r = as_user(&h, "other", Method::GET, "/vnfpm/v2/pm_jobs", None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = as_user(&h, "admin", Method::GET, "/vnfpm/v2/pm_jobs", None).await;
    assert_eq!(r.status, StatusCode::OK);
    for versions in ["/vnfpm/v2/api_versions", "/vnfpm/api_versions"] {
        let r = as_user(&h, "other", Method::GET, versions, None).await;
        assert_eq!(r.status, StatusCode::OK, "{versions}");
    }
}
