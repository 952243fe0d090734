//! Connecting to a cluster from a VIM connection: [`ClusterAccess`] reads the API server URL,
//! the credentials, the CA certificate (or the explicit insecure flag) and the default
//! namespace from a [`ResolvedVim`], and builds a kube-rs [`kube::Client`] in memory (no
//! kubeconfig, no temporary files).
//!
//! A connection that names no CA certificate is not TLS-verified, as OpenStack Tacker does
//! (its Kubernetes client sets `verify_ssl` only with `ssl_ca_cert`, and its own functional
//! tests give inline `vimConnectionInfo` with an endpoint and a token only): a warning naming
//! the VIM (never its credentials) is logged the first time the process connects through it.
//! A CA certificate, when given, is the only trust: the system's roots are not used.
//!
//! | where | key (aliases) | meaning |
//! |---|---|---|
//! | `interfaceInfo` | `endpoint` | API server URL (`https://...`) |
//! | `interfaceInfo` | `ssl_ca_cert` (`caCert`) | PEM CA certificate(s) of the API server; without one, TLS is not verified |
//! | `interfaceInfo` | `insecureSkipTlsVerify` (`insecure_skip_tls_verify`) | `true` to skip TLS verification (only without a CA certificate; what its absence does anyway, without the warning) |
//! | `accessInfo` | `bearer_token` (`bearerToken`) | service-account token |
//! | `accessInfo` | `username` + `password` | HTTP basic credentials |
//! | `accessInfo` | `namespace` | default namespace for instances that name none |

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;
use vnfm_driver_api::ResolvedVim;
use vnfm_driver_api::vim_kind::fields;

use crate::KubeError;

/// How to authenticate to the API server.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A bearer token.
    Token(String),
    /// HTTP basic user name and password.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Token(_) => f.write_str("Token(***)"),
            Credentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"***")
                .finish(),
        }
    }
}

/// Everything needed to talk to one cluster. `Debug` hides the secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterAccess {
    /// The `vimConnectionInfo` key (for messages).
    pub vim: String,
    /// API server URL.
    pub endpoint: String,
    /// DER certificates to trust, from the PEM CA certificate.
    pub ca_certs: Vec<Vec<u8>>,
    /// Skip TLS verification: asked for, or no CA certificate given (as Tacker).
    pub insecure: bool,
    /// How to authenticate.
    pub credentials: Credentials,
    /// Default namespace of the VIM, when given.
    pub namespace: Option<String>,
}

fn str_of<'a>(map: Option<&'a serde_json::Map<String, Value>>, keys: &[&str]) -> Option<&'a str> {
    let m = map?;
    keys.iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

impl ClusterAccess {
    /// Reads a VIM connection of type `ETSINFV.KUBERNETES.V_1` or `ETSINFV.HELM.V_3`.
    pub fn from_vim(vim: &ResolvedVim) -> Result<ClusterAccess, KubeError> {
        let err = |message: String| KubeError::Access {
            vim: vim.connection_id.clone(),
            message,
        };
        let info = vim.connection_info();
        let iface = info.interface_info.as_ref();
        let access = info.access_info.as_ref();
        let endpoint = str_of(iface, &["endpoint"])
            .or_else(|| str_of(access, &["endpoint", "authUrl"]))
            .ok_or_else(|| {
                err(
                    "interfaceInfo.endpoint is missing: give the URL of the Kubernetes API server"
                        .into(),
                )
            })?
            .trim_end_matches('/')
            .to_string();
        if !(endpoint.starts_with("https://") || endpoint.starts_with("http://")) {
            return Err(err(format!(
                "interfaceInfo.endpoint `{}` is not an http(s) URL",
                cut(&endpoint)
            )));
        }
        // Checked and made canonical as at registration (Tacker's "None", PEM folded by YAML),
        // for connections stored before that check or given inline; errors never show bytes.
        let ca_pem = match iface {
            Some(i) => fields::ca_cert(i)
                .map_err(|e| err(format!("interfaceInfo.ssl_ca_cert: {}", e.message)))?,
            None => None,
        };
        let insecure = iface
            .and_then(|m| {
                m.get("insecureSkipTlsVerify")
                    .or_else(|| m.get("insecure_skip_tls_verify"))
            })
            .is_some_and(|v| v == &Value::Bool(true) || v.as_str() == Some("true"));
        if insecure && ca_pem.is_some() {
            return Err(err(
                "give either interfaceInfo.ssl_ca_cert or insecureSkipTlsVerify: true, not both"
                    .into(),
            ));
        }
        let unverified_by_default = ca_pem.is_none() && !insecure;
        let ca_certs = match ca_pem {
            None => Vec::new(),
            Some(pem) => CertificateDer::pem_slice_iter(pem.as_bytes())
                .map(|c| c.map(|c| c.to_vec()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    err("interfaceInfo.ssl_ca_cert is not a valid PEM certificate".into())
                })?,
        };
        let token = str_of(access, &["bearer_token", "bearerToken"]);
        let username = str_of(access, &["username"]);
        let password = str_of(access, &["password"]);
        let credentials = match (token, username, password) {
            (Some(t), None, None) => Credentials::Token(t.to_string()),
            (None, Some(u), Some(p)) => Credentials::Basic {
                username: u.to_string(),
                password: p.to_string(),
            },
            (Some(_), _, _) => {
                return Err(err(
                    "give either accessInfo.bearer_token or username and password, not both".into(),
                ));
            }
            (None, Some(_), None) => {
                return Err(err(
                    "accessInfo.password is missing for the user name".into()
                ));
            }
            (None, None, Some(_)) => {
                return Err(err("accessInfo.username is missing for the password".into()));
            }
            (None, None, None) => {
                return Err(err(
                    "no credentials: give accessInfo.bearer_token, or username and password".into(),
                ));
            }
        };
        if unverified_by_default && endpoint.starts_with("https://") {
            let vim_id = vim.vim_id().unwrap_or("-");
            if first_time_unverified(&format!("{vim_id} {} {endpoint}", vim.connection_id)) {
                tracing::warn!(
                    vim = %vim.connection_id, vim_id, endpoint = %endpoint,
                    "the VIM names no CA certificate (interfaceInfo.ssl_ca_cert), so the Kubernetes API server's certificate is not verified, as OpenStack Tacker does; give the cluster's CA to have it verified"
                );
            }
        }
        Ok(ClusterAccess {
            vim: vim.connection_id.clone(),
            endpoint,
            ca_certs,
            insecure: insecure || unverified_by_default,
            credentials,
            namespace: str_of(access, &["namespace"]).map(String::from),
        })
    }

    /// Who talks to which server: a digest of the endpoint, the trusted certificates and
    /// the credentials (never the credentials themselves), the same for every VIM connection
    /// that reaches the cluster as the same user.
    pub fn identity(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut part = |b: &[u8]| {
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        };
        part(self.endpoint.as_bytes());
        for c in &self.ca_certs {
            part(c);
        }
        part(&[u8::from(self.insecure)]);
        match &self.credentials {
            Credentials::Token(t) => part(t.as_bytes()),
            Credentials::Basic { username, password } => {
                part(username.as_bytes());
                part(password.as_bytes());
            }
        }
        hex::encode(h.finalize())
    }

    /// A kube-rs client for the cluster. TLS uses rustls with the ring provider; the process
    /// must have installed it as the default (`rustls::crypto::ring::default_provider()`).
    pub fn client(&self) -> Result<kube::Client, KubeError> {
        let config = self.config()?;
        let server = config.cluster_url.host().unwrap_or_default().to_owned();
        let builder =
            kube::client::ClientBuilder::try_from(config).map_err(|e| KubeError::Access {
                vim: self.vim.clone(),
                message: format!("cannot build a client for {}: {e}", self.endpoint),
            })?;
        // Each API request in its `infra.request` span, with its traceparent.
        let traced = vnfm_trace::InfraLayer::new(vnfm_trace::VimType::Kubernetes, &server);
        Ok(builder.with_layer(&traced).build())
    }

    /// The kube-rs configuration of [`ClusterAccess::client`]: the URL, the trust (the CA
    /// certificates alone, or no verification), the credentials and the default namespace.
    pub fn config(&self) -> Result<kube::Config, KubeError> {
        let url: http::Uri = self.endpoint.parse().map_err(|_| KubeError::Access {
            vim: self.vim.clone(),
            message: format!(
                "interfaceInfo.endpoint `{}` is not a valid URL",
                cut(&self.endpoint)
            ),
        })?;
        let mut config = kube::Config::new(url);
        config.default_namespace = self.namespace.clone().unwrap_or_else(|| "default".into());
        if !self.ca_certs.is_empty() {
            config.root_cert = Some(self.ca_certs.clone());
        }
        config.accept_invalid_certs = self.insecure;
        config.connect_timeout = Some(Duration::from_secs(10));
        match &self.credentials {
            Credentials::Token(t) => {
                config.auth_info.token = Some(secrecy::SecretString::from(t.clone()));
            }
            Credentials::Basic { username, password } => {
                config.auth_info.username = Some(username.clone());
                config.auth_info.password = Some(secrecy::SecretString::from(password.clone()));
            }
        }
        Ok(config)
    }
}

/// Whether the connection `key` (VIM id, connection key and endpoint) is met unverified for
/// the first time in this process: its warning is logged once, not at every step.
fn first_time_unverified(key: &str) -> bool {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    WARNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(key.to_string())
}

/// Input echoed in messages is cut short.
pub(crate) fn cut(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(80).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vim(v: Value) -> ResolvedVim {
        ResolvedVim::new("vim1", serde_json::from_value(v).unwrap())
    }

    #[test]
    fn token_basic_and_aliases_are_read() {
        let a = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://10.0.0.1:6443/"},
            "accessInfo": {"bearerToken": "tok-123", "namespace": "cnf"}
        })))
        .unwrap();
        assert_eq!(a.endpoint, "https://10.0.0.1:6443");
        assert_eq!(a.credentials, Credentials::Token("tok-123".into()));
        assert_eq!(a.namespace.as_deref(), Some("cnf"));
        assert!(!format!("{a:?}").contains("tok-123"));
        let b = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.HELM.V_3",
            "interfaceInfo": {"endpoint": "https://k:6443", "insecureSkipTlsVerify": "true"},
            "accessInfo": {"username": "u", "password": "secret-pw"}
        })))
        .unwrap();
        assert!(b.insecure);
        assert!(!format!("{b:?}").contains("secret-pw"));
    }

    #[test]
    fn a_connection_without_a_ca_certificate_is_not_verified_as_on_tacker() {
        // Tacker's own functional tests instantiate with an inline connection of an endpoint
        // and a token only, against a cluster whose CA is in no system trust store.
        let inline = ClusterAccess::from_vim(&vim(json!({
            "vimId": "7d0b9b7e-inline", "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
            "accessInfo": {"bearer_token": "tok-secret"}
        })))
        .unwrap();
        assert!(inline.insecure && inline.ca_certs.is_empty());
        let config = inline.config().unwrap();
        assert!(config.accept_invalid_certs);
        assert_eq!(config.root_cert, None);
        // "None", as Tacker's VIM files write no CA, is no CA too.
        let none = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://10.0.0.1:6443", "ssl_ca_cert": "None"},
            "accessInfo": {"bearer_token": "t"}
        })))
        .unwrap();
        assert!(none.insecure);
    }

    #[test]
    fn a_connection_with_a_ca_certificate_trusts_that_ca_alone() {
        let ca = include_str!("../tests/tls/ca.pem");
        let a = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://10.0.0.1:6443", "ssl_ca_cert": ca},
            "accessInfo": {"bearer_token": "t"}
        })))
        .unwrap();
        assert!(!a.insecure);
        let config = a.config().unwrap();
        assert!(!config.accept_invalid_certs);
        assert_eq!(config.root_cert.map(|c| c.len()), Some(1));
    }

    #[test]
    fn an_unverified_connection_is_warned_about_once() {
        let key = "vim-once vim1 https://10.9.9.9:6443";
        assert!(first_time_unverified(key));
        assert!(!first_time_unverified(key));
        assert!(first_time_unverified(
            "vim-other vim1 https://10.9.9.9:6443"
        ));
    }

    #[test]
    fn bad_connections_name_the_attribute() {
        let e = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://k"},
            "accessInfo": {}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("no credentials"), "{e}");
        let e = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://k", "ssl_ca_cert": "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"},
            "accessInfo": {"bearer_token": "t"}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("ssl_ca_cert"), "{e}");
        let e = ClusterAccess::from_vim(&vim(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "accessInfo": {"bearer_token": "t"}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("interfaceInfo.endpoint"), "{e}");
    }
}
