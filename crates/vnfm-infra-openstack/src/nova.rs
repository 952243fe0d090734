//! A Nova compute API (2.1) client ([`Nova`]) for the power actions of the operate step:
//! read a server, ask it to start or stop (`os-start` / `os-stop`), and wait with backoff
//! until it is `ACTIVE` / `SHUTOFF`.
//!
//! Nova answers `409 Conflict` while a server is busy with another task (`task_state` set,
//! e.g. `powering-on`): the action is sent again once the task is over. A `409` for any
//! other reason (a paused or shelved server, ...) and other client errors are reported at
//! once with the server and Nova's message. A server already in the state asked for gets
//! no action (a retried step finds it so).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use vnfm_driver_api::{DriverError, RunControl};
use vnfm_types::VnfOperationalState;

use crate::config::PollPolicy;
use crate::error::{OpenStackError, cut};
use crate::heat::enc;
use crate::keystone::{ServiceApi, Session, sleep_within};

/// A server as `GET /servers/{id}` shows it (the members the power actions need).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Server {
    /// The id.
    pub id: String,
    /// The name.
    #[serde(default)]
    pub name: String,
    /// `ACTIVE`, `SHUTOFF`, `BUILD`, `ERROR`, `PAUSED`, ...
    pub status: String,
    /// The task the server is busy with (`powering-off`, `rebooting`, ...), if any.
    #[serde(rename = "OS-EXT-STS:task_state", default)]
    pub task_state: Option<String>,
    /// Why the server is in `ERROR`, when Nova recorded it.
    #[serde(default)]
    pub fault: Option<Fault>,
}

/// A server fault.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Fault {
    /// The message.
    #[serde(default)]
    pub message: String,
}

/// The power state an operate step brings a server to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    /// Running: status `ACTIVE`, action `os-start`.
    On,
    /// Stopped: status `SHUTOFF`, action `os-stop`.
    Off,
}

impl Power {
    /// The power state of a VNF operational state.
    pub fn of(state: VnfOperationalState) -> Power {
        match state {
            VnfOperationalState::Started => Power::On,
            VnfOperationalState::Stopped => Power::Off,
        }
    }

    /// The server status that means done.
    pub fn status(self) -> &'static str {
        match self {
            Power::On => "ACTIVE",
            Power::Off => "SHUTOFF",
        }
    }

    /// The server action.
    pub fn action(self) -> &'static str {
        match self {
            Power::On => "os-start",
            Power::Off => "os-stop",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Power::On => "start",
            Power::Off => "stop",
        }
    }
}

/// One server of a VNF: its Nova id and the VNFC it backs (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The Nova server id.
    pub server: String,
    /// The `vnfcResourceInfo` id.
    pub vnfc: String,
}

/// The compute API of one VIM, for one step.
pub struct Nova<'a> {
    api: ServiceApi<'a>,
}

impl<'a> Nova<'a> {
    /// Finds the compute endpoint in the catalog (interface and region of the VIM).
    pub async fn connect(
        session: &'a Session,
        control: &'a RunControl,
        poll: PollPolicy,
    ) -> Result<Nova<'a>, DriverError> {
        Ok(Nova {
            api: ServiceApi::connect(session, control, poll, "compute").await?,
        })
    }

    /// The endpoint in use (`http://nova:8774/v2.1`).
    pub fn base(&self) -> &str {
        &self.api.base
    }

    fn url(&self, server: &str, tail: &str) -> String {
        format!("{}/servers/{}{tail}", self.api.base, enc(server))
    }

    /// The server `id`, `None` when Nova does not know it.
    pub async fn server(&self, id: &str) -> Result<Option<Server>, DriverError> {
        let url = self.url(id, "");
        let r = self
            .api
            .session
            .call(self.api.control, "nova", Method::GET, &url, None, &[404])
            .await?;
        if r.status.as_u16() == 404 {
            return Ok(None);
        }
        let what = format!("GET /servers/{id}");
        let v = r.json(&what, "nova")?;
        let inner = match v {
            Value::Object(mut m) => m.remove("server").unwrap_or(Value::Null),
            _ => Value::Null,
        };
        serde_json::from_value(inner).map(Some).map_err(|e| {
            OpenStackError::ResponseBody {
                what,
                service: "nova",
                problem: "`server` is missing or malformed".into(),
                source: e,
            }
            .into()
        })
    }

    /// The server, or an error when it is gone.
    async fn existing(&self, t: &Target, power: Power) -> Result<Server, DriverError> {
        self.server(&t.server).await?.ok_or_else(|| {
            self.refused(
                t,
                power,
                "Nova does not know the server (deleted outside the VNFM?)".into(),
            )
        })
    }

    fn refused(&self, t: &Target, power: Power, message: String) -> DriverError {
        OpenStackError::ServerAction {
            action: power.verb(),
            server: t.server.clone(),
            vnfc: t.vnfc.clone(),
            message,
        }
        .into()
    }

    fn failed(&self, t: &Target, power: Power, s: &Server) -> DriverError {
        let fault = s
            .fault
            .as_ref()
            .map(|f| f.message.as_str())
            .filter(|m| !m.is_empty())
            .unwrap_or("Nova recorded no fault");
        self.refused(
            t,
            power,
            format!(
                "the server is in status ERROR: {}",
                self.api.session.redact(&cut(fault, 400))
            ),
        )
    }

    fn timeout(&self, t: &Target, power: Power, s: &Server, started: Instant) -> DriverError {
        OpenStackError::ServerTimeout {
            server: t.server.clone(),
            vnfc: t.vnfc.clone(),
            expected: power.status(),
            last: match &s.task_state {
                Some(t) => format!("{}, task {t}", s.status),
                None => s.status.clone(),
            },
            waited: started.elapsed(),
        }
        .into()
    }

    /// Asks server `t` to reach `power`, unless it is there already (then `false`). A `409`
    /// while the server is busy with a task is retried with backoff until `deadline`.
    pub async fn request(
        &self,
        t: &Target,
        power: Power,
        deadline: Instant,
    ) -> Result<bool, DriverError> {
        let started = Instant::now();
        let url = self.url(&t.server, "/action");
        let body = json!({ power.action(): null });
        let mut delay = self.api.poll.initial;
        loop {
            let s = self.existing(t, power).await?;
            if s.status == power.status() && s.task_state.is_none() {
                return Ok(false);
            }
            if s.status == "ERROR" {
                return Err(self.failed(t, power, &s));
            }
            // Busy with another task: Nova would answer 409; wait for the task to end.
            if s.task_state.is_none() {
                let r = self
                    .api
                    .session
                    .call(
                        self.api.control,
                        "nova",
                        Method::POST,
                        &url,
                        Some(&body),
                        &[400, 403, 404, 409],
                    )
                    .await?;
                let status = r.status.as_u16();
                if r.status.is_success() {
                    tracing::info!(server = %t.server, vnfc = %t.vnfc, action = power.action(), "Nova server action accepted");
                    return Ok(true);
                }
                let message = nova_message(self.api.session, &r.body);
                if status != 409 {
                    return Err(self.refused(
                        t,
                        power,
                        format!("Nova answered HTTP {status}: {message}"),
                    ));
                }
                // The server took up a task since it was read, or cannot do the action in
                // its state at all: read it again to tell.
                let now = self.existing(t, power).await?;
                if now.status == power.status() && now.task_state.is_none() {
                    return Ok(false);
                }
                if now.task_state.is_none() {
                    return Err(self.refused(
                        t,
                        power,
                        format!("Nova answered HTTP 409 (status {}): {message}", now.status),
                    ));
                }
                tracing::debug!(server = %t.server, task = ?now.task_state, "Nova server busy; retrying the action");
            }
            if Instant::now() >= deadline {
                return Err(self.timeout(t, power, &s, started));
            }
            let what = format!(
                "waiting for Nova server {} to finish its task before {}",
                t.server,
                power.action()
            );
            sleep_within(self.api.control, self.pause(delay, deadline), &what).await?;
            delay = self.api.poll.next(delay);
        }
    }

    /// Waits until server `t` is in `power`'s status with no task, with backoff, until
    /// `deadline` (or the step's own deadline).
    pub async fn wait(
        &self,
        t: &Target,
        power: Power,
        deadline: Instant,
    ) -> Result<Server, DriverError> {
        let started = Instant::now();
        let mut delay = self.api.poll.initial;
        loop {
            let s = self.existing(t, power).await?;
            if s.status == power.status() && s.task_state.is_none() {
                return Ok(s);
            }
            if s.status == "ERROR" {
                return Err(self.failed(t, power, &s));
            }
            if Instant::now() >= deadline {
                return Err(self.timeout(t, power, &s, started));
            }
            let what = format!(
                "waiting for Nova server {} to become {}",
                t.server,
                power.status()
            );
            sleep_within(self.api.control, self.pause(delay, deadline), &what).await?;
            delay = self.api.poll.next(delay);
        }
    }

    /// Deletes server `t` and waits, with backoff until `deadline`, until Nova no longer
    /// knows it. Nova then releases its ports (unbinds them; ports made outside Nova stay),
    /// which a server in `ERROR` cannot give up by a detach: Nova refuses interface detach in
    /// that state.
    pub async fn delete_and_wait(&self, t: &Target, deadline: Instant) -> Result<(), DriverError> {
        let started = Instant::now();
        let url = self.url(&t.server, "");
        let r = self
            .api
            .session
            .call(
                self.api.control,
                "nova",
                Method::DELETE,
                &url,
                None,
                &[400, 403, 404, 409],
            )
            .await?;
        let status = r.status.as_u16();
        if !r.status.is_success() && status != 404 {
            return Err(OpenStackError::ServerAction {
                action: "delete",
                server: t.server.clone(),
                vnfc: t.vnfc.clone(),
                message: format!(
                    "Nova answered HTTP {status}: {}",
                    nova_message(self.api.session, &r.body)
                ),
            }
            .into());
        }
        tracing::info!(server = %t.server, vnfc = %t.vnfc, "Nova server delete accepted");
        let mut delay = self.api.poll.initial;
        loop {
            let Some(s) = self.server(&t.server).await? else {
                return Ok(());
            };
            if s.status == "DELETED" || s.status == "SOFT_DELETED" {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(OpenStackError::ServerTimeout {
                    server: t.server.clone(),
                    vnfc: t.vnfc.clone(),
                    expected: "deleted",
                    last: s.status,
                    waited: started.elapsed(),
                }
                .into());
            }
            let what = format!("waiting for Nova to delete server {}", t.server);
            sleep_within(self.api.control, self.pause(delay, deadline), &what).await?;
            delay = self.api.poll.next(delay);
        }
    }

    fn pause(&self, delay: Duration, deadline: Instant) -> Duration {
        delay.min(deadline.saturating_duration_since(Instant::now()))
    }
}

/// The message of a Nova error body (`{"conflictingRequest": {"message": ..., "code": 409}}`
/// and the like), cut and redacted.
fn nova_message(session: &Session, body: &[u8]) -> String {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m
            .values()
            .find_map(|v| v.get("message").and_then(Value::as_str))
            .map(str::to_string)
            .unwrap_or_else(|| Value::Object(m).to_string()),
        Ok(v) => v.to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    session.redact(&cut(&text, 400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_parse_from_the_compute_api_shape() {
        let s: Server = serde_json::from_value(json!({
            "id": "9168b536-cd40-4630-b43f-b259807c6e87", "name": "vdu1",
            "status": "ACTIVE", "OS-EXT-STS:task_state": "powering-off",
            "OS-EXT-STS:vm_state": "active", "OS-EXT-STS:power_state": 1
        }))
        .unwrap();
        assert_eq!(s.task_state.as_deref(), Some("powering-off"));
        let s: Server = serde_json::from_value(json!({
            "id": "x", "status": "ERROR", "OS-EXT-STS:task_state": null,
            "fault": {"code": 500, "message": "No valid host was found."}
        }))
        .unwrap();
        assert_eq!(s.task_state, None);
        assert_eq!(s.fault.unwrap().message, "No valid host was found.");
        assert_eq!(Power::of(VnfOperationalState::Stopped).action(), "os-stop");
        assert_eq!(Power::of(VnfOperationalState::Started).status(), "ACTIVE");
        assert_eq!(enc("a/b"), "a%2Fb");
    }
}
