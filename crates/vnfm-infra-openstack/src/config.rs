//! Configuration: the driver's own settings ([`DriverConfig`]) and one VIM connection as this
//! driver reads it ([`VimSettings`]).
//!
//! The VIM connection follows the layout Tacker and SOL003 use for
//! `ETSINFV.OPENSTACK_KEYSTONE.V_3`:
//!
//! | where | member | meaning |
//! |---|---|---|
//! | `interfaceInfo` | `endpoint` (or `accessInfo/authUrl`) | Keystone v3 URL |
//! | `interfaceInfo` | `ssl_ca_cert`, `caCert`, `cacert`, `certificateData` | PEM CA certificate(s) to trust |
//! | `interfaceInfo` | `skipCertificateVerification`, `insecure` | accept any server certificate |
//! | `interfaceInfo` | `skipCertificateHostnameCheck` | accept certificates for other host names |
//! | `interfaceInfo` | `interface` | catalog interface: `public` (default), `internal`, `admin` |
//! | `interfaceInfo` or `extra` | `stackTimeoutSeconds` | time budget of one Heat action |
//! | `accessInfo` | `username`, `password`, `userDomain` | password authentication |
//! | `accessInfo` | `applicationCredentialId`, `applicationCredentialSecret` | application credential |
//! | `accessInfo` | `project` + `projectDomain`, or `projectId` | project scope |
//! | `accessInfo` | `region` | region of the endpoints to use |

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use vnfm_driver_api::ResolvedVim;
use vnfm_types::SecretString;

use crate::error::OpenStackError;

/// How to retry one HTTP call that failed transiently (connection error, 5xx, 429, 409).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first included (at least 1).
    pub attempts: u32,
    /// Delay before the second attempt; doubled for each further one.
    pub initial_delay: Duration,
    /// Upper bound of the delay.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The delay after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_delay
            .saturating_mul(factor)
            .min(self.max_delay)
    }
}

/// How Heat stack status is polled while an action runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PollPolicy {
    /// Delay before the first status check.
    pub initial: Duration,
    /// Each delay is the previous one times this factor (at least 1.0) ...
    pub factor: f64,
    /// ... up to this bound.
    pub max: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            initial: Duration::from_secs(1),
            factor: 1.5,
            // A stack action is seen done at most this long after Heat finished it: with a
            // 10 s bound a 15 s scale-out was seen 7 s late on average. One status GET per
            // running stack every 2 s is a light load on Heat (Tacker polls every 5 s).
            max: Duration::from_secs(2),
        }
    }
}

impl PollPolicy {
    /// The delay that follows `previous`.
    pub fn next(&self, previous: Duration) -> Duration {
        let factor = if self.factor.is_finite() && self.factor >= 1.0 {
            self.factor
        } else {
            1.0
        };
        Duration::try_from_secs_f64(previous.as_secs_f64() * factor)
            .unwrap_or(self.max)
            .min(self.max)
            .max(self.initial)
    }
}

/// Settings of an [`crate::OpenStackDriver`].
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Time budget of one Heat action (create, update, delete) when neither the request
    /// (`additionalParams.stackTimeoutSeconds`) nor the VIM (`stackTimeoutSeconds`) sets one.
    /// The step's own deadline always applies too.
    pub stack_timeout: Duration,
    /// Stack status polling.
    pub poll: PollPolicy,
    /// Retries of single HTTP calls.
    pub retry: RetryPolicy,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
    /// A token is renewed when it expires within this margin.
    pub token_refresh_margin: Duration,
    /// `nested_depth` when listing stack resources for the inventory.
    pub nested_depth: u32,
    /// Heat resource types that are VNFC compute resources (when named after a VDU).
    pub compute_types: Vec<String>,
    /// Heat resource types that are virtual links (when named after a VL of the flavour).
    pub network_types: Vec<String>,
    /// Heat resource types that are connection points (when named after a VDU CP).
    pub port_types: Vec<String>,
    /// Heat resource types that are virtual storage (when named after a storage of the VDU).
    pub storage_types: Vec<String>,
    /// File names tried, in order, for the top template under `BaseHOT/<flavourId>/` (after
    /// the ones derived from the VNFD's entry definitions). `{flavour}` is replaced by the
    /// flavour id.
    pub base_hot_names: Vec<String>,
    /// A Heat environment (`resource_registry`, `parameter_defaults`, ...) sent with every
    /// stack create and update, e.g. to map resource types to site-specific templates.
    pub environment: Option<Value>,
    /// Extra files sent with every stack (the templates the environment refers to).
    pub environment_files: BTreeMap<String, String>,
    /// Prefix of stack names: a stack is named `<prefix><vnfInstanceId>`.
    pub stack_name_prefix: String,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            stack_timeout: Duration::from_secs(1800),
            poll: PollPolicy::default(),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(60),
            token_refresh_margin: Duration::from_secs(120),
            nested_depth: 5,
            compute_types: vec!["OS::Nova::Server".into()],
            network_types: vec!["OS::Neutron::Net".into()],
            port_types: vec!["OS::Neutron::Port".into()],
            storage_types: vec!["OS::Cinder::Volume".into()],
            base_hot_names: vec![
                "base_hot_top.yaml".into(),
                "{flavour}_hot_top.yaml".into(),
                "{flavour}.yaml".into(),
                "top.yaml".into(),
                "main.yaml".into(),
                "hot.yaml".into(),
                "VNF-hot.yaml".into(),
            ],
            environment: None,
            environment_files: BTreeMap::new(),
            stack_name_prefix: "vnf-".into(),
        }
    }
}

impl DriverConfig {
    /// Reads a Heat environment file (YAML or JSON: `resource_registry`,
    /// `parameter_defaults`, ...) into [`DriverConfig::environment`], and the templates its
    /// `resource_registry` names by relative path into [`DriverConfig::environment_files`]
    /// (read from the file's directory). Types mapped to other types
    /// (`OS::Nova::Server: OS::Heat::None`) and URLs are left for Heat to resolve.
    pub fn with_environment_file(
        mut self,
        path: &std::path::Path,
    ) -> Result<DriverConfig, OpenStackError> {
        let fail = |what: String| OpenStackError::Input(format!("{}: {what}", path.display()));
        let text =
            std::fs::read_to_string(path).map_err(|source| OpenStackError::ReadEnvironment {
                path: path.to_path_buf(),
                template: None,
                source,
            })?;
        let environment: Value =
            serde_saphyr::from_str(&text).map_err(|source| OpenStackError::EnvironmentYaml {
                path: path.to_path_buf(),
                source: Box::new(source),
            })?;
        if !environment.is_object() {
            return Err(fail(
                "expected a Heat environment mapping (resource_registry, parameter_defaults, ...)"
                    .into(),
            ));
        }
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        let mut files = BTreeMap::new();
        if let Some(registry) = environment
            .get("resource_registry")
            .and_then(Value::as_object)
        {
            for (ty, target) in registry {
                let Some(file) = target.as_str() else {
                    continue;
                };
                if file.contains("::") || file.contains("://") {
                    continue;
                }
                let local = dir.join(file);
                let body = std::fs::read_to_string(&local).map_err(|source| {
                    OpenStackError::ReadEnvironment {
                        path: path.to_path_buf(),
                        template: Some((local.clone(), ty.clone())),
                        source,
                    }
                })?;
                files.insert(file.to_string(), body);
            }
        }
        self.environment = Some(environment);
        self.environment_files = files;
        Ok(self)
    }
}

/// How the driver authenticates to Keystone.
#[derive(Clone)]
pub enum Credentials {
    /// User name and password.
    Password {
        /// `accessInfo/username`.
        username: String,
        /// `accessInfo/password`.
        password: SecretString,
        /// `accessInfo/userDomain` (a domain name; `default` when absent).
        user_domain: String,
    },
    /// An application credential (scoped to its own project).
    ApplicationCredential {
        /// `accessInfo/applicationCredentialId`.
        id: String,
        /// `accessInfo/applicationCredentialSecret`.
        secret: SecretString,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Password {
                username,
                user_domain,
                ..
            } => f
                .debug_struct("Password")
                .field("username", username)
                .field("user_domain", user_domain)
                .finish_non_exhaustive(),
            Credentials::ApplicationCredential { id, .. } => f
                .debug_struct("ApplicationCredential")
                .field("id", id)
                .finish_non_exhaustive(),
        }
    }
}

/// The project a password token is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectScope {
    /// By name within a domain (name).
    Name {
        /// `accessInfo/project`.
        name: String,
        /// `accessInfo/projectDomain`.
        domain: String,
    },
    /// By id.
    Id(String),
}

/// TLS settings of a VIM's endpoints.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM CA certificate(s) trusted in addition to the system roots.
    pub ca_pem: Option<String>,
    /// Accept any server certificate (test clouds only).
    pub insecure: bool,
    /// Accept certificates whose names do not match the host.
    pub skip_hostname_check: bool,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<pem>"))
            .field("insecure", &self.insecure)
            .field("skip_hostname_check", &self.skip_hostname_check)
            .finish()
    }
}

/// One OpenStack VIM connection, validated.
#[derive(Debug, Clone)]
pub struct VimSettings {
    /// Key of the connection in the instance's `vimConnectionInfo`.
    pub connection_id: String,
    /// `vimId`, when known.
    pub vim_id: Option<String>,
    /// Keystone v3 URL, without a trailing slash (e.g. `https://keystone:5000/v3`).
    pub auth_url: String,
    /// How to authenticate.
    pub credentials: Credentials,
    /// The project (absent for application credentials, which carry their own).
    pub scope: Option<ProjectScope>,
    /// Region of the endpoints to use; the first matching endpoint of any region otherwise.
    pub region: Option<String>,
    /// Catalog interface: `public`, `internal` or `admin`.
    pub interface: String,
    /// TLS settings.
    pub tls: TlsSettings,
    /// Time budget of one Heat action, when the VIM sets one.
    pub stack_timeout: Option<Duration>,
}

impl VimSettings {
    /// Reads and validates `vim`.
    pub fn from_vim(vim: &ResolvedVim) -> Result<VimSettings, OpenStackError> {
        let conn = vim.connection_id.clone();
        let bad = |field: &str, message: &str| OpenStackError::Vim {
            connection: conn.clone(),
            field: field.to_string(),
            message: message.to_string(),
        };
        let iface = |k: &str| vim.interface_info().and_then(|m| m.get(k));
        let access = |k: &str| -> Result<Option<String>, OpenStackError> {
            string_member(vim.connection_info().access_info.as_ref(), k)
                .map_err(|m| bad(&format!("/accessInfo/{k}"), m))
        };
        let iface_str = |k: &str| -> Result<Option<String>, OpenStackError> {
            string_member(vim.interface_info(), k)
                .map_err(|m| bad(&format!("/interfaceInfo/{k}"), m))
        };

        let auth_url = match iface_str("endpoint")? {
            Some(e) => e,
            None => access("authUrl")?.ok_or_else(|| {
                bad(
                    "/interfaceInfo/endpoint",
                    "missing: the Keystone v3 URL (e.g. https://keystone.example:5000/v3)",
                )
            })?,
        };
        let auth_url = normalize_auth_url(&auth_url)
            .ok_or_else(|| bad("/interfaceInfo/endpoint", "must be an http(s) URL"))?;

        let username = access("username")?;
        let password = access("password")?;
        let app_id = access("applicationCredentialId")?;
        let app_secret = access("applicationCredentialSecret")?;
        let credentials =
            match (app_id, app_secret) {
                (Some(id), Some(secret)) => Credentials::ApplicationCredential {
                    id,
                    secret: SecretString::new(secret),
                },
                (Some(_), None) => {
                    return Err(bad(
                        "/accessInfo/applicationCredentialSecret",
                        "missing: the secret of the application credential",
                    ));
                }
                (None, Some(_)) => {
                    return Err(bad(
                        "/accessInfo/applicationCredentialId",
                        "missing: the id of the application credential",
                    ));
                }
                (None, None) => Credentials::Password {
                    username: username.ok_or_else(|| {
                        bad(
                            "/accessInfo/username",
                            "missing: a user name and password, or an application credential",
                        )
                    })?,
                    password: SecretString::new(password.ok_or_else(|| {
                        bad("/accessInfo/password", "missing: the user's password")
                    })?),
                    user_domain: access("userDomain")?.unwrap_or_else(|| "Default".into()),
                },
            };
        let scope = match (access("project")?, access("projectId")?) {
            (Some(name), None) => Some(ProjectScope::Name {
                name,
                domain: access("projectDomain")?.unwrap_or_else(|| "Default".into()),
            }),
            (None, Some(id)) => Some(ProjectScope::Id(id)),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(bad(
                    "/accessInfo/projectId",
                    "give either project (a name) or projectId, not both",
                ));
            }
        };
        if scope.is_none() && matches!(credentials, Credentials::Password { .. }) {
            return Err(bad(
                "/accessInfo/project",
                "missing: the project (name in project, or id in projectId) to scope to",
            ));
        }

        let mut ca_pem = None;
        for key in ["ssl_ca_cert", "caCert", "cacert", "certificateData"] {
            if let Some(v) = iface_str(key)? {
                if !v.contains("-----BEGIN CERTIFICATE-----") {
                    return Err(bad(
                        &format!("/interfaceInfo/{key}"),
                        "must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)",
                    ));
                }
                ca_pem = Some(v);
                break;
            }
        }
        let flag = |k: &str| -> Result<bool, OpenStackError> {
            bool_member(iface(k)).map_err(|m| bad(&format!("/interfaceInfo/{k}"), m))
        };
        let tls = TlsSettings {
            ca_pem,
            insecure: flag("skipCertificateVerification")? || flag("insecure")?,
            skip_hostname_check: flag("skipCertificateHostnameCheck")?,
        };
        let interface = iface_str("interface")?
            .map(|i| i.trim_end_matches("URL").to_ascii_lowercase())
            .unwrap_or_else(|| "public".into());
        if !matches!(interface.as_str(), "public" | "internal" | "admin") {
            return Err(bad(
                "/interfaceInfo/interface",
                "must be public, internal or admin",
            ));
        }
        let stack_timeout = match iface("stackTimeoutSeconds") {
            Some(v) => Some(v),
            None => vim.extra().and_then(|m| m.get("stackTimeoutSeconds")),
        };
        let stack_timeout = stack_timeout
            .map(|v| {
                seconds(v).ok_or_else(|| {
                    bad(
                        "/extra/stackTimeoutSeconds",
                        "must be a positive number of seconds",
                    )
                })
            })
            .transpose()?;
        Ok(VimSettings {
            connection_id: conn.clone(),
            vim_id: vim.vim_id().map(str::to_string),
            auth_url,
            credentials,
            scope,
            region: access("region")?,
            interface,
            tls,
            stack_timeout,
        })
    }

    /// A digest of everything that identifies a Keystone session (endpoint, TLS, identity,
    /// secret, scope, region), so sessions are shared exactly between equal connections. The
    /// secret enters only hashed.
    pub fn session_key(&self) -> String {
        let mut h = Sha256::new();
        let mut put = |s: &str| {
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        put(&self.auth_url);
        match &self.credentials {
            Credentials::Password {
                username,
                password,
                user_domain,
            } => {
                put("password");
                put(username);
                put(password.expose());
                put(user_domain);
            }
            Credentials::ApplicationCredential { id, secret } => {
                put("application_credential");
                put(id);
                put(secret.expose());
            }
        }
        match &self.scope {
            Some(ProjectScope::Name { name, domain }) => {
                put("project-name");
                put(name);
                put(domain);
            }
            Some(ProjectScope::Id(id)) => {
                put("project-id");
                put(id);
            }
            None => put("unscoped"),
        }
        put(self.region.as_deref().unwrap_or(""));
        put(&self.interface);
        put(self.tls.ca_pem.as_deref().unwrap_or(""));
        put(if self.tls.insecure {
            "insecure"
        } else {
            "verify"
        });
        put(if self.tls.skip_hostname_check {
            "any-host"
        } else {
            "host"
        });
        hex::encode(h.finalize())
    }
}

/// `https://ks:5000/v3/` -> `https://ks:5000/v3`; `https://ks:5000` -> `https://ks:5000/v3`.
fn normalize_auth_url(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return None;
    }
    let mut s = url.trim().trim_end_matches('/').to_string();
    if !s.ends_with("/v3") {
        s.push_str("/v3");
    }
    Some(s)
}

fn string_member(
    map: Option<&vnfm_types::KeyValuePairs>,
    key: &str,
) -> Result<Option<String>, &'static str> {
    match map.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err("must not be empty"),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err("must be a string"),
    }
}

fn bool_member(v: Option<&Value>) -> Result<bool, &'static str> {
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err("must be true or false"),
    }
}

/// A positive number of seconds (a JSON number or a numeric string).
pub(crate) fn seconds(v: &Value) -> Option<Duration> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (n.is_finite() && n > 0.0 && n < 1e9).then(|| Duration::from_secs_f64(n))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_environment_file_brings_the_templates_its_registry_names() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("env.yaml");
        std::fs::write(
            &env,
            "resource_registry:\n  OS::Nova::Server: server.yaml\n  OS::Cinder::Volume: OS::Heat::None\n  OS::Neutron::Port: https://example.com/port.yaml\nparameter_defaults:\n  flavor: m1.tiny\n",
        )
        .unwrap();
        let e = super::DriverConfig::default()
            .with_environment_file(&env)
            .unwrap_err();
        assert!(
            e.to_string().contains("server.yaml") && e.to_string().contains("OS::Nova::Server"),
            "{e}"
        );
        std::fs::write(
            dir.path().join("server.yaml"),
            "heat_template_version: 2018-08-31\n",
        )
        .unwrap();
        let c = super::DriverConfig::default()
            .with_environment_file(&env)
            .unwrap();
        let environment = c.environment.unwrap();
        assert_eq!(environment["parameter_defaults"]["flavor"], "m1.tiny");
        assert_eq!(
            c.environment_files.keys().collect::<Vec<_>>(),
            vec!["server.yaml"]
        );
        std::fs::write(&env, "- not\n- a mapping\n").unwrap();
        assert!(
            super::DriverConfig::default()
                .with_environment_file(&env)
                .is_err()
        );
    }

    use super::*;
    use serde_json::json;
    use vnfm_types::VimConnectionInfo;

    fn vim(v: Value) -> ResolvedVim {
        let info: VimConnectionInfo = serde_json::from_value(v).unwrap();
        ResolvedVim::new("vim1", info)
    }

    #[test]
    fn tacker_layout_with_password_is_read() {
        let s = VimSettings::from_vim(&vim(json!({
            "vimId": "v-1",
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "https://ks.example:5000/v3/", "skipCertificateVerification": "true"},
            "accessInfo": {"username": "nfv_user", "password": "pw-123", "project": "nfv",
                           "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
        })))
        .unwrap();
        assert_eq!(s.auth_url, "https://ks.example:5000/v3");
        assert!(s.tls.insecure);
        assert_eq!(s.region.as_deref(), Some("RegionOne"));
        assert_eq!(
            s.scope,
            Some(ProjectScope::Name {
                name: "nfv".into(),
                domain: "Default".into()
            })
        );
        assert!(!format!("{s:?}").contains("pw-123"));
    }

    #[test]
    fn application_credentials_and_auth_url_alias() {
        let s = VimSettings::from_vim(&vim(json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "accessInfo": {"authUrl": "http://ks:5000", "applicationCredentialId": "ac-1",
                           "applicationCredentialSecret": "sec-456"},
            "extra": {"stackTimeoutSeconds": 90}
        })))
        .unwrap();
        assert_eq!(s.auth_url, "http://ks:5000/v3");
        assert!(matches!(
            s.credentials,
            Credentials::ApplicationCredential { .. }
        ));
        assert_eq!(s.stack_timeout, Some(Duration::from_secs(90)));
        assert_eq!(s.interface, "public");
    }

    #[test]
    fn errors_name_the_member() {
        let e = VimSettings::from_vim(&vim(json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://ks/v3"},
            "accessInfo": {"username": "u", "password": "p"}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("/accessInfo/project"), "{e}");
        let e = VimSettings::from_vim(&vim(json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://ks/v3", "cacert": "/etc/ssl/ca.pem"},
            "accessInfo": {"username": "u", "password": "p", "project": "x"}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("/interfaceInfo/cacert"), "{e}");
        let e = VimSettings::from_vim(&vim(json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "ftp://ks/v3"},
            "accessInfo": {"username": "u", "password": "p", "project": "x"}
        })))
        .unwrap_err();
        assert!(e.to_string().contains("http(s) URL"), "{e}");
    }

    #[test]
    fn session_keys_differ_by_secret_without_showing_it() {
        let a = |pw: &str| {
            VimSettings::from_vim(&vim(json!({
                "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "interfaceInfo": {"endpoint": "http://ks/v3"},
                "accessInfo": {"username": "u", "password": pw, "project": "x"}
            })))
            .unwrap()
            .session_key()
        };
        assert_ne!(a("one-pass"), a("two-pass"));
        assert_eq!(a("one-pass"), a("one-pass"));
        assert!(!a("one-pass").contains("one-pass"));
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        let r = RetryPolicy::default();
        assert_eq!(r.delay(1), Duration::from_millis(500));
        assert_eq!(r.delay(2), Duration::from_secs(1));
        assert_eq!(r.delay(10), Duration::from_secs(5));
        let p = PollPolicy::default();
        assert_eq!(p.next(Duration::from_secs(1)), Duration::from_millis(1500));
        assert_eq!(p.next(Duration::from_millis(1500)), Duration::from_secs(2));
        assert_eq!(p.next(Duration::from_secs(2)), Duration::from_secs(2));
    }
}
