//! Reading objects from a Kubernetes API server described by a VIM connection (the keys the
//! VNFM's Kubernetes driver reads: `interfaceInfo.endpoint`, `ssl_ca_cert`,
//! `insecureSkipTlsVerify`, `accessInfo.bearer_token` or `username`/`password`).

use std::time::Duration;

use serde_json::{Map, Value};
use vnfm_plugin_sdk::VimConnection;

use crate::error::CheckError;

/// How to reach and authenticate to one API server. `Debug` leaves out the credentials.
#[derive(Clone)]
pub struct ApiServer {
    /// The VIM connection key, for messages.
    pub connection: String,
    /// Base URL, without a trailing `/`.
    pub endpoint: String,
    ca_pem: Option<String>,
    insecure: bool,
    auth: Auth,
}

#[derive(Clone)]
enum Auth {
    None,
    Bearer(String),
    Basic(String, String),
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("connection", &self.connection)
            .field("endpoint", &self.endpoint)
            .field("ca", &self.ca_pem.is_some())
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

fn text<'a>(m: Option<&'a Map<String, Value>>, keys: &[&str]) -> Option<&'a str> {
    let m = m?;
    keys.iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

impl ApiServer {
    /// The API server of VIM connection `connection`.
    pub fn from_vim(connection: &str, vim: &VimConnection) -> Result<ApiServer, CheckError> {
        let iface = vim.interface_info.as_ref();
        let access = vim.access_info.as_ref();
        let endpoint = text(iface, &["endpoint"]).ok_or_else(|| {
            CheckError::InvalidParameter(format!(
                "VIM connection `{connection}` has no interfaceInfo.endpoint (the API server URL)"
            ))
        })?;
        let auth = match (
            text(access, &["bearer_token", "bearerToken"]),
            text(access, &["username"]),
            text(access, &["password"]),
        ) {
            (Some(t), _, _) => Auth::Bearer(t.to_string()),
            (None, Some(u), Some(p)) => Auth::Basic(u.to_string(), p.to_string()),
            _ => Auth::None,
        };
        let insecure = iface
            .and_then(|m| m.get("insecureSkipTlsVerify"))
            .is_some_and(|v| v == &Value::Bool(true) || v == "true");
        Ok(ApiServer {
            connection: connection.to_string(),
            endpoint: endpoint.trim_end_matches('/').to_string(),
            ca_pem: text(iface, &["ssl_ca_cert", "caCert"]).map(String::from),
            insecure,
            auth,
        })
    }

    /// An HTTP client for this server: its CA only when one is given, every request bounded
    /// by `timeout`.
    pub fn client(&self, timeout: Duration) -> Result<reqwest::Client, CheckError> {
        // The plugin's own copy of rustls needs its provider; an earlier call installed it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut b = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)));
        if let Some(pem) = &self.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes()).map_err(|e| {
                CheckError::BadCaCertificate {
                    connection: self.connection.clone(),
                    message: e.to_string(),
                }
            })?;
            if certs.is_empty() {
                return Err(CheckError::BadCaCertificate {
                    connection: self.connection.clone(),
                    message: "no certificate found".into(),
                });
            }
            b = b.tls_certs_only(certs);
        } else if self.insecure {
            b = b.tls_danger_accept_invalid_certs(true);
        }
        b.build().map_err(|e| CheckError::Client(e.to_string()))
    }

    /// `GET` of an object's path: `Ok(None)` on 404.
    pub async fn get(
        &self,
        client: &reqwest::Client,
        path: &str,
        what: &str,
    ) -> Result<Option<Value>, CheckError> {
        let url = format!("{}{path}", self.endpoint);
        let mut req = client.get(&url).header("Accept", "application/json");
        req = match &self.auth {
            Auth::None => req,
            Auth::Bearer(t) => req.bearer_auth(t),
            Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
        };
        let resp = req.send().await.map_err(|e| CheckError::Unreachable {
            endpoint: self.endpoint.clone(),
            what: what.to_string(),
            // The URL has no secret; the error chain tells timeouts from refused connections.
            message: error_chain(&e),
        })?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(|e| CheckError::Unreachable {
            endpoint: self.endpoint.clone(),
            what: what.to_string(),
            message: error_chain(&e),
        })?;
        match status {
            200 => serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| CheckError::Unexpected {
                    endpoint: self.endpoint.clone(),
                    what: what.to_string(),
                    answer: format!("a body that is not JSON ({e})"),
                    transient: false,
                }),
            404 => Ok(None),
            401 | 403 => Err(CheckError::Refused {
                endpoint: self.endpoint.clone(),
                connection: self.connection.clone(),
                status,
                what: what.to_string(),
            }),
            _ => Err(CheckError::Unexpected {
                endpoint: self.endpoint.clone(),
                what: what.to_string(),
                answer: format!("status {status}: {}", status_message(&body)),
                transient: status == 429 || status >= 500,
            }),
        }
    }
}

/// The `message` of a Kubernetes `Status` body, else the start of the body.
fn status_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}
