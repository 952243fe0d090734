//! The one seam to the server: an HTTP client that gets an OAuth 2.0 token from
//! `/oauth2/token` (cached on disk for its lifetime), sends the `Version` header, turns error
//! answers into [`ClientError::Problem`] and follows list pages.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, LINK, LOCATION};
use reqwest::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::config::Settings;
use super::error::{ClientError, Problem};

/// The API version sent in the `Version` header (SOL013 clause 4.9).
const API_VERSION: &str = "2.0.0";

/// The pause before a state-changing request is sent again after a lost connection.
const RESEND_DELAY: Duration = Duration::from_millis(500);

/// The `Version` header for a request to `path` (or a whole URL): the version of the API it
/// belongs to. The SOL003 v2.6.1 APIs the client calls (fault management, indicators) refuse a major
/// version they do not serve.
fn api_version(path: &str) -> &'static str {
    if ["/vnffm/v1", "/vnfind/v1"]
        .iter()
        .any(|api| path.contains(&format!("{api}/")) || path.ends_with(api))
    {
        "1.2.0"
    } else {
        API_VERSION
    }
}
/// A cached token is not used when it expires within this margin.
const EXPIRY_MARGIN_SECS: u64 = 30;
/// Most pages followed for one list (100 items each).
const MAX_PAGES: usize = 1000;

/// A request body.
pub enum Body {
    /// No body.
    Empty,
    /// `application/json`.
    Json(Value),
    /// `application/merge-patch+json`.
    MergePatch(Value),
    /// `application/zip`.
    Zip(Vec<u8>),
}

/// A successful answer.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// The JSON body (`Null` when empty or not JSON).
    pub body: Value,
}

impl Answer {
    /// The `Location` header.
    pub fn location(&self) -> Option<&str> {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok())
    }
}

#[derive(Serialize, Deserialize)]
struct CachedToken {
    access_token: String,
    /// Seconds since the Unix epoch.
    expires_at: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A client connected to one VNFM.
pub struct Api {
    http: reqwest::Client,
    settings: Settings,
    token: Mutex<Option<CachedToken>>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("url", &self.settings.url)
            .finish_non_exhaustive()
    }
}

/// The error text of a failure with its causes (reqwest's own message is terse).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

impl Api {
    /// A client for `settings`; no request is sent yet.
    pub fn new(settings: Settings) -> Result<Api, ClientError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            // 303 (an identical subscription exists) is reported, not followed.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("vnfm-cli/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &settings.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
                ClientError::Config(format!("the CA certificate file is not PEM: {e}"))
            })?;
            if certs.is_empty() {
                return Err(ClientError::Config(
                    "the CA certificate file holds no certificate".into(),
                ));
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Config(format!("cannot set up HTTP: {}", chain(&e))))?;
        Ok(Api {
            http,
            settings,
            token: Mutex::new(None),
        })
    }

    /// The cache file of this URL and client (the name hashes the secret too, so a changed
    /// secret does not reuse an old token).
    fn cache_file(&self) -> Option<PathBuf> {
        let dir = self.settings.token_cache_dir.as_ref()?;
        let mut h = Sha256::new();
        let issuer = self.settings.oauth_issuer.clone().unwrap_or_default();
        for part in [
            &self.settings.url,
            &issuer,
            &self.settings.client_id,
            &self.settings.client_secret,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let digest = hex::encode(h.finalize());
        Some(dir.join(format!("token-{}.json", &digest[..24])))
    }

    fn load_cached(&self) -> Option<CachedToken> {
        let bytes = std::fs::read(self.cache_file()?).ok()?;
        let t: CachedToken = serde_json::from_slice(&bytes).ok()?;
        (t.expires_at > now_secs() + EXPIRY_MARGIN_SECS).then_some(t)
    }

    /// Writes the token file with mode 0600 in a 0700 directory; a cache that cannot be
    /// written only costs a token request next time.
    fn store_cached(&self, t: &CachedToken) {
        let Some(path) = self.cache_file() else {
            return;
        };
        let Ok(text) = serde_json::to_vec(t) else {
            return;
        };
        if let Some(dir) = path.parent() {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                b.mode(0o700);
            }
            if b.create(dir).is_err() {
                return;
            }
        }
        let tmp = path.with_extension("tmp");
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let written = o.open(&tmp).and_then(|mut f| {
            use std::io::Write;
            f.write_all(&text)
        });
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    fn forget_cached(&self) {
        if let Some(p) = self.cache_file() {
            let _ = std::fs::remove_file(p);
        }
    }

    /// A bearer token: the one in memory, else the cached one, else a new one.
    async fn token(&self, fresh: bool) -> Result<String, ClientError> {
        let mut slot = self.token.lock().await;
        if fresh {
            *slot = None;
            self.forget_cached();
        }
        if let Some(t) = slot.as_ref()
            && t.expires_at > now_secs() + EXPIRY_MARGIN_SECS
        {
            return Ok(t.access_token.clone());
        }
        if let Some(login) = &self.settings.keystone {
            let issued = vnfm_keystone::login(&self.http, &login.auth_url, &login.credentials)
                .await
                .map_err(|e| {
                    ClientError::Config(format!(
                        "Keystone login at {} failed: {}",
                        login.auth_url,
                        chain(&e)
                    ))
                })?;
            let expires_at = issued
                .expires_at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let t = CachedToken {
                access_token: issued.value.expose().to_owned(),
                expires_at,
            };
            let token = t.access_token.clone();
            *slot = Some(t);
            return Ok(token);
        }
        if let Some(t) = self.load_cached() {
            let token = t.access_token.clone();
            *slot = Some(t);
            return Ok(token);
        }
        let url = match &self.settings.oauth_issuer {
            Some(issuer) => self.token_endpoint(issuer).await?,
            None => format!("{}/oauth2/token", self.settings.url),
        };
        let resp = self
            .http
            .post(&url)
            .basic_auth(&self.settings.client_id, Some(&self.settings.client_secret))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .map_err(|e| ClientError::Connect {
                url: url.clone(),
                message: chain(&e),
            })?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| ClientError::Connect {
            url: url.clone(),
            message: chain(&e),
        })?;
        if !status.is_success() {
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let detail = body
                .get("error_description")
                .or_else(|| body.get("detail"))
                .or_else(|| body.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("no detail given")
                .to_owned();
            return Err(ClientError::Auth {
                by: match &self.settings.oauth_issuer {
                    Some(issuer) => format!("the authorization server {issuer}"),
                    None => "the VNFM".to_owned(),
                },
                status: status.as_u16(),
                detail,
            });
        }
        let body: Value = serde_json::from_str(&text).map_err(|e| ClientError::Unexpected {
            what: format!("POST {url}"),
            message: format!("the body is not JSON: {e}"),
        })?;
        let Some(access_token) = body.get("access_token").and_then(Value::as_str) else {
            return Err(ClientError::Unexpected {
                what: format!("POST {url}"),
                message: "no access_token in the answer".into(),
            });
        };
        let ttl = body.get("expires_in").and_then(Value::as_u64).unwrap_or(0);
        let t = CachedToken {
            access_token: access_token.to_owned(),
            expires_at: now_secs() + ttl,
        };
        if ttl > EXPIRY_MARGIN_SECS {
            self.store_cached(&t);
        }
        let token = t.access_token.clone();
        *slot = Some(t);
        Ok(token)
    }

    /// The token endpoint of authorization server `issuer`, from its metadata (OpenID Connect
    /// discovery, else RFC 8414).
    async fn token_endpoint(&self, issuer: &str) -> Result<String, ClientError> {
        let mut last = String::new();
        for well_known in ["openid-configuration", "oauth-authorization-server"] {
            let url = format!("{issuer}/.well-known/{well_known}");
            let resp = self
                .http
                .get(&url)
                .send()
                .await
                .map_err(|e| ClientError::Connect {
                    url: url.clone(),
                    message: chain(&e),
                })?;
            if !resp.status().is_success() {
                last = format!("GET {url} answered {}", resp.status());
                continue;
            }
            let meta: Value = resp.json().await.map_err(|e| ClientError::Unexpected {
                what: format!("GET {url}"),
                message: format!("the metadata is not JSON: {}", chain(&e)),
            })?;
            return meta
                .get("token_endpoint")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ClientError::Unexpected {
                    what: format!("GET {url}"),
                    message: "the metadata names no token_endpoint".into(),
                });
        }
        Err(ClientError::Config(format!(
            "no metadata of the OAuth 2.0 issuer {issuer}: {last}; check --oauth-issuer"
        )))
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_owned()
        } else {
            format!("{}{path}", self.settings.url)
        }
    }

    /// Sends one request accepting JSON; a 401 with a cached token gets one retry with a new
    /// token.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Body,
    ) -> Result<reqwest::Response, ClientError> {
        self.send_accepting(method, path, body, "application/json")
            .await
    }

    /// `GET path` of a resource that is not JSON (e.g. a VNFD archive), asking for the media
    /// type `accept`: the body's bytes; error statuses become [`ClientError::Problem`].
    pub async fn get_bytes(&self, path: &str, accept: &str) -> Result<Vec<u8>, ClientError> {
        let resp = self
            .send_accepting(Method::GET, path, Body::Empty, accept)
            .await?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| ClientError::Connect {
            url: self.url(path),
            message: chain(&e),
        })?;
        if !status.is_success() {
            return Err(ClientError::Problem {
                method: Method::GET.to_string(),
                path: path.to_owned(),
                problem: Box::new(Problem::from_body(
                    status.as_u16(),
                    &String::from_utf8_lossy(&bytes),
                )),
            });
        }
        Ok(bytes.to_vec())
    }

    /// [`Api::send`] with `Accept: accept`.
    async fn send_accepting(
        &self,
        method: Method,
        path: &str,
        body: Body,
        accept: &str,
    ) -> Result<reqwest::Response, ClientError> {
        let url = self.url(path);
        let (content_type, bytes) = match body {
            Body::Empty => (None, None),
            Body::Json(v) => (Some("application/json"), Some(v.to_string().into_bytes())),
            Body::MergePatch(v) => (
                Some("application/merge-patch+json"),
                Some(v.to_string().into_bytes()),
            ),
            Body::Zip(b) => (Some("application/zip"), Some(b)),
        };
        // Every state-changing request carries a fresh Idempotency-Key, so the one retry
        // after a lost connection cannot apply the change twice.
        let key = matches!(method, Method::POST | Method::PATCH)
            .then(|| format!("\"{}\"", vnfm::lcm::ClientKey::random_key()));
        let mut resent = false;
        let mut fresh = false;
        loop {
            let token = self.token(fresh).await?;
            let mut req = self.http.request(method.clone(), &url);
            req = if self.settings.keystone.is_some() {
                req.header("X-Auth-Token", &token)
            } else {
                req.bearer_auth(&token)
            };
            let mut req = req
                .header("Version", api_version(&url))
                .header("Accept", accept);
            if let Some(ct) = content_type {
                req = req.header("Content-Type", ct);
            }
            if let Some(b) = &bytes {
                req = req.body(b.clone());
            }
            if let Some(k) = &key {
                req = req.header(vnfm_api::idempotency::IDEMPOTENCY_KEY, k);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(e) if key.is_some() && !resent && !e.is_builder() => {
                    // The connection was lost before an answer: the same key makes sending
                    // again safe (the server answers what the first attempt did, if it got it).
                    tracing::warn!(url = %url, error = %chain(&e), "no answer; sending the request again with the same Idempotency-Key");
                    resent = true;
                    tokio::time::sleep(RESEND_DELAY).await;
                    continue;
                }
                Err(e) => {
                    return Err(ClientError::Connect {
                        url: url.clone(),
                        message: chain(&e),
                    });
                }
            };
            if resp.status() == StatusCode::UNAUTHORIZED && !fresh {
                // The token may have been revoked (key rotation) or expired early.
                fresh = true;
                continue;
            }
            return Ok(resp);
        }
    }

    /// Sends a request and reads a JSON answer; error statuses become
    /// [`ClientError::Problem`].
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Body,
    ) -> Result<Answer, ClientError> {
        let resp = self.send(method.clone(), path, body).await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(|e| ClientError::Connect {
            url: self.url(path),
            message: chain(&e),
        })?;
        if !status.is_success() && status != StatusCode::SEE_OTHER {
            return Err(ClientError::Problem {
                method: method.to_string(),
                path: path.to_owned(),
                problem: Box::new(Problem::from_body(status.as_u16(), &text)),
            });
        }
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// `GET path` returning the JSON document.
    pub async fn get(&self, path: &str) -> Result<Value, ClientError> {
        Ok(self.call(Method::GET, path, Body::Empty).await?.body)
    }

    /// `GET path?query`, following `Link: <...>; rel="next"` until the last page, all items
    /// collected. A list longer than [`MAX_PAGES`] pages is an error, not a silent cut: the
    /// user narrows it with a filter or streams it ([`Api::each_page`]).
    pub async fn list(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Vec<Value>, ClientError> {
        let mut out = Vec::new();
        let mut pages = 0;
        self.each_page(path, query, |items| {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(ClientError::Usage(format!(
                    "GET {path}: the list has more than {MAX_PAGES} pages ({} items so far); \
                     narrow it with a filter, or stream it (`vnfm vnf export` for VNF instances)",
                    out.len()
                )));
            }
            out.extend(items);
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        Ok(out)
    }

    /// `GET path?query`, handing each page's items to `on_page` as it arrives and following
    /// `Link: <...>; rel="next"` until the last page or until `on_page` breaks; returns how
    /// many items were handed over. Only one page is held at a time, so a list of any length
    /// streams at constant memory.
    pub async fn each_page(
        &self,
        path: &str,
        query: &[(&str, String)],
        mut on_page: impl FnMut(Vec<Value>) -> Result<ControlFlow<()>, ClientError>,
    ) -> Result<u64, ClientError> {
        let mut url = reqwest::Url::parse(&self.url(path))
            .map_err(|e| ClientError::Usage(format!("cannot build the URL of {path}: {e}")))?;
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        let mut next = Some(url.to_string());
        let mut count = 0;
        while let Some(u) = next.take() {
            let answer = self.call(Method::GET, &u, Body::Empty).await?;
            match answer.body {
                Value::Array(items) => {
                    count += items.len() as u64;
                    if on_page(items)?.is_break() {
                        break;
                    }
                }
                other => {
                    return Err(ClientError::Unexpected {
                        what: format!("GET {path}"),
                        message: format!("expected a JSON array, got {}", kind(&other)),
                    });
                }
            }
            next = answer
                .headers
                .get_all(LINK)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(next_link);
        }
        Ok(count)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The target of the `rel="next"` link in a `Link` header value.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"" || p.trim() == "rel=next");
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on loopback that answers the token request, drops the connection of the first
    /// other request unanswered and answers the second 201; the `Idempotency-Key`s it saw.
    async fn lossy_server() -> (String, tokio::task::JoinHandle<Vec<Option<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut keys = Vec::new();
            while keys.len() < 2 {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).await.unwrap() == 0 {
                        break;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                let mut body = vec![0u8; length];
                conn.read_exact(&mut body).await.unwrap();
                let answer: &[u8] = if head.starts_with("post /oauth2/token") {
                    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 44\r\n\r\n{\"access_token\":\"t\",\"expires_in\":3600000000}"
                } else {
                    keys.push(
                        head.lines()
                            .find_map(|l| l.strip_prefix("idempotency-key:"))
                            .map(|v| v.trim().to_owned()),
                    );
                    if keys.len() == 1 {
                        continue; // dropped unanswered: the connection is lost
                    }
                    b"HTTP/1.1 201 Created\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{\"id\":\"x\"}"
                };
                conn.write_all(answer).await.unwrap();
            }
            keys
        });
        (url, task)
    }

    #[tokio::test]
    async fn a_lost_post_is_sent_once_more_with_the_same_idempotency_key() {
        vnfm::lcm::install_crypto_provider();
        let (url, server) = lossy_server().await;
        let api = Api::new(Settings {
            url,
            client_id: "c".into(),
            client_secret: "s".into(),
            oauth_issuer: None,
            ca_pem: None,
            token_cache_dir: None,
            keystone: None,
        })
        .unwrap();
        let answer = api
            .call(
                Method::POST,
                "/vnflcm/v2/vnf_instances",
                Body::Json(serde_json::json!({"vnfdId": "d"})),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, StatusCode::CREATED);
        assert_eq!(answer.body["id"], "x");
        let keys = server.await.unwrap();
        assert_eq!(keys.len(), 2);
        let first = keys[0].as_deref().expect("the request carries a key");
        assert!(first.starts_with('"') && first.len() > 30, "{first}");
        assert_eq!(keys[0], keys[1], "the resent request carries the same key");
    }

    #[test]
    fn next_link_is_found_among_others() {
        assert_eq!(
            next_link(r#"<http://h/x?nextpage_opaque_marker=abc>; rel="next""#).as_deref(),
            Some("http://h/x?nextpage_opaque_marker=abc")
        );
        assert_eq!(
            next_link(r#"<http://h/a>; rel="prev", <http://h/b>; rel="next""#).as_deref(),
            Some("http://h/b")
        );
        assert_eq!(next_link(r#"<http://h/a>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }
}
