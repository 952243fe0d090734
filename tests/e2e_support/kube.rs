//! The real Kubernetes control plane of `scripts/test-env/kubernetes.sh` (kube-apiserver,
//! controller-manager and scheduler, KWOK's simulated nodes and pods) as the end-to-end tests
//! see it: the cluster VNF-A's install script reports (endpoint, CA, a `system:masters`
//! token), and what it holds, read with plain HTTP requests behind the VNFM's back.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

/// The resources the tests look for an instance's objects in, as `(API path, plural, Kind)`.
const NAMESPACED: &[(&str, &str, &str)] = &[
    ("/api/v1", "configmaps", "ConfigMap"),
    ("/api/v1", "services", "Service"),
    ("/api/v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    ("/api/v1", "pods", "Pod"),
    ("/apis/apps/v1", "deployments", "Deployment"),
    ("/apis/apps/v1", "statefulsets", "StatefulSet"),
    ("/apis/apps/v1", "replicasets", "ReplicaSet"),
];

/// The control plane's API server and the administrator's credentials.
pub struct Kube {
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// The PEM CA certificate the server's certificate chains to.
    pub ca_pem: String,
    /// A bearer token of a user in `system:masters`.
    pub token: String,
    http: reqwest::Client,
}

impl Kube {
    /// The control plane of the `VNFM_TEST_KUBE_*` variables, for tests that carry
    /// `#[vnfm_test_env::needs(kubernetes)]`.
    pub fn from_env() -> Kube {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let read = |var: &str| {
            let path = vnfm_test_env::var(var);
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{var} ({path}): {e}"))
        };
        let server = vnfm_test_env::var("VNFM_TEST_KUBE_SERVER");
        let ca_pem = read("VNFM_TEST_KUBE_CA_FILE");
        let token = read("VNFM_TEST_KUBE_TOKEN_FILE").trim().to_string();
        let certs = reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).unwrap();
        let http = reqwest::Client::builder()
            .tls_certs_only(certs)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Kube {
            server,
            ca_pem,
            token,
            http,
        }
    }

    /// `sha256:<hex>` of the CA's public key, as kubeadm reports it
    /// (`--discovery-token-ca-cert-hash`).
    pub fn ca_cert_hash(&self) -> String {
        let ca = openssl::x509::X509::from_pem(self.ca_pem.as_bytes()).unwrap();
        let der = ca.public_key().unwrap().public_key_to_der().unwrap();
        format!("sha256:{}", super::sha256(&der))
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.server))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.server));
        let status = resp.status().as_u16();
        let body = resp.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// The object at `path` (`/api/v1/namespaces/x`, ...), `None` when there is none.
    pub async fn get(&self, path: &str) -> Option<Value> {
        match self.call(Method::GET, path, None).await {
            (200, body) => Some(body),
            (404, _) => None,
            (status, body) => panic!("GET {path}: {status} {body}"),
        }
    }

    /// Whether namespace `ns` exists (also while it is being deleted).
    pub async fn namespace_exists(&self, ns: &str) -> bool {
        self.get(&format!("/api/v1/namespaces/{ns}"))
            .await
            .is_some()
    }

    /// `Kind/name` of the objects in `ns` labelled `label=value` (`None` when the
    /// namespace is gone).
    pub async fn labelled(&self, ns: &str, label: &str, value: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (api, plural, kind) in NAMESPACED {
            let path = format!("{api}/namespaces/{ns}/{plural}?labelSelector={label}%3D{value}");
            let list = self.get(&path).await.unwrap_or_default();
            for item in list["items"].as_array().into_iter().flatten() {
                // Items of a real server's list carry no `kind`: the resource says it.
                let name = item["metadata"]["name"].as_str().unwrap_or_default();
                out.insert(format!("{kind}/{name}"));
            }
        }
        out
    }

    /// The Deployment `ns`/`name`, `None` when there is none.
    pub async fn deployment(&self, ns: &str, name: &str) -> Option<Value> {
        self.get(&format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"))
            .await
    }

    /// Creates a volume bound in advance to claim `ns`/`claim` (the cluster has no
    /// provisioner; a pre-bound volume goes to no other test's claim).
    pub async fn create_volume_for(&self, name: &str, ns: &str, claim: &str) {
        let (status, body) = self
            .call(
                Method::POST,
                "/api/v1/persistentvolumes",
                Some(&json!({
                    "apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": name},
                    "spec": {
                        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                        "hostPath": {"path": format!("/tmp/{name}")},
                        "claimRef": {"namespace": ns, "name": claim}
                    }
                })),
            )
            .await;
        assert_eq!(status, 201, "creating PersistentVolume {name}: {body}");
    }

    /// Deletes the object at `path` (gone already is fine), without waiting.
    pub async fn delete(&self, path: &str) {
        let (status, body) = self
            .call(
                Method::DELETE,
                path,
                Some(&json!({"kind": "DeleteOptions", "apiVersion": "v1",
                    "gracePeriodSeconds": 0})),
            )
            .await;
        if !matches!(status, 200 | 202 | 404) {
            eprintln!("cleaning up {path}: {status} {body}");
        }
    }

    /// Merges `patch` into the object at `path`.
    pub async fn merge_patch(&self, path: &str, patch: &Value) {
        let resp = self
            .http
            .patch(format!("{}{path}", self.server))
            .bearer_auth(&self.token)
            .header("Content-Type", "application/merge-patch+json")
            .body(patch.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("PATCH {path}: {e}"));
        let status = resp.status().as_u16();
        assert_eq!(
            status,
            200,
            "PATCH {path}: {}",
            resp.text().await.unwrap_or_default()
        );
    }

    /// The pods in `ns`.
    pub async fn pods(&self, ns: &str) -> Vec<Value> {
        let list = self
            .get(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap_or_default();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// How many requests the API server's audit log holds so far (`VNFM_TEST_KUBE_AUDIT_LOG`:
    /// every request but the control plane's own, written before the answer is sent).
    pub fn audit_mark(&self) -> usize {
        audit_log().lines().count()
    }

    /// The writes (`verb resource/name`) to namespace `ns` the audit log holds after `mark`.
    pub fn writes_since(&self, mark: usize, ns: &str) -> Vec<String> {
        audit_log()
            .lines()
            .skip(mark)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["objectRef"]["namespace"] == ns)
            .filter(|e| {
                matches!(
                    e["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete" | "deletecollection")
                )
            })
            .map(|e| {
                format!(
                    "{} {}/{}",
                    e["verb"].as_str().unwrap_or_default(),
                    e["objectRef"]["resource"].as_str().unwrap_or_default(),
                    e["objectRef"]["name"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }
}

fn audit_log() -> String {
    let path = std::env::var("VNFM_TEST_KUBE_AUDIT_LOG")
        .expect("VNFM_TEST_KUBE_AUDIT_LOG (scripts/test-env/kubernetes.sh prints it)");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
