//! The real control plane the tests run against: the cluster of `KUBECONFIG`'s current context
//! (`scripts/test-env/kubernetes.sh start` prints one: kube-apiserver, controller-manager and
//! scheduler with KWOK's simulated nodes). A test that needs it says
//! `#[vnfm_test_env::needs(kubeconfig)]`, and one that needs KWOK's simulated pod behaviours
//! (a readiness delay, pods that never become Ready, crash-loop or fail to pull their image,
//! the audit log, the namespace-scoped token) `needs(kwok)`: built ignored with the reason
//! when they are not there.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use base64::Engine;
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use vnfm_driver_api::ResolvedVim;
use vnfm_infra_kubernetes::access::ClusterAccess;
use vnfm_infra_kubernetes::cluster::Cluster;

/// The control plane of `KUBECONFIG`, with the test environment's simulated pod behaviours.
pub struct Kube {
    /// The VIM connection of the kubeconfig's current context.
    pub vim: ResolvedVim,
    /// Its `VimConnectionInfo` as JSON.
    pub vim_info: Value,
    /// The driver's own client, for the tests' reads.
    pub cluster: Cluster,
}

/// The label that keeps a simulated pod from ever becoming Ready (it runs).
pub const NEVER_READY: &str = "vnfm.test/never-ready";
/// The label that makes a simulated pod's containers crash over and over.
pub const CRASH_LOOP: &str = "vnfm.test/crash-loop";

impl Kube {
    /// Connects to the cluster of `KUBECONFIG`; panics with what to do when there is none.
    pub fn get() -> Kube {
        super::crypto();
        let vim_info = vim_from_kubeconfig().unwrap_or_else(|e| {
            panic!(
                "{e}: set KUBECONFIG to a cluster's kubeconfig, e.g. eval \"$(VNFM_KUBE_DIR=$(mktemp -d) scripts/test-env/kubernetes.sh start)\""
            )
        });
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(vim_info.clone()).expect("VIM connection"),
        );
        let cluster = ClusterAccess::from_vim(&vim)
            .and_then(Cluster::connect)
            .expect("a client for KUBECONFIG's cluster");
        Kube {
            vim,
            vim_info,
            cluster,
        }
    }

    /// The VIM connection with `accessInfo` `access` instead of the kubeconfig's.
    pub fn vim_with_access(&self, access: Value) -> ResolvedVim {
        let mut info = self.vim_info.clone();
        info["accessInfo"] = access;
        ResolvedVim::new(
            "vim1",
            serde_json::from_value(info).expect("VIM connection"),
        )
    }

    /// Creates `object` as another client would (pre-existing cluster state).
    pub async fn create(&self, object: Value) {
        let api_version = object["apiVersion"].as_str().expect("apiVersion");
        let kind = object["kind"].as_str().expect("kind");
        let k = self
            .cluster
            .kind(api_version, kind)
            .await
            .expect("discovery")
            .unwrap_or_else(|| panic!("the cluster serves no {api_version} {kind}"));
        let ns = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let o: kube::api::DynamicObject = serde_json::from_value(object.clone()).expect("object");
        self.cluster
            .api(&k, ns)
            .create(&kube::api::PostParams::default(), &o)
            .await
            .unwrap_or_else(|e| panic!("creating {kind}: {e}"));
    }

    /// Sets label `key=value` on pod `namespace`/`name` (a simulated pod's behaviour follows
    /// its labels, e.g. [`CRASH_LOOP`]).
    pub async fn label_pod(&self, namespace: &str, name: &str, key: &str, value: &str) {
        let k = self.cluster.pod_kind().await.expect("discovery");
        self.cluster
            .api(&k, Some(namespace))
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"labels": {key: value}}})),
            )
            .await
            .unwrap_or_else(|e| panic!("labelling pod {name}: {e}"));
    }

    /// How long a simulated pod takes from running to Ready.
    pub fn ready_delay() -> Duration {
        Duration::from_millis(env_number("VNFM_TEST_KUBE_READY_DELAY_MS"))
    }

    /// A container image whose simulated pods stay in `ImagePullBackOff`.
    pub fn failing_image() -> String {
        std::env::var("VNFM_TEST_KUBE_FAILING_IMAGE")
            .expect("VNFM_TEST_KUBE_FAILING_IMAGE (scripts/test-env/kubernetes.sh prints it)")
    }

    /// A namespace name no other test (of this or another run) uses: `prefix-<pid>-<n>`.
    pub fn namespace(prefix: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        format!(
            "{prefix}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The live object `kind` at `api_version` named `name` (in `namespace`), as JSON.
    pub async fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let k = self
            .cluster
            .kind(api_version, kind)
            .await
            .expect("discovery")
            .unwrap_or_else(|| panic!("the cluster serves no {api_version} {kind}"));
        self.cluster
            .api(&k, namespace.filter(|_| k.namespaced))
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("reading {kind} {name}: {e}"))
            .map(|o| serde_json::to_value(o).expect("json"))
    }

    /// The live objects of `kind` in `namespace` (all for `None`) matching label selector
    /// `labels`.
    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &str,
    ) -> Vec<Value> {
        let k = self
            .cluster
            .kind(api_version, kind)
            .await
            .expect("discovery")
            .unwrap_or_else(|| panic!("the cluster serves no {api_version} {kind}"));
        self.cluster
            .list(&k, namespace, labels)
            .await
            .unwrap_or_else(|e| panic!("listing {kind}: {e}"))
            .into_iter()
            .map(|o| serde_json::to_value(o).expect("json"))
            .collect()
    }

    /// Every object of the cluster (any kind that can be listed, all namespaces) carrying label
    /// `key=value`, as `Kind/namespace/name` (`Kind/name` when cluster-scoped), sorted.
    pub async fn labelled(&self, key: &str, value: &str) -> Vec<String> {
        let client = self.cluster.client().clone();
        let discovery = kube::discovery::Discovery::new(client.clone())
            .run()
            .await
            .expect("discovery");
        let selector = format!("{key}={value}");
        let mut out = Vec::new();
        for group in discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                if !caps.supports_operation(kube::discovery::verbs::LIST) {
                    continue;
                }
                let api: kube::Api<kube::api::DynamicObject> =
                    kube::Api::all_with(client.clone(), &ar);
                let Ok(list) = api
                    .list(&kube::api::ListParams::default().labels(&selector))
                    .await
                else {
                    continue;
                };
                for o in list.items {
                    let name = o.metadata.name.unwrap_or_default();
                    out.push(match o.metadata.namespace {
                        Some(ns) => format!("{}/{ns}/{name}", ar.kind),
                        None => format!("{}/{name}", ar.kind),
                    });
                }
            }
        }
        out.sort();
        out
    }

    /// The names of the pods in `namespace`.
    pub async fn pod_names(&self, namespace: &str) -> Vec<String> {
        self.list("v1", "Pod", Some(namespace), "")
            .await
            .iter()
            .filter_map(|p| p.pointer("/metadata/name")?.as_str().map(String::from))
            .collect()
    }

    /// Deletes what a test may have left: namespaces and cluster-scoped objects
    /// (`(api_version, kind, name)`), ignoring what is already gone. Waits (up to a minute)
    /// for the cluster-scoped objects to be gone, as the next test may use their names; not
    /// for the namespaces, whose names are the test's own.
    pub async fn clean_up(&self, namespaces: &[&str], cluster_scoped: &[(&str, &str, &str)]) {
        let mut all: Vec<(&str, &str, &str)> =
            namespaces.iter().map(|n| ("v1", "Namespace", *n)).collect();
        all.extend_from_slice(cluster_scoped);
        for (api_version, kind, name) in all {
            let Ok(Some(k)) = self.cluster.kind(api_version, kind).await else {
                continue;
            };
            let params = kube::api::DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            };
            let api = self.cluster.api(&k, None);
            if let Err(e) = api.delete(name, &params).await
                && !matches!(&e, kube::Error::Api(s) if s.code == 404)
            {
                eprintln!("cleaning up {kind} {name}: {e}");
            }
            if kind != "Namespace" {
                // A finalizer (a test's own on a held volume, a protection whose holder goes
                // with a namespace being emptied) would keep the object; once it is being
                // deleted no controller adds one again.
                let _ = api
                    .patch(
                        name,
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await;
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for (api_version, kind, name) in cluster_scoped {
            let Ok(Some(k)) = self.cluster.kind(api_version, kind).await else {
                continue;
            };
            while matches!(self.cluster.api(&k, None).get_opt(name).await, Ok(Some(_)))
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Runs `body` with the cluster and a namespace name of its own (`prefix-<pid>-<n>`), then
/// removes that namespace and the cluster-scoped objects `cluster_scoped` (`apiVersion/Kind/name`
/// with `$NS` standing for the namespace name), whether it passed or not.
pub async fn in_namespace<F, Fut>(prefix: &str, cluster_scoped: &[&str], body: F)
where
    F: FnOnce(Kube, String) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let kube = Kube::get();
    let ns = Kube::namespace(prefix);
    let objects: Vec<(String, String, String)> = cluster_scoped
        .iter()
        .map(|o| {
            let o = o.replace("$NS", &ns);
            let (rest, name) = o.rsplit_once('/').expect("apiVersion/Kind/name");
            let (api_version, kind) = rest.rsplit_once('/').expect("apiVersion/Kind/name");
            (api_version.to_string(), kind.to_string(), name.to_string())
        })
        .collect();
    let objects: Vec<(&str, &str, &str)> = objects
        .iter()
        .map(|(a, k, n)| (a.as_str(), k.as_str(), n.as_str()))
        .collect();
    with_clean_up(&kube, &[&ns], &objects, body(Kube::get(), ns.clone())).await;
}

/// Runs `test` (a future that panics when it fails), then removes `namespaces` and
/// `cluster_scoped` objects whether it passed or not, and passes its panic on.
pub async fn with_clean_up<F>(
    kube: &Kube,
    namespaces: &[&str],
    cluster_scoped: &[(&str, &str, &str)],
    test: F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let run = tokio::spawn(test).await;
    kube.clean_up(namespaces, cluster_scoped).await;
    if let Err(e) = run {
        std::panic::resume_unwind(e.into_panic());
    }
}

fn env_number(name: &str) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} (scripts/test-env/kubernetes.sh prints it)"))
}

/// The VIM connection of the kubeconfig's current context: a bearer token or basic auth (the
/// VIM access info the driver takes); its CA from `certificate-authority-data` or the
/// `certificate-authority` file.
pub fn vim_from_kubeconfig() -> Result<Value, String> {
    let path = std::env::var("KUBECONFIG").map_err(|_| "KUBECONFIG is not set".to_string())?;
    let cfg = kube::config::Kubeconfig::read_from(&path).map_err(|e| format!("{path}: {e}"))?;
    let ctx_name = cfg
        .current_context
        .clone()
        .ok_or(format!("{path} has no current context"))?;
    let missing = |what: &str| format!("{path}: {what} of context {ctx_name} not found");
    let ctx = cfg
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| missing("the context"))?;
    let cluster = cfg
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| missing("the cluster"))?;
    let user = cfg
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == ctx.user.as_ref())
        .and_then(|a| a.auth_info.clone())
        .ok_or_else(|| missing("the user"))?;
    let mut iface = json!({"endpoint": cluster.server.ok_or_else(|| missing("the server"))?});
    if let Some(ca) = cluster.certificate_authority_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca)
            .map_err(|e| format!("{path}: certificate-authority-data: {e}"))?;
        iface["ssl_ca_cert"] = json!(String::from_utf8_lossy(&pem));
    } else if let Some(file) = cluster.certificate_authority {
        // A relative path is relative to the kubeconfig's directory, as kubectl reads it.
        let file = std::path::Path::new(&path)
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(file);
        let pem = std::fs::read_to_string(&file)
            .map_err(|e| format!("certificate-authority {}: {e}", file.display()))?;
        iface["ssl_ca_cert"] = json!(pem);
    } else if cluster.insecure_skip_tls_verify == Some(true) {
        iface["insecureSkipTlsVerify"] = json!(true);
    }
    let access = match (&user.token, &user.username, &user.password) {
        (Some(t), _, _) => json!({"bearer_token": t.expose_secret()}),
        (None, Some(u), Some(p)) => json!({"username": u, "password": p.expose_secret()}),
        _ => {
            return Err(format!(
                "{path}: context {ctx_name} authenticates with neither a token nor basic auth"
            ));
        }
    };
    Ok(json!({
        "vimId": "vim-k8s", "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": iface, "accessInfo": access
    }))
}

/// One request the API server answered, from its audit log.
#[derive(Debug, Clone)]
pub struct Request {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ...
    pub verb: String,
    /// `true` for a server-side apply (a patch with the field manager `vnfm`, forced).
    pub apply: bool,
    /// The field manager the request named, if any.
    pub field_manager: Option<String>,
    /// The resource's plural (`configmaps`) and, for a subresource, `/` and its name.
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub code: u16,
}

impl Kube {
    /// The requests the API server answered whose object is in `namespace` or is `namespace`
    /// itself, oldest first, read from the audit log the test environment keeps
    /// (`VNFM_TEST_KUBE_AUDIT_LOG`; the log is written before each answer is sent).
    pub fn requests(namespace: &str) -> Vec<Request> {
        let path = std::env::var("VNFM_TEST_KUBE_AUDIT_LOG")
            .expect("VNFM_TEST_KUBE_AUDIT_LOG (scripts/test-env/kubernetes.sh prints it)");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| {
                let r = &e["objectRef"];
                r["namespace"] == namespace
                    || (r["resource"] == "namespaces" && r["name"] == namespace)
            })
            .map(|e| {
                let r = &e["objectRef"];
                let uri = e["requestURI"].as_str().unwrap_or("");
                let field_manager = uri
                    .split(['?', '&'])
                    .find_map(|q| q.strip_prefix("fieldManager="))
                    .map(String::from);
                let verb = e["verb"].as_str().unwrap_or("").to_string();
                let resource = match r["subresource"].as_str() {
                    Some(sub) => format!("{}/{sub}", r["resource"].as_str().unwrap_or("")),
                    None => r["resource"].as_str().unwrap_or("").to_string(),
                };
                Request {
                    apply: verb == "patch" && uri.contains("force=true") && field_manager.is_some(),
                    verb,
                    field_manager,
                    resource,
                    namespace: r["namespace"].as_str().map(String::from),
                    name: r["name"].as_str().map(String::from),
                    code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
                }
            })
            .collect()
    }

    /// How many requests the audit log holds now: [`Kube::log_since`] reads what comes after.
    pub fn audit_mark() -> usize {
        Self::audit_lines().len()
    }

    fn audit_lines() -> Vec<Value> {
        let path = std::env::var("VNFM_TEST_KUBE_AUDIT_LOG")
            .expect("VNFM_TEST_KUBE_AUDIT_LOG (scripts/test-env/kubernetes.sh prints it)");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// The requests answered since `mark` ([`Kube::audit_mark`]) about objects in `namespace`,
    /// the namespace itself, or the cluster-scoped objects named `names`, in the emulator's
    /// request-log form (`apply` for a server-side apply), so that the same assertions read
    /// either.
    pub async fn log_since(
        &self,
        mark: usize,
        namespace: &str,
        names: &[&str],
    ) -> Vec<vnfm_kube_emulator::LogEntry> {
        let client = self.cluster.client().clone();
        let discovery = kube::discovery::Discovery::new(client)
            .run()
            .await
            .expect("discovery");
        let mut kinds = std::collections::HashMap::new();
        for group in discovery.groups() {
            for (ar, _) in group.recommended_resources() {
                kinds.insert(
                    (ar.group.clone(), ar.plural.clone()),
                    (ar.api_version.clone(), ar.kind.clone()),
                );
            }
        }
        Self::audit_lines()
            .into_iter()
            .skip(mark)
            .map(|mut e| {
                // The audit log gives a Namespace its own name as namespace.
                if e["objectRef"]["resource"] == "namespaces" {
                    e["objectRef"]["namespace"] = Value::Null;
                }
                e
            })
            .filter(|e| {
                let r = &e["objectRef"];
                let name = r["name"].as_str().unwrap_or("");
                r["namespace"] == namespace
                    || (r["resource"] == "namespaces" && name == namespace)
                    || (r["namespace"].is_null() && names.contains(&name))
                    || (r["namespace"].is_null()
                        && r["resource"]
                            .as_str()
                            .is_some_and(|r| r.ends_with("reviews")))
            })
            .filter_map(|e| {
                let r = &e["objectRef"];
                let group = r["apiGroup"].as_str().unwrap_or("").to_string();
                let plural = r["resource"].as_str()?.to_string();
                let (api_version, kind) = kinds.get(&(group, plural)).cloned()?;
                let uri = e["requestURI"].as_str().unwrap_or("");
                let field_manager = uri
                    .split(['?', '&'])
                    .find_map(|q| q.strip_prefix("fieldManager="))
                    .map(String::from);
                let mut verb = e["verb"].as_str().unwrap_or("").to_string();
                if verb == "patch" && uri.contains("force=true") && field_manager.is_some() {
                    verb = "apply".into();
                }
                Some(vnfm_kube_emulator::LogEntry {
                    method: String::new(),
                    verb,
                    path: uri.split('?').next().unwrap_or("").to_string(),
                    api_version,
                    kind,
                    namespace: r["namespace"].as_str().map(String::from),
                    name: r["name"].as_str().map(String::from),
                    subresource: r["subresource"].as_str().map(String::from),
                    field_manager,
                    code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
                })
            })
            .collect()
    }

    /// The successful writes (create, update, patch, delete) among [`Kube::requests`], as
    /// `verb resource name`.
    pub fn writes(namespace: &str) -> Vec<String> {
        Self::requests(namespace)
            .into_iter()
            .filter(|r| {
                matches!(r.verb.as_str(), "create" | "update" | "patch" | "delete") && r.code < 300
            })
            .map(|r| format!("{} {} {}", r.verb, r.resource, r.name.unwrap_or_default()))
            .collect()
    }
}

/// Held by a test while it uses the fixed cluster-scoped names of Tacker's CNF samples
/// (Namespace `curry`, StorageClass `curry-sc-local`, ...): one such test at a time.
pub async fn corpus_names() -> tokio::sync::MutexGuard<'static, ()> {
    static NAMES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    NAMES.lock().await
}

/// The CRD of NetworkAttachmentDefinitions (Multus's kind), with a schema that keeps every
/// field as a real server requires.
pub const NAD_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: network-attachment-definitions.k8s.cni.cncf.io}
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names: {kind: NetworkAttachmentDefinition, plural: network-attachment-definitions}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
";

/// The name of [`NAD_CRD`], a cluster-scoped object to clean up.
pub const NAD_CRD_NAME: &str = "network-attachment-definitions.k8s.cni.cncf.io";

/// Held by a test while it uses [`NAD_CRD`] and the namespace `shared-net` of the shared
/// networks: one such test at a time.
pub async fn shared_network_names() -> tokio::sync::MutexGuard<'static, ()> {
    static NAMES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    NAMES.lock().await
}

impl Kube {
    /// Creates [`NAD_CRD`] and the namespace `shared-net` (once a previous one is gone), and waits (a minute at most) until
    /// the cluster has established the CRD.
    pub async fn create_shared_network_kind(&self) {
        self.create(serde_saphyr::from_str::<Value>(NAD_CRD).expect("crd"))
            .await;
        // The previous test's `shared-net` may still be being emptied by the namespace
        // controller ([`Kube::clean_up`] does not wait for namespaces).
        let until = tokio::time::Instant::now() + Duration::from_secs(60);
        while self
            .object("v1", "Namespace", None, "shared-net")
            .await
            .is_some()
        {
            assert!(
                tokio::time::Instant::now() < until,
                "namespace shared-net is still there a minute after it was deleted"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.create(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shared-net"}}),
        )
        .await;
        let until = tokio::time::Instant::now() + Duration::from_secs(60);
        while !self
            .object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                NAD_CRD_NAME,
            )
            .await
            .is_some_and(|c| {
                c["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            })
        {
            assert!(
                tokio::time::Instant::now() < until,
                "the CRD was never established"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Every change a watch saw, in order: `("ADDED" | "MODIFIED" | "DELETED", object)`. A watch
/// reports what the API server stored, in the order it stored it, so a test reads what
/// happened before what from it (never from the clock).
pub struct Recorder {
    events: std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    /// Watches `kind` at `api_version` in `namespace` (all for `None`) from now on; returns
    /// once the watch has listed what exists.
    pub async fn start(
        kube: &Kube,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Recorder {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let k = kube
            .cluster
            .kind(api_version, kind)
            .await
            .expect("discovery")
            .unwrap_or_else(|| panic!("the cluster serves no {api_version} {kind}"));
        let api = kube.cluster.api(&k, namespace);
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
        let sink = events.clone();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed_tx);
            let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(e) = stream.next().await {
                let (what, o) = match e {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => ("APPLIED", o),
                    Ok(watcher::Event::Delete(o)) => ("DELETED", o),
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = listed.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    Ok(watcher::Event::Init) | Err(_) => continue,
                };
                let o = serde_json::to_value(o).expect("json");
                sink.lock().expect("events").push((what.to_string(), o));
            }
        });
        listed_rx.await.expect("the watch listed the objects");
        Recorder { events, task }
    }

    /// What the watch saw so far.
    pub fn events(&self) -> Vec<(String, Value)> {
        self.events.lock().expect("events").clone()
    }

    /// Waits until `done` holds for what the watch saw (at most a minute: a liveness bound,
    /// not a measurement).
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[(String, Value)]) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !done(&self.events()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the watch never saw {what}: {:#?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The distinct `metadata.uid`s seen, in order of appearance, with their names.
    pub fn uids(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (_, o) in self.events() {
            let uid = o["metadata"]["uid"].as_str().unwrap_or("").to_string();
            if !out.iter().any(|(u, _)| *u == uid) {
                out.push((
                    uid,
                    o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        out
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Panics unless every pod of `namespace` that is not being deleted runs and is Ready: a step
/// that completed before its pods were Ready fails here (simulated pods become Ready only
/// `VNFM_TEST_KUBE_READY_DELAY_MS` after they run).
pub async fn assert_pods_ready(kube: &Kube, namespace: &str, what: &str) {
    let pods = kube.list("v1", "Pod", Some(namespace), "").await;
    // A Job's pods succeed and are no longer Ready.
    for p in pods.iter().filter(|p| {
        p["metadata"].get("deletionTimestamp").is_none() && p["status"]["phase"] != "Succeeded"
    }) {
        let ready = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(
            ready,
            "{what} completed while pod {} was not Ready: {:#}",
            p["metadata"]["name"], p["status"]
        );
    }
}
