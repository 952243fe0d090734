//! Keystone v3: a [`Session`] per VIM connection authenticates (password or application
//! credential), caches the token until shortly before it expires, picks service endpoints
//! from the token's catalog (service type, interface, region), and sends API calls with the
//! token: a `401` re-authenticates once, transient failures (connection errors, `5xx`,
//! `429`) are retried with bounded exponential backoff, everything else is reported at once.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use vnfm_driver_api::{DriverError, ResolvedVim, RunControl};
use vnfm_types::SecretString;

use crate::config::{
    Credentials, DriverConfig, PollPolicy, ProjectScope, RetryPolicy, VimSettings,
};
use crate::error::{OpenStackError, cut};

/// Statuses retried by the HTTP layer (other transient statuses, such as `409`, are left to
/// the caller, which knows whether repeating the call makes sense).
const RETRY_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];

/// One endpoint of the service catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogEndpoint {
    /// `public`, `internal` or `admin`.
    pub interface: String,
    /// Region id.
    #[serde(default)]
    pub region_id: Option<String>,
    /// Region name (older Keystones).
    #[serde(default)]
    pub region: Option<String>,
    /// The URL (project ids already substituted by Keystone).
    pub url: String,
}

/// One service of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogService {
    /// Service type (`orchestration`, `compute`, `network`, `image`, `volumev3`, ...).
    #[serde(rename = "type")]
    pub service_type: String,
    /// Its endpoints.
    #[serde(default)]
    pub endpoints: Vec<CatalogEndpoint>,
}

/// An issued token with its catalog.
pub struct Token {
    value: SecretString,
    /// When Keystone says it expires.
    pub expires_at: Option<SystemTime>,
    /// The project the token is scoped to.
    pub project_id: Option<String>,
    /// The service catalog.
    pub catalog: Vec<CatalogService>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("expires_at", &self.expires_at)
            .field("project_id", &self.project_id)
            .field("services", &self.catalog.len())
            .finish_non_exhaustive()
    }
}

impl Token {
    /// The URL of service `service_type` for `interface` in `region` (any region when
    /// `None`), without a trailing slash.
    pub fn endpoint(
        &self,
        service_type: &str,
        interface: &str,
        region: Option<&str>,
    ) -> Result<String, OpenStackError> {
        let wanted_types = service_type_aliases(service_type);
        for t in &wanted_types {
            for svc in self.catalog.iter().filter(|s| s.service_type == *t) {
                let found = svc.endpoints.iter().find(|e| {
                    e.interface == interface
                        && region.is_none_or(|r| {
                            e.region_id.as_deref() == Some(r) || e.region.as_deref() == Some(r)
                        })
                });
                if let Some(e) = found {
                    return Ok(e.url.trim_end_matches('/').to_string());
                }
            }
        }
        let available: Vec<String> = self
            .catalog
            .iter()
            .flat_map(|s| {
                s.endpoints.iter().map(move |e| {
                    format!(
                        "{}/{}/{}",
                        s.service_type,
                        e.interface,
                        e.region_id
                            .as_deref()
                            .or(e.region.as_deref())
                            .unwrap_or("-")
                    )
                })
            })
            .collect();
        Err(OpenStackError::NoEndpoint {
            service_type: service_type.to_string(),
            interface: interface.to_string(),
            region: region.map(str::to_string),
            available: if available.is_empty() {
                "none".into()
            } else {
                available.join(", ")
            },
        })
    }
}

/// Catalog types tried for a service, newest first (block storage moved from `volumev3` to
/// `block-storage`).
fn service_type_aliases(service_type: &str) -> Vec<&str> {
    match service_type {
        "volume" | "volumev3" | "block-storage" => vec!["block-storage", "volumev3", "volume"],
        other => vec![other],
    }
}

/// The answer of an API call whose status the caller accepts.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The `Location` header, when present.
    pub location: Option<String>,
    /// Keystone's `X-Subject-Token` header, when present.
    subject_token: Option<SecretString>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (`null` when empty).
    pub fn json(&self, what: &str, service: &'static str) -> Result<Value, OpenStackError> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|source| OpenStackError::ResponseBody {
            what: what.to_string(),
            service,
            problem: "the body is not JSON".into(),
            source,
        })
    }
}

/// One service API of a VIM (Heat, Nova, ...) for one step: the session, the step's
/// deadline and cancellation, the service's endpoint from the catalog and the polling policy.
pub(crate) struct ServiceApi<'a> {
    pub(crate) session: &'a Session,
    pub(crate) control: &'a RunControl,
    pub(crate) base: String,
    pub(crate) poll: PollPolicy,
}

impl<'a> ServiceApi<'a> {
    /// Finds the endpoint of `service_type` in the catalog (interface and region of the VIM).
    pub(crate) async fn connect(
        session: &'a Session,
        control: &'a RunControl,
        poll: PollPolicy,
        service_type: &str,
    ) -> Result<ServiceApi<'a>, DriverError> {
        let base = session.endpoint(control, service_type).await?;
        Ok(ServiceApi {
            session,
            control,
            base,
            poll,
        })
    }
}

/// The body of a request.
enum Payload<'a> {
    None,
    Json(&'a Value),
    /// Raw data (cheap to clone for a retry: the bytes are shared).
    Bytes(bytes::Bytes),
}

/// An authenticated connection to one OpenStack VIM.
pub struct Session {
    settings: VimSettings,
    vim: ResolvedVim,
    http: reqwest::Client,
    retry: RetryPolicy,
    margin: Duration,
    token: Mutex<Option<Arc<Token>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session for `vim` (no request is made yet).
    pub fn new(
        vim: &ResolvedVim,
        settings: VimSettings,
        config: &DriverConfig,
    ) -> Result<Session, OpenStackError> {
        let mut b = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(15)))
            // Heat answers a stack lookup by name with a redirect to name/id; it is followed
            // by hand so the token never goes to a host the catalog did not name.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("vnfm-infra-openstack/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &settings.tls.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes()).map_err(|e| {
                OpenStackError::Client {
                    what: format!("VIM connection `{}`", settings.connection_id),
                    source: e,
                }
            })?;
            b = b.tls_certs_merge(certs);
        }
        if settings.tls.insecure {
            b = b.tls_danger_accept_invalid_certs(true);
        }
        if settings.tls.skip_hostname_check {
            b = b.tls_danger_accept_invalid_hostnames(true);
        }
        let http = b.build().map_err(|e| OpenStackError::Client {
            what: format!("VIM connection `{}`", settings.connection_id),
            source: e,
        })?;
        Ok(Session {
            settings,
            vim: vim.clone(),
            http,
            retry: config.retry.clone(),
            margin: config.token_refresh_margin,
            token: Mutex::new(None),
        })
    }

    /// The VIM settings.
    pub fn settings(&self) -> &VimSettings {
        &self.settings
    }

    /// `text` with the VIM's secrets replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        self.vim.redact(text)
    }

    /// A valid token: the cached one unless it expires within the refresh margin.
    pub async fn token(&self, control: &RunControl) -> Result<Arc<Token>, DriverError> {
        let mut slot = self.token.lock().await;
        if let Some(t) = slot.as_ref() {
            let fresh = t
                .expires_at
                .is_none_or(|at| at > SystemTime::now() + self.margin);
            if fresh {
                return Ok(t.clone());
            }
        }
        let t = Arc::new(self.authenticate(control).await?);
        *slot = Some(t.clone());
        Ok(t)
    }

    /// Forgets `stale` (when it is still the cached token), so the next call re-authenticates.
    async fn invalidate(&self, stale: &Arc<Token>) {
        let mut slot = self.token.lock().await;
        if slot.as_ref().is_some_and(|t| Arc::ptr_eq(t, stale)) {
            *slot = None;
        }
    }

    fn auth_body(&self) -> Value {
        let identity = match &self.settings.credentials {
            Credentials::Password {
                username,
                password,
                user_domain,
            } => json!({
                "methods": ["password"],
                "password": {"user": {
                    "name": username,
                    "domain": {"name": user_domain},
                    "password": password.expose(),
                }}
            }),
            Credentials::ApplicationCredential { id, secret } => json!({
                "methods": ["application_credential"],
                "application_credential": {"id": id, "secret": secret.expose()}
            }),
        };
        let mut auth = json!({ "identity": identity });
        if matches!(self.settings.credentials, Credentials::Password { .. }) {
            match &self.settings.scope {
                Some(ProjectScope::Name { name, domain }) => {
                    auth["scope"] = json!({"project": {"name": name, "domain": {"name": domain}}});
                }
                Some(ProjectScope::Id(id)) => {
                    auth["scope"] = json!({"project": {"id": id}});
                }
                None => {}
            }
        }
        json!({ "auth": auth })
    }

    async fn authenticate(&self, control: &RunControl) -> Result<Token, DriverError> {
        let url = format!("{}/auth/tokens", self.settings.auth_url);
        let what = "POST /v3/auth/tokens";
        let body = self.auth_body();
        let reply = self
            .send_with_retry(control, what, "keystone", || {
                self.http.post(&url).json(&body)
            })
            .await?;
        if matches!(reply.status.as_u16(), 401 | 403) {
            return Err(OpenStackError::Unauthorized {
                connection: self.settings.connection_id.clone(),
                endpoint: self.settings.auth_url.clone(),
                status: reply.status.as_u16(),
                detail: self.error_detail(&reply.body),
            }
            .into());
        }
        if !reply.status.is_success() {
            return Err(self.status_error(what, "keystone", &reply).into());
        }
        let subject = reply.subject_token.clone();
        let parsed: TokenBody =
            serde_json::from_slice(&reply.body).map_err(|source| OpenStackError::ResponseBody {
                what: what.into(),
                service: "keystone",
                problem: "no token in the body".into(),
                source,
            })?;
        let Some(subject) = subject else {
            return Err(OpenStackError::Response {
                what: what.into(),
                service: "keystone",
                message: "no X-Subject-Token header".into(),
            }
            .into());
        };
        tracing::debug!(
            vim = %self.settings.connection_id,
            expires_at = parsed.token.expires_at.as_deref().unwrap_or("-"),
            "authenticated to Keystone"
        );
        Ok(Token {
            value: subject,
            expires_at: parsed.token.expires_at.as_deref().and_then(parse_rfc3339),
            project_id: parsed.token.project.map(|p| p.id),
            catalog: parsed.token.catalog,
        })
    }

    /// The endpoint URL of `service_type` for this VIM's interface and region.
    pub async fn endpoint(
        &self,
        control: &RunControl,
        service_type: &str,
    ) -> Result<String, DriverError> {
        let token = self.token(control).await?;
        Ok(token.endpoint(
            service_type,
            &self.settings.interface,
            self.settings.region.as_deref(),
        )?)
    }

    /// Whether the catalog offers `service_type` at this VIM's interface and region.
    pub async fn offers(
        &self,
        control: &RunControl,
        service_type: &str,
    ) -> Result<bool, DriverError> {
        let token = self.token(control).await?;
        match token.endpoint(
            service_type,
            &self.settings.interface,
            self.settings.region.as_deref(),
        ) {
            Ok(_) => Ok(true),
            Err(OpenStackError::NoEndpoint { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Calls `method` on `url` with the token and an optional JSON body. Answers with any
    /// status below 400 and the statuses in `accept`; other statuses are errors.
    pub async fn call(
        &self,
        control: &RunControl,
        service: &'static str,
        method: Method,
        url: &str,
        body: Option<&Value>,
        accept: &[u16],
    ) -> Result<Reply, DriverError> {
        let payload = body.map_or(Payload::None, Payload::Json);
        self.send_payload(control, service, method, url, payload, accept)
            .await
    }

    /// `PUT`s `data` to `url` as `application/octet-stream` (an image's data); any status of
    /// 400 or more is an error.
    pub async fn put_bytes(
        &self,
        control: &RunControl,
        service: &'static str,
        url: &str,
        data: bytes::Bytes,
    ) -> Result<Reply, DriverError> {
        self.send_payload(
            control,
            service,
            Method::PUT,
            url,
            Payload::Bytes(data),
            &[],
        )
        .await
    }

    async fn send_payload(
        &self,
        control: &RunControl,
        service: &'static str,
        method: Method,
        url: &str,
        payload: Payload<'_>,
        accept: &[u16],
    ) -> Result<Reply, DriverError> {
        let what = format!("{method} {}", path_of(url));
        let mut reauthenticated = false;
        loop {
            let token = self.token(control).await?;
            let reply = self
                .send_with_retry(control, &what, service, || {
                    let r = self
                        .http
                        .request(method.clone(), url)
                        .header("X-Auth-Token", token.value.expose())
                        .header("Accept", "application/json");
                    match &payload {
                        Payload::None => r,
                        Payload::Json(b) => r.json(b),
                        Payload::Bytes(data) => r
                            .header("Content-Type", "application/octet-stream")
                            .body(data.clone()),
                    }
                })
                .await?;
            let status = reply.status.as_u16();
            if status == 401 && !reauthenticated {
                // The token was revoked or expired early: authenticate once more.
                self.invalidate(&token).await;
                reauthenticated = true;
                continue;
            }
            if status < 400 || accept.contains(&status) {
                return Ok(reply);
            }
            return Err(self.status_error(&what, service, &reply).into());
        }
    }

    fn status_error(&self, what: &str, service: &'static str, reply: &Reply) -> OpenStackError {
        OpenStackError::Status {
            what: what.to_string(),
            service,
            status: reply.status.as_u16(),
            detail: self.error_detail(&reply.body),
        }
    }

    /// The message of an OpenStack error body (`{"error": {"message": ...}}`, Heat's
    /// `{"explanation": ..., "error": {"message": ...}}`, Nova's
    /// `{"itemNotFound": {"message": ..., "code": 404}}`), cut and redacted.
    fn error_detail(&self, body: &[u8]) -> String {
        let text = match serde_json::from_slice::<Value>(body) {
            Ok(v) => {
                let nova = || {
                    v.as_object()
                        .and_then(|m| m.values().find_map(|x| x.get("message")))
                };
                let msg = v
                    .pointer("/error/message")
                    .or_else(|| v.pointer("/explanation"))
                    .or_else(|| v.pointer("/message"))
                    .or_else(nova)
                    .and_then(Value::as_str)
                    .map(str::to_string);
                msg.unwrap_or_else(|| v.to_string())
            }
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        self.redact(&cut(&text, 400))
    }

    /// Sends the request `build` makes, retrying transport errors and [`RETRY_STATUSES`] per
    /// the retry policy, within the step's deadline.
    async fn send_with_retry(
        &self,
        control: &RunControl,
        what: &str,
        service: &'static str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Reply, DriverError> {
        let attempts = self.retry.attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            control.check(what)?;
            // One `infra.request` span per attempt, its traceparent on the request.
            let outcome = vnfm_trace_reqwest::send(build(), vnfm_trace::VimType::OpenStack).await;
            let retry_reason = match outcome {
                Ok(resp) => {
                    let status = resp.status();
                    let header = |name: &str| {
                        resp.headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    let location = header("location");
                    let subject_token = header("x-subject-token").map(SecretString::new);
                    let body = match resp.bytes().await {
                        Ok(b) => b.to_vec(),
                        Err(e) if attempt < attempts => {
                            tracing::debug!(%what, error = %e.without_url(), "reading the body failed; retrying");
                            self.pause(control, attempt, what).await?;
                            continue;
                        }
                        Err(e) => return Err(self.unreachable(what, attempt, e)),
                    };
                    let reply = Reply {
                        status,
                        location,
                        subject_token,
                        body,
                    };
                    if RETRY_STATUSES.contains(&status.as_u16()) && attempt < attempts {
                        format!("HTTP {status}")
                    } else {
                        return Ok(reply);
                    }
                }
                Err(e) if attempt < attempts => e.without_url().to_string(),
                Err(e) => return Err(self.unreachable(what, attempt, e)),
            };
            tracing::debug!(%what, service, attempt, reason = %retry_reason, "transient failure; retrying");
            self.pause(control, attempt, what).await?;
        }
    }

    async fn pause(
        &self,
        control: &RunControl,
        attempt: u32,
        what: &str,
    ) -> Result<(), DriverError> {
        sleep_within(control, self.retry.delay(attempt), what).await
    }

    fn unreachable(&self, what: &str, attempts: u32, e: reqwest::Error) -> DriverError {
        let url = e
            .url()
            .map(|u| format!("{}://{}{}", u.scheme(), u.authority(), u.path()))
            .unwrap_or_else(|| "-".into());
        OpenStackError::Unreachable {
            what: what.to_string(),
            url,
            attempts,
            source: e.without_url(),
        }
        .into()
    }
}

/// Sleeps `d`, cut short by the step's deadline or cancellation (then the matching error).
pub(crate) async fn sleep_within(
    control: &RunControl,
    d: Duration,
    what: &str,
) -> Result<(), DriverError> {
    let end = std::time::Instant::now() + d;
    loop {
        control.check(what)?;
        let now = std::time::Instant::now();
        if now >= end {
            return Ok(());
        }
        // Short slices so a cancellation is noticed quickly.
        tokio::time::sleep((end - now).min(Duration::from_millis(250))).await;
    }
}

/// The path of a URL, for messages (no host, no query).
pub(crate) fn path_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => u.path().to_string(),
        Err(_) => "<url>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keystone_timestamps_parse_and_garbage_does_not() {
        let t = parse_rfc3339("2026-11-21T10:33:33.000000Z").unwrap();
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
            1_795_257_213
        );
        let offset = parse_rfc3339("2026-11-21T11:33:33+01:00").unwrap();
        assert_eq!(offset, t);
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "99999999999-01-01T00:00:00Z",
            "2026-01-01T00:00:00-",
            "2026-01-01",
            "2026-01-01T25:00:00Z",
        ] {
            assert!(parse_rfc3339(bad).is_none(), "{bad}");
        }
    }
}

#[derive(Deserialize)]
struct TokenBody {
    token: TokenFields,
}

#[derive(Deserialize)]
struct TokenFields {
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    project: Option<IdOnly>,
    #[serde(default)]
    catalog: Vec<CatalogService>,
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

/// `2026-01-02T03:04:05.123456Z` (or with a `+hh:mm` offset) as a [`SystemTime`].
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    vnfm_types::time::parse_rfc3339(s.trim()).map(SystemTime::from)
}
