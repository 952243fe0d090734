//! The object store: objects by resource and name, the resource version counter, the watch
//! event history, and the write semantics (create defaults, server-side apply with field
//! ownership, updates, merge patches, deletion with finalizers).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::registry::{Registry, ResourceType};
use crate::util::{
    FieldPath, deep_merge, fields_v1, get_path, leaf_paths, now_rfc3339, paths_of_fields_v1,
    remove_path,
};

/// `(group, plural)`.
pub type TypeKey = (String, String);
/// `(namespace or "", name)`.
pub type ObjKey = (String, String);

/// How many watch events are kept for watches that resume from an older resourceVersion.
const HISTORY: usize = 50_000;

/// One change, as a watch delivers it.
#[derive(Debug, Clone)]
pub struct Change {
    /// Resource version of the change.
    pub rv: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    /// The resource.
    pub key: TypeKey,
    /// The object after the change (before it, for `DELETED`, with the new resourceVersion).
    pub object: Value,
    /// When the change was handed to the open watches (set once, at publication).
    pub published: OnceLock<Instant>,
}

/// A failed write, as an HTTP status and a `Status` reason.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`).
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details.causes`, for apply conflicts.
    pub causes: Vec<Value>,
}

impl WriteError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        WriteError {
            code,
            reason,
            message: message.into(),
            causes: Vec::new(),
        }
    }
}

/// Everything the emulated cluster holds.
pub struct Store {
    /// Served resource types.
    pub registry: Registry,
    objects: BTreeMap<TypeKey, BTreeMap<ObjKey, Value>>,
    rv: u64,
    seq: u64,
    history: VecDeque<Arc<Change>>,
    /// Changes since the last drain, for the broadcaster.
    pub(crate) pending: Vec<Arc<Change>>,
    /// When each object (by uid) was created, for the controller's delays.
    pub created_at: HashMap<String, Instant>,
    /// Pods (by uid) marked for deletion: since when, and when their grace period ends.
    pub deleting_at: HashMap<String, Terminating>,
}

/// A terminating pod's clock.
#[derive(Debug, Clone, Copy)]
pub struct Terminating {
    /// When it was marked for deletion.
    pub since: Instant,
    /// When its grace period ends (it is removed then at the latest).
    pub kill_at: Instant,
}

impl Terminating {
    /// Marked now, with `grace` to terminate.
    pub fn new(grace: std::time::Duration) -> Self {
        let since = Instant::now();
        Terminating {
            since,
            kill_at: since + grace,
        }
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

fn meta(obj: &Value, key: &str) -> Option<String> {
    obj.get("metadata")?.get(key)?.as_str().map(String::from)
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        // Just made an object above.
        _ => unreachable!("metadata is an object"),
    }
}

/// The fields whose change bumps `metadata.generation`: everything but metadata and status.
fn spec_of(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

impl Store {
    /// An empty store with the built-in types.
    pub fn new() -> Self {
        Store {
            registry: Registry::new(),
            objects: BTreeMap::new(),
            rv: 1,
            seq: 0,
            history: VecDeque::new(),
            pending: Vec::new(),
            created_at: HashMap::new(),
            deleting_at: HashMap::new(),
        }
    }

    /// The current resource version.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// A fresh sequence number (uids, names, addresses).
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The oldest resource version a watch can still resume from.
    pub fn oldest_rv(&self) -> u64 {
        self.history.front().map_or(self.rv, |c| c.rv - 1)
    }

    /// Every change still held for resuming watches, oldest first.
    pub fn history(&self) -> impl Iterator<Item = &Arc<Change>> {
        self.history.iter()
    }

    /// Changes after `rv`, oldest first.
    pub fn changes_since(&self, rv: u64) -> Vec<Arc<Change>> {
        self.history.iter().filter(|c| c.rv > rv).cloned().collect()
    }

    fn record(&mut self, kind: &'static str, key: &TypeKey, object: Value) {
        let change = Arc::new(Change {
            rv: self.rv,
            kind,
            key: key.clone(),
            object,
            published: OnceLock::new(),
        });
        self.history.push_back(change.clone());
        while self.history.len() > HISTORY {
            self.history.pop_front();
        }
        self.pending.push(change);
    }

    /// The object `name` in `ns` ("" for cluster-scoped).
    pub fn get(&self, key: &TypeKey, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Every object of a resource, in `ns` when given.
    pub fn list(&self, key: &TypeKey, ns: Option<&str>) -> Vec<Value> {
        self.objects
            .get(key)
            .map(|m| {
                m.iter()
                    .filter(|((n, _), _)| ns.is_none_or(|want| n == want))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every `(type, object)` held, for the controller and namespace cleanup.
    pub fn all(&self) -> Vec<(TypeKey, Value)> {
        self.objects
            .iter()
            .flat_map(|(k, m)| m.values().map(move |v| (k.clone(), v.clone())))
            .collect()
    }

    /// Stores a new object: fills uid, resourceVersion, generation, creationTimestamp and the
    /// defaults of its kind, and records an `ADDED` change.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        mut obj: Value,
        manager: Option<(&str, &str, BTreeSet<FieldPath>)>,
    ) -> Result<Value, WriteError> {
        let name = meta(&obj, "name")
            .filter(|n| !n.is_empty())
            .or_else(|| meta(&obj, "generateName").map(|p| format!("{p}{}", self.short_suffix())))
            .ok_or_else(|| {
                WriteError::new(
                    422,
                    "Invalid",
                    format!("{} is invalid: metadata.name: Required value", rt.kind),
                )
            })?;
        let ns = if rt.namespaced {
            ns.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let key = rt.storage_key();
        if self.get(&key, &ns, &name).is_some() {
            return Err(WriteError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", rt.plural),
            ));
        }
        self.rv += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", self.next_seq());
        obj["apiVersion"] = json!(rt.api_version());
        obj["kind"] = json!(rt.kind);
        {
            let m = meta_mut(&mut obj);
            m.insert("name".into(), json!(name));
            if rt.namespaced {
                m.insert("namespace".into(), json!(ns));
            } else {
                m.remove("namespace");
            }
            m.insert("uid".into(), json!(uid));
            m.insert("resourceVersion".into(), json!(self.rv.to_string()));
            m.insert("generation".into(), json!(1));
            m.insert("creationTimestamp".into(), json!(now_rfc3339()));
            m.remove("deletionTimestamp");
            if let Some((manager, operation, paths)) = manager {
                m.insert(
                    "managedFields".into(),
                    json!([managed_entry(manager, operation, &rt.api_version(), &paths)]),
                );
            } else {
                m.remove("managedFields");
            }
        }
        defaults(rt, &mut obj, self);
        self.created_at.insert(uid, Instant::now());
        self.objects
            .entry(key.clone())
            .or_default()
            .insert((ns, name), obj.clone());
        self.record("ADDED", &key, obj.clone());
        Ok(obj)
    }

    /// Replaces a stored object (the caller has applied its change to a copy); bumps the
    /// resourceVersion and, when the spec changed, the generation. A no-op write changes
    /// nothing and records nothing.
    pub fn put(&mut self, key: &TypeKey, mut obj: Value) -> Value {
        let ns = meta(&obj, "namespace").unwrap_or_default();
        let name = meta(&obj, "name").unwrap_or_default();
        let Some(old) = self.get(key, &ns, &name).cloned() else {
            return obj;
        };
        if old == obj {
            return obj;
        }
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let bump = spec_of(&old) != spec_of(&obj);
        self.rv += 1;
        {
            let m = meta_mut(&mut obj);
            m.insert("resourceVersion".into(), json!(self.rv.to_string()));
            m.insert(
                "generation".into(),
                json!(if bump { generation + 1 } else { generation }),
            );
        }
        // An object marked for deletion whose finalizers are all gone is deleted.
        let finalizers_gone = obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
        // Pods and namespaces are removed by the controller (after termination / emptying).
        let controller_removes = is_pod(key) || *key == (String::new(), "namespaces".to_string());
        if obj.pointer("/metadata/deletionTimestamp").is_some()
            && finalizers_gone
            && !controller_removes
        {
            self.objects
                .entry(key.clone())
                .or_default()
                .insert((ns.clone(), name.clone()), obj.clone());
            self.remove(key, &ns, &name);
            return obj;
        }
        self.objects
            .entry(key.clone())
            .or_default()
            .insert((ns, name), obj.clone());
        self.record("MODIFIED", key, obj.clone());
        obj
    }

    /// Removes an object for good and records a `DELETED` change.
    pub fn remove(&mut self, key: &TypeKey, ns: &str, name: &str) -> Option<Value> {
        let mut obj = self
            .objects
            .get_mut(key)?
            .remove(&(ns.to_string(), name.to_string()))?;
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        if let Some(uid) = meta(&obj, "uid") {
            self.created_at.remove(&uid);
            self.deleting_at.remove(&uid);
        }
        self.record("DELETED", key, obj.clone());
        Some(obj)
    }

    /// Server-side apply of `config` by `manager` to `rt`/`ns`/`name`.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        mut config: Value,
        manager: &str,
        force: bool,
        status_only: bool,
    ) -> Result<(Value, bool), WriteError> {
        if config.get("kind").and_then(Value::as_str) != Some(rt.kind.as_str()) {
            return Err(WriteError::new(
                400,
                "BadRequest",
                format!(
                    "the kind of the applied object ({}) does not match the path ({})",
                    config["kind"], rt.kind
                ),
            ));
        }
        if meta(&config, "name").as_deref() != Some(name) {
            return Err(WriteError::new(
                400,
                "BadRequest",
                "the name of the applied object does not match the name in the URL",
            ));
        }
        // Identity fields are not owned.
        let mut owned_part = config.clone();
        if let Some(m) = owned_part.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
            if let Some(Value::Object(md)) = m.get_mut("metadata") {
                md.remove("name");
                md.remove("namespace");
                md.remove("managedFields");
                md.remove("resourceVersion");
            }
            if rt.status {
                if status_only {
                    m.retain(|k, _| k == "status" || k == "metadata");
                } else {
                    m.remove("status");
                }
            }
        }
        let paths = leaf_paths(&owned_part);
        let key = rt.storage_key();
        let ns_str = if rt.namespaced {
            ns.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let existing = self.get(&key, &ns_str, name).cloned();
        // A resourceVersion in the applied configuration is a precondition.
        if let Some(rv) = meta(&config, "resourceVersion") {
            match &existing {
                None => return Err(not_found(rt, name)),
                Some(e) if meta(e, "resourceVersion") != Some(rv) => {
                    return Err(modified(rt, name));
                }
                Some(_) => {}
            }
        }
        let Some(existing) = existing else {
            if status_only {
                return Err(not_found(rt, name));
            }
            if let Some(m) = config.as_object_mut()
                && rt.status
            {
                m.remove("status");
            }
            let created = self.create(rt, ns, config, Some((manager, "Apply", paths)))?;
            return Ok((created, true));
        };
        let mut managers = managers_of(&existing);
        // Conflicts: fields another manager owns with a different value.
        let mut conflicts: Vec<(String, FieldPath)> = Vec::new();
        for (other, (op, owned)) in &managers {
            if other == manager {
                continue;
            }
            let _ = op;
            for p in paths.intersection(owned) {
                if get_path(&existing, p) != get_path(&owned_part, p) {
                    conflicts.push((other.clone(), p.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|(m, p)| {
                    json!({
                        "type": "FieldManagerConflict",
                        "message": format!("conflict with \"{m}\""),
                        "field": format!(".{}", p.join(".")),
                    })
                })
                .collect();
            let list: Vec<String> = conflicts
                .iter()
                .map(|(m, p)| format!("conflict with \"{m}\": .{}", p.join(".")))
                .collect();
            return Err(WriteError {
                code: 409,
                reason: "Conflict",
                message: format!(
                    "Apply failed with {} conflict{}: {}",
                    conflicts.len(),
                    if conflicts.len() == 1 { "" } else { "s" },
                    list.join(", ")
                ),
                causes,
            });
        }
        for (m, p) in &conflicts {
            if let Some((_, owned)) = managers.get_mut(m) {
                owned.remove(p);
            }
        }
        let mut next = existing.clone();
        // Fields this manager owned before and no longer sets are removed, unless someone
        // else still owns them.
        if let Some((_, before)) = managers.get(manager) {
            for p in before.difference(&paths) {
                let shared = managers
                    .iter()
                    .any(|(m, (_, o))| m != manager && o.contains(p));
                if !shared {
                    remove_path(&mut next, p);
                }
            }
        }
        deep_merge(&mut next, &owned_part);
        managers.insert(manager.to_string(), ("Apply".to_string(), paths));
        set_managers(&mut next, &managers, &rt.api_version());
        let changed = next != existing;
        let stored = self.put(&key, next);
        Ok((stored, changed))
    }

    /// A full update (`PUT`) or the result of a merge patch: `next` replaces the stored object,
    /// keeping system metadata and (for types with a status subresource) the stored status, or
    /// only the status when `status_only`.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        next: Value,
        manager: &str,
        status_only: bool,
        check_rv: bool,
    ) -> Result<Value, WriteError> {
        let key = rt.storage_key();
        let ns_str = if rt.namespaced {
            ns.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let existing = self
            .get(&key, &ns_str, name)
            .cloned()
            .ok_or_else(|| not_found(rt, name))?;
        if check_rv
            && let Some(rv) = meta(&next, "resourceVersion")
            && Some(rv) != meta(&existing, "resourceVersion")
        {
            return Err(modified(rt, name));
        }
        let mut merged = if status_only {
            let mut e = existing.clone();
            e["status"] = next.get("status").cloned().unwrap_or(Value::Null);
            e
        } else {
            let mut n = next;
            if rt.status {
                match existing.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            n
        };
        // System metadata stays the server's.
        let em = existing.get("metadata").cloned().unwrap_or(json!({}));
        {
            let m = meta_mut(&mut merged);
            for k in [
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "namespace",
                "name",
            ] {
                match em.get(k) {
                    Some(v) => {
                        m.insert(k.into(), v.clone());
                    }
                    None => {
                        m.remove(k);
                    }
                }
            }
            m.insert("resourceVersion".into(), em["resourceVersion"].clone());
        }
        merged["apiVersion"] = existing["apiVersion"].clone();
        merged["kind"] = existing["kind"].clone();
        // The updater owns the fields it changed.
        let mut managers = managers_of(&existing);
        let before = leaf_paths(&strip_meta(&existing));
        let after = leaf_paths(&strip_meta(&merged));
        let changed: BTreeSet<FieldPath> = after
            .iter()
            .filter(|p| !before.contains(*p) || get_path(&existing, p) != get_path(&merged, p))
            .cloned()
            .collect();
        if !changed.is_empty() {
            for (_, owned) in managers.values_mut() {
                for p in &changed {
                    owned.remove(p);
                }
            }
            let entry = managers
                .entry(manager.to_string())
                .or_insert_with(|| ("Update".to_string(), BTreeSet::new()));
            entry.1.extend(changed);
        }
        set_managers(&mut merged, &managers, &rt.api_version());
        Ok(self.put(&key, merged))
    }

    /// A random-looking 5-character suffix, as generated names use.
    pub fn short_suffix(&mut self) -> String {
        let n = self.next_seq();
        let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
        let mut h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (0..5)
            .map(|_| {
                let c = alphabet[(h % alphabet.len() as u64) as usize] as char;
                h /= alphabet.len() as u64;
                c
            })
            .collect()
    }
}

fn is_pod(key: &TypeKey) -> bool {
    key.0.is_empty() && key.1 == "pods"
}

/// Checks the preconditions of a `DELETE` (`DeleteOptions.preconditions`): the object must
/// still have this resourceVersion and uid, else `409 Conflict`.
pub fn check_preconditions(
    store: &Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    resource_version: Option<&str>,
    uid: Option<&str>,
) -> Result<(), WriteError> {
    let obj = store
        .get(&rt.storage_key(), ns, name)
        .ok_or_else(|| not_found(rt, name))?;
    let cannot = |what: &str, want: &str, have: &str, hint: &str| {
        WriteError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: the {what} in the precondition ({want}) does not match the {what} in record ({have}). The object might have been {hint}",
                qualified(rt)
            ),
        )
    };
    if let Some(want) = resource_version {
        let have = meta(obj, "resourceVersion").unwrap_or_default();
        if want != have {
            return Err(cannot("ResourceVersion", want, &have, "modified"));
        }
    }
    if let Some(want) = uid {
        let have = meta(obj, "uid").unwrap_or_default();
        if want != have {
            return Err(cannot("UID", want, &have, "deleted and then recreated"));
        }
    }
    Ok(())
}

/// `plural.group` (`plural` for the core group), as the API server names resources.
fn qualified(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    }
}

/// The `Conflict` of a write whose resourceVersion precondition no longer holds.
pub fn modified(rt: &ResourceType, name: &str) -> WriteError {
    WriteError::new(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            qualified(rt)
        ),
    )
}

/// The `NotFound` error for `name`.
pub fn not_found(rt: &ResourceType, name: &str) -> WriteError {
    WriteError::new(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", qualified(rt)),
    )
}

fn strip_meta(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        for k in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
            "name",
            "namespace",
        ] {
            m.remove(k);
        }
    }
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        m.remove("status");
    }
    v
}

type Managers = BTreeMap<String, (String, BTreeSet<FieldPath>)>;

fn managers_of(obj: &Value) -> Managers {
    let mut out = Managers::new();
    for e in obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let manager = e["manager"].as_str().unwrap_or("").to_string();
        let op = e["operation"].as_str().unwrap_or("Update").to_string();
        let paths = paths_of_fields_v1(&e["fieldsV1"]);
        out.insert(manager, (op, paths));
    }
    out
}

fn managed_entry(
    manager: &str,
    operation: &str,
    api_version: &str,
    paths: &BTreeSet<FieldPath>,
) -> Value {
    json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(paths),
    })
}

fn set_managers(obj: &mut Value, managers: &Managers, api_version: &str) {
    let entries: Vec<Value> = managers
        .iter()
        .filter(|(_, (_, p))| !p.is_empty())
        .map(|(m, (op, p))| managed_entry(m, op, api_version, p))
        .collect();
    meta_mut(obj).insert("managedFields".into(), Value::Array(entries));
}

/// Defaults the API server (and its admission) fills in on create.
fn defaults(rt: &ResourceType, obj: &mut Value, store: &mut Store) {
    let spec_default = |obj: &mut Value, key: &str, v: Value| {
        if obj.get("spec").is_none() {
            obj["spec"] = json!({});
        }
        if obj["spec"].get(key).is_none() {
            obj["spec"][key] = v;
        }
    };
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => {
            obj["status"] = json!({"phase": "Active"});
            spec_default(obj, "finalizers", json!(["kubernetes"]));
        }
        ("", "Pod") if obj.get("status").is_none() => {
            obj["status"] = json!({"phase": "Pending"});
        }
        ("", "PersistentVolumeClaim") => {
            obj["status"] = json!({"phase": "Pending"});
            crate::volumes::add_finalizer(obj, crate::volumes::PVC_PROTECTION);
        }
        ("", "PersistentVolume") => {
            obj["status"] = json!({"phase": "Available"});
            spec_default(obj, "persistentVolumeReclaimPolicy", json!("Retain"));
            crate::volumes::add_finalizer(obj, crate::volumes::PV_PROTECTION);
        }
        ("", "Service") => {
            spec_default(obj, "type", json!("ClusterIP"));
            if obj["spec"].get("clusterIP").is_none() {
                let n = store.next_seq();
                obj["spec"]["clusterIP"] =
                    json!(format!("10.96.{}.{}", (n / 250) % 250, n % 250 + 1));
            }
            if obj["spec"]["type"] == "NodePort"
                && let Some(ports) = obj["spec"].get_mut("ports").and_then(Value::as_array_mut)
            {
                for p in ports {
                    if p.get("nodePort").is_none() {
                        let n = store.next_seq();
                        p["nodePort"] = json!(30000 + (n % 2000));
                    }
                }
            }
        }
        ("apps", "Deployment") | ("apps", "StatefulSet") | ("apps", "ReplicaSet") => {
            spec_default(obj, "replicas", json!(1));
        }
        ("batch", "Job") => {
            spec_default(obj, "completions", json!(1));
            spec_default(obj, "parallelism", json!(1));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
