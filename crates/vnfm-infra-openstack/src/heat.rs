//! A Heat orchestration API client ([`Heat`]): stacks (find, show, create, update, delete),
//! their resources, events, templates and files, marking resources unhealthy, and waiting for
//! an action to finish with backoff and a timeout. A stack that ends in `*_FAILED` becomes an
//! [`OpenStackError::StackFailed`] naming the failing resource and its status reason, taken
//! from the stack's events.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use vnfm_driver_api::{DriverError, RunControl};

use crate::config::PollPolicy;
use crate::error::{OpenStackError, cut};
use crate::keystone::{ServiceApi, Session, sleep_within};

/// A stack's name and id: enough to address it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StackRef {
    /// The stack name.
    pub name: String,
    /// The stack id.
    pub id: String,
}

impl StackRef {
    fn path(&self) -> String {
        format!("stacks/{}/{}", enc(&self.name), enc(&self.id))
    }

    /// Parses the `.../stacks/<name>/<id>` tail of a Heat link or `Location`.
    pub fn from_href(href: &str) -> Option<StackRef> {
        let path = href.split(['?', '#']).next()?;
        let (_, tail) = path.rsplit_once("/stacks/")?;
        let mut parts = tail.trim_end_matches('/').split('/');
        let name = parts.next()?;
        let id = parts.next()?;
        (!name.is_empty() && !id.is_empty()).then(|| StackRef {
            name: name.to_string(),
            id: id.to_string(),
        })
    }
}

/// A stack as `GET /stacks/<name>/<id>` shows it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Stack {
    /// The id.
    pub id: String,
    /// The name.
    pub stack_name: String,
    /// `CREATE_COMPLETE`, `UPDATE_IN_PROGRESS`, ...
    pub stack_status: String,
    /// Why it is in that status.
    #[serde(default)]
    pub stack_status_reason: Option<String>,
    /// Parameter values (JSON parameters come back as strings).
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// When it was created.
    #[serde(default)]
    pub creation_time: Option<String>,
    /// When the last update began.
    #[serde(default)]
    pub updated_time: Option<String>,
}

impl Stack {
    /// Its reference.
    pub fn reference(&self) -> StackRef {
        StackRef {
            name: self.stack_name.clone(),
            id: self.id.clone(),
        }
    }

    /// When its last action began: its creation while it is being (or failed being) created,
    /// else its last update.
    pub fn last_action_started(&self) -> Option<&str> {
        if self.stack_status.starts_with("CREATE") {
            self.creation_time.as_deref()
        } else {
            self.updated_time
                .as_deref()
                .or(self.creation_time.as_deref())
        }
    }

    /// The `nfv` parameter as an object (`{}` when absent or not an object).
    pub fn nfv(&self) -> Value {
        match self.parameters.get("nfv") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
            Some(v @ Value::Object(_)) => v.clone(),
            _ => json!({}),
        }
    }
}

/// A resource as `GET .../resources?nested_depth=N&with_detail=true` lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HeatResource {
    /// The logical name in its template.
    pub resource_name: String,
    /// The id in the backing service (server id, port id, nested stack id, ...).
    #[serde(default)]
    pub physical_resource_id: String,
    /// `OS::Nova::Server`, a template file name, ...
    pub resource_type: String,
    /// `CREATE_COMPLETE`, `CHECK_FAILED`, ...
    #[serde(default)]
    pub resource_status: String,
    /// Why it is in that status.
    #[serde(default)]
    pub resource_status_reason: Option<String>,
    /// Resources of the same template that depend on it.
    #[serde(default)]
    pub required_by: Vec<String>,
    /// The resource in the parent stack that owns its stack (nested stacks only).
    #[serde(default)]
    pub parent_resource: Option<String>,
    /// `self`, `stack` and `nested` links.
    #[serde(default)]
    pub links: Vec<Link>,
    /// When it was created.
    #[serde(default)]
    pub creation_time: Option<String>,
    /// Attribute values (with `with_detail=true`).
    #[serde(default)]
    pub attributes: Map<String, Value>,
}

impl HeatResource {
    /// The stack whose template defines this resource.
    pub fn stack(&self) -> Option<StackRef> {
        self.link("stack").and_then(StackRef::from_href)
    }

    /// The nested stack this resource owns, when it is a stack resource.
    pub fn nested(&self) -> Option<StackRef> {
        self.link("nested").and_then(StackRef::from_href)
    }

    fn link(&self, rel: &str) -> Option<&str> {
        self.links
            .iter()
            .find(|l| l.rel == rel)
            .map(|l| l.href.as_str())
    }
}

/// A link of a Heat resource or event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Link {
    /// The target.
    pub href: String,
    /// `self`, `stack`, `nested`, `resource`.
    pub rel: String,
}

/// A stack event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HeatEvent {
    /// The resource (or the stack itself, named like the stack).
    pub resource_name: String,
    /// `CREATE_FAILED`, ...
    #[serde(default)]
    pub resource_status: String,
    /// The reason.
    #[serde(default)]
    pub resource_status_reason: Option<String>,
    /// The resource's id in its service.
    #[serde(default)]
    pub physical_resource_id: Option<String>,
    /// When.
    #[serde(default)]
    pub event_time: Option<String>,
    /// Links (`stack` names the stack the resource belongs to).
    #[serde(default)]
    pub links: Vec<Link>,
}

impl HeatEvent {
    /// The stack the event's resource belongs to (a nested stack for a nested resource).
    pub fn stack(&self) -> Option<StackRef> {
        self.links
            .iter()
            .find(|l| l.rel == "stack")
            .and_then(|l| StackRef::from_href(&l.href))
    }

    /// Whether the event happened during the last action of `s` (earlier actions may have
    /// failed too); an event or stack without times counts.
    pub fn during_last_action_of(&self, s: &Stack) -> bool {
        match (s.last_action_started(), self.event_time.as_deref()) {
            (Some(since), Some(t)) => t >= since,
            _ => true,
        }
    }
}

/// What a stack create or update sends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackFields {
    /// The top template (a JSON object); `None` keeps the current one (update only).
    pub template: Option<Value>,
    /// Files the template refers to (nested templates, `get_file` targets), by the name used
    /// in the template.
    pub files: BTreeMap<String, String>,
    /// Parameter values.
    pub parameters: Map<String, Value>,
    /// An environment.
    pub environment: Option<Value>,
    /// Heat's own timeout for the action, in minutes.
    pub timeout_mins: Option<u64>,
    /// Whether Heat rolls a failed update back to the previous definition by itself (`None`:
    /// Heat's default for the stack).
    pub rollback_on_failure: Option<bool>,
}

impl StackFields {
    fn body(&self) -> Map<String, Value> {
        let mut b = Map::new();
        if let Some(t) = &self.template {
            b.insert("template".into(), t.clone());
        }
        if !self.files.is_empty() {
            b.insert("files".into(), json!(self.files));
        }
        b.insert("parameters".into(), Value::Object(self.parameters.clone()));
        if let Some(e) = &self.environment {
            b.insert("environment".into(), e.clone());
        }
        if let Some(t) = self.timeout_mins {
            b.insert("timeout_mins".into(), json!(t));
        }
        if let Some(r) = self.rollback_on_failure {
            b.insert("disable_rollback".into(), json!(!r));
        }
        b
    }
}

/// The Heat API of one VIM, for one step.
pub struct Heat<'a> {
    api: ServiceApi<'a>,
}

impl<'a> Heat<'a> {
    /// Finds the orchestration endpoint in the catalog.
    pub async fn connect(
        session: &'a Session,
        control: &'a RunControl,
        poll: PollPolicy,
    ) -> Result<Heat<'a>, DriverError> {
        Ok(Heat {
            api: ServiceApi::connect(session, control, poll, "orchestration").await?,
        })
    }

    /// The endpoint in use (`http://heat:8004/v1/<project>`).
    pub fn base(&self) -> &str {
        &self.api.base
    }

    async fn get(&self, path: &str, allow_404: bool) -> Result<Option<Value>, DriverError> {
        self.get_following(path, allow_404, true).await
    }

    async fn get_following(
        &self,
        path: &str,
        allow_404: bool,
        follow: bool,
    ) -> Result<Option<Value>, DriverError> {
        let url = format!("{}/{path}", self.api.base);
        let accept: &[u16] = if allow_404 { &[404] } else { &[] };
        let r = self
            .api
            .session
            .call(self.api.control, "heat", Method::GET, &url, None, accept)
            .await?;
        if r.status.as_u16() == 404 {
            return Ok(None);
        }
        if r.status.is_redirection() && follow {
            // Only a lookup by name redirects; follow it (once) on the same endpoint.
            let target = r
                .location
                .as_deref()
                .and_then(StackRef::from_href)
                .ok_or_else(|| OpenStackError::Response {
                    what: format!("GET {path}"),
                    service: "heat",
                    message: "a redirect without a stack location".into(),
                })?;
            let suffix = path
                .split_once('/')
                .and_then(|(_, rest)| rest.split_once('/').map(|(_, s)| s))
                .unwrap_or("");
            let mut next = target.path();
            if !suffix.is_empty() {
                next = format!("{next}/{suffix}");
            }
            return Box::pin(self.get_following(&next, allow_404, false)).await;
        }
        Ok(Some(r.json(&format!("GET {path}"), "heat")?))
    }

    fn field<T: serde::de::DeserializeOwned>(
        v: Value,
        key: &str,
        what: &str,
    ) -> Result<T, DriverError> {
        let inner = match v {
            Value::Object(mut m) => m.remove(key).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        serde_json::from_value(inner).map_err(|e| {
            OpenStackError::ResponseBody {
                what: what.to_string(),
                service: "heat",
                problem: format!("`{key}` is missing or malformed"),
                source: e,
            }
            .into()
        })
    }

    /// The stack named `name`, if it exists (deleted stacks are not found).
    pub async fn find(&self, name: &str) -> Result<Option<Stack>, DriverError> {
        let what = format!("GET stacks/{name}");
        match self.get(&format!("stacks/{}", enc(name)), true).await? {
            None => Ok(None),
            Some(v) => {
                let s: Stack = Self::field(v, "stack", &what)?;
                Ok((s.stack_status != "DELETE_COMPLETE").then_some(s))
            }
        }
    }

    /// The stack `r`, `None` when Heat no longer knows it.
    pub async fn show(&self, r: &StackRef) -> Result<Option<Stack>, DriverError> {
        match self.get(&r.path(), true).await? {
            None => Ok(None),
            Some(v) => Ok(Some(Self::field(v, "stack", &format!("GET {}", r.path()))?)),
        }
    }

    /// Creates stack `name` (no rollback on failure, so the failure can be inspected). When
    /// Heat says the stack exists already (a retried create), the existing one is returned;
    /// when the name is still held by a stack whose deletion is finishing, the create is
    /// repeated until Heat releases the name.
    pub async fn create(&self, name: &str, fields: &StackFields) -> Result<StackRef, DriverError> {
        let mut body = fields.body();
        body.insert("stack_name".into(), json!(name));
        body.insert("disable_rollback".into(), json!(true));
        let body = Value::Object(body);
        let url = format!("{}/stacks", self.api.base);
        let started = Instant::now();
        let mut delay = self.api.poll.initial;
        loop {
            let r = self
                .api
                .session
                .call(
                    self.api.control,
                    "heat",
                    Method::POST,
                    &url,
                    Some(&body),
                    &[409],
                )
                .await?;
            if r.status.as_u16() != 409 {
                let v = r.json("POST stacks", "heat")?;
                let id: String = v
                    .pointer("/stack/id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| OpenStackError::Response {
                        what: "POST stacks".into(),
                        service: "heat",
                        message: "no stack id in the answer".into(),
                    })?;
                tracing::info!(stack = name, %id, "Heat stack create started");
                return Ok(StackRef {
                    name: name.to_string(),
                    id,
                });
            }
            // A create that was retried after a lost answer, or a step run again.
            if let Some(s) = self.find(name).await? {
                return Ok(s.reference());
            }
            if started.elapsed() >= NAME_RELEASE_WAIT {
                return Err(OpenStackError::Status {
                    what: "POST stacks".into(),
                    service: "heat",
                    status: 409,
                    detail: format!(
                        "the name {name} stays taken by a deleted stack: {}",
                        self.api
                            .session
                            .redact(&cut(&String::from_utf8_lossy(&r.body), 300))
                    ),
                }
                .into());
            }
            let what = format!("waiting for Heat to release the stack name {name}");
            sleep_within(self.api.control, delay, &what).await?;
            delay = self.api.poll.next(delay);
        }
    }

    /// Updates `r` with `PATCH` semantics: parameters merge into the current ones, an absent
    /// template keeps the current template.
    pub async fn update(&self, r: &StackRef, fields: &StackFields) -> Result<(), DriverError> {
        let url = format!("{}/{}", self.api.base, r.path());
        self.api
            .session
            .call(
                self.api.control,
                "heat",
                Method::PATCH,
                &url,
                Some(&Value::Object(fields.body())),
                &[],
            )
            .await?;
        tracing::info!(stack = %r.name, "Heat stack update started");
        Ok(())
    }

    /// Replaces template, files, parameters and environment of `r` (`PUT`): nothing of the
    /// current definition is kept, so files the new template no longer uses are dropped.
    pub async fn replace(&self, r: &StackRef, fields: &StackFields) -> Result<(), DriverError> {
        let url = format!("{}/{}", self.api.base, r.path());
        self.api
            .session
            .call(
                self.api.control,
                "heat",
                Method::PUT,
                &url,
                Some(&Value::Object(fields.body())),
                &[],
            )
            .await?;
        tracing::info!(stack = %r.name, "Heat stack replacement update started");
        Ok(())
    }

    /// Deletes `r` (a stack that is already gone is fine).
    pub async fn delete(&self, r: &StackRef) -> Result<(), DriverError> {
        let url = format!("{}/{}", self.api.base, r.path());
        self.api
            .session
            .call(self.api.control, "heat", Method::DELETE, &url, None, &[404])
            .await?;
        tracing::info!(stack = %r.name, "Heat stack delete started");
        Ok(())
    }

    /// The resources of `r` down to `depth` levels of nested stacks, with attributes.
    pub async fn resources(
        &self,
        r: &StackRef,
        depth: u32,
    ) -> Result<Vec<HeatResource>, DriverError> {
        let path = format!(
            "{}/resources?nested_depth={depth}&with_detail=true",
            r.path()
        );
        let v = self
            .get(&path, false)
            .await?
            .ok_or_else(|| OpenStackError::Response {
                what: format!("GET {path}"),
                service: "heat",
                message: "not found".into(),
            })?;
        Self::field(v, "resources", &format!("GET {path}"))
    }

    /// The most recent events of `r` and its nested stacks, newest first.
    pub async fn events(&self, r: &StackRef, depth: u32) -> Result<Vec<HeatEvent>, DriverError> {
        let path = format!(
            "{}/events?nested_depth={depth}&sort_dir=desc&sort_keys=event_time&limit=200",
            r.path()
        );
        match self.get(&path, true).await? {
            None => Ok(Vec::new()),
            Some(v) => Self::field(v, "events", &format!("GET {path}")),
        }
    }

    /// Marks resource `resource` of stack `r` unhealthy, so the next update replaces it (and an
    /// autoscaling group that shrinks removes that member first).
    pub async fn mark_unhealthy(
        &self,
        r: &StackRef,
        resource: &str,
        reason: &str,
    ) -> Result<(), DriverError> {
        let url = format!("{}/{}/resources/{}", self.api.base, r.path(), enc(resource));
        let body = json!({"mark_unhealthy": true, "resource_status_reason": reason});
        self.api
            .session
            .call(
                self.api.control,
                "heat",
                Method::PATCH,
                &url,
                Some(&body),
                &[],
            )
            .await?;
        tracing::info!(stack = %r.name, resource, "marked unhealthy");
        Ok(())
    }

    /// The template of `r`.
    pub async fn template(&self, r: &StackRef) -> Result<Value, DriverError> {
        let path = format!("{}/template", r.path());
        self.get(&path, false).await?.ok_or_else(|| {
            OpenStackError::NoStack {
                stack: r.name.clone(),
                instance: "-".into(),
            }
            .into()
        })
    }

    /// The files of `r` (nested templates and `get_file` targets).
    pub async fn files(&self, r: &StackRef) -> Result<BTreeMap<String, String>, DriverError> {
        let path = format!("{}/files", r.path());
        let v = self.get(&path, true).await?.unwrap_or(Value::Null);
        let mut out = BTreeMap::new();
        if let Value::Object(m) = v {
            for (k, v) in m {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.insert(k, text);
            }
        }
        Ok(out)
    }

    /// Waits until `r` finishes `action` (`CREATE`, `UPDATE`, `DELETE`, ...): polls with
    /// backoff until `<action>_COMPLETE` (for `DELETE` also: the stack is gone), fails on any
    /// other final status, and gives up after `timeout` (or at the step's deadline).
    ///
    /// `baseline` is the stack as it was before the action was requested: as long as the stack
    /// still shows exactly that status and update time, the new action may not have begun, so
    /// a matching final status is not taken as the outcome until a short grace period passed.
    pub async fn wait(
        &self,
        r: &StackRef,
        action: &str,
        baseline: Option<&Stack>,
        timeout: Duration,
    ) -> Result<Option<Stack>, DriverError> {
        let started = Instant::now();
        let complete = format!("{action}_COMPLETE");
        let grace = Duration::from_secs(3);
        let mut delay = self.api.poll.initial;
        let mut last;
        loop {
            let what = format!("waiting for Heat stack {} to reach {complete}", r.name);
            self.api.control.check(&what)?;
            match self.show(r).await? {
                None if action == "DELETE" => return Ok(None),
                None => {
                    return Err(OpenStackError::NoStack {
                        stack: r.name.clone(),
                        instance: "-".into(),
                    }
                    .into());
                }
                Some(s) => {
                    let unchanged = baseline.is_some_and(|b| {
                        b.stack_status == s.stack_status && b.updated_time == s.updated_time
                    }) && started.elapsed() < grace;
                    last = s.stack_status.clone();
                    if !unchanged {
                        if s.stack_status == complete {
                            return Ok(Some(s));
                        }
                        if action == "DELETE" && s.stack_status == "DELETE_COMPLETE" {
                            return Ok(None);
                        }
                        if is_final(&s.stack_status) && s.stack_status != complete {
                            return Err(self.failure(&s).await.into());
                        }
                    }
                }
            }
            if started.elapsed() >= timeout {
                return Err(OpenStackError::StackTimeout {
                    stack: r.name.clone(),
                    expected: complete,
                    last_status: last,
                    waited: started.elapsed(),
                }
                .into());
            }
            let left = timeout.saturating_sub(started.elapsed());
            sleep_within(self.api.control, delay.min(left), &what).await?;
            delay = self.api.poll.next(delay);
        }
    }

    /// Why `s` failed: the failing resource and its status reason from the stack's events
    /// (the deepest failure, since parents only repeat their child's reason), else the
    /// stack's own reason.
    pub async fn failure(&self, s: &Stack) -> OpenStackError {
        let stack_reason = s.stack_status_reason.clone().unwrap_or_default();
        let events = self.events(&s.reference(), 5).await.unwrap_or_default();
        // Failures of resources (not of stacks: a stack's own events carry its name), deepest
        // first: nested stack names extend their parent's, and a parent only repeats the
        // reason of the child that failed.
        // Only events of the action that failed (earlier actions may have failed too).
        let current = |e: &&HeatEvent| e.during_last_action_of(s);
        // Siblings Heat stopped because of the failure ("CREATE aborted", "Stack UPDATE
        // cancelled") are consequences, not the cause.
        let consequence = |e: &HeatEvent| {
            let r = e
                .resource_status_reason
                .as_deref()
                .unwrap_or("")
                .to_ascii_lowercase();
            r.ends_with("aborted") || r.ends_with("cancelled")
        };
        let leaf = events
            .iter()
            .rev()
            .filter(current)
            .filter(|e| e.resource_status.ends_with("_FAILED"))
            .filter_map(|e| e.stack().map(|st| (e, st)))
            .filter(|(e, st)| e.resource_name != st.name)
            .max_by_key(|(e, st)| (!consequence(e), st.name.len()))
            .map(|(e, _)| e);
        let (resource, reason) = match leaf {
            Some(e) => {
                let in_stack = e
                    .stack()
                    .filter(|st| st.name != s.stack_name)
                    .map(|st| format!(" in nested stack {}", st.name))
                    .unwrap_or_default();
                (
                    Some(format!(
                        "`{}` ({}){in_stack}",
                        e.resource_name, e.resource_status
                    )),
                    e.resource_status_reason
                        .clone()
                        .unwrap_or_else(|| stack_reason.clone()),
                )
            }
            None => (None, stack_reason),
        };
        OpenStackError::StackFailed {
            stack: s.stack_name.clone(),
            status: s.stack_status.clone(),
            resource,
            reason: self.api.session.redact(&cut(&reason, 600)),
        }
    }
}

/// How long a create waits for the name of a just deleted stack to become free.
const NAME_RELEASE_WAIT: Duration = Duration::from_secs(120);

/// Whether a stack status is final (no action in progress).
pub fn is_final(status: &str) -> bool {
    status.ends_with("_COMPLETE") || status.ends_with("_FAILED")
}

/// What [`enc`] leaves as it is: the RFC 3986 unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes a path segment (stack and resource names are mostly plain already, server
/// ids are UUIDs): everything but the unreserved characters is escaped.
pub(crate) fn enc(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_refs_parse_from_links_and_locations() {
        let r = StackRef::from_href(
            "http://heat:8004/v1/p1/stacks/vnf-1-VDU1_group-abc/1915e4ac-6773?x=1",
        )
        .unwrap();
        assert_eq!(r.name, "vnf-1-VDU1_group-abc");
        assert_eq!(r.id, "1915e4ac-6773");
        assert_eq!(r.path(), "stacks/vnf-1-VDU1_group-abc/1915e4ac-6773");
        assert!(StackRef::from_href("http://heat/v1/p1/stacks/only-name").is_none());
        assert_eq!(enc("a b/c"), "a%20b%2Fc");
    }

    #[test]
    fn nfv_parameter_comes_back_as_a_string() {
        let s: Stack = serde_json::from_value(json!({
            "id": "1", "stack_name": "s", "stack_status": "CREATE_COMPLETE",
            "parameters": {"nfv": "{\"VDU\": {\"VDU1\": {\"desired_capacity\": 2}}}"}
        }))
        .unwrap();
        assert_eq!(s.nfv()["VDU"]["VDU1"]["desired_capacity"], 2);
        assert!(is_final("ROLLBACK_FAILED"));
        assert!(!is_final("UPDATE_IN_PROGRESS"));
    }
}
