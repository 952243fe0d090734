//! [`Cluster`]: the driver's only door to the API server. It resolves kinds to API resources
//! (discovery, cached per step; a kind the server's discovery does not list yet while an
//! Established CustomResourceDefinition defines it is waited for, since discovery follows the
//! Established condition a moment later), applies objects with server-side apply, creates request-like
//! objects, deletes (foreground, with a grace period) and lists by label. Every call goes
//! through kube-rs, so the same code runs against a real cluster and against the emulator.
//! Steps on the same cluster share one client and its [`Watches`]; each step notes the
//! resourceVersion of its own writes and deletes, which its waits compare the shared caches
//! against.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::discovery::Scope;
use serde_json::Value;

use crate::KubeError;
use crate::access::ClusterAccess;
use crate::error::from_kube;
use crate::plan::{INSTANCE_LABEL, Planned};
use crate::watches::Watches;

/// What a step last did to an object: `(apiVersion, kind, namespace, name)` to it.
type ObjectKey = (String, String, Option<String>, String);

/// The step's last write or delete of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Written (applied, patched): the resourceVersion the server answered with.
    At(Option<String>),
    /// Deletion asked; the object was still there at this resourceVersion. `labelled`: it
    /// carries the instance label (the shared watches see it).
    Deleting {
        /// Its resourceVersion in the delete's answer.
        version: Option<String>,
        /// It has the instance label.
        labelled: bool,
    },
    /// Deleted at once (nothing held it).
    Deleted,
}

/// How long one request to the API server may go unanswered by default
/// ([`Cluster::with_request_timeout`]). A watch is not one request: its stream lives on.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the API server's discovery may lag behind a CustomResourceDefinition that is
/// Established (the API server serves the kind; its discovery documents are rebuilt a moment
/// later) before the kind is refused as not served.
pub const DISCOVERY_LAG: Duration = Duration::from_secs(30);

/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "vnfm";

/// A resolved kind: its API resource and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct Kind {
    /// The API resource (plural, group, version).
    pub resource: ApiResource,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

/// A connection to one cluster for one driver step.
pub struct Cluster {
    client: kube::Client,
    access: ClusterAccess,
    kinds: Mutex<HashMap<(String, String), Option<Kind>>>,
    watches: Arc<Watches>,
    written: Mutex<HashMap<ObjectKey, Written>>,
    request_timeout: Duration,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("endpoint", &self.access.endpoint)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Connects (lazily: no request is made yet), with watches of its own.
    pub fn connect(access: ClusterAccess) -> Result<Cluster, KubeError> {
        let client = access.client()?;
        Ok(Cluster::with_watches(
            access,
            Arc::new(Watches::new(client)),
        ))
    }

    /// A step's connection through `watches`' client, sharing its watches.
    pub fn with_watches(access: ClusterAccess, watches: Arc<Watches>) -> Cluster {
        Cluster {
            client: watches.client().clone(),
            access,
            kinds: Mutex::new(HashMap::new()),
            watches,
            written: Mutex::new(HashMap::new()),
            request_timeout: REQUEST_TIMEOUT,
        }
    }

    /// Fails a request the API server has not answered within `timeout` (default
    /// [`REQUEST_TIMEOUT`]), naming it, instead of waiting for the step's deadline.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Cluster {
        self.request_timeout = timeout;
        self
    }

    /// Runs one request to the API server within the request budget: its own answer, or
    /// [`KubeError::Unanswered`] naming `doing`.
    async fn bounded<T>(
        &self,
        doing: &str,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<Result<T, kube::Error>, KubeError> {
        tokio::time::timeout(self.request_timeout, request)
            .await
            .map_err(|_| KubeError::Unanswered {
                endpoint: self.access.endpoint.clone(),
                vim: self.access.vim.clone(),
                doing: doing.to_string(),
                after: self.request_timeout,
            })
    }

    /// The watches shared by the steps on this cluster.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    fn key(p: &Planned) -> ObjectKey {
        (
            p.api_version().to_string(),
            p.kind().to_string(),
            p.namespace().map(String::from),
            p.name().to_string(),
        )
    }

    fn note(&self, p: &Planned, w: Written) {
        self.note_key(Cluster::key(p), w);
    }

    fn note_key(&self, key: ObjectKey, w: Written) {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, w);
    }

    fn note_write(&self, p: &Planned, o: &DynamicObject) {
        self.note(p, Written::At(o.metadata.resource_version.clone()));
    }

    /// What a delete's answer says: the object still there at a version, or gone.
    fn deleting(still: Option<DynamicObject>) -> Written {
        still.map_or(Written::Deleted, |o| Written::Deleting {
            version: o.metadata.resource_version.clone(),
            labelled: o
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(INSTANCE_LABEL)),
        })
    }

    /// What this step last did to `p`, if anything.
    pub fn written(&self, p: &Planned) -> Option<Written> {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&Cluster::key(p))
            .cloned()
    }

    /// The access this cluster was reached with.
    pub fn access(&self) -> &ClusterAccess {
        &self.access
    }

    /// The kube-rs client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    pub(crate) fn err(&self, e: kube::Error, doing: &str) -> KubeError {
        from_kube(e, doing, &self.access.endpoint, &self.access.vim)
    }

    /// Resolves `kind` at `api_version`; `None` when the cluster does not serve it. A kind that
    /// discovery does not list while an Established CustomResourceDefinition defines it is
    /// discovered again until it is listed (within [`DISCOVERY_LAG`]): a CRD established
    /// before the call is found by it.
    pub async fn kind(&self, api_version: &str, kind: &str) -> Result<Option<Kind>, KubeError> {
        let key = (api_version.to_string(), kind.to_string());
        let cached = self
            .kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned()
            .flatten();
        // Only positive answers are reused: a kind may appear when its CRD is established.
        if let Some(k) = cached {
            return Ok(Some(k));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let mut found = self.discover(&gvk).await?;
        if found.is_none() && !group.is_empty() && self.established_crd_defines(&gvk).await? {
            let until = tokio::time::Instant::now() + DISCOVERY_LAG;
            let mut pause = Duration::from_millis(50);
            while found.is_none() && tokio::time::Instant::now() < until {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
                found = self.discover(&gvk).await?;
            }
            if found.is_none() {
                tracing::warn!(
                    vim = %self.access.vim, api_version, kind, lag = ?DISCOVERY_LAG,
                    "a CustomResourceDefinition defining the kind is Established, but the API server's discovery has not listed it"
                );
            }
        }
        self.kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, found.clone());
        Ok(found)
    }

    /// What discovery lists now for `gvk`; `None` when it does not list it.
    async fn discover(&self, gvk: &GroupVersionKind) -> Result<Option<Kind>, KubeError> {
        let doing = format!("discovering {} {}", gvk.api_version(), gvk.kind);
        match self
            .bounded(&doing, kube::discovery::pinned_kind(&self.client, gvk))
            .await?
        {
            Ok((resource, caps)) => Ok(Some(Kind {
                resource,
                namespaced: caps.scope == Scope::Namespaced,
            })),
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.err(e, &doing)),
        }
    }

    /// Whether an Established CustomResourceDefinition, not being deleted, serves `gvk`.
    /// CRDs are named `<plural>.<group>`: their names narrow the reads down to the group's.
    /// A user who may not read CRDs (a namespace-scoped token) learns nothing from them.
    async fn established_crd_defines(&self, gvk: &GroupVersionKind) -> Result<bool, KubeError> {
        let crds: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        let doing = format!("listing the CustomResourceDefinitions of {}", gvk.group);
        let names: Vec<String> = match self
            .bounded(&doing, crds.list_metadata(&ListParams::default()))
            .await?
        {
            Ok(list) => list
                .items
                .into_iter()
                .filter_map(|m| m.metadata.name)
                .filter(|n| {
                    n.strip_suffix(gvk.group.as_str())
                        .and_then(|p| p.strip_suffix('.'))
                        .is_some_and(|plural| !plural.is_empty())
                })
                .collect(),
            Err(kube::Error::Api(_)) => return Ok(false),
            Err(e) => return Err(self.err(e, &doing)),
        };
        for name in names {
            let doing = format!("reading CustomResourceDefinition {name}");
            match self.bounded(&doing, crds.get_opt(&name)).await? {
                Ok(Some(crd))
                    if crd_serves(&serde_json::to_value(&crd).unwrap_or_default(), gvk) =>
                {
                    return Ok(true);
                }
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(self.err(e, &doing)),
            }
        }
        Ok(false)
    }

    /// Forgets what discovery said (after CRDs are established).
    pub fn forget_kinds(&self) {
        self.kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, v| v.is_some());
    }

    /// The API for `kind` in `namespace` (all namespaces for `None` on a namespaced kind).
    pub fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        match (kind.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            _ => Api::all_with(self.client.clone(), &kind.resource),
        }
    }

    /// The kind of a planned object; an error naming the object when the cluster does not
    /// serve it.
    pub async fn kind_of(&self, p: &Planned) -> Result<Kind, KubeError> {
        self.kind(p.api_version(), p.kind())
            .await?
            .ok_or_else(|| KubeError::UnknownKind {
                api_version: p.api_version().to_string(),
                kind: p.kind().to_string(),
                object: format!("{} (from {})", p.display(), p.source),
            })
    }

    /// The live object of `p`, if it exists.
    pub async fn get(&self, p: &Planned) -> Result<Option<DynamicObject>, KubeError> {
        let kind = self.kind_of(p).await?;
        let doing = format!("reading {}", p.display());
        self.bounded(&doing, self.api(&kind, p.namespace()).get_opt(p.name()))
            .await?
            .map_err(|e| self.err(e, &doing))
    }

    /// Server-side apply of `p` (forced: the VNFM is the source of truth for the fields it
    /// sets).
    pub async fn apply(&self, p: &Planned) -> Result<DynamicObject, KubeError> {
        let kind = self.kind_of(p).await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let doing = format!("applying {} (from {})", p.display(), p.source);
        let api = self.api(&kind, p.namespace());
        let o = self
            .bounded(
                &doing,
                api.patch(p.name(), &params, &Patch::Apply(&p.object)),
            )
            .await?
            .map_err(|e| self.err(e, &doing))?;
        self.note_write(p, &o);
        Ok(o)
    }

    /// Server-side apply with a field manager of its own (shared objects, one manager per
    /// user).
    pub async fn apply_as(
        &self,
        p: &Planned,
        manager: &str,
        object: &Value,
    ) -> Result<DynamicObject, KubeError> {
        let kind = self.kind_of(p).await?;
        let params = PatchParams::apply(manager);
        let doing = format!("applying {}", p.display());
        let api = self.api(&kind, p.namespace());
        let o = self
            .bounded(&doing, api.patch(p.name(), &params, &Patch::Apply(object)))
            .await?
            .map_err(|e| self.err(e, &doing))?;
        self.note_write(p, &o);
        Ok(o)
    }

    /// A JSON merge patch.
    pub async fn merge(&self, p: &Planned, patch: &Value) -> Result<DynamicObject, KubeError> {
        let kind = self.kind_of(p).await?;
        let doing = format!("updating {}", p.display());
        let api = self.api(&kind, p.namespace());
        let params = PatchParams::default();
        let o = self
            .bounded(&doing, api.patch(p.name(), &params, &Patch::Merge(patch)))
            .await?
            .map_err(|e| self.err(e, &doing))?;
        self.note_write(p, &o);
        Ok(o)
    }

    /// A JSON merge patch that applies only while the object is still at
    /// `resource_version` (the API server answers 409 Conflict otherwise).
    pub async fn merge_at(
        &self,
        p: &Planned,
        resource_version: &str,
        patch: &Value,
    ) -> Result<DynamicObject, KubeError> {
        let mut patch = patch.clone();
        if !patch.get("metadata").is_some_and(Value::is_object) {
            patch["metadata"] = Value::Object(Default::default());
        }
        patch["metadata"]["resourceVersion"] = Value::String(resource_version.to_string());
        self.merge(p, &patch).await
    }

    /// Deletes `p` (background propagation) only while it is still at `resource_version`
    /// (409 Conflict otherwise); `false` when it was already gone.
    pub async fn delete_at(&self, p: &Planned, resource_version: &str) -> Result<bool, KubeError> {
        let kind = self.kind_of(p).await?;
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                resource_version: Some(resource_version.to_string()),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        let doing = format!("deleting {}", p.display());
        let api = self.api(&kind, p.namespace());
        match self.bounded(&doing, api.delete(p.name(), &params)).await? {
            Ok(answer) => {
                self.note(p, Cluster::deleting(answer.left()));
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(self.err(e, &doing)),
        }
    }

    /// Creates a request-like object (a review, a binding); the answer is returned.
    pub async fn create_request(&self, p: &Planned) -> Result<Value, KubeError> {
        let kind = self.kind_of(p).await?;
        let obj: DynamicObject = serde_json::from_value(p.object.clone()).map_err(|e| {
            KubeError::manifest(
                &p.source,
                format!("{} is not a valid object: {e}", p.kind()),
            )
        })?;
        let doing = format!("creating {}", p.display());
        let api = self.api(&kind, p.namespace());
        let params = PostParams::default();
        let created = self
            .bounded(&doing, api.create(&params, &obj))
            .await?
            .map_err(|e| self.err(e, &doing))?;
        Ok(serde_json::to_value(created).unwrap_or(Value::Null))
    }

    /// Deletes `p` (foreground, so dependents go first) with `grace` seconds for its pods;
    /// `false` when it was already gone.
    pub async fn delete(
        &self,
        p: &Planned,
        grace: Option<u32>,
    ) -> Result<Option<String>, KubeError> {
        let kind = self.kind_of(p).await?;
        let api = self.api(&kind, p.namespace());
        let reading = format!("reading {}", p.display());
        let uid = match self.bounded(&reading, api.get_opt(p.name())).await? {
            Ok(Some(o)) => o.metadata.uid.unwrap_or_default(),
            Ok(None) => return Ok(None),
            Err(e) => return Err(self.err(e, &reading)),
        };
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            grace_period_seconds: grace,
            ..DeleteParams::default()
        };
        let doing = format!("deleting {}", p.display());
        match self.bounded(&doing, api.delete(p.name(), &params)).await? {
            Ok(answer) => {
                self.note(p, Cluster::deleting(answer.left()));
                Ok(Some(uid))
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.err(e, &doing)),
        }
    }

    /// Deletes a pod by name (heal), with `grace` seconds.
    pub async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        grace: Option<u32>,
    ) -> Result<Option<String>, KubeError> {
        let kind = self.pod_kind().await?;
        let api = self.api(&kind, Some(namespace));
        let reading = format!("reading Pod {namespace}/{name}");
        let uid = match self.bounded(&reading, api.get_opt(name)).await? {
            Ok(Some(o)) => o.metadata.uid.unwrap_or_default(),
            Ok(None) => return Ok(None),
            Err(e) => return Err(self.err(e, &reading)),
        };
        let params = DeleteParams {
            grace_period_seconds: grace,
            ..DeleteParams::default()
        };
        let doing = format!("deleting Pod {namespace}/{name}");
        match self.bounded(&doing, api.delete(name, &params)).await? {
            Ok(answer) => {
                let key = (
                    "v1".to_string(),
                    "Pod".to_string(),
                    Some(namespace.to_string()),
                    name.to_string(),
                );
                self.note_key(key, Cluster::deleting(answer.left()));
                Ok(Some(uid))
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.err(e, &doing)),
        }
    }

    /// The core `Pod` kind.
    pub async fn pod_kind(&self) -> Result<Kind, KubeError> {
        self.core("Pod").await
    }

    /// A core (`v1`) kind the cluster must serve.
    pub async fn core(&self, kind: &str) -> Result<Kind, KubeError> {
        self.kind("v1", kind)
            .await?
            .ok_or_else(|| KubeError::UnknownKind {
                api_version: "v1".into(),
                kind: kind.into(),
                object: "the driver".into(),
            })
    }

    /// Objects of `kind` in `namespace` (all namespaces for `None`) matching `labels`.
    pub async fn list(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        labels: &str,
    ) -> Result<Vec<DynamicObject>, KubeError> {
        let lp = ListParams::default().labels(labels);
        let doing = format!("listing {} with {labels}", kind.resource.plural);
        let api = self.api(kind, namespace);
        self.bounded(&doing, api.list(&lp))
            .await?
            .map(|l| l.items)
            .map_err(|e| self.err(e, &doing))
    }
}

/// The API resource of CustomResourceDefinitions (served by every cluster).
fn crd_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    )
}

/// Whether `crd` (a CustomResourceDefinition as JSON) defines `gvk`, serves its version, is
/// Established and is not being deleted.
fn crd_serves(crd: &Value, gvk: &GroupVersionKind) -> bool {
    let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str);
    let serves_version = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_some_and(|vs| {
            vs.iter().any(|v| {
                v["name"].as_str() == Some(gvk.version.as_str())
                    && v["served"].as_bool() != Some(false)
            })
        });
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    text("/spec/group") == Some(gvk.group.as_str())
        && text("/spec/names/kind") == Some(gvk.kind.as_str())
        && serves_version
        && established
        && crd.pointer("/metadata/deletionTimestamp").is_none()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::access::Credentials;

    /// Answers a request's path (with its query) with a status and a JSON body.
    type Answer = Arc<dyn Fn(&str) -> (u16, Value) + Send + Sync>;

    /// A cluster whose API server, on a loopback port, answers every request with `answer`.
    async fn scripted(answer: Answer) -> Cluster {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // One request head at a time: the driver's reads have no body.
                        let end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end);
                        let (code, body) = answer(head.split(' ').nth(1).unwrap_or("/"));
                        let body = body.to_string();
                        let response = format!(
                            "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if conn.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let _ = rustls::crypto::ring::default_provider().install_default();
        Cluster::connect(ClusterAccess {
            vim: "vim1".into(),
            endpoint: format!("http://{addr}"),
            ca_certs: Vec::new(),
            insecure: false,
            credentials: Credentials::Token("t".into()),
            namespace: None,
        })
        .expect("a client")
    }

    const GROUP_VERSION: &str = "/apis/k8s.cni.cncf.io/v1";
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    const NAD_CRD: &str = "network-attachment-definitions.k8s.cni.cncf.io";

    fn status(code: u16, reason: &str) -> (u16, Value) {
        (
            code,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": reason, "reason": reason, "code": code}),
        )
    }

    fn resources() -> (u16, Value) {
        (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "k8s.cni.cncf.io/v1",
                   "resources": [{"name": "network-attachment-definitions",
                                  "singularName": "network-attachment-definition", "namespaced": true,
                                  "kind": "NetworkAttachmentDefinition",
                                  "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}]}),
        )
    }

    /// The NetworkAttachmentDefinition CRD, Established or not.
    fn crd(established: bool) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": NAD_CRD},
            "spec": {"group": "k8s.cni.cncf.io", "scope": "Namespaced",
                     "names": {"kind": "NetworkAttachmentDefinition",
                               "plural": "network-attachment-definitions"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]},
            "status": {"conditions": [{"type": "NamesAccepted", "status": "True"},
                                      {"type": "Established", "status": if established { "True" } else { "False" }}]}
        })
    }

    /// The CRD reads, with `crds` the cluster's CRDs (`Err(code)`: the list is refused).
    fn crd_answer(path: &str, crds: &Result<Vec<Value>, u16>) -> (u16, Value) {
        let path = path.split('?').next().unwrap_or(path);
        match crds {
            Err(code) => status(*code, "Forbidden"),
            Ok(crds) if path == CRDS => (
                200,
                json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                       "metadata": {},
                       "items": crds.iter().map(|c| json!({"kind": "PartialObjectMetadata",
                           "apiVersion": "meta.k8s.io/v1", "metadata": c["metadata"]})).collect::<Vec<_>>()}),
            ),
            Ok(crds) => crds
                .iter()
                .find(|c| {
                    path.strip_prefix(CRDS)
                        == Some(&format!(
                            "/{}",
                            c["metadata"]["name"].as_str().unwrap_or_default()
                        ))
                })
                .map_or_else(|| status(404, "NotFound"), |c| (200, c.clone())),
        }
    }

    /// A cluster whose discovery lists the group version from its `listed_from`-th discovery
    /// on (never for `usize::MAX`), with `crds`; the discoveries are counted in the result.
    async fn lagging(
        listed_from: usize,
        crds: Result<Vec<Value>, u16>,
    ) -> (Cluster, Arc<AtomicUsize>) {
        let discoveries = Arc::new(AtomicUsize::new(0));
        let seen = discoveries.clone();
        let cluster = scripted(Arc::new(move |path: &str| {
            if path.split('?').next() == Some(GROUP_VERSION) {
                if seen.fetch_add(1, Ordering::SeqCst) + 1 >= listed_from {
                    resources()
                } else {
                    status(404, "NotFound")
                }
            } else if path.starts_with(CRDS) {
                crd_answer(path, &crds)
            } else {
                status(404, "NotFound")
            }
        }))
        .await;
        (cluster, discoveries)
    }

    #[tokio::test]
    async fn a_kind_whose_crd_is_established_is_found_while_discovery_still_lags_behind_it() {
        // The flaky shared-network test: the CRD was Established, and the next discovery of
        // its group version still answered 404 on the real API server.
        let (cluster, discoveries) = lagging(4, Ok(vec![crd(true)])).await;
        let k = cluster
            .kind("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
            .await
            .expect("no error")
            .expect("found once discovery lists it");
        assert_eq!(k.resource.plural, "network-attachment-definitions");
        assert!(k.namespaced);
        assert_eq!(discoveries.load(Ordering::SeqCst), 4);
        // Found: reused without asking again.
        cluster
            .kind("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
            .await
            .expect("no error")
            .expect("cached");
        assert_eq!(discoveries.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_kind_no_established_crd_defines_is_refused_after_one_discovery() {
        let mut deleting = crd(true);
        deleting["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        let mut other_kind = crd(true);
        other_kind["spec"]["names"]["kind"] = json!("Other");
        let mut unserved = crd(true);
        unserved["spec"]["versions"][0]["served"] = json!(false);
        for (what, crds) in [
            ("no CRD", Ok(vec![])),
            ("a CRD not Established", Ok(vec![crd(false)])),
            ("a CRD being deleted", Ok(vec![deleting])),
            ("a CRD of another kind", Ok(vec![other_kind])),
            ("a CRD not serving the version", Ok(vec![unserved])),
            ("CRDs the user may not read", Err(403)),
        ] {
            let (cluster, discoveries) = lagging(usize::MAX, crds).await;
            let found = cluster
                .kind("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(found.is_none(), "{what}");
            assert_eq!(discoveries.load(Ordering::SeqCst), 1, "{what}");
            // Not cached: asked again (the kind may appear later).
            let _ = cluster
                .kind("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
                .await;
            assert_eq!(discoveries.load(Ordering::SeqCst), 2, "{what}");
        }
    }
}
