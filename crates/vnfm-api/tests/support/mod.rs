//! The API test harness: an `AppState` on a temporary data directory (test VIM and a
//! `TEST.FLAKY.V_1` memory driver enabled), its router called without a socket (`oneshot`),
//! an OAuth2 token, and helpers to onboard packages and run tasks.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;
use vnfm_api::{AppState, StateOptions};
use vnfm_driver_api::memory::MemoryInfraDriver;

pub mod keystone;

pub const HELLO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vnfd-samples/hello-vnf");
pub const HELLO_VNFD: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";
pub const FLAKY: &str = "TEST.FLAKY.V_1";

/// The JSON schema `name` of the ETSI SOL003 API test suite of `api` (e.g.
/// `VNFLifecycleManagement-API`) in the corpus, as a draft-4 validator.
pub fn etsi_schema(api: &str, name: &str) -> jsonschema::Validator {
    let path = vnfm_test_env::corpus(format!("etsi/api-tests/SOL003/{api}/schemas/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub struct Harness {
    pub app: Router,
    pub state: Arc<AppState>,
    /// The whole store (the API holds its view of it).
    pub store: Arc<dyn vnfm_store::Store>,
    pub token: String,
    pub flaky: Arc<MemoryInfraDriver>,
    pub _dir: tempfile::TempDir,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn problem(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let p = self.json();
        assert_eq!(p["status"], status);
        assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
        p
    }
}

/// The package directory `dir` as a zip archive.
pub fn zip_dir(dir: &Path) -> Vec<u8> {
    vnfm_csar::zip_directory(dir).expect("zip the package directory")
}

impl Harness {
    pub async fn new() -> Harness {
        Self::with(|_| {}).await
    }

    /// A harness whose API options `tweak` adjusts.
    pub async fn with(tweak: impl FnOnce(&mut StateOptions)) -> Harness {
        Self::with_services(|b| b, tweak).await
    }

    /// A harness whose services (`services`, given the builder with the harness's defaults)
    /// and API options (`tweak`) are adjusted; the services' data directory is the API's.
    pub async fn with_services(
        services: impl FnOnce(vnfm::lcm::Builder) -> vnfm::lcm::Builder,
        tweak: impl FnOnce(&mut StateOptions),
    ) -> Harness {
        vnfm::lcm::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let flaky = Arc::new(MemoryInfraDriver::new().with_vim_types(&[FLAKY]));
        let mut options = StateOptions::new(dir.path().join("data"));
        options.enable_test_vim = true;
        options.verify_callbacks = false;
        options.allow_basic_auth = true;
        tweak(&mut options);
        let builder = vnfm::lcm::builder()
            .data_dir(&options.data_dir)
            .recovery_interval(None)
            .infra_driver(vnfm_api::test_vim_driver())
            .vim_kind(vnfm_api::test_vim_kind())
            .infra_driver(flaky.clone())
            // VIMs of the real drivers' types can be registered, as with `vnfm serve`.
            .vim_kind(Arc::new(vnfm_infra_openstack::OpenStackVimKind))
            .vim_kind(Arc::new(vnfm_infra_kubernetes::KubernetesVimKind));
        let services = services(builder).assemble().await.unwrap();
        let store = services.store.clone();
        let state = AppState::new(services, options).await.unwrap();
        let app = vnfm_api::router(state.clone());
        let client = state.bootstrap_client().unwrap();
        let mut h = Harness {
            app,
            state,
            store,
            token: String::new(),
            flaky,
            _dir: dir,
        };
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}",
            client.client_id,
            client.client_secret.expose()
        );
        let r = h
            .raw(
                Method::POST,
                "/oauth2/token",
                &[("content-type", "application/x-www-form-urlencoded")],
                form.into_bytes(),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        h.token = r.json()["access_token"].as_str().unwrap().to_owned();
        h
    }

    pub async fn raw(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Reply {
        let mut b = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        self.send(b.body(Body::from(body)).unwrap()).await
    }

    /// Runs a request built by the caller (with extensions of its own) through the router.
    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Deletes the resource at `uri` (204) and checks that it is gone (a `GET` answers 404).
    pub async fn delete_and_gone(&self, uri: &str) {
        let deleted = self.call(Method::DELETE, uri, None).await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "DELETE {uri}");
        self.call(Method::GET, uri, None).await.problem(404);
    }

    /// An authenticated request; `Version: 2.0.0` on v2 paths.
    pub async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        let auth = format!("Bearer {}", self.token);
        let mut headers = vec![("authorization", auth.as_str())];
        if uri.contains("/v2/") {
            headers.push(("version", "2.0.0"));
        }
        let bytes = match &body {
            Some(v) => {
                let ct = if method == Method::PATCH {
                    "application/merge-patch+json"
                } else {
                    "application/json"
                };
                headers.push(("content-type", ct));
                serde_json::to_vec(v).unwrap()
            }
            None => Vec::new(),
        };
        self.raw(method, uri, &headers, bytes).await
    }

    pub async fn onboard(&self, content: Vec<u8>) -> (String, Value) {
        let r = self
            .call(
                Method::POST,
                "/vnfpkgm/v2/vnf_packages",
                Some(json!({"userDefinedData": {"k": "v"}})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
        let id = r.json()["id"].as_str().unwrap().to_owned();
        assert!(
            r.header("location")
                .unwrap()
                .ends_with(&format!("/vnfpkgm/v2/vnf_packages/{id}"))
        );
        assert_eq!(r.json()["onboardingState"], "CREATED");
        let auth = format!("Bearer {}", self.token);
        let r = self
            .raw(
                Method::PUT,
                &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
                &[
                    ("authorization", &auth),
                    ("version", "2.0.0"),
                    ("content-type", "application/zip"),
                ],
                content,
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::ACCEPTED,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        for _ in 0..200 {
            let info = self
                .call(
                    Method::GET,
                    &format!("/vnfpkgm/v2/vnf_packages/{id}?all_fields"),
                    None,
                )
                .await
                .json();
            if info["onboardingState"] != "PROCESSING" {
                return (id, info);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("package {id} never left PROCESSING");
    }

    pub async fn create_instance(&self) -> String {
        let r = self
            .call(
                Method::POST,
                "/vnflcm/v2/vnf_instances",
                Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "demo"})),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()["id"].as_str().unwrap().to_owned()
    }

    /// The occurrence a request answered `202` (checked) started, once it has settled.
    pub async fn accepted_op(&self, r: &Reply) -> Value {
        assert_eq!(
            r.status.as_u16(),
            202,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        self.wait_op(r.header("location").expect("a Location"))
            .await
    }

    pub async fn wait_op(&self, location: &str) -> Value {
        let path = &location[location.find("/vnflcm").unwrap()..];
        for _ in 0..500 {
            let occ = self.call(Method::GET, path, None).await.json();
            let state = occ["operationState"].as_str().unwrap_or("").to_owned();
            if !["STARTING", "PROCESSING", "ROLLING_BACK"].contains(&state.as_str()) {
                return occ;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("operation {location} never came to rest");
    }

    pub async fn task(&self, instance: &str, task: &str, body: Value) -> Value {
        let r = self
            .call(
                Method::POST,
                &format!("/vnflcm/v2/vnf_instances/{instance}/{task}"),
                Some(body),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::ACCEPTED,
            "{task}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let location = r.header("location").unwrap().to_owned();
        assert!(
            location.contains("/vnflcm/v2/vnf_lcm_op_occs/"),
            "{location}"
        );
        self.wait_op(&location).await
    }
}

/// The `package.hook-not-runnable` warnings of a package's onboarding.
pub fn hook_warnings(pkg: &Value) -> Vec<String> {
    pkg["onboardingWarnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("package.hook-not-runnable"))
        .map(str::to_owned)
        .collect()
}

/// Collects every event field logged while it is the default subscriber
/// (`tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()))`).
#[derive(Clone, Default)]
pub struct LogCapture(pub std::sync::Arc<std::sync::Mutex<String>>);

impl LogCapture {
    /// The capture installed as the process's global subscriber, once: a test that reads
    /// what the server logs from any thread uses it and looks for its own unique values
    /// (a scoped subscriber misses events of callsites whose interest another test's thread
    /// cached first).
    pub fn global() -> LogCapture {
        static GLOBAL: std::sync::OnceLock<LogCapture> = std::sync::OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                use tracing_subscriber::layer::SubscriberExt;
                let capture = LogCapture::default();
                tracing::subscriber::set_global_default(
                    tracing_subscriber::registry().with(capture.clone()),
                )
                .expect("no other global subscriber in the API tests");
                capture
            })
            .clone()
    }

    /// Everything logged so far, one event a line.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

struct LogFields<'a>(&'a mut String);

impl tracing::field::Visit for LogFields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for LogCapture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = self.0.lock().unwrap();
        text.push('\n');
        event.record(&mut LogFields(&mut text));
    }
}
